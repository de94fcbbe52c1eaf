//! The mapping of records to OTLP log records, read back with prost from
//! the encoded request.

use bytes::Bytes;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use prost::Message as _;

use super::config::OtlpSinkConfig;
use super::encode::{Grouped, LogEncoder, SCOPE_NAME};
use crate::event::{Batch, EventTime, Records};
use crate::protocol::json::object_to_msgpack;
use crate::protocol::msgpack::write;

const OBSERVED: u64 = 1_800_000_000_000_000_000;

fn encoder(extra: &str) -> LogEncoder {
    let c: OtlpSinkConfig =
        toml::from_str(&format!("endpoint = \"http://h:4318\"\n{extra}")).unwrap();
    c.validate().unwrap();
    LogEncoder::new(&c.sink)
}

/// `[time, record]` entries of JSON objects (and raw msgpack maps).
fn entries(records: &[Vec<u8>]) -> Batch {
    let mut out = Vec::new();
    for (i, map) in records.iter().enumerate() {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, 1_700_000_000 + i as u32, 5);
        out.extend_from_slice(map);
    }
    Batch::new(
        "t".into(),
        Records::Entries(Bytes::from(out)),
        records.len(),
    )
}

fn json(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    object_to_msgpack(&mut out, text.as_bytes()).unwrap();
    out
}

/// The request for `batches`, encoded and decoded again.
fn export(enc: &LogEncoder, batches: &[Batch]) -> ExportLogsServiceRequest {
    let mut g = Grouped::default();
    for b in batches {
        enc.batch(b, OBSERVED, &mut g).unwrap();
    }
    let bytes = enc.request(g);
    ExportLogsServiceRequest::decode(&bytes[..]).unwrap()
}

fn records(req: &ExportLogsServiceRequest) -> Vec<LogRecord> {
    req.resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .flat_map(|s| s.log_records.clone())
        .collect()
}

fn one(enc: &LogEncoder, map: Vec<u8>) -> LogRecord {
    let r = records(&export(enc, &[entries(&[map])]));
    assert_eq!(r.len(), 1);
    r[0].clone()
}

fn attr<'a>(kvs: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    kvs.iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn s(text: &str) -> Any {
    Any::StringValue(text.into())
}

#[test]
fn message_is_the_body_and_every_other_field_an_attribute_with_its_type() {
    let enc = encoder("");
    let r = one(
        &enc,
        json(
            r#"{"message":"hello","n":-7,"big":18446744073709551615,"f":1.5,"ok":true,
                "none":null,"tags":["a",1],"http":{"status":200,"h":{"x":"y"}}}"#,
        ),
    );
    assert_eq!(r.time_unix_nano, 1_700_000_000 * 1_000_000_000 + 5);
    assert_eq!(r.observed_time_unix_nano, OBSERVED);
    assert_eq!(r.body.unwrap().value, Some(s("hello")));
    let a = &r.attributes;
    assert_eq!(a.len(), 7, "{a:?}");
    assert_eq!(attr(a, "n"), Some(&Any::IntValue(-7)));
    assert_eq!(attr(a, "big"), Some(&s("18446744073709551615")));
    assert_eq!(attr(a, "f"), Some(&Any::DoubleValue(1.5)));
    assert_eq!(attr(a, "ok"), Some(&Any::BoolValue(true)));
    assert_eq!(attr(a, "none"), None, "null is an empty value");
    let Some(Any::ArrayValue(tags)) = attr(a, "tags") else {
        panic!("{a:?}")
    };
    assert_eq!(tags.values[0].value, Some(s("a")));
    assert_eq!(tags.values[1].value, Some(Any::IntValue(1)));
    let Some(Any::KvlistValue(http)) = attr(a, "http") else {
        panic!("{a:?}")
    };
    assert_eq!(attr(&http.values, "status"), Some(&Any::IntValue(200)));
    let Some(Any::KvlistValue(h)) = attr(&http.values, "h") else {
        panic!("{http:?}")
    };
    assert_eq!(attr(&h.values, "x"), Some(&s("y")));
}

