//! The Fluentd forward protocol (Forward Protocol Specification v1): frame
//! decoding for all four modes, and the encodings logferry writes (acks,
//! packed frames).

mod decode;
pub mod handshake;
#[cfg(test)]
mod tests;

use bytes::Bytes;

pub use decode::{count_entries, decode_frame, next_frame, Frame, Scan};

use crate::protocol::msgpack::write;

/// The largest frame a forward receiver takes by default (the forward
/// source's `max_frame_bytes`); the forward sink's default chunks fit it.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// The four carrier modes of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Message,
    Forward,
    PackedForward,
    CompressedPackedForward,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Message => "Message",
            Mode::Forward => "Forward",
            Mode::PackedForward => "PackedForward",
            Mode::CompressedPackedForward => "CompressedPackedForward",
        }
    }
}

/// The options map that may end a frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Number of entries the sender says the frame holds.
    pub size: Option<u64>,
    /// Ack id: the server answers `{"ack": chunk}` once the entries are safe.
    pub chunk: Option<Bytes>,
    /// `"gzip"` for CompressedPackedForward (Fluentd also sends `"text"`).
    pub compressed: Option<String>,
}

/// Bounds on what one peer can make the server hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest frame accepted, in bytes on the wire.
    pub max_frame_bytes: usize,
    /// Largest payload a compressed frame may inflate to.
    pub max_decompressed_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 16 * 1024 * 1024,
            max_decompressed_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a frame was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The bytes are not msgpack; frame boundaries are lost.
    #[error("malformed msgpack at byte {offset}: {reason}")]
    Malformed { offset: usize, reason: &'static str },
    /// The frame is larger than the limit (possibly only announced so).
    #[error("frame of {size} bytes exceeds max_frame_bytes ({limit})")]
    TooLarge { size: usize, limit: usize },
    /// Valid msgpack that is not a valid forward frame; the frame is skipped.
    #[error("invalid forward frame: {0}")]
    Shape(String),
    /// A compressed frame inflates past `max_decompressed_bytes` (a
    /// compression bomb, or a limit set too low); the frame is skipped.
    #[error("gzip payload inflates past max_decompressed_bytes ({limit}); frame dropped")]
    Inflated { limit: usize },
}

impl FrameError {
    /// True if the connection cannot continue after this error: the stream
    /// position of the next frame is unknown or would need unbounded memory.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, FrameError::Shape(_) | FrameError::Inflated { .. })
    }

    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            FrameError::Malformed { .. } => "malformed",
            FrameError::TooLarge { .. } => "too_large",
            FrameError::Shape(_) => "invalid_frame",
            FrameError::Inflated { .. } => "decompressed_too_large",
        }
    }
}

/// The server's answer to a frame that carried a `chunk` option.
///
/// ```
/// use logferry::protocol::forward::{ack_response, parse_ack};
///
/// assert_eq!(parse_ack(&ack_response(b"chunk-1")).as_deref(), Some("chunk-1"));
/// ```
pub fn ack_response(chunk: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len() + 8);
    write::map_len(&mut out, 1);
    write::str(&mut out, b"ack");
    write::str(&mut out, chunk);
    out
}

/// The chunk id of a server's `{"ack": id}` answer; `None` for anything
/// else (the answer comes from outside: any bytes must be safe here).
pub fn parse_ack(value: &[u8]) -> Option<String> {
    use crate::protocol::msgpack::{Reader, Value};
    let mut r = Reader::new(value);
    let n = r.read_map_len().ok()?;
    for _ in 0..n {
        let key = r.read_bytes().ok()?;
        match r.read().ok()? {
            Value::Str(v) | Value::Bin(v) if key == b"ack" => {
                return Some(String::from_utf8_lossy(v).into_owned())
            }
            other => crate::event::skip_rest(&mut r, other).ok()?,
        }
    }
    None
}

/// Appends a PackedForward frame `[tag, bin(entries), {size, chunk?}]`.
pub fn write_packed_forward(
    out: &mut Vec<u8>,
    tag: &str,
    entries: &[u8],
    count: usize,
    chunk: Option<&[u8]>,
) {
    write::array_len(out, 3);
    write::str(out, tag.as_bytes());
    write::bin_header(out, entries.len());
    out.extend_from_slice(entries);
    write::map_len(out, if chunk.is_some() { 2 } else { 1 });
    write::str(out, b"size");
    write::uint(out, count as u64);
    if let Some(chunk) = chunk {
        write::str(out, b"chunk");
        write::str(out, chunk);
    }
}

/// Appends one `[time, {"message": message}]` entry.
pub fn write_message_entry(out: &mut Vec<u8>, secs: u32, nanos: u32, message: &[u8]) {
    write::array_len(out, 2);
    write::event_time(out, secs, nanos);
    write::map_len(out, 1);
    write::str(out, b"message");
    write::str(out, message);
}
