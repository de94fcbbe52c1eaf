//! Wire formats logferry speaks.

pub mod forward;
pub mod gzip;
pub mod json;
pub mod msgpack;
pub mod otlp;
pub mod protobuf;
pub mod syslog;

/// The gzip level logferry compresses at (forward chunks, request bodies,
/// S3 objects). With zlib-rs, level 1 is its "quick" strategy: no faster
/// than level 2 and about half as big again on log lines (141 MB of NDJSON
/// records: 9.2 MB at level 1, 6.0 MB at 2, both near 980 MB/s on one
/// core); levels 4 to 6 save another 5 % at 1.8 to 2.6 times the CPU.
pub const GZIP_LEVEL: u32 = 2;

/// `bytes` in lowercase hex (OTLP ids as the `otlp` sink reads them and
/// OTLP/JSON writes them; the forward handshake's salts).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}
