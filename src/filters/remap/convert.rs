//! Records to VRL values and back. A record's map becomes a VRL object
//! (strings stay bytes, so text that is not UTF-8 passes through intact),
//! and the object a program leaves is written as a msgpack map again.
//!
//! | msgpack | VRL | msgpack again |
//! |---|---|---|
//! | str, bin | string (bytes) | str |
//! | int, uint | integer (a uint past i64 becomes a float) | int |
//! | float 32/64 | float (NaN becomes null) | float 64 |
//! | bool, nil | boolean, null | bool, nil |
//! | ext 0 (EventTime) | timestamp | RFC 3339 string |
//! | other ext | its bytes, as a string | str |
//! | array, map | array, object (keys sorted, as in VRL) | array, map |
//!
//! A VRL regex is written as its pattern.

use bytes::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use vrl::value::{KeyString, ObjectMap, Value};

use crate::event::EventTime;
use crate::protocol::msgpack::{write, Reader, Value as Msg};

/// The deepest nesting converted. Conversion recurses; a record of
/// thousands of nested arrays (from outside) must not overflow the stack,
/// so a deeper one is an error and the record is handled like one whose
/// program failed.
pub const MAX_DEPTH: usize = 64;

/// Why a record could not become a VRL value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConvertError {
    /// Its bytes are not msgpack.
    #[error("the record is not valid msgpack: {0}")]
    Decode(String),
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("the record is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A map key that is neither a string nor a number.
    #[error("the record has a map key that is neither a string nor a number")]
    Key,
}

/// The value at `r`, whose buffer is `owner` (strings are shared with it,
/// not copied).
pub fn read_value(r: &mut Reader<'_>, owner: &Bytes, depth: usize) -> Result<Value, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::TooDeep);
    }
    let decode = |e: crate::protocol::msgpack::Error| ConvertError::Decode(e.to_string());
    Ok(match r.read().map_err(decode)? {
        Msg::Nil => Value::Null,
        Msg::Bool(b) => Value::Boolean(b),
        Msg::Int(i) => Value::Integer(i),
        Msg::UInt(u) => match i64::try_from(u) {
            Ok(i) => Value::Integer(i),
            Err(_) => float(u as f64),
        },
        Msg::Float(f) => float(f),
        // through its shortest text, so 0.1f32 stays 0.1
        Msg::Float32(f) => float(f.to_string().parse().unwrap_or(f64::from(f))),
        Msg::Str(s) | Msg::Bin(s) => Value::Bytes(owner.slice_ref(s)),
        Msg::Ext(0, t) if t.len() == 8 => {
            let secs = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            let nanos = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
            timestamp(EventTime::new(secs, nanos)).unwrap_or(Value::Null)
        }
        Msg::Ext(_, data) => Value::Bytes(owner.slice_ref(data)),
        Msg::Array(n) => {
            // `n` comes from outside: allocate as items arrive
            let mut items = Vec::with_capacity(n.min(64));
            for _ in 0..n {
                items.push(read_value(r, owner, depth + 1)?);
            }
            Value::Array(items)
        }
        Msg::Map(n) => Value::Object(read_map_body(r, owner, n, depth)?),
    })
}

/// The `n` pairs of a map whose header was read.
fn read_map_body(
    r: &mut Reader<'_>,
    owner: &Bytes,
    n: usize,
    depth: usize,
) -> Result<ObjectMap, ConvertError> {
    let mut map = ObjectMap::new();
    for _ in 0..n {
        let key = match r.read().map_err(|e| ConvertError::Decode(e.to_string()))? {
            Msg::Str(k) | Msg::Bin(k) => String::from_utf8_lossy(k).into_owned(),
            Msg::Int(i) => i.to_string(),
            Msg::UInt(u) => u.to_string(),
            _ => return Err(ConvertError::Key),
        };
        let value = read_value(r, owner, depth + 1)?;
        map.insert(KeyString::from(key), value);
    }
    Ok(map)
}

/// The VRL object of an encoded record map at `map`, a slice of `owner`.
pub fn record(owner: &Bytes, map: &[u8]) -> Result<Value, ConvertError> {
    let mut r = Reader::new(map);
    match read_value(&mut r, owner, 0)? {
        v @ Value::Object(_) => Ok(v),
        // a record that is not a map: VRL's `.` is an object
        other => Ok(message(other)),
    }
}

/// `{"message": value}`: a line, or a value that is not an object.
pub fn message(value: Value) -> Value {
    Value::Object(ObjectMap::from([(KeyString::from("message"), value)]))
}

fn float(f: f64) -> Value {
    match vrl::prelude::NotNan::new(f) {
        Ok(f) => Value::Float(f),
        Err(_) => Value::Null,
    }
}

/// `time` as a VRL timestamp.
pub fn timestamp(time: EventTime) -> Option<Value> {
    DateTime::<Utc>::from_timestamp(i64::from(time.secs), time.nanos).map(Value::Timestamp)
}

/// A VRL timestamp as a record time; `None` before 1970 or past 2106
/// (an EventTime counts seconds in a u32).
pub fn event_time(t: &DateTime<Utc>) -> Option<EventTime> {
    let secs = u32::try_from(t.timestamp()).ok()?;
    // a leap second's nanoseconds run past 1e9
    Some(EventTime::new(
        secs,
        t.timestamp_subsec_nanos().min(999_999_999),
    ))
}

/// Appends `value` as msgpack.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bytes(b) => write::str(out, b),
        Value::Regex(re) => write::str(out, re.as_str().as_bytes()),
        Value::Integer(i) => write::int(out, *i),
        Value::Float(f) => {
            out.push(0xcb);
            out.extend_from_slice(&f.into_inner().to_be_bytes());
        }
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Timestamp(t) => {
            let text = t.to_rfc3339_opts(SecondsFormat::AutoSi, true);
            write::str(out, text.as_bytes());
        }
        Value::Object(map) => {
            write::map_len(out, map.len());
            for (k, v) in map {
                write::str(out, k.as_str().as_bytes());
                write_value(out, v);
            }
        }
        Value::Array(items) => {
            write::array_len(out, items.len());
            for v in items {
                write_value(out, v);
            }
        }
        Value::Null => out.push(0xc0),
    }
}
