//! Keeping some records of a batch: the ones left are copied, once, into
//! a new payload of the same encoding; a batch that keeps every record is
//! returned untouched (never re-encoded).

use bytes::{Bytes, BytesMut};

use crate::event::{next_record, Batch, RecordRef, Records};
use crate::protocol::msgpack::Reader;

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
