//! Kubernetes resource quantities ("4", "500m", "16Gi", "1.5e3") as plain numbers.
//!
//! Fleet compares property values and OCM scores allocatable resources as quantities;
//! both end up comparing or interpolating them as floating point numbers (OCM through
//! `AsApproximateFloat64`, Fleet's sorter likewise), so a parsed `f64` is all the
//! framework needs. Parsing goes through Rust's correctly rounded decimal parser
//! (`"4000e-3"` → 4.0 exactly) so that equal quantities written differently compare
//! equal, which a naive `4000.0 * 0.001` would not guarantee.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A quantity's numeric value. Deserialises from a quantity string or a plain number.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Quantity(pub f64);

impl Quantity {
    /// Parses Kubernetes quantity syntax: a signed decimal number followed by at most one
    /// suffix, binary (`Ki` … `Ei`), decimal (`n`, `u`, `m`, `k`, `M` … `E`) or a decimal
    /// exponent (`e3`, `E-2`).
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let invalid = || format!("{text:?} is not a valid quantity");
        let number_end = text
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '+' || c == '-'))))
            .map_or(text.len(), |(i, _)| i);
        let (number, suffix) = text.split_at(number_end);
        let digits = number.trim_start_matches(['+', '-']);
        let has_digit = digits.chars().any(|c| c.is_ascii_digit());
        if !has_digit || digits.matches('.').count() > 1 {
            return Err(invalid());
        }
        let (decimal_exponent, binary_exponent) = suffix_exponents(suffix).ok_or_else(invalid)?;
        let decimal: f64 = format!("{number}e{decimal_exponent}").parse().map_err(|_| invalid())?;
        Ok(Quantity(decimal * 2f64.powi(binary_exponent)))
    }
}

/// The powers of ten and of two a suffix stands for, or `None` for an unknown suffix.
fn suffix_exponents(suffix: &str) -> Option<(i32, i32)> {
    let exponents = match suffix {
        "" => (0, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let unsigned = exponent.trim_start_matches(['+', '-']);
            if unsigned.is_empty() || !unsigned.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (exponent.parse().ok()?, 0)
        }
    };
    Some(exponents)
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Quantity, D::Error> {
        struct QuantityVisitor;
        impl Visitor<'_> for QuantityVisitor {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes quantity such as \"16Gi\" or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
                Quantity::parse(v).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Quantity, E> {
                Ok(Quantity(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity(v as f64))
            }
        }
        deserializer.deserialize_any(QuantityVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    #[test]
    fn parses_kubernetes_quantities() {
        let cases = [
            ("4", 4.0),
            ("500m", 0.5),
            ("4000m", 4.0),
            ("1Ki", 1024.0),
            ("16Gi", 16.0 * 1024.0 * 1024.0 * 1024.0),
            ("1.5", 1.5),
            ("1.5k", 1500.0),
            ("2M", 2_000_000.0),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            ("-3", -3.0),
            ("+7", 7.0),
            (".5", 0.5),
            ("250u", 0.00025),
        ];
        for (text, want) in cases {
            assert_eq!(Quantity::parse(text), Ok(Quantity(want)), "{text}");
        }
    }

    #[test]
    fn rejects_malformed_quantities() {
        for text in ["", "abc", "1.2.3", "5Xi", "1e", "1e+", "--1", "m", "1 Gi"] {
            assert!(Quantity::parse(text).is_err(), "{text:?} should not parse");
        }
    }
}
