//! Just enough DER to swap a certificate's subject and re-sign it. Only definite
//! lengths and single-byte tags occur in certificates rcgen writes, so those are all
//! this handles; anything else is an error, never a panic.

use anyhow::{ensure, Context};
use rcgen::{KeyPair, SigningKey};

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OBJECT_IDENTIFIER: u8 = 0x06;
const UTF8_STRING: u8 = 0x0c;
const BIT_STRING: u8 = 0x03;
const VERSION_TAG: u8 = 0xa0;
const OID_COMMON_NAME: [u8; 3] = [0x55, 0x04, 0x03];
const OID_ORGANIZATION: [u8; 3] = [0x55, 0x04, 0x0a];

/// An X.501 Name with one O per group followed by the CN, the order Go's
/// `pkix.Name` (and so kubeadm) writes them in.
pub(super) fn encode_subject(common_name: &str, organizations: &[String]) -> Vec<u8> {
    let mut rdns = Vec::new();
    for organization in organizations {
        rdns.extend(encode_rdn(&OID_ORGANIZATION, organization));
    }
    rdns.extend(encode_rdn(&OID_COMMON_NAME, common_name));
    encode(SEQUENCE, &rdns)
}

fn encode_rdn(oid: &[u8], value: &str) -> Vec<u8> {
    let mut attribute = encode(OBJECT_IDENTIFIER, oid);
    attribute.extend(encode(UTF8_STRING, value.as_bytes()));
    encode(SET, &encode(SEQUENCE, &attribute))
}

/// Rebuilds `cert` with `subject` in place of its subject, signed by `issuer_key`
/// (which must be the key that signed `cert`, so the algorithm identifiers stay
/// right).
pub(super) fn replace_subject(cert: &[u8], subject: &[u8], issuer_key: &KeyPair) -> anyhow::Result<Vec<u8>> {
    let (certificate, _) = split(cert)?;
    let certificate = content(certificate, SEQUENCE)?;
    let (tbs, rest) = split(certificate)?;
    let (signature_algorithm, _) = split(rest)?;
    let tbs_fields = content(tbs, SEQUENCE)?;

    // version?, serialNumber, signature, issuer, validity, then subject.
    let fields_before_subject = if tbs_fields.first() == Some(&VERSION_TAG) { 5 } else { 4 };
    let mut remaining = tbs_fields;
    for _ in 0..fields_before_subject {
        remaining = split(remaining)?.1;
    }
    let prefix_len = tbs_fields.len() - remaining.len();
    let (_, after_subject) = split(remaining)?;

    let mut new_fields = tbs_fields[..prefix_len].to_vec();
    new_fields.extend_from_slice(subject);
    new_fields.extend_from_slice(after_subject);
    let new_tbs = encode(SEQUENCE, &new_fields);

    let signature = issuer_key.sign(&new_tbs).context("sign certificate")?;
    let mut signature_bits = vec![0u8]; // no unused bits
    signature_bits.extend(signature);

    let mut body = new_tbs;
    body.extend_from_slice(signature_algorithm);
    body.extend(encode(BIT_STRING, &signature_bits));
    Ok(encode(SEQUENCE, &body))
}

/// Splits the first element off `input`: `(whole element, rest)`.
fn split(input: &[u8]) -> anyhow::Result<(&[u8], &[u8])> {
    let (header_len, content_len) = header(input)?;
    let end = header_len
        .checked_add(content_len)
        .filter(|end| *end <= input.len())
        .context("DER element runs past the end of its input")?;
    Ok(input.split_at(end))
}

/// The content of `element`, which must carry `tag`.
fn content(element: &[u8], tag: u8) -> anyhow::Result<&[u8]> {
    ensure!(element.first() == Some(&tag), "expected DER tag {tag:#04x}, found {:?}", element.first());
    let (header_len, content_len) = header(element)?;
    element.get(header_len..header_len + content_len).context("DER element truncated")
}

/// `(header length, content length)` of the element starting `input`.
fn header(input: &[u8]) -> anyhow::Result<(usize, usize)> {
    let (&tag, rest) = input.split_first().context("DER element missing")?;
    ensure!(tag & 0x1f != 0x1f, "multi-byte DER tags are not supported");
    let (&first, rest) = rest.split_first().context("DER length missing")?;
    if first < 0x80 {
        return Ok((2, usize::from(first)));
    }
    let count = usize::from(first & 0x7f);
    ensure!((1..=4).contains(&count), "unsupported DER length of {count} bytes");
    let bytes = rest.get(..count).context("DER length truncated")?;
    let length = bytes.iter().fold(0usize, |acc, byte| (acc << 8) | usize::from(*byte));
    Ok((2 + count, length))
}

fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|byte| **byte == 0).count();
        let significant = &bytes[skip..];
        out.push(0x80 | significant.len() as u8);
        out.extend_from_slice(significant);
    }
    out.extend_from_slice(content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_split_round_trips_every_length_form() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let element = encode(0x04, &vec![7u8; len]);
            let (whole, rest) = split(&element).expect("split");
            assert_eq!(whole.len(), element.len());
            assert!(rest.is_empty());
            assert_eq!(content(whole, 0x04).expect("content").len(), len);
        }
    }

    #[test]
    fn malformed_input_is_an_error() {
        for input in [&[][..], &[0x30], &[0x30, 0x05, 0x00], &[0x30, 0x85, 1, 1, 1, 1, 1]] {
            assert!(split(input).is_err(), "{input:?}");
        }
    }
}
