//! Multiline records end to end: stack traces written line by line to a
//! tailed file, container runtimes' partial lines, and kill -9 in the
//! middle of a trace. Every record is numbered; the output is the file
//! sink's `format = "json"`, one record per line, each checked whole.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use common::*;

fn config(dir: &Path, extra_source: &str, extra: &str) -> String {
    format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/*.log\"]\ntag = \"app\"\nread_from_head = true\nrefresh_interval = \"100ms\"\npoll_interval = \"50ms\"\ncheckpoint_dir = \"{d}/state\"\ncheckpoint_interval = \"200ms\"\n{extra_source}\n\n{extra}\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/out.log\"\nformat = \"json\"\n",
        d = dir.display()
    )
}

/// Record `i`: a plain line, or (every third) a log line with a Java
/// trace under it.
fn record(i: usize) -> String {
    if !i.is_multiple_of(3) {
        return format!("2026-11-22 10:00:00 INFO plain {i}");
    }
    format!(
        "2026-11-22 10:00:00 ERROR request {i} failed\n\
         java.lang.IllegalStateException: boom {i}\n\
         \tat com.example.App.handle(App.java:{i})\n\
         \tat com.example.App.main(App.java:10)\n\
         Caused by: java.io.IOException: disk full {i}\n\
         \tat com.example.Store.write(Store.java:99)\n\
         \t... 12 more"
    )
}

/// The `message` of every record in the json output.
fn messages(out: &Path) -> Vec<String> {
    read_lines(out)
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a json line");
            v["record"]["message"]
                .as_str()
                .expect("a message")
                .to_string()
        })
        .collect()
}

/// Writes `text` one line per write, as a logger does.
fn write_lines(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        f.write_all(line.as_bytes()).unwrap();
        if n % 50 == 49 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Traces interleaved with plain lines, written line by line; the last
/// trace has no line after it and goes out at the flush timeout.
#[test]
fn java_traces_written_line_by_line_arrive_joined_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("app.log"), b"").unwrap();
    let mut lf = Logferry::start(&config(
        dir.path(),
        "multiline = { parser = \"java\", flush_timeout = \"500ms\" }",
        "",
    ));
    lf.wait_for_log("following file", Duration::from_secs(20));
    let total = 301; // 0..=300: the last one is a trace
    let text: String = (0..total).map(|i| record(i) + "\n").collect();
    write_lines(&logs.join("app.log"), &text);
    let out = dir.path().join("out.log");
    wait_until("every record", Duration::from_secs(30), || {
        read_lines(&out).len() >= total
    });
    let got = messages(&out);
    let want: Vec<String> = (0..total).map(record).collect();
    assert_eq!(got, want);
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter(
            "logferry_multiline_records_total{component=\"tail\",ended_by=\"flush_timeout\"}"
        ),
        1
    );
}

/// CRI lines cut into parts, stdout and stderr interleaved, joined and
/// then parsed by a `parser` filter with `format = "cri"`.
#[test]
fn cri_partial_lines_are_joined_per_stream_then_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let total = 200;
    let mut text = String::new();
    // records 2k (stdout) and 2k+1 (stderr) are written part by part, in turn
    for k in 0..total / 2 {
        for part in 0..3 {
            for i in [2 * k, 2 * k + 1] {
                let stream = if i % 2 == 0 { "stdout" } else { "stderr" };
                let flag = if part == 2 { "F" } else { "P" };
                text.push_str(&format!(
                    "2026-11-22T10:00:00.{i:09}Z {stream} {flag} rec {i} part {part};\n"
                ));
            }
        }
    }
    std::fs::write(logs.join("pod.log"), &text).unwrap();
    let mut lf = Logferry::start(&config(
        dir.path(),
        "multiline = \"cri\"",
        "[filters.cri]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"cri\"\n",
    ));
    let out = dir.path().join("out.log");
    let lines = wait_for_lines(&out, total, Duration::from_secs(30));
    assert!(lf.stop().success());
    let mut seen = BTreeMap::new();
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let r = &v["record"];
        let msg = r["message"].as_str().unwrap().to_string();
        let i: usize = msg.split(' ').nth(1).unwrap().parse().unwrap();
        assert_eq!(
            msg,
            format!("rec {i} part 0;rec {i} part 1;rec {i} part 2;")
        );
        assert_eq!(
            r["stream"],
            if i.is_multiple_of(2) {
                "stdout"
            } else {
                "stderr"
            }
        );
        assert_eq!(r["logtag"], "F");
        // the first part's time
        assert_eq!(
            v["time"].as_str().unwrap(),
            format!("2026-11-22T10:00:00.{i:09}Z")
        );
        *seen.entry(i).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), total);
    assert!(seen.values().all(|n| *n == 1));
}

/// kill -9 while a trace is half written and held: after the restart the
/// trace is read again from its first line, so it arrives whole; no
/// record ever arrives in pieces, none is missing, and (the checkpoint
/// stopping exactly at the held record's first line) none comes twice.
#[test]
fn kill_9_in_the_middle_of_a_trace_loses_nothing_and_splits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    // held records wait for their next line (or the stop) only
    let cfg = config(
        dir.path(),
        "multiline = { parser = \"java\", flush_timeout = \"1h\" }",
        "",
    );
    let total = 601; // record 300 is the one cut by the kill, 600 the last
    let head: String = (0..300).map(|i| record(i) + "\n").collect();
    let cut = record(300) + "\n";
    let (first_half, second_half) = cut.split_at(cut.find("Caused by").unwrap());
    let tail: String = (301..total).map(|i| record(i) + "\n").collect();
    let out = dir.path().join("out.log");
    std::fs::write(&live, b"").unwrap();
    let mut lf = Logferry::start(&cfg);
    lf.wait_for_log("following file", Duration::from_secs(20));
    write_lines(&live, &head);
    write_lines(&live, first_half);
    // everything before record 300 is out (299 went when 300 began)
    wait_until("records before the cut", Duration::from_secs(30), || {
        read_lines(&out).len() >= 300
    });
    // the checkpoint reaches the held record's first line, and stops there
    let checkpoint = dir.path().join("state/tail.checkpoint");
    let offset = head.len().to_string();
    wait_until(
        "the checkpoint at record 300",
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(&checkpoint)
                .unwrap_or_default()
                .lines()
                .any(|l| l.split(' ').nth(5) == Some(offset.as_str()))
        },
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        std::fs::read_to_string(&checkpoint)
            .unwrap()
            .lines()
            .any(|l| l.split(' ').nth(5) == Some(offset.as_str())),
        "the checkpoint went past a record still held"
    );
    lf.kill();
    write_lines(&live, second_half);
    write_lines(&live, &tail);
    let mut again = Logferry::start(&cfg);
    wait_until("records after the restart", Duration::from_secs(30), || {
        messages(&out)
            .iter()
            .any(|m| m.contains("request 597 failed"))
    });
    // the last record is held until the stop hands it over
    assert!(again.stop().success());
    let want: BTreeMap<String, usize> = (0..total).map(|i| (record(i), i)).collect();
    let mut seen = vec![0usize; total];
    for m in messages(&out) {
        match want.get(&m) {
            Some(&i) => seen[i] += 1,
            None => panic!("a record in pieces or changed: {m:?}"),
        }
    }
    let missing: Vec<usize> = (0..total).filter(|i| seen[*i] == 0).collect();
    assert!(missing.is_empty(), "missing records {missing:?}");
    // the checkpoint was exact: nothing was read twice
    let twice: Vec<usize> = (0..total).filter(|i| seen[*i] > 1).collect();
    assert!(twice.is_empty(), "records sent twice {twice:?}");
}

/// A record held when its file is rotated away (and read to its end) or
/// truncated is sent then, not at the flush timeout (an hour here).
#[test]
fn rotation_and_truncation_send_what_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let (rotated, truncated) = (logs.join("r.log"), logs.join("t.log"));
    std::fs::write(&rotated, b"").unwrap();
    std::fs::write(&truncated, b"").unwrap();
    let mut lf = Logferry::start(&config(
        dir.path(),
        "multiline = { parser = \"java\", flush_timeout = \"1h\" }",
        "",
    ));
    lf.wait_for_log("following file", Duration::from_secs(20));
    let out = dir.path().join("out.log");
    write_lines(&rotated, &format!("{}\n{}\n", record(1), record(3)));
    write_lines(&truncated, &format!("{}\n{}\n", record(2), record(6)));
    wait_until(
        "the records before the held ones",
        Duration::from_secs(20),
        || read_lines(&out).len() >= 2,
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(messages(&out).len(), 2, "records 3 and 6 are held");
    std::fs::rename(&rotated, logs.join("r.log.1")).unwrap();
    std::fs::write(&truncated, b"").unwrap();
    wait_until("the held records", Duration::from_secs(20), || {
        messages(&out).len() >= 4
    });
    let mut got = messages(&out);
    got.sort();
    let mut want: Vec<String> = [1, 2, 3, 6].into_iter().map(record).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(lf.stop().success());
}

/// The same traces through a `multiline` filter (records that arrive one
/// line each, as from a forwarder): joined in order, the last one by the
/// flush timeout with no batch after it.
#[test]
fn the_filter_joins_traces_across_batches_and_flushes_the_last_one() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("app.log"), b"").unwrap();
    let mut lf = Logferry::start(&config(
        dir.path(),
        "linger = \"0\"",
        "[filters.traces]\ntype = \"multiline\"\nmatch = \"app\"\nparser = \"java\"\nflush_timeout = \"500ms\"\n",
    ));
    lf.wait_for_log("following file", Duration::from_secs(20));
    let total = 301;
    let text: String = (0..total).map(|i| record(i) + "\n").collect();
    write_lines(&logs.join("app.log"), &text);
    let out = dir.path().join("out.log");
    wait_until("every record", Duration::from_secs(30), || {
        read_lines(&out).len() >= total
    });
    let want: Vec<String> = (0..total).map(record).collect();
    assert_eq!(messages(&out), want);
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter(
            "logferry_multiline_records_total{component=\"traces\",ended_by=\"flush_timeout\"}"
        ),
        1
    );
}

/// kill -9 while the filter holds a trace: the tail's checkpoint waits
/// behind the held lines' batches, so after the restart every record
/// arrives joined at least once. (A filter does not know where in a file
/// a record began: after a crash it may also send the end of a trace it
/// had already delivered whole as a record of its own; the tail source's
/// own `multiline` option does not.)
#[test]
fn kill_9_while_the_filter_holds_a_trace_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    std::fs::write(&live, b"").unwrap();
    let cfg = config(
        dir.path(),
        "",
        "[filters.traces]\ntype = \"multiline\"\nmatch = \"app\"\nparser = \"java\"\nflush_timeout = \"1h\"\n",
    );
    let total = 601;
    let head: String = (0..300).map(|i| record(i) + "\n").collect();
    let cut = record(300) + "\n";
    let (first_half, second_half) = cut.split_at(cut.find("Caused by").unwrap());
    let tail: String = (301..total).map(|i| record(i) + "\n").collect();
    let out = dir.path().join("out.log");
    let mut lf = Logferry::start(&cfg);
    lf.wait_for_log("following file", Duration::from_secs(20));
    write_lines(&live, &head);
    write_lines(&live, first_half);
    wait_until("records before the cut", Duration::from_secs(30), || {
        read_lines(&out).len() >= 300
    });
    std::thread::sleep(Duration::from_millis(600)); // checkpoints written
    lf.kill();
    write_lines(&live, second_half);
    write_lines(&live, &tail);
    let mut again = Logferry::start(&cfg);
    wait_until("records after the restart", Duration::from_secs(30), || {
        messages(&out)
            .iter()
            .any(|m| m.contains("request 597 failed"))
    });
    assert!(again.stop().success());
    let got: std::collections::HashSet<String> = messages(&out).into_iter().collect();
    let missing: Vec<usize> = (0..total).filter(|i| !got.contains(&record(*i))).collect();
    assert!(missing.is_empty(), "missing records {missing:?}");
}

/// Docker json-file lines cut at 16 KiB: `log` values without a trailing
/// newline joined with the next ones of their stream, then parsed.
#[test]
fn docker_partial_lines_are_joined_per_stream() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let total = 100;
    let mut text = String::new();
    for k in 0..total / 2 {
        for part in 0..3 {
            for i in [2 * k, 2 * k + 1] {
                let stream = if i % 2 == 0 { "stdout" } else { "stderr" };
                let end = if part == 2 { "\\n" } else { "" };
                text.push_str(&format!(
                    "{{\"log\":\"rec {i} part {part};{end}\",\"stream\":\"{stream}\",\"time\":\"2026-11-22T10:00:00.{i:09}Z\"}}\n"
                ));
            }
        }
    }
    std::fs::write(logs.join("c.log"), &text).unwrap();
    let mut lf = Logferry::start(&config(
        dir.path(),
        "multiline = \"docker\"",
        "[filters.docker]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"docker\"\n",
    ));
    let out = dir.path().join("out.log");
    let lines = wait_for_lines(&out, total, Duration::from_secs(30));
    assert!(lf.stop().success());
    let mut seen = BTreeMap::new();
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let r = &v["record"];
        let log = r["log"].as_str().unwrap().to_string();
        let i: usize = log.split(' ').nth(1).unwrap().parse().unwrap();
        assert_eq!(
            log,
            format!("rec {i} part 0;rec {i} part 1;rec {i} part 2;\n")
        );
        assert_eq!(
            r["stream"],
            if i.is_multiple_of(2) {
                "stdout"
            } else {
                "stderr"
            }
        );
        *seen.entry(i).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), total);
    assert!(seen.values().all(|n| *n == 1));
}

/// `parser = ["cri", "java"]`: a container runtime's CRI lines, one frame
/// of each trace cut into two parts with a stderr line between them, are
/// put back together, then the Java traces joined, then parsed by a
/// `parser` filter with `format = "cri"`.
#[test]
fn cri_then_java_joins_a_cri_formatted_trace_with_a_partial_line_inside() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("pod.log"), b"").unwrap();
    let mut lf = Logferry::start(&config(
        dir.path(),
        "multiline = { parser = [\"cri\", \"java\"], flush_timeout = \"500ms\" }",
        "[filters.cri]\ntype = \"parser\"\nmatch = \"**\"\nformat = \"cri\"\n",
    ));
    lf.wait_for_log("following file", Duration::from_secs(20));
    let total = 301; // 0..=300: the last one is a trace
    let mut text = String::new();
    let mut side = Vec::new();
    for i in 0..total {
        let time = format!("2026-11-22T10:00:00.{i:09}Z");
        for line in record(i).lines() {
            match line.strip_suffix(&format!("(App.java:{i})")) {
                // the runtime cuts this frame in two
                Some(start) => {
                    text.push_str(&format!("{time} stdout P {start}(App\n"));
                    text.push_str(&format!("{time} stderr F side {i}\n"));
                    text.push_str(&format!("{time} stdout F .java:{i})\n"));
                    side.push(format!("side {i}"));
                }
                None => text.push_str(&format!("{time} stdout F {line}\n")),
            }
        }
    }
    write_lines(&logs.join("pod.log"), &text);
    let out = dir.path().join("out.log");
    let want_all = total + side.len();
    wait_until("every record", Duration::from_secs(30), || {
        read_lines(&out).len() >= want_all
    });
    assert!(lf.stop().success());
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    for l in read_lines(&out) {
        let v: serde_json::Value = serde_json::from_str(&l).expect("a json line");
        let r = &v["record"];
        assert_eq!(r["logtag"], "F", "{l}");
        let message = r["message"].as_str().expect("parsed").to_string();
        match r["stream"].as_str() {
            Some("stdout") => stdout.push(message),
            Some("stderr") => stderr.push(message),
            _ => panic!("not parsed: {l}"),
        }
    }
    let want: Vec<String> = (0..total).map(record).collect();
    assert_eq!(stdout, want);
    assert_eq!(stderr, side);
}
