//! The `otlp` source's request decoding (`protocol::otlp::decode`):
//! protobuf and OTLP/JSON `ExportLogsServiceRequest`s → records by tag, on
//! arbitrary bytes; and OTLP/gRPC's framing (`protocol::otlp::grpc`).
//!
//! Byte 0 picks the format (bit 0: JSON), whether the tag has a resource
//! placeholder (bit 1) and whether the body is a gRPC request body (bit 2:
//! one framed message, read by `grpc::unframe`, then protobuf unless its
//! compressed flag is set: inflating is `http_encodings`' target); the
//! rest is the body.
//!
//! Checked:
//! * nothing panics, whatever the bytes, and stack use stays bounded (the
//!   checks run on the small stack of `common.rs`);
//! * a gRPC body is read as one message exactly when its length prefix
//!   names the rest of the body, and framing any bytes reads them back;
//! * each batch is well-formed `[time, map]` forward entries, exactly
//!   `count` of them, and no tag is empty or repeated.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::event::{EventTime, Records};
use logferry::protocol::forward::count_entries;
use logferry::protocol::otlp::{decode, grpc, Format, TagTemplate};

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
    let message;
    let (format, body) = if head & 4 == 0 {
        (format, body)
    } else {
        let framed = grpc::frame(body);
        let back = grpc::unframe(&framed).expect("a framed message reads back");
        assert!(!back.compressed && back.bytes[..] == *body, "framing is not read back");
        let whole = bytes::Bytes::copy_from_slice(body);
        let Ok(m) = grpc::unframe(&whole) else {
            return;
        };
        assert_eq!(m.bytes.len() + 5, body.len(), "a message is the body less its prefix");
        if m.compressed {
            return;
        }
        message = m.bytes;
        (Format::Grpc, &message[..])
    };
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
