//! `Content-Encoding` of request bodies (RFC 9110, 8.4): `gzip`, `deflate`
//! and `zstd` are decoded before the body is read as records.
//!
//! The decoded size is bounded by `max_body_bytes`, like a plain body: the
//! output grows in steps and never past the limit, so a body that inflates
//! a thousandfold (a "zip bomb") is refused after decoding at most
//! `max_body_bytes` of it, never allocated whole. Each step's allocation is
//! charged to the memory budget before it is made (see [`inflate`]).

use std::io::{Cursor, Read};

use bytes::Bytes;

use crate::memory::{MemoryBudget, MemoryCharge};

/// The codings a client may send, as the 415 answer names them.
pub const SUPPORTED: &str = "gzip, deflate, zstd";

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentEncoding {
    /// No coding (no header, or `identity`).
    Identity,
    /// `gzip` (or `x-gzip`): one or more gzip members.
    Gzip,
    /// `deflate`: a zlib stream (RFC 1950), as RFC 9110 defines it; a raw
    /// deflate stream (RFC 1951), which some clients send instead, is read
    /// too.
    Deflate,
    /// `zstd` (RFC 8878): one or more frames, with a window of at most
    /// 8 MiB (RFC 9659).
    Zstd,
}

/// A `Content-Encoding` this source does not decode (the header's text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Content-Encoding {0:?} is not read here: send the body uncompressed (identity) or in one of {SUPPORTED}")]
pub struct Unsupported(pub String);

/// Why an encoded body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InflateError {
    /// It decodes to more than the limit (answered 413).
    #[error("the {encoding} body decodes to more than max_body_bytes ({limit}): send fewer records per request")]
    TooLarge {
        /// The coding's name.
        encoding: &'static str,
        /// `max_body_bytes`.
        limit: usize,
    },
    /// It is not a valid stream of its coding (answered 400).
    #[error("corrupt {encoding} body: {reason}")]
    Corrupt {
        /// The coding's name.
        encoding: &'static str,
        /// What the decoder said.
        reason: String,
    },
}

/// Largest zstd window accepted (2^23 = 8 MiB, RFC 9659's limit for HTTP):
/// a frame may ask its decoder for a window that large before it decodes
/// a byte.
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// What a decoder holds besides its output, charged while it decodes:
/// inflate's state and 32 KiB window; zstd's window and block buffers.
const FLATE_STATE_BYTES: usize = 64 * 1024;
const ZSTD_STATE_BYTES: usize = (1 << ZSTD_WINDOW_LOG_MAX) + 256 * 1024;

/// First allocation for the decoded body (then doubled while needed, up
/// to the limit).
const FIRST_STEP: usize = 64 * 1024;

/// Most bytes one step decodes: between steps the task lets others run,
/// so a large body does not hold a worker thread for long.
const MAX_STEP: usize = 1024 * 1024;

impl ContentEncoding {
    /// The coding of a body from its `Content-Encoding` header values
    /// (each may be a comma-separated list, RFC 9110 8.4). `identity`
    /// entries are no-ops; more than one other coding is not supported.
    pub fn from_headers(values: &[&[u8]]) -> Result<Self, Unsupported> {
        let unsupported = || {
            let all: Vec<_> = values.iter().map(|v| String::from_utf8_lossy(v)).collect();
            Unsupported(all.join(", ").trim().to_string())
        };
        let mut found = ContentEncoding::Identity;
        for value in values {
            let codings = value.split(|c| *c == b',').map(<[u8]>::trim_ascii);
            for coding in codings.filter(|c| !c.is_empty()) {
                let this = match coding.to_ascii_lowercase().as_slice() {
                    b"identity" => continue,
                    b"gzip" | b"x-gzip" => ContentEncoding::Gzip,
                    b"deflate" => ContentEncoding::Deflate,
                    b"zstd" => ContentEncoding::Zstd,
                    _ => return Err(unsupported()),
                };
                if found != ContentEncoding::Identity {
                    // codings applied one over the other: not worth their cost
                    return Err(unsupported());
                }
                found = this;
            }
        }
        Ok(found)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContentEncoding::Identity => "identity",
            ContentEncoding::Gzip => "gzip",
            ContentEncoding::Deflate => "deflate",
            ContentEncoding::Zstd => "zstd",
        }
    }
}

