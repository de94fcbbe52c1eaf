use bytes::Bytes;
use serde_json::json;

use super::*;
use crate::event::{EventTime, Records};
use crate::protocol::msgpack::{write, Reader};

fn filter(toml: &str) -> RemapFilter {
    let config: RemapConfig = toml::from_str(toml).unwrap();
    config.validate().unwrap();
    let pattern = TagPattern::new("**").unwrap();
    RemapFilter::new("r", pattern, &config, &Registry::new()).unwrap()
}

/// `source = '''PROGRAM'''` with the other keys.
fn program(source: &str, rest: &str) -> RemapFilter {
    filter(&format!("source = '''\n{source}\n'''\n{rest}"))
}

const TIME: EventTime = EventTime {
    secs: 1_600_000_000,
    nanos: 5,
};

fn lines(text: &str) -> Batch {
    let records = Records::Lines {
        data: Bytes::copy_from_slice(text.as_bytes()),
        time: TIME,
    };
    Batch::new("app.web".into(), records, text.lines().count())
}

/// A batch of `[TIME, record]` entries.
fn entries(records: &[serde_json::Value]) -> Batch {
    let mut data = Vec::new();
    for r in records {
        write::array_len(&mut data, 2);
        write::event_time(&mut data, TIME.secs, TIME.nanos);
        convert::write_value(&mut data, &Value::from(r.clone()));
    }
    Batch::new(
        "app.web".into(),
        Records::Entries(data.into()),
        records.len(),
    )
}

fn apply(f: &RemapFilter, batch: Batch) -> Vec<Batch> {
    let mut out = Vec::new();
    f.apply(batch, &mut out);
    out
}

/// Every record put out: (tag, time, fields as JSON).
fn show(out: &[Batch]) -> Vec<(String, EventTime, serde_json::Value)> {
    let mut shown = Vec::new();
    for b in out {
        let Records::Entries(data) = &b.records else {
            panic!("lines put out: {b:?}")
        };
        let mut r = Reader::new(data);
        let mut n = 0;
        while !r.is_empty() {
            assert_eq!(r.read_array_len().unwrap(), 2);
            let time = EventTime::read(&mut r).unwrap();
            let v = convert::read_value(&mut r, data, 0).unwrap();
            shown.push((b.tag.to_string(), time, serde_json::to_value(&v).unwrap()));
            n += 1;
        }
        assert_eq!(n, b.count, "count of {b:?}");
    }
    shown
}

fn fields(out: &[Batch]) -> Vec<serde_json::Value> {
    show(out).into_iter().map(|(_, _, v)| v).collect()
}

/// Vector's remap reference, "Parse Syslog logs": the documented event.
#[test]
fn vectors_parse_syslog_example_gives_the_documented_event() {
    let f = program(". = parse_syslog!(string!(.message))", "");
    let out = apply(
        &f,
        lines("<102>1 2020-12-22T15:22:31.111Z vector-user.biz su 2666 ID389 - Something went wrong\n"),
    );
    assert_eq!(
        fields(&out),
        [json!({
            "appname": "su",
            "facility": "ntp",
            "hostname": "vector-user.biz",
            "message": "Something went wrong",
            "msgid": "ID389",
            "procid": 2666,
            "severity": "info",
            "timestamp": "2020-12-22T15:22:31.111Z",
            "version": 1
        })]
    );
}

