//! Byte layout of disk buffer segments (also in docs/disk-buffer.md).
//!
//! All integers are little-endian.
//!
//! Segment file `NNNNNNNNNNNNNNNNNNNN.seg` (20-digit decimal id, ids grow):
//!
//! | offset | size | field                                   |
//! |--------|------|-----------------------------------------|
//! | 0      | 4    | magic `LFDB`                            |
//! | 4      | 1    | format version, 1                       |
//! | 5      | 3    | reserved, zero                          |
//! | 8      | 8    | segment id (u64), same as the file name |
//! | 16     | ...  | frames, back to back                    |
//!
//! Frame (one batch):
//!
//! | offset | size | field                                         |
//! |--------|------|-----------------------------------------------|
//! | 0      | 4    | magic `LFRM` (lets a reader resync past damage) |
//! | 4      | 4    | body length L (u32), at most [`MAX_BODY`]      |
//! | 8      | 4    | CRC32C (Castagnoli) of the L body bytes        |
//! | 12     | L    | body                                          |
//!
//! Body:
//!
//! | offset | size | field                                              |
//! |--------|------|----------------------------------------------------|
//! | 0      | 1    | kind: 1 = msgpack entries, 2 = lines               |
//! | 1      | 4    | record count (u32)                                 |
//! | 5      | 4    | written at, seconds since the epoch (u32)          |
//! | 9      | 4    | written at, nanoseconds (u32)                      |
//! | 13     | 4    | lines: their shared time, seconds (0 for entries)  |
//! | 17     | 4    | lines: their shared time, nanoseconds              |
//! | 21     | 2    | tag length T (u16)                                 |
//! | 23     | T    | tag, UTF-8                                         |
//! | 23+T   | rest | records exactly as they arrived: concatenated      |
//! |        |      | msgpack `[time, record]` entries, or lines each    |
//! |        |      | ending in `\n`                                     |

use bytes::Bytes;

use crate::event::{Batch, EventTime, Records};

/// Start of every segment file.
pub const SEGMENT_MAGIC: &[u8; 4] = b"LFDB";
/// The only segment format version so far.
pub const VERSION: u8 = 1;
/// Bytes before the first frame of a segment.
pub const SEGMENT_HEADER: usize = 16;
/// Start of every frame.
pub const FRAME_MAGIC: &[u8; 4] = b"LFRM";
/// Bytes before a frame's body.
pub const FRAME_HEADER: usize = 12;
/// Body bytes before the tag.
const BODY_FIXED: usize = 23;
/// Largest body a frame may have; a longer length field is damage.
pub const MAX_BODY: usize = 1 << 30;

const KIND_ENTRIES: u8 = 1;
const KIND_LINES: u8 = 2;

/// Why bytes are not a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Fewer bytes than the frame needs: a torn tail, or a frame still
    /// being written.
    #[error("frame is incomplete ({have} of {need} bytes)")]
    Incomplete { have: usize, need: usize },
    /// The bytes are damaged: bad magic, impossible length, CRC mismatch
    /// or a body that does not parse.
    #[error("frame is damaged: {0}")]
    Damaged(&'static str),
}

/// A frame read back from a segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub tag: String,
    pub records: FrameRecords,
    pub count: u32,
    /// When the frame was written.
    pub written: EventTime,
}

/// The records of a frame, as they arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameRecords {
    Entries(Bytes),
    Lines { data: Bytes, time: EventTime },
}

impl Frame {
    /// The batch this frame holds (without an acknowledgement). Nobody
    /// waits for it (not `waited_on`): its source was acknowledged when
    /// the frame was written, so a sink may linger over it.
    pub fn into_batch(self) -> Batch {
        let records = match self.records {
            FrameRecords::Entries(b) => Records::Entries(b),
            FrameRecords::Lines { data, time } => Records::Lines { data, time },
        };
        Batch::new(self.tag.into(), records, self.count as usize)
    }

    /// Records payload length.
    pub fn payload_len(&self) -> usize {
        match &self.records {
            FrameRecords::Entries(b) => b.len(),
            FrameRecords::Lines { data, .. } => data.len(),
        }
    }
}

/// The segment header for segment `id`.
pub fn segment_header(id: u64) -> [u8; SEGMENT_HEADER] {
    let mut h = [0u8; SEGMENT_HEADER];
    h[..4].copy_from_slice(SEGMENT_MAGIC);
    h[4] = VERSION;
    h[8..].copy_from_slice(&id.to_le_bytes());
    h
}

/// Checks a segment header; returns the segment id it names.
pub fn check_segment_header(h: &[u8]) -> Result<u64, FrameError> {
    if h.len() < SEGMENT_HEADER {
        return Err(FrameError::Incomplete {
            have: h.len(),
            need: SEGMENT_HEADER,
        });
    }
    if &h[..4] != SEGMENT_MAGIC {
        return Err(FrameError::Damaged("segment magic is not LFDB"));
    }
    if h[4] != VERSION {
        return Err(FrameError::Damaged("unknown segment format version"));
    }
    Ok(u64::from_le_bytes(h[8..16].try_into().expect("8 bytes")))
}

