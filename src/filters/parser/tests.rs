use bytes::Bytes;

use super::*;
use crate::event::{EventTime, RecordRef, Records};
use crate::filters::field::map_fields;
use crate::protocol::msgpack::write;

fn filter(toml: &str) -> ParserFilter {
    let config: ParserConfig = toml::from_str(toml).unwrap();
    config.validate().unwrap();
    let pattern = TagPattern::new("**").unwrap();
    ParserFilter::new("p", pattern, &config, &Registry::new()).unwrap()
}

fn lines(text: &'static str) -> Batch {
    let records = Records::Lines {
        data: Bytes::from_static(text.as_bytes()),
        time: EventTime::new(3, 4),
    };
    Batch::new("t".into(), records, text.lines().count())
}

/// Every record as JSON (values as the JSON sink would print them).
fn show(batch: &Batch) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    batch
        .for_each_record(|time, r| {
            assert_eq!(time, EventTime::new(3, 4), "time kept");
            let mut obj = serde_json::Map::new();
            let RecordRef::Map(m) = r else {
                obj.insert(
                    "line".into(),
                    String::from_utf8_lossy(match r {
                        RecordRef::Line(l) => l,
                        _ => unreachable!(),
                    })
                    .into(),
                );
                out.push(obj.into());
                return;
            };
            for (k, v) in map_fields(m).unwrap() {
                let v = match Reader::new(&v).read().unwrap() {
                    Value::Str(s) => serde_json::Value::from(String::from_utf8_lossy(s)),
                    Value::UInt(u) => u.into(),
                    Value::Int(i) => i.into(),
                    Value::Bool(b) => b.into(),
                    Value::Float(f) => f.into(),
                    other => format!("{other:?}").into(),
                };
                obj.insert(String::from_utf8_lossy(&k).into(), v);
            }
            out.push(obj.into());
        })
        .unwrap();
    out
}

#[test]
fn json_lines_become_their_fields_and_a_line_that_does_not_parse_stays() {
    let f = filter("format = 'json'");
    let out = f.filter(lines(
        "{\"a\": 1, \"b\": \"x\", \"c\": true}\nnot json\n{\"a\":\n",
    ));
    assert_eq!(
        show(&out),
        [
            serde_json::json!({"a": 1, "b": "x", "c": true}),
            serde_json::json!({"message": "not json"}),
            serde_json::json!({"message": "{\"a\":"}),
        ]
    );
    assert_eq!(f.failed.get(), 2);
}

#[test]
fn reserve_data_and_preserve_key_keep_the_other_fields_and_the_key() {
    let mut entry = Vec::new();
    write::array_len(&mut entry, 2);
    write::event_time(&mut entry, 3, 4);
    write::map_len(&mut entry, 3);
    write::str(&mut entry, b"log");
    write::str(
        &mut entry,
        b"level=warn msg=\"disk \\\"sda\\\" full\" retry",
    );
    write::str(&mut entry, b"level");
    write::str(&mut entry, b"replaced");
    write::str(&mut entry, b"pod");
    write::str(&mut entry, b"web-1");
    let batch = Batch::new("t".into(), Records::Entries(entry.into()), 1);
    let f = filter("format = 'logfmt'\nkey = 'log'\nreserve_data = true");
    assert_eq!(
        show(&f.filter(batch.clone())),
        [
            serde_json::json!({"pod": "web-1", "level": "warn", "msg": "disk \"sda\" full", "retry": true})
        ]
    );
    let f = filter("format = 'logfmt'\nkey = 'log'\npreserve_key = true");
    let got = show(&f.filter(batch));
    assert_eq!(
        got[0]["log"],
        "level=warn msg=\"disk \\\"sda\\\" full\" retry"
    );
    assert!(got[0].get("pod").is_none(), "reserve_data is false");
}

#[test]
fn the_built_in_formats_read_real_access_and_error_lines() {
    let nginx = filter("format = 'nginx'");
    let got = timed(&nginx.filter(lines(
        "192.168.1.5 - alice [27/Nov/2026:10:00:00 +0000] \"GET /index.html?q=1 HTTP/1.1\" 200 612 \"-\" \"curl/8.5.0\"\n",
    )));
    // as Fluent Bit's preset: the time becomes the record's
    assert_eq!(got[0].0, EventTime::new(1_795_773_600, 0));
    assert_eq!(
        got[0].1,
        serde_json::json!({"remote": "192.168.1.5", "host": "-", "user": "alice",
            "method": "GET", "path": "/index.html?q=1",
            "code": "200", "size": "612", "referer": "-", "agent": "curl/8.5.0"})
    );
    let kept = filter("format = 'nginx'\ntime_key = 'time'\ntime_keep = true");
    let got = timed(&kept.filter(lines(
        "192.168.1.5 - alice [27/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 612 \"-\" \"c\"\n",
    )));
    assert_eq!(got[0].0, EventTime::new(1_795_773_600, 0));
    assert_eq!(got[0].1["time"], "27/Nov/2026:10:00:00 +0000");
    let apache2 = filter("format = 'apache2'");
    let got = show_any_time(&apache2.filter(lines(
        "10.0.0.1 - - [27/Nov/2026:10:00:00 +0000] \"POST /api HTTP/1.1\" 503 12 \"http://x/\" \"Mozilla/5.0 (X11)\"\n",
    )));
    assert_eq!(got[0]["host"], "10.0.0.1");
    assert_eq!(got[0]["code"], "503");
    assert_eq!(got[0]["agent"], "Mozilla/5.0 (X11)");
    let error = filter("format = 'apache_error'");
    let got = show(&error.filter(lines(
        "[Fri Nov 27 10:00:00.123 2026] [core:error] [pid 42] [client 10.0.0.9:5000] File does not exist\n",
    )));
    assert_eq!(got[0]["level"], "core:error");
    assert_eq!(got[0]["pid"], "42");
    assert_eq!(got[0]["message"], "File does not exist");
}

