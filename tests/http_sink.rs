//! The `http` sink against the world: logferry's own HTTP source (every
//! encoding and compression, HTTP/2), a scripted server (503, 429, 400,
//! answers that never come or never end, TLS with the wrong name), a kill
//! -9 of the sender, readiness, and Fluent Bit's and Fluentd's `in_http`.
//! Every test numbers its records and counts every number at the end.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// Generated lines are this wide: the record's number, zero-padded.
const WIDTH: usize = 10;

/// A generator of `n` numbered records tagged `tag` → the `http` sink
/// `out` (its settings in `sink`), and a copy of every record in
/// `{dir}/copy.log` (JSON lines, with times) by a second sink.
fn sender(tag: &str, n: usize, sink: &str) -> String {
    format!(
        r#"
[sources.gen]
type = "generator"
tag = "{tag}"
count = {n}
size = {WIDTH}
batch_records = 250

[sinks.out]
type = "http"
match = "**"
{sink}

[sinks.copy]
type = "file"
match = "**"
path = "{{dir}}/copy.log"
format = "json"

[api]
address = "127.0.0.1:0"
"#
    )
}

/// An HTTP source on a free port writing every record as a JSON line
/// (time, tag, record) to `{dir}/received.log`.
const RECEIVER: &str = r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[sinks.file]
type = "file"
match = "**"
path = "{dir}/received.log"
format = "json"
"#;

/// One JSON line of the file sink: (number, tag, time as a string).
fn parse_json_line(line: &str) -> (u64, String, String) {
    let v: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let message = v["record"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message in {line}"));
    (
        message
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}")),
        v["tag"].as_str().unwrap().to_string(),
        v["time"].as_str().unwrap().to_string(),
    )
}

/// How often each number occurs.
fn counts(numbers: impl IntoIterator<Item = u64>) -> BTreeMap<u64, usize> {
    let mut m = BTreeMap::new();
    for n in numbers {
        *m.entry(n).or_insert(0) += 1;
    }
    m
}

/// Fails unless `got` holds each of 0..n exactly once.
fn assert_each_once(what: &str, got: &BTreeMap<u64, usize>, n: usize) {
    let missing: Vec<u64> = (0..n as u64).filter(|i| !got.contains_key(i)).collect();
    let twice: Vec<u64> = got
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(k, _)| *k)
        .collect();
    let extra: Vec<u64> = got.keys().filter(|k| **k >= n as u64).copied().collect();
    assert!(
        missing.is_empty() && twice.is_empty() && extra.is_empty(),
        "{what}: {} missing (first {:?}), {} twice (first {:?}), {} unknown",
        missing.len(),
        missing.iter().take(5).collect::<Vec<_>>(),
        twice.len(),
        twice.iter().take(5).collect::<Vec<_>>(),
        extra.len()
    );
}

/// RFC 3339 (`…T00:20:38.123456789Z`) → nanoseconds since the epoch.
fn nanos(rfc3339: &str) -> i128 {
    let t = rfc3339.trim_end_matches('Z');
    let (date, clock) = t.split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, "0"));
    let c: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    // days from civil (Howard Hinnant)
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let secs = days * 86400 + c[0] * 3600 + c[1] * 60 + c[2];
    let frac = format!("{frac:0<9}");
    secs as i128 * 1_000_000_000 + frac[..9].parse::<i128>().unwrap()
}

/// Runs a sender to its end (the generator stops, the sinks drain, the
/// process exits 0: every record delivered).
fn run_to_end(lf: &mut Logferry) {
    let status = lf.wait(Duration::from_secs(120));
    assert!(
        status.success(),
        "sender exited {status}:\n{}",
        lf.log_text()
    );
}

/// The `/metrics` text of the process whose API logged its address.
fn metrics(lf: &mut Logferry) -> String {
    let api = lf.address("api listening");
    let r = api_get(api, "/metrics");
    r.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or(r)
}

// ---------------------------------------------------------------------------
// 1. to logferry's own HTTP source

