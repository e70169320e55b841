//! The schema-driven wire decoder: the schema types ([`Message`], [`Field`], [`FieldKind`],
//! [`Presence`]), [`decode_message`], which walks protobuf bytes with a table, and the
//! conversions of Kubernetes' well-known messages (Time, MicroTime, IntOrString, RawExtension)
//! and bytes to JSON, including the calendar arithmetic for RFC 3339 times.

use super::error::ProtobufError;
use super::tables;
use super::workloads;
use base64::Engine as _;
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The schema of one protobuf message.
#[derive(Debug)]
pub struct Message {
    /// The Go type name, for error messages.
    pub name: &'static str,
    /// The fields in Go struct order, which is the order their JSON keys come out in (as in
    /// kube-apiserver's JSON). Field numbers not listed are skipped.
    pub fields: &'static [Field],
}

impl Message {
    /// The index in `fields` of the field numbered `tag`. A linear scan: the largest table
    /// (PodSpec) has under 40 fields.
    fn position(&self, tag: u32) -> Option<usize> {
        self.fields.iter().position(|field| field.tag == tag)
    }
}

/// One field of a [`Message`].
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The protobuf field number from `generated.proto`.
    pub tag: u32,
    /// The JSON key kube-apiserver uses: the Go `json:` tag, which is not always the camelCase of
    /// the proto name (`nonResourceURLs`, `reportingComponent`).
    pub json_name: &'static str,
    /// How the wire value becomes JSON.
    pub kind: FieldKind,
    /// A list (`repeated`): each occurrence on the wire adds one element.
    pub repeated: bool,
    /// Whether a zero value on the wire reaches the JSON.
    pub presence: Presence,
}

/// How a field's wire value becomes JSON.
#[derive(Debug, Clone, Copy)]
pub enum FieldKind {
    /// `string` → JSON string. Go's proto2 decoder does not check UTF-8 and its JSON encoder
    /// writes invalid bytes as U+FFFD, so this does the same.
    String,
    /// `bool` → `true`/`false`.
    Bool,
    /// `int32` → JSON number.
    Int32,
    /// `int64` → JSON number.
    Int64,
    /// `bytes` → standard base64 with padding, as Go writes `[]byte`.
    Bytes,
    /// `metav1.Time` (`{1: seconds, 2: nanos}`) → RFC 3339 in UTC with whole seconds, as
    /// `metav1.Time` marshals; the zero time (an empty message) → `null`.
    Time,
    /// `metav1.MicroTime` → RFC 3339 in UTC with six fractional digits; the zero time → `null`.
    MicroTime,
    /// `intstr.IntOrString` (`{1: type, 2: intVal, 3: strVal}`) → JSON number or string.
    IntOrString,
    /// `resource.Quantity` (`{1: string}`) → that string, as Quantity marshals to JSON; an empty
    /// message is the zero Quantity, `"0"`.
    Quantity,
    /// A message whose field 1 holds JSON bytes (`runtime.RawExtension`, `metav1.FieldsV1`) →
    /// that JSON, parsed.
    Json,
    /// `map<string, string>` (entries `{1: key, 2: value}`) → JSON object.
    StringMap,
    /// `map<string, bytes>` → JSON object of base64 strings.
    BytesMap,
    /// `map<string, Quantity>` (`ResourceList`) → JSON object of quantity strings.
    QuantityMap,
    /// A nested message, decoded with its own table.
    Message(&'static Message),
    /// An embedded Go struct tagged `json:",inline"` (`Volume.VolumeSource`, `Probe.ProbeHandler`,
    /// `ConfigMapKeySelector.LocalObjectReference`): a nested message on the wire whose JSON keys
    /// join the enclosing object's, where the field stands.
    Inline(&'static Message),
}

impl FieldKind {
    /// The only wire type Go's marshaller uses for this kind.
    fn wire_type(self) -> WireType {
        match self {
            FieldKind::Bool | FieldKind::Int32 | FieldKind::Int64 => WireType::Varint,
            _ => WireType::LengthDelimited,
        }
    }
}

/// Whether a zero value present on the wire reaches the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Emitted whenever it is on the wire: Go pointer fields (`*bool`, `*int32`, `*Time`), where
    /// nil and zero differ, and value fields whose JSON tag lacks `omitempty`
    /// (`OwnerReference.uid`, `RoleRef.name`).
    OnWire,
    /// A Go value field with `omitempty`. Go's marshaller writes it even when zero, so a zero
    /// value (`""`, `0`, `false`, `null`, `{}`) is dropped: a JSON client would not have sent it.
    NonZero,
}

/// Decodes one protobuf message with its schema into a JSON object, for callers that know the
/// type without an envelope.
pub fn decode_message(bytes: &[u8], message: &'static Message) -> Result<Map<String, Value>, ProtobufError> {
    let mut decoder = MessageDecoder::new(message);
    decoder.merge(bytes)?;
    decoder.finish()
}

/// One field's value as read off the wire, before the schema gives it meaning.
#[derive(Debug, Clone, Copy)]
pub(super) enum WireValue<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// A 32-bit, 64-bit or group value: no Kubernetes field we decode uses these, so they are
    /// only skipped (or reported as a wire-type mismatch on a known field).
    Skipped(WireType),
}

