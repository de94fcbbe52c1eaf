//! Codec tests: hand-annotated frames for every mode and option, and the
//! captures from real Fluent Bit and Fluentd senders in
//! `tests/fixtures/forward/`.

use bytes::{Bytes, BytesMut};
use serde_json::{json, Value as Json};

use super::*;
use crate::event::{Batch, EventTime, Records};
use crate::protocol::msgpack::{to_json, Reader};

/// (time, record) pairs of a decoded frame, as JSON.
fn entries(frame: &Frame) -> Vec<(EventTime, Json)> {
    let batch = Batch::new(
        frame.tag.as_str().into(),
        Records::Entries(frame.entries.clone()),
        frame.count,
    );
    let mut out = Vec::new();
    batch
        .for_each_record(|t, rec| {
            let crate::event::RecordRef::Map(m) = rec else {
                panic!("entries hold maps")
            };
            out.push((t, to_json(&mut Reader::new(m))))
        })
        .unwrap();
    out
}

fn decode_all(bytes: &[u8]) -> Vec<Frame> {
    let mut buf = BytesMut::from(bytes);
    let mut hint = Scan::default();
    let mut frames = Vec::new();
    while let Some(f) = next_frame(&mut buf, &Limits::default(), &mut hint).unwrap() {
        frames.push(f);
    }
    assert!(buf.is_empty(), "{} trailing bytes", buf.len());
    frames
}

// {"message": "hi"} — used by the hand-written frames below
const RECORD: &[u8] = &[
    0x81, 0xa7, b'm', b'e', b's', b's', b'a', b'g', b'e', 0xa2, b'h', b'i',
];
// EventTime(1, 2): fixext8 (0xd7), type 0, u32 secs, u32 nanos
const EVENT_TIME: &[u8] = &[0xd7, 0x00, 0, 0, 0, 1, 0, 0, 0, 2];

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn message_mode_with_integer_time() {
    let bytes = cat(&[
        &[0x93],                // array of 3: [tag, time, record]
        &[0xa1, b't'],          // tag "t"
        &[0xce, 0x65, 0, 0, 0], // uint32 time 0x65000000
        RECORD,
    ]);
    let f = decode_all(&bytes).remove(0);
    assert_eq!((f.tag.as_str(), f.mode, f.count), ("t", Mode::Message, 1));
    assert_eq!(
        entries(&f),
        vec![(EventTime::new(0x6500_0000, 0), json!({"message": "hi"}))]
    );
}

#[test]
fn message_mode_with_event_time_and_chunk() {
    let bytes = cat(&[
        &[0x94], // [tag, time, record, options]
        &[0xa1, b't'],
        EVENT_TIME,
        RECORD,
        &[0x81, 0xa5, b'c', b'h', b'u', b'n', b'k', 0xa2, b'i', b'd'], // {"chunk": "id"}
    ]);
    let f = decode_all(&bytes).remove(0);
    assert_eq!(f.options.chunk.as_deref(), Some(&b"id"[..]));
    assert_eq!(
        entries(&f),
        vec![(EventTime::new(1, 2), json!({"message": "hi"}))]
    );
}

#[test]
fn forward_mode_slices_entries_and_reads_size() {
    let entry = cat(&[&[0x92], EVENT_TIME, RECORD]); // [time, record]
    let bytes = cat(&[
        &[0x93, 0xa1, b't'],
        &[0x92], // array of 2 entries
        &entry,
        &entry,
        &[0x81, 0xa4, b's', b'i', b'z', b'e', 0x02], // {"size": 2}
    ]);
    let f = decode_all(&bytes).remove(0);
    assert_eq!(
        (f.mode, f.count, f.options.size),
        (Mode::Forward, 2, Some(2))
    );
    assert_eq!(&f.entries[..], &cat(&[&entry, &entry])[..]);
}

