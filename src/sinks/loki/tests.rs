//! Records → push bodies, read back: protobuf with prost (after snappy),
//! JSON with serde_json.

use bytes::Bytes;
use prost::Message as _;

use super::config::LokiSinkConfig;
use super::encode::{Encoded, EntryAdapter, LabelPairAdapter, LokiEncoder, PushRequest, Timestamp};
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
    // what a refused entry is logged and set aside with
    assert_eq!(
        &e.buf[e.entries[1].line.clone()],
        br#"{"message":"a","trace":"t1"}"#
    );
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
    assert_eq!(&e.buf[e.entries[2].line.clone()], b"b");
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

#[test]
fn entries_are_written_as_prost_writes_them() {
    let long = "long line ".repeat(30);
    // (seconds, nanoseconds, line, structured metadata)
    type Case<'a> = (u32, u32, &'a str, Vec<(&'a str, &'a str)>);
    let cases: Vec<Case> = vec![
        (1_700_000_000, 7, r#"{"message":"a"}"#, vec![]),
        (0, 0, "", vec![]),
        (5, 0, "x", vec![("trace_id", "t1"), ("n", "12345")]),
        (0, 999_999_999, &long, vec![("k", "v")]),
        (u32::MAX, 2_000_000_000, "é ✓", vec![]),
    ];
    for (secs, nanos, line, md) in cases {
        let mut mine = b"before".to_vec();
        let at = super::encode::write_proto_entry(
            &mut mine,
            crate::event::EventTime { secs, nanos },
            line.as_bytes(),
            md.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())),
        );
        assert_eq!(&mine[at], line.as_bytes(), "where the line is");
        let mine = &mine[b"before".len()..];
        let theirs = EntryAdapter {
            timestamp: Some(Timestamp {
                seconds: i64::from(secs),
                nanos: nanos.min(999_999_999) as i32,
            }),
            line: line.to_string(),
            structured_metadata: md
                .iter()
                .map(|(k, v)| LabelPairAdapter {
                    name: k.to_string(),
                    value: v.to_string(),
                })
                .collect(),
        }
        .encode_to_vec();
        assert_eq!(mine, theirs, "{secs}.{nanos} {line:?} {md:?}");
    }
}

#[test]
fn a_line_that_is_not_utf8_is_pushed_with_replacement_characters() {
    let mut e = Vec::new();
    write::array_len(&mut e, 2);
    write::event_time(&mut e, 10, 0);
    write::map_len(&mut e, 2);
    write::str(&mut e, b"message");
    write::str(&mut e, b"ok \xff\xfe end");
    write::str(&mut e, b"level");
    write::str(&mut e, b"in\xc3fo");
    let b = Batch::new("app".into(), Records::Entries(Bytes::from(e)), 1);
    for extra in ["line_format = \"message\"", ""] {
        let mut enc = encoder(&format!(
            "{extra}\nlabels = {{ level = \"{{level}}\" }}\nstructured_metadata = {{ l = \"{{level}}\" }}"
        ));
        let mut en = Encoded::default();
        enc.batch(0, &b, &mut en).unwrap();
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&enc.body(&en, &[0]))
            .unwrap();
        let push = PushRequest::decode(raw.as_slice()).expect("valid UTF-8 strings");
        let entry = &push.streams[0].entries[0];
        assert!(
            entry.line.contains("ok \u{fffd}\u{fffd} end"),
            "{extra}: {:?}",
            entry.line
        );
        assert_eq!(entry.structured_metadata[0].value, "in\u{fffd}fo");
        assert_eq!(push.streams[0].labels, "{level=\"in\u{fffd}fo\"}");
    }
}