#[test]
fn numbered_records_reach_our_http_source_once_with_tag_and_time_in_every_encoding() {
    let mut receiver = Logferry::start(RECEIVER);
    let port = receiver.http_addr("in").port();
    // (tag, records, encoding, compression, http_version)
    let runs: &[(&str, usize, &str, &str, &str)] = &[
        ("big.ndjson.none", 20_000, "ndjson", "none", "auto"),
        ("c.json.gzip", 2_000, "json", "gzip", "http1"),
        ("c.msgpack.zstd", 2_000, "msgpack", "zstd", "auto"),
        ("c.text.gzip", 2_000, "text", "gzip", "auto"),
        ("c.ndjson.zstd", 2_000, "ndjson", "zstd", "auto"),
        ("h2.msgpack.gzip", 2_000, "msgpack", "gzip", "http2"),
        ("h2.ndjson.none", 2_000, "ndjson", "none", "http2"),
    ];
    let mut senders: Vec<Logferry> = runs
        .iter()
        .map(|(tag, n, enc, comp, version)| {
            Logferry::start(&sender(
                tag,
                *n,
                &format!(
                    "uri = \"http://127.0.0.1:{port}/${{tag}}\"\nencoding = \"{enc}\"\n\
                     compression = \"{comp}\"\nhttp_version = \"{version}\"\n\
                     batch_records = 700\nlinger = \"20ms\""
                ),
            ))
        })
        .collect();
    for s in &mut senders {
        run_to_end(s);
    }
    let total: usize = runs.iter().map(|r| r.1).sum();
    let lines = wait_for_lines(
        &receiver.path("received.log"),
        total,
        Duration::from_secs(30),
    );
    let mut by_tag: HashMap<String, Vec<(u64, String)>> = HashMap::new();
    for l in &lines {
        let (n, tag, time) = parse_json_line(l);
        by_tag.entry(tag).or_default().push((n, time));
    }
    for ((tag, n, enc, _, _), s) in runs.iter().zip(&senders) {
        let got = by_tag.remove(*tag).unwrap_or_default();
        assert_each_once(tag, &counts(got.iter().map(|g| g.0)), *n);
        if *enc == "text" {
            continue; // lines carry no time: the receiver stamps its own
        }
        // the time each record was generated with, from the sender's copy
        let sent: HashMap<u64, String> = read_lines(&s.path("copy.log"))
            .iter()
            .map(|l| {
                let (n, _, t) = parse_json_line(l);
                (n, t)
            })
            .collect();
        for (num, time) in &got {
            // epoch seconds as a JSON float keep about a microsecond
            let d = (nanos(time) - nanos(&sent[num])).abs();
            assert!(
                d < 2_000,
                "{tag} record {num}: sent at {}, received with {time}",
                sent[num]
            );
        }
    }
    assert!(
        by_tag.is_empty(),
        "records under unknown tags: {:?}",
        by_tag.keys()
    );
}

#[test]
fn text_lines_go_byte_for_byte_whatever_their_first_byte() {
    // Latin-1 "Ü…" starts with 0xdc, which is also a msgpack array header:
    // a text body must never be taken for msgpack
    const N: usize = 40;
    let mut receiver = Logferry::start(&RECEIVER.replace("format = \"json\"", "format = \"raw\""));
    let http = receiver.http_addr("in");
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for i in 0..N {
        let first: &[u8] = [&[0xdcu8][..], &[0x95], &[0xdd], &[0x9f]][i % 4];
        lines.push([first, format!("bertragung-{i}").as_bytes()].concat());
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("latin1.log");
    std::fs::write(
        &input,
        lines
            .iter()
            .flat_map(|l| [&l[..], b"\n"].concat())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let mut lf = Logferry::start(&format!(
        r#"
[sources.app]
type = "tail"
paths = ["{}"]
tag = "app"
read_from_head = true

[sinks.out]
type = "http"
match = "**"
uri = "http://{http}/${{tag}}"
encoding = "text"
linger = "10ms"
"#,
        input.display()
    ));
    wait_until("every line received", Duration::from_secs(30), || {
        read_lines(&receiver.path("received.log")).len() >= N
    });
    lf.stop();
    let got = std::fs::read(receiver.path("received.log")).unwrap();
    let mut got: Vec<&[u8]> = got
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    got.sort();
    let mut want: Vec<&[u8]> = lines.iter().map(|l| &l[..]).collect();
    want.sort();
    let changed: Vec<String> = got
        .iter()
        .filter(|g| !want.contains(g))
        .map(|g| format!("{g:x?}"))
        .collect();
    assert!(
        changed.is_empty() && got.len() == want.len(),
        "lines changed on the way: {changed:?}"
    );
}

// ---------------------------------------------------------------------------
// A scripted HTTP/1.1 server

/// What the scripted server answers: status, extra headers, body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }
}

/// What the server does with a request: answer, or hold the connection
/// and never answer, or answer 200 with an endless body.
enum Action {
    Answer(Reply),
    /// Answer, then close the connection without saying so (no
    /// `Connection: close`), as some servers do.
    AnswerAndClose(Reply),
    Hang,
    Endless,
}

/// One request the server got.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    /// Which connection (counted from 0) carried it.
    connection: usize,
    status: u16,
    numbers: Vec<u64>,
    /// Request line and headers, as received.
    head: String,
}

