use std::sync::mpsc;

use bytes::Bytes;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{EventTime, Records};
use crate::protocol::msgpack::write;

fn filter(toml: &str) -> GrepFilter {
    let config: GrepConfig = toml::from_str(toml).unwrap();
    config.validate().unwrap();
    let pattern = TagPattern::new("**").unwrap();
    GrepFilter::new("g", pattern, &config, &Registry::new()).unwrap()
}

fn lines(text: &'static str) -> Batch {
    let count = text.lines().count();
    let records = Records::Lines {
        data: Bytes::from_static(text.as_bytes()),
        time: EventTime::new(1, 0),
    };
    Batch::new("t".into(), records, count)
}

/// Entries `[time, {FIELD: value…}]`, values given already encoded.
fn entries(records: &[&[(&str, Vec<u8>)]]) -> Batch {
    let mut out = Vec::new();
    for fields in records {
        write::array_len(&mut out, 2);
        write::uint(&mut out, 1);
        write::map_len(&mut out, fields.len());
        for (k, v) in fields.iter() {
            write::str(&mut out, k.as_bytes());
            out.extend_from_slice(v);
        }
    }
    Batch::new("t".into(), Records::Entries(out.into()), records.len())
}

fn s(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    write::str(&mut out, text.as_bytes());
    out
}

fn messages(batch: &Batch) -> Vec<String> {
    let mut out = Vec::new();
    batch
        .for_each_record(|_, r| {
            let v = FieldPath::parse("message").unwrap().lookup(r).unwrap();
            v.with_text(|t| out.push(String::from_utf8_lossy(t).into_owned()));
        })
        .unwrap();
    out
}

#[test]
fn lines_keep_what_include_matches_and_lose_what_exclude_matches() {
    let f = filter("include = { message = 'err' }\nexclude = { message = 'health' }");
    let out = f
        .filter(lines("1 err\n2 ok\n3 err health\n4 err\n"))
        .unwrap();
    assert_eq!(out.count, 2);
    assert_eq!(messages(&out), ["1 err", "4 err"]);
    assert_eq!(f.dropped.get(), 2);
    assert_eq!(f.records.get(), 4);
}

#[test]
fn a_batch_that_keeps_every_record_is_the_same_payload() {
    let f = filter("exclude = { message = 'never' }");
    let batch = lines("a\nb\n");
    let before = batch.records.bytes().as_ptr();
    let out = f.filter(batch).unwrap();
    assert_eq!(out.records.bytes().as_ptr(), before, "not copied");
    assert_eq!(f.dropped.get(), 0);
}

#[test]
fn a_batch_with_nothing_left_settles_as_accepted_once_dropped() {
    let (tx, rx) = mpsc::channel();
    let f = filter("include = { message = '^keep' }");
    let batch = lines("a\nb\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
    assert!(f.filter(batch).is_none());
    assert_eq!(rx.try_recv().unwrap(), AckOutcome::Accepted);
    assert_eq!(f.dropped.get(), 2);
}

#[test]
fn the_records_left_keep_the_acknowledgement_of_their_batch() {
    let (tx, rx) = mpsc::channel();
    let f = filter("include = { message = 'b' }");
    let batch = lines("a\nb\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
    let out = f.filter(batch).unwrap();
    assert!(rx.try_recv().is_err(), "not settled before the sinks");
    out.ack.reject();
    drop(out);
    assert_eq!(rx.try_recv().unwrap(), AckOutcome::Rejected);
}

#[test]
fn map_records_by_field_nested_field_and_value_type() {
    let f = filter(r#"include = { "$kubernetes['labels']['app']" = '^web$', status = '^5' }"#);
    let mut labels = Vec::new();
    write::map_len(&mut labels, 1);
    write::str(&mut labels, b"labels");
    write::map_len(&mut labels, 1);
    write::str(&mut labels, b"app");
    write::str(&mut labels, b"web");
    let mut status_500 = Vec::new();
    write::uint(&mut status_500, 503);
    let mut status_200 = Vec::new();
    write::uint(&mut status_200, 200);
    let batch = entries(&[
        &[
            ("kubernetes", labels.clone()),
            ("status", status_500.clone()),
            ("message", s("one")),
        ],
        &[
            ("kubernetes", labels.clone()),
            ("status", status_200),
            ("message", s("two")),
        ],
        &[("status", status_500.clone()), ("message", s("no labels"))],
        &[
            ("kubernetes", s("web")),
            ("status", status_500),
            ("message", s("labels not a map")),
        ],
    ]);
    let out = f.filter(batch).unwrap();
    assert_eq!(messages(&out), ["one"]);
    assert_eq!(f.dropped.get(), 3);
}

#[test]
fn non_utf8_values_are_matched_as_bytes_and_missing_fields_do_not_match() {
    let f = filter("exclude = { user = '^root$' }");
    let mut bad = Vec::new();
    write::str(&mut bad, b"\xff\xfe root");
    let batch = entries(&[
        &[("user", s("root")), ("message", s("dropped"))],
        &[("user", bad), ("message", s("odd bytes"))],
        &[("message", s("no user"))],
    ]);
    let out = f.filter(batch).unwrap();
    assert_eq!(messages(&out), ["odd bytes", "no user"]);
}

#[test]
fn or_keeps_a_record_any_rule_matches() {
    let f = filter("op = 'or'\ninclude = { message = '^a', level = 'error' }");
    let batch = entries(&[
        &[("message", s("a1")), ("level", s("info"))],
        &[("message", s("b1")), ("level", s("error"))],
        &[("message", s("b2")), ("level", s("info"))],
    ]);
    assert_eq!(messages(&f.filter(batch).unwrap()), ["a1", "b1"]);
    let f = filter("op = 'and'\nexclude = { message = '^a', level = 'error' }");
    let batch = entries(&[
        &[("message", s("a1")), ("level", s("error"))],
        &[("message", s("a2")), ("level", s("info"))],
    ]);
    assert_eq!(messages(&f.filter(batch).unwrap()), ["a2"]);
}

#[test]
fn bad_rules_are_config_errors() {
    let bad = |t: &str| {
        let c: GrepConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("").contains("needs"));
    assert!(bad("include = { message = '(' }").contains("include.message"));
    assert!(bad("op = 'or'\ninclude = { a = 'x' }\nexclude = { b = 'y' }").contains("either"));
    assert!(bad("include = { '$a[b]' = 'x' }").contains("['KEY']"));
    assert!(toml::from_str::<GrepConfig>("regex = { a = 'x' }").is_err());
}
