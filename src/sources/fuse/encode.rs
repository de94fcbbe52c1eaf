//! Written bytes → forward entries `[time, {"message": …, "file": …}]`.
//!
//! Lines are cut here rather than sent as `Records::Lines`, because every
//! record carries the path it was written to, and that is a field.

use memchr::memchr;

use crate::event::EventTime;
use crate::protocol::msgpack::write;

/// Entries built from one write, ready to become a batch.
#[derive(Debug, Default)]
pub struct Entries {
    /// Concatenated msgpack `[time, record]` entries.
    pub bytes: Vec<u8>,
    /// Number of entries in `bytes`.
    pub records: usize,
    /// Bytes of message (what the writer wrote, without newlines).
    pub message_bytes: usize,
    /// The writer waits for these entries' acknowledgement right after
    /// they are shipped (its close, with `ack_on_close`): their batch is
    /// marked waited on, so sinks send it at once.
    pub waited_on: bool,
}

/// Appends entries that all share one time and one file path.
pub struct EntryWriter<'a> {
    out: &'a mut Entries,
    /// `[time, {` … `"message"` key, shared by every entry.
    head: Vec<u8>,
    /// `"file": path`, shared by every entry.
    tail: Vec<u8>,
    binary: bool,
}

impl<'a> EntryWriter<'a> {
    pub fn new(out: &'a mut Entries, time: EventTime, file: &str, binary: bool) -> Self {
        let mut head = Vec::with_capacity(24);
        write::array_len(&mut head, 2);
        write::event_time(&mut head, time.secs, time.nanos);
        write::map_len(&mut head, 2);
        write::str(&mut head, b"message");
        let mut tail = Vec::with_capacity(file.len() + 8);
        write::str(&mut tail, b"file");
        write::str(&mut tail, file.as_bytes());
        EntryWriter {
            out,
            head,
            tail,
            binary,
        }
    }

    /// One record whose message is `message`.
    pub fn push(&mut self, message: &[u8]) {
        let b = &mut self.out.bytes;
        b.extend_from_slice(&self.head);
        if self.binary {
            write::bin_header(b, message.len());
            b.extend_from_slice(message);
        } else {
            write::str(b, message);
        }
        b.extend_from_slice(&self.tail);
        self.out.records += 1;
        self.out.message_bytes += message.len();
    }
}

/// Cuts `data`, written after the unfinished line `partial`, into complete
/// lines (each pushed as a record, split into pieces of at most `max_line`
/// bytes) and returns the new unfinished line, in a buffer of exactly its
/// size (its capacity is what the memory budget is charged). An unfinished
/// line longer than `max_line` is shipped in whole pieces at once, so what
/// a writer holds back stays bounded.
pub fn cut_lines(partial: &[u8], data: &[u8], max_line: usize, w: &mut EntryWriter<'_>) -> Vec<u8> {
    let mut partial = partial;
    let mut rest = data;
    while let Some(i) = memchr(b'\n', rest) {
        if partial.is_empty() {
            push_split(&rest[..i], max_line, w);
        } else {
            let mut line = Vec::with_capacity(partial.len() + i);
            line.extend_from_slice(partial);
            line.extend_from_slice(&rest[..i]);
            push_split(&line, max_line, w);
            partial = &[];
        }
        rest = &rest[i + 1..];
    }
    let total = partial.len() + rest.len();
    let mut carry = Vec::with_capacity(total);
    carry.extend_from_slice(partial);
    carry.extend_from_slice(rest);
    if total > max_line {
        let keep = match total % max_line {
            0 => max_line,
            k => k,
        };
        let whole = total - keep;
        push_split(&carry[..whole], max_line, w);
        carry = carry[whole..].to_vec();
    }
    carry
}

fn push_split(line: &[u8], max_line: usize, w: &mut EntryWriter<'_>) {
    if line.len() <= max_line {
        w.push(line);
    } else {
        for piece in line.chunks(max_line) {
            w.push(piece);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Batch, Records};
    use crate::protocol::msgpack::Value;

    fn records(e: &Entries) -> Vec<(String, String)> {
        let batch = Batch::new(
            "t".into(),
            Records::Entries(e.bytes.clone().into()),
            e.records,
        );
        let mut out = Vec::new();
        batch
            .for_each_record(|_, r| {
                let s = |k: &[u8]| match r.field(k) {
                    Some(Value::Str(s) | Value::Bin(s)) => String::from_utf8_lossy(s).into_owned(),
                    other => panic!("{other:?}"),
                };
                out.push((s(b"file"), s(b"message")));
            })
            .unwrap();
        assert_eq!(out.len(), e.records);
        out
    }

    fn cut(partial: &str, data: &str, max: usize) -> (Vec<String>, String) {
        let mut e = Entries::default();
        let mut w = EntryWriter::new(&mut e, EventTime::new(1, 2), "a/b.log", false);
        let rest = cut_lines(partial.as_bytes(), data.as_bytes(), max, &mut w);
        assert_eq!(rest.capacity(), rest.len(), "charged as it is");
        let msgs = records(&e).into_iter().map(|(f, m)| {
            assert_eq!(f, "a/b.log");
            m
        });
        (msgs.collect(), String::from_utf8(rest).unwrap())
    }

    #[test]
    fn complete_lines_are_records_and_the_rest_waits() {
        assert_eq!(
            cut("", "a\nbb\nc", 100),
            (vec!["a".into(), "bb".into()], "c".into())
        );
        assert_eq!(cut("xy", "z\n", 100), (vec!["xyz".into()], "".into()));
        assert_eq!(cut("xy", "z", 100), (vec![], "xyz".into()));
        assert_eq!(
            cut("", "\n\n", 100),
            (vec!["".into(), "".into()], "".into())
        );
    }

    #[test]
    fn long_lines_are_split_and_a_long_rest_is_bounded() {
        assert_eq!(
            cut("", "abcdefg\n", 3),
            (vec!["abc".into(), "def".into(), "g".into()], "".into())
        );
        // an unfinished line never holds more than max_line bytes back
        let (sent, rest) = cut("ab", "cdefgh", 3);
        assert_eq!(sent, vec!["abc".to_string(), "def".into()]);
        assert_eq!(rest, "gh");
        let (sent, rest) = cut("", "abcdef", 3);
        assert_eq!(sent, vec!["abc".to_string()]);
        assert_eq!(rest, "def", "a full piece waits: its newline may come next");
    }

    #[test]
    fn binary_chunks_are_bin_records() {
        let mut e = Entries::default();
        let mut w = EntryWriter::new(&mut e, EventTime::new(1, 2), "x", true);
        w.push(b"\x00\xffraw\n");
        assert_eq!(e.records, 1);
        assert_eq!(e.message_bytes, 6);
        let batch = Batch::new("t".into(), Records::Entries(e.bytes.into()), 1);
        batch
            .for_each_record(|_, r| {
                assert_eq!(r.field(b"message"), Some(Value::Bin(b"\x00\xffraw\n")));
            })
            .unwrap();
    }
}
