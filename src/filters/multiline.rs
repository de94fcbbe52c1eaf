//! `type = "multiline"`: joins the lines of a stack trace (or a container
//! runtime's partial lines) that arrive as separate records into one
//! record, per stream (Fluent Bit's `multiline` filter, Fluentd's
//! `fluent-plugin-concat`). The rules are those of the tail source's
//! `multiline` option ([`crate::format::multiline`]); use that one where
//! the lines come from a tailed file: it joins them before the batch is
//! made, and its checkpoint knows where a held record begins.
//!
//! ```toml
//! [filters.traces]
//! type = "multiline"
//! match = "app.**"
//! parser = "java"
//! stream_key = ["pod", "container"]
//! ```
//!
//! - `config.rs`: the keys;
//! - `held.rs`: a stream's record being joined, and the acknowledgements
//!   of the batches its lines came in;
//! - this file: records in and out of batches, the flush.
//!
//! ## Records held across batches
//!
//! Filters are synchronous ([`Filter::apply`]) and shared by every source's
//! router, so the filter keeps its streams under a lock, keyed by the tag
//! and the `stream_key` fields. A record being joined may take lines from
//! several batches; each of those batches stays unacknowledged until the
//! joined record is: the filter keeps a clone of their
//! [`AckHandle`](crate::ack::AckHandle)s while it holds their lines, and
//! the batch that carries the joined record on gets a new handle that
//! passes its verdict (accepted, rejected, refused) to each of them. So a
//! source never moves past a line before the record it ended up in was
//! delivered, and a rejected joined record is resent by every source it
//! came from.
//!
//! The flush timeout must fire when no batch comes: the [`Filter`] trait
//! has [`Filter::deadline`] and [`Filter::flush`], and the pipeline runs
//! one small task that asks the holding filters for their deadline and
//! routes what they flush through the filters after them and on to the
//! sinks ([`crate::router::Router::flush_filters`]). We chose that over a
//! task per filter (it would need its own router and its own place in the
//! shutdown order) and over a tick in `apply` (which runs only when a
//! batch comes). At shutdown, once every source has handed over its last
//! batch, the pipeline flushes every held record the same way, before the
//! sink queues close. A filter that a reload replaces is retired
//! ([`Filter::retire`]: it holds nothing more) and what it holds goes on
//! through the new filters. A held record still held when the process
//! ends otherwise is rejected: its sources send it again, save the lines
//! a waiting client was answered for once held (`ack = "held"`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::field::{map_fields, write_map, Field, FieldPath, FieldValue};
use crate::event::{Batch, EventTime, Records};
use crate::format::multiline::{rules::Rules, Counters, Ending, Joined, Joiner, Limits};
use crate::memory::MemoryCharge;
use crate::metrics::{Counter, Registry};
use crate::protocol::msgpack::{write, Reader, Value};
use crate::router::{Filter, TagPattern};

mod config;
mod held;
mod streams;

pub use config::{HeldAck, MultilineFilterConfig};
use held::{passing_on, HeldAcks, Origin, Stream};
use streams::Streams;

/// A running multiline filter.
pub struct MultilineFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    /// The rule set, shared by every stream's joiner.
    rules: Arc<Rules>,
    /// Its bounds.
    limits: Limits,
    /// The field holding the line.
    key: Vec<u8>,
    /// Fields that tell streams apart, beside the tag.
    stream_key: Vec<FieldPath>,
    /// Most streams held at once.
    max_streams: usize,
    /// Whether a waiting client is answered for its lines once they are
    /// held (`ack = "held"`), not once their joined record is delivered.
    answer_held: bool,
    /// Streams with a record being joined, by tag and `stream_key` values.
    streams: Mutex<Streams>,
    /// A reload replaced the filter ([`Filter::retire`]): it holds no more
    /// lines. Read and set under the `streams` lock, so a batch is either
    /// held before the last flush or passed on.
    retired: AtomicBool,
    /// Records that reached the filter.
    records: Counter,
    /// Joined records sent, by how they ended.
    joined: Counters,
}