type Script = dyn Fn(usize, &[u64]) -> Action + Send + Sync;

/// A scripted HTTP/1.1 server (keep-alive, gzip and zstd bodies): `script`
/// sees each request's index and the record numbers in it.
struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicUsize>,
    /// Bytes written of endless bodies.
    endless_written: Arc<AtomicUsize>,
}

impl Server {
    fn start(script: impl Fn(usize, &[u64]) -> Action + Send + Sync + 'static) -> Server {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap(), script)
    }

    fn on(
        listener: TcpListener,
        script: impl Fn(usize, &[u64]) -> Action + Send + Sync + 'static,
    ) -> Server {
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let endless_written = Arc::new(AtomicUsize::new(0));
        let script: Arc<Script> = Arc::new(script);
        let (s, c, e) = (seen.clone(), connections.clone(), endless_written.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let id = c.fetch_add(1, Ordering::SeqCst);
                let (s, script, e) = (s.clone(), script.clone(), e.clone());
                std::thread::spawn(move || serve(stream, id, &s, &*script, &e));
            }
        });
        Server {
            addr,
            seen,
            connections,
            endless_written,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Numbers of the records in requests answered 2xx (or `delivered`).
    fn accepted(&self, delivered: &[u16]) -> BTreeMap<u64, usize> {
        counts(
            self.seen()
                .into_iter()
                .filter(|s| (200..300).contains(&s.status) || delivered.contains(&s.status))
                .flat_map(|s| s.numbers),
        )
    }
}

/// The record numbers of a body: every run of WIDTH digits in it (NDJSON
/// here, but text and msgpack hold the same strings).
fn numbers_in(body: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut run = 0;
    for (i, b) in body.iter().enumerate() {
        if b.is_ascii_digit() {
            run += 1;
            continue;
        }
        if run == WIDTH && body[..i - run].last() == Some(&b'"') && *b == b'"' {
            out.push(
                std::str::from_utf8(&body[i - run..i])
                    .unwrap()
                    .parse()
                    .unwrap(),
            );
        }
        run = 0;
    }
    out
}

