//! The `loki` sink, black-box: the built binary with an HTTP source in
//! front, numbered records, and every number counted at the end.
//!
//! Against a real VictoriaLogs (scripts/victorialogs.sh), which takes
//! Loki's push API and is read back with LogsQL: 100,000 records in 50
//! streams, each once with its labels and structured metadata; a server
//! stopped for 10 s mid-run, nothing lost. Against a scripted server
//! (tests/common/scripted.rs), for an answer a real one gives only with
//! the wrong clock: a push refused with 400 for one poisoned entry, which
//! alone is dead-lettered.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::otelcol::post as post_to;
use common::scripted::{Answer, Scripted};
use common::victorialogs::{unique_name, VictoriaLogs};
use common::Logferry;
use logferry::protocol::msgpack::{Reader, Value as Mp};
use logferry::sinks::loki::encode::PushRequest;
use prost::Message as _;
use serde_json::{json, Value};

/// The test server itself: a Loki JSON push is read back by its label.
#[test]
fn victorialogs_reads_back_a_loki_push() {
    let v = VictoriaLogs::shared();
    assert!(v.is_up());
    let job = unique_name("probe");
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let body = format!(
        r#"{{"streams":[{{"stream":{{"job":"{job}"}},"values":[["{ns}","line 1"],["{}","line 2",{{"trace_id":"abc"}}]]}}]}}"#,
        ns + 1
    );
    let (status, text) = post_to(
        v.url(),
        "/insert/loki/api/v1/push",
        "application/json",
        body.as_bytes(),
    )
    .unwrap();
    assert_eq!(status, 204, "{text}");
    let rows = v.wait_rows(&format!("job:{job}"), 2, Duration::from_secs(30));
    assert_eq!(rows.len(), 2);
    let traced: Vec<_> = rows.iter().filter(|r| r["trace_id"] == "abc").collect();
    assert_eq!(traced.len(), 1);
    assert_eq!(traced[0]["_msg"], "line 2");
}

/// logferry with an HTTP source `web` and a `loki` sink `loki` to
/// `endpoint` (`extra` added to its table), retrying every 50 ms to 1 s,
/// with a dead-letter file.
fn config(endpoint: &str, extra: &str) -> String {
    configured(
        endpoint,
        &format!("dead_letter = \"{{dir}}/dead.msgpack\"\n{extra}"),
        "initial = \"50ms\"\nmax = \"1s\"",
    )
}

/// logferry with an HTTP source `web` and a `loki` sink `loki` to
/// `endpoint`, `sink` added to its table and `retry` to its retry table.
fn configured(endpoint: &str, sink: &str, retry: &str) -> String {
    format!(
        r#"
[api]
address = "127.0.0.1:0"

[sources.web]
type = "http"
address = "127.0.0.1:0"

[sinks.loki]
type = "loki"
match = "**"
endpoint = "{endpoint}"
{sink}

[sinks.loki.retry]
{retry}
"#
    )
}

/// Record `n`: its number in the message and as a field, one of 50
/// streams, a trace id.
fn record(n: u64) -> Value {
    json!({
        "message": format!("record {n}"),
        "n": n,
        "stream": format!("s{}", n % 50),
        "trace": format!("t{n}"),
    })
}

/// One NDJSON POST on a connection of its own: (status, body).
fn post(addr: SocketAddr, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "POST /app HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

fn ndjson(range: std::ops::Range<u64>, f: impl Fn(u64) -> Value) -> String {
    range.map(|n| format!("{}\n", f(n))).collect()
}

/// Posts records `0..n` in requests of `per`, from `threads` clients at
/// once, asserting each is answered 200 (the sink has them).
fn post_all(addr: SocketAddr, n: u64, per: u64, threads: u64) {
    post_range(addr, 0..n, per, threads);
}

/// [`post_all`] for the records numbered `range`.
fn post_range(addr: SocketAddr, range: std::ops::Range<u64>, per: u64, threads: u64) {
    let (first, n) = (range.start, range.end);
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut from = first + t * per;
                while from < n {
                    let to = (from + per).min(n);
                    let (status, body) = post(addr, &ndjson(from..to, record));
                    assert_eq!(status, 200, "records {from}..{to}: {body}");
                    from += per * threads;
                }
            });
        }
    });
}

/// How often each number is among `rows` (its `n` metadata field).
fn numbers(rows: &[Value]) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    for r in rows {
        let n = r["n"]
            .as_str()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a row without its number: {r}"));
        *seen.entry(n).or_insert(0) += 1;
    }
    seen
}

