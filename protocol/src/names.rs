//! Name, label and annotation validation with kube-apiserver's exact message texts.
//!
//! Clients (kubectl, controller-runtime, conformance tests) compare these messages
//! verbatim, so every text here is copied from `k8s.io/apimachinery/pkg/util/validation`
//! and `pkg/api/validation`, including their oddities (the double space in
//! `'MyName',  or 'my.name'`). The regexes quoted in the messages are only quoted: the
//! matching is hand-written, because each pattern is a simple character-class shape.

use std::collections::BTreeMap;

/// Longest DNS-1123 label (RFC 1123), e.g. a namespace name or a logical-cluster name.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain, e.g. most object names.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest name part of a qualified name (label and annotation keys).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Upper bound on the summed bytes of all annotation keys and values of one object; it
/// keeps a single object from crowding out the store's value-size limits.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// Longest `generateName` prefix kept before the random suffix, so that the generated name
/// stays a valid DNS label (kube's `MaxGeneratedNameLength`).
pub const MAX_GENERATED_NAME_PREFIX_LENGTH: usize = DNS1123_LABEL_MAX_LENGTH - GENERATED_SUFFIX_LENGTH;
const GENERATED_SUFFIX_LENGTH: usize = 5;
/// kube's `utilrand` alphabet: no vowels (no accidental words) and no look-alikes (0/o, 1/l).
const GENERATED_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// Checks an object name that must be a DNS-1123 subdomain (most resources).
/// Returns kube's messages; an empty list means valid.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !is_dns1123_subdomain_shape(value) {
        errors.push(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errors
}

/// Checks a name that must be a DNS-1123 label (namespaces, logical clusters).
/// Returns kube's messages; an empty list means valid.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label_shape(value) {
        // kube singles out dotted names because "my.namespace" is the common mistake.
        if is_dns1123_subdomain_shape(value) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(regex_error(DNS1123_LABEL_ERR_MSG, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errors
}

/// Checks a label or annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain and
/// the name at most 63 characters. Returns kube's messages; an empty list means valid.
pub fn qualified_name(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut errors = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            errors.extend(prefix_errors(prefix));
            *name
        }
        _ => {
            errors.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                qualified_name_regex_error()
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errors.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    // Not an `else`: kube reports an empty name part twice, and clients match that text.
    if !is_qualified_name_shape(name) {
        errors.push(format!("name part {}", qualified_name_regex_error()));
    }
    errors
}

fn prefix_errors(prefix: &str) -> Vec<String> {
    if prefix.is_empty() {
        return vec!["prefix part must be non-empty".to_string()];
    }
    dns1123_subdomain(prefix).into_iter().map(|message| format!("prefix part {message}")).collect()
}

fn qualified_name_regex_error() -> String {
    regex_error(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
}

/// Checks a label value: empty, or up to 63 alphanumerics with `-`, `_`, `.` inside.
/// Returns kube's messages; an empty list means valid.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_qualified_name_shape(value) {
        errors.push(regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errors
}

/// Checks a ConfigMap or Secret data key. Keys become file names when mounted as volumes,
/// hence the ban on `.` and `..`. Returns kube's messages; an empty list means valid.
pub fn config_map_key(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if value.is_empty() || !value.chars().all(key_char) {
        errors.push(regex_error(CONFIG_MAP_KEY_ERR_MSG, CONFIG_MAP_KEY_FMT, &["key.name", "KEY_NAME", "key-name"]));
    }
    if value == "." {
        errors.push("must not be '.'".to_string());
    } else if value == ".." {
        errors.push("must not be '..'".to_string());
    } else if value.starts_with("..") {
        errors.push("must not start with '..'".to_string());
    }
    errors
}

/// Validates `metadata.labels` as kube's `ValidateLabels` does.
///
/// Each entry is `(field path suffix, message)`. The suffix is empty because kube reports
/// label errors at the map's own path (`metadata.labels`), not per key; the caller appends
/// it to the map's path. The message is kube's error body, `Invalid value: "<bad key or
/// value>": <detail>`, so `format!("{path}{suffix}: {message}")` is the Status message
/// text and the message alone is the `StatusCause.message` (cause type `FieldValueInvalid`).
pub fn validate_labels<K: AsRef<str>, V: AsRef<str>>(labels: &BTreeMap<K, V>) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    for (key, value) in labels {
        let (key, value) = (key.as_ref(), value.as_ref());
        errors.extend(qualified_name(key).into_iter().map(|detail| invalid_value(key, &detail)));
        errors.extend(label_value(value).into_iter().map(|detail| invalid_value(value, &detail)));
    }
    errors
}

/// Validates `metadata.annotations` as kube's `ValidateAnnotations` does.
///
/// Entries have the shape described on [`validate_labels`]. Keys are checked as qualified
/// names after lower-casing (kube treats annotation keys case-insensitively here). An
/// oversized map yields one `Too long: must have at most 262144 bytes` entry (cause type
/// `FieldValueTooLong`).
pub fn validate_annotations<K: AsRef<str>, V: AsRef<str>>(annotations: &BTreeMap<K, V>) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    for key in annotations.keys().map(AsRef::as_ref) {
        // Most keys are lower case already; only the others are copied.
        let lower = match key.chars().any(char::is_uppercase) {
            true => std::borrow::Cow::Owned(key.to_lowercase()),
            false => std::borrow::Cow::Borrowed(key),
        };
        let details = qualified_name(&lower);
        errors.extend(details.into_iter().map(|detail| invalid_value(key, &detail)));
    }
    let total_bytes: usize = annotations.iter().map(|(key, value)| key.as_ref().len() + value.as_ref().len()).sum();
    if total_bytes > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        let message = format!("Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT_BYTES} bytes");
        errors.push((String::new(), message));
    }
    errors
}