/// VRL's function reference, `parse_syslog` (with structured data) and
/// `parse_json`: the documented results.
#[test]
fn vrl_reference_examples_give_the_documented_results() {
    let f = program(". = parse_syslog!(.message)", "");
    let line = "<13>1 2020-03-13T20:45:38.119Z dynamicwireless.name non 2426 ID931 [exampleSDID@32473 iut=\"3\" eventSource= \"Application\" eventID=\"1011\"] Try to override the THX port, maybe it will reboot the neural interface!\n";
    assert_eq!(
        fields(&apply(&f, lines(line))),
        [json!({
            "appname": "non",
            "exampleSDID@32473": {"eventID": "1011", "eventSource": "Application", "iut": "3"},
            "facility": "user",
            "hostname": "dynamicwireless.name",
            "message": "Try to override the THX port, maybe it will reboot the neural interface!",
            "msgid": "ID931",
            "procid": 2426,
            "severity": "notice",
            "timestamp": "2020-03-13T20:45:38.119Z",
            "version": 1
        })]
    );
    let f = program(". = parse_json!(.message)\n.new_field = \"new value\"", "");
    assert_eq!(
        fields(&apply(
            &f,
            lines("{ \"field\": \"value\", \"n\": 42.13, \"ok\": false }\n")
        )),
        [json!({"field": "value", "n": 42.13, "ok": false, "new_field": "new value"})]
    );
}

#[test]
fn abort_drops_the_record_by_default_or_passes_it_unchanged() {
    let records: Vec<_> = (0..10)
        .map(|i| json!({"n": i, "level": if i % 2 == 0 { "debug" } else { "info" }}))
        .collect();
    let f = program("if .level == \"debug\" { abort }\n.kept = true", "");
    let out = fields(&apply(&f, entries(&records)));
    let kept: Vec<i64> = out.iter().map(|v| v["n"].as_i64().unwrap()).collect();
    assert_eq!(kept, [1, 3, 5, 7, 9]);
    assert!(out.iter().all(|v| v["kept"] == true));
    assert_eq!(
        (f.aborts.get(), f.dropped.get(), f.records.get()),
        (5, 5, 10)
    );

    let f = program(
        "if .level == \"debug\" { abort }\n.kept = true",
        "drop_on_abort = false",
    );
    let out = fields(&apply(&f, entries(&records)));
    assert_eq!(out.len(), 10);
    assert_eq!(out[0], records[0], "aborted: as it came");
    assert_eq!(out[1]["kept"], true);
    assert_eq!((f.aborts.get(), f.dropped.get()), (5, 0));
}

#[test]
fn a_runtime_error_passes_the_record_unchanged_drops_it_or_reroutes_it() {
    let text = "{\"a\": 1}\nnot json\n{\"a\": 3}\n";
    let source = ". = parse_json!(.message)";
    let f = program(source, "");
    let out = show(&apply(&f, lines(text)));
    assert_eq!(
        out.iter().map(|(_, _, v)| v.clone()).collect::<Vec<_>>(),
        [
            json!({"a": 1}),
            json!({"message": "not json"}),
            json!({"a": 3})
        ]
    );
    assert!(out
        .iter()
        .all(|(tag, time, _)| tag == "app.web" && *time == TIME));
    assert_eq!((f.errors.get(), f.dropped.get()), (1, 0));

    let f = program(source, "drop_on_error = true");
    assert_eq!(
        fields(&apply(&f, lines(text))),
        [json!({"a": 1}), json!({"a": 3})]
    );
    assert_eq!((f.errors.get(), f.dropped.get()), (1, 1));

    let f = program(source, "drop_on_error = true\nerror_tag = \"bad.json\"");
    let out = show(&apply(&f, lines(text)));
    let tags: Vec<&str> = out.iter().map(|(t, _, _)| t.as_str()).collect();
    assert_eq!(tags, ["app.web", "app.web", "bad.json"]);
    assert_eq!(out[2].2, json!({"message": "not json"}));
    assert_eq!(
        (f.errors.get(), f.dropped.get(), f.retagged.get()),
        (1, 0, 1)
    );
}

#[test]
fn a_batch_the_program_leaves_as_it_came_is_passed_on_without_a_copy() {
    let f = program("abort", "drop_on_abort = false");
    let batch = entries(&[json!({"a": 1}), json!({"b": 2})]);
    let before = batch.records.bytes().as_ptr();
    let out = apply(&f, batch);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].records.bytes().as_ptr(), before);
    let out = apply(&f, lines("x\ny\n"));
    assert!(matches!(out[0].records, Records::Lines { .. }));
}

