//! The `splunk_hec` sink, black-box: the built binary with a forward
//! source in front, numbered records, and every number counted at the end
//! in a real VictoriaLogs server (tests/common/victorialogs.rs, which
//! takes Splunk HEC but does not check tokens), or in what a scripted
//! stand-in (tests/common/scripted.rs) was sent, for the token, the HEC
//! error codes and indexer acknowledgement.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::scripted::{Answer, Request, Scripted};
use common::victorialogs::{unique_name, VictoriaLogs};
use common::{api_get, metric_value, read_ack, wait_ready, wait_until, Logferry};
use logferry::protocol::forward::{write_message_entry, write_packed_forward};
use std::io::Write as _;

/// logferry with its API, a forward source `fw` and `sink` (a TOML table).
fn config(sink: &str) -> String {
    format!(
        r#"
[api]
address = "127.0.0.1:0"

[sources.fw]
type = "forward"
address = "127.0.0.1:0"

{sink}
"#
    )
}

/// Seconds since the epoch now.
fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32
}

/// One PackedForward chunk of the lines `<prefix>-<i>` for `range`, asking
/// for an ack `id`; record `i` is at `secs` plus `i` microseconds.
fn chunk(prefix: &str, range: std::ops::Range<usize>, secs: u32, id: &str) -> Vec<u8> {
    let mut entries = Vec::new();
    let n = range.len();
    for i in range {
        let nanos = (i % 1_000_000) as u32 * 1000;
        write_message_entry(
            &mut entries,
            secs,
            nanos,
            format!("{prefix}-{i}").as_bytes(),
        );
    }
    let mut out = Vec::new();
    write_packed_forward(&mut out, "app.hec", &entries, n, Some(id.as_bytes()));
    out
}

/// Sends `n` records `<prefix>-<i>` in chunks of `per`, each acknowledged
/// before the next goes.
fn send_acked(addr: SocketAddr, prefix: &str, n: usize, per: usize, secs: u32) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut from = 0;
    while from < n {
        let to = (from + per).min(n);
        let id = format!("c{from}");
        s.write_all(&chunk(prefix, from..to, secs, &id)).unwrap();
        assert_eq!(
            read_ack(&mut s, Duration::from_secs(120)).as_deref(),
            Some(id.as_str()),
            "records {from}..{to} not acknowledged"
        );
        from = to;
    }
}

/// One metric series' value from the API's `/metrics`.
fn metric(api: SocketAddr, name_and_labels: &str) -> f64 {
    metric_value(&api_get(api, "/metrics"), name_and_labels)
}