/// The labels and metadata each record gets, so that LogsQL finds them
/// as fields: `run` (this test's own), `stream` from the record (left
/// out of the line), the tag; `n` and `trace_id` as structured metadata.
fn labelled(run: &str, encoding: &str) -> String {
    format!(
        "encoding = \"{encoding}\"\nline_format = \"message\"\nremove_label_fields = true\n\
         labels = {{ run = \"{run}\", stream = \"{{stream}}\", tag = \"${{tag}}\" }}\n\
         structured_metadata = {{ n = \"${{record.n}}\", trace_id = \"{{trace}}\" }}\n\
         batch_records = 2000"
    )
}

#[test]
fn a_hundred_thousand_records_in_fifty_streams_are_read_back_once_each_with_labels_and_metadata() {
    let v = VictoriaLogs::shared();
    let run = unique_name("loki");
    let mut lf = Logferry::start(&config(
        &format!("{}/insert", v.url()),
        &labelled(&run, "protobuf"),
    ));
    let n = 100_000;
    post_all(lf.http_addr("web"), n, 1000, 4);
    let query = format!("_stream:{{run=\"{run}\"}}");
    let rows = v.wait_rows(&query, n, Duration::from_secs(120));
    let seen = numbers(&rows);
    assert_eq!(seen.len(), n as usize, "every number arrived");
    let twice: Vec<_> = seen.iter().filter(|(_, &c)| c != 1).collect();
    assert!(
        twice.is_empty(),
        "each once: {:?}",
        &twice[..twice.len().min(10)]
    );
    let mut streams = std::collections::BTreeSet::new();
    for r in &rows {
        let k: u64 = r["n"].as_str().unwrap().parse().unwrap();
        assert_eq!(r["_msg"], format!("record {k}"), "{r}");
        assert_eq!(r["stream"], format!("s{}", k % 50), "{r}");
        assert_eq!(r["tag"], "app", "{r}");
        assert_eq!(r["trace_id"], format!("t{k}"), "{r}");
        assert_eq!(
            r["_stream"],
            format!("{{run=\"{run}\",stream=\"s{}\",tag=\"app\"}}", k % 50),
            "the labels make the stream, the metadata does not: {r}"
        );
        streams.insert(r["_stream"].as_str().unwrap().to_string());
    }
    assert_eq!(streams.len(), 50);
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// The sink's default line (the record as JSON) under labels that are the
/// same for a whole batch (each record read once as its line is written):
/// every record once, its line read back as the record's fields.
#[test]
fn json_lines_under_labels_of_the_tag_only_are_read_back_once_each_whole() {
    let v = VictoriaLogs::shared();
    let run = unique_name("lokiline");
    let extra = format!("labels = {{ run = \"{run}\", tag = \"${{tag}}\" }}\nbatch_records = 2000");
    let mut lf = Logferry::start(&config(&format!("{}/insert", v.url()), &extra));
    let n = 20_000;
    post_all(lf.http_addr("web"), n, 1000, 4);
    let rows = v.wait_rows(
        &format!("_stream:{{run=\"{run}\"}}"),
        n,
        Duration::from_secs(120),
    );
    // VictoriaLogs reads a JSON line into fields, as text
    for r in &rows {
        let k: u64 = r["n"]
            .as_str()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{r}"));
        let want = record(k);
        for field in ["message", "stream", "trace"] {
            assert_eq!(r[field], want[field], "{r}");
        }
        assert_eq!(r["tag"], "app", "{r}");
    }
    let seen = numbers(&rows);
    assert_eq!(seen.len(), n as usize, "every number arrived");
    assert!(seen.values().all(|&c| c == 1), "each once");
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn json_pushes_with_gzip_are_read_back_too() {
    let v = VictoriaLogs::shared();
    let run = unique_name("lokijson");
    let extra = format!("{}\ncompression = \"gzip\"", labelled(&run, "json"));
    let mut lf = Logferry::start(&config(&format!("{}/insert", v.url()), &extra));
    post_all(lf.http_addr("web"), 1000, 250, 2);
    let rows = v.wait_rows(
        &format!("_stream:{{run=\"{run}\"}}"),
        1000,
        Duration::from_secs(60),
    );
    let seen = numbers(&rows);
    assert_eq!(seen.len(), 1000);
    assert!(seen.values().all(|&c| c == 1));
    let r = rows.iter().find(|r| r["n"] == "7").unwrap();
    assert_eq!(
        (r["_msg"].as_str(), r["trace_id"].as_str()),
        (Some("record 7"), Some("t7"))
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn victorialogs_stopped_for_ten_seconds_mid_run_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let v = VictoriaLogs::private(dir.path());
    let run = unique_name("outage");
    let mut lf = Logferry::start(&config(
        &format!("{}/insert", v.url()),
        &labelled(&run, "protobuf"),
    ));
    let addr = lf.http_addr("web");
    let n = 100_000;
    let query = format!("_stream:{{run=\"{run}\"}}");
    // the first half stored: each client is answered once its records are
    post_range(addr, 0..n / 2, 500, 4);
    v.stop();
    std::thread::scope(|s| {
        // the second half while the store is down
        let poster = s.spawn(|| post_range(addr, n / 2..n, 500, 4));
        std::thread::sleep(Duration::from_secs(10));
        assert!(
            !poster.is_finished(),
            "clients answered while the store was down"
        );
        v.restart();
        poster.join().unwrap();
    });
    let rows = v.wait_rows(&query, n, Duration::from_secs(120));
    let seen = numbers(&rows);
    let lost: Vec<u64> = (0..n).filter(|k| !seen.contains_key(k)).collect();
    assert!(
        lost.is_empty(),
        "{} lost, first {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// The numbers of the entries of a push (its lines are `record N…`).
fn pushed(body: &[u8]) -> Vec<u64> {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .expect("a snappy body");
    let push = PushRequest::decode(raw.as_slice()).expect("a PushRequest");
    push.streams
        .iter()
        .flat_map(|s| &s.entries)
        .map(|e| {
            e.line
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("an unnumbered line {:?}", e.line))
        })
        .collect()
}

/// The numbered records of a dead-letter file, each with its kind and
/// reason.
fn dead_letters(path: &std::path::Path) -> Vec<(u64, String, String)> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let text = |r: &mut Reader<'_>| match r.read().unwrap() {
        Mp::Str(s) => String::from_utf8_lossy(s).into_owned(),
        Mp::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    };
    let mut out = Vec::new();
    let mut r = Reader::new(&data);
    while !r.is_empty() {
        assert_eq!(r.read_array_len().unwrap(), 3, "a frame with options");
        r.read_bytes().unwrap();
        let entries = r.read_bytes().unwrap();
        let mut options = BTreeMap::new();
        for _ in 0..r.read_map_len().unwrap() {
            let k = text(&mut r);
            options.insert(k, text(&mut r));
        }
        let mut e = Reader::new(entries);
        while !e.is_empty() {
            e.read_array_len().unwrap();
            e.skip().unwrap();
            let mut n = None;
            for _ in 0..e.read_map_len().unwrap() {
                let (k, v) = (text(&mut e), text(&mut e));
                if k == "n" {
                    n = v.parse().ok();
                }
            }
            out.push((
                n.expect("a numbered record"),
                options["kind"].clone(),
                options["reason"].clone(),
            ));
        }
    }
    out
}

#[test]
fn a_push_refused_for_one_poisoned_entry_is_split_and_only_that_entry_is_dead_lettered() {
    const POISONED: u64 = 537;
    let refusal = "entry for stream '{run=\"x\"}' has timestamp too old: 1970-01-01";
    let server = Scripted::start(move |_, req| {
        if pushed(&req.body).contains(&POISONED) {
            Answer::new(400, "text/plain", refusal.as_bytes().to_vec())
        } else {
            Answer::new(204, "text/plain", Vec::new())
        }
    });
    let mut lf = Logferry::start(&config(
        &server.url(),
        "line_format = \"message\"\nlabels = { stream = \"{stream}\" }\nbatch_records = 5000",
    ));
    let n = 2000;
    let (status, body) = post(lf.http_addr("web"), &ndjson(0..n, record));
    assert_eq!(
        status, 422,
        "the client is told one record was set aside: {body}"
    );
    let mut delivered = BTreeMap::new();
    for req in server.requests() {
        assert_eq!(req.path, "/loki/api/v1/push");
        assert_eq!(req.header("content-type"), Some("application/x-protobuf"));
        let got = pushed(&req.body);
        if !got.contains(&POISONED) {
            for k in got {
                *delivered.entry(k).or_insert(0) += 1;
            }
        }
    }
    let want: Vec<u64> = (0..n).filter(|&k| k != POISONED).collect();
    assert_eq!(delivered.keys().copied().collect::<Vec<_>>(), want);
    assert!(delivered.values().all(|&c| c == 1), "each good entry once");
    let dead = dead_letters(&lf.path("dead.msgpack"));
    assert_eq!(
        dead,
        [(
            POISONED,
            "http_4xx".to_string(),
            format!("HTTP 400 Bad Request: {refusal}")
        )]
    );
    // about two pushes per halving, not one per entry
    assert!(
        server.requests().len() < 40,
        "{} pushes",
        server.requests().len()
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn a_push_answered_429_with_retry_after_is_sent_again_whole_with_its_tenant_and_credentials() {
    let server = Scripted::start(|k, _| match k {
        0 => Answer::new(429, "text/plain", b"ingestion rate limit exceeded".to_vec())
            .with_header("retry-after", "1"),
        _ => Answer::new(204, "text/plain", Vec::new()),
    });
    let mut lf = Logferry::start(&config(
        &format!("{}/prefix/", server.url()),
        "line_format = \"message\"\ntenant_id = \"team-a\"\n\
         auth = { strategy = \"basic\", user = \"lf\", password = \"s3cret\" }",
    ));
    let (status, body) = post(lf.http_addr("web"), &ndjson(0..500, record));
    assert_eq!(status, 200, "{body}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one push, then one retry");
    assert_eq!(requests[0].body, requests[1].body, "the same push, whole");
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "the 1 s asked for honoured (the backoff alone is 50ms), waited {waited:?}"
    );
    let mut got = pushed(&requests[1].body);
    got.sort_unstable();
    assert_eq!(got, (0..500).collect::<Vec<_>>());
    for req in &requests {
        assert_eq!(req.path, "/prefix/loki/api/v1/push");
        assert_eq!(req.header("x-scope-orgid"), Some("team-a"));
        // base64("lf:s3cret")
        assert_eq!(req.header("authorization"), Some("Basic bGY6czNjcmV0"));
    }
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// A push split in halves, one half taken and the other failing until
/// `retry.max_attempts` runs out, without a dead-letter file: the batch
/// goes back to its client, which sends it again whole. The half taken
/// is not pushed again: every entry reaches the server once.
#[test]
fn a_batch_given_back_after_retries_run_out_pushes_its_delivered_entries_once() {
    const N: u64 = 2000;
    const RESENDS: usize = 3;
    // the server: a push mixing both halves is refused (400, split);
    // the first half is taken; the second fails with 500 for its first
    // six pushes (two batches given back), then is taken
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let server = Scripted::start(move |_, req| {
        let got = pushed(&req.body);
        let low = got.iter().any(|&n| n < N / 2);
        let high = got.iter().any(|&n| n >= N / 2);
        if low && high {
            Answer::new(400, "text/plain", b"entry out of order".to_vec())
        } else if high && failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 6 {
            Answer::new(500, "text/plain", b"ingester unavailable".to_vec())
        } else {
            Answer::new(204, "text/plain", Vec::new())
        }
    });
    let mut lf = Logferry::start(&configured(
        &server.url(),
        "line_format = \"message\"\nbatch_records = 5000",
        "initial = \"20ms\"\nmax = \"100ms\"\nmax_attempts = 3",
    ));
    let body = ndjson(0..N, record);
    let mut answers = Vec::new();
    // a client sends a request it was not answered 2xx again
    for _ in 0..=RESENDS {
        let (status, _) = post(lf.http_addr("web"), &body);
        answers.push(status);
        if status == 200 {
            break;
        }
    }
    assert_eq!(answers.last(), Some(&200), "answers: {answers:?}");
    assert!(answers.len() > 1, "the batch was given back: {answers:?}");
    // the pushes the server took, as it answered them
    let (mut delivered, mut failures) = (BTreeMap::new(), 0);
    for req in server.requests() {
        let got = pushed(&req.body);
        let low = got.iter().any(|&n| n < N / 2);
        let high = got.iter().any(|&n| n >= N / 2);
        if low && high {
            continue;
        }
        if high {
            failures += 1;
            if failures <= 6 {
                continue;
            }
        }
        for k in got {
            *delivered.entry(k).or_insert(0) += 1;
        }
    }
    assert_eq!(
        delivered.keys().copied().collect::<Vec<_>>(),
        (0..N).collect::<Vec<_>>()
    );
    let twice: Vec<_> = delivered.iter().filter(|(_, &c)| c > 1).collect();
    assert!(
        twice.is_empty(),
        "{} entries pushed more than once, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(5)]
    );
    let api = lf.address("api listening");
    assert!(
        common::metric_value(
            &common::api_get(api, "/metrics"),
            "logferry_loki_entries_total{component=\"loki\",result=\"delivered_before\"}"
        ) >= (N / 2) as f64,
        "the entries delivered before were skipped"
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}