#[test]
fn packed_forward_as_bin_and_as_str() {
    let entry = cat(&[&[0x92], EVENT_TIME, RECORD]);
    let stream = cat(&[&entry, &entry, &entry]);
    for marker in [0xc4u8, 0xd9] {
        // bin8 / str8 header with the stream length
        let bytes = cat(&[&[0x92, 0xa1, b't', marker, stream.len() as u8], &stream]);
        let f = decode_all(&bytes).remove(0);
        assert_eq!(
            (f.mode, f.count),
            (Mode::PackedForward, 3),
            "marker {marker:#x}"
        );
        assert_eq!(&f.entries[..], &stream[..]);
    }
}

#[test]
fn compressed_packed_forward_with_two_gzip_members() {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;
    let entry = cat(&[&[0x92], EVENT_TIME, RECORD]);
    let mut gz = Vec::new();
    for _ in 0..2 {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&entry).unwrap();
        gz.extend(enc.finish().unwrap());
    }
    let mut bytes = cat(&[&[0x93, 0xa1, b't', 0xc4, gz.len() as u8], &gz]);
    // {"compressed": "gzip"}
    bytes.extend_from_slice(&[0x81, 0xaa]);
    bytes.extend_from_slice(b"compressed");
    bytes.extend_from_slice(&[0xa4]);
    bytes.extend_from_slice(b"gzip");
    let f = decode_all(&bytes).remove(0);
    assert_eq!((f.mode, f.count), (Mode::CompressedPackedForward, 2));
    assert_eq!(&f.entries[..], &cat(&[&entry, &entry])[..]);
}

#[test]
fn frames_split_at_every_byte_decode_the_same() {
    let entry = cat(&[&[0x92], EVENT_TIME, RECORD]);
    let mut bytes = Vec::new();
    write_packed_forward(&mut bytes, "a.b", &cat(&[&entry, &entry]), 2, Some(b"c1"));
    let whole = bytes.len();
    bytes.extend(cat(&[&[0x93, 0xa1, b't'], EVENT_TIME, RECORD]));
    for split in 1..bytes.len() {
        let mut buf = BytesMut::from(&bytes[..split]);
        let mut hint = Scan::default();
        let mut got = Vec::new();
        while let Some(f) = next_frame(&mut buf, &Limits::default(), &mut hint).unwrap() {
            got.push(f);
        }
        assert_eq!(got.len(), usize::from(split >= whole), "split at {split}");
        buf.extend_from_slice(&bytes[split..]);
        while let Some(f) = next_frame(&mut buf, &Limits::default(), &mut hint).unwrap() {
            got.push(f);
        }
        assert_eq!(
            got.iter().map(|f| f.count).sum::<usize>(),
            3,
            "split at {split}"
        );
        assert_eq!(got[0].options.chunk.as_deref(), Some(&b"c1"[..]));
    }
}

