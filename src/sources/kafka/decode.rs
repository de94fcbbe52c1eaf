//! Kafka message → one msgpack `[time, record]` entry.

use crate::event::EventTime;
use crate::protocol::msgpack::{write, Reader};
use crate::sources::http::decode::{too_deep, MAX_JSON_DEPTH};

use super::config::{KafkaSourceConfig, ValueFormat};

/// What is taken from one message.
pub struct Message<'a> {
    pub value: Option<&'a [u8]>,
    pub key: Option<&'a [u8]>,
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch, if the message has a timestamp.
    pub timestamp_ms: Option<i64>,
}

/// Why a message value is not a record.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// `format = "json"` and the value is not a JSON object.
    NotJsonObject,
    /// `format = "json"` and the value is nested deeper than
    /// [`MAX_JSON_DEPTH`] levels (as the HTTP source refuses it).
    JsonTooDeep,
    /// `format = "msgpack"` and the value is not exactly one msgpack map.
    NotMsgpackMap,
}

impl DecodeError {
    /// The `kind` label of the error counter.
    pub fn kind(&self) -> &'static str {
        match self {
            DecodeError::NotJsonObject | DecodeError::JsonTooDeep => "invalid_json",
            DecodeError::NotMsgpackMap => "invalid_msgpack",
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::NotJsonObject => f.write_str(
                "message value is not a JSON object (format = \"json\"); \
                 produce JSON objects or use format = \"raw\"",
            ),
            DecodeError::JsonTooDeep => write!(
                f,
                "message value is JSON nested deeper than {MAX_JSON_DEPTH} levels (format = \"json\")"
            ),
            DecodeError::NotMsgpackMap => f.write_str(
                "message value is not one msgpack map (format = \"msgpack\"); \
                 produce msgpack maps or use format = \"raw\"",
            ),
        }
    }
}

