//! `logferry tap` and `GET /tap`, against the built binary: a tap shows
//! the records of the component it names only, with a tag its pattern
//! matches, no more than its rate, and a tap whose client never reads
//! does not hold up the pipeline: every numbered record still arrives.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// Two generators with tags `app.a` and `app.b`, a grep filter `keep`
/// that keeps every record, a file sink, and the API.
const TWO_TAGS: &str = r#"
[sources.gen_a]
type = "generator"
tag = "app.a"
rate = 2000
message = "from a"

[sources.gen_b]
type = "generator"
tag = "app.b"
rate = 2000
message = "from b"

[filters.keep]
type = "grep"
match = "app.**"
include = { message = "^from" }

[sinks.out]
type = "file"
match = "**"
path = "{dir}/out.log"

[api]
address = "127.0.0.1:0"
"#;

/// The JSON lines `logferry tap ARGS` prints within `window`.
fn tap_lines(args: &[&str], window: Duration) -> Vec<serde_json::Value> {
    let mut child = Command::new(BIN)
        .arg("tap")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + window;
    let mut lines = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(mpsc::RecvTimeoutError::Timeout) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "logferry tap ended: {:?} {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

#[test]
fn a_tap_shows_one_component_one_tag_pattern_within_its_rate() {
    let mut lf = Logferry::start(TWO_TAGS);
    let api = lf.address("api listening");
    let api = api.to_string();
    let window = Duration::from_secs(3);
    let lines = tap_lines(
        &["keep", "--api", &api, "--tag", "app.a", "--rate", "5"],
        window,
    );
    let records: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["record"].is_object()).collect();
    assert!(!records.is_empty(), "no record tapped: {lines:?}");
    for r in &records {
        assert_eq!(r["component"], "keep", "{r}");
        assert_eq!(r["tag"], "app.a", "{r}");
        assert_eq!(r["record"]["message"], "from a", "{r}");
        assert!(r["time"].as_f64().is_some(), "{r}");
    }
    // 5 a second, over at most 4 one-second windows
    assert!(
        records.len() <= 20,
        "{} records in {window:?}",
        records.len()
    );
    // the rest was counted and said so
    let skipped: u64 = lines.iter().filter_map(|l| l["skipped"].as_u64()).sum();
    assert!(skipped > 0, "no skipped notice: {lines:?}");
    assert!(lines.iter().all(|l| l["component"] == "keep"), "{lines:?}");
    // a sink's tap shows what it receives, a source's what it read
    let lines = tap_lines(
        &["out", "--api", &api, "--tag", "app.b", "--rate", "50"],
        Duration::from_secs(2),
    );
    let records: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["record"].is_object()).collect();
    assert!(!records.is_empty(), "{lines:?}");
    assert!(
        records.iter().all(|l| l["tag"] == "app.b"
            && l["component"] == "out"
            && l["record"]["message"] == "from b"),
        "{lines:?}"
    );
    let lines = tap_lines(&["gen_b", "--api", &api], Duration::from_secs(2));
    let tags: Vec<&serde_json::Value> = lines.iter().filter_map(|l| l.get("tag")).collect();
    assert!(
        !tags.is_empty() && tags.iter().all(|t| *t == "app.b"),
        "{lines:?}"
    );
    lf.stop();
}