#[test]
fn binary_float32_and_text_that_is_not_utf8_keep_their_kinds() {
    let mut map = Vec::new();
    write::map_len(&mut map, 4);
    write::str(&mut map, b"log");
    write::str(&mut map, b"line");
    write::str(&mut map, b"bin");
    write::bin_header(&mut map, 3);
    map.extend_from_slice(&[0, 1, 255]);
    write::str(&mut map, b"f32");
    map.push(0xca);
    map.extend_from_slice(&0.1f32.to_be_bytes());
    write::str(&mut map, b"latin1");
    write::str(&mut map, b"\xdcber");
    let r = one(&encoder(""), map);
    assert_eq!(
        r.body.unwrap().value,
        Some(s("line")),
        "`log` is a body key"
    );
    let a = &r.attributes;
    assert_eq!(attr(a, "bin"), Some(&Any::BytesValue(vec![0, 1, 255])));
    assert_eq!(attr(a, "f32"), Some(&Any::DoubleValue(0.1)));
    assert_eq!(
        attr(a, "latin1"),
        Some(&Any::BytesValue(b"\xdcber".to_vec()))
    );
}

#[test]
fn a_record_without_a_body_key_is_its_own_body_and_a_line_a_string_body() {
    let enc = encoder("");
    let r = one(&enc, json(r#"{"a":1,"b":"x","level":"info"}"#));
    assert!(r.attributes.is_empty());
    assert_eq!(r.severity_number, 9, "the severity is still read");
    let Some(Any::KvlistValue(body)) = r.body.unwrap().value else {
        panic!("a key/value list body")
    };
    assert_eq!(body.values.len(), 2, "{body:?}");
    assert_eq!(attr(&body.values, "a"), Some(&Any::IntValue(1)));
    assert_eq!(attr(&body.values, "b"), Some(&s("x")));

    let lines = Batch::new(
        "t".into(),
        Records::Lines {
            data: Bytes::from_static(b"one\ntwo\n"),
            time: EventTime::new(10, 0),
        },
        2,
    );
    let r = records(&export(&enc, &[lines]));
    assert_eq!(r.len(), 2);
    assert_eq!(r[1].body.as_ref().unwrap().value, Some(s("two")));
    assert_eq!(r[1].time_unix_nano, 10_000_000_000);
    // a map body when configured so: the message as it is
    let enc = encoder("body_keys = [\"payload\"]");
    let r = one(&enc, json(r#"{"payload":{"k":[1]},"message":"m"}"#));
    assert!(matches!(r.body.unwrap().value, Some(Any::KvlistValue(_))));
    assert_eq!(attr(&r.attributes, "message"), Some(&s("m")));
}

#[test]
fn severity_from_a_name_or_a_number_and_kept_as_an_attribute_otherwise() {
    let enc = encoder("");
    for (field, text, number) in [
        (r#""severity":"WARN""#, "WARN", 13),
        (r#""level":"error""#, "error", 17),
        (r#""level":"verbose""#, "verbose", 0),
        (r#""level":21"#, "", 21),
    ] {
        let r = one(&enc, json(&format!(r#"{{"message":"m",{field}}}"#)));
        assert_eq!(
            (r.severity_text.as_str(), r.severity_number),
            (text, number),
            "{field}"
        );
        assert!(r.attributes.is_empty(), "{field}: {:?}", r.attributes);
    }
    // `severity` is looked for first
    let r = one(
        &enc,
        json(r#"{"message":"m","level":"info","severity":"debug"}"#),
    );
    assert_eq!(r.severity_number, 5);
    assert_eq!(attr(&r.attributes, "level"), Some(&s("info")));
    // not a severity: nothing lost
    let r = one(&enc, json(r#"{"message":"m","level":{"x":1}}"#));
    assert_eq!(r.severity_number, 0);
    assert!(attr(&r.attributes, "level").is_some());
    let enc = encoder("severity_keys = [\"lvl\"]");
    let r = one(
        &enc,
        json(r#"{"message":"m","lvl":"fatal","level":"info"}"#),
    );
    assert_eq!(r.severity_number, 21);
    assert_eq!(attr(&r.attributes, "level"), Some(&s("info")));
}

#[test]
fn trace_and_span_ids_from_hex_and_kept_as_attributes_when_not_ids() {
    let enc = encoder("");
    let r = one(
        &enc,
        json(
            r#"{"message":"m","trace_id":"5B8EFFF798038103D269B633813FC60C","span_id":"eee19b7ec3c1b174"}"#,
        ),
    );
    assert_eq!(
        r.trace_id,
        vec![
            0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f,
            0xc6, 0x0c
        ]
    );
    assert_eq!(
        r.span_id,
        vec![0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74]
    );
    assert!(r.attributes.is_empty());
    for bad in [
        r#""trace_id":"xyz""#,
        r#""trace_id":"+b8efff798038103d269b633813fc60c""#,
        r#""trace_id":"5b8efff798038103d269b633813fc60""#,
        r#""trace_id":12"#,
    ] {
        let r = one(&enc, json(&format!(r#"{{"message":"m",{bad}}}"#)));
        assert!(r.trace_id.is_empty(), "{bad}");
        assert!(attr(&r.attributes, "trace_id").is_some(), "{bad}");
    }
}

#[test]
fn records_are_grouped_by_resource_with_the_static_attributes_filling_in() {
    let enc = encoder(
        "resource_attributes = { \"service.name\" = \"default\", \"deployment.environment\" = \"prod\" }",
    );
    let web = r#""resource":{"service.name":"web","host.name":"a"}"#;
    let db = r#""resource":{"service.name":"db"}"#;
    let batch = entries(&[
        json(&format!(r#"{{"message":"0",{web}}}"#)),
        json(&format!(r#"{{"message":"1",{db}}}"#)),
        json(r#"{"message":"2"}"#),
        json(&format!(r#"{{"message":"3",{web}}}"#)),
        json(r#"{"message":"4","resource":"not a map"}"#),
    ]);
    let req = export(&enc, &[batch]);
    let groups: Vec<(Option<Any>, Vec<String>)> = req
        .resource_logs
        .iter()
        .map(|rl| {
            let attrs = &rl.resource.as_ref().unwrap().attributes;
            assert_eq!(
                attr(attrs, "deployment.environment"),
                Some(&s("prod")),
                "{attrs:?}"
            );
            assert_eq!(rl.scope_logs.len(), 1);
            assert_eq!(rl.scope_logs[0].scope.as_ref().unwrap().name, SCOPE_NAME);
            let bodies = rl.scope_logs[0]
                .log_records
                .iter()
                .map(|r| match &r.body {
                    Some(AnyValue {
                        value: Some(Any::StringValue(b)),
                    }) => b.clone(),
                    other => panic!("{other:?}"),
                })
                .collect();
            (attr(attrs, "service.name").cloned(), bodies)
        })
        .collect();
    assert_eq!(
        groups,
        vec![
            (Some(s("web")), vec!["0".to_string(), "3".to_string()]),
            (Some(s("db")), vec!["1".to_string()]),
            (Some(s("default")), vec!["2".to_string(), "4".to_string()]),
        ]
    );
    let web_attrs = &req.resource_logs[0].resource.as_ref().unwrap().attributes;
    assert_eq!(attr(web_attrs, "host.name"), Some(&s("a")));
    // the resource is no attribute; a resource that is no map is one
    let all = records(&req);
    assert!(attr(&all[0].attributes, "resource").is_none());
    assert_eq!(attr(&all[4].attributes, "resource"), Some(&s("not a map")));
}

#[test]
fn nesting_deeper_than_the_limit_is_sent_as_bytes_not_recursed() {
    let mut map = Vec::new();
    write::map_len(&mut map, 2);
    write::str(&mut map, b"message");
    write::str(&mut map, b"m");
    write::str(&mut map, b"deep");
    for _ in 0..10_000 {
        write::array_len(&mut map, 1);
    }
    write::uint(&mut map, 1);
    let r = one(&encoder(""), map);
    let mut v = attr(&r.attributes, "deep").unwrap().clone();
    let mut depth = 0;
    while let Any::ArrayValue(a) = v {
        v = a.values[0].value.clone().unwrap();
        depth += 1;
    }
    assert_eq!(depth, 32);
    assert!(matches!(v, Any::BytesValue(b) if b.len() == 10_000 - 32 + 1));
}

#[test]
fn a_batch_that_cannot_be_read_adds_nothing() {
    let enc = encoder("");
    let mut g = Grouped::default();
    enc.batch(&entries(&[json(r#"{"message":"ok"}"#)]), OBSERVED, &mut g)
        .unwrap();
    // a map announcing two pairs with one
    let mut bad = json(r#"{"message":"a"}"#);
    bad[0] = 0x82;
    // before it: a record of the same resource and one of a new one
    let batch = entries(&[
        json(r#"{"message":"b"}"#),
        json(r#"{"message":"c","resource":{"service.name":"new"}}"#),
        bad,
    ]);
    assert!(enc.batch(&batch, OBSERVED, &mut g).is_err());
    assert_eq!(g.records, 1);
    // the batch after it is kept, its new resource too
    enc.batch(
        &entries(&[json(r#"{"message":"d","resource":{"service.name":"new"}}"#)]),
        OBSERVED,
        &mut g,
    )
    .unwrap();
    let req = ExportLogsServiceRequest::decode(&enc.request(g)[..]).unwrap();
    assert_eq!(req.resource_logs.len(), 2);
    let bodies: Vec<_> = records(&req)
        .into_iter()
        .map(|r| r.body.unwrap().value.unwrap())
        .collect();
    assert_eq!(bodies, [s("ok"), s("d")]);
}