#[test]
fn bytes_that_are_not_utf8_pass_through_intact() {
    let f = program(
        ".copy = .message\n.size = length!(.message)\n.upper = upcase!(.message)",
        "",
    );
    let out = apply(&f, lines("caf\u{e9} \u{1f980}\n"));
    let shown = fields(&out);
    assert_eq!(shown[0]["copy"], "caf\u{e9} \u{1f980}");
    // bytes of no encoding: copied byte for byte
    let raw = b"a\xff\xfeb\n";
    let batch = Batch::new(
        "t".into(),
        Records::Lines {
            data: Bytes::from_static(raw),
            time: TIME,
        },
        1,
    );
    let out = apply(&f, batch);
    let Records::Entries(data) = &out[0].records else {
        panic!()
    };
    let mut r = Reader::new(data);
    r.read_array_len().unwrap();
    EventTime::read(&mut r).unwrap();
    let Value::Object(map) = convert::read_value(&mut r, data, 0).unwrap() else {
        panic!()
    };
    assert_eq!(map["copy"], Value::Bytes(Bytes::from_static(b"a\xff\xfeb")));
    assert_eq!(
        map["message"],
        Value::Bytes(Bytes::from_static(b"a\xff\xfeb"))
    );
    assert_eq!(map["size"], Value::Integer(4));
    assert_eq!(f.errors.get(), 0);
}

#[test]
fn nested_fields_are_read_written_and_deleted_by_path() {
    let f = program(
        ".kubernetes.labels.app = upcase!(.kubernetes.labels.app)\n\
         del(.kubernetes.pod.uid)\n\
         .kubernetes.pod.seen = true\n\
         .first = .items[0].id",
        "",
    );
    let record = json!({
        "log": "x",
        "kubernetes": {"labels": {"app": "web", "tier": "front"}, "pod": {"name": "p", "uid": "u"}},
        "items": [{"id": 7}, {"id": 8}]
    });
    assert_eq!(
        fields(&apply(&f, entries(&[record]))),
        [json!({
            "log": "x",
            "kubernetes": {"labels": {"app": "WEB", "tier": "front"}, "pod": {"name": "p", "seen": true}},
            "items": [{"id": 7}, {"id": 8}],
            "first": 7
        })]
    );
}

/// VRL's `unnest` example: an event made an array becomes one record per
/// item, in order, each under the record's tag and time; an empty array
/// leaves none (counted as dropped).
#[test]
fn an_array_result_becomes_several_records() {
    let f = program(". = unnest!(.events)", "");
    let out = show(&apply(
        &f,
        entries(&[
            json!({"hostname": "localhost", "events": [{"message": "hello"}, {"message": "world"}]}),
            json!({"hostname": "empty", "events": []}),
            json!({"hostname": "two", "events": ["a", "b"]}),
        ]),
    ));
    let got: Vec<_> = out.iter().map(|(_, _, v)| v.clone()).collect();
    assert_eq!(
        got,
        [
            json!({"hostname": "localhost", "events": {"message": "hello"}}),
            json!({"hostname": "localhost", "events": {"message": "world"}}),
            json!({"hostname": "two", "events": "a"}),
            json!({"hostname": "two", "events": "b"}),
        ]
    );
    assert!(out
        .iter()
        .all(|(t, time, _)| t == "app.web" && *time == TIME));
    assert_eq!(f.dropped.get(), 1);
    // items that are not objects become messages, as in Vector
    let f = program(". = split(string!(.message), \",\")", "");
    assert_eq!(
        fields(&apply(&f, lines("a,b\n"))),
        [json!({"message": "a"}), json!({"message": "b"})]
    );
}