#[test]
fn a_regex_gives_its_named_captures_and_unmatched_lines_pass() {
    let f = filter(
        r#"format = 'regex'
regex = '^(?<level>[A-Z]+) (?<msg>.*)$'"#,
    );
    let out = f.filter(lines("ERROR it broke\nlowercase\n\u{00e9}\n"));
    let got = show(&out);
    assert_eq!(
        got[0],
        serde_json::json!({"level": "ERROR", "msg": "it broke"})
    );
    assert_eq!(got[1], serde_json::json!({"message": "lowercase"}));
    assert_eq!(f.failed.get(), 2);
    // a batch where nothing parses is the batch that came
    let batch = lines("a\nb\n");
    let before = batch.records.bytes().as_ptr();
    assert_eq!(f.filter(batch).records.bytes().as_ptr(), before);
}

#[test]
fn bad_tables_are_config_errors() {
    let bad = |t: &str| {
        let c: ParserConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("format = 'regex'").contains("needs `regex`"));
    assert!(bad("format = 'regex'\nregex = '('").contains("regex"));
    assert!(bad("format = 'regex'\nregex = '(a)'").contains("named"));
    assert!(bad("format = 'json'\nregex = 'x'").contains("only"));
    assert!(toml::from_str::<ParserConfig>("format = 'xml'").is_err());
}

/// Each record's time and fields.
fn timed(batch: &Batch) -> Vec<(EventTime, serde_json::Value)> {
    let mut times = Vec::new();
    batch.for_each_record(|t, _| times.push(t)).unwrap();
    times.into_iter().zip(show_any_time(batch)).collect()
}

/// Like [`show`], for records of any time.
fn show_any_time(batch: &Batch) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    batch
        .for_each_record(|_, r| {
            let RecordRef::Map(m) = r else {
                panic!("a line")
            };
            let mut obj = serde_json::Map::new();
            for (k, v) in map_fields(m).unwrap() {
                let v = match Reader::new(&v).read().unwrap() {
                    Value::Str(s) => serde_json::Value::from(String::from_utf8_lossy(s)),
                    other => format!("{other:?}").into(),
                };
                obj.insert(String::from_utf8_lossy(&k).into(), v);
            }
            out.push(obj.into());
        })
        .unwrap();
    out
}

#[test]
fn time_key_sets_the_record_time_with_and_without_a_zone() {
    let f = filter("format = 'nginx'\ntime_key = 'time'\ntime_format = '%d/%b/%Y:%H:%M:%S %z'");
    let out = f.filter(lines(
        "1.2.3.4 - - [27/Nov/2026:10:00:00 +0200] \"GET / HTTP/1.1\" 200 1 \"-\" \"c\"\n\
         1.2.3.4 - - [not a time] \"GET / HTTP/1.1\" 200 1 \"-\" \"c\"\n",
    ));
    let got = timed(&out);
    // 2026-11-27T08:00:00Z
    assert_eq!(got[0].0, EventTime::new(1_795_766_400, 0));
    assert!(got[0].1.get("time").is_none(), "time_keep is false");
    assert_eq!(
        got[1].0,
        EventTime::new(3, 4),
        "a bad time keeps the old one"
    );
    assert_eq!(got[1].1["time"], "not a time");
    assert_eq!(f.bad_time.get(), 1);
    let f = filter(
        "format = 'json'\ntime_key = 't'\ntime_format = '%Y-%m-%dT%H:%M:%S%.f'\ntime_keep = true",
    );
    let out = f.filter(lines(
        "{\"t\": \"2026-11-27T08:00:00.250\", \"a\": \"b\"}\n{\"t\": 1795766401}\n",
    ));
    let got = timed(&out);
    assert_eq!(got[0].0, EventTime::new(1_795_766_400, 250_000_000));
    assert_eq!(got[0].1["t"], "2026-11-27T08:00:00.250", "time_keep");
    assert_eq!(got[1].0, EventTime::new(1_795_766_401, 0), "epoch seconds");
}