#[test]
fn numbered_records_reach_victorialogs_once_with_their_time_and_metadata() {
    let vl = VictoriaLogs::shared();
    let sourcetype = unique_name("hec");
    let mut lf = Logferry::start_with_env(
        &config(&format!(
            r#"
[sinks.splunk]
type = "splunk_hec"
match = "**"
endpoint = "{url}"
token = "${{HEC_TOKEN}}"
sourcetype = "{sourcetype}"
host = "${{tag[1]}}"
compression = "gzip"
batch_records = 2000
"#,
            url = vl.url()
        )),
        [("HEC_TOKEN", "00000000-0000-0000-0000-000000000001")],
    );
    let addr = lf.forward_addr("fw");
    let n = 100_000;
    let secs = now_secs() - 60;
    send_acked(addr, "hec", n, 5000, secs);

    let query = format!("_stream:{{sourcetype=\"{sourcetype}\"}}");
    vl.wait_rows(&format!("{query} | limit 1"), 1, Duration::from_secs(60));
    // each number once: as many rows as numbers, as many distinct numbers,
    // from 0 to n - 1 (counted by the server: a 100,000-row answer is
    // not needed)
    let deadline = Instant::now() + Duration::from_secs(120);
    let stats = loop {
        let rows = vl.query(&format!(
            "{query} | extract \"hec-<n>\" from _msg | stats count() rows, count_uniq(n) numbers, min(n) first, max(n) last"
        ));
        let row = rows.first().cloned().unwrap_or_default();
        let num = |k: &str| {
            row[k]
                .as_str()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        if num("rows") >= n as u64 || Instant::now() > deadline {
            // a moment more, for a duplicate still on its way
            std::thread::sleep(Duration::from_millis(1500));
            let rows = vl.query(&format!(
                "{query} | extract \"hec-<n>\" from _msg | stats count() rows, count_uniq(n) numbers, min(n) first, max(n) last"
            ));
            break rows.first().cloned().unwrap_or_default();
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let want = serde_json::json!({
        "rows": n.to_string(), "numbers": n.to_string(),
        "first": "0", "last": (n - 1).to_string()
    });
    assert_eq!(stats, want, "records in VictoriaLogs");
    // the record's own time, to the microsecond, and the host template
    for i in [0, 1, 4_999, 5_000, 54_321, n - 1] {
        let rows = vl.query(&format!("{query} AND _msg:=\"hec-{i}\""));
        assert_eq!(rows.len(), 1, "hec-{i}: {rows:?}");
        let r = &rows[0];
        assert_eq!(r["host"], "hec", "host from ${{tag[1]}}: {r}");
        let t = chrono::DateTime::parse_from_rfc3339(r["_time"].as_str().unwrap()).unwrap();
        let want = i64::from(secs) * 1_000_000 + (i % 1_000_000) as i64;
        assert_eq!(t.timestamp_micros(), want, "time of hec-{i}: {r}");
    }
    lf.stop();
}

/// A HEC answer: `status` with `{"text": text, "code": code}`.
fn hec_answer(status: u16, code: u32, text: &str) -> Answer {
    Answer::new(
        status,
        "application/json",
        format!("{{\"text\":\"{text}\",\"code\":{code}}}").into_bytes(),
    )
}

/// A stand-in collector that takes events only with `Authorization:
/// Splunk <the token in accepted>`, answering HEC's 401/403 with its
/// codes otherwise.
fn checking_collector(accepted: Arc<Mutex<String>>) -> Scripted {
    Scripted::start(move |_, req| {
        let auth = req.header("authorization").unwrap_or("");
        if auth.is_empty() {
            return hec_answer(401, 2, "Token is required");
        }
        if auth != format!("Splunk {}", accepted.lock().unwrap()) {
            return hec_answer(403, 4, "Invalid token");
        }
        hec_answer(200, 0, "Success")
    })
}

#[test]
fn a_refused_token_is_counted_not_ready_and_nothing_is_acknowledged_or_set_aside() {
    let accepted = Arc::new(Mutex::new("the-right-token".to_string()));
    let server = checking_collector(accepted.clone());
    let secret_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret_file.path(), "a-wrong-token\n").unwrap();
    let mut lf = Logferry::start(&config(&format!(
        r#"
[sinks.splunk]
type = "splunk_hec"
match = "**"
endpoint = "{url}"
token_file = "{file}"
dead_letter = "{{dir}}/dead.msgpack"

[sinks.splunk.retry]
initial = "50ms"
max = "200ms"
max_attempts = 2
"#,
        url = server.url(),
        file = secret_file.path().display()
    )));
    let addr = lf.forward_addr("fw");
    let api = lf.address("api listening");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&chunk("tok", 0..10, now_secs(), "a1")).unwrap();
    // refused again and again, past max_attempts: never acknowledged,
    // never dead-lettered
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(4)),
        None,
        "acknowledged"
    );
    let body = wait_ready(api, "503", Duration::from_secs(10));
    let state: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["sinks"]["splunk"]["ready"], false, "{body}");
    // the reason says what to fix
    let reason = state["sinks"]["splunk"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("refuses the HEC token"), "{body}");
    assert!(
        metric(
            api,
            "logferry_splunk_hec_token_refusals_total{component=\"splunk\"}"
        ) >= 3.0,
        "refusals counted"
    );
    assert_eq!(
        metric(
            api,
            "logferry_splunk_hec_token_refused{component=\"splunk\"}"
        ),
        1.0
    );
    let sent = server.requests();
    assert!(sent.len() >= 3, "sent again: {}", sent.len());
    assert!(sent
        .iter()
        .all(|r| r.header("authorization") == Some("Splunk a-wrong-token")));
    assert!(
        std::fs::metadata(lf.path("dead.msgpack")).map_or(0, |m| m.len()) == 0,
        "records dead-lettered"
    );
    // the token never shows in the configuration or the log
    let shown = api_get(api, "/config");
    assert!(!shown.contains("a-wrong-token"), "{shown}");
    assert!(!lf.log_text().contains("a-wrong-token"));

    // the collector is given that token: the chunk is delivered
    *accepted.lock().unwrap() = "a-wrong-token".into();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(20)).as_deref(),
        Some("a1")
    );
    wait_ready(api, "200", Duration::from_secs(10));
    assert_eq!(
        metric(
            api,
            "logferry_splunk_hec_token_refused{component=\"splunk\"}"
        ),
        0.0
    );
    let delivered: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| String::from_utf8_lossy(&r.decoded_body()).contains("tok-9"))
        .collect();
    assert!(!delivered.is_empty());
    lf.stop();
}