/// A body being decoded into a buffer that never grows past `limit`.
/// Each [`Inflater::step`] first grows the buffer by
/// [`Inflater::next_allocation`] (doubling it, up to the limit), then
/// decodes until it is full or the body ends.
pub struct Inflater {
    /// The body's coding, for errors.
    encoding: ContentEncoding,
    /// Reads the decoded bytes out of the encoded body it owns.
    decoder: Box<dyn Read + Send>,
    /// The decoded bytes so far.
    out: Vec<u8>,
    /// Bytes `out` is allocated for: the steps fill it up to here.
    room: usize,
    /// First allocation: a guess from the encoded size.
    first: usize,
    /// `max_body_bytes`: `out` is never allocated past it.
    limit: usize,
    /// The decoder reached the end of the body.
    done: bool,
}

impl Inflater {
    /// Starts decoding `body`, encoded with `encoding` (identity decodes
    /// to itself), into at most `limit` bytes.
    pub fn new(encoding: ContentEncoding, body: Bytes, limit: usize) -> Result<Self, InflateError> {
        let limit = limit.max(1);
        let first = body
            .len()
            .saturating_mul(4)
            .clamp(FIRST_STEP.min(limit), limit);
        let input = Cursor::new(body);
        let decoder: Box<dyn Read + Send> = match encoding {
            ContentEncoding::Identity => Box::new(input),
            ContentEncoding::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
            ContentEncoding::Deflate if is_zlib(input.get_ref()) => {
                Box::new(flate2::bufread::ZlibDecoder::new(input))
            }
            ContentEncoding::Deflate => Box::new(flate2::bufread::DeflateDecoder::new(input)),
            ContentEncoding::Zstd => {
                let mut d = zstd::stream::read::Decoder::with_buffer(input)
                    .map_err(|e| corrupt(encoding, &e))?;
                d.window_log_max(ZSTD_WINDOW_LOG_MAX)
                    .map_err(|e| corrupt(encoding, &e))?;
                Box::new(d)
            }
        };
        Ok(Inflater {
            encoding,
            decoder,
            out: Vec::new(),
            room: 0,
            first,
            limit,
            done: false,
        })
    }

    /// What a decoder of `encoding` holds besides its output.
    pub fn state_bytes(encoding: ContentEncoding) -> usize {
        match encoding {
            ContentEncoding::Identity => 0,
            ContentEncoding::Gzip | ContentEncoding::Deflate => FLATE_STATE_BYTES,
            ContentEncoding::Zstd => ZSTD_STATE_BYTES,
        }
    }

    /// Bytes the next [`Inflater::step`] allocates.
    pub fn next_allocation(&self) -> usize {
        if self.done || self.out.len() < self.room || self.room >= self.limit {
            0
        } else {
            self.grown() - self.room
        }
    }

    fn grown(&self) -> usize {
        self.room.saturating_mul(2).max(self.first).min(self.limit)
    }

    /// Decodes one step (at most [`MAX_STEP`] bytes, into the room
    /// allocated); `Ok(true)` once the body is decoded whole.
    pub fn step(&mut self) -> Result<bool, InflateError> {
        if self.done {
            return Ok(true);
        }
        if self.out.len() == self.room {
            if self.room >= self.limit {
                // full: the body must end here
                let mut probe = [0u8; 1];
                return match self.read(&mut probe)? {
                    0 => {
                        self.done = true;
                        Ok(true)
                    }
                    _ => Err(InflateError::TooLarge {
                        encoding: self.encoding.as_str(),
                        limit: self.limit,
                    }),
                };
            }
            let room = self.grown();
            // exactly: a doubling by `Vec` could go past the limit
            self.out.reserve_exact(room - self.out.len());
            self.room = room;
        }
        let mut filled = self.out.len();
        self.out.resize(self.room.min(filled + MAX_STEP), 0);
        let mut out = std::mem::take(&mut self.out);
        let result = loop {
            if filled == out.len() {
                break Ok(false);
            }
            match self.read(&mut out[filled..]) {
                Ok(0) => {
                    self.done = true;
                    break Ok(true);
                }
                Ok(n) => filled += n,
                Err(e) => break Err(e),
            }
        };
        out.truncate(filled);
        self.out = out;
        result
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, InflateError> {
        loop {
            match self.decoder.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => return r.map_err(|e| corrupt(self.encoding, &e)),
            }
        }
    }

    /// Bytes allocated for the decoded body.
    pub fn allocated(&self) -> usize {
        self.out.capacity()
    }

    /// The decoded body (call once [`Inflater::step`] said it is done),
    /// in an allocation of its own size.
    pub fn into_body(self) -> Bytes {
        let mut out = self.out;
        out.shrink_to_fit();
        Bytes::from(out)
    }
}

/// Decodes `body` whole, without a memory budget (tests, fuzzing).
pub fn inflate_all(
    encoding: ContentEncoding,
    body: Bytes,
    limit: usize,
) -> Result<Bytes, InflateError> {
    let mut inflater = Inflater::new(encoding, body, limit)?;
    while !inflater.step()? {}
    Ok(inflater.into_body())
}