#[test]
fn records_of_several_streams_in_turn_each_find_their_own() {
    let mut enc = encoder("labels = { level = \"{level}\" }");
    let recs: Vec<(u32, serde_json::Value)> = (0..9u32)
        .map(|i| {
            let level = ["a", "b", "a", "c"][i as usize % 4];
            (
                i,
                serde_json::json!({"message": format!("m{i}"), "level": level}),
            )
        })
        .collect();
    let mut e = Encoded::default();
    enc.batch(0, &batch(&recs), &mut e).unwrap();
    enc.batch(1, &batch(&recs[..2]), &mut e).unwrap();
    assert_eq!(e.streams.len(), 3);
    let got: Vec<usize> = e.entries.iter().map(|x| x.stream).collect();
    assert_eq!(got, [0, 1, 0, 2, 0, 1, 0, 2, 0, 0, 1]);
    // the room kept for the next request holds nothing of this one
    e.clear();
    enc.batch(0, &batch(&recs[1..3]), &mut e).unwrap();
    let got: Vec<usize> = e.entries.iter().map(|x| x.stream).collect();
    assert_eq!((e.streams.len(), got), (2, vec![0, 1]));
    assert_eq!(e.streams[0].text, "{level=\"b\"}");
}

#[test]
fn lines_written_in_place_are_as_prost_writes_them_whatever_the_length_before() {
    let mut guess = 1;
    // lengths whose length takes 1, 2 and 3 bytes, up and down
    for n in [0, 5, 127, 128, 16_383, 16_384, 200, 1, 70_000, 0, 3] {
        let line = "x".repeat(n);
        let mut mine = b"before".to_vec();
        let at = super::encode::write_proto_line(&mut mine, &mut guess, |out| {
            out.extend_from_slice(line.as_bytes())
        });
        assert_eq!(&mine[at], line.as_bytes(), "where the line is");
        let theirs = EntryAdapter {
            timestamp: None,
            line,
            structured_metadata: Vec::new(),
        }
        .encode_to_vec();
        assert_eq!(&mine[b"before".len()..], theirs, "a line of {n} bytes");
    }
}

#[test]
fn records_read_in_one_pass_are_the_lines_the_record_by_record_path_writes() {
    let recs: Vec<(u32, serde_json::Value)> = (0..300u32)
        .map(|i| {
            let text = "é\"\\\n".repeat(i as usize % 50);
            (
                1000 - i % 7,
                serde_json::json!({"message": text, "n": i, "neg": -(i as i64), "f": 1.5, "in": {"a": [1, null, true]}}),
            )
        })
        .collect();
    let b = batch(&recs);
    // labels of the tag only: one pass; a label of a field: record by record
    let pushes: Vec<PushRequest> = [
        "labels = { job = \"${tag}\" }",
        "labels = { job = \"{job}\" }",
    ]
    .iter()
    .map(|labels| {
        let mut enc = encoder(labels);
        let mut e = Encoded::default();
        enc.batch(0, &b, &mut e).unwrap();
        assert_eq!(e.entries.len(), recs.len());
        let all: Vec<usize> = (0..e.entries.len()).collect();
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&enc.body(&e, &all))
            .unwrap();
        PushRequest::decode(raw.as_slice()).unwrap()
    })
    .collect();
    let lines = |p: &PushRequest| -> Vec<(i64, String)> {
        p.streams[0]
            .entries
            .iter()
            .map(|e| (e.timestamp.as_ref().unwrap().seconds, e.line.clone()))
            .collect()
    };
    assert_eq!(pushes[0].streams[0].labels, "{job=\"app.web\"}");
    assert_eq!(lines(&pushes[0]), lines(&pushes[1]));
    let mut expected: Vec<(i64, serde_json::Value)> = recs
        .iter()
        .map(|(t, r)| (i64::from(*t), r.clone()))
        .collect();
    expected.sort_by_key(|(t, _)| *t);
    let got: Vec<(i64, serde_json::Value)> = lines(&pushes[0])
        .into_iter()
        .map(|(t, l)| (t, serde_json::from_str(&l).unwrap()))
        .collect();
    assert_eq!(got, expected);
    // a batch cut short is refused whole
    let Records::Entries(bytes) = &b.records else {
        unreachable!()
    };
    let cut = Batch::new(
        "app".into(),
        Records::Entries(bytes.slice(..bytes.len() - 3)),
        recs.len(),
    );
    assert!(encoder("").batch(0, &cut, &mut Encoded::default()).is_err());
}
