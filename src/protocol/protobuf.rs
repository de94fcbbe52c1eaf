//! Protocol Buffers' wire format, written by hand where a hot path
//! builds messages straight from other bytes (the `otlp` sink writes
//! OTLP log records from msgpack records without building prost's
//! structs first).
//!
//! A nested message is written in place: [`message`] reserves one byte
//! for its length, writes the content after it and widens the length
//! (moving the content) only when it is 128 bytes or more. Every message
//! is encoded as prost would encode it: fields in the order they are
//! written, each length minimal, so any protobuf decoder reads it.

/// Wire type of varints (integers, booleans, enums).
pub const VARINT: u8 = 0;
/// Wire type of 8-byte little-endian values (`fixed64`, `double`).
pub const FIXED64: u8 = 1;
/// Wire type of length-delimited values (strings, bytes, messages).
pub const LEN: u8 = 2;

/// Appends `v` as a varint.
#[inline]
pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes `v` takes as a varint.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 + floor(bits / 7), 1 for 0
    (((64 - (v | 1).leading_zeros()) * 9 + 64) / 64) as usize
}

/// Appends the key of field `field` of wire type `wire`.
#[inline]
pub fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

/// Appends field `field` as a varint.
#[inline]
pub fn varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, VARINT);
    varint(out, v);
}

/// Appends field `field` as a `fixed64` (or a `double`'s bits).
#[inline]
pub fn fixed64_field(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends field `field` as length-delimited bytes (a string, bytes, or a
/// message encoded already).
#[inline]
pub fn bytes_field(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// How many bytes field `field` takes holding `len` bytes.
#[inline]
pub fn bytes_field_len(field: u32, len: usize) -> usize {
    varint_len(u64::from(field) << 3) + varint_len(len as u64) + len
}

/// Appends field `field` as a message whose content `content` appends;
/// returns what `content` returns. An error leaves what `content` wrote:
/// the caller truncates `out` if it keeps going.
#[inline]
pub fn message<R>(out: &mut Vec<u8>, field: u32, content: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    key(out, field, LEN);
    let at = out.len();
    out.push(0);
    let r = content(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let n = varint_len(len as u64);
        out.resize(out.len() + n - 1, 0);
        out.copy_within(at + 1..at + 1 + len, at + n);
        let mut v = len as u64;
        for b in &mut out[at..at + n - 1] {
            *b = v as u8 | 0x80;
            v >>= 7;
        }
        out[at + n - 1] = v as u8;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_match_what_is_written() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
    }

    #[test]
    fn a_message_of_any_length_is_prefixed_by_its_minimal_length() {
        for len in [0, 1, 127, 128, 200, 16_383, 16_384, 70_000] {
            let mut out = vec![0xff];
            message(&mut out, 5, |o| o.extend(std::iter::repeat_n(7u8, len)));
            let mut want = vec![0xff];
            bytes_field(&mut want, 5, &vec![7u8; len]);
            assert_eq!(out, want, "{len}");
            assert_eq!(out.len() - 1, bytes_field_len(5, len));
        }
    }

    #[test]
    fn nested_messages_read_back_with_prost() {
        use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
        use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, KeyValueList};
        use prost::Message as _;
        // AnyValue { kvlist_value (6): KeyValueList { values (1): KeyValue {
        //   key (1), value (2): AnyValue { string_value (1) } } } }
        let long = "x".repeat(300);
        let mut out = Vec::new();
        message(&mut out, 6, |o| {
            message(o, 1, |o| {
                bytes_field(o, 1, b"k");
                message(o, 2, |o| bytes_field(o, 1, long.as_bytes()));
            });
        });
        let v = AnyValue::decode(&out[..]).unwrap();
        let want = AnyValue {
            value: Some(Any::KvlistValue(KeyValueList {
                values: vec![KeyValue {
                    key: "k".into(),
                    value: Some(AnyValue {
                        value: Some(Any::StringValue(long.clone())),
                    }),
                }],
            })),
        };
        assert_eq!(v, want);
        assert_eq!(out, want.encode_to_vec());
    }
}
