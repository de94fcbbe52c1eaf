//! The FUSE source's line cutting (`sources::fuse::encode::cut_lines`):
//! the bytes are whatever an application writes into the mount, in writes
//! of whatever size it picks.
//!
//! Byte 0 picks `max_line_bytes` (bits 0..=5: 1 to 64) and whether the
//! source is in binary mode (bit 6); byte 1 the size of the writes the
//! rest arrives in (1 to 256 bytes). The rest is what the application
//! writes.
//!
//! Checked:
//! * nothing panics;
//! * every entry is one msgpack `[EventTime, {"message": …, "file": …}]`
//!   with the file path given, and the entry count is the one reported;
//! * every message is at most `max_line_bytes` long, and the unfinished
//!   line held back between writes is too;
//! * no byte is lost or invented: the messages followed by the unfinished
//!   rest are exactly the written bytes without their `\n`s;
//! * write boundaries do not matter: the messages and the rest are exactly
//!   those of one write of the whole input;
//! * binary mode makes one record per write, holding the write's bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::event::EventTime;
use logferry::protocol::msgpack::{Reader, Value};
use logferry::sources::fuse::encode::{cut_lines, Entries, EntryWriter};

mod common;

const FILE: &str = "dir/app.log";

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let [knob, size, written @ ..] = data else { return };
    let max = usize::from(knob & 0x3f) + 1;
    let binary = knob & 0x40 != 0;
    let size = usize::from(*size) + 1;

    if binary {
        for piece in written.chunks(size) {
            let mut e = Entries::default();
            EntryWriter::new(&mut e, EventTime::new(1, 2), FILE, true).push(piece);
            assert_eq!(messages(&e), vec![piece.to_vec()], "binary mode changed a write");
        }
        return;
    }

    let (pieces, rest) = cut(written.chunks(size), max);
    let (whole, whole_rest) = cut(std::iter::once(written), max);
    assert_eq!(pieces, whole, "write boundaries changed the records");
    assert_eq!(rest, whole_rest, "write boundaries changed the unfinished line");

    let mut joined: Vec<u8> = pieces.concat();
    joined.extend_from_slice(&rest);
    let expected: Vec<u8> = written.iter().copied().filter(|b| *b != b'\n').collect();
    assert_eq!(joined, expected, "bytes lost or invented");
}

/// Every message cut from `writes`, and the unfinished line at the end.
fn cut<'a>(writes: impl Iterator<Item = &'a [u8]>, max: usize) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut partial = Vec::new();
    let mut out = Vec::new();
    for write in writes {
        let mut e = Entries::default();
        let mut w = EntryWriter::new(&mut e, EventTime::new(1, 2), FILE, false);
        partial = cut_lines(&partial, write, max, &mut w);
        assert!(partial.len() <= max, "held back {} bytes with max_line_bytes {max}", partial.len());
        for m in messages(&e) {
            assert!(m.len() <= max, "a record of {} bytes with max_line_bytes {max}", m.len());
            assert!(!m.contains(&b'\n'), "a record holds a line break");
            out.push(m);
        }
    }
    (out, partial)
}

/// The messages of `e`, checking that every entry is well formed.
fn messages(e: &Entries) -> Vec<Vec<u8>> {
    let mut r = Reader::new(&e.bytes);
    let mut out = Vec::new();
    let mut message_bytes = 0;
    while !r.is_empty() {
        assert_eq!(r.read_array_len().expect("entry array"), 2);
        assert!(matches!(r.read().expect("time"), Value::Ext(0, _)), "time is not an EventTime");
        assert_eq!(r.read_map_len().expect("record map"), 2);
        assert_eq!(r.read_bytes().expect("key"), b"message");
        let m = r.read_bytes().expect("message").to_vec();
        assert_eq!(r.read_bytes().expect("key"), b"file");
        assert_eq!(r.read_bytes().expect("file"), FILE.as_bytes());
        message_bytes += m.len();
        out.push(m);
    }
    assert_eq!(out.len(), e.records, "entry count");
    assert_eq!(message_bytes, e.message_bytes, "message byte count");
    out
}