#[test]
fn an_unknown_component_is_refused_with_the_ones_there_are() {
    let mut lf = Logferry::start(TWO_TAGS);
    let api = lf.address("api listening");
    let out = Command::new(BIN)
        .args(["tap", "nope", "--api", &api.to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("404"), "{err}");
    assert!(err.contains("gen_a, gen_b, keep, out"), "{err}");
    lf.stop();
}

/// A client that asks for a tap on the busiest point and never reads a
/// byte: the tap skips, the pipeline does not wait, every numbered record
/// reaches the sink once, and the run ends as a finite run does.
#[test]
fn a_tap_nobody_reads_never_holds_up_the_pipeline() {
    let n = 200_000;
    let mut lf = Logferry::start(&format!(
        r#"
[sources.gen]
type = "generator"
tag = "num"
count = {n}
rate = 50000
size = 12

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/out.log"

[api]
address = "127.0.0.1:0"
"#
    ));
    let api = lf.address("api listening");
    // two stuck clients: at the source, and at the sink, asking for the most
    let mut stuck = Vec::new();
    for component in ["gen", "out"] {
        let mut s = TcpStream::connect(api).unwrap();
        write!(
            s,
            "GET /tap?component={component}&rate=10000 HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
        )
        .unwrap();
        stuck.push(s);
    }
    let lines = wait_for_lines(&lf.path("out.log"), n, Duration::from_secs(120));
    let mut got: Vec<usize> = lines.iter().map(|l| l.trim().parse().unwrap()).collect();
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), n, "each record once");
    assert_eq!(got[n - 1] - got[0], n - 1, "numbered without a gap");
    let status = lf.wait(Duration::from_secs(60));
    assert!(status.success(), "{status:?}\n{}", lf.log_text());
    // the taps were there, and left records out rather than wait
    let skipped = |c: &str| {
        lf.final_counter(&format!(
            "logferry_tap_skipped_records_total{{component=\"{c}\"}}"
        ))
    };
    assert!(
        skipped("gen") > 0 && skipped("out") > 0,
        "{}",
        lf.log_text()
    );
    drop(stuck);
}

/// `logferry top` has a row for a filter: what reached it (IN/S), what
/// went on (RECORDS/S) and what it dropped on purpose (DROPPED).
#[test]
fn top_shows_a_filter_with_what_reached_it_went_on_and_was_dropped() {
    let mut lf = Logferry::start(&TWO_TAGS.replace("^from", "^from a"));
    let api = lf.address("api listening");
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new(BIN)
        .args(["top", "--once", "--interval", "1s", "--api"])
        .arg(api.to_string())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("keep "))
        .unwrap_or_else(|| panic!("no filter row:\n{table}"))
        .split_whitespace()
        .collect();
    assert_eq!(&row[1..3], ["grep", "filter"], "{table}");
    let number = |i: usize| row[i].parse::<f64>().unwrap();
    let (went_on, dropped, reached) = (number(3), number(7), number(9));
    assert!(went_on > 0.0 && dropped > 0.0, "{table}");
    assert!(reached > went_on, "{table}");
    lf.stop();
}

/// Opens `GET /tap?component=COMPONENT&rate=10000` and reads the head of
/// the answer; the connection stays open, and nothing more is read.
fn open_tap(api: std::net::SocketAddr, component: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(api).unwrap();
    write!(
        s,
        "GET /tap?component={component}&rate=10000 HTTP/1.1\r\nhost: 127.0.0.1:{}\r\n\r\n",
        api.port()
    )
    .unwrap();
    (s.try_clone().unwrap(), head_of(&mut s))
}

