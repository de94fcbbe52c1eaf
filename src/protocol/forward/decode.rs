//! Framing and decoding of forward-protocol messages from a byte stream.
//!
//! A frame is one msgpack array. Its second element decides the mode:
//!
//! | second element      | mode                       | entries kept as                      |
//! |---------------------|----------------------------|--------------------------------------|
//! | time (int/float/ext)| Message `[tag, time, record, opts?]` | one `[time, record]` entry (re-encoded) |
//! | array               | Forward `[tag, [[time, record], …], opts?]` | the array's items, sliced, no copy |
//! | bin or str          | PackedForward `[tag, entries, opts?]` | the payload, sliced, no copy |
//! | bin/str + `compressed: "gzip"` | CompressedPackedForward | the gunzipped payload (all gzip members) |
//!
//! Every entry is checked to be `[time, map]` with a valid time (Fluent
//! Bit's `[[time, metadata], record]` shape included) before the frame is
//! accepted, so sinks never meet a malformed record.

use std::io::Read;

use bytes::{Bytes, BytesMut};
use flate2::read::MultiGzDecoder;

use super::{FrameError, Limits, Mode, Options};
use crate::event::EventTime;
use crate::protocol::msgpack::{self, write, Reader, Value};

/// Longest chunk id accepted (clients send 16-byte ids, base64-encoded).
const MAX_CHUNK_ID: usize = 1024;

/// A decoded frame.
#[derive(Debug, Clone)]
pub struct Frame {
    pub tag: String,
    pub mode: Mode,
    /// Concatenated `[time, record]` msgpack entries.
    pub entries: Bytes,
    /// Number of entries.
    pub count: usize,
    pub options: Options,
}

/// How far the frame at the start of a connection's buffer has been
/// scanned, so each byte is scanned once however many reads the frame takes.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    cursor: msgpack::Cursor,
    /// Buffer length worth waiting for before scanning again.
    needed: usize,
}

impl Scan {
    /// The buffer length the current frame needs at least (0 if unknown);
    /// exact once the frame's last string or binary header has been read.
    pub fn needed(&self) -> usize {
        self.needed
    }
}

/// Splits the next complete frame off `buf` and decodes it.
///
/// `Ok(None)`: not enough bytes yet; `scan` remembers how far the frame was
/// scanned, and must be passed again with the same buffer.
pub fn next_frame(
    buf: &mut BytesMut,
    limits: &Limits,
    scan: &mut Scan,
) -> Result<Option<Frame>, FrameError> {
    if buf.is_empty() || buf.len() < scan.needed {
        return Ok(None);
    }
    let end = match msgpack::skip_from(buf, &mut scan.cursor) {
        Ok(end) => end,
        Err(msgpack::Error::Incomplete { needed }) => {
            if needed > limits.max_frame_bytes {
                return Err(FrameError::TooLarge {
                    size: needed,
                    limit: limits.max_frame_bytes,
                });
            }
            scan.needed = needed;
            return Ok(None);
        }
        Err(msgpack::Error::Invalid { offset, reason }) => {
            return Err(FrameError::Malformed { offset, reason })
        }
    };
    *scan = Scan::default();
    if end > limits.max_frame_bytes {
        return Err(FrameError::TooLarge {
            size: end,
            limit: limits.max_frame_bytes,
        });
    }
    let frame = buf.split_to(end).freeze();
    decode_frame(frame, limits).map(Some)
}

/// Decodes one complete frame (exactly one msgpack value).
pub fn decode_frame(frame: Bytes, limits: &Limits) -> Result<Frame, FrameError> {
    let shape = |reason: &'static str| FrameError::Shape(reason.into());
    let mut r = Reader::new(&frame);
    let len = r
        .read_array_len()
        .map_err(|_| shape("a frame must be an array [tag, …]"))?;
    if !(2..=4).contains(&len) {
        return Err(shape("a frame must be an array of 2 to 4 elements"));
    }
    let tag = r
        .read_bytes()
        .map_err(|_| shape("the tag must be a string"))?;
    let tag = std::str::from_utf8(tag)
        .map_err(|_| shape("the tag must be UTF-8"))?
        .to_string();
    if tag.is_empty() {
        return Err(shape("the tag must not be empty"));
    }
    let second = r.peek().map_err(|_| shape("frame ends after the tag"))?;
    let (mode, entries, count, options) = match second {
        // array: Forward mode
        0x90..=0x9f | 0xdc | 0xdd => {
            let n = r.read_array_len().map_err(bad)?;
            let start = r.pos();
            for _ in 0..n {
                check_entry(&mut r)?;
            }
            let entries = frame.slice(start..r.pos());
            let options = read_options(&mut r, len - 2)?;
            (Mode::Forward, entries, n, options)
        }
        // bin or str: (Compressed)PackedForward
        0xc4..=0xc6 | 0xa0..=0xbf | 0xd9..=0xdb => {
            let payload = r.read_bytes().map_err(bad)?;
            let start = payload.as_ptr() as usize - frame.as_ptr() as usize;
            let payload = frame.slice(start..start + payload.len());
            let options = read_options(&mut r, len - 2)?;
            let (mode, entries) = match options.compressed.as_deref() {
                Some("gzip") => (Mode::CompressedPackedForward, gunzip(&payload, limits)?),
                // Fluentd sends `compressed: "text"` for plain packed chunks
                None | Some("text") => (Mode::PackedForward, payload),
                Some(other) => {
                    return Err(FrameError::Shape(format!(
                        "unsupported compression {other:?} (gzip and text are known)"
                    )))
                }
            };
            let count = count_entries(&entries)?;
            (mode, entries, count, options)
        }
        // anything else must be a time: Message mode
        _ => {
            if len < 3 {
                return Err(shape("a Message frame needs [tag, time, record]"));
            }
            let start = r.pos();
            EventTime::read(&mut r).map_err(|e| FrameError::Shape(time_error(start, e)))?;
            check_record(&mut r)?;
            let mut entry = Vec::with_capacity(1 + r.pos() - start);
            write::array_len(&mut entry, 2);
            entry.extend_from_slice(&frame[start..r.pos()]);
            let options = read_options(&mut r, len - 3)?;
            (Mode::Message, Bytes::from(entry), 1, options)
        }
    };
    if let Some(size) = options.size {
        if size != count as u64 {
            tracing::debug!(
                tag,
                size,
                count,
                "option size differs from the entries in the frame"
            );
        }
    }
    Ok(Frame {
        tag,
        mode,
        entries,
        count,
        options,
    })
}