#[test]
fn tag_and_timestamp_are_metadata_the_program_reads_and_sets() {
    let f = program(
        ".old_tag = %tag\n\
         .old_time = %timestamp\n\
         %tag = \"audit.\" + %tag\n\
         %timestamp = parse_timestamp!(.at, \"%Y-%m-%dT%H:%M:%S%.f%:z\")",
        "",
    );
    let out = show(&apply(
        &f,
        entries(&[json!({"at": "2021-02-03T04:05:06.5+01:00"})]),
    ));
    let (tag, time, v) = &out[0];
    assert_eq!(tag, "audit.app.web");
    assert_eq!(*time, EventTime::new(1_612_321_506, 500_000_000));
    assert_eq!(v["old_tag"], "app.web");
    assert_eq!(v["old_time"], "2020-09-13T12:26:40.000000005Z");
    assert_eq!(f.retagged.get(), 1);
}

#[test]
fn a_program_that_does_not_compile_names_its_line_and_column() {
    let config: RemapConfig =
        toml::from_str("source = '''\n.a = 1\n.b = parse_json(.message)\n'''").unwrap();
    let err = config.validate().unwrap_err();
    assert!(err.starts_with("source: "), "{err}");
    assert!(err.contains("line 2, column 6"), "{err}");
    assert!(err.contains("E103"), "{err}");
    // VRL's own report with the program line
    assert!(err.contains(".b = parse_json(.message)"), "{err}");

    let e = program::compile("\n\n  .x = nope(1)").unwrap_err();
    assert_eq!((e.line, e.column), (3, 8), "{e}");
    assert!(e.message.contains("undefined function"), "{e}");
}

#[test]
fn network_functions_are_not_there() {
    for f in [
        "dns_lookup!(\"example.com\")",
        "reverse_dns!(\"127.0.0.1\")",
        "http_request!(\"http://x\")",
    ] {
        let e = program::compile(f).unwrap_err();
        assert!(e.message.contains("undefined function"), "{f}: {e}");
    }
}

#[test]
fn bad_keys_are_errors() {
    let bad = |toml: &str| {
        toml::from_str::<RemapConfig>(toml)
            .unwrap()
            .validate()
            .unwrap_err()
    };
    assert!(bad("source = '.'\ntimezone = 'Mars/Base'").contains("timezone"));
    assert!(bad("source = '.'\nerror_tag = 'x'\ndrop_on_abort = false").contains("error_tag"));
    assert!(toml::from_str::<RemapConfig>("source = '.'\nprogram = 'x'").is_err());
    assert!(bad("source = '.'\nfile = 'x.vrl'").contains("either `source` or `file`"));
    assert!(bad("drop_on_error = true").contains("either `source` or `file`"));
    assert!(bad("file = '/nonexistent/x.vrl'").starts_with("file: cannot read"));
}

/// A program in a file (Vector's `file`) runs as one in `source`; its
/// compile errors name `file` and the line.
#[test]
fn the_program_may_be_in_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shape.vrl");
    std::fs::write(&path, "# from a file\n.from_file = true\n").unwrap();
    let f = filter(&format!("file = '{}'", path.display()));
    assert_eq!(
        fields(&apply(&f, lines("x\n"))),
        [json!({"message": "x", "from_file": true})]
    );
    std::fs::write(&path, "\n.a = nope()\n").unwrap();
    let config: RemapConfig = toml::from_str(&format!("file = '{}'", path.display())).unwrap();
    let err = config.validate().unwrap_err();
    assert!(
        err.starts_with("file: ") && err.contains("line 2, column 6"),
        "{err}"
    );
}

/// A record nested deeper than the conversion goes (a hostile sender's
/// thousands of nested arrays) is an error, counted, passed on as it came;
/// the records around it are remapped.
#[test]
fn a_record_nested_too_deep_is_an_error_not_a_crash() {
    let mut data = Vec::new();
    let good = |data: &mut Vec<u8>| {
        write::array_len(data, 2);
        write::event_time(data, TIME.secs, TIME.nanos);
        convert::write_value(data, &Value::from(json!({"a": 1})));
    };
    good(&mut data);
    write::array_len(&mut data, 2);
    write::event_time(&mut data, TIME.secs, TIME.nanos);
    write::map_len(&mut data, 1);
    write::str(&mut data, b"deep");
    data.extend(std::iter::repeat_n(0x91, 100_000));
    data.push(0xc0);
    good(&mut data);
    let f = program(".b = 2", "");
    let out = apply(&f, Batch::new("t".into(), Records::Entries(data.into()), 3));
    assert_eq!(out[0].count, 3);
    assert_eq!(f.errors.get(), 1);
    let Records::Entries(data) = &out[0].records else {
        panic!()
    };
    let mut r = Reader::new(data);
    r.read_array_len().unwrap();
    EventTime::read(&mut r).unwrap();
    let first = convert::read_value(&mut r, data, 0).unwrap();
    assert_eq!(
        serde_json::to_value(&first).unwrap(),
        json!({"a": 1, "b": 2})
    );
}

