//! Records → push bodies, read back: protobuf with prost (after snappy),
//! JSON with serde_json.

use bytes::Bytes;
use prost::Message as _;

use super::config::LokiSinkConfig;
use super::encode::{Encoded, LokiEncoder, PushRequest};
use crate::event::{Batch, Records};
use crate::protocol::msgpack::write;

fn batch(records: &[(u32, serde_json::Value)]) -> Batch {
    let mut e = Vec::new();
    for (secs, r) in records {
        write::array_len(&mut e, 2);
        write::event_time(&mut e, *secs, 7);
        crate::protocol::json::object_to_msgpack(&mut e, r.to_string().as_bytes()).unwrap();
    }
    Batch::new(
        "app.web".into(),
        Records::Entries(Bytes::from(e)),
        records.len(),
    )
}

fn encoder(extra: &str) -> LokiEncoder {
    let c: LokiSinkConfig = toml::from_str(&format!("endpoint = \"http://h:1\"\n{extra}")).unwrap();
    c.validate().unwrap();
    LokiEncoder::new(&c.sink).unwrap()
}

fn records() -> Vec<(u32, serde_json::Value)> {
    vec![
        (
            30,
            serde_json::json!({"message": "c", "level": "info", "trace": "t3"}),
        ),
        (
            10,
            serde_json::json!({"message": "a", "level": "info", "trace": "t1"}),
        ),
        (20, serde_json::json!({"message": "b", "level": "warn"})),
        (
            5,
            serde_json::json!({"message": "z", "level": "info", "trace": ""}),
        ),
    ]
}

#[test]
fn protobuf_pushes_streams_in_time_order_with_metadata() {
    let mut enc = encoder(
        "labels = { job = \"${tag}\", level = \"{level}\", none = \"{nope}\" }\n\
         structured_metadata = { trace_id = \"${record.trace}\" }\n\
         remove_label_fields = true",
    );
    let mut e = Encoded::default();
    enc.batch(0, &batch(&records()), &mut e).unwrap();
    assert_eq!(e.entries.len(), 4);
    let body = enc.body(&e, &[0, 1, 2, 3]);
    let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
    let push = PushRequest::decode(raw.as_slice()).unwrap();
    assert_eq!(push.streams.len(), 2);
    let info = &push.streams[0];
    assert_eq!(info.labels, "{job=\"app.web\", level=\"info\"}");
    let times: Vec<i64> = info
        .entries
        .iter()
        .map(|e| e.timestamp.as_ref().unwrap().seconds)
        .collect();
    assert_eq!(times, [5, 10, 30], "one stream's entries in time order");
    assert_eq!(info.entries[1].timestamp.as_ref().unwrap().nanos, 7);
    // the label's field is left out of the line; the others stay
    assert_eq!(info.entries[1].line, r#"{"message":"a","trace":"t1"}"#);
    let md: Vec<_> = info.entries[1]
        .structured_metadata
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(md, [("trace_id", "t1")]);
    // an empty value is left out
    assert!(info.entries[0].structured_metadata.is_empty());
    assert_eq!(push.streams[1].labels, "{job=\"app.web\", level=\"warn\"}");
    // a part of the push holds only its entries
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&enc.body(&e, &[2]))
        .unwrap();
    let push = PushRequest::decode(raw.as_slice()).unwrap();
    assert_eq!(push.streams.len(), 1);
    assert_eq!(push.streams[0].entries.len(), 1);
}

#[test]
fn json_pushes_and_message_lines() {
    let mut enc = encoder(
        "encoding = \"json\"\nline_format = \"message\"\n\
         labels = { level = \"{level}\", q = \"a\\\"b\" }\n\
         structured_metadata = { trace_id = \"{trace}\" }",
    );
    let mut e = Encoded::default();
    enc.batch(0, &batch(&records()), &mut e).unwrap();
    let body = enc.body(&e, &[0, 1, 2, 3]);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let streams = v["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 2);
    assert_eq!(
        streams[0]["stream"],
        serde_json::json!({"level": "info", "q": "a\"b"})
    );
    assert_eq!(
        streams[0]["values"],
        serde_json::json!([
            ["5000000007", "z"],
            ["10000000007", "a", {"trace_id": "t1"}],
            ["30000000007", "c", {"trace_id": "t3"}]
        ])
    );
    assert_eq!(e.streams[0].text, "{level=\"info\", q=\"a\\\"b\"}");
}

#[test]
fn gzip_json_is_announced_and_readable() {
    let enc = encoder("encoding = \"json\"\ncompression = \"gzip\"");
    assert_eq!(enc.content_encoding(), Some("gzip"));
    assert_eq!(enc.content_type(), "application/json");
    let mut enc = enc;
    let mut e = Encoded::default();
    enc.batch(0, &batch(&records()), &mut e).unwrap();
    let body = enc.body(&e, &[0]);
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&body[..]), &mut text).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["streams"][0]["stream"],
        serde_json::json!({"job": "logferry"})
    );
    assert_eq!(
        encoder("").content_encoding(),
        None,
        "protobuf is snappy-compressed without Content-Encoding"
    );
}
