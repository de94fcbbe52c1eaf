//! One record → one Kafka message: payload, key and timestamp.
//!
//! Raw records that are a string as they stand (a tailed line, a `message`
//! field) are borrowed from the received frame, and librdkafka takes them
//! as they lie (the sink holds the frame until every report of it): the
//! only copy is the one into the produce request.

use std::borrow::Cow;

use crate::event::{Batch, EventTime, RecordRef, Records};
use crate::format::{self, FormatKind, Formatter};
use crate::protocol::msgpack::{self, Reader};
use crate::sinks::name::{scalar_text, BatchName};

/// A record ready to be produced.
pub struct Message<'a> {
    pub payload: Cow<'a, [u8]>,
    pub key: Option<Cow<'a, [u8]>>,
    pub time: EventTime,
    /// With a topic per record: its name, and whether a field it names
    /// was missing.
    pub topic: Option<(String, bool)>,
}

/// Turns records into message payloads and keys.
pub struct Encoder {
    formatter: Formatter,
    key_field: Option<Vec<u8>>,
}

impl Encoder {
    pub fn new(formatter: Formatter, key_field: Option<&str>) -> Self {
        Encoder {
            formatter,
            key_field: key_field.map(|k| k.as_bytes().to_vec()),
        }
    }

    /// The messages of every record of `batch`, in order.
    pub fn encode<'a>(
        &mut self,
        batch: &'a Batch,
        topics: Option<&BatchName<'_>>,
    ) -> msgpack::Result<Vec<Message<'a>>> {
        let mut out = Vec::with_capacity(batch.count);
        match &batch.records {
            Records::Entries(b) => {
                let mut r = Reader::new(b);
                while !r.is_empty() {
                    let time = crate::event::read_entry_time(&mut r)?;
                    let start = r.pos();
                    r.skip()?;
                    out.push(self.message(
                        &batch.tag,
                        time,
                        RecordRef::Map(&b[start..r.pos()]),
                        topics,
                    ));
                }
            }
            Records::Lines { data, time } => {
                for line in data.split_inclusive(|c| *c == b'\n') {
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    out.push(self.message(&batch.tag, *time, RecordRef::Line(line), topics));
                }
            }
        }
        Ok(out)
    }

    fn message<'a>(
        &mut self,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'a>,
        topics: Option<&BatchName<'_>>,
    ) -> Message<'a> {
        let payload = match (self.formatter.kind(), format::raw_text(rec)) {
            (FormatKind::Raw, Some(text)) => Cow::Borrowed(text),
            _ => {
                let mut buf = Vec::new();
                self.formatter.write_record(tag, time, rec, &mut buf);
                if self.formatter.kind() != FormatKind::Msgpack && buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                Cow::Owned(buf)
            }
        };
        let key = self
            .key_field
            .as_deref()
            .and_then(|k| scalar_text(rec.field(k)?));
        let topic = topics.map(|t| t.render(rec));
        Message {
            payload,
            key,
            time,
            topic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FormatConfig;
    use crate::protocol::msgpack::write;
    use bytes::Bytes;

    fn entries(records: &[(&str, &str)]) -> Batch {
        let mut b = Vec::new();
        for (msg, user) in records {
            write::array_len(&mut b, 2);
            write::event_time(&mut b, 1_700_000_000, 5);
            write::map_len(&mut b, 2);
            write::str(&mut b, b"message");
            write::str(&mut b, msg.as_bytes());
            write::str(&mut b, b"user");
            write::str(&mut b, user.as_bytes());
        }
        Batch::new(
            "app.web".into(),
            Records::Entries(Bytes::from(b)),
            records.len(),
        )
    }

    fn encoder(format: &str, key: Option<&str>) -> Encoder {
        let config: FormatConfig = toml::from_str::<toml::Table>(&format!("format = {format}"))
            .unwrap()["format"]
            .clone()
            .try_into()
            .unwrap();
        Encoder::new(Formatter::new(&config).unwrap(), key)
    }

    #[test]
    fn raw_payloads_are_borrowed_from_the_frame_with_keys() {
        let batch = entries(&[("one", "ann"), ("two", "bob")]);
        let mut e = encoder("\"raw\"", Some("user"));
        let m = e.encode(&batch, None).unwrap();
        assert_eq!(m.len(), 2);
        assert!(matches!(m[0].payload, Cow::Borrowed(b"one")));
        assert_eq!(m[1].payload.as_ref(), b"two");
        assert_eq!(m[0].key.as_deref(), Some(&b"ann"[..]));
        assert_eq!(m[0].time, EventTime::new(1_700_000_000, 5));
    }

    #[test]
    fn json_is_one_document_without_newline() {
        let batch = entries(&[("one", "ann")]);
        let m = encoder("\"json\"", None).encode(&batch, None).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&m[0].payload).unwrap();
        assert_eq!(v["tag"], "app.web");
        assert_eq!(v["record"]["user"], "ann");
        assert!(m[0].key.is_none());
    }

    #[test]
    fn lines_are_messages() {
        let batch = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from_static(b"a\nbb\n"),
                time: EventTime::new(1, 0),
            },
            2,
        );
        let m = encoder("\"raw\"", Some("message"))
            .encode(&batch, None)
            .unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].payload.as_ref(), b"bb");
        assert_eq!(m[1].key.as_deref(), Some(&b"bb"[..]));
    }
}