fn invalid_value(bad_value: &str, detail: &str) -> (String, String) {
    (String::new(), format!("Invalid value: {}: {detail}", go_quote(bad_value)))
}

/// Builds the name for a `generateName` create: the prefix, cut to
/// [`MAX_GENERATED_NAME_PREFIX_LENGTH`] bytes, plus five characters from kube's alphabet.
///
/// `random` is the caller's entropy (a fresh random number per attempt), which keeps this
/// function deterministic for tests; callers retry with a new number on AlreadyExists.
pub fn generated_name(prefix: &str, random: u64) -> String {
    let mut cut = prefix.len().min(MAX_GENERATED_NAME_PREFIX_LENGTH);
    // kube slices bytes; a char boundary keeps Rust from panicking on multi-byte prefixes,
    // which fail name validation afterwards anyway.
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut name = String::with_capacity(cut + GENERATED_SUFFIX_LENGTH);
    name.push_str(&prefix[..cut]);
    let alphabet_len = GENERATED_SUFFIX_ALPHABET.len() as u64;
    let mut remaining = random;
    for _ in 0..GENERATED_SUFFIX_LENGTH {
        let index = usize::try_from(remaining % alphabet_len).unwrap_or_default();
        name.push(char::from(GENERATED_SUFFIX_ALPHABET[index]));
        remaining /= alphabet_len;
    }
    name
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` without the length limit.
pub(crate) fn is_dns1123_label_shape(value: &str) -> bool {
    let inner = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    has_alphanumeric_ends(value, |c| c.is_ascii_lowercase() || c.is_ascii_digit()) && value.chars().all(inner)
}

/// Dot-separated DNS-1123 labels, without the length limit.
fn is_dns1123_subdomain_shape(value: &str) -> bool {
    value.split('.').all(is_dns1123_label_shape)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the shape of qualified-name parts and
/// non-empty label values.
fn is_qualified_name_shape(value: &str) -> bool {
    let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    has_alphanumeric_ends(value, |c| c.is_ascii_alphanumeric()) && value.chars().all(inner)
}

fn has_alphanumeric_ends(value: &str, is_end_char: impl Fn(char) -> bool) -> bool {
    match (value.chars().next(), value.chars().last()) {
        (Some(first), Some(last)) => is_end_char(first) && is_end_char(last),
        _ => false,
    }
}

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// kube's `RegexError`, whose `"', " + " or "` joins give the double space clients expect.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let quoted: Vec<String> = examples.iter().map(|example| format!("'{example}', ")).collect();
    format!("{message} (e.g. {}regex used for validation is '{pattern}')", quoted.join(" or "))
}

/// Quotes like Go's `%q`, which kube uses for bad values in field errors.
pub(crate) fn go_quote(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{7}' => quoted.push_str("\\a"),
            '\u{8}' => quoted.push_str("\\b"),
            '\u{c}' => quoted.push_str("\\f"),
            '\u{b}' => quoted.push_str("\\v"),
            c if c.is_ascii_control() => quoted.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBDOMAIN_REGEX_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_REGEX_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const NAME_PART_REGEX_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const LABEL_VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const CONFIG_KEY_REGEX_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

    #[test]
    fn dns1123_subdomain_table() {
        let too_long = format!("{}.com", "a".repeat(250));
        for (input, expected) in [
            ("example.com", vec![]),
            ("a", vec![]),
            ("0-a.b-9", vec![]),
            ("", vec![SUBDOMAIN_REGEX_MSG.to_string()]),
            ("Example.com", vec![SUBDOMAIN_REGEX_MSG.to_string()]),
            ("a..b", vec![SUBDOMAIN_REGEX_MSG.to_string()]),
            ("-a", vec![SUBDOMAIN_REGEX_MSG.to_string()]),
            ("a.", vec![SUBDOMAIN_REGEX_MSG.to_string()]),
            ("a_b", vec![SUBDOMAIN_REGEX_MSG.to_string()]),
            (too_long.as_str(), vec!["must be no more than 253 characters".to_string()]),
        ] {
            assert_eq!(dns1123_subdomain(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn dns1123_label_table() {
        let sixty_three = "a".repeat(63);
        let sixty_four = "a".repeat(64);
        for (input, expected) in [
            ("my-name", vec![]),
            ("123-abc", vec![]),
            (sixty_three.as_str(), vec![]),
            (sixty_four.as_str(), vec!["must be no more than 63 characters".to_string()]),
            ("my.name", vec!["must not contain dots".to_string()]),
            ("", vec![LABEL_REGEX_MSG.to_string()]),
            ("a-", vec![LABEL_REGEX_MSG.to_string()]),
            ("My-name", vec![LABEL_REGEX_MSG.to_string()]),
            ("ä", vec![LABEL_REGEX_MSG.to_string()]),
        ] {
            assert_eq!(dns1123_label(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn qualified_name_table() {
        let long_name = "a".repeat(64);
        let too_many_slashes = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        for (input, expected) in [
            ("app", vec![]),
            ("MyName", vec![]),
            ("my.name_1-x", vec![]),
            ("example.com/MyName", vec![]),
            ("kcp.io/cluster", vec![]),
            ("", vec!["name part must be non-empty".to_string(), NAME_PART_REGEX_MSG.to_string()]),
            ("a/b/c", vec![too_many_slashes.to_string()]),
            ("/a", vec!["prefix part must be non-empty".to_string()]),
            ("Example.com/a", vec![format!("prefix part {SUBDOMAIN_REGEX_MSG}")]),
            ("a/", vec!["name part must be non-empty".to_string(), NAME_PART_REGEX_MSG.to_string()]),
            ("app:monolith", vec![NAME_PART_REGEX_MSG.to_string()]),
            ("_a", vec![NAME_PART_REGEX_MSG.to_string()]),
            (long_name.as_str(), vec!["name part must be no more than 63 characters".to_string()]),
        ] {
            assert_eq!(qualified_name(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn label_value_table() {
        let long_value = "a".repeat(64);
        for (input, expected) in [
            ("", vec![]),
            ("MyValue", vec![]),
            ("my_value", vec![]),
            ("12345", vec![]),
            ("a.b-c_d", vec![]),
            ("-a", vec![LABEL_VALUE_REGEX_MSG.to_string()]),
            ("a b", vec![LABEL_VALUE_REGEX_MSG.to_string()]),
            ("a/b", vec![LABEL_VALUE_REGEX_MSG.to_string()]),
            (long_value.as_str(), vec!["must be no more than 63 characters".to_string()]),
        ] {
            assert_eq!(label_value(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn config_map_key_table() {
        for (input, expected) in [
            ("key.name", vec![]),
            ("KEY_NAME", vec![]),
            (".dotfile", vec![]),
            ("", vec![CONFIG_KEY_REGEX_MSG.to_string()]),
            ("a/b", vec![CONFIG_KEY_REGEX_MSG.to_string()]),
            (".", vec!["must not be '.'".to_string()]),
            ("..", vec!["must not be '..'".to_string()]),
            ("..a", vec!["must not start with '..'".to_string()]),
        ] {
            assert_eq!(config_map_key(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn validate_labels_table() {
        for (labels, expected) in [
            (vec![("app", "web"), ("example.com/tier", "")], vec![]),
            (vec![("app:x", "ok")], vec![format!("Invalid value: \"app:x\": {NAME_PART_REGEX_MSG}")]),
            (vec![("app", "a b")], vec![format!("Invalid value: \"a b\": {LABEL_VALUE_REGEX_MSG}")]),
        ] {
            let labels: BTreeMap<String, String> =
                labels.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let got = validate_labels(&labels);
            assert!(got.iter().all(|(suffix, _)| suffix.is_empty()));
            let messages: Vec<String> = got.into_iter().map(|(_, message)| message).collect();
            assert_eq!(messages, expected, "labels {labels:?}");
        }
    }

    #[test]
    fn validate_annotations_table() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
        let too_long = "Too long: must have at most 262144 bytes".to_string();
        for (annotations, expected) in [
            (vec![("Example.COM/Note", "anything goes: here")], vec![]),
            (vec![("a", &big[..big.len() - 1])], vec![]),
            (vec![("a", big.as_str())], vec![too_long]),
            (vec![("bad key", "")], vec![format!("Invalid value: \"bad key\": {}", NAME_PART_REGEX_MSG)]),
        ] {
            let annotations: BTreeMap<String, String> =
                annotations.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let messages: Vec<String> =
                validate_annotations(&annotations).into_iter().map(|(_, message)| message).collect();
            assert_eq!(messages, expected);
        }
    }

    #[test]
    fn generated_name_table() {
        let long_prefix = "p".repeat(70);
        for (prefix, random, expected) in [
            ("web-", 0, "web-bbbbb".to_string()),
            ("web-", 1, "web-cbbbb".to_string()),
            ("web-", 26, "web-9bbbb".to_string()),
            ("web-", 27, "web-bcbbb".to_string()),
            ("", u64::MAX, generated_name("", u64::MAX)),
            (long_prefix.as_str(), 0, format!("{}bbbbb", "p".repeat(58))),
        ] {
            let name = generated_name(prefix, random);
            assert_eq!(name, expected);
            assert!(name.len() <= DNS1123_LABEL_MAX_LENGTH);
            assert!(name.is_char_boundary(name.len() - 5));
            assert!(name[name.len() - 5..].bytes().all(|b| GENERATED_SUFFIX_ALPHABET.contains(&b)));
        }
    }

    #[test]
    fn generated_name_keeps_char_boundaries() {
        let prefix = format!("{}é", "a".repeat(57));
        assert_eq!(generated_name(&prefix, 0), format!("{}bbbbb", "a".repeat(57)));
    }

    #[test]
    fn go_quote_table() {
        for (input, expected) in [
            ("plain", "\"plain\""),
            ("a\"b", "\"a\\\"b\""),
            ("a\\b", "\"a\\\\b\""),
            ("tab\there", "\"tab\\there\""),
            ("\u{1}", "\"\\x01\""),
            ("ü", "\"ü\""),
        ] {
            assert_eq!(go_quote(input), expected);
        }
    }
}