fn serve(
    stream: TcpStream,
    id: usize,
    seen: &Mutex<Vec<Seen>>,
    script: &Script,
    endless: &AtomicUsize,
) {
    let mut out = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut head = line.clone();
        let mut length = 0usize;
        let mut coding = String::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            head.push_str(&h);
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().unwrap(),
                "content-encoding" => coding = v.trim().to_string(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let body = match coding.as_str() {
            "gzip" => {
                let mut d = Vec::new();
                flate2::read::MultiGzDecoder::new(&body[..])
                    .read_to_end(&mut d)
                    .unwrap();
                d
            }
            "zstd" => zstd::decode_all(&body[..]).unwrap(),
            _ => body,
        };
        let numbers = numbers_in(&body);
        let index = seen.lock().unwrap().len();
        let action = script(index, &numbers);
        let status = match &action {
            Action::Answer(reply) | Action::AnswerAndClose(reply) => reply.status,
            Action::Hang => 0,
            Action::Endless => 200,
        };
        seen.lock().unwrap().push(Seen {
            at: Instant::now(),
            connection: id,
            status,
            numbers,
            head,
        });
        let close = matches!(action, Action::AnswerAndClose(_));
        match action {
            Action::Answer(reply) | Action::AnswerAndClose(reply) => {
                let mut head = format!(
                    "HTTP/1.1 {} X\r\ncontent-length: {}\r\n",
                    reply.status,
                    reply.body.len()
                );
                for (k, v) in &reply.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                if out.write_all(head.as_bytes()).is_err()
                    || out.write_all(&reply.body).is_err()
                    || close
                {
                    return;
                }
            }
            Action::Hang => {
                // hold the connection open, answering nothing, until the
                // client gives up and closes it
                let mut sink = [0u8; 4096];
                while matches!(r.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
            Action::Endless => {
                // 1 GiB announced, streamed until the client stops reading
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1073741824\r\n\r\n");
                let block = vec![b'x'; 64 * 1024];
                let mut sent = 0;
                while sent < 1 << 30 {
                    if out.write_all(&block).is_err() {
                        return;
                    }
                    sent += block.len();
                    endless.fetch_add(block.len(), Ordering::SeqCst);
                }
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 2. verdicts: 503 with Retry-After, 429, 400 for chosen records

#[test]
fn retried_answers_arrive_and_rejected_requests_are_set_aside_without_loop() {
    const N: usize = 2_000;
    let chosen = [777u64, 1_500];
    let server = Server::start(move |i, numbers| match i {
        0 => Action::Answer(Reply {
            status: 503,
            headers: vec![("Retry-After".into(), "1".into())],
            body: b"busy".to_vec(),
        }),
        1 => Action::Answer(Reply::status(429)),
        _ if numbers.iter().any(|n| chosen.contains(n)) => Action::Answer(Reply {
            status: 400,
            headers: Vec::new(),
            body: b"mapper_parsing_exception: field [n] of type [long]".to_vec(),
        }),
        _ => Action::Answer(Reply::status(200)),
    });
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 100\nlinger = \"20ms\"\nconcurrency = 1\n\
             compression = \"gzip\"\ndead_letter = \"{{dir}}/dead.msgpack\"\n\
             retry = {{ initial = \"50ms\", max = \"5s\" }}",
            server.addr
        ),
    ));
    run_to_end(&mut lf);
    let seen = server.seen();
    assert!(
        seen.len() < 50,
        "{} requests for {N} records: a loop",
        seen.len()
    );
    // the retry after the 503 came once Retry-After passed (not after the
    // 50 ms backoff): generous bounds, a protocol check
    let wait = seen[1].at - seen[0].at;
    assert!(
        wait >= Duration::from_millis(900),
        "retried {wait:?} after a 503 with Retry-After: 1"
    );
    assert_eq!(
        seen[1].numbers, seen[0].numbers,
        "the 503ed request is the one retried"
    );
    assert_eq!(
        seen[2].numbers, seen[0].numbers,
        "the 429ed request is retried"
    );
    // every record in exactly one place: accepted by the server, or in
    // the dead-letter file; the 400ed ones never accepted
    let accepted = server.accepted(&[]);
    let rejected: Vec<u64> = seen
        .iter()
        .filter(|s| s.status == 400)
        .flat_map(|s| s.numbers.clone())
        .collect();
    assert!(!rejected.is_empty() && chosen.iter().all(|c| rejected.contains(c)));
    for r in &rejected {
        assert!(
            !accepted.contains_key(r),
            "record {r} was answered 400 and yet accepted"
        );
    }
    let dead = replay(&lf.path("dead.msgpack"));
    let dead_counts = counts(dead.iter().copied());
    assert_eq!(
        counts(rejected.iter().copied()),
        dead_counts,
        "dead-lettered = answered 400"
    );
    let mut all = accepted.clone();
    for (k, v) in dead_counts {
        *all.entry(k).or_insert(0) += v;
    }
    assert_each_once("accepted + dead-lettered", &all, N);
    // the log and the metrics say why
    let log = lf.log_text();
    assert!(
        log.contains("http_4xx") && log.contains("400") && log.contains("mapper_parsing_exception"),
        "{log}"
    );
    assert_eq!(
        lf.final_counter("logferry_sink_dead_letter_records_total{component=\"out\"}") as usize,
        rejected.len()
    );
    for code in ["503", "429", "400"] {
        let name =
            format!("logferry_sink_http_requests_total{{component=\"out\",code=\"{code}\"}}");
        assert!(
            lf.final_counter(&name) >= 1,
            "{name} not counted:\n{}",
            lf.log_text()
        );
    }
}

/// The record numbers in a dead-letter file, through `logferry replay` to
/// a forward source.
fn replay(file: &std::path::Path) -> Vec<u64> {
    let mut rx = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/replayed.log\"\nformat = \"json\"\n",
    );
    let addr = rx.forward_addr("in");
    let out = std::process::Command::new(BIN)
        .arg("replay")
        .arg(file)
        .args(["--to", &addr.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(300));
    rx.stop();
    read_lines(&rx.path("replayed.log"))
        .iter()
        .map(|l| parse_json_line(l).0)
        .collect()
}

#[test]
fn delivered_and_retry_statuses_override_the_verdicts() {
    const N: usize = 1_000;
    // 409 means "already have it"; 404 means "not yet" for two requests
    let server = Server::start(|i, _| match i {
        0 | 1 => Action::Answer(Reply::status(404)),
        _ => Action::Answer(Reply::status(409)),
    });
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 200\nlinger = \"20ms\"\nconcurrency = 1\n\
             delivered_statuses = [409]\nretry_statuses = [404, \"5xx\"]\n\
             dead_letter = \"{{dir}}/dead.msgpack\"\nretry = {{ initial = \"50ms\" }}",
            server.addr
        ),
    ));
    run_to_end(&mut lf);
    let seen = server.seen();
    assert!(seen.len() < 20, "{} requests: a loop", seen.len());
    assert_eq!(seen[1].numbers, seen[0].numbers);
    let accepted = server.accepted(&[409]);
    assert_each_once("answered 409", &accepted, N);
    assert_eq!(
        std::fs::metadata(lf.path("dead.msgpack"))
            .map(|m| m.len())
            .unwrap_or(0),
        0
    );
}