impl MultilineFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &MultilineFilterConfig,
        metrics: &Registry,
    ) -> Result<MultilineFilter, String> {
        config.validate()?;
        let (rules, limits) = config.rules().compile()?;
        let stream_key = config
            .stream_key
            .iter()
            .map(|k| FieldPath::parse(k))
            .collect::<Result<_, _>>()?;
        Ok(MultilineFilter {
            name: name.to_string(),
            pattern,
            rules,
            limits,
            key: config.key.as_bytes().to_vec(),
            stream_key,
            max_streams: config.max_streams,
            answer_held: config.ack == HeldAck::Held,
            streams: Mutex::new(Streams::default()),
            retired: AtomicBool::new(false),
            records: super::records_counter(metrics, name, "multiline"),
            joined: Counters::new(metrics, name),
        })
    }

    fn streams(&self) -> std::sync::MutexGuard<'_, Streams> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stream a record belongs to: its tag, then each `stream_key`
    /// field's encoded value (nil where it is missing).
    fn stream_id(&self, tag: &str, record: crate::event::RecordRef<'_>) -> Vec<u8> {
        let mut id = Vec::with_capacity(tag.len() + 16);
        write::str(&mut id, tag.as_bytes());
        for k in &self.stream_key {
            match k.lookup(record) {
                Some(FieldValue::Encoded(v)) => id.extend_from_slice(v),
                Some(FieldValue::Text(t)) => write::str(&mut id, t),
                None => id.push(0xc0),
            }
        }
        id
    }

    /// Writes the joined record `j` of `stream`: its first line's record,
    /// with `key` holding the joined text.
    fn write_joined(&self, stream: &Stream, j: &Joined, out: &mut Vec<u8>) {
        self.joined.count(j);
        let (time, map) = match stream.origin(j.first) {
            Some(o) => (o.time, o.map.as_deref()),
            None => (EventTime::now(), None),
        };
        write::array_len(out, 2);
        write::event_time(out, time.secs, time.nanos);
        let mut text = Vec::with_capacity(j.message.len() + 5);
        write::str(&mut text, &j.message);
        let key: &[u8] = &self.key;
        let mut fields: Vec<Field<'_>> = map.and_then(map_fields).unwrap_or_default();
        match fields.iter_mut().find(|(k, _)| k.as_ref() == key) {
            Some(f) => f.1 = text.into(),
            None => fields.push((key.into(), text.into())),
        }
        write_map(out, &fields);
    }

    /// The line of `record` (its `key` field as text), if it has one.
    fn line_of<'a>(
        &self,
        record: crate::event::RecordRef<'a>,
    ) -> Option<std::borrow::Cow<'a, [u8]>> {
        match record {
            crate::event::RecordRef::Line(l) => (self.key == b"message").then_some(l.into()),
            crate::event::RecordRef::Map(m) => {
                let raw = crate::event::map_field_raw(m, &self.key)?;
                match Reader::new(raw).read().ok()? {
                    Value::Str(s) | Value::Bin(s) => Some(s.into()),
                    _ => None,
                }
            }
        }
    }
}

/// A record of a batch being read: its time, its whole `[time, map]`
/// entry (empty for a line), and the record.
struct Input<'a> {
    /// The record's time.
    time: EventTime,
    /// Its encoded `[time, map]` entry, to pass it on as it came.
    entry: &'a [u8],
    /// Its fields.
    record: crate::event::RecordRef<'a>,
}