impl WireValue<'_> {
    fn wire_type(self) -> WireType {
        match self {
            WireValue::Varint(_) => WireType::Varint,
            WireValue::Bytes(_) => WireType::LengthDelimited,
            WireValue::Skipped(wire_type) => wire_type,
        }
    }
}

/// The `(field number, value)` pairs of one encoded message, in wire order. Stops after the first
/// error.
struct WireFields<'a> {
    buf: &'a [u8],
    message: &'static Message,
}

impl<'a> Iterator for WireFields<'a> {
    type Item = Result<(u32, WireValue<'a>), ProtobufError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let item = self.read_field();
        if item.is_err() {
            self.buf = &[];
        }
        Some(item)
    }
}

impl<'a> WireFields<'a> {
    fn read_field(&mut self) -> Result<(u32, WireValue<'a>), ProtobufError> {
        let message = self.message;
        let key_at = || format!("{} (field key)", message.name);
        ensure_varint_complete(self.buf, key_at)?;
        let (tag, wire_type) = decode_key(&mut self.buf).map_err(|e| malformed(key_at(), e))?;
        let at = || location(message, tag);
        let value = match wire_type {
            WireType::Varint => {
                ensure_varint_complete(self.buf, at)?;
                WireValue::Varint(decode_varint(&mut self.buf).map_err(|e| malformed(at(), e))?)
            }
            WireType::LengthDelimited => {
                ensure_varint_complete(self.buf, at)?;
                let len = decode_varint(&mut self.buf).map_err(|e| malformed(at(), e))?;
                let len = usize::try_from(len).ok().filter(|len| *len <= self.buf.len());
                let len = len.ok_or_else(|| ProtobufError::Truncated { at: at() })?;
                let (bytes, rest) = self.buf.split_at(len);
                self.buf = rest;
                WireValue::Bytes(bytes)
            }
            other => {
                let fixed_len = match other {
                    WireType::ThirtyTwoBit => 4,
                    WireType::SixtyFourBit => 8,
                    _ => 0,
                };
                if self.buf.len() < fixed_len {
                    return Err(ProtobufError::Truncated { at: at() });
                }
                skip_field(other, tag, &mut self.buf, DecodeContext::default()).map_err(|e| malformed(at(), e))?;
                WireValue::Skipped(other)
            }
        };
        Ok((tag, value))
    }
}

/// prost reports a varint cut off by the end of the buffer as a generic "invalid varint";
/// looking for its last byte first gives truncated bodies their own error.
fn ensure_varint_complete(buf: &[u8], at: impl Fn() -> String) -> Result<(), ProtobufError> {
    let terminated = buf.iter().take(10).any(|byte| byte & 0x80 == 0);
    if terminated || buf.len() >= 10 {
        Ok(())
    } else {
        Err(ProtobufError::Truncated { at: at() })
    }
}

fn malformed(at: String, error: prost::DecodeError) -> ProtobufError {
    ProtobufError::Malformed { at, reason: error.to_string() }
}

fn location(message: &Message, tag: u32) -> String {
    match message.position(tag) {
        Some(index) => format!("{}.{}", message.name, message.fields[index].json_name),
        None => format!("{} field {tag}", message.name),
    }
}

fn check_wire_type(message: &Message, field: &Field, value: WireValue<'_>) -> Result<(), ProtobufError> {
    let expected = field.kind.wire_type();
    let actual = value.wire_type();
    if expected == actual {
        Ok(())
    } else {
        let at = format!("{}.{}", message.name, field.json_name);
        Err(ProtobufError::WireTypeMismatch { at, expected, actual })
    }
}