#[test]
fn numbers_and_times_keep_their_values_both_ways() {
    let f = program(".copy = .", "");
    let record = json!({"i": -5, "big": -40000, "u": 3_000_000_000u64, "f": 1.5, "b": true, "z": null, "s": "x"});
    let out = fields(&apply(&f, entries(std::slice::from_ref(&record))));
    let mut expected = record.clone();
    expected["copy"] = record;
    assert_eq!(out, [expected]);
}

/// A batch split by tag (`%tag`, `error_tag`) settles once every part
/// has, never before; one whose every record is dropped settles at once,
/// as filtered.
#[test]
fn the_source_batch_settles_once_every_part_has_and_at_once_when_all_drop() {
    use crate::ack::{AckHandle, AckOutcome};
    use std::sync::mpsc;

    let f = program(
        ". = parse_json!(.message)\nif .drop == true { abort }\n%tag = string!(.to)",
        "drop_on_error = true\nerror_tag = 'bad'",
    );
    let (tx, rx) = mpsc::channel();
    let batch = lines("{\"to\": \"a\"}\n{\"to\": \"b\"}\nnot json\n")
        .with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
    let mut out = apply(&f, batch);
    let tags: Vec<&str> = out.iter().map(|b| &*b.tag).collect();
    assert_eq!(tags, ["a", "b", "bad"]);
    let last = out.pop().unwrap();
    drop(out);
    assert!(rx.try_recv().is_err(), "settled before every part did");
    last.ack.reject();
    drop(last);
    assert_eq!(rx.try_recv().unwrap(), AckOutcome::Rejected);

    let f = program("abort", "");
    let (tx, rx) = mpsc::channel();
    let batch = lines("x\ny\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
    assert!(apply(&f, batch).is_empty());
    assert_eq!(rx.try_recv().unwrap(), AckOutcome::Accepted);
    assert_eq!(f.dropped.get(), 2);
}

/// A program that makes many records of one: they are put out in
/// batches of about 1 MiB, in order, charged to the budget the batch was
/// charged to (the growth and what the program held to make them) until
/// the last is dropped, and nothing stays charged after.
#[test]
fn a_large_fan_out_is_put_out_in_charged_batches_of_about_1_mib() {
    use crate::memory::MemoryBudget;

    let f = program(". = split(string!(.message), \" \")", "");
    let words: Vec<String> = (0..200_000).map(|i| format!("w{i:07}")).collect();
    let text = format!("{}\n", words.join(" "));
    let budget = MemoryBudget::new(64 * 1024 * 1024, &Registry::new());
    let batch = lines(&text).with_memory(budget.try_acquire(text.len()).unwrap());
    let out = apply(&f, batch);
    assert!(out.len() > 1, "one batch of {} bytes", out[0].byte_len());
    let mut n = 0;
    for b in &out {
        assert!(b.byte_len() <= 1024 * 1024 + 64, "{} bytes", b.byte_len());
        n += b.count;
    }
    assert_eq!(n, words.len());
    let sent: usize = out.iter().map(Batch::byte_len).sum();
    assert!(
        budget.used() >= sent,
        "{} charged for {sent}",
        budget.used()
    );
    let first = show(&out[..1]);
    assert_eq!(first[0].2, json!({"message": "w0000000"}));
    drop(out);
    assert_eq!(budget.used(), 0);
}
