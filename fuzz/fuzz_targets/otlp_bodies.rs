//! The `otlp` source's request decoding (`protocol::otlp::decode`):
//! protobuf and OTLP/JSON `ExportLogsServiceRequest`s → records by tag, on
//! arbitrary bytes.
//!
//! Byte 0 picks the format (bit 0: JSON) and whether the tag has a
//! resource placeholder (bit 1); the rest is the body.
//!
//! Checked:
//! * nothing panics, whatever the bytes, and stack use stays bounded (the
//!   checks run on the small stack of `common.rs`);
//! * each batch is well-formed `[time, map]` forward entries, exactly
//!   `count` of them, and no tag is empty or repeated.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::event::{EventTime, Records};
use logferry::protocol::forward::count_entries;
use logferry::protocol::otlp::{decode, Format, TagTemplate};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

const NOW: EventTime = EventTime { secs: 1_000, nanos: 0 };

fn check(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let format = if head & 1 == 0 { Format::Protobuf } else { Format::Json };
    let tag = if head & 2 == 0 { "otel" } else { "otel.${resource.service.name}" };
    let tag = TagTemplate::parse(tag).expect("a valid template");
    let Ok(batches) = decode(format, body, &tag, NOW) else {
        return;
    };
    let mut tags = Vec::new();
    for b in &batches {
        assert!(!b.tag.is_empty(), "an empty tag");
        assert!(!tags.contains(&b.tag), "tag {} twice", b.tag);
        tags.push(b.tag.clone());
        assert!(b.count > 0, "an empty batch");
        match &b.records {
            Records::Entries(e) => {
                assert_eq!(count_entries(e).ok(), Some(b.count), "count_entries disagrees")
            }
            Records::Lines { .. } => panic!("OTLP decodes to entries"),
        }
    }
}
