//! The disk buffer's segment reader (`buffer::disk::segment::scan`): after a
//! crash, a full disk or a bad sector, a segment file can hold any bytes,
//! and logferry must still start and deliver every intact frame.
//!
//! The whole input is the segment file. Checked:
//! * nothing panics;
//! * the good frames and the damaged stretches found past the header are in
//!   order, do not overlap and together cover every byte from offset 16 to
//!   the end (nothing is both delivered and quarantined, nothing is lost
//!   without being quarantined);
//! * every good frame decodes on its own to the record count reported;
//! * the same scan started at a good frame's offset (a delivered cursor)
//!   finds exactly the frames from there on.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use logferry::buffer::disk::format::{self, SEGMENT_HEADER};
use logferry::buffer::disk::segment;

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let buf = Bytes::copy_from_slice(data);
    let scan = segment::scan(&buf, 0);
    let mut spans: Vec<(usize, usize, bool)> = scan
        .frames
        .iter()
        .map(|f| (f.offset, f.offset + f.len, true))
        .chain(
            scan.damage
                .iter()
                .filter(|d| d.range.start >= SEGMENT_HEADER)
                .map(|d| (d.range.start, d.range.end, false)),
        )
        .collect();
    spans.sort_unstable();
    let mut at = SEGMENT_HEADER;
    for &(start, end, _) in &spans {
        assert_eq!(start, at, "gap or overlap at {at}: {spans:?}");
        assert!(end > start && end <= buf.len());
        at = end;
    }
    if buf.len() > SEGMENT_HEADER {
        assert_eq!(at, buf.len(), "bytes neither delivered nor quarantined");
    }
    for f in &scan.frames {
        let (frame, len) = format::decode(&buf.slice(f.offset..)).expect("a good frame decodes");
        assert_eq!((len, frame.count), (f.len, f.count));
    }
    if let Some(mid) = scan.frames.get(scan.frames.len() / 2) {
        let from = segment::scan(&buf, mid.offset);
        assert_eq!(from.frames[..], scan.frames[scan.frames.len() / 2..]);
    }
}