#[test]
fn bad_frames_say_whether_the_connection_can_continue() {
    let limits = Limits {
        max_frame_bytes: 64,
        max_decompressed_bytes: 64,
    };
    let mut hint = Scan::default();
    // not msgpack at all: fatal
    let err = next_frame(&mut BytesMut::from(&[0x91, 0xc1][..]), &limits, &mut hint).unwrap_err();
    assert!(err.is_fatal() && err.kind() == "malformed", "{err}");
    // announces a 1000-byte bin: rejected before the bytes arrive
    let mut buf = BytesMut::from(&[0x92, 0xa1, b't', 0xc5, 0x03, 0xe8][..]);
    let mut hint = Scan::default();
    let err = next_frame(&mut buf, &limits, &mut hint).unwrap_err();
    assert_eq!(
        err,
        FrameError::TooLarge {
            size: 1006,
            limit: 64
        }
    );
    // valid msgpack, wrong shape: skipped, the next frame still decodes
    let mut buf =
        BytesMut::from(&cat(&[&[0x92, 0x01, 0x02], &[0x93, 0xa1, b't', 0x01], RECORD])[..]);
    let mut hint = Scan::default();
    let err = next_frame(&mut buf, &limits, &mut hint).unwrap_err();
    assert!(!err.is_fatal(), "{err}");
    let f = next_frame(&mut buf, &limits, &mut hint).unwrap().unwrap();
    assert_eq!(f.count, 1);
    // a record that is not a map
    let err = decode_frame(
        Bytes::from(cat(&[&[0x93, 0xa1, b't', 0x01, 0xa1, b'x']])),
        &limits,
    )
    .unwrap_err();
    assert!(
        matches!(err, FrameError::Shape(ref m) if m.contains("must be a map")),
        "{err}"
    );
    // a packed stream whose last entry is cut short
    let entry = cat(&[&[0x92], EVENT_TIME, RECORD]);
    let stream = &cat(&[&entry, &entry])[..entry.len() * 2 - 1];
    let bytes = cat(&[&[0x92, 0xa1, b't', 0xc4, stream.len() as u8], stream]);
    assert!(decode_frame(Bytes::from(bytes), &Limits::default()).is_err());
    // unknown compression
    let bytes = cat(&[
        &[0x93, 0xa1, b't', 0xc4, 0x00, 0x81, 0xaa],
        b"compressed",
        &[0xa3],
        b"zip",
    ]);
    assert!(decode_frame(Bytes::from(bytes), &Limits::default()).is_err());
}

#[test]
fn acks_parse_back_and_nothing_else_does() {
    assert_eq!(parse_ack(&ack_response(b"abc")).as_deref(), Some("abc"));
    assert_eq!(parse_ack(&[0x80]), None);
    assert_eq!(parse_ack(&[0xc0]), None);
    assert_eq!(parse_ack(&[0x81, 0xa1, b'x', 0x01]), None);
}

#[test]
fn ack_response_is_a_map_with_the_chunk() {
    let ack = ack_response(b"abc");
    let mut r = Reader::new(&ack);
    assert_eq!(to_json(&mut r), json!({"ack": "abc"}));
}

#[test]
fn captures_from_real_senders_decode_as_expected() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/forward");
    let expected: Json =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/expected.json")).unwrap())
            .unwrap();
    let files = expected.as_object().unwrap();
    assert_eq!(files.len(), 5);
    for (name, want) in files {
        let bytes = std::fs::read(format!("{dir}/{name}")).unwrap();
        let frames = decode_all(&bytes);
        let want_frames = want["frames"].as_array().unwrap();
        assert_eq!(frames.len(), want_frames.len(), "{name}: frame count");
        let mut total = 0;
        for (f, w) in frames.iter().zip(want_frames) {
            assert_eq!(f.tag, w["tag"].as_str().unwrap(), "{name}");
            assert_eq!(f.mode.as_str(), w["mode"].as_str().unwrap(), "{name}");
            let opts = &w["options"];
            assert_eq!(
                f.options.size,
                opts.get("size").and_then(Json::as_u64),
                "{name}"
            );
            assert_eq!(
                f.options.chunk.as_deref(),
                opts.get("chunk").and_then(Json::as_str).map(str::as_bytes),
                "{name}"
            );
            let got: Vec<Json> = entries(f)
                .into_iter()
                .map(|(t, rec)| json!({"time": [t.secs, t.nanos], "record": rec}))
                .collect();
            assert_eq!(&Json::Array(got), &w["entries"], "{name}");
            total += f.count;
        }
        assert_eq!(
            total as u64,
            want["records"].as_u64().unwrap(),
            "{name}: records"
        );
    }
}

