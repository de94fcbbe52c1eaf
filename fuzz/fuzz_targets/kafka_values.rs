//! The Kafka source's message decoding (`sources::kafka::decode`): every
//! message value comes from whoever produced to the topic.
//!
//! Byte 0 picks the value format (its value mod 3: raw, json, msgpack),
//! whether the message has a key (bit 2) and a timestamp (bit 3), and
//! whether the key, partition, offset and timestamp fields are asked for
//! (bit 4). Bytes 1..=8 are the timestamp (milliseconds, any i64). The rest
//! is the value.
//!
//! Checked:
//! * nothing panics, and stack use stays bounded (the checks run on the
//!   small stack of `common.rs`);
//! * on success exactly one well-formed `[time, map]` forward entry is
//!   appended, and its map holds the value's pairs plus one per field asked
//!   for that the message has;
//! * on error nothing is appended;
//! * `raw` always succeeds, with the value as `message`; `json` succeeds for
//!   every object serde_json reads that is not refused as too deep
//!   (`too_deep`, the HTTP source's limit).

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::protocol::forward::count_entries;
use logferry::protocol::msgpack::{Reader, Value};
use logferry::sources::http::decode::too_deep;
use logferry::sources::kafka::decode::{encode_entry, Message};
use logferry::sources::kafka::KafkaSourceConfig;

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let (head, ts, value) = (data[0], &data[1..9], &data[9..]);
    let format = ["raw", "json", "msgpack"][usize::from(head % 3)];
    let fields = if head & 16 != 0 {
        "key_field = \"key\"\npartition_field = \"partition\"\noffset_field = \"offset\"\ntimestamp_field = \"ts\"\n"
    } else {
        ""
    };
    let config: KafkaSourceConfig = toml::from_str(&format!(
        "brokers = [\"b:9092\"]\ngroup_id = \"g\"\ntopics = [\"t\"]\nformat = \"{format}\"\n{fields}"
    ))
    .expect("a valid source config");
    let m = Message {
        value: Some(value),
        key: (head & 4 != 0).then_some(&b"the key"[..]),
        partition: 3,
        offset: 42,
        timestamp_ms: (head & 8 != 0).then(|| i64::from_be_bytes(ts.try_into().unwrap())),
    };
    let mut out = vec![0x01];
    let result = encode_entry(&config, &m, &mut out);
    let Ok(()) = result else {
        assert_eq!(out, [0x01], "an error appends nothing");
        if format == "raw" {
            panic!("raw failed: {result:?}");
        }
        if format == "json" && !too_deep(value) {
            if let Ok(serde_json::Value::Object(_)) = serde_json::from_slice(value) {
                panic!("a JSON object was refused: {result:?}");
            }
        }
        return;
    };
    let entry = &out[1..];
    assert_eq!(count_entries(entry).ok(), Some(1), "one well-formed entry");
    let mut r = Reader::new(entry);
    assert_eq!(r.read_array_len().ok(), Some(2));
    r.skip().expect("a time");
    let Ok(Value::Map(pairs)) = r.read() else {
        panic!("the record is not a map");
    };
    let asked = if head & 16 != 0 {
        usize::from(m.key.is_some()) + 2 + usize::from(m.timestamp_ms.is_some())
    } else {
        0
    };
    let own = match format {
        "raw" => 1,
        "json" => match serde_json::from_slice(value) {
            Ok(serde_json::Value::Object(o)) => o.len(),
            other => panic!("json accepted a value serde_json reads as {other:?}"),
        },
        _ => match Reader::new(value).read() {
            Ok(Value::Map(n)) => n,
            other => panic!("msgpack accepted a value that starts {other:?}"),
        },
    };
    assert_eq!(pairs, own + asked, "pairs of the record");
    if format == "raw" {
        assert_eq!(r.read().ok(), Some(Value::Str(b"message")));
        assert_eq!(
            r.read().ok(),
            Some(Value::Str(value)),
            "raw keeps the value as it is"
        );
    }
}
