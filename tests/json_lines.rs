//! `format = "ndjson"` of the file and stdout sinks: each record itself as
//! one JSON object a line, its time (and tag) added as fields, as
//! Fluentd's `out_file` with `@type json` and Vector's `json` codec write
//! them: numbered records, every line counted and every field checked.

mod common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;

const N: usize = 10_000;

/// A tcp source reading JSON lines (tagged `app`) into a file sink with
/// `format`.
fn tcp_to_file(format: &str) -> String {
    format!(
        "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\ntag = \"app\"\nformat = \"json\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/out.log\"\nformat = {format}\n"
    )
}

/// Numbered JSON lines; every 100th record has a `time` field of its own,
/// which the added time must not replace.
fn send_numbered(lf: &mut Logferry) {
    let addr = lf.address("tcp source listening source=in ");
    let mut body = Vec::new();
    for i in 0..N {
        let own = if i % 100 == 0 {
            ",\"time\":\"own\""
        } else {
            ""
        };
        writeln!(
            body,
            "{{\"n\":{i},\"msg\":\"line {i}\\nwith a newline\",\"nested\":{{\"a\":[{i}]}}{own}}}"
        )
        .unwrap();
    }
    let s = send(addr, &body);
    drop(s);
}

/// The lines of `path` as JSON objects, after checking there are exactly
/// N of them (one record a line) and each number is there once.
fn objects(lines: &[String]) -> Vec<serde_json::Map<String, Value>> {
    assert_eq!(lines.len(), N, "one line per record");
    let objects: Vec<serde_json::Map<String, Value>> = lines
        .iter()
        .map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(o)) => o,
            _ => panic!("not a JSON object: {l}"),
        })
        .collect();
    let mut numbers: Vec<u64> = objects.iter().filter_map(|o| o["n"].as_u64()).collect();
    numbers.sort_unstable();
    assert!(
        numbers == (0..N as u64).collect::<Vec<_>>(),
        "every record exactly once"
    );
    objects
}

#[test]
fn ndjson_writes_each_record_itself_with_its_time_as_epoch_seconds() {
    let mut lf = Logferry::start(&tcp_to_file("\"ndjson\""));
    send_numbered(&mut lf);
    wait_for_lines(&lf.path("out.log"), N, Duration::from_secs(60));
    assert!(lf.stop().success(), "{}", lf.log_text());
    for o in objects(&read_lines(&lf.path("out.log"))) {
        let n = o["n"].as_u64().unwrap();
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(keys, ["n", "msg", "nested", "time"], "{o:?}");
        assert_eq!(o["msg"], format!("line {n}\nwith a newline"));
        assert_eq!(o["nested"]["a"][0], n);
        if n % 100 == 0 {
            assert_eq!(o["time"], "own", "the record's own time is kept");
        } else {
            // seconds with nanoseconds, a number: Fluentd's float time
            let t = o["time"].as_f64().expect("a number");
            assert!(t > 1.7e9, "{t}");
        }
    }
}

#[test]
fn ndjson_takes_time_key_time_format_and_tag_key_as_the_http_sink_does() {
    let format = "{ type = \"ndjson\", time_key = \"timestamp\", time_format = \"rfc3339\", tag_key = \"tag\" }";
    let mut lf = Logferry::start(&tcp_to_file(format));
    send_numbered(&mut lf);
    wait_for_lines(&lf.path("out.log"), N, Duration::from_secs(60));
    assert!(lf.stop().success(), "{}", lf.log_text());
    let rfc3339 = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$").unwrap();
    for o in objects(&read_lines(&lf.path("out.log"))) {
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        let n = o["n"].as_u64().unwrap();
        let own: &[&str] = if n % 100 == 0 { &["time"] } else { &[] };
        let want = [&["n", "msg", "nested"][..], own, &["timestamp", "tag"]].concat();
        assert_eq!(keys, want, "{o:?}");
        assert_eq!(o["tag"], "app");
        assert!(rfc3339.is_match(o["timestamp"].as_str().unwrap()), "{o:?}");
    }

    // a strftime pattern, and no time at all
    for (format, check) in [
        (
            "{ type = \"ndjson\", time_format = \"%Y-%m-%d %H:%M:%S\" }",
            r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$",
        ),
        ("{ type = \"ndjson\", time_key = \"\" }", ""),
    ] {
        let mut lf = Logferry::start(&tcp_to_file(format));
        send_numbered(&mut lf);
        wait_for_lines(&lf.path("out.log"), N, Duration::from_secs(60));
        assert!(lf.stop().success(), "{}", lf.log_text());
        let pattern = regex::Regex::new(check).unwrap();
        for o in objects(&read_lines(&lf.path("out.log"))) {
            match (o.get("time"), check) {
                (None, "") => {}
                (Some(Value::String(own)), _) if own == "own" => {}
                (Some(Value::String(t)), c) if !c.is_empty() => {
                    assert!(pattern.is_match(t), "{format}: {o:?}")
                }
                _ => panic!("{format}: {o:?}"),
            }
        }
    }
}

#[test]
fn the_stdout_sink_writes_ndjson_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stdout.toml");
    std::fs::write(
        &path,
        format!(
            "[sources.gen]\ntype = \"generator\"\ntag = \"gen\"\nrate = 0\ncount = {N}\nsize = 10\n\n\
             [sinks.out]\ntype = \"stdout\"\nmatch = \"**\"\n\
             format = {{ type = \"ndjson\", time_format = \"epoch_millis\", tag_key = \"tag\" }}\n"
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), N);
    let mut numbers = Vec::new();
    for l in lines {
        let o: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(keys, ["message", "time", "tag"], "{l}");
        assert_eq!(o["tag"], "gen");
        assert!(
            o["time"].as_u64().is_some_and(|t| t > 1_700_000_000_000),
            "{l}"
        );
        numbers.push(o["message"].as_str().unwrap().parse::<usize>().unwrap());
    }
    numbers.sort_unstable();
    assert!(numbers == (0..N).collect::<Vec<_>>(), "every record once");
}

#[test]
fn ndjson_keys_elsewhere_and_unknown_time_formats_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    for (format, said) in [
        (
            "{ type = \"json\", tag_key = \"tag\" }",
            "`time_key` and `tag_key` apply to type \"ndjson\" only",
        ),
        (
            "{ type = \"ndjson\", time_format = \"epoch_milis\" }",
            "time_format \"epoch_milis\": with type \"ndjson\" it is",
        ),
    ] {
        let path = dir.path().join("c.toml");
        std::fs::write(&path, tcp_to_file(format).replace("{dir}", "/tmp")).unwrap();
        let out = Command::new(BIN)
            .args(["validate", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{format}");
        assert!(
            err.contains("c.toml:11: [sinks.out]") && err.contains(said),
            "{err}"
        );
    }
}