#[test]
fn a_missing_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        config(
            "[sinks.s]\ntype = \"splunk_hec\"\nmatch = \"**\"\nendpoint = \"http://127.0.0.1:1\"\n",
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_logferry"))
        .args(["validate", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("token"), "{text}");
}

/// HEC's answer to an event post with indexer acknowledgement.
fn with_ack_id(id: usize) -> Answer {
    Answer::new(
        200,
        "application/json",
        format!("{{\"text\":\"Success\",\"code\":0,\"ackId\":{id}}}").into_bytes(),
    )
}

#[test]
fn with_indexer_acknowledgement_a_batch_is_acknowledged_only_once_indexed() {
    // event posts get ackIds 0, 1, …; the ack endpoint says "not yet"
    // until `indexed` is set
    let indexed = Arc::new(AtomicBool::new(false));
    let indexed_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let posts = Arc::new(AtomicUsize::new(0));
    let server = {
        let (indexed, indexed_at, posts) = (indexed.clone(), indexed_at.clone(), posts.clone());
        Scripted::start(move |_, req| {
            if req.path.starts_with("/services/collector/ack") {
                let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
                let done = indexed.load(Ordering::SeqCst);
                if done {
                    indexed_at.lock().unwrap().get_or_insert_with(Instant::now);
                }
                let acks: serde_json::Map<String, serde_json::Value> = body["acks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| (id.to_string(), serde_json::Value::Bool(done)))
                    .collect();
                return Answer::new(
                    200,
                    "application/json",
                    serde_json::json!({ "acks": acks }).to_string().into_bytes(),
                );
            }
            with_ack_id(posts.fetch_add(1, Ordering::SeqCst))
        })
    };
    let mut lf = Logferry::start(&config(&format!(
        r#"
[sinks.splunk]
type = "splunk_hec"
match = "**"
endpoint = "{url}"
token = "t"
acknowledgements = true
ack_poll_interval = "100ms"
"#,
        url = server.url()
    )));
    let addr = lf.forward_addr("fw");
    let api = lf.address("api listening");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&chunk("idx", 0..10, now_secs(), "k1")).unwrap();
    // taken by the collector, polled, not indexed: no ack
    wait_until("polls of the ack endpoint", Duration::from_secs(10), || {
        server
            .requests()
            .iter()
            .filter(|r| r.path.starts_with("/services/collector/ack"))
            .count()
            >= 3
    });
    assert_eq!(
        read_ack(&mut s, Duration::from_millis(500)),
        None,
        "acknowledged before indexed"
    );
    indexed.store(true, Ordering::SeqCst);
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(20)).as_deref(),
        Some("k1")
    );
    let got_ack = Instant::now();
    let at = indexed_at
        .lock()
        .unwrap()
        .expect("an ack answer said indexed");
    assert!(at <= got_ack);

    // one channel, a UUID, on the event posts and the ack polls alike
    let reqs = server.requests();
    let events: Vec<_> = reqs
        .iter()
        .filter(|r| r.path == "/services/collector/event")
        .collect();
    assert_eq!(events.len(), 1, "sent once");
    let channel = events[0]
        .header("x-splunk-request-channel")
        .expect("a channel")
        .to_string();
    assert_eq!(channel.len(), 36, "{channel}");
    for r in reqs
        .iter()
        .filter(|r| r.path.starts_with("/services/collector/ack"))
    {
        assert_eq!(r.path, format!("/services/collector/ack?channel={channel}"));
        assert_eq!(r.header("x-splunk-request-channel"), Some(channel.as_str()));
        assert_eq!(r.body, b"{\"acks\":[0]}");
    }
    assert_eq!(
        metric(
            api,
            "logferry_splunk_hec_acks_total{component=\"splunk\",result=\"indexed\"}"
        ),
        1.0
    );
    lf.stop();
}

