//! The string `format`s custom-resource validation checks.
//!
//! kube keeps only the formats of its fixed list (after removing `-`, so `date-time` is
//! `datetime`) and drops every other format before validating, which makes `int32`,
//! `int64`, `float` and `double` no-ops: kube does not range-check numbers by format.
//! A kept format checks string values only, with go-openapi's `strfmt` rules. Of the kept
//! formats, `byte`, `date`, `date-time`, `duration`, `uuid*`, `ipv4`, `ipv6`, `cidr`, `mac`,
//! `hexcolor`, `ssn` and `password` are checked here; `uri`, `email`, `hostname`,
//! `bsonobjectid`, `isbn*`, `creditcard` and `rgbcolor` accept any string (their go-openapi
//! rules are large regexes or library parsers that are not worth copying).

use std::net::IpAddr;
use std::sync::LazyLock;

use base64::Engine;
use regex::Regex;

/// The formats kube keeps, without dashes.
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// Whether kube keeps `format` for validation (otherwise it behaves as if unset).
pub(crate) fn is_supported(format: &str) -> bool {
    !format.is_empty() && SUPPORTED.contains(&format.replace('-', "").as_str())
}

/// Whether `value` satisfies a supported `format`.
pub(crate) fn is_valid(format: &str, value: &str) -> bool {
    match format.replace('-', "").as_str() {
        "byte" => is_base64(value),
        "date" => is_date(value),
        "datetime" => is_date_time(value),
        "duration" => is_duration(value),
        "uuid" => UUID.is_match(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "ipv4" => value.parse::<IpAddr>().is_ok() && value.contains('.'),
        "ipv6" => value.parse::<IpAddr>().is_ok() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "hexcolor" => HEX_COLOR.is_match(value),
        "ssn" => SSN.is_match(value),
        _ => true,
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|_| unreachable!("built-in pattern {pattern} compiles"))
}

static UUID: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static SSN: LazyLock<Regex> = LazyLock::new(|| regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static TIME_OF_DAY: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"));
static DURATION_PART: LazyLock<Regex> = LazyLock::new(|| regex(r"((\d+)\s*([A-Za-zµ]+))"));

/// Go's `base64.StdEncoding.DecodeString`: padded standard alphabet, newlines ignored,
/// non-zero trailing bits tolerated.
fn is_base64(value: &str) -> bool {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    let cleaned: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    engine.decode(cleaned).is_ok()
}

/// `time.Parse("2006-01-02", value)`.
fn is_date(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let digits = |range: std::ops::Range<usize>| -> Option<i16> {
        let part = &value[range];
        part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok()).flatten()
    };
    match (digits(0..4), digits(5..7), digits(8..10)) {
        (Some(year), Some(month), Some(day)) => jiff::civil::Date::new(year, month as i8, day as i8).is_ok(),
        _ => false,
    }
}

/// go-openapi's `IsDateTime`: a date, a `t`, then `hh:mm:ss[.frac](z|±hh:mm)`, case-blind.
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    TIME_OF_DAY.captures(time).is_some_and(|c| &c[1] <= "23" && &c[2] <= "59" && &c[3] <= "59")
}

/// go-openapi's `ParseDuration`: Go's `time.ParseDuration`, or else any `<digits><unit>`
/// run with a unit such as `d`, `day(s)`, `w`, `wk`, `week(s)`, `hr`, `min`, `sec`.
fn is_duration(value: &str) -> bool {
    if is_go_duration(value) {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    DURATION_PART.captures_iter(value).any(|c| {
        let unit = c[3].trim().to_lowercase();
        UNITS.iter().any(|variants| {
            let last = variants.len() - 1;
            variants.iter().enumerate().any(|(i, v)| (i == last && unit.starts_with(v)) || unit == *v)
        })
    })
}

/// The grammar of Go's `time.ParseDuration` (overflow is not checked).
fn is_go_duration(value: &str) -> bool {
    let rest = value.strip_prefix(['-', '+']).unwrap_or(value);
    if rest == "0" {
        return true;
    }
    if rest.is_empty() {
        return false;
    }
    let mut rest = rest;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let number = &rest[..number_end];
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return false;
        }
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        if !matches!(&rest[..unit_end], "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return false;
        }
        rest = &rest[unit_end..];
    }
    true
}

/// Go's `net.ParseCIDR`.
fn is_cidr(value: &str) -> bool {
    let Some((ip, prefix)) = value.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<IpAddr>() else {
        return false;
    };
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit()) && prefix.parse::<u32>().is_ok_and(|p| p <= bits)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `aa:bb:…`, `aa-bb-…` or `aabb.ccdd.…`.
fn is_mac(value: &str) -> bool {
    let hex = |group: &str, width: usize| group.len() == width && group.bytes().all(|b| b.is_ascii_hexdigit());
    for separator in [':', '-'] {
        let groups: Vec<&str> = value.split(separator).collect();
        if matches!(groups.len(), 6 | 8 | 20) && groups.iter().all(|g| hex(g, 2)) {
            return true;
        }
    }
    let groups: Vec<&str> = value.split('.').collect();
    matches!(groups.len(), 3 | 4 | 10) && groups.iter().all(|g| hex(g, 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_formats() {
        for (format, supported) in [
            ("date-time", true),
            ("datetime", true),
            ("int32", false),
            ("int64", false),
            ("double", false),
            ("uuid", true),
            ("", false),
            ("UUID", false),
        ] {
            assert_eq!(is_supported(format), supported, "{format}");
        }
    }

    #[test]
    fn format_table() {
        for (format, value, valid) in [
            ("byte", "aGVsbG8=", true),
            ("byte", "aGVsbG8", false),
            ("byte", "not base64!", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2024-1-01", false),
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02t03:04:05.123+01:00", true),
            ("date-time", "2024-01-02T03:04:05", false),
            ("date-time", "2024-01-02T24:00:00Z", false),
            ("date-time", "yesterday", false),
            ("duration", "1h30m", true),
            ("duration", "-1.5s", true),
            ("duration", "0", true),
            ("duration", "3 days", true),
            ("duration", "2w", true),
            ("duration", "forever", false),
            ("duration", "1x", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567e89b12d3a456426614174000", true),
            ("uuid", "not-a-uuid", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fe80::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "fd00::/64", true),
            ("mac", "00:00:5e:00:53:01", true),
            ("mac", "0000.5e00.5301", true),
            ("mac", "00:00:5e:00:53", false),
            ("hexcolor", "#fff", true),
            ("hexcolor", "#ffff", false),
            ("ssn", "123-45-6789", true),
            ("email", "anything goes", true),
        ] {
            assert_eq!(is_valid(format, value), valid, "{format} {value}");
        }
    }
}
