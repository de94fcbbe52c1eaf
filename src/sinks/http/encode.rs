//! Records → request bodies: NDJSON, a JSON array, a msgpack array, or
//! lines of text; then gzip or zstd.

use super::config::{Compression, Encoding, HttpSettings};
use crate::event::Batch;
pub use crate::format::ndjson::Added;
use crate::format::{self, FormatConfig, FormatKind, Formatter};
use crate::protocol::msgpack::{self, write};

/// Builds the body of one request from its batches.
pub struct Encoder {
    encoding: Encoding,
    added: Added,
    rfc3339: format::time::TimeFormat,
    /// `text`: the message or the template.
    text: Formatter,
    compression: Compression,
}

impl Encoder {
    pub fn new(c: &HttpSettings) -> Result<Encoder, String> {
        let text = Formatter::new(&FormatConfig {
            kind: if c.template.is_some() {
                FormatKind::Template
            } else {
                FormatKind::Raw
            },
            template: c.template.clone(),
            ..FormatConfig::default()
        })?;
        Ok(Encoder {
            encoding: c.encoding,
            added: Added {
                time_key: Some(c.time_key.clone()).filter(|k| !k.is_empty()),
                time_format: c.time_format,
                tag_key: c.tag_key.clone(),
            },
            rfc3339: format::time::TimeFormat::new(None)?,
            text,
            compression: c.compression,
        })
    }

    /// The `Content-Type` of the bodies.
    pub fn content_type(&self) -> &'static str {
        match self.encoding {
            Encoding::Ndjson => "application/x-ndjson",
            Encoding::Json => "application/json",
            Encoding::Msgpack => "application/msgpack",
            Encoding::Text => "text/plain; charset=utf-8",
        }
    }

    /// The `Content-Encoding`, if compressed.
    pub fn content_encoding(&self) -> Option<&'static str> {
        match self.compression {
            Compression::None => None,
            Compression::Gzip => Some("gzip"),
            Compression::Zstd => Some("zstd"),
        }
    }

    /// Starts a body of `records` records.
    /// Whether [`Encoder::begin`] writes the number of records into the
    /// body (a msgpack array header), to be fixed when some are left out.
    pub fn announces_count(&self) -> bool {
        self.encoding == Encoding::Msgpack
    }

    pub fn begin(&self, out: &mut Vec<u8>, records: usize) {
        match self.encoding {
            Encoding::Json => out.push(b'['),
            Encoding::Msgpack => write::array_len(out, records),
            Encoding::Ndjson | Encoding::Text => {}
        }
    }

    /// Appends the records of `batch`; `first` if nothing precedes them.
    pub fn batch(&mut self, batch: &Batch, out: &mut Vec<u8>, first: bool) -> msgpack::Result<()> {
        let tag = &batch.tag;
        let mut first = first;
        let mut failed = Ok(());
        let read = batch.for_each_record(|time, rec| match self.encoding {
            Encoding::Ndjson => {
                self.added
                    .write_json(&mut self.rfc3339, tag, time, rec, out);
                out.push(b'\n');
            }
            Encoding::Json => {
                if !first {
                    out.push(b',');
                }
                first = false;
                self.added
                    .write_json(&mut self.rfc3339, tag, time, rec, out);
            }
            Encoding::Msgpack => {
                if let Err(e) = self
                    .added
                    .write_msgpack(&mut self.rfc3339, tag, time, rec, out)
                {
                    failed = Err(e);
                }
            }
            Encoding::Text => self.text.write_record(tag, time, rec, out),
        });
        read.and(failed)
    }

    /// Ends the body and compresses it.
    pub fn finish(&self, mut out: Vec<u8>) -> Vec<u8> {
        if self.encoding == Encoding::Json {
            out.push(b']');
        }
        compress(self.compression, out)
    }
}

/// `body` compressed (as it is for `None`).
pub fn compress(c: Compression, body: Vec<u8>) -> Vec<u8> {
    match c {
        Compression::None => body,
        Compression::Gzip => crate::protocol::gzip::compress(&[&body]),
        Compression::Zstd => zstd::bulk::compress(&body, 1).unwrap_or(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventTime, Records};
    use bytes::Bytes;

    fn entries(records: &[serde_json::Value]) -> Batch {
        let mut e = Vec::new();
        for (i, r) in records.iter().enumerate() {
            write::array_len(&mut e, 2);
            write::event_time(&mut e, 1_700_000_000 + i as u32, 500_000_000);
            crate::protocol::json::object_to_msgpack(&mut e, r.to_string().as_bytes()).unwrap();
        }
        Batch::new(
            "app.web".into(),
            Records::Entries(Bytes::from(e)),
            records.len(),
        )
    }

    fn config(extra: &str) -> HttpSettings {
        toml::from_str::<super::super::config::HttpSinkConfig>(&format!(
            "uri = \"http://h/\"\n{extra}"
        ))
        .unwrap()
        .sink
    }

    fn body(c: &HttpSettings, b: &Batch) -> Vec<u8> {
        let mut e = Encoder::new(c).unwrap();
        let mut out = Vec::new();
        e.begin(&mut out, b.count);
        e.batch(b, &mut out, true).unwrap();
        e.finish(out)
    }

    #[test]
    fn ndjson_adds_time_and_tag_unless_present() {
        let b = entries(&[
            serde_json::json!({"n": 1}),
            serde_json::json!({"n": 2, "time": "mine"}),
            serde_json::json!({}),
        ]);
        let out = body(&config("tag_key = \"tag\""), &b);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"n": 1, "time": 1700000000.5, "tag": "app.web"})
        );
        assert_eq!(lines[1]["time"], "mine");
        assert_eq!(lines[2]["tag"], "app.web");
    }

    #[test]
    fn json_array_msgpack_and_text() {
        let b = entries(&[
            serde_json::json!({"message": "a"}),
            serde_json::json!({"message": "b"}),
        ]);
        let out = body(
            &config("encoding = \"json\"\ntime_format = \"rfc3339\""),
            &b,
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[1]["message"], "b");
        assert_eq!(v[0]["time"], "2023-11-14T22:13:20.500000000Z");

        let out = body(&config("encoding = \"msgpack\"\ntime_key = \"\""), &b);
        assert_eq!(out[0], 0x92);
        assert_eq!(&out[1..11], b"\x81\xa7message\xa1");

        let out = body(&config("encoding = \"text\""), &b);
        assert_eq!(out, b"a\nb\n");
        let out = body(
            &config("encoding = \"text\"\ntemplate = \"{tag} {message}\""),
            &b,
        );
        assert_eq!(out, b"app.web a\napp.web b\n");
    }

    #[test]
    fn lines_become_message_records_and_bodies_compress() {
        let b = Batch::new(
            "t".into(),
            Records::Lines {
                data: Bytes::from_static(b"x\ny\n"),
                time: EventTime::new(1, 0),
            },
            2,
        );
        let c = config("time_format = \"epoch_millis\"\ncompression = \"gzip\"");
        let out = body(&c, &b);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&out[..]), &mut text)
            .unwrap();
        assert_eq!(
            text,
            "{\"message\":\"x\",\"time\":1000}\n{\"message\":\"y\",\"time\":1000}\n"
        );
        let out = body(&config("compression = \"zstd\""), &b);
        assert!(zstd::bulk::decompress(&out, 1 << 20)
            .unwrap()
            .starts_with(b"{\"message\":\"x\""));
    }
}