fn bad(e: msgpack::Error) -> FrameError {
    FrameError::Shape(e.to_string())
}

/// Checks one `[time, record]` entry and moves past it.
fn check_entry(r: &mut Reader<'_>) -> Result<(), FrameError> {
    let at = r.pos();
    let n = r.read_array_len().map_err(|_| {
        FrameError::Shape(format!(
            "entry at byte {at} must be an array [time, record]"
        ))
    })?;
    if n != 2 {
        return Err(FrameError::Shape(format!(
            "entry at byte {at} must be [time, record], has {n} elements"
        )));
    }
    EventTime::read(r).map_err(|e| FrameError::Shape(time_error(at, e)))?;
    check_record(r)
}

/// The message for an entry whose time was rejected, with the reason.
fn time_error(at: usize, e: msgpack::Error) -> String {
    match e {
        msgpack::Error::Invalid { reason, .. } => format!("entry at byte {at}: {reason}"),
        msgpack::Error::Incomplete { .. } => {
            format!("entry at byte {at}: time must be an integer, float or EventTime")
        }
    }
}

fn check_record(r: &mut Reader<'_>) -> Result<(), FrameError> {
    let at = r.pos();
    match r.peek() {
        Ok(0x80..=0x8f | 0xde | 0xdf) => r.skip().map_err(bad),
        _ => Err(FrameError::Shape(format!(
            "record at byte {at} must be a map"
        ))),
    }
}

/// Validates a packed entry stream and counts its entries.
pub fn count_entries(entries: &[u8]) -> Result<usize, FrameError> {
    let mut r = Reader::new(entries);
    let mut n = 0;
    while !r.is_empty() {
        check_entry(&mut r)?;
        n += 1;
    }
    Ok(n)
}

fn read_options(r: &mut Reader<'_>, present: usize) -> Result<Options, FrameError> {
    let mut options = Options::default();
    if present == 0 {
        return Ok(options);
    }
    let pairs = match r.read().map_err(bad)? {
        Value::Map(n) => n,
        // some clients send nil for "no options"
        Value::Nil => return Ok(options),
        _ => return Err(FrameError::Shape("options must be a map".into())),
    };
    for _ in 0..pairs {
        let key = match r.read().map_err(bad)? {
            Value::Str(k) | Value::Bin(k) => k,
            other => {
                crate::event::skip_rest(r, other).map_err(bad)?;
                r.skip().map_err(bad)?;
                continue;
            }
        };
        let value = r.read().map_err(bad)?;
        match (key, value) {
            (b"size", Value::UInt(n)) => options.size = Some(n),
            // an ack echoes the id: a huge one would make every ack huge
            (b"chunk", Value::Str(c) | Value::Bin(c)) if c.len() <= MAX_CHUNK_ID => {
                options.chunk = Some(Bytes::copy_from_slice(c))
            }
            (b"chunk", Value::Str(_) | Value::Bin(_)) => {
                return Err(FrameError::Shape(format!(
                    "chunk id longer than {MAX_CHUNK_ID} bytes"
                )))
            }
            (b"compressed", Value::Str(c) | Value::Bin(c)) => {
                options.compressed = Some(String::from_utf8_lossy(c).into_owned())
            }
            (b"size" | b"chunk" | b"compressed", _) => {
                return Err(FrameError::Shape(format!(
                    "option {:?} has the wrong type",
                    String::from_utf8_lossy(key)
                )))
            }
            (_, other) => crate::event::skip_rest(r, other).map_err(bad)?,
        }
    }
    Ok(options)
}

/// Gunzips a CompressedPackedForward payload, which may hold several gzip
/// members back to back, refusing to inflate past the limit. The output
/// grows by doubling but never past the limit (and one byte to tell a
/// payload of exactly the limit from a larger one), so a bomb costs at
/// most `max_decompressed_bytes` of memory.
fn gunzip(payload: &[u8], limits: &Limits) -> Result<Bytes, FrameError> {
    let limit = limits.max_decompressed_bytes;
    let mut out: Vec<u8> = Vec::with_capacity(payload.len().saturating_mul(4).min(limit) + 1);
    let mut dec = MultiGzDecoder::new(payload);
    loop {
        if out.len() == out.capacity() {
            if out.len() > limit {
                return Err(FrameError::Inflated { limit });
            }
            // exactly: `Vec`'s own doubling could go far past the limit
            let room = out.capacity().saturating_mul(2).clamp(1, limit + 1);
            out.reserve_exact(room - out.len());
        }
        let filled = out.len();
        out.resize(out.capacity(), 0);
        let n = match dec.read(&mut out[filled..]) {
            Ok(0) => {
                out.truncate(filled);
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
            Err(e) => {
                return Err(FrameError::Shape(format!(
                    "gzip payload could not be decompressed: {e}"
                )))
            }
        };
        out.truncate(filled + n);
    }
    if out.len() > limit {
        return Err(FrameError::Inflated { limit });
    }
    Ok(Bytes::from(out))
}
