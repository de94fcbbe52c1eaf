//! Keeping some records of a batch: the ones left are copied, once, into
//! a new payload of the same encoding; a batch that keeps every record is
//! returned untouched (never re-encoded).

use bytes::{Bytes, BytesMut};

use super::field::{read_map_fields, Field};
use crate::event::{next_record, Batch, EventTime, RecordRef, Records};
use crate::protocol::msgpack::{write, Reader};

/// The batch with only the records for which `keep` is true; `None` when
/// none is left. A payload that does not decode is kept whole (a filter
/// never loses a record it cannot read).
pub(super) fn retain(batch: Batch, mut keep: impl FnMut(RecordRef<'_>) -> bool) -> Option<Batch> {
    let (records, count) = match &batch.records {
        Records::Lines { data, time } => {
            let mut out: Option<(BytesMut, usize)> = None;
            let mut kept = 0;
            let mut offset = 0;
            for line in data.split_inclusive(|c| *c == b'\n') {
                let text = line.strip_suffix(b"\n").unwrap_or(line);
                if keep(RecordRef::Line(text)) {
                    kept += 1;
                    if let Some((buf, _)) = &mut out {
                        buf.extend_from_slice(line);
                    }
                } else if out.is_none() {
                    // the first record dropped: copy what was kept so far
                    out = Some((BytesMut::from(&data[..offset]), 0));
                }
                offset += line.len();
            }
            let Some((buf, _)) = out else {
                return Some(batch);
            };
            (
                Records::Lines {
                    data: buf.freeze(),
                    time: *time,
                },
                kept,
            )
        }
        Records::Entries(data) => {
            let mut r = Reader::new(data);
            let mut out: Option<BytesMut> = None;
            let mut kept = 0;
            while !r.is_empty() {
                let start = r.pos();
                let Ok(record) = next_record(&mut r) else {
                    return Some(batch);
                };
                if keep(RecordRef::Map(record)) {
                    kept += 1;
                    if let Some(buf) = &mut out {
                        buf.extend_from_slice(&data[start..r.pos()]);
                    }
                } else if out.is_none() {
                    out = Some(BytesMut::from(&data[..start]));
                }
            }
            let Some(buf) = out else {
                return Some(batch);
            };
            (Records::Entries(Bytes::from(buf)), kept)
        }
    };
    if count == 0 {
        return None;
    }
    Some(Batch {
        records,
        count,
        ..batch
    })
}

/// Gives records of `batch` other tags: `retag(record)` is the new tag of
/// a record, or `None` to leave it. The records given a tag go on in one
/// batch per tag, in their order; the others stay in `batch`, which with
/// `keep` also keeps the retagged ones (they are copied). Every batch put
/// in `out` shares `batch`'s acknowledgement and memory charge. Returns
/// how many records were given a new tag.
pub(super) fn retag(
    batch: Batch,
    keep: bool,
    mut retag: impl FnMut(RecordRef<'_>) -> Option<String>,
    out: &mut Vec<Batch>,
) -> usize {
    // (tag, payload, records) per new tag, in first-seen order
    let mut groups: Vec<(String, BytesMut, usize)> = Vec::new();
    let mut stay = BytesMut::new();
    let mut stayed = 0;
    let mut moved = 0;
    let mut place = |tag: Option<String>, bytes: &[u8], newline: bool| {
        let Some(tag) = tag else {
            stay.extend_from_slice(bytes);
            if newline {
                stay.extend_from_slice(b"\n");
            }
            stayed += 1;
            return;
        };
        moved += 1;
        let i = match groups.iter().position(|(t, _, _)| *t == tag) {
            Some(i) => i,
            None => {
                groups.push((tag, BytesMut::new(), 0));
                groups.len() - 1
            }
        };
        let (_, buf, n) = &mut groups[i];
        buf.extend_from_slice(bytes);
        if newline {
            buf.extend_from_slice(b"\n");
        }
        *n += 1;
    };
    let time = match &batch.records {
        Records::Lines { data, time } => {
            for line in data.split_inclusive(|c| *c == b'\n') {
                let text = line.strip_suffix(b"\n").unwrap_or(line);
                // every line of a new batch ends in a newline
                let newline = text.len() == line.len();
                place(retag(RecordRef::Line(text)), line, newline);
            }
            Some(*time)
        }
        Records::Entries(data) => {
            let mut r = Reader::new(data);
            while !r.is_empty() {
                let start = r.pos();
                let Ok(record) = next_record(&mut r) else {
                    // a payload that does not decode goes on as it came
                    out.push(batch);
                    return 0;
                };
                place(retag(RecordRef::Map(record)), &data[start..r.pos()], false);
            }
            None
        }
    };
    if moved == 0 {
        out.push(batch);
        return 0;
    }
    let records = |buf: BytesMut| match time {
        Some(time) => Records::Lines {
            data: buf.freeze(),
            time,
        },
        None => Records::Entries(buf.freeze()),
    };
    for (tag, buf, count) in groups {
        out.push(Batch {
            tag: tag.into(),
            records: records(buf),
            count,
            ..batch.clone()
        });
    }
    if keep {
        out.push(batch);
    } else if stayed > 0 {
        out.push(Batch {
            records: records(stay),
            count: stayed,
            ..batch
        });
    }
    moved
}

/// Writes records again: `change(fields, out)` writes a record's new map
/// into `out` and returns true, or returns false (writing nothing) to keep
/// the record as it is. A line is given as `{"message": LINE}`; a record
/// whose keys are not all strings is kept as it is. The records changed
/// are written as `[time, map]` entries with their time; the others keep
/// their bytes, and a batch none of whose records changed is returned as
/// it came (a line batch with a change becomes an entry batch).
pub(super) fn rewrite(
    batch: Batch,
    mut change: impl FnMut(Vec<Field<'_>>, &mut Vec<u8>) -> bool,
) -> Batch {
    rewrite_timed(batch, |_, fields, out| match change(fields, out) {
        true => Change::Changed,
        false => Change::Kept,
    })
}

/// What [`rewrite_timed`]'s `change` did with a record.
pub(super) enum Change {
    /// Nothing written: the record goes on as it was.
    Kept,
    /// Its new map was written.
    Changed,
    /// Its new map was written, and it takes this time.
    ChangedAt(EventTime),
}

/// Like [`rewrite`], where a change may also give the record a new time;
/// `change` is also given the record's place in the batch (from 0).
pub(super) fn rewrite_timed(
    batch: Batch,
    mut change: impl FnMut(usize, Vec<Field<'_>>, &mut Vec<u8>) -> Change,
) -> Batch {
    // puts `t` in place of the encoded time at `at..end` of `out`
    let mut time = Vec::with_capacity(16);
    let mut retime = |out: &mut Vec<u8>, at: usize, end: usize, t: EventTime| {
        time.clear();
        write::event_time(&mut time, t.secs, t.nanos);
        if time.len() == end - at {
            out[at..end].copy_from_slice(&time);
        } else {
            out.splice(at..end, time.iter().copied());
        }
    };
    let mut out = Vec::with_capacity(batch.byte_len() + 64);
    let mut any = false;
    match &batch.records {
        Records::Lines { data, time } => {
            let mut message = Vec::new();
            for (place, line) in data.split_inclusive(|c| *c == b'\n').enumerate() {
                let line = line.strip_suffix(b"\n").unwrap_or(line);
                message.clear();
                write::str(&mut message, line);
                let fields: Vec<Field<'_>> =
                    vec![(b"message".as_slice().into(), message.as_slice().into())];
                write::array_len(&mut out, 2);
                let at = out.len();
                write::event_time(&mut out, time.secs, time.nanos);
                let end = out.len();
                match change(place, fields, &mut out) {
                    Change::Kept => {
                        write::map_len(&mut out, 1);
                        write::str(&mut out, b"message");
                        out.extend_from_slice(&message);
                    }
                    Change::Changed => any = true,
                    Change::ChangedAt(t) => {
                        any = true;
                        retime(&mut out, at, end, t);
                    }
                }
            }
        }
        Records::Entries(data) => {
            let mut r = Reader::new(data);
            let mut place = 0;
            while !r.is_empty() {
                let entry = r.pos();
                // the record's fields are read as it is walked over, once
                let parts = r.read_array_len().ok().filter(|n| *n >= 2).and_then(|n| {
                    let time = r.pos();
                    EventTime::read(&mut r).ok()?;
                    let record = r.pos();
                    let fields = read_map_fields(&mut r);
                    if fields.is_none() {
                        r = Reader::at(data, record);
                        r.skip().ok()?;
                    }
                    for _ in 2..n {
                        r.skip().ok()?;
                    }
                    Some((time, record, fields))
                });
                // a payload that does not decode passes as it came
                let Some((time, record, fields)) = parts else {
                    return batch;
                };
                let mark = out.len();
                write::array_len(&mut out, 2);
                let at = out.len();
                out.extend_from_slice(&data[time..record]);
                let time_end = out.len();
                let changed = match fields {
                    Some(f) => change(place, f, &mut out),
                    None => Change::Kept,
                };
                place += 1;
                match changed {
                    Change::Kept => {
                        out.truncate(mark);
                        out.extend_from_slice(&data[entry..r.pos()]);
                    }
                    Change::Changed => any = true,
                    Change::ChangedAt(t) => {
                        any = true;
                        retime(&mut out, at, time_end, t);
                    }
                }
            }
        }
    }
    if !any {
        return batch;
    }
    // a record made larger holds more memory than its source charged:
    // the growth is charged too, for as long as the batch lives
    let memory = batch
        .memory
        .grown(out.len().saturating_sub(batch.byte_len()));
    Batch {
        records: Records::Entries(out.into()),
        memory,
        ..batch
    }
}
