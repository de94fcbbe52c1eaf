//! Multiline records (a stack trace's `\tat …` lines joined to the line
//! that starts the record), and lines as forward entries.

use std::time::Instant;

use bytes::Bytes;
use regex::bytes::Regex;

use super::file::Lines;
use crate::event::{EventTime, Records};
use crate::protocol::forward::write_message_entry;

/// A multiline record being assembled for one file.
#[derive(Default)]
pub struct Joiner {
    pub pending: Vec<u8>,
    /// Offset of the block where the pending record began (the checkpoint
    /// never passes it).
    pub pending_start: u64,
    /// End offset of the last block seen.
    pub last_end: u64,
    pub updated: Option<Instant>,
}

impl Joiner {
    /// Joins `lines` into records: returns the complete ones, their count,
    /// and the offset the checkpoint may advance to.
    pub fn join(
        &mut self,
        start: &Regex,
        key: &str,
        lines: &Lines,
        time: EventTime,
    ) -> (Records, usize, u64) {
        let block_start = lines.start;
        let mut out = Vec::new();
        let mut count = 0;
        for line in lines.data.split_inclusive(|b| *b == b'\n') {
            let line = &line[..line.len() - 1];
            if start.is_match(line) && !self.pending.is_empty() {
                write_message_entry_key(&mut out, time, key, &self.pending);
                count += 1;
                self.pending.clear();
            }
            if self.pending.is_empty() {
                self.pending_start = block_start;
            } else {
                self.pending.push(b'\n');
            }
            self.pending.extend_from_slice(line);
            self.updated = Some(Instant::now());
        }
        self.last_end = lines.end;
        let end = if self.pending.is_empty() {
            lines.end
        } else {
            self.pending_start
        };
        (Records::Entries(Bytes::from(out)), count, end)
    }

    /// The pending record as one entry, if there is one; the offset it ends at.
    pub fn take(&mut self, key: &str) -> Option<(Records, u64)> {
        if self.pending.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        write_message_entry_key(&mut out, EventTime::now(), key, &self.pending);
        self.pending.clear();
        Some((Records::Entries(Bytes::from(out)), self.last_end))
    }
}

pub fn write_message_entry_key(out: &mut Vec<u8>, time: EventTime, key: &str, message: &[u8]) {
    use crate::protocol::msgpack::write;
    if key == "message" {
        return write_message_entry(out, time.secs, time.nanos, message);
    }
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, 1);
    write::str(out, key.as_bytes());
    write::str(out, message);
}

/// Lines as `[time, {key: line}]` entries (for a `message_key` other than
/// `message`).
pub fn entries(data: &[u8], time: EventTime, key: &str) -> Records {
    let mut out = Vec::with_capacity(data.len() + data.len() / 4);
    for line in data.split_inclusive(|b| *b == b'\n') {
        write_message_entry_key(&mut out, time, key, &line[..line.len() - 1]);
    }
    Records::Entries(Bytes::from(out))
}
