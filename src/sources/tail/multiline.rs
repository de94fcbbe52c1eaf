//! Multiline records of one file (see [`crate::format::multiline`]), and
//! lines as forward entries.
//!
//! Each line goes into the file's [`Joiner`] with its offset in the file.
//! A batch holds the records its lines completed, and ends (for the
//! checkpoint) at the first line of the oldest record still held: after a
//! restart, reading starts again at that line, so a held record is never
//! lost nor cut in two, and nothing behind it is read twice but the
//! records the unacknowledged batches held.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::file::Lines;
use crate::event::{EventTime, Records};
use crate::format::multiline::{rules::Rules, Counters, Joined, Joiner, Limits};
use crate::protocol::forward::write_message_entry;

/// The rules of a tail source's `multiline` option, compiled once.
pub struct Multiline {
    /// The rule set every file's joiner uses.
    pub rules: Arc<Rules>,
    /// Its bounds.
    pub limits: Limits,
    /// Records sent, by how they ended.
    pub counters: Counters,
}

/// A file's joiner, and how far its lines have been given to it.
pub struct FileJoiner {
    /// The rules it joins by (shared by the files that use them).
    multiline: Arc<Multiline>,
    joiner: Joiner,
    /// End offset of the last lines given to the joiner.
    last_end: u64,
}

/// Records ready to go as one batch, and the offset the checkpoint may
/// advance to once they are acknowledged: the first line of the oldest
/// record still held, or the end of the lines read.
pub struct Ready {
    pub joined: Vec<Joined>,
    pub end: u64,
}

impl FileJoiner {
    pub fn new(multiline: Arc<Multiline>) -> FileJoiner {
        FileJoiner {
            joiner: Joiner::new(Arc::clone(&multiline.rules), multiline.limits),
            multiline,
            last_end: 0,
        }
    }

    /// Joins `lines` into records.
    pub fn join(&mut self, lines: &Lines, now: Instant) -> Ready {
        let mut joined = Vec::new();
        let mut pos = lines.start;
        for line in lines.data.split_inclusive(|b| *b == b'\n') {
            // when the lines are not the file's bytes as they are, only the
            // block's start is known for sure: a record held from this
            // block is read again from there (at least once)
            let at = if lines.verbatim { pos } else { lines.start };
            self.joiner
                .push(&line[..line.len() - 1], at, now, &mut joined);
            pos += line.len() as u64;
        }
        self.last_end = lines.end;
        self.ready(joined)
    }

    /// The records no line was added to for the flush timeout, if any.
    pub fn take_idle(&mut self, now: Instant) -> Option<Ready> {
        let mut joined = Vec::new();
        self.joiner.flush_idle(now, &mut joined);
        (!joined.is_empty()).then(|| self.ready(joined))
    }

    /// Every held record (the file ends here for us), if any.
    pub fn take_all(&mut self) -> Option<Ready> {
        let mut joined = Vec::new();
        self.joiner.flush_all(&mut joined);
        (!joined.is_empty()).then(|| self.ready(joined))
    }

    /// When a held record is due (the flush timeout).
    pub fn deadline(&self) -> Option<Instant> {
        self.joiner.deadline()
    }

    pub fn is_empty(&self) -> bool {
        self.joiner.is_empty()
    }

    fn ready(&self, joined: Vec<Joined>) -> Ready {
        for j in &joined {
            self.multiline.counters.count(j);
        }
        Ready {
            joined,
            end: self.joiner.held_from().unwrap_or(self.last_end),
        }
    }
}

/// Joined records as `[time, {key: record}]` entries (with `path`, its
/// key and the file's path, as a second field).
pub fn joined_entries(joined: &[Joined], key: &str, path: Option<(&str, &[u8])>) -> Records {
    let time = EventTime::now();
    let mut out = Vec::with_capacity(joined.iter().map(|j| j.message.len() + 24).sum());
    for j in joined {
        write_message_entry_key(&mut out, time, key, &j.message, path);
    }
    Records::Entries(Bytes::from(out))
}

/// One `[time, {key: message}]` entry, with `path` (its key and the
/// file's path) as a second field.
pub fn write_message_entry_key(
    out: &mut Vec<u8>,
    time: EventTime,
    key: &str,
    message: &[u8],
    path: Option<(&str, &[u8])>,
) {
    use crate::protocol::msgpack::write;
    if key == "message" && path.is_none() {
        return write_message_entry(out, time.secs, time.nanos, message);
    }
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, 1 + usize::from(path.is_some()));
    write::str(out, key.as_bytes());
    write::str(out, message);
    if let Some((path_key, path)) = path {
        write::str(out, path_key.as_bytes());
        write::str(out, path);
    }
}

/// Lines as `[time, {key: line}]` entries (for a `message_key` other than
/// `message`, or with `path`).
pub fn entries(data: &[u8], time: EventTime, key: &str, path: Option<(&str, &[u8])>) -> Records {
    let mut out = Vec::with_capacity(data.len() + data.len() / 4);
    for line in data.split_inclusive(|b| *b == b'\n') {
        write_message_entry_key(&mut out, time, key, &line[..line.len() - 1], path);
    }
    Records::Entries(Bytes::from(out))
}