#[test]
fn a_server_closing_after_each_answer_costs_no_failed_request() {
    const N: usize = 2_000;
    let server = Server::start(|_, _| Action::AnswerAndClose(Reply::status(200)));
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 100\nlinger = \"20ms\"\nconcurrency = 1",
            server.addr
        ),
    ));
    run_to_end(&mut lf);
    assert_each_once("accepted", &server.accepted(&[]), N);
    let errors =
        lf.final_counter("logferry_sink_http_errors_total{component=\"out\",kind=\"broken\"}");
    assert_eq!(
        errors,
        0,
        "requests sent on connections the server had closed:\n{}",
        lf.log_text()
    );
}

#[test]
fn headers_auth_method_and_path_reach_the_server() {
    const N: usize = 50;
    let server = Server::start(|_, _| Action::Answer(Reply::status(200)));
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let mut lf = Logferry::start(&sender(
        "app.web",
        N,
        &format!(
            "uri = \"http://{}/in/${{tag}}?src=lf\"\nmethod = \"put\"\n\
             headers = {{ \"X-Scope\" = \"${{HTTP_SINK_TEST_UNSET:-prod}}\" }}\n\
             auth = {{ strategy = \"bearer\", token_file = \"{}\" }}",
            server.addr,
            token.display()
        ),
    ));
    run_to_end(&mut lf);
    assert_each_once("accepted", &server.accepted(&[]), N);
    for seen in server.seen() {
        let head = seen.head.to_ascii_lowercase();
        assert!(
            head.starts_with("put /in/app.web?src=lf http/1.1"),
            "{head}"
        );
        assert!(head.contains("\r\nx-scope: prod\r\n"), "{head}");
        assert!(
            head.contains("\r\nauthorization: bearer s3cret\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\ncontent-type: application/x-ndjson"),
            "{head}"
        );
    }
}

#[test]
fn a_retry_after_longer_than_retry_max_is_capped() {
    const N: usize = 100;
    let server = Server::start(|i, _| match i {
        0 => Action::Answer(Reply {
            status: 429,
            headers: vec![("Retry-After".into(), "3600".into())],
            body: Vec::new(),
        }),
        _ => Action::Answer(Reply::status(200)),
    });
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nconcurrency = 1\nretry = {{ initial = \"50ms\", max = \"1s\" }}",
            server.addr
        ),
    ));
    run_to_end(&mut lf);
    let seen = server.seen();
    let wait = seen[1].at - seen[0].at;
    assert!(
        wait >= Duration::from_millis(700) && wait < Duration::from_secs(20),
        "retried {wait:?} after Retry-After: 3600 with retry.max = 1s"
    );
    assert_each_once("accepted", &server.accepted(&[]), N);
}

