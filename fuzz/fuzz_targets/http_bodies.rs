//! The HTTP source's body decoders (`sources::http::decode`): JSON, NDJSON,
//! msgpack, text lines and form fields → records, on arbitrary bytes.
//!
//! Byte 0 picks the body kind (low 3 bits) and whether a `time` query
//! parameter is given (bit 3); the rest is the body.
//!
//! Checked:
//! * nothing panics, whatever the bytes, and stack use stays bounded (the
//!   checks run on the small stack of `common.rs`);
//! * a decoded body iterates as exactly `count` records: entries are
//!   well-formed `[time, map]` forward entries (`count_entries` agrees), text
//!   is `count` newline-terminated lines: the body's lines, each without
//!   one trailing `\r`, empty ones left out;
//! * with a `time` parameter every record has that time;
//! * a JSON object without its own `time` field keeps its keys, in order.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use logferry::event::{Batch, EventTime, RecordRef, Records};
use logferry::protocol::forward::count_entries;
use logferry::protocol::msgpack::{Reader, Value};
use logferry::sources::http::decode::{decode, BodyKind};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

const NOW: EventTime = EventTime { secs: 1_000, nanos: 0 };
const PARAM: EventTime = EventTime { secs: 7, nanos: 5 };

fn check(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let kind = match head & 7 {
        0 | 5 => BodyKind::Json,
        1 | 6 => BodyKind::Ndjson,
        2 => BodyKind::Msgpack,
        3 => BodyKind::Text,
        _ => BodyKind::Form,
    };
    let time = (head & 8 != 0).then_some(PARAM);
    let Ok(decoded) = decode(kind, Bytes::copy_from_slice(body), time, NOW) else {
        return;
    };
    match &decoded.records {
        Records::Entries(e) => {
            assert_ne!(kind, BodyKind::Text, "text decodes to lines");
            assert_eq!(count_entries(e).ok(), Some(decoded.count), "count_entries disagrees");
        }
        Records::Lines { data, .. } => {
            assert_eq!(kind, BodyKind::Text, "only text decodes to lines");
            // the lines of the body, each without one trailing \r, empty ones left out
            let want: Vec<&[u8]> = body
                .split(|c| *c == b'\n')
                .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
                .filter(|l| !l.is_empty())
                .collect();
            assert!(data.is_empty() || data.ends_with(b"\n"), "last line without newline");
            let got: Vec<&[u8]> = data.split_inclusive(|c| *c == b'\n').map(|l| &l[..l.len() - 1]).collect();
            assert_eq!(got, want, "text lines");
        }
    }
    let batch = Batch::new("t".into(), decoded.records, decoded.count);
    let mut n = 0;
    let mut keys_of_first = None;
    batch
        .for_each_record(|t, rec| {
            n += 1;
            if time.is_some() {
                assert_eq!(t, PARAM, "the time parameter is every record's time");
            }
            if let RecordRef::Map(m) = rec {
                let mut r = Reader::new(m);
                let Ok(Value::Map(pairs)) = r.read() else {
                    panic!("a record is not a map");
                };
                if n == 1 && kind == BodyKind::Json {
                    let mut keys = Vec::new();
                    for _ in 0..pairs {
                        match r.read() {
                            Ok(Value::Str(k)) => keys.push(String::from_utf8_lossy(k).into_owned()),
                            other => panic!("key {other:?}"),
                        }
                        r.skip().expect("a value after the key");
                    }
                    keys_of_first = Some(keys);
                }
            }
        })
        .expect("decoded records iterate");
    assert_eq!(n, decoded.count, "records iterated vs count");

    if kind == BodyKind::Json {
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(body) {
            if !map.contains_key("time") {
                let want: Vec<String> = map.keys().cloned().collect();
                assert_eq!(keys_of_first, Some(want), "an object keeps its keys in order");
            }
        }
    }
}