/// Decodes a request body of `encoding`, charging `memory` for each step
/// before it allocates: the decoder's state, then the decoded body as it
/// grows. `charge` is the encoded body's, held until it is decoded.
/// Returns the decoded body and its charge.
pub async fn inflate(
    encoding: ContentEncoding,
    body: Bytes,
    charge: MemoryCharge,
    limit: usize,
    memory: &MemoryBudget,
    source: &str,
) -> Result<(Bytes, MemoryCharge), InflateError> {
    if encoding == ContentEncoding::Identity {
        return Ok((body, charge));
    }
    let state = memory
        .acquire(charge.bytes(), Inflater::state_bytes(encoding), source)
        .await;
    let mut inflater = Inflater::new(encoding, body, limit)?;
    let mut decoded = MemoryCharge::none();
    loop {
        let more = inflater.next_allocation();
        if more > 0 {
            let held = charge.bytes() + state.bytes() + decoded.bytes();
            decoded.merge(memory.acquire(held, more, source).await);
        }
        if inflater.step()? {
            break;
        }
        tokio::task::yield_now().await;
    }
    // the encoded body and the decoder go here, and their charges after them
    let body = inflater.into_body();
    drop((state, charge));
    decoded.shrink_to(body.len());
    Ok((body, decoded))
}

fn corrupt(encoding: ContentEncoding, e: &std::io::Error) -> InflateError {
    InflateError::Corrupt {
        encoding: encoding.as_str(),
        reason: e.to_string(),
    }
}