/// The last occurrence of each field of a small fixed message (envelope, time, IntOrString, map
/// entry), by table position. Go's custom `Unmarshal` of times replaces the whole value, and
/// well-formed bodies never repeat a field of the others, so last-wins is enough here.
pub(super) fn last_values<'a, const N: usize>(
    bytes: &'a [u8],
    message: &'static Message,
) -> Result<[Option<WireValue<'a>>; N], ProtobufError> {
    debug_assert_eq!(message.fields.len(), N, "table {} has {N} fields", message.name);
    let mut values = [None; N];
    for item in (WireFields { buf: bytes, message }) {
        let (tag, value) = item?;
        if let Some(index) = message.position(tag) {
            check_wire_type(message, &message.fields[index], value)?;
            values[index] = Some(value);
        }
    }
    Ok(values)
}

fn varint_or_zero(value: Option<WireValue<'_>>) -> u64 {
    match value {
        Some(WireValue::Varint(v)) => v,
        _ => 0,
    }
}

pub(super) fn bytes_or_empty(value: Option<WireValue<'_>>) -> &[u8] {
    match value {
        Some(WireValue::Bytes(bytes)) => bytes,
        _ => &[],
    }
}

pub(super) fn text(value: Option<WireValue<'_>>) -> String {
    String::from_utf8_lossy(bytes_or_empty(value)).into_owned()
}

/// Accumulates one message's fields as they arrive, then builds its JSON in table order.
struct MessageDecoder<'a> {
    message: &'static Message,
    slots: Vec<Slot<'a>>,
}

