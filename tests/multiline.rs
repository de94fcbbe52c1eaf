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

/// A keep-alive HTTP/1.1 client posting plain-text lines.
struct Http {
    reader: std::io::BufReader<std::net::TcpStream>,
}

impl Http {
    fn connect(addr: std::net::SocketAddr) -> Http {
        let s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.set_nodelay(true).unwrap();
        Http {
            reader: std::io::BufReader::new(s),
        }
    }

    /// Sends a POST of `body` to `path` (the tag) without reading the answer.
    fn send(&mut self, path: &str, body: &str) {
        let s = self.reader.get_mut();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    }

    /// The status of the next answer; `None` if the connection closed
    /// without one.
    fn status(&mut self) -> Option<u16> {
        use std::io::{BufRead, Read};
        let mut line = String::new();
        if self.reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let status = line.get(9..12)?.parse().ok()?;
        let mut len = 0;
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h).ok()?;
            let h = h.trim_end().to_ascii_lowercase();
            if h.is_empty() {
                break;
            }
            if let Some(v) = h.strip_prefix("content-length:") {
                len = v.trim().parse().ok()?;
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).ok()?;
        Some(status)
    }

    fn post(&mut self, path: &str, body: &str) -> Option<u16> {
        self.send(path, body);
        self.status()
    }
}

/// The filter setting under which a client waits for the joined record's
/// delivery (not only for its lines to be held).
const WAIT_FOR_SINKS: &str = "ack = \"sinks\"\n";

/// An HTTP source `in`, a `multiline` filter `traces` on `pattern` with
/// `filter` settings, the API, and `sinks`.
fn http_config(pattern: &str, filter: &str, sinks: &str) -> String {
    format!(
        "[sources.in]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\nrequest_timeout = \"20s\"\n\n\
         [filters.traces]\ntype = \"multiline\"\nmatch = \"{pattern}\"\nparser = \"java\"\n{filter}\n\
         [api]\naddress = \"127.0.0.1:0\"\n\n{sinks}"
    )
}

/// A file sink `name` taking `pattern`, one JSON record a line in
/// `{dir}/NAME.log`.
fn file_sink(name: &str, pattern: &str) -> String {
    format!(
        "[sinks.{name}]\ntype = \"file\"\nmatch = \"{pattern}\"\npath = \"{{dir}}/{name}.log\"\nformat = \"json\"\n\n"
    )
}

/// A forward sink `name` taking `pattern` whose server never answers, its
/// queue full with one batch: a sink that holds up whatever is sent to it.
fn dead_sink(name: &str, pattern: &str) -> String {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    format!(
        "[sinks.{name}]\ntype = \"forward\"\nmatch = \"{pattern}\"\nservers = [{{ address = \"127.0.0.1:{port}\" }}]\n\
         reconnect_min = \"50ms\"\nreconnect_max = \"100ms\"\ndrain_timeout = \"1s\"\nbuffer = {{ max_bytes = 1 }}\n\n"
    )
}

/// The value of a counter or gauge on `/metrics`.
fn metric(api: std::net::SocketAddr, name_and_labels: &str) -> f64 {
    metric_value(&api_get(api, "/metrics"), name_and_labels)
}

/// Waits until the HTTP source has read `n` records.
fn wait_read(api: std::net::SocketAddr, n: usize) {
    wait_until("the requests read", Duration::from_secs(20), || {
        metric(api, "logferry_source_records_total{component=\"in\"}") >= n as f64
    });
}

/// The three lines of a short trace `name`, as one body.
fn short_trace(name: &str) -> String {
    format!(
        "2026-11-22 10:00:00 ERROR {name} failed\njava.lang.IllegalStateException: boom {name}\n\tat com.example.App.handle(App.java:1)\n"
    )
}