// ---------------------------------------------------------------------------
// 3. bad answers and limits; the other sink goes on meanwhile

#[test]
fn an_endless_answer_is_read_only_to_max_response_bytes() {
    const N: usize = 600;
    let server = Server::start(|_, _| Action::Endless);
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 200\nlinger = \"20ms\"\nmax_response_bytes = \"64KiB\"\n\n\
             [sources.keep]\ntype = \"http\"\naddress = \"127.0.0.1:0\"",
            server.addr
        ),
    ));
    let copy = wait_for_lines(&lf.path("copy.log"), N, Duration::from_secs(60));
    assert_eq!(copy.len(), N);
    wait_until("every request answered", Duration::from_secs(60), || {
        server.accepted(&[]).len() >= N
    });
    // the idle `keep` source holds the process up: its peak is readable
    let hwm = vm_bytes(lf.pid(), "VmHWM");
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert!(hwm < 200 << 20, "peak RSS {} MiB", hwm >> 20);
    let seen = server.seen();
    assert_each_once("accepted", &server.accepted(&[]), N);
    // no connection carried two requests: each was closed after its
    // answer was cut short
    let mut per_conn = counts(seen.iter().map(|s| s.connection as u64));
    per_conn.retain(|_, c| *c > 1);
    assert!(
        per_conn.is_empty(),
        "connections reused after an unread answer: {per_conn:?}"
    );
    let written = server.endless_written.load(Ordering::SeqCst);
    assert_eq!(
        server.connections.load(Ordering::SeqCst),
        seen.len(),
        "a connection was reused"
    );
    assert!(
        written < seen.len() * (32 << 20),
        "{} MiB of answers written for {} requests: read far past max_response_bytes",
        written >> 20,
        seen.len()
    );
}

#[test]
fn a_server_that_never_answers_times_out_counted_then_gets_every_record() {
    const N: usize = 500;
    let answering = Arc::new(AtomicBool::new(false));
    let a = answering.clone();
    let server = Server::start(move |_, _| {
        if a.load(Ordering::SeqCst) {
            Action::Answer(Reply::status(200))
        } else {
            Action::Hang
        }
    });
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 100\nlinger = \"20ms\"\nrequest_timeout = \"1s\"\n\
             retry = {{ initial = \"100ms\", max = \"500ms\" }}",
            server.addr
        ),
    ));
    // the other sink gets every record meanwhile
    wait_for_lines(&lf.path("copy.log"), N, Duration::from_secs(30));
    wait_until("a timeout counted", Duration::from_secs(30), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_http_errors_total{component=\"out\",kind=\"timeout\"}",
        ) >= 2.0
    });
    lf.wait_for_log("request_timeout", Duration::from_secs(5));
    answering.store(true, Ordering::SeqCst);
    run_to_end(&mut lf);
    let accepted = server.accepted(&[]);
    assert_each_once("accepted", &accepted, N);
    assert!(
        server.seen().len() < 100,
        "{} requests: a loop",
        server.seen().len()
    );
}

#[test]
fn a_server_that_never_answers_dead_letters_after_max_attempts() {
    const N: usize = 300;
    let server = Server::start(|_, _| Action::Hang);
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 100\nlinger = \"20ms\"\nrequest_timeout = \"1s\"\n\
             concurrency = 4\ndead_letter = \"{{dir}}/dead.msgpack\"\n\
             retry = {{ initial = \"50ms\", max = \"100ms\", max_attempts = 2 }}",
            server.addr
        ),
    ));
    run_to_end(&mut lf);
    let dead = counts(replay(&lf.path("dead.msgpack")));
    assert_each_once("dead-lettered", &dead, N);
    assert!(
        lf.log_text().contains("retries_exhausted"),
        "{}",
        lf.log_text()
    );
    assert_eq!(read_lines(&lf.path("copy.log")).len(), N);
}