/// What has arrived so far for one field.
enum Slot<'a> {
    Unset,
    /// A scalar or well-known message (time, IntOrString, JSON): the last occurrence wins, as in
    /// Go, and is converted once at the end.
    Last(WireValue<'a>),
    /// A nested message: occurrences merge, as protobuf (and Go's decoder) merge them.
    Nested(MessageDecoder<'a>),
    List(Vec<Value>),
    /// Sorted like Go's JSON encoder sorts map keys; a repeated key keeps its last value.
    Map(BTreeMap<String, Value>),
}

impl<'a> MessageDecoder<'a> {
    fn new(message: &'static Message) -> Self {
        MessageDecoder { message, slots: message.fields.iter().map(|_| Slot::Unset).collect() }
    }

    fn merge(&mut self, bytes: &'a [u8]) -> Result<(), ProtobufError> {
        let message = self.message;
        for item in (WireFields { buf: bytes, message }) {
            let (tag, value) = item?;
            // Unknown field numbers were already skipped over by the iterator.
            let Some(index) = message.position(tag) else { continue };
            let field = &message.fields[index];
            check_wire_type(message, field, value)?;
            merge_field(message, field, &mut self.slots[index], value)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<Map<String, Value>, ProtobufError> {
        let mut object = Map::new();
        for (field, slot) in self.message.fields.iter().zip(self.slots) {
            let value = match slot {
                Slot::Unset => continue,
                Slot::Last(value) => decode_single(self.message, field, value)?,
                Slot::Nested(decoder) => Value::Object(decoder.finish()?),
                Slot::List(elements) => Value::Array(elements),
                Slot::Map(entries) => Value::Object(entries.into_iter().collect()),
            };
            if field.presence == Presence::NonZero && is_zero(&value) {
                continue;
            }
            match (field.kind, value) {
                (FieldKind::Inline(_), Value::Object(inlined)) => object.extend(inlined),
                (_, value) => {
                    object.insert(field.json_name.to_owned(), value);
                }
            }
        }
        Ok(object)
    }
}

/// Folds one occurrence of a field (wire type already checked) into its slot.
fn merge_field<'a>(
    message: &'static Message,
    field: &Field,
    slot: &mut Slot<'a>,
    value: WireValue<'a>,
) -> Result<(), ProtobufError> {
    if field.repeated {
        let element = decode_single(message, field, value)?;
        match slot {
            Slot::List(elements) => elements.push(element),
            _ => *slot = Slot::List(vec![element]),
        }
        return Ok(());
    }
    match field.kind {
        FieldKind::StringMap | FieldKind::BytesMap | FieldKind::QuantityMap => {
            let (key, entry_value) = decode_map_entry(field, bytes_or_empty(Some(value)))?;
            match slot {
                Slot::Map(entries) => {
                    entries.insert(key, entry_value);
                }
                _ => *slot = Slot::Map(BTreeMap::from([(key, entry_value)])),
            }
        }
        FieldKind::Message(nested) | FieldKind::Inline(nested) => {
            if !matches!(slot, Slot::Nested(_)) {
                *slot = Slot::Nested(MessageDecoder::new(nested));
            }
            if let Slot::Nested(decoder) = slot {
                decoder.merge(bytes_or_empty(Some(value)))?;
            }
        }
        _ => *slot = Slot::Last(value),
    }
    Ok(())
}

/// Converts one occurrence of a non-map field to JSON.
fn decode_single(message: &'static Message, field: &Field, value: WireValue<'_>) -> Result<Value, ProtobufError> {
    let at = || format!("{}.{}", message.name, field.json_name);
    let json = match (field.kind, value) {
        (FieldKind::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        // int32 travels as a sign-extended 64-bit varint; its low 32 bits are the value.
        (FieldKind::Int32, WireValue::Varint(v)) => Value::from(v as i32),
        (FieldKind::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (FieldKind::String, WireValue::Bytes(bytes)) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        (FieldKind::Bytes, WireValue::Bytes(bytes)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        (FieldKind::Time, WireValue::Bytes(bytes)) => decode_time(bytes, TimePrecision::Seconds, at)?,
        (FieldKind::MicroTime, WireValue::Bytes(bytes)) => decode_time(bytes, TimePrecision::Micros, at)?,
        (FieldKind::IntOrString, WireValue::Bytes(bytes)) => decode_int_or_string(bytes, at)?,
        (FieldKind::Quantity, WireValue::Bytes(bytes)) => decode_quantity(bytes)?,
        (FieldKind::Json, WireValue::Bytes(bytes)) => decode_json(bytes, at)?,
        (FieldKind::Message(nested) | FieldKind::Inline(nested), WireValue::Bytes(bytes)) => {
            Value::Object(decode_message(bytes, nested)?)
        }
        // Maps are never repeated (a table test checks), so only a wire-type mismatch lands here.
        (kind, value) => {
            return Err(ProtobufError::WireTypeMismatch {
                at: at(),
                expected: kind.wire_type(),
                actual: value.wire_type(),
            })
        }
    };
    Ok(json)
}

fn decode_map_entry(field: &Field, bytes: &[u8]) -> Result<(String, Value), ProtobufError> {
    let entry = match field.kind {
        FieldKind::BytesMap => &tables::BYTES_MAP_ENTRY,
        FieldKind::QuantityMap => &workloads::QUANTITY_MAP_ENTRY,
        _ => &tables::STRING_MAP_ENTRY,
    };
    let [key, value] = last_values::<2>(bytes, entry)?;
    // An absent value is the empty string or empty bytes, both of which encode to "".
    let value = decode_single(entry, &entry.fields[1], value.unwrap_or(WireValue::Bytes(&[])))?;
    Ok((text(key), value))
}

#[derive(Clone, Copy)]
enum TimePrecision {
    /// `metav1.Time`: Go drops nanoseconds when decoding and formats whole seconds.
    Seconds,
    /// `metav1.MicroTime`: `RFC3339Micro`, nanoseconds truncated to microseconds.
    Micros,
}

/// `time.Time{}.Unix()` in Go: the zero time, which Go's JSON encoder writes as `null`.
const GO_ZERO_TIME_UNIX_SECONDS: i64 = -62_135_596_800;

fn decode_time(bytes: &[u8], precision: TimePrecision, at: impl Fn() -> String) -> Result<Value, ProtobufError> {
    let [seconds, nanos] = last_values::<2>(bytes, &tables::TIMESTAMP)?;
    // Go's Time.Unmarshal reads an empty message as the zero time.
    if seconds.is_none() && nanos.is_none() {
        return Ok(Value::Null);
    }
    let seconds = varint_or_zero(seconds) as i64;
    let nanos = match precision {
        TimePrecision::Seconds => 0,
        TimePrecision::Micros => i128::from(varint_or_zero(nanos) as i32),
    };
    // Go's time.Unix normalises nanoseconds outside [0, 1e9), so add rather than validate.
    let total_nanos = i128::from(seconds) * 1_000_000_000 + nanos;
    if total_nanos == i128::from(GO_ZERO_TIME_UNIX_SECONDS) * 1_000_000_000 {
        return Ok(Value::Null);
    }
    let whole_seconds = total_nanos.div_euclid(1_000_000_000);
    let subsec_nanos = total_nanos.rem_euclid(1_000_000_000);
    if !(i128::from(RFC3339_MIN_UNIX_SECONDS)..=i128::from(RFC3339_MAX_UNIX_SECONDS)).contains(&whole_seconds) {
        return Err(ProtobufError::TimeOutOfRange { at: at(), seconds });
    }
    // In range, so it fits an i64 with room to spare.
    let whole_seconds = whole_seconds as i64;
    let (year, month, day) = civil_from_days(whole_seconds.div_euclid(86_400));
    let second_of_day = whole_seconds.rem_euclid(86_400);
    let (hour, minute, second) = (second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60);
    let whole = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}");
    Ok(Value::String(match precision {
        TimePrecision::Seconds => format!("{whole}Z"),
        // Go's RFC3339Micro layout truncates, it does not round.
        TimePrecision::Micros => format!("{whole}.{:06}Z", subsec_nanos / 1000),
    }))
}

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in seconds since the epoch: the span RFC 3339
/// (and so Go's JSON encoder) can write. jiff's `Timestamp` stops a day short of the upper end.
const RFC3339_MIN_UNIX_SECONDS: i64 = -62_167_219_200;
const RFC3339_MAX_UNIX_SECONDS: i64 = 253_402_300_799;

/// The proleptic Gregorian `(year, month, day)` of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`; exact for every day in the RFC 3339 range).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468; // days since 0000-03-01, so leap days fall at the end of a year
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn decode_int_or_string(bytes: &[u8], at: impl Fn() -> String) -> Result<Value, ProtobufError> {
    let [kind, int_val, str_val] = last_values::<3>(bytes, &tables::INT_OR_STRING)?;
    match varint_or_zero(kind) as i64 {
        0 => Ok(Value::from(varint_or_zero(int_val) as i32)),
        1 => Ok(Value::String(text(str_val))),
        other => Err(ProtobufError::InvalidIntOrString { at: at(), int_or_string_type: other }),
    }
}

/// Go's decoder also parses the string (`ParseQuantity`) and refuses a malformed one; here it
/// passes through, and the server's own validation of the JSON refuses it instead.
fn decode_quantity(bytes: &[u8]) -> Result<Value, ProtobufError> {
    let [string] = last_values::<1>(bytes, &workloads::QUANTITY)?;
    Ok(Value::String(if string.is_none() { "0".to_owned() } else { text(string) }))
}

fn decode_json(bytes: &[u8], at: impl Fn() -> String) -> Result<Value, ProtobufError> {
    let [raw] = last_values::<1>(bytes, &tables::RAW_EXTENSION)?;
    let raw = bytes_or_empty(raw);
    // Go marshals a RawExtension or FieldsV1 without bytes as null.
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|source| ProtobufError::InvalidJson { at: at(), source })
}

/// The values a Go `omitempty` field leaves out, plus `null` and `{}` (zero times and empty
/// structs), which decode to the same Go value as an absent key.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0) || n.as_u64() == Some(0) || n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::decode_object;
    use crate::protobuf::tests::{decode, envelope, fresh_meta, time, Enc, ErrorCheck};
    use serde_json::json;

    /// A time on the wire (`None`: an empty message), then the expected Time and MicroTime JSON.
    type TimeCase = (Option<(i64, i32)>, Value, Value);

    #[test]
    fn time_conversion_table() {
        // (seconds, nanos) → Time (deletionTimestamp: a pointer, so null is kept), MicroTime.
        let go_zero = GO_ZERO_TIME_UNIX_SECONDS;
        let cases: &[TimeCase] = &[
            (None, Value::Null, Value::Null),
            (Some((go_zero, 0)), Value::Null, Value::Null),
            (Some((0, 0)), json!("1970-01-01T00:00:00Z"), json!("1970-01-01T00:00:00.000000Z")),
            (Some((1_704_164_645, 999_999_999)), json!("2024-01-02T03:04:05Z"), json!("2024-01-02T03:04:05.999999Z")),
            (Some((-1, 0)), json!("1969-12-31T23:59:59Z"), json!("1969-12-31T23:59:59.000000Z")),
            (Some((253_402_300_799, 0)), json!("9999-12-31T23:59:59Z"), json!("9999-12-31T23:59:59.000000Z")),
            (Some((-62_167_219_200, 0)), json!("0000-01-01T00:00:00Z"), json!("0000-01-01T00:00:00.000000Z")),
            (Some((951_782_400, 0)), json!("2000-02-29T00:00:00Z"), json!("2000-02-29T00:00:00.000000Z")),
            (Some((-2_203_891_200, 0)), json!("1900-03-01T00:00:00Z"), json!("1900-03-01T00:00:00.000000Z")),
            (Some((1_709_164_800, 1_000)), json!("2024-02-29T00:00:00Z"), json!("2024-02-29T00:00:00.000001Z")),
            // Negative nanos borrow from the seconds, as Go's time.Unix does.
            (Some((10, -1)), json!("1970-01-01T00:00:10Z"), json!("1970-01-01T00:00:09.999999Z")),
        ];
        for (wire, want_time, want_micro) in cases {
            let encoded = wire.map_or_else(Enc::new, |(seconds, nanos)| time(seconds, nanos));
            let meta = decode_message(&Enc::new().message(9, encoded.clone()).0, &tables::OBJECT_META).expect("time");
            assert_eq!(&meta["deletionTimestamp"], want_time, "Time {wire:?}");
            let spec = decode_message(&Enc::new().message(3, encoded).0, &tables::LEASE_SPEC).expect("micro");
            assert_eq!(&spec["acquireTime"], want_micro, "MicroTime {wire:?}");
        }
        for seconds in [253_402_300_800, -62_167_219_201, i64::MAX, i64::MIN] {
            let out_of_range = Enc::new().message(9, time(seconds, 0));
            let err = decode_message(&out_of_range.0, &tables::OBJECT_META).unwrap_err();
            assert!(
                matches!(err, ProtobufError::TimeOutOfRange { ref at, .. } if at == "ObjectMeta.deletionTimestamp")
            );
        }
    }

    #[test]
    fn civil_from_days_matches_jiffs_calendar() {
        let epoch = jiff::civil::date(1970, 1, 1);
        let first = RFC3339_MIN_UNIX_SECONDS.div_euclid(86_400);
        let last = RFC3339_MAX_UNIX_SECONDS.div_euclid(86_400);
        for days in (first..=last).step_by(7).chain([first, last, -1, 0, 1]) {
            let date = epoch.checked_add(jiff::Span::new().days(days)).expect("in jiff's range");
            let want = (i64::from(date.year()), i64::from(date.month()), i64::from(date.day()));
            assert_eq!(civil_from_days(days), want, "day {days}");
        }
    }

    #[test]
    fn int_or_string_conversion_table() {
        static PORT: Message = Message {
            name: "Port",
            fields: &[Field {
                tag: 1,
                json_name: "port",
                kind: FieldKind::IntOrString,
                repeated: false,
                presence: Presence::OnWire,
            }],
        };
        let cases: &[(Enc, Option<Value>)] = &[
            (Enc::new().int64(1, 0).int32(2, 8080).string(3, ""), Some(json!(8080))),
            (Enc::new().int64(1, 1).int32(2, 0).string(3, "http"), Some(json!("http"))),
            (Enc::new().int32(2, -1), Some(json!(-1))),
            (Enc::new().int64(1, 1), Some(json!(""))),
            (Enc::new(), Some(json!(0))),
            (Enc::new().int64(1, 7), None),
        ];
        for (wire, want) in cases {
            let result = decode_message(&Enc::new().message(1, wire.clone()).0, &PORT);
            match want {
                Some(want) => assert_eq!(&result.expect("decodes")["port"], want),
                None => assert!(matches!(result, Err(ProtobufError::InvalidIntOrString { int_or_string_type: 7, .. }))),
            }
        }
    }

    #[test]
    fn unknown_fields_are_skipped_at_every_level() {
        let plain = Enc::new().message(1, fresh_meta("cm")).entry(2, "a", b"b");
        let noisy_meta = fresh_meta("cm")
            .int64(99, 5)
            .raw(&[0x85, 0x06, 1, 2, 3, 4]) // field 96, 32-bit
            .raw(&[0x81, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]) // field 96, 64-bit
            .raw(&[0x83, 0x06, 0x08, 0x01, 0x84, 0x06]) // field 96, group holding a varint
            .string(16, "removed clusterName");
        let noisy = Enc::new()
            .string(50, "future field")
            .message(1, noisy_meta)
            .entry(2, "a", b"b")
            .message(2, Enc::new().string(1, "c").string(2, "d").int32(3, 9))
            .int64(77, -3);
        let mut want = decode("v1", "ConfigMap", plain);
        want["data"]["c"] = json!("d");
        assert_eq!(decode("v1", "ConfigMap", noisy), want);
    }

    #[test]
    fn duplicate_fields_follow_protobuf_rules() {
        // Scalars: last wins. Nested messages: merge. Map keys: last wins. Lists: append.
        let object = Enc::new()
            .message(1, Enc::new().string(1, "first").entry(11, "k", b"1"))
            .message(1, Enc::new().string(1, "second").entry(11, "k", b"2").string(14, "f"))
            .message(1, Enc::new().string(14, "g"))
            .bool(4, true)
            .bool(4, false);
        let decoded = decode("v1", "ConfigMap", object);
        assert_eq!(decoded["metadata"], json!({"name": "second", "labels": {"k": "2"}, "finalizers": ["f", "g"]}));
        assert_eq!(decoded["immutable"], json!(false));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_character_like_go() {
        let decoded = decode("v1", "ConfigMap", Enc::new().entry(2, "k", b"a\xffb"));
        assert_eq!(decoded["data"]["k"], "a\u{fffd}b");
    }

    #[test]
    fn truncated_input_is_reported_where_it_ends() {
        let body = envelope("v1", "ConfigMap", Enc::new().message(1, fresh_meta("cm")).entry(2, "a", b"b"));
        // Cut anywhere inside the envelope's raw field: its declared length overruns the body.
        let raw_end = body.len() - 4; // contentEncoding and contentType (2 bytes each) follow raw
        let raw_start = raw_end - (Enc::new().message(1, fresh_meta("cm")).entry(2, "a", b"b").0.len());
        for cut in raw_start..raw_end {
            let err = decode_object(&body[..cut]).expect_err("truncated");
            assert!(matches!(err, ProtobufError::Truncated { .. }), "cut at {cut}: {err:?}");
        }
        let cases: &[(&[u8], &str)] = &[
            (&[0x0a, 0x05, 0x0a, 0x03, b'a'], "ConfigMap.metadata"),
            (&[0x0a, 0x02, 0x38, 0x80], "ObjectMeta.generation"),
            (&[0x0a, 0x01, 0x88], "ObjectMeta (field key)"),
            (&[0x0a, 0x03, 0x85, 0x06, 0x01], "ObjectMeta field 96"),
            (&[0x12, 0x04, 0x0a, 0x05, b'a', b'b'], "map entry.key"),
        ];
        for (raw, want_at) in cases {
            let err = decode_message(raw, &tables::CONFIG_MAP).expect_err("truncated");
            assert!(matches!(&err, ProtobufError::Truncated { at } if at == want_at), "{raw:02x?}: {err:?}");
        }
    }

    #[test]
    fn malformed_input_is_rejected() {
        let cases: &[(&[u8], ErrorCheck)] = &[
            // data (a map) sent as a varint.
            (
                &[0x10, 0x01],
                |e| matches!(e, ProtobufError::WireTypeMismatch { at, expected: WireType::LengthDelimited, actual: WireType::Varint } if at == "ConfigMap.data"),
            ),
            // immutable (a bool) sent as a string.
            (&[0x22, 0x00], |e| matches!(e, ProtobufError::WireTypeMismatch { at, .. } if at == "ConfigMap.immutable")),
            // field number 0.
            (&[0x00, 0x00], |e| matches!(e, ProtobufError::Malformed { .. })),
            // wire type 7 does not exist.
            (&[0x0f], |e| matches!(e, ProtobufError::Malformed { .. })),
            // a varint longer than ten bytes.
            (&[0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], |e| {
                matches!(e, ProtobufError::Malformed { .. })
            }),
        ];
        for (raw, expected) in cases {
            let err = decode_message(raw, &tables::CONFIG_MAP).expect_err("malformed");
            assert!(expected(&err), "{raw:02x?}: {err:?}");
        }
        let not_json = Enc::new().message(1, Enc::new().message(17, Enc::new().message(7, Enc::new().string(1, "{"))));
        let err = decode_message(&not_json.0, &tables::CONFIG_MAP).unwrap_err();
        assert!(
            matches!(&err, ProtobufError::InvalidJson { at, .. } if at == "ManagedFieldsEntry.fieldsV1"),
            "{err:?}"
        );
    }
}