/// `max_streams = 1`: a trace of `app.b` sends the held trace of `app.a`
/// on, under its own tag (to `app.a`'s sink, never into `app.b`'s batch).
#[test]
fn max_streams_sends_the_evicted_record_under_its_own_tag() {
    let cfg = http_config(
        "app.**",
        "max_streams = 1\nflush_timeout = \"2s\"\n",
        &(file_sink("a", "app.a") + &file_sink("b", "app.b")),
    );
    let mut lf = Logferry::start(&cfg);
    let addr = lf.http_addr("in");
    let api = lf.address("api listening");
    let mut a = Http::connect(addr);
    a.send("/app.a", &short_trace("a"));
    wait_read(api, 3);
    let mut b = Http::connect(addr);
    b.send("/app.b", &short_trace("b"));
    assert_eq!(a.status(), Some(200));
    assert_eq!(b.status(), Some(200));
    let (a_out, b_out) = (lf.path("a.log"), lf.path("b.log"));
    wait_until("both traces", Duration::from_secs(20), || {
        read_lines(&a_out).len() + read_lines(&b_out).len() >= 2
    });
    assert!(lf.stop().success());
    assert_eq!(messages(&a_out), [short_trace("a").trim_end()]);
    assert_eq!(messages(&b_out), [short_trace("b").trim_end()]);
    assert_eq!(
        lf.final_counter(
            "logferry_multiline_records_total{component=\"traces\",ended_by=\"max_streams\"}"
        ),
        1
    );
}

/// A stop while two streams hold records bound for a sink whose queue is
/// full (its server never answers): the stop's bounded hand-over gives up,
/// and every client still waiting (the two held streams' and the one
/// whose record fills the queue) is answered with an error, never 200.
#[test]
fn a_stop_with_a_dead_sink_answers_every_waiting_client_with_an_error() {
    let cfg = http_config(
        "app.**",
        &format!("flush_timeout = \"1h\"\n{WAIT_FOR_SINKS}"),
        &dead_sink("out", "**"),
    );
    let mut lf = Logferry::start(&cfg);
    let addr = lf.http_addr("in");
    let api = lf.address("api listening");
    let mut fill = Http::connect(addr);
    fill.send("/fill", "fills the queue\n");
    wait_read(api, 1);
    let mut held = Vec::new();
    for (n, name) in ["app.a", "app.b"].into_iter().enumerate() {
        let mut c = Http::connect(addr);
        c.send(&format!("/{name}"), &short_trace(name));
        wait_read(api, 1 + 3 * (n + 1));
        held.push(c);
    }
    lf.stop();
    assert_eq!(
        lf.final_counter("logferry_filter_handover_timeouts_total"),
        1
    );
    let mut answers = vec![fill.status()];
    answers.extend(held.iter_mut().map(Http::status));
    for (who, status) in ["fill", "app.a", "app.b"].iter().zip(&answers) {
        assert!(
            status.is_some_and(|s| s >= 300),
            "{who} got {status:?}, all: {answers:?}"
        );
    }
}

/// One sink's server never answers and its queue is full; held records
/// bound for another, healthy sink still go out at their flush timeout,
/// and their client is answered then, whatever the dead sink does.
#[test]
fn a_dead_sink_does_not_hold_up_held_records_for_a_healthy_one() {
    let cfg = http_config(
        "**",
        &format!("flush_timeout = \"500ms\"\n{WAIT_FOR_SINKS}"),
        &(dead_sink("dead", "dead.**") + &file_sink("ok", "ok.**")),
    );
    let mut lf = Logferry::start(&cfg);
    let addr = lf.http_addr("in");
    let api = lf.address("api listening");
    // the first fills the dead sink's queue, the second waits for room
    let mut dead = Vec::new();
    for name in ["dead.one", "dead.two"] {
        let mut c = Http::connect(addr);
        c.send(&format!("/{name}"), &format!("{name}\n"));
        dead.push(c);
    }
    wait_until(
        "both flushed towards the dead sink",
        Duration::from_secs(20),
        || {
            metric(
                api,
                "logferry_multiline_records_total{component=\"traces\",ended_by=\"flush_timeout\"}",
            ) >= 2.0
        },
    );
    std::thread::sleep(Duration::from_millis(300));
    let out = lf.path("ok.log");
    let mut ok = Http::connect(addr);
    let asked = std::time::Instant::now();
    let status = ok.post("/ok.a", &short_trace("ok"));
    let took = asked.elapsed();
    eprintln!("the healthy sink's client was answered in {took:?}");
    assert_eq!(status, Some(200), "after {took:?}");
    // flush_timeout (0.5 s) and a timer tick, with a loaded machine's margin
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
    assert_eq!(messages(&out), [short_trace("ok").trim_end()]);
    lf.stop();
}

