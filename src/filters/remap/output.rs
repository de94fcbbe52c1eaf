//! The records a remap filter reads from a batch, and the batches it puts
//! out: one payload per tag, written record by record as the program
//! leaves them, so a program that splits one record into millions never
//! holds them twice (once as VRL values, once encoded).

use std::collections::HashMap;

use vrl::value::Value;

use super::convert;
use crate::event::{EventTime, Records, Tag};
use crate::protocol::msgpack::{write, Reader};

/// One record of a batch, as read before the program runs.
pub(super) struct Input<'a> {
    pub time: EventTime,
    /// Its encoded map, or its line.
    pub body: Body<'a>,
    /// Its whole `[time, map, …]` entry (empty for a line).
    pub entry: &'a [u8],
}

pub(super) enum Body<'a> {
    Map(&'a [u8]),
    Line(&'a [u8]),
}

/// The records of `batch`; `None` if its payload does not decode.
pub(super) fn inputs(records: &Records) -> Option<Vec<Input<'_>>> {
    match records {
        Records::Lines { data, time } => Some(
            data.split_inclusive(|c| *c == b'\n')
                .map(|line| Input {
                    time: *time,
                    body: Body::Line(line.strip_suffix(b"\n").unwrap_or(line)),
                    entry: &[],
                })
                .collect(),
        ),
        Records::Entries(data) => {
            let mut r = Reader::new(data);
            let mut out = Vec::new();
            while !r.is_empty() {
                let start = r.pos();
                let n = r.read_array_len().ok().filter(|n| *n >= 2)?;
                let time = EventTime::read(&mut r).ok()?;
                let map = r.pos();
                r.skip().ok()?;
                let end = r.pos();
                for _ in 2..n {
                    r.skip().ok()?;
                }
                out.push(Input {
                    time,
                    body: Body::Map(&data[map..end]),
                    entry: &data[start..r.pos()],
                });
            }
            Some(out)
        }
    }
}

/// Most bytes of records in one batch put out: a program that makes
/// millions of records of one puts them out in batches of about this
/// size, each allocated once, rather than one payload doubled as it grows
/// (the sinks' own `batch_bytes` default is the same).
const BATCH_BYTES: usize = 1024 * 1024;

/// A payload being put out and the number of records in it.
type Payload = (Vec<u8>, usize);

/// The payloads of the batches a filter puts out, per tag, in the order
/// the tags were first met (the batch's own tag first).
pub(super) struct Groups {
    /// Per tag: the payloads filled (at most `BATCH_BYTES` each, with
    /// their record counts), the last one being written to.
    groups: Vec<(Tag, Vec<Payload>)>,
    /// Where each tag's group is in `groups`: a program that gives every
    /// record its own tag costs one lookup per record, not a scan.
    index: HashMap<Tag, usize>,
    /// Bytes written so far, over every tag.
    bytes: usize,
}

impl Groups {
    /// Groups whose first is `tag`'s.
    pub fn new(tag: &Tag) -> Groups {
        Groups {
            groups: vec![(tag.clone(), Vec::new())],
            index: HashMap::from([(tag.clone(), 0)]),
            bytes: 0,
        }
    }

    /// The payload of `tag` to write the next record to, and its count.
    fn add(&mut self, tag: &Tag) -> (&mut Vec<u8>, &mut usize) {
        let i = match self.index.get(tag) {
            Some(i) => *i,
            None => {
                self.groups.push((tag.clone(), Vec::new()));
                self.index.insert(tag.clone(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        let payloads = &mut self.groups[i].1;
        match payloads.last_mut() {
            None => payloads.push((Vec::new(), 0)),
            Some((full, _)) if full.len() >= BATCH_BYTES => {
                // a large fan-out: the full payload gives back what its
                // growth left over, and the next is allocated once
                full.shrink_to_fit();
                payloads.push((Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 16), 0));
            }
            Some(_) => {}
        }
        let (buf, n) = payloads.last_mut().expect("pushed if there was none");
        *n += 1;
        (buf, n)
    }

    /// Appends the record as it came: its entry, or its line as an entry.
    pub fn original(&mut self, tag: &Tag, input: &Input<'_>) {
        let (buf, _) = self.add(tag);
        let before = buf.len();
        match input.body {
            Body::Map(_) => buf.extend_from_slice(input.entry),
            Body::Line(line) => {
                write::array_len(buf, 2);
                write::event_time(buf, input.time.secs, input.time.nanos);
                write::map_len(buf, 1);
                write::str(buf, b"message");
                write::str(buf, line);
            }
        }
        self.bytes += buf.len() - before;
    }

    /// Appends one record a program left: an object as its fields, any
    /// other value as `{"message": VALUE}` (as in Vector).
    pub fn emitted(&mut self, tag: &Tag, time: EventTime, event: Value) {
        let (buf, _) = self.add(tag);
        let before = buf.len();
        write::array_len(buf, 2);
        write::event_time(buf, time.secs, time.nanos);
        match event {
            v @ Value::Object(_) => convert::write_value(buf, &v),
            other => convert::write_value(buf, &convert::message(other)),
        }
        self.bytes += buf.len() - before;
    }

    /// Bytes written so far, over every tag.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// (tag, payload, records) of every payload that got a record, a
    /// tag's in the order they were written.
    pub fn into_batches(self) -> impl Iterator<Item = (Tag, Vec<u8>, usize)> {
        self.groups.into_iter().flat_map(|(tag, payloads)| {
            payloads
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .map(move |(buf, n)| (tag.clone(), buf, n))
        })
    }
}

/// About how many bytes of memory `value` holds: what a program's result
/// costs while it is being written out. Strings count their length (a
/// string sliced from the record costs less); objects count a tree
/// node's share per field.
pub(super) fn held_bytes(value: &Value) -> usize {
    const VALUE: usize = std::mem::size_of::<Value>();
    // a key, its value and its share of a B-tree node
    const FIELD: usize = VALUE + 24 + 16;
    // what the allocator adds to a string's bytes
    const ALLOCATION: usize = 16;
    match value {
        Value::Bytes(b) => VALUE + b.len() + ALLOCATION,
        Value::Array(items) => {
            VALUE
                + items.capacity() * VALUE
                + items.iter().map(|v| held_bytes(v) - VALUE).sum::<usize>()
        }
        Value::Object(map) => {
            VALUE
                + map
                    .iter()
                    .map(|(k, v)| FIELD + k.len() + held_bytes(v) - VALUE)
                    .sum::<usize>()
        }
        _ => VALUE,
    }
}