/// The head of an answer (up to the blank line), read byte by byte so
/// nothing after it is taken.
fn head_of(s: &mut TcpStream) -> String {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Four taps whose clients never read, at the source and at the sink,
/// asking for the most, while 128 KiB records flow under
/// `memory = "64MiB"`: what the taps hold waiting for their readers is
/// charged to the budget, so the process stays near it (it took 823 MiB
/// with 4 such taps), and every numbered record reaches the sink once.
#[test]
fn taps_nobody_reads_stay_within_the_memory_budget() {
    let n = 3_000;
    let size = 128 * 1024;
    let mut lf = Logferry::start(&format!(
        r#"
[limits]
memory = "64MiB"

[sources.gen]
type = "generator"
tag = "num"
count = {n}
rate = 1000
size = {size}
batch_records = 16

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/out.log"

[api]
address = "127.0.0.1:0"
"#
    ));
    let api = lf.address("api listening");
    let pid = lf.pid();
    let taps: Vec<(TcpStream, String)> = ["gen", "gen", "out", "out"]
        .iter()
        .map(|c| open_tap(api, c))
        .collect();
    for (_, head) in &taps {
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
    let path = lf.path("out.log");
    let whole = (n * (size + 1)) as u64;
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut peak = 0;
    loop {
        if let Some(kib) = status_kib(pid, "RssAnon") {
            peak = peak.max(kib);
        }
        let written = std::fs::metadata(&path).map_or(0, |m| m.len());
        if written >= whole {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{written} of {whole} bytes written\n{}",
            lf.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // the taps took what they could and skipped the rest
    let status = lf.stop();
    assert!(status.success(), "{status:?}");
    let skipped = |c: &str| {
        lf.final_counter(&format!(
            "logferry_tap_skipped_records_total{{component=\"{c}\"}}"
        ))
    };
    assert!(
        skipped("gen") > 0 && skipped("out") > 0,
        "{}",
        lf.log_text()
    );
    drop(taps);
    // every numbered record once (a line is its number, then `x`s)
    let text = std::fs::read(&path).unwrap();
    let mut got: Vec<usize> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|line| {
            assert_eq!(line.len(), size);
            let digits = line.iter().take_while(|b| b.is_ascii_digit()).count();
            std::str::from_utf8(&line[..digits])
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(got.len(), n, "records written");
    got.sort_unstable();
    got.dedup();
    assert_eq!(got.len(), n, "each record once");
    assert_eq!(got[n - 1] - got[0], n - 1, "numbered without a gap");
    let peak_mib = peak / 1024;
    eprintln!("RssAnon peak: {peak_mib} MiB");
    assert!(
        peak_mib < 112,
        "RssAnon peaked at {peak_mib} MiB with a 64 MiB budget"
    );
}

/// Taps and API connections have caps (`max_taps`, 8, and
/// `max_connections`, 64, by default): past them a client gets 503 with
/// a reason at once, and once one goes, the next is served.
#[test]
fn taps_and_connections_past_their_caps_get_503() {
    let mut lf = Logferry::start(TWO_TAGS);
    let api = lf.address("api listening");
    let mut taps: Vec<TcpStream> = (0..8)
        .map(|_| {
            let (s, head) = open_tap(api, "keep");
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            s
        })
        .collect();
    let (_, head) = open_tap(api, "keep");
    assert!(head.starts_with("HTTP/1.1 503"), "a ninth tap: {head}");
    let refused = api_get(api, "/tap?component=keep");
    assert!(refused.contains("max_taps"), "{refused}");
    // one leaves: its place is taken once its end is seen
    drop(taps.pop());
    wait_until("a tap's place freed", Duration::from_secs(10), || {
        let (s, head) = open_tap(api, "keep");
        let ok = head.starts_with("HTTP/1.1 200");
        if ok {
            taps.push(s);
        }
        ok
    });
    // 8 taps and 56 connections still sending their request: full
    let mut pending = Vec::new();
    for _ in 0..56 {
        let mut s = TcpStream::connect(api).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        pending.push(s);
    }
    let mut s = TcpStream::connect(api).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let head = head_of(&mut s);
    assert!(head.starts_with("HTTP/1.1 503"), "connection 65: {head}");
    drop(pending);
    wait_until("connections freed", Duration::from_secs(10), || {
        api_get(api, "/health").starts_with("HTTP/1.1 200")
    });
    let metrics = api_get(api, "/metrics");
    for reason in ["too_many_taps", "too_many_connections"] {
        let n = metric_value(
            &metrics,
            &format!("logferry_api_refused_requests_total{{reason=\"{reason}\"}}"),
        );
        assert!(n >= 1.0, "{reason}: {n}");
    }
    drop(taps);
    lf.stop();
}