/// Appends the entry for `m` to `out`; on error `out` is left unchanged.
pub fn encode_entry(
    c: &KafkaSourceConfig,
    m: &Message<'_>,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let value = m.value.unwrap_or(b"");
    // the record body without its map header, and how many pairs it holds
    let (body, pairs): (std::borrow::Cow<'_, [u8]>, usize) = match c.format {
        ValueFormat::Raw => {
            let mut b = Vec::with_capacity(value.len() + 10);
            write::str(&mut b, b"message");
            write::str(&mut b, value);
            (b.into(), 1)
        }
        ValueFormat::Json => {
            if too_deep(value) {
                return Err(DecodeError::JsonTooDeep);
            }
            let v: serde_json::Value =
                serde_json::from_slice(value).map_err(|_| DecodeError::NotJsonObject)?;
            let serde_json::Value::Object(map) = &v else {
                return Err(DecodeError::NotJsonObject);
            };
            let mut b = Vec::with_capacity(value.len());
            crate::sources::http::decode::json_to_msgpack(&v, &mut b);
            // drop the map header json_to_msgpack wrote
            let mut r = Reader::new(&b);
            r.read_map_len().map_err(|_| DecodeError::NotJsonObject)?;
            let start = r.pos();
            (b[start..].to_vec().into(), map.len())
        }
        ValueFormat::Msgpack => {
            let mut r = Reader::new(value);
            let n = r.read_map_len().map_err(|_| DecodeError::NotMsgpackMap)?;
            let start = r.pos();
            for _ in 0..n * 2 {
                r.skip().map_err(|_| DecodeError::NotMsgpackMap)?;
            }
            if !r.is_empty() {
                return Err(DecodeError::NotMsgpackMap);
            }
            (value[start..].into(), n)
        }
    };
    let extra = [
        c.key_field.is_some() && m.key.is_some(),
        c.partition_field.is_some(),
        c.offset_field.is_some(),
        c.timestamp_field.is_some() && m.timestamp_ms.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    write::array_len(out, 2);
    let time = match m.timestamp_ms {
        Some(ms) if ms >= 0 && ms / 1000 <= i64::from(u32::MAX) => {
            EventTime::new((ms / 1000) as u32, ((ms % 1000) * 1_000_000) as u32)
        }
        _ => EventTime::now(),
    };
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, pairs + extra);
    out.extend_from_slice(&body);
    if let (Some(f), Some(k)) = (&c.key_field, m.key) {
        write::str(out, f.as_bytes());
        write::str(out, k);
    }
    if let Some(f) = &c.partition_field {
        write::str(out, f.as_bytes());
        write::uint(out, m.partition.max(0) as u64);
    }
    if let Some(f) = &c.offset_field {
        write::str(out, f.as_bytes());
        write::uint(out, m.offset.max(0) as u64);
    }
    if let (Some(f), Some(ts)) = (&c.timestamp_field, m.timestamp_ms) {
        write::str(out, f.as_bytes());
        write::uint(out, ts.max(0) as u64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, Records};

    fn config(extra: &str) -> KafkaSourceConfig {
        toml::from_str(&format!(
            "brokers = [\"b:9092\"]\ngroup_id = \"g\"\ntopics = [\"t\"]\n{extra}"
        ))
        .unwrap()
    }

    fn msg(value: &[u8]) -> Message<'_> {
        Message {
            value: Some(value),
            key: Some(b"k1"),
            partition: 3,
            offset: 42,
            timestamp_ms: Some(1_700_000_000_123),
        }
    }

    /// The records of one entry, as JSON, and its time.
    fn decode(entry: Vec<u8>) -> (EventTime, String) {
        let batch = Batch::new("t".into(), Records::Entries(entry.into()), 1);
        let mut got = None;
        batch
            .for_each_record(|t, r| got = Some((t, format!("{r:?}"))))
            .unwrap();
        got.unwrap()
    }

    #[test]
    fn raw_json_and_msgpack_values_with_requested_fields() {
        let c = config(
            "key_field = \"key\"\npartition_field = \"p\"\noffset_field = \"o\"\ntimestamp_field = \"ts\"",
        );
        let mut out = Vec::new();
        encode_entry(&c, &msg(b"hello"), &mut out).unwrap();
        let (t, _) = decode(out.clone());
        assert_eq!((t.secs, t.nanos), (1_700_000_000, 123_000_000));
        let mut expected = Vec::new();
        write::array_len(&mut expected, 2);
        write::event_time(&mut expected, 1_700_000_000, 123_000_000);
        write::map_len(&mut expected, 5);
        for (k, v) in [("message", "hello"), ("key", "k1")] {
            write::str(&mut expected, k.as_bytes());
            write::str(&mut expected, v.as_bytes());
        }
        write::str(&mut expected, b"p");
        write::uint(&mut expected, 3);
        write::str(&mut expected, b"o");
        write::uint(&mut expected, 42);
        write::str(&mut expected, b"ts");
        write::uint(&mut expected, 1_700_000_000_123);
        assert_eq!(out, expected);

        let c = config("format = \"json\"\noffset_field = \"o\"");
        let mut out = Vec::new();
        encode_entry(&c, &msg(br#"{"a":1}"#), &mut out).unwrap();
        let mut expected = Vec::new();
        write::array_len(&mut expected, 2);
        write::event_time(&mut expected, 1_700_000_000, 123_000_000);
        write::map_len(&mut expected, 2);
        write::str(&mut expected, b"a");
        write::uint(&mut expected, 1);
        write::str(&mut expected, b"o");
        write::uint(&mut expected, 42);
        assert_eq!(out, expected);

        let c = config("format = \"msgpack\"\noffset_field = \"o\"");
        let mut value = Vec::new();
        write::map_len(&mut value, 1);
        write::str(&mut value, b"a");
        write::uint(&mut value, 1);
        let mut out2 = Vec::new();
        encode_entry(&c, &msg(&value), &mut out2).unwrap();
        assert_eq!(out2, expected);
    }

    #[test]
    fn values_of_the_wrong_shape_are_errors_and_leave_nothing() {
        let mut out = Vec::new();
        let c = config("format = \"json\"");
        for bad in [&b"[1]"[..], b"{", b"\"x\""] {
            assert_eq!(
                encode_entry(&c, &msg(bad), &mut out),
                Err(DecodeError::NotJsonObject)
            );
        }
        // nested past the HTTP source's limit, with valid JSON inside it
        let deep = |levels: usize| {
            let mut v = b"{\"a\":".to_vec();
            v.extend(std::iter::repeat_n(b'[', levels - 1));
            v.extend(std::iter::repeat_n(b']', levels - 1));
            v.push(b'}');
            v
        };
        assert!(encode_entry(&c, &msg(&deep(MAX_JSON_DEPTH)), &mut Vec::new()).is_ok());
        let e = encode_entry(&c, &msg(&deep(MAX_JSON_DEPTH + 1)), &mut out).unwrap_err();
        assert_eq!(e, DecodeError::JsonTooDeep);
        assert_eq!(e.kind(), "invalid_json");
        assert!(e.to_string().contains("deeper than 64 levels"), "{e}");
        let c = config("format = \"msgpack\"");
        for bad in [&[0x91, 0x01][..], &[0x81, 0xa1, b'a'], &[0x80, 0x80]] {
            assert_eq!(
                encode_entry(&c, &msg(bad), &mut out),
                Err(DecodeError::NotMsgpackMap)
            );
        }
        assert!(out.is_empty());
    }
}
