//! The HTTP source's `Content-Encoding` decoding
//! (`sources::http::encoding::Inflater`): gzip, deflate (zlib or raw) and
//! zstd bodies, decoded step by step under `max_body_bytes`.
//!
//! Byte 0 picks the coding (bits 0-1: gzip, deflate, zstd, identity) and
//! whether the rest is sent as it is (bit 2 clear: any bytes, as an
//! attacker sends them) or compressed first (bit 2 set; bit 3 picks raw
//! deflate over zlib); byte 1 picks the limit (1 to 16,321 bytes). The
//! rest is the body.
//!
//! Checked:
//! * nothing panics, whatever the bytes;
//! * the decoder never allocates past the limit, before or after a step,
//!   and a decoded body is never longer than the limit;
//! * a body that decodes fits the limit exactly or is refused as too
//!   large, never cut short: what is decoded agrees with flate2's / zstd's
//!   own decoder;
//! * a compressed body decodes back to exactly the bytes compressed when
//!   they fit the limit, and is refused as too large when they do not.

#![no_main]

use std::io::{Read, Write};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use logferry::sources::http::encoding::{ContentEncoding, InflateError, Inflater};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let [knob, size, rest @ ..] = data else { return };
    let encoding = match knob & 3 {
        0 => ContentEncoding::Gzip,
        1 => ContentEncoding::Deflate,
        2 => ContentEncoding::Zstd,
        _ => ContentEncoding::Identity,
    };
    let limit = usize::from(*size) * 64 + 1;
    let compressed = knob & 4 != 0;
    let body = if compressed {
        compress(encoding, knob & 8 != 0, rest)
    } else {
        rest.to_vec()
    };
    let decoded = decode(encoding, Bytes::from(body.clone()), limit);
    if compressed {
        match &decoded {
            Ok(d) => assert_eq!(&d[..], rest, "a compressed body decoded to other bytes"),
            Err(InflateError::TooLarge { .. }) => {
                assert!(rest.len() > limit, "{} bytes refused under a limit of {limit}", rest.len())
            }
            Err(e) => panic!("a body compressed here is refused: {e}"),
        }
        if rest.len() <= limit {
            assert!(decoded.is_ok());
        }
    }
    if let Ok(d) = &decoded {
        assert!(d.len() <= limit);
        if let Some(Ok(reference)) = reference(encoding, &body) {
            assert_eq!(&d[..], &reference[..], "disagrees with the reference decoder");
        }
    }
}

/// Steps through the body as the source does, checking what it allocates.
fn decode(encoding: ContentEncoding, body: Bytes, limit: usize) -> Result<Bytes, InflateError> {
    let mut inflater = Inflater::new(encoding, body, limit)?;
    loop {
        assert!(
            inflater.allocated() + inflater.next_allocation() <= limit,
            "would allocate {} + {} under a limit of {limit}",
            inflater.allocated(),
            inflater.next_allocation()
        );
        let done = inflater.step()?;
        assert!(inflater.allocated() <= limit, "allocated {} under a limit of {limit}", inflater.allocated());
        if done {
            return Ok(inflater.into_body());
        }
    }
}

fn compress(encoding: ContentEncoding, raw: bool, data: &[u8]) -> Vec<u8> {
    use flate2::{write, Compression};
    let level = Compression::fast();
    match encoding {
        ContentEncoding::Gzip => {
            let mut e = write::GzEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        ContentEncoding::Deflate if raw => {
            let mut e = write::DeflateEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        ContentEncoding::Deflate => {
            let mut e = write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        ContentEncoding::Zstd => zstd::bulk::compress(data, 1).unwrap(),
        ContentEncoding::Identity => data.to_vec(),
    }
}

/// What the libraries' own readers make of the body (at most 1 MiB of
/// it), when they read it whole; `None` where there is no single
/// reference (deflate is zlib or raw by its first bytes).
fn reference(encoding: ContentEncoding, body: &[u8]) -> Option<std::io::Result<Vec<u8>>> {
    let mut out = Vec::new();
    let cap = 1 << 20;
    let r = match encoding {
        ContentEncoding::Gzip => flate2::read::MultiGzDecoder::new(body).take(cap).read_to_end(&mut out),
        ContentEncoding::Zstd => zstd::stream::read::Decoder::new(body)
            .and_then(|d| d.take(cap).read_to_end(&mut out)),
        ContentEncoding::Identity => Ok(body.len()),
        ContentEncoding::Deflate => return None,
    };
    Some(r.map(|_| if encoding == ContentEncoding::Identity { body.to_vec() } else { out }))
}
