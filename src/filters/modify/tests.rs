use bytes::Bytes;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{EventTime, Records};
use crate::filters::field::map_fields;
use crate::protocol::msgpack::{Reader, Value};

fn filter(toml: &str) -> ModifyFilter {
    let config: ModifyConfig = toml::from_str(toml).unwrap();
    config.validate().unwrap();
    let pattern = TagPattern::new("**").unwrap();
    ModifyFilter::new("m", pattern, &config, &Registry::new()).unwrap()
}

fn s(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    write::str(&mut out, text.as_bytes());
    out
}

/// Entries `[time, {k: v…}]` of string values, tag `app.web`.
fn entries(records: &[&[(&str, &str)]]) -> Batch {
    let mut out = Vec::new();
    for fields in records {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, 7, 9);
        write::map_len(&mut out, fields.len());
        for (k, v) in fields.iter() {
            write::str(&mut out, k.as_bytes());
            out.extend_from_slice(&s(v));
        }
    }
    Batch::new(
        "app.web".into(),
        Records::Entries(out.into()),
        records.len(),
    )
}

/// Every record as `k=v` pairs in order, with its time.
fn show(batch: &Batch) -> Vec<(EventTime, String)> {
    let mut out = Vec::new();
    batch
        .for_each_record(|time, r| {
            let crate::event::RecordRef::Map(m) = r else {
                panic!("a line left")
            };
            let fields = map_fields(m).unwrap();
            let text: Vec<String> = fields
                .iter()
                .map(|(k, v)| {
                    let v = match Reader::new(v).read().unwrap() {
                        Value::Str(v) => String::from_utf8_lossy(v).into_owned(),
                        other => format!("{other:?}"),
                    };
                    format!("{}={v}", String::from_utf8_lossy(k))
                })
                .collect();
            out.push((time, text.join(" ")));
        })
        .unwrap();
    out
}

#[test]
fn remove_rename_set_and_set_if_missing_apply_in_that_order() {
    let f = filter(
        r#"
remove = ["password"]
rename = { msg = "message", old = "kept" }
set = { service = "${tag[1]}", where = "${tag}", password = "new" }
set_if_missing = { level = "info" }
"#,
    );
    let out = f
        .filter(entries(&[
            &[("msg", "hi"), ("password", "x"), ("level", "warn")],
            &[
                ("message", "replaced by the rename"),
                ("msg", "two"),
                ("service", "old"),
            ],
        ]))
        .unwrap();
    let got = show(&out);
    assert_eq!(got[0].0, EventTime::new(7, 9), "time kept");
    assert_eq!(
        got[0].1,
        "message=hi level=warn password=new service=web where=app.web"
    );
    assert_eq!(
        got[1].1,
        "message=two password=new service=web where=app.web level=info"
    );
    assert_eq!(out.count, 2);
}

#[test]
fn lines_become_maps_with_their_message_and_time() {
    let f = filter("set = { host = '${hostname}' }");
    let batch = Batch::new(
        "t".into(),
        Records::Lines {
            data: Bytes::from_static(b"one\n\xff two\n"),
            time: EventTime::new(5, 6),
        },
        2,
    );
    let out = f.filter(batch).unwrap();
    let got = show(&out);
    let host = crate::format::hostname();
    assert_eq!(
        got[0],
        (EventTime::new(5, 6), format!("message=one host={host}"))
    );
    assert_eq!(got[1].1, format!("message=\u{fffd} two host={host}"));
}

#[test]
fn a_batch_it_does_not_change_is_passed_on_as_it_came() {
    let f = filter("remove = ['absent']\nrename = { nope = 'x' }\nset_if_missing = { a = '1' }");
    let batch = entries(&[&[("a", "0")], &[("a", "2"), ("b", "3")]]);
    let before = batch.records.bytes().as_ptr();
    let out = f.filter(batch).unwrap();
    assert_eq!(out.records.bytes().as_ptr(), before, "not re-encoded");
}

#[test]
fn unchanged_records_keep_their_bytes_beside_changed_ones() {
    let f = filter("remove = ['secret']");
    let batch = entries(&[&[("a", "0")], &[("secret", "s"), ("b", "1")], &[("c", "2")]]);
    let out = f.filter(batch).unwrap();
    let got: Vec<String> = show(&out).into_iter().map(|(_, t)| t).collect();
    assert_eq!(got, ["a=0", "b=1", "c=2"]);
}

#[test]
fn the_acknowledgement_travels_with_the_changed_batch() {
    let (tx, rx) = std::sync::mpsc::channel();
    let f = filter("set = { a = 'b' }");
    let batch = entries(&[&[("x", "y")]]).with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
    let out = f.filter(batch).unwrap();
    assert!(rx.try_recv().is_err(), "not settled by the filter");
    drop(out);
    assert_eq!(rx.try_recv().unwrap(), AckOutcome::Accepted);
}

#[test]
fn bad_tables_are_config_errors() {
    let bad = |t: &str| {
        let c: ModifyConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("").contains("needs"));
    assert!(bad("set = { a = '${nope}' }").contains("set.a"));
    assert!(bad("set = { a = '${tag' }").contains("closing"));
    assert!(toml::from_str::<ModifyConfig>("add = { a = 'x' }").is_err());
}

#[test]
fn keep_only_then_copy() {
    let f = filter("keep_only = ['a', 'b']\ncopy = { a = 'c', b = 'a' }");
    let out = f
        .filter(entries(&[
            &[("a", "1"), ("b", "2"), ("x", "3")],
            &[("x", "only x")],
        ]))
        .unwrap();
    let got: Vec<String> = show(&out).into_iter().map(|(_, t)| t).collect();
    // copies apply in key order: a → c, then b → a (replacing a)
    assert_eq!(got, ["b=2 c=1 a=2", ""]);
}

mod nest_lift;