#[test]
fn server_busy_is_sent_again_and_invalid_data_is_set_aside_into_the_dead_letter_file() {
    // `bad-` events: 400 code 6; the first `good-` post: 503 code 9
    let busy_once = AtomicBool::new(true);
    let server = Scripted::start(move |_, req| {
        let body = String::from_utf8_lossy(&req.decoded_body()).to_string();
        if body.contains("bad-") {
            return hec_answer(400, 6, "Invalid data format");
        }
        if busy_once.swap(false, Ordering::SeqCst) {
            return hec_answer(503, 9, "Server is busy");
        }
        hec_answer(200, 0, "Success")
    });
    let mut lf = Logferry::start(&config(&format!(
        r#"
[sinks.splunk]
type = "splunk_hec"
match = "**"
endpoint = "{url}"
token = "t"
dead_letter = "{{dir}}/dead.msgpack"

[sinks.splunk.retry]
initial = "50ms"
max = "200ms"
"#,
        url = server.url()
    )));
    let addr = lf.forward_addr("fw");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&chunk("good", 0..10, now_secs(), "g")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(20)).as_deref(),
        Some("g")
    );
    s.write_all(&chunk("bad", 0..5, now_secs(), "b")).unwrap();
    // set aside (kept in the dead-letter file): settled, so acknowledged
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(20)).as_deref(),
        Some("b")
    );
    let goods: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| String::from_utf8_lossy(&r.decoded_body()).contains("good-9"))
        .collect();
    assert_eq!(goods.len(), 2, "503 then sent again once");
    let dead = std::fs::read(lf.path("dead.msgpack")).unwrap();
    let text = String::from_utf8_lossy(&dead);
    for i in 0..5 {
        assert!(
            text.contains(&format!("bad-{i}")),
            "bad-{i} not dead-lettered"
        );
    }
    assert!(text.contains("hec_invalid_data_format"), "{text}");
    assert!(!text.contains("good-"));
    lf.stop();
}

#[test]
fn the_raw_endpoint_takes_lines_with_the_channel_and_metadata_in_the_query() {
    let server = Scripted::start(|_, _| hec_answer(200, 0, "Success"));
    let mut lf = Logferry::start(&config(&format!(
        r#"
[sinks.splunk]
type = "splunk_hec"
match = "**"
endpoint = "{url}/prefix"
endpoint_target = "raw"
token = "t"
sourcetype = "st:${{tag}}"
index = "i-%Y"
"#,
        url = server.url()
    )));
    let addr = lf.forward_addr("fw");
    let mut s = TcpStream::connect(addr).unwrap();
    let secs = now_secs();
    s.write_all(&chunk("raw", 0..3, secs, "r")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(20)).as_deref(),
        Some("r")
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    let channel = r.header("x-splunk-request-channel").expect("a channel");
    let year = chrono::DateTime::from_timestamp(i64::from(secs), 0)
        .unwrap()
        .format("%Y");
    assert_eq!(
        r.path,
        format!("/prefix/services/collector/raw?channel={channel}&index=i-{year}&sourcetype=st%3Aapp.hec")
    );
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.body, b"raw-0\nraw-1\nraw-2\n");
    lf.stop();
}