/// Trace `i` of the one-line-per-request test: 5 to 30 lines.
fn java_trace(i: usize) -> Vec<String> {
    let lines = 5 + (i * 7) % 26;
    let mut t = vec![
        format!("2026-11-22 10:00:00 ERROR request {i} failed"),
        format!("java.lang.IllegalStateException: boom {i}"),
    ];
    for f in 0..lines - 4 {
        t.push(format!("\tat com.example.App.step{f}(App.java:{i})"));
    }
    t.push(format!("Caused by: java.io.IOException: disk full {i}"));
    t.push("\t... 12 more".into());
    t
}

/// The defaults, and clients that post one line per request and wait for
/// each answer (as a logging library's HTTP appender does): every trace
/// arrives joined exactly once, and each answer comes promptly (the
/// filter answers a line once it holds it).
#[test]
fn one_line_per_request_clients_are_answered_promptly_and_traces_joined() {
    let cfg = http_config("app.**", "", &file_sink("out", "**"));
    let mut lf = Logferry::start(&cfg);
    let addr = lf.http_addr("in");
    let (clients, traces) = (8, 200);
    let threads: Vec<_> = (0..clients)
        .map(|k| {
            std::thread::spawn(move || {
                let mut c = Http::connect(addr);
                let mut took = Vec::new();
                let mut slow = 0;
                for i in (k..traces).step_by(clients) {
                    for line in java_trace(i) {
                        let asked = std::time::Instant::now();
                        let status = c.post(&format!("/app.c{k}"), &format!("{line}\n"));
                        took.push(asked.elapsed());
                        assert_eq!(status, Some(200), "trace {i}: {line:?}");
                        // a second per line would take this test for ever
                        if asked.elapsed() > Duration::from_millis(900) {
                            slow += 1;
                            assert!(slow < 20, "answers take a second each: {took:?}");
                        }
                    }
                }
                took
            })
        })
        .collect();
    let mut took: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    took.sort();
    let p99 = took[took.len() * 99 / 100];
    let p50 = took[took.len() / 2];
    eprintln!(
        "{} one-line requests: p50 {p50:?}, p99 {p99:?}, max {:?}",
        took.len(),
        took[took.len() - 1]
    );
    let out = lf.path("out.log");
    // the last trace of each client goes out at the flush timeout (1 s)
    wait_until("every trace", Duration::from_secs(30), || {
        read_lines(&out).len() >= traces
    });
    assert!(lf.stop().success());
    let mut got = messages(&out);
    got.sort();
    let mut want: Vec<String> = (0..traces).map(|i| java_trace(i).join("\n")).collect();
    want.sort();
    assert_eq!(got.len(), want.len(), "records written");
    assert!(got == want, "traces not joined exactly");
    // 50 ms is the aim (measured and printed above); the bound leaves
    // room for a loaded machine running debug builds
    assert!(p99 < Duration::from_millis(500), "p99 {p99:?}");
}

/// `logferry tap` on a multiline filter shows the records its timer
/// sends (a trace with no line after it), not only those a batch carries.
#[test]
fn a_tap_on_the_filter_shows_what_its_timer_flushes() {
    use std::io::BufRead;
    let cfg = http_config(
        "app",
        "flush_timeout = \"300ms\"\n",
        &file_sink("out", "**"),
    );
    let mut lf = Logferry::start(&cfg);
    let addr = lf.http_addr("in");
    let api = lf.address("api listening").to_string();
    let mut tap = std::process::Command::new(BIN)
        .args(["tap", "traces", "--api", &api])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = tap.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // until the tap is attached, what the filter sends is not shown: one
    // trace every half second until one is
    let mut c = Http::connect(addr);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen = None;
    let mut n = 0;
    while seen.is_none() && std::time::Instant::now() < deadline {
        assert_eq!(c.post("/app", &short_trace(&format!("t{n}"))), Some(200));
        n += 1;
        while let Ok(l) = rx.recv_timeout(Duration::from_millis(500)) {
            let v: serde_json::Value = serde_json::from_str(&l).unwrap_or_default();
            if let Some(m) = v["record"]["message"].as_str() {
                seen = Some(m.to_string());
                break;
            }
        }
    }
    let _ = tap.kill();
    let _ = tap.wait();
    let seen = seen.expect("the tap showed none of the filter's records");
    assert!(
        (0..n).any(|i| seen == short_trace(&format!("t{i}")).trim_end()),
        "{seen:?}"
    );
    lf.stop();
}