/// Whether `b` starts with a zlib header (RFC 1950: method 8, a window of
/// at most 32 KiB, a check that makes the first two bytes a multiple of
/// 31); a raw deflate stream seldom does.
fn is_zlib(b: &[u8]) -> bool {
    b.len() >= 2
        && b[0] & 0x0f == 8
        && b[0] >> 4 <= 7
        && (u16::from(b[0]) << 8 | u16::from(b[1])) % 31 == 0
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn lines(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("line-{i}\n").into_bytes())
            .collect()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(data, 3).unwrap()
    }

    fn all(e: ContentEncoding, body: &[u8], limit: usize) -> Result<Bytes, InflateError> {
        inflate_all(e, Bytes::copy_from_slice(body), limit)
    }

    #[test]
    fn every_coding_decodes_to_the_body_sent() {
        let plain = lines(50_000);
        let mut two_members = gzip(&plain[..1000]);
        two_members.extend(gzip(&plain[1000..]));
        let mut two_frames = zstd(&plain[..7]);
        two_frames.extend(zstd(&plain[7..]));
        for (e, body) in [
            (ContentEncoding::Gzip, gzip(&plain)),
            (ContentEncoding::Gzip, two_members),
            (ContentEncoding::Deflate, zlib(&plain)),
            (ContentEncoding::Deflate, raw_deflate(&plain)),
            (ContentEncoding::Zstd, zstd(&plain)),
            (ContentEncoding::Zstd, two_frames),
            (ContentEncoding::Identity, plain.clone()),
        ] {
            let got = all(e, &body, plain.len()).unwrap();
            assert!(got[..] == plain[..], "{e:?}");
        }
        // an empty body of each coding is an empty body
        assert!(all(ContentEncoding::Gzip, &gzip(b""), 10)
            .unwrap()
            .is_empty());
        assert!(all(ContentEncoding::Zstd, &zstd(b""), 10)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn a_bomb_is_refused_without_allocating_past_the_limit() {
        const LIMIT: usize = 1024 * 1024;
        let zeros = vec![0u8; 64 * 1024 * 1024];
        for (e, body) in [
            (ContentEncoding::Gzip, gzip(&zeros)),
            (ContentEncoding::Deflate, zlib(&zeros)),
            (ContentEncoding::Zstd, zstd(&zeros)),
        ] {
            assert!(body.len() < LIMIT / 4, "{e:?}: {} bytes", body.len());
            let mut inflater = Inflater::new(e, body.into(), LIMIT).unwrap();
            let err = loop {
                match inflater.step() {
                    Ok(done) => assert!(!done, "{e:?} decoded whole"),
                    Err(err) => break err,
                }
                assert!(
                    inflater.allocated() <= LIMIT,
                    "{e:?}: {}",
                    inflater.allocated()
                );
            };
            assert_eq!(
                err,
                InflateError::TooLarge {
                    encoding: e.as_str(),
                    limit: LIMIT
                }
            );
        }
    }

    #[test]
    fn the_limit_is_exact() {
        let plain = lines(1000);
        let body = gzip(&plain);
        assert_eq!(
            all(ContentEncoding::Gzip, &body, plain.len())
                .unwrap()
                .len(),
            plain.len()
        );
        assert!(matches!(
            all(ContentEncoding::Gzip, &body, plain.len() - 1),
            Err(InflateError::TooLarge { .. })
        ));
    }

    #[test]
    fn corrupt_and_truncated_streams_are_errors() {
        let plain = lines(1000);
        for (e, body) in [
            (ContentEncoding::Gzip, gzip(&plain)),
            (ContentEncoding::Deflate, zlib(&plain)),
            (ContentEncoding::Zstd, zstd(&plain)),
        ] {
            let cut = &body[..body.len() / 2];
            assert!(
                matches!(all(e, cut, 1 << 20), Err(InflateError::Corrupt { .. })),
                "{e:?} cut short"
            );
        }
        for e in [ContentEncoding::Gzip, ContentEncoding::Zstd] {
            let err = all(e, b"this is not compressed at all\n", 1 << 20).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with(&format!("corrupt {} body", e.as_str())),
                "{err}"
            );
        }
        // gzip with garbage after its member
        let mut body = gzip(&plain);
        body.extend_from_slice(b"garbage");
        assert!(all(ContentEncoding::Gzip, &body, 1 << 20).is_err());
    }

    #[test]
    fn a_zstd_window_over_8_mib_is_refused() {
        // streamed without a content size: the frame header asks for the
        // whole 16 MiB window
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.set_parameter(zstd::zstd_safe::CParameter::WindowLog(24))
            .unwrap();
        e.write_all(&lines(100)).unwrap();
        let body = e.finish().unwrap();
        let err = all(ContentEncoding::Zstd, &body, 1 << 20).unwrap_err();
        assert!(
            matches!(err, InflateError::Corrupt { .. }) && err.to_string().contains("memory"),
            "{err}"
        );
        // the same at 8 MiB is read
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        e.set_parameter(zstd::zstd_safe::CParameter::WindowLog(23))
            .unwrap();
        e.write_all(&lines(100)).unwrap();
        let body = e.finish().unwrap();
        assert_eq!(
            all(ContentEncoding::Zstd, &body, 1 << 20).unwrap(),
            lines(100)
        );
    }

    #[test]
    fn content_encoding_headers() {
        let parse = |values: &[&str]| {
            let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
            ContentEncoding::from_headers(&values)
        };
        assert_eq!(parse(&[]), Ok(ContentEncoding::Identity));
        assert_eq!(parse(&["identity"]), Ok(ContentEncoding::Identity));
        assert_eq!(parse(&["gzip"]), Ok(ContentEncoding::Gzip));
        assert_eq!(parse(&[" GZip "]), Ok(ContentEncoding::Gzip));
        assert_eq!(parse(&["x-gzip"]), Ok(ContentEncoding::Gzip));
        assert_eq!(parse(&["identity, deflate"]), Ok(ContentEncoding::Deflate));
        assert_eq!(parse(&["zstd", "identity"]), Ok(ContentEncoding::Zstd));
        assert_eq!(parse(&["br"]), Err(Unsupported("br".into())));
        assert!(parse(&["compress"]).is_err());
        assert!(parse(&["gzip, br"]).is_err());
        assert!(parse(&["gzip", "gzip"]).is_err());
        let msg = parse(&["br"]).unwrap_err().to_string();
        assert!(msg.contains("\"br\"") && msg.contains(SUPPORTED), "{msg}");
    }

    #[tokio::test]
    async fn inflating_charges_the_budget_and_gives_back_what_it_drops() {
        let memory = MemoryBudget::new(64 << 20, &crate::metrics::Registry::new());
        let plain = lines(100_000);
        let body = Bytes::from(gzip(&plain));
        let charge = memory.acquire(0, body.len(), "t").await;
        let (got, charge) = inflate(ContentEncoding::Gzip, body, charge, 8 << 20, &memory, "t")
            .await
            .unwrap();
        assert!(got[..] == plain[..]);
        assert_eq!(charge.bytes(), plain.len());
        assert_eq!(
            memory.used(),
            plain.len(),
            "only the decoded body stays charged"
        );
        drop(charge);
        assert_eq!(memory.used(), 0);
        // a bomb leaves nothing charged
        let bomb = Bytes::from(gzip(&vec![0u8; 16 << 20]));
        let charge = memory.acquire(0, bomb.len(), "t").await;
        let err = inflate(ContentEncoding::Gzip, bomb, charge, 1 << 20, &memory, "t")
            .await
            .unwrap_err();
        assert!(matches!(err, InflateError::TooLarge { .. }));
        assert_eq!(memory.used(), 0);
    }
}
