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

/// Wire type of 4-byte little-endian values (`fixed32`, `float`).
pub const FIXED32: u8 = 5;
/// Wire types of a group's start and end (deprecated; skipped).
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
/// Groups nested deeper are refused (as prost's recursion limit does).
const MAX_GROUP_DEPTH: usize = 100;

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated at byte {0}")]
    Truncated(usize),
    #[error("a varint longer than 10 bytes at byte {0}")]
    LongVarint(usize),
    #[error("field {field} has wire type {wire}, not {want}")]
    WireType { field: u32, wire: u8, want: u8 },
    #[error("wire type {wire} (field {field}) is not read")]
    Unsupported { field: u32, wire: u8 },
    #[error("field number 0")]
    FieldZero,
    #[error("field {0} is not UTF-8")]
    NotUtf8(u32),
    #[error("nested deeper than {0} messages")]
    TooDeep(usize),
}

/// One field's value as the wire has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
    /// A group (deprecated, wire types 3 and 4), skipped whole.
    Group,
}

impl<'a> Wire<'a> {
    /// The bytes of a length-delimited field (a string, bytes, a message).
    pub fn bytes(self, field: u32) -> Result<&'a [u8], WireError> {
        match self {
            Wire::Len(b) => Ok(b),
            other => Err(other.wrong(field, LEN)),
        }
    }

    /// A string field's text.
    pub fn str(self, field: u32) -> Result<&'a str, WireError> {
        std::str::from_utf8(self.bytes(field)?).map_err(|_| WireError::NotUtf8(field))
    }

    pub fn varint(self, field: u32) -> Result<u64, WireError> {
        match self {
            Wire::Varint(v) => Ok(v),
            other => Err(other.wrong(field, VARINT)),
        }
    }

    pub fn fixed64(self, field: u32) -> Result<u64, WireError> {
        match self {
            Wire::Fixed64(v) => Ok(v),
            other => Err(other.wrong(field, FIXED64)),
        }
    }

    pub fn fixed32(self, field: u32) -> Result<u32, WireError> {
        match self {
            Wire::Fixed32(v) => Ok(v),
            other => Err(other.wrong(field, FIXED32)),
        }
    }

    fn wrong(self, field: u32, want: u8) -> WireError {
        let wire = match self {
            Wire::Varint(_) => VARINT,
            Wire::Fixed64(_) => FIXED64,
            Wire::Len(_) => LEN,
            Wire::Fixed32(_) => FIXED32,
            Wire::Group => START_GROUP,
        };
        WireError::WireType { field, wire, want }
    }
}

/// The fields of one message's bytes, in wire order: an iterator of
/// `(field number, value)`, ending at the first error.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf, pos: 0 }
    }

    /// A varint; one byte (a key, a short length) without a loop.
    #[inline]
    fn varint(&mut self) -> Result<u64, WireError> {
        match self.buf.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.long_varint(),
        }
    }

    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(WireError::Truncated(self.pos));
            };
            self.pos += 1;
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(WireError::LongVarint(start))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], WireError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.buf.len())
            .ok_or(WireError::Truncated(self.buf.len()))?;
        let b = &self.buf[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    // inlined, as `next` is, so that a field comes back in registers: the
    // OTLP source's profile had it returned through memory cost a stall
    // per field
    #[inline]
    fn field(&mut self) -> Result<(u32, Wire<'a>), WireError> {
        let key = self.varint()?;
        let field = u32::try_from(key >> 3).map_err(|_| WireError::FieldZero)?;
        if field == 0 {
            return Err(WireError::FieldZero);
        }
        let wire = (key & 7) as u8;
        let value = match wire {
            VARINT => Wire::Varint(self.varint()?),
            FIXED64 => {
                let b = self.take(8)?;
                Wire::Fixed64(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            LEN => {
                let n = self.varint()?;
                Wire::Len(self.take(n)?)
            }
            FIXED32 => {
                let b = self.take(4)?;
                Wire::Fixed32(u32::from_le_bytes(b.try_into().expect("4 bytes")))
            }
            START_GROUP => {
                self.skip_group(field, 1)?;
                Wire::Group
            }
            wire => return Err(WireError::Unsupported { field, wire }),
        };
        Ok((field, value))
    }

    /// Skips the fields of group `field` up to and with its end.
    #[inline(never)]
    fn skip_group(&mut self, field: u32, depth: usize) -> Result<(), WireError> {
        if depth > MAX_GROUP_DEPTH {
            return Err(WireError::TooDeep(MAX_GROUP_DEPTH));
        }
        loop {
            if self.pos >= self.buf.len() {
                return Err(WireError::Truncated(self.pos));
            }
            let key = self.varint()?;
            let (inner, wire) = (key >> 3, (key & 7) as u8);
            match wire {
                END_GROUP if inner == u64::from(field) => return Ok(()),
                END_GROUP => return Err(WireError::Unsupported { field, wire }),
                START_GROUP => {
                    let inner = u32::try_from(inner).map_err(|_| WireError::FieldZero)?;
                    self.skip_group(inner, depth + 1)?;
                }
                VARINT => {
                    self.varint()?;
                }
                FIXED64 => {
                    self.take(8)?;
                }
                LEN => {
                    let n = self.varint()?;
                    self.take(n)?;
                }
                FIXED32 => {
                    self.take(4)?;
                }
                wire => return Err(WireError::Unsupported { field, wire }),
            }
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Wire<'a>), WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let r = self.field();
        if r.is_err() {
            // no field after an error
            self.pos = self.buf.len();
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_what_is_written_and_stop_at_bad_bytes() {
        let mut out = Vec::new();
        varint_field(&mut out, 1, 300);
        fixed64_field(&mut out, 11, u64::MAX);
        bytes_field(&mut out, 3, b"text");
        out.extend_from_slice(&[(4 << 3) | 5, 1, 0, 0, 0]);
        let read: Vec<_> = Fields::new(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            read,
            [
                (1, Wire::Varint(300)),
                (11, Wire::Fixed64(u64::MAX)),
                (3, Wire::Len(b"text")),
                (4, Wire::Fixed32(1)),
            ]
        );
        assert_eq!(read[2].1.str(3), Ok("text"));
        assert!(read[0].1.str(1).is_err());
        // a group skipped whole: field 1 { field 2 varint, group 3 {} }
        let group = [0x0b, 0x10, 0x01, 0x1b, 0x1c, 0x0c, 0x10, 0x05];
        let read: Vec<_> = Fields::new(&group).collect::<Result<_, _>>().unwrap();
        assert_eq!(read, [(1, Wire::Group), (2, Wire::Varint(5))]);
        // a length past the end, a long varint, field 0, a group not
        // ended, a group ended as another
        let long = [&[0x08][..], &[0xff; 11]].concat();
        for bad in [
            &[0x1a, 0x05, b'a'][..],
            &long,
            &[0x00, 0x00],
            &[0x0b],
            &[0x0b, 0x14],
        ] {
            let r: Vec<_> = Fields::new(bad).collect();
            assert!(r.last().unwrap().is_err(), "{bad:?}: {r:?}");
        }
        let mut max = Vec::new();
        varint(&mut max, u64::MAX);
        assert_eq!(
            Fields::new(&[&[0x08][..], &max].concat()).next(),
            Some(Ok((1, Wire::Varint(u64::MAX))))
        );
    }

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
