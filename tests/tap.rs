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
            "GET /tap?component={component}&rate=10000 HTTP/1.1\r\nhost: x\r\n\r\n"
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