/// Calls `f` on each record of `records`; false if the payload does not
/// decode (nothing was called then).
fn each_record(records: &Records, mut f: impl FnMut(Input<'_>)) -> bool {
    match records {
        Records::Lines { data, time } => {
            for line in data.split_inclusive(|c| *c == b'\n') {
                let text = line.strip_suffix(b"\n").unwrap_or(line);
                f(Input {
                    time: *time,
                    entry: &[],
                    record: crate::event::RecordRef::Line(text),
                });
            }
            true
        }
        Records::Entries(data) => {
            // decode the whole payload first: a bad one passes untouched
            let mut parts = Vec::new();
            let mut r = Reader::new(data);
            while !r.is_empty() {
                let start = r.pos();
                let Ok(n) = r.read_array_len() else {
                    return false;
                };
                let Ok(time) = EventTime::read(&mut r) else {
                    return false;
                };
                let map = r.pos();
                if r.skip().is_err() || (2..n).any(|_| r.skip().is_err()) {
                    return false;
                }
                parts.push((start, time, map, r.pos()));
            }
            for (start, time, map, end) in parts {
                f(Input {
                    time,
                    entry: &data[start..end],
                    record: crate::event::RecordRef::Map(&data[map..end]),
                });
            }
            true
        }
    }
}

impl Filter for MultilineFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        self.records.add(batch.count as u64);
        let now = Instant::now();
        let mut payload = Vec::with_capacity(batch.byte_len() + 64);
        let mut count = 0;
        let mut joined = Vec::new();
        // streams given lines of this batch, with the last line's position
        let mut touched: Vec<(Vec<u8>, u64)> = Vec::new();
        // this batch's handle, and those of batches whose lines go on in it
        let mut acks = vec![batch.ack.clone()];
        // a client waits for this batch, and is answered for the lines the
        // filter holds once they are held (`ack = "held"`)
        let answered_when_held = self.answer_held && batch.ack.is_waited_on();
        let mut streams = self.streams();
        if self.retired.load(Ordering::Relaxed) {
            drop(streams);
            out.push(batch);
            return;
        }
        let decoded = each_record(&batch.records, |input| {
            let Some(line) = self.line_of(input.record) else {
                // not a line to join: on as it came
                match input.record {
                    crate::event::RecordRef::Line(l) => {
                        crate::protocol::forward::write_message_entry(
                            &mut payload,
                            input.time.secs,
                            input.time.nanos,
                            l,
                        )
                    }
                    crate::event::RecordRef::Map(_) => payload.extend_from_slice(input.entry),
                }
                count += 1;
                return;
            };
            let id = self.stream_id(&batch.tag, input.record);
            if streams.len() >= self.max_streams && !streams.contains(&id) {
                // a new stream past the bound: the one that waited longest
                // for a line goes on as it is, never dropped
                // goes on as it is, never dropped: under its own tag, in
                // a batch of its own, settling the batches its lines came in
                if let Some((old_id, mut old)) = streams.remove_oldest() {
                    if touched.iter().any(|(t, _)| *t == old_id) {
                        // lines of this batch are in it
                        old.acks.0.push_back((u64::MAX, batch.ack.clone()));
                    }
                    old.joiner.flush_all_for(Ending::MaxStreams, &mut joined);
                    out.extend(self.send_on(&mut old, &mut joined));
                }
            }
            let stream = streams.touch(&id, || Stream {
                tag: batch.tag.clone(),
                joiner: Joiner::new(Arc::clone(&self.rules), self.limits),
                next: 0,
                origins: VecDeque::new(),
                acks: HeldAcks::default(),
                memory: MemoryCharge::none(),
            });
            let pos = stream.next;
            stream.next += 1;
            let map = match input.record {
                crate::event::RecordRef::Map(m) => Some(m.to_vec()),
                crate::event::RecordRef::Line(_) => None,
            };
            stream.origins.push_back((
                pos,
                Origin {
                    time: input.time,
                    map,
                },
            ));
            stream.joiner.push(&line, pos, now, &mut joined);
            for j in joined.drain(..) {
                self.write_joined(stream, &j, &mut payload);
                count += 1;
            }
            stream.prune();
            match touched.iter_mut().find(|(t, _)| *t == id) {
                Some(t) => t.1 = pos,
                None => touched.push((id, pos)),
            }
        });
        if !decoded {
            // a payload that does not decode passes as it came
            drop(streams);
            out.push(batch);
            return;
        }
        for (id, last) in touched {
            let Some(stream) = streams.get_mut(&id) else {
                continue;
            };
            let held_from = stream.joiner.held_from();
            if held_from.is_some_and(|h| h <= last) && !answered_when_held {
                // lines of this batch wait in a record being joined
                stream.acks.0.push_back((last, batch.ack.clone()));
            }
            stream.acks.release(held_from, &mut acks);
            if stream.joiner.is_empty() && stream.acks.0.is_empty() {
                streams.remove(&id);
            } else {
                stream.recharge(&batch.memory);
            }
        }
        drop(streams);
        if count == 0 {
            return; // every line is held; their batch waits with them
        }
        // joined records of lines from earlier batches make it larger
        let memory = batch
            .memory
            .grown(payload.len().saturating_sub(batch.byte_len()));
        out.push(Batch {
            records: Records::Entries(payload.into()),
            count,
            ack: passing_on(acks),
            memory,
            ..batch
        });
    }

    fn holds(&self) -> bool {
        true
    }

    fn deadline(&self) -> Option<Instant> {
        self.streams()
            .values()
            .filter_map(|s| s.joiner.deadline())
            .min()
    }

    fn retire(&self) {
        let _streams = self.streams();
        self.retired.store(true, Ordering::Relaxed);
    }

    fn flush(&self, now: Instant, all: bool, out: &mut Vec<Batch>) {
        let mut streams = self.streams();
        let mut joined = Vec::new();
        let mut emptied = Vec::new();
        streams.each_oldest_first(|id, stream| {
            if all {
                stream.joiner.flush_all(&mut joined);
            } else {
                stream.joiner.flush_idle(now, &mut joined);
            }
            out.extend(self.send_on(stream, &mut joined));
            if stream.joiner.is_empty() && stream.acks.0.is_empty() {
                emptied.push(id.to_vec());
            }
        });
        for id in emptied {
            streams.remove(&id);
        }
    }
}

impl MultilineFilter {
    /// The batch that carries `joined` (records `stream` gave back) on,
    /// under the stream's tag, with the acknowledgements of the batches
    /// whose lines are all in them and the memory charge of what the
    /// stream no longer holds; `None` if there is nothing to send.
    fn send_on(&self, stream: &mut Stream, joined: &mut Vec<Joined>) -> Option<Batch> {
        if joined.is_empty() {
            return None;
        }
        let mut payload = Vec::new();
        let count = joined.len();
        for j in joined.drain(..) {
            self.write_joined(stream, &j, &mut payload);
        }
        stream.prune();
        let mut acks = Vec::new();
        stream.acks.release(stream.joiner.held_from(), &mut acks);
        let still = stream.held_bytes();
        let sent = stream
            .memory
            .split(stream.memory.bytes().saturating_sub(still));
        Some(
            Batch::new(stream.tag.clone(), Records::Entries(payload.into()), count)
                .with_ack(passing_on(acks))
                .with_memory(sent),
        )
    }
}

#[cfg(test)]
mod tests;
