//! OTLP/gRPC's framing (gRPC over HTTP/2, the `LogsService/Export`
//! method): a request body is one length-prefixed message, an answer is
//! one framed `ExportLogsServiceResponse` and a `grpc-status` trailer.
//! The `otlp` source serves it, the `otlp` sink calls it.

use bytes::{BufMut, Bytes, BytesMut};

/// The path of `LogsService/Export`.
pub const EXPORT_PATH: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// Bytes before a message: its compressed flag and big-endian length.
const PREFIX: usize = 5;

/// gRPC status codes.
pub mod status {
    pub const OK: u16 = 0;
    pub const CANCELLED: u16 = 1;
    pub const UNKNOWN: u16 = 2;
    pub const INVALID_ARGUMENT: u16 = 3;
    pub const DEADLINE_EXCEEDED: u16 = 4;
    pub const PERMISSION_DENIED: u16 = 7;
    pub const RESOURCE_EXHAUSTED: u16 = 8;
    pub const ABORTED: u16 = 10;
    pub const OUT_OF_RANGE: u16 = 11;
    pub const UNIMPLEMENTED: u16 = 12;
    pub const INTERNAL: u16 = 13;
    pub const UNAVAILABLE: u16 = 14;
    pub const DATA_LOSS: u16 = 15;
    pub const UNAUTHENTICATED: u16 = 16;

    /// The name of a code, as gRPC spells it (`UNAVAILABLE`).
    pub fn name(code: u16) -> &'static str {
        const NAMES: [&str; 17] = [
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        ];
        NAMES.get(usize::from(code)).copied().unwrap_or("UNKNOWN")
    }
}

/// Whether a `Content-Type` is gRPC's with protobuf messages
/// (`application/grpc`, `application/grpc+proto`, parameters ignored).
pub fn is_grpc_content_type(ct: Option<&[u8]>) -> bool {
    let Some(ct) = ct.and_then(|c| std::str::from_utf8(c).ok()) else {
        return false;
    };
    let media = ct.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/grpc")
        || media.eq_ignore_ascii_case("application/grpc+proto")
}

/// Why a request body is not one gRPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("gRPC body of {0} bytes is shorter than a message's 5-byte prefix")]
    NoPrefix(usize),
    #[error("gRPC message flag {0} is neither 0 nor 1")]
    BadFlag(u8),
    #[error("gRPC message announces {announced} bytes, the body holds {held}")]
    Length { announced: usize, held: usize },
}

/// One request message: its bytes (a slice of the body, not a copy), and
/// whether they are compressed with the request's `grpc-encoding`.
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    pub compressed: bool,
    pub bytes: Bytes,
}

/// The one message of a unary request's body. The body was read whole
/// and bounded by the size limit, so the announced length is only
/// compared with it, never allocated.
pub fn unframe(body: &Bytes) -> Result<Message, FrameError> {
    let Some((head, rest)) = body.split_first_chunk::<PREFIX>() else {
        return Err(FrameError::NoPrefix(body.len()));
    };
    let compressed = match head[0] {
        0 => false,
        1 => true,
        flag => return Err(FrameError::BadFlag(flag)),
    };
    let announced = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    // a unary call holds exactly one message: a second one, or a cut
    // one, is a malformed request
    if announced != rest.len() {
        return Err(FrameError::Length {
            announced,
            held: rest.len(),
        });
    }
    Ok(Message {
        compressed,
        bytes: body.slice(PREFIX..),
    })
}

/// `message` framed, not compressed.
pub fn frame(message: &[u8]) -> Bytes {
    framed(false, message)
}

/// `message`, compressed with the call's `grpc-encoding`, framed.
pub fn frame_compressed(message: &[u8]) -> Bytes {
    framed(true, message)
}

fn framed(compressed: bool, message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(PREFIX + message.len());
    out.put_u8(u8::from(compressed));
    out.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    out.put_slice(message);
    out.freeze()
}

/// A `grpc-message` value: percent-encoded as gRPC asks (bytes outside
/// printable ASCII, and `%`), so any text is a valid header value.
pub fn message_header(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.trim_end().bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A `grpc-message` value as text: its percent-encoded bytes decoded
/// (a `%` not followed by two hex digits stays as it is).
pub fn message_from_header(value: &[u8]) -> String {
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        let hex = value
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (value[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_is_read_and_anything_else_refused() {
        let m = unframe(&frame(b"abc")).unwrap();
        assert_eq!(
            m,
            Message {
                compressed: false,
                bytes: Bytes::from_static(b"abc")
            }
        );
        let zipped = Bytes::from_static(b"\x01\x00\x00\x00\x01z");
        assert!(unframe(&zipped).unwrap().compressed);
        assert_eq!(unframe(&frame(b"")).unwrap().bytes.len(), 0);
        assert_eq!(
            unframe(&Bytes::from_static(b"\x00\x00")),
            Err(FrameError::NoPrefix(2))
        );
        assert_eq!(
            unframe(&Bytes::from_static(b"\x02\x00\x00\x00\x00")),
            Err(FrameError::BadFlag(2))
        );
        // announced past the body (a cut message), and two messages
        let cut = Bytes::from_static(b"\x00\xff\xff\xff\xffab");
        assert_eq!(
            unframe(&cut),
            Err(FrameError::Length {
                announced: u32::MAX as usize,
                held: 2
            })
        );
        let two: Bytes = [frame(b"a"), frame(b"b")].concat().into();
        assert!(matches!(
            unframe(&two),
            Err(FrameError::Length {
                announced: 1,
                held: 7
            })
        ));
    }

    #[test]
    fn grpc_content_types_and_messages() {
        assert!(is_grpc_content_type(Some(b"application/grpc")));
        assert!(is_grpc_content_type(Some(b"Application/gRPC+proto; x=y")));
        assert!(!is_grpc_content_type(Some(b"application/grpc+json")));
        assert!(!is_grpc_content_type(None));
        assert_eq!(message_header("50% é\n"), "50%25 %C3%A9");
        assert_eq!(message_from_header(b"50%25 %C3%A9"), "50% é");
        assert_eq!(message_from_header(b"100% %zz %4"), "100% %zz %4");
        assert_eq!(status::name(status::UNAVAILABLE), "UNAVAILABLE");
        assert_eq!(status::name(99), "UNKNOWN");
        let zipped = frame_compressed(b"z");
        assert_eq!(&zipped[..], b"\x01\x00\x00\x00\x01z");
    }
}
