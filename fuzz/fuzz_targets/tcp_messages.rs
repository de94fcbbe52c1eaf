//! The tcp source's framing (`sources::tcp::framing::Framer`, newline and
//! RFC 6587 octet counting), syslog parser (`protocol::syslog::parse`)
//! and encoders (`sources::tcp::encode`): every byte comes from a peer.
//!
//! Byte 0 picks the framing (bit 0), `max_line_bytes` (bits 1..=6: 1 to 64)
//! and the size of the reads the rest arrives in (bit 7 clear: one byte at
//! a time; set: 1 to 16 bytes, from byte 1). The rest is the stream.
//!
//! Checked:
//! * nothing panics, and every step that is not `NeedMore` consumes bytes
//!   (but `Invalid`, an octet count that breaks the stream off, after
//!   which every step says the same);
//! * every message is at most `max_line_bytes` long and lies in the buffer;
//! * read boundaries do not matter: the messages and over-long counts from
//!   small reads are exactly those from one read of the whole stream;
//! * each message, parsed as syslog, encodes (if it parses) to one valid
//!   msgpack `[time, map]` entry; as JSON, either encodes to one valid entry
//!   or is an error that leaves the output untouched.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::event::EventTime;
use logferry::protocol::{msgpack, syslog};
use logferry::sources::tcp::framing::{Framer, Step};
use logferry::sources::tcp::{encode, Framing};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

/// Messages and the number of over-long ones, with reads of `chunk` bytes.
fn frame_all(framing: Framing, max: usize, input: &[u8], chunk: usize) -> (Vec<Vec<u8>>, usize) {
    let mut f = Framer::new(framing, max);
    let mut buf = Vec::new();
    let (mut out, mut long) = (Vec::new(), 0);
    for piece in input.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            match f.step(&buf) {
                Step::Message { consumed, start, end } => {
                    assert!(consumed > 0 && start <= end && end <= consumed && consumed <= buf.len());
                    assert!(end - start <= max, "a message of {} bytes", end - start);
                    out.push(buf[start..end].to_vec());
                    buf.drain(..consumed);
                }
                step @ (Step::Skip { consumed } | Step::TooLong { consumed, .. }) => {
                    assert!(consumed > 0 && consumed <= buf.len(), "no progress");
                    long += usize::from(matches!(step, Step::TooLong { .. }));
                    buf.drain(..consumed);
                }
                // the connection closes: a mark, and nothing more
                Step::Invalid { header } => {
                    assert!(header >= 2 && header <= buf.len(), "header of {header} bytes");
                    assert_eq!(f.step(&buf), Step::Invalid { header }, "framing went on");
                    out.push(b"<invalid>".to_vec());
                    return (out, long);
                }
                Step::NeedMore => break,
            }
        }
        // the buffer holds at most one message and its header, plus a read
        assert!(buf.len() <= max + 16 + chunk, "buffer of {} bytes", buf.len());
    }
    if let Some((s, e)) = f.last_line(&buf) {
        assert!(e - s <= max);
        out.push(buf[s..e].to_vec());
    }
    (out, long)
}

fn check(data: &[u8]) {
    let Some((&knob, rest)) = data.split_first() else { return };
    let framing = if knob & 1 == 0 { Framing::Newline } else { Framing::OctetCounting };
    let max = usize::from((knob >> 1) & 0x3f) + 1;
    let chunk = match rest.first() {
        Some(&c) if knob & 0x80 != 0 => usize::from(c % 16) + 1,
        _ => 1,
    };
    let whole = frame_all(framing, max, rest, rest.len().max(1));
    let small = frame_all(framing, max, rest, chunk);
    assert_eq!(whole, small, "read boundaries changed the messages");

    let now = EventTime::new(1_795_348_800, 0);
    for m in whole.0.iter().filter(|m| *m != b"<invalid>") {
        if let Ok(p) = syslog::parse(m, now) {
            let mut out = Vec::new();
            encode::syslog(&mut out, now, &p);
            assert_one_entry(&out);
        }
        let mut out = Vec::new();
        match encode::json(&mut out, now, m) {
            Ok(()) => assert_one_entry(&out),
            Err(_) => assert!(out.is_empty(), "a failed JSON encode wrote bytes"),
        }
    }
}

fn assert_one_entry(out: &[u8]) {
    assert_eq!(msgpack::skip(out, 0), Ok(out.len()), "not one msgpack value");
    let mut r = msgpack::Reader::new(out);
    assert_eq!(r.read_array_len(), Ok(2));
    EventTime::read(&mut r).expect("an entry time");
    r.read_map_len().expect("a map record");
}