#[test]
fn a_time_out_of_range_rejects_the_frame_in_every_mode() {
    let bad_times: [&[u8]; 5] = [
        &[0xcf, 0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0x7b], // 1700000000123 (ms)
        &[0xff],                                        // -1
        &[0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0],          // NaN
        &[0xd7, 0x00, 0x65, 0x53, 0xf1, 0x00, 0x77, 0x35, 0x94, 0x00], // 2e9 ns
        &[0x92, 0xce, 0xff, 0xff, 0xff, 0xff, 0x80],    // pair: u32::MAX is fine…
    ];
    for (i, time) in bad_times.iter().enumerate() {
        let entry = cat(&[&[0x92], time, RECORD]);
        let frames = [
            cat(&[&[0x93, 0xa1, b't'], time, RECORD]), // Message
            cat(&[&[0x92, 0xa1, b't', 0x91], &entry]), // Forward
            cat(&[&[0x92, 0xa1, b't', 0xc4, entry.len() as u8], &entry]), // Packed
        ];
        for (m, bytes) in frames.iter().enumerate() {
            // a pair would read as Forward mode in a Message frame
            if time[0] == 0x92 && m == 0 {
                continue;
            }
            let result = decode_frame(Bytes::copy_from_slice(bytes), &Limits::default());
            if i == 4 {
                // …the last case is the valid edge: it decodes
                let f = result.unwrap();
                assert_eq!(entries(&f)[0].0, EventTime::new(u32::MAX, 0));
                continue;
            }
            match result {
                Err(e @ FrameError::Shape(_)) => {
                    assert!(!e.is_fatal());
                    let text = e.to_string();
                    assert!(
                        ["milliseconds", "before 1970", "finite", "nanoseconds"]
                            .iter()
                            .any(|w| text.contains(w)),
                        "case {i} mode {m}: {text}"
                    );
                }
                other => panic!("case {i} mode {m}: {other:?}"),
            }
        }
    }
}

/// A CompressedPackedForward frame `[tag, bin(gz), {"compressed": "gzip"}]`.
fn compressed_frame(gz: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0x93, 0xa1, b't'];
    write::bin_header(&mut bytes, gz.len());
    bytes.extend_from_slice(gz);
    write::map_len(&mut bytes, 1);
    write::str(&mut bytes, b"compressed");
    write::str(&mut bytes, b"gzip");
    bytes
}

#[test]
fn a_gzip_bomb_is_dropped_at_the_limit_and_the_next_frame_decodes() {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;
    let limits = Limits {
        max_frame_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
    };
    // 64 MiB of zeros (not even valid entries) in about 64 KB
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(&vec![0u8; 64 << 20]).unwrap();
    let bomb = enc.finish().unwrap();
    let entry = cat(&[&[0x92], EVENT_TIME, RECORD]);
    // exactly the limit's worth of entries is accepted, one more byte is not
    let n = (1 << 20) / entry.len();
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(&entry.repeat(n)).unwrap();
    let fits = enc.finish().unwrap();
    let mut stream = compressed_frame(&bomb);
    stream.extend(compressed_frame(&fits));
    let mut buf = BytesMut::from(&stream[..]);
    let mut hint = Scan::default();
    let err = next_frame(&mut buf, &limits, &mut hint).unwrap_err();
    assert_eq!(err, FrameError::Inflated { limit: 1 << 20 });
    assert!(!err.is_fatal());
    assert_eq!(err.kind(), "decompressed_too_large");
    let f = next_frame(&mut buf, &limits, &mut hint).unwrap().unwrap();
    assert_eq!((f.mode, f.count), (Mode::CompressedPackedForward, n));
    assert!(buf.is_empty());
    let tight = Limits {
        max_frame_bytes: 1 << 20,
        max_decompressed_bytes: n * entry.len(),
    };
    let f = decode_frame(Bytes::from(compressed_frame(&fits)), &tight).unwrap();
    assert_eq!(f.count, n);
    let tighter = Limits {
        max_decompressed_bytes: n * entry.len() - 1,
        ..tight
    };
    let err = decode_frame(Bytes::from(compressed_frame(&fits)), &tighter).unwrap_err();
    assert!(matches!(err, FrameError::Inflated { .. }), "{err}");
}