/// `logferry COMMAND -c FILE` with `config` in FILE (in `dir`).
fn logferry_cli(command: &str, config: &str, dir: &Path) -> std::process::Output {
    let path = dir.join("c.toml");
    std::fs::write(&path, config).unwrap();
    std::process::Command::new(BIN)
        .args([command, "-c"])
        .arg(&path)
        .output()
        .unwrap()
}

/// `logferry test` with the multiline filter as the output: the record it
/// still holds at the end of the inputs is there, as at a stop.
#[test]
fn logferry_test_shows_the_record_the_filter_holds_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let trace = short_trace("x");
    let lines: Vec<String> = trace.lines().map(|l| format!("{l:?}")).collect();
    let config = format!(
        "[sources.in]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n\n\
         [filters.traces]\ntype = \"multiline\"\nmatch = \"app\"\nparser = \"java\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"/nonexistent/never-written.log\"\n\n\
         [[tests]]\nname = \"a held trace\"\n[[tests.inputs]]\nsource = \"in\"\ntag = \"app\"\nlines = [{}]\n\
         [[tests.outputs]]\nfilter = \"traces\"\nrecords = [{{ message = {:?} }}]\n",
        lines.join(", "),
        trace.trim_end()
    );
    let out = logferry_cli("test", &config, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ok"), "{stdout}");
}

/// `validate` names the trade-off of answering a waiting client for the
/// lines a multiline filter holds, where a source has such clients; with
/// `ack = "sinks"`, or only a tailed file, it says nothing.
#[test]
fn validate_warns_that_held_lines_are_answered_before_delivery() {
    let dir = tempfile::tempdir().unwrap();
    let validate = |source: &str, filter: &str| {
        let config = format!(
            "{source}\n[filters.traces]\ntype = \"multiline\"\nmatch = \"**\"\nparser = \"java\"\n{filter}\n\
             [sinks.out]\ntype = \"null\"\nmatch = \"**\"\n"
        );
        let out = logferry_cli("validate", &config, dir.path());
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let http = "[sources.in]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n";
    let stderr = validate(http, "");
    assert!(
        stderr.contains("warning:")
            && stderr.contains("[filters.traces]")
            && stderr.contains("ack = \"held\"")
            && stderr.contains("lost"),
        "{stderr}"
    );
    assert!(!validate(http, WAIT_FOR_SINKS).contains("warning"));
    let tail = "[sources.app]\ntype = \"tail\"\npaths = [\"/tmp/x.log\"]\ntag = \"app\"\n";
    assert!(!validate(tail, "").contains("warning"));
}

/// A reload that changes the filter while it holds a trace its client was
/// answered for (`ack = "held"`): the trace goes on through the new
/// filters and arrives, rather than being dropped with the old filter.
#[test]
fn a_reload_sends_on_what_the_replaced_filter_holds() {
    let sinks = file_sink("out", "**");
    let mut lf = Logferry::start(&http_config("app", "flush_timeout = \"1h\"\n", &sinks));
    let addr = lf.http_addr("in");
    let mut c = Http::connect(addr);
    assert_eq!(c.post("/app", &short_trace("held")), Some(200));
    let out = lf.path("out.log");
    std::thread::sleep(Duration::from_millis(300));
    assert!(read_lines(&out).is_empty(), "held");
    lf.rewrite_config(&http_config("app", "flush_timeout = \"50ms\"\n", &sinks));
    lf.signal(libc::SIGHUP);
    lf.wait_for_log("configuration reloaded", Duration::from_secs(30));
    wait_until("the held trace", Duration::from_secs(20), || {
        !read_lines(&out).is_empty()
    });
    assert!(lf.stop().success());
    assert_eq!(messages(&out), [short_trace("held").trim_end()]);
}