/// Encodes `batch` as one frame. `None` if its tag is longer than 65535
/// bytes or it holds more than 2^32 - 1 records, which no source produces.
pub fn encode(batch: &Batch, written: EventTime) -> Option<Vec<u8>> {
    let tag = batch.tag.as_bytes();
    let tag_len = u16::try_from(tag.len()).ok()?;
    let count = u32::try_from(batch.count).ok()?;
    let (kind, time, payload) = match &batch.records {
        Records::Entries(b) => (KIND_ENTRIES, EventTime::default(), b),
        Records::Lines { data, time } => (KIND_LINES, *time, data),
    };
    let body_len = BODY_FIXED + tag.len() + payload.len();
    if body_len > MAX_BODY {
        return None;
    }
    let mut out = Vec::with_capacity(FRAME_HEADER + body_len);
    out.extend_from_slice(FRAME_MAGIC);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]); // CRC, filled in below
    out.push(kind);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&written.secs.to_le_bytes());
    out.extend_from_slice(&written.nanos.to_le_bytes());
    out.extend_from_slice(&time.secs.to_le_bytes());
    out.extend_from_slice(&time.nanos.to_le_bytes());
    out.extend_from_slice(&tag_len.to_le_bytes());
    out.extend_from_slice(tag);
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[FRAME_HEADER..]);
    out[8..12].copy_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// Reads a frame header: the total frame length (header + body).
pub fn frame_len(header: &[u8]) -> Result<usize, FrameError> {
    if header.len() < FRAME_HEADER {
        return Err(FrameError::Incomplete {
            have: header.len(),
            need: FRAME_HEADER,
        });
    }
    if &header[..4] != FRAME_MAGIC {
        return Err(FrameError::Damaged("frame magic is not LFRM"));
    }
    let len = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes")) as usize;
    if !(BODY_FIXED..=MAX_BODY).contains(&len) {
        return Err(FrameError::Damaged("impossible frame length"));
    }
    Ok(FRAME_HEADER + len)
}

/// Decodes the frame at the start of `buf`; returns it and its length.
/// `buf` is shared so the records are not copied.
pub fn decode(buf: &Bytes) -> Result<(Frame, usize), FrameError> {
    let len = frame_len(buf)?;
    if buf.len() < len {
        return Err(FrameError::Incomplete {
            have: buf.len(),
            need: len,
        });
    }
    let crc = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes"));
    let body = &buf[FRAME_HEADER..len];
    if crc32c::crc32c(body) != crc {
        return Err(FrameError::Damaged("CRC32C mismatch"));
    }
    let u32_at = |o: usize| u32::from_le_bytes(body[o..o + 4].try_into().expect("4 bytes"));
    let kind = body[0];
    let count = u32_at(1);
    let written = EventTime::new(u32_at(5), u32_at(9));
    let time = EventTime::new(u32_at(13), u32_at(17));
    let tag_len = u16::from_le_bytes([body[21], body[22]]) as usize;
    let tag_end = BODY_FIXED + tag_len;
    if tag_end > body.len() {
        return Err(FrameError::Damaged("tag longer than the frame"));
    }
    let tag = std::str::from_utf8(&body[BODY_FIXED..tag_end])
        .map_err(|_| FrameError::Damaged("tag is not UTF-8"))?
        .to_owned();
    let payload = buf.slice(FRAME_HEADER + tag_end..len);
    let records = match kind {
        KIND_ENTRIES => FrameRecords::Entries(payload),
        KIND_LINES => FrameRecords::Lines {
            data: payload,
            time,
        },
        _ => return Err(FrameError::Damaged("unknown record kind")),
    };
    Ok((
        Frame {
            tag,
            records,
            count,
            written,
        },
        len,
    ))
}

/// The offset of the next possible frame start in `buf` after `from`
/// (where [`FRAME_MAGIC`] occurs), for resyncing past damage.
pub fn next_magic(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.min(buf.len());
    memchr::memmem::find(&buf[start..], FRAME_MAGIC).map(|i| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(batch: Batch) -> Frame {
        let at = EventTime::new(1_700_000_000, 5);
        let bytes = Bytes::from(encode(&batch, at).unwrap());
        let (frame, len) = decode(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!(frame.written, at);
        frame
    }

    #[test]
    fn entries_roundtrip() {
        let entries = Bytes::from_static(b"\x92\xce\x65\x00\x00\x00\x81\xa1a\xa1b");
        let frame = roundtrip(Batch::new(
            "app.web".into(),
            Records::Entries(entries.clone()),
            1,
        ));
        assert_eq!(frame.tag, "app.web");
        assert_eq!(frame.count, 1);
        assert_eq!(frame.records, FrameRecords::Entries(entries));
    }

    #[test]
    fn lines_roundtrip() {
        let data = Bytes::from_static(b"one\ntwo\n");
        let time = EventTime::new(1_600_000_000, 999_999_999);
        let frame = roundtrip(Batch::new(
            "tail".into(),
            Records::Lines {
                data: data.clone(),
                time,
            },
            2,
        ));
        let batch = frame.clone().into_batch();
        assert_eq!(&*batch.tag, "tail");
        assert_eq!(batch.count, 2);
        assert_eq!(frame.records, FrameRecords::Lines { data, time });
    }

    #[test]
    fn damage_is_told_apart_from_a_short_read() {
        let batch = Batch::new("t".into(), Records::Entries(Bytes::from_static(b"xyz")), 1);
        let good = encode(&batch, EventTime::default()).unwrap();
        let short = Bytes::copy_from_slice(&good[..good.len() - 1]);
        assert!(matches!(decode(&short), Err(FrameError::Incomplete { .. })));
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            decode(&Bytes::from(flipped)),
            Err(FrameError::Damaged("CRC32C mismatch"))
        );
        let mut huge = good;
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode(&Bytes::from(huge)),
            Err(FrameError::Damaged("impossible frame length"))
        );
    }
}