#[test]
fn a_stop_while_the_server_never_answers_ends_within_drain_timeout() {
    const N: usize = 300;
    let server = Server::start(|_, _| Action::Hang);
    let mut lf = Logferry::start(&sender(
        "app",
        N,
        &format!(
            "uri = \"http://{}/in\"\nbatch_records = 100\nlinger = \"20ms\"\n\
             request_timeout = \"60s\"\ndrain_timeout = \"1s\"",
            server.addr
        ),
    ));
    wait_for_lines(&lf.path("copy.log"), N, Duration::from_secs(30));
    wait_until("a request sent", Duration::from_secs(30), || {
        !server.seen().is_empty()
    });
    let status = lf.stop_within_drain_timeout();
    assert!(
        !status.success(),
        "records undelivered, yet exit 0:\n{}",
        lf.log_text()
    );
    assert!(server.accepted(&[]).is_empty());
}

#[test]
fn a_tls_server_with_another_name_is_refused_counted_and_the_right_name_delivers() {
    const N: usize = 400;
    let d = tempfile::tempdir().unwrap();
    let pki = pki(d.path());
    let mut receiver = Logferry::start(&format!("{RECEIVER}\n",).replace(
        "address = \"127.0.0.1:0\"\n",
        &format!(
            "address = \"127.0.0.1:0\"\ntls = {{ cert_file = \"{}\", key_file = \"{}\" }}\n",
            pki.server_cert.display(),
            pki.server_key.display()
        ),
    ));
    let port = receiver.http_addr("in").port();
    let sink = |name: &str| {
        format!(
            "uri = \"https://127.0.0.1:{port}/${{tag}}\"\nbatch_records = 100\nlinger = \"20ms\"\n\
             tls = {{ ca_file = \"{}\", server_name = \"{name}\" }}\n\
             retry = {{ initial = \"100ms\", max = \"300ms\" }}",
            pki.ca.display()
        )
    };
    let mut wrong = Logferry::start(&sender("wrong", N, &sink("elsewhere.example")));
    wait_for_lines(&wrong.path("copy.log"), N, Duration::from_secs(30));
    wait_until("a TLS error counted", Duration::from_secs(30), || {
        metric_value(
            &metrics(&mut wrong),
            "logferry_sink_http_errors_total{component=\"out\",kind=\"tls\"}",
        ) >= 1.0
    });
    let line = wrong.wait_for_log("TLS handshake failed", Duration::from_secs(5));
    assert!(
        line.contains("not valid for name \"elsewhere.example\"")
            && line.contains("tls.server_name"),
        "{line}"
    );
    wrong.kill();
    let mut right = Logferry::start(&sender("right", N, &sink("localhost")));
    run_to_end(&mut right);
    let lines = wait_for_lines(&receiver.path("received.log"), N, Duration::from_secs(30));
    let got: Vec<(u64, String, String)> = lines.iter().map(|l| parse_json_line(l)).collect();
    assert!(
        got.iter().all(|g| g.1 == "right"),
        "a record came through the wrong name"
    );
    assert_each_once("over TLS", &counts(got.iter().map(|g| g.0)), N);
}

// ---------------------------------------------------------------------------
// 5. readiness

