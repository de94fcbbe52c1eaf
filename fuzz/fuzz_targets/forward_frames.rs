//! The forward-protocol framer/decoder, fed the way a TCP connection feeds it.
//!
//! The whole input is the byte stream a peer sends. Its first byte also picks
//! the size of the reads the stream arrives in (it is *not* removed from the
//! stream, so real client captures work unmodified as seeds; to try other
//! read sizes for the same frames the fuzzer can prepend a one-byte scalar,
//! which the decoder skips as a non-fatal invalid frame).
//!
//! The loop is the one in `src/sources/forward/conn.rs`: append a read, call
//! `next_frame` until `Ok(None)` or an error; a fatal error ends the
//! connection, a non-fatal one skips the frame.
//!
//! Checked:
//! * nothing panics (and nothing loops: every frame or skipped frame
//!   consumes bytes);
//! * a frame's `count` equals `count_entries(&frame.entries)` (so sinks can
//!   trust it), its tag is not empty, and a Message-mode frame holds one entry;
//! * every entry time of an accepted frame is a valid EventTime (nanoseconds
//!   below 10^9), so every accepted time prints as a valid RFC 3339 time;
//! * entries never exceed `max_decompressed_bytes` (gzip bombs are cut) and an
//!   uncompressed frame's entries never exceed `max_frame_bytes`;
//! * the buffer never holds more than `max_frame_bytes` + one read;
//! * read boundaries do not matter: the frames (and non-fatal errors) decoded
//!   from the stream in small reads are exactly those decoded from it in one
//!   read, and both end in a fatal error or neither does;
//! * stack use does not grow with the input: the checks run on a 256 KiB
//!   stack (see `common.rs`), so recursion on nesting depth overflows it.

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use logferry::event::{Batch, Records};
use logferry::protocol::forward::{count_entries, next_frame, Frame, FrameError, Limits, Mode};

mod common;

/// Small limits, so size checks and gzip bombs are reachable with small inputs.
const LIMITS: Limits = Limits {
    max_frame_bytes: 64 * 1024,
    max_decompressed_bytes: 256 * 1024,
};

/// Read sizes the first byte chooses from (`usize::MAX`: the whole input in
/// one read). 17 entries, so the common first bytes 0x92/0x93/0x94 differ.
const CHUNKS: [usize; 17] = [1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64, 100, 255, 1024, 4096, 65_536, usize::MAX];

/// What one `next_frame` call produced, for comparing two runs.
#[derive(Debug, PartialEq)]
enum Outcome {
    Frame {
        tag: String,
        mode: Mode,
        entries: bytes::Bytes,
        count: usize,
        options: logferry::protocol::forward::Options,
    },
    Skipped(FrameError),
    /// A fatal error ended the connection (which one may depend on how much
    /// of an oversized or malformed frame had arrived, so it is not compared).
    Closed,
}

fn check_frame(frame: &Frame) {
    let recount = count_entries(&frame.entries)
        .unwrap_or_else(|e| panic!("accepted frame has invalid entries: {e} ({frame:?})"));
    assert_eq!(frame.count, recount, "frame.count differs from its entries: {frame:?}");
    assert!(!frame.tag.is_empty(), "empty tag accepted");
    let batch = Batch::new(frame.tag.as_str().into(), Records::Entries(frame.entries.clone()), frame.count);
    batch
        .for_each_record(|t, _| assert!(t.nanos < 1_000_000_000, "accepted time {t:?}"))
        .unwrap_or_else(|e| panic!("accepted frame's records do not iterate: {e}"));
    match frame.mode {
        Mode::Message => assert_eq!(frame.count, 1, "Message-mode frame with {} entries", frame.count),
        Mode::CompressedPackedForward => assert!(
            frame.entries.len() <= LIMITS.max_decompressed_bytes,
            "gzip payload inflated to {} bytes, limit {}",
            frame.entries.len(),
            LIMITS.max_decompressed_bytes
        ),
        Mode::Forward | Mode::PackedForward => assert!(
            frame.entries.len() <= LIMITS.max_frame_bytes,
            "entries of {} bytes from a frame of at most {}",
            frame.entries.len(),
            LIMITS.max_frame_bytes
        ),
    }
}

/// Feeds `stream` in reads of `chunk` bytes, like a connection does.
fn run(stream: &[u8], chunk: usize) -> Vec<Outcome> {
    let mut out = Vec::new();
    let mut buf = BytesMut::new();
    let mut hint = logferry::protocol::forward::Scan::default();
    for read in stream.chunks(chunk) {
        buf.extend_from_slice(read);
        assert!(
            buf.len() <= LIMITS.max_frame_bytes + read.len(),
            "buffer holds {} bytes after a read of {} (max_frame_bytes {})",
            buf.len(),
            read.len(),
            LIMITS.max_frame_bytes
        );
        loop {
            let before = buf.len();
            match next_frame(&mut buf, &LIMITS, &mut hint) {
                Ok(Some(frame)) => {
                    check_frame(&frame);
                    assert!(buf.len() < before, "a frame was returned but no bytes consumed");
                    out.push(Outcome::Frame {
                        tag: frame.tag,
                        mode: frame.mode,
                        entries: frame.entries,
                        count: frame.count,
                        options: frame.options,
                    });
                }
                Ok(None) => break,
                Err(e) if e.is_fatal() => {
                    out.push(Outcome::Closed);
                    return out;
                }
                Err(e) => {
                    assert!(buf.len() < before, "non-fatal error {e} consumed no bytes: the connection would spin");
                    out.push(Outcome::Skipped(e));
                }
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some(&first) = data.first() else { return };
    let chunk = CHUNKS[usize::from(first) % CHUNKS.len()];
    common::on_small_stack(|| {
        let chunked = run(data, chunk);
        if chunk < data.len() {
            let whole = run(data, usize::MAX);
            assert_eq!(chunked, whole, "reads of {chunk} bytes decode differently from one read");
        }
    });
});