#[test]
fn time_options_without_time_key_or_with_a_bad_format_are_errors() {
    let bad = |t: &str| {
        let c: ParserConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("format = 'json'\ntime_format = '%s'").contains("time_key"));
    assert!(bad("format = 'json'\ntime_key = 't'\ntime_format = '%Q'").contains("strptime"));
    assert!(bad("format = 'json'\ntime_key = 't'\ntime_format = '%S.%L.%L'").contains("strptime"));
    // a format with its own time key takes them without one
    let ok = |t: &str| {
        let c: ParserConfig = toml::from_str(t).unwrap();
        c.validate().unwrap()
    };
    ok("format = 'apache'\ntime_format = '%d/%b/%Y:%H:%M:%S%.f %z'");
    ok("format = 'cri'\ntime_keep = false");
    ok("format = 'json'\ntime_key = 't'\ntime_format = '%b %d %H:%M:%S.%L'");
}

#[test]
fn container_lines_take_their_fields_and_their_time() {
    let cri = filter("format = 'cri'");
    let out = cri.filter(lines(
        "2026-11-27T08:00:00.123456789Z stdout F GET /health 200\n\
         2026-11-27T10:00:01+02:00 stderr P partial \n",
    ));
    let got = timed(&out);
    assert_eq!(got[0].0, EventTime::new(1_795_766_400, 123_456_789));
    assert_eq!(
        got[0].1,
        serde_json::json!({"time": "2026-11-27T08:00:00.123456789Z", "stream": "stdout", "logtag": "F", "message": "GET /health 200"}),
        "Fluent Bit's cri preset keeps the time (Time_Keep On)"
    );
    assert_eq!(got[1].0, EventTime::new(1_795_766_401, 0));
    assert_eq!(got[1].1["logtag"], "P");
    assert_eq!(got[1].1["message"], "partial ");
    let docker = filter("format = 'docker'");
    let out = docker.filter(lines(
        "{\"log\":\"hello\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-27T08:00:00.5Z\"}\n",
    ));
    let got = timed(&out);
    assert_eq!(got[0].0, EventTime::new(1_795_766_400, 500_000_000));
    assert_eq!(
        got[0].1,
        serde_json::json!({"log": "hello\n", "stream": "stdout", "time": "2026-11-27T08:00:00.5Z"})
    );
    let dropped = filter("format = 'docker'\ntime_keep = false");
    let out = dropped.filter(lines(
        "{\"log\":\"hello\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-27T08:00:00.5Z\"}\n",
    ));
    assert_eq!(
        timed(&out)[0].1,
        serde_json::json!({"log": "hello\n", "stream": "stdout"})
    );
}

#[test]
fn a_cri_line_holding_a_joined_trace_parses_whole() {
    // what the multiline chain ["cri", "java"] sends: one CRI line whose
    // message holds the trace's lines
    let mut data = Vec::new();
    write::array_len(&mut data, 2);
    write::event_time(&mut data, 1, 0);
    write::map_len(&mut data, 1);
    write::str(&mut data, b"message");
    write::str(
        &mut data,
        b"2026-11-27T08:00:00Z stdout F java.lang.Error: x\n\tat a.B(B.java:1)",
    );
    let batch = Batch::new("t".into(), Records::Entries(data.into()), 1);
    let out = filter("format = 'cri'").filter(batch);
    assert_eq!(
        show_any_time(&out)[0],
        serde_json::json!({"time": "2026-11-27T08:00:00Z", "stream": "stdout", "logtag": "F", "message": "java.lang.Error: x\n\tat a.B(B.java:1)"})
    );
}

mod failures;
mod syslog_csv;

#[test]
fn a_record_parsed_whole_keeps_its_key_order_without_its_time_field() {
    let f = filter("format = 'json'\ntime_key = 't'\ntime_format = '%Y-%m-%dT%H:%M:%S'");
    let out = f.filter(lines(
        "{\"a\": \"1\", \"t\": \"2026-11-27T08:00:00\", \"b\": \"2\"}\n\
         {\"t\": \"2026-11-27T08:00:01\"}\n\
         {\"a\": \"1\", \"b\": \"2\", \"t\": \"2026-11-27T08:00:02\"}\n\
         {\"a\": \"no time\"}\n\
         {\"t\": \"yesterday\", \"a\": \"1\"}\n",
    ));
    let mut got = Vec::new();
    out.for_each_record(|t, r| {
        let RecordRef::Map(m) = r else {
            panic!("a line")
        };
        let keys: Vec<String> = map_fields(m)
            .unwrap()
            .iter()
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect();
        got.push((t, keys));
    })
    .unwrap();
    let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        got[0],
        (EventTime::new(1_795_766_400, 0), keys(&["a", "b"]))
    );
    assert_eq!(got[1], (EventTime::new(1_795_766_401, 0), keys(&[])));
    assert_eq!(
        got[2],
        (EventTime::new(1_795_766_402, 0), keys(&["a", "b"]))
    );
    // no time field, or one that does not parse: the record keeps its
    // time and every field, counted
    assert_eq!(got[3], (EventTime::new(3, 4), keys(&["a"])));
    assert_eq!(got[4], (EventTime::new(3, 4), keys(&["t", "a"])));
    assert_eq!(f.bad_time.get(), 2);
    assert_eq!(f.failed.get(), 0);
}