#[test]
fn ready_says_the_http_sink_is_down_while_its_endpoint_is_and_up_after() {
    let spot = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = spot.local_addr().unwrap();
    drop(spot);
    let mut lf = Logferry::start(&format!(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[sinks.out]
type = "http"
match = "**"
uri = "http://{addr}/in"
linger = "10ms"
retry = {{ initial = "100ms", max = "300ms" }}

[api]
address = "127.0.0.1:0"
"#
    ));
    let api = lf.address("api listening");
    let http = lf.http_addr("in");
    // one record that cannot go: the endpoint is down
    let body = "{\"message\":\"0000000000\"}";
    let _pending = std::thread::spawn(move || {
        let mut s = TcpStream::connect(http).unwrap();
        write!(
            s,
            "POST /app HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
    });
    let why = wait_ready(api, "503", Duration::from_secs(20));
    assert!(why.contains("out"), "{why}");
    let server = Server::on(TcpListener::bind(addr).unwrap(), |_, _| {
        Action::Answer(Reply::status(200))
    });
    wait_ready(api, "200", Duration::from_secs(20));
    wait_until("the record delivered", Duration::from_secs(20), || {
        server.accepted(&[]).contains_key(&0)
    });
}

// ---------------------------------------------------------------------------
// 4. kill -9 of the sending logferry, its source waiting for acks

#[test]
fn a_killed_sender_restarted_loses_nothing_its_client_waited_for() {
    const N: usize = 20_000;
    let mut receiver = Logferry::start(RECEIVER);
    let http = receiver.http_addr("in");
    let relay_port = free_port();
    // the relay: forward in (acks only once the http sink delivered) → http out
    let relay_config = format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:{relay_port}"

[sinks.out]
type = "http"
match = "**"
uri = "http://{http}/${{tag}}"
batch_records = 500
retry = {{ initial = "100ms", max = "500ms" }}
"#
    );
    let mut relay = Logferry::start(&relay_config);
    relay.forward_addr("in");
    // the client: numbered records to the relay, each chunk resent until acked
    let mut client = Logferry::start(&format!(
        r#"
[sources.gen]
type = "generator"
tag = "app"
count = {N}
rate = 5000
size = {WIDTH}
batch_records = 200

[sinks.relay]
type = "forward"
match = "**"
servers = [{{ address = "127.0.0.1:{relay_port}" }}]
require_ack = true
ack_timeout = "3s"
reconnect_min = "50ms"
reconnect_max = "200ms"
"#
    ));
    wait_until("records flowing", Duration::from_secs(30), || {
        read_lines(&receiver.path("received.log")).len() > N / 5
    });
    relay.signal(libc::SIGKILL);
    relay.kill();
    std::thread::sleep(Duration::from_millis(500));
    let mut relay = Logferry::start(&relay_config);
    relay.forward_addr("in");
    run_to_end(&mut client);
    wait_until(
        "every number at least once",
        Duration::from_secs(60),
        || {
            let got = counts(
                read_lines(&receiver.path("received.log"))
                    .iter()
                    .map(|l| parse_json_line(l).0),
            );
            got.len() >= N
        },
    );
    let got = counts(
        read_lines(&receiver.path("received.log"))
            .iter()
            .map(|l| parse_json_line(l).0),
    );
    let missing: Vec<u64> = (0..N as u64).filter(|i| !got.contains_key(i)).collect();
    assert!(
        missing.is_empty(),
        "{} lost, first {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert!(got.keys().all(|k| *k < N as u64));
    relay.stop();
}

// ---------------------------------------------------------------------------
// 6. real peers' in_http as receivers

/// Every number in the peer's stdout (its stdout output).
fn numbers_out(path: &std::path::Path) -> BTreeMap<u64, usize> {
    let text = std::fs::read(path).unwrap_or_default();
    counts(numbers_in(&text))
}

/// `n` records from a sender to `port`, where a peer's `in_http` writes
/// them to `out`: each arrives once.
fn to_peer(peer: peers::Peer, port: u16, out: &std::path::Path, encoding: &str) {
    const N: usize = 3_000;
    // wait for the peer's port
    wait_until("the peer listening", Duration::from_secs(60), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let mut lf = Logferry::start(&sender(
        "app.peer",
        N,
        &format!(
            "uri = \"http://127.0.0.1:{port}/${{tag}}\"\nencoding = \"{encoding}\"\ntime_key = \"\"\n\
             batch_records = 500\nlinger = \"20ms\"\nretry = {{ initial = \"200ms\", max = \"1s\" }}"
        ),
    ));
    run_to_end(&mut lf);
    wait_until(
        "every record written by the peer",
        Duration::from_secs(60),
        || numbers_out(out).len() >= N,
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_each_once("at the peer", &numbers_out(out), N);
    drop(peer);
}

#[test]
fn fluent_bit_in_http_gets_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("out.log");
    let input = format!("Name http\nListen 127.0.0.1\nPort {port}");
    let Some(peer) = peers::fluent_bit(dir.path(), &input, &out) else {
        return;
    };
    to_peer(peer, port, &out, "json");
}

#[test]
fn fluentd_in_http_gets_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("out.log");
    let source = format!("@type http\nbind 127.0.0.1\nport {port}");
    let Some(peer) = peers::fluentd(dir.path(), &source, &out) else {
        return;
    };
    to_peer(peer, port, &out, "msgpack");
}
