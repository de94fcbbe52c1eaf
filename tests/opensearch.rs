//! The `opensearch` sink (and its `elasticsearch` alias), black-box: the
//! built binary with an HTTP source in front, numbered records, and every
//! number counted at the end in a real OpenSearch node
//! (tests/common/opensearch.rs), or in what a scripted server in the test
//! was sent, for the per-item answers a real node rarely gives.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::opensearch::{unique_index, OpenSearch};
use common::scripted::{Answer, Request, Scripted};
use common::{api_get, metric_value, wait_ready, wait_until, Logferry};
use logferry::protocol::msgpack::{Reader, Value as Mp};
use serde_json::{json, Value};

/// 2023-11-14T23:59:59Z: a record one second later is in the next day's
/// index.
const T: u64 = 1_700_006_399;

/// logferry with its API, an HTTP source `web` (`source_extra` added to
/// its table) and `sinks` (TOML tables).
fn config(source_extra: &str, sinks: &str) -> String {
    format!(
        r#"
[api]
address = "127.0.0.1:0"

[sources.web]
type = "http"
address = "127.0.0.1:0"
{source_extra}

{sinks}
"#
    )
}

/// One NDJSON POST on a connection of its own: (status, body). `None` if
/// the connection failed or no answer came.
fn post(addr: SocketAddr, tag: &str, body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(120))).ok()?;
    write!(
        s,
        "POST /{tag} HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split_whitespace().nth(1)?.parse().ok()?;
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((status, body))
}

/// NDJSON of the records `range`, each made by `record`.
fn ndjson(range: std::ops::Range<u64>, record: impl Fn(u64) -> Value) -> String {
    let mut s = String::new();
    for i in range {
        s.push_str(&record(i).to_string());
        s.push('\n');
    }
    s
}

/// Posts `range` in requests of `per` records, asserting each is answered 200.
fn post_all(addr: SocketAddr, tag: &str, n: u64, per: u64, record: impl Fn(u64) -> Value) {
    let mut from = 0;
    while from < n {
        let to = (from + per).min(n);
        let (status, body) = post(addr, tag, &ndjson(from..to, &record)).expect("an answer");
        assert_eq!(status, 200, "records {from}..{to}: {body}");
        from = to;
    }
}

/// The number in `field` of every document, asserting each is there once.
fn numbers_once(docs: &[Value], field: &str) -> BTreeSet<u64> {
    let mut set = BTreeSet::new();
    for d in docs {
        let n = d[field]
            .as_u64()
            .unwrap_or_else(|| panic!("no {field} in {d}"));
        assert!(set.insert(n), "{field} {n} indexed twice");
    }
    set
}

/// The number in `field` of every document, duplicates allowed.
fn numbers_at_least_once(docs: &[Value], field: &str) -> BTreeSet<u64> {
    docs.iter()
        .map(|d| {
            d[field]
                .as_u64()
                .unwrap_or_else(|| panic!("no {field} in {d}"))
        })
        .collect()
}

/// Asserts `got` holds exactly `want`, naming the first differences.
fn assert_exactly(got: &BTreeSet<u64>, want: impl IntoIterator<Item = u64>) {
    let want: BTreeSet<u64> = want.into_iter().collect();
    let missing: Vec<_> = want.difference(got).take(10).collect();
    let extra: Vec<_> = got.difference(&want).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} numbers of {}: missing {missing:?}…, unexpected {extra:?}…",
        got.len(),
        want.len()
    );
}

/// One metric series' value from the API's `/metrics`.
fn metric(api: SocketAddr, name_and_labels: &str) -> u64 {
    metric_value(&api_get(api, "/metrics"), name_and_labels) as u64
}

// ---------------------------------------------------------------- dead letters

/// One record set aside: the frame's `kind` and `reason` options, and the
/// record.
#[derive(Debug)]
struct DeadLetter {
    kind: String,
    reason: String,
    record: Value,
}

/// A msgpack value (and what it contains) as JSON.
fn to_json(r: &mut Reader<'_>) -> Value {
    match r.read().expect("msgpack") {
        Mp::Nil => Value::Null,
        Mp::Bool(b) => json!(b),
        Mp::Int(i) => json!(i),
        Mp::UInt(u) => json!(u),
        Mp::Float(f) => json!(f),
        Mp::Float32(f) => json!(f),
        Mp::Str(s) | Mp::Bin(s) => json!(String::from_utf8_lossy(s)),
        Mp::Array(n) => Value::Array((0..n).map(|_| to_json(r)).collect()),
        Mp::Map(n) => {
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                let k = match to_json(r) {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                m.insert(k, to_json(r));
            }
            Value::Object(m)
        }
        // an EventTime: its seconds
        Mp::Ext(_, b) => json!(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
    }
}

/// Every record of a dead-letter file: PackedForward frames `[tag,
/// bin(entries), {"size", "kind", "reason"}]` (src/sinks/settle.rs).
fn dead_letters(path: &std::path::Path) -> Vec<DeadLetter> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut r = Reader::new(&data);
    while !r.is_empty() {
        let len = r.read_array_len().expect("a frame is an array");
        assert_eq!(len, 3, "a dead-letter frame has its options");
        r.read_bytes().expect("tag");
        let entries = r.read_bytes().expect("PackedForward entries");
        let options = to_json(&mut r);
        let kind = options["kind"].as_str().unwrap_or_default().to_string();
        let reason = options["reason"].as_str().unwrap_or_default().to_string();
        let mut e = Reader::new(entries);
        let mut count = 0;
        while !e.is_empty() {
            let entry = to_json(&mut e);
            out.push(DeadLetter {
                kind: kind.clone(),
                reason: reason.clone(),
                record: entry[1].clone(),
            });
            count += 1;
        }
        assert_eq!(options["size"], json!(count), "{options}");
    }
    out
}

// ------------------------------------------------------------ a real node

#[test]
fn numbered_records_are_indexed_once_with_their_time_fields_and_daily_index() {
    const N: u64 = 50_000;
    let os = OpenSearch::shared();
    let tag = unique_index("plain");
    let mut lf = Logferry::start(&config(
        "",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "idx-${{tag}}-%Y.%m.%d"
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    post_all(
        addr,
        &tag,
        N,
        1000,
        |i| json!({"n": i, "msg": format!("rec-{i}"), "nested": {"k": [i, i + 1], "s": "x"}, "time": T + i % 2}),
    );

    let all = format!("idx-{tag}-*");
    assert_eq!(os.count(&all), N);
    // the date of the index is the record's, in UTC
    assert_eq!(os.count(&format!("idx-{tag}-2023.11.14")), N / 2);
    assert_eq!(os.count(&format!("idx-{tag}-2023.11.15")), N / 2);
    let docs = os.search_all(&all);
    assert_exactly(&numbers_once(&docs, "n"), 0..N);
    for d in &docs {
        let i = d["n"].as_u64().unwrap();
        let stamp = d["@timestamp"].as_str().unwrap_or_default();
        let day = if i % 2 == 0 {
            "2023-11-14T23:59:59"
        } else {
            "2023-11-15T00:00:00"
        };
        assert!(
            stamp.starts_with(day) && stamp.ends_with('Z'),
            "{i}: @timestamp {stamp}"
        );
        let want =
            json!({"n": i, "msg": format!("rec-{i}"), "nested": {"k": [i, i + 1], "s": "x"}});
        let mut got = d.clone();
        got.as_object_mut().unwrap().remove("@timestamp");
        assert_eq!(got, want, "the record's fields, as sent");
    }
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(
        lf.final_counter("logferry_opensearch_items_total{component=\"os\",result=\"indexed\"}"),
        N
    );
    os.delete_index(&all);
}

#[test]
fn documents_the_mapping_refuses_are_set_aside_alone_with_their_error() {
    const N: u64 = 5_000;
    const PER: u64 = 50;
    let os = OpenSearch::shared();
    let index = unique_index("mapped");
    os.put_json(
        &format!("/{index}"),
        &json!({"mappings": {"properties": {"n": {"type": "long"}}}}),
    );
    let mut lf = Logferry::start(&config(
        "",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "{index}"
dead_letter = "{{dir}}/dead.msgpack"
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    let refused = |i: u64| i.is_multiple_of(100);
    let mut from = 0;
    while from < N {
        let to = from + PER;
        let body = ndjson(from..to, |i| {
            if refused(i) {
                json!({"n": format!("not-a-number-{i}"), "seq": i})
            } else {
                json!({"n": i, "seq": i})
            }
        });
        let (status, answer) = post(addr, "mapped", &body).expect("an answer");
        if (from..to).any(refused) {
            assert_eq!(status, 422, "records {from}..{to}: {answer}");
            assert!(
                answer.contains("mapper_parsing_exception"),
                "the answer names the refusal: {answer}"
            );
        } else {
            assert_eq!(status, 200, "records {from}..{to}: {answer}");
        }
        from = to;
    }

    assert_eq!(os.count(&index), N - N / 100);
    assert_exactly(
        &numbers_once(&os.search_all(&index), "seq"),
        (0..N).filter(|i| !refused(*i)),
    );
    assert_eq!(
        metric(
            api,
            "logferry_opensearch_item_errors_total{component=\"os\",type=\"mapper_parsing_exception\"}"
        ),
        N / 100
    );
    let dead = dead_letters(&lf.path("dead.msgpack"));
    for d in &dead {
        assert_eq!(d.kind, "document_refused", "{d:?}");
        assert!(d.reason.contains("mapper_parsing_exception"), "{d:?}");
    }
    let set: Vec<Value> = dead.iter().map(|d| d.record.clone()).collect();
    assert_exactly(&numbers_once(&set, "seq"), (0..N).filter(|i| refused(*i)));
    assert!(lf.stop().success(), "{}", lf.log_text());
    os.delete_index(&index);
}

/// A real node refuses some documents of every bulk with a per-item 429
/// on every try (their index has the flood-stage `read_only_allow_delete`
/// block, whose items OpenSearch answers 429 `cluster_block_exception`):
/// with `retry.max_attempts` and no `dead_letter`, the batches are given
/// back to the HTTP client, which sends them again, several times. Each
/// record the node stored is stored exactly once: a resend sends only the
/// documents not stored.
#[test]
fn batches_given_back_after_max_attempts_store_each_stored_record_once() {
    const REQUESTS: u64 = 20;
    const PER: u64 = 50;
    const RESENDS: usize = 4;
    let os = OpenSearch::shared();
    let open = unique_index("given-back-open");
    let blocked = unique_index("given-back-blocked");
    os.put_json(
        &format!("/{blocked}"),
        &json!({"settings": {"index.blocks.read_only_allow_delete": true}}),
    );
    let mut lf = Logferry::start(&config(
        "",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "${{record.idx}}"

[sinks.os.retry]
initial = "50ms"
max = "200ms"
max_attempts = 3
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    let goes_to_blocked = |i: u64| i % 10 == 3;
    for r in 0..REQUESTS {
        let body = ndjson(r * PER..(r + 1) * PER, |i| {
            let idx = if goes_to_blocked(i) { &blocked } else { &open };
            json!({"idx": idx, "seq": i})
        });
        // a client sends a request it was not answered 2xx again
        for _ in 0..=RESENDS {
            let (status, answer) = post(addr, "given", &body).expect("an answer");
            assert_ne!(
                status, 200,
                "request {r}: some documents can never be stored: {answer}"
            );
        }
    }
    let stored = numbers_once(&os.search_all(&open), "seq");
    assert_exactly(
        &stored,
        (0..REQUESTS * PER).filter(|i| !goes_to_blocked(*i)),
    );
    assert_eq!(os.count(&blocked), 0);
    assert!(
        metric(
            api,
            "logferry_opensearch_items_total{component=\"os\",result=\"stored_before\"}"
        ) >= REQUESTS * (PER - PER / 10) * RESENDS as u64,
        "the resent batches' stored documents were skipped"
    );
    lf.stop();
    os.delete_index(&open);
    // the block allows a delete
    os.delete_index(&blocked);
}

/// A whole batch refused (5,000 documents, the default `batch_records`):
/// the bulk answer, one error per item, is larger than the default
/// `max_response_bytes` of other request sinks; it must still be read, the
/// documents set aside once, and nothing sent again.
#[test]
fn a_full_batch_of_refused_documents_is_set_aside_once_not_resent() {
    const N: u64 = 5_000;
    let os = OpenSearch::shared();
    let index = unique_index("all-refused");
    os.put_json(
        &format!("/{index}"),
        &json!({"mappings": {"properties": {"n": {"type": "long"}}}}),
    );
    let mut lf = Logferry::start(&config(
        "request_timeout = \"20s\"",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "{index}"
dead_letter = "{{dir}}/dead.msgpack"
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    let body = ndjson(
        0..N,
        |i| json!({"n": format!("a string where a number belongs, record {i}"), "seq": i}),
    );
    let (status, answer) = post(addr, "refused", &body).expect("an answer");
    assert_eq!(status, 422, "{answer}");
    let dead = dead_letters(&lf.path("dead.msgpack"));
    let set: Vec<Value> = dead.iter().map(|d| d.record.clone()).collect();
    assert_exactly(&numbers_once(&set, "seq"), 0..N);
    assert_eq!(os.count(&index), 0);
    assert_eq!(
        metric(
            api,
            "logferry_opensearch_items_total{component=\"os\",result=\"rejected\"}"
        ),
        N
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    os.delete_index(&index);
}

/// Posts `n` records in requests of `per`, resending a request until it
/// is answered 200, as a client of `ack = "sinks"` should; counts the
/// records answered in `done`.
fn resending_client(
    addr: SocketAddr,
    tag: String,
    n: u64,
    per: u64,
    done: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut resends = 0;
        let mut from = 0;
        while from < n {
            let to = (from + per).min(n);
            let body = ndjson(from..to, |i| json!({"n": i, "time": T + i}));
            loop {
                match post(addr, &tag, &body) {
                    Some((200, _)) => break,
                    Some((503, _)) | None => {
                        resends += 1;
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    Some((status, b)) => panic!("records {from}..{to}: {status} {b}"),
                }
            }
            from = to;
            done.store(to as usize, Ordering::Relaxed);
        }
        resends
    })
}

#[test]
fn a_node_killed_and_restarted_mid_run_loses_nothing_and_ids_keep_it_once() {
    const N: u64 = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let os = OpenSearch::private(dir.path());
    let (by_key, by_record, no_id) = (
        unique_index("by-key"),
        unique_index("by-record"),
        unique_index("no-id"),
    );
    let sink = |name: &str, index: &str, extra: &str| {
        format!(
            r#"
[sinks.{name}]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "{index}"
health_interval = "300ms"
{extra}

[sinks.{name}.retry]
initial = "100ms"
max = "1s"
"#,
            os.url()
        )
    };
    let mut lf = Logferry::start(&config(
        "request_timeout = \"5s\"",
        &[
            sink("key", &by_key, "id_key = \"n\""),
            sink("record", &by_record, "generate_id = true"),
            sink("none", &no_id, ""),
        ]
        .concat(),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    wait_ready(api, "200", Duration::from_secs(10));

    let done = Arc::new(AtomicUsize::new(0));
    let client = resending_client(addr, "crash".into(), N, 200, done.clone());
    wait_until(
        "a quarter of the records answered",
        Duration::from_secs(120),
        || done.load(Ordering::Relaxed) as u64 >= N / 4,
    );
    os.kill();
    let body = wait_ready(api, "503", Duration::from_secs(30));
    assert!(body.contains("\"ready\":false"), "{body}");
    let at_kill = done.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(2));
    os.restart();
    wait_ready(api, "200", Duration::from_secs(30));
    let resends = client.join().expect("the client");
    println!("killed at {at_kill} records answered; {resends} requests resent");
    assert!(resends > 0, "the outage was seen by the client");

    // exactly once with ids, whichever the resends
    assert_eq!(os.count(&by_key), N);
    assert_exactly(&numbers_once(&os.search_all(&by_key), "n"), 0..N);
    assert_eq!(os.count(&by_record), N);
    assert_exactly(&numbers_once(&os.search_all(&by_record), "n"), 0..N);
    // at least once without
    let plain = os.search_all(&no_id);
    assert!(plain.len() as u64 >= N);
    assert_exactly(&numbers_at_least_once(&plain, "n"), 0..N);
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn a_data_stream_takes_gzipped_creates_with_generated_ids_and_a_resent_record_once() {
    const N: u64 = 2_000;
    let os = OpenSearch::shared();
    os.put_json(
        "/_index_template/logferry-test-lfds",
        &json!({"index_patterns": ["lfds-*"], "data_stream": {}, "priority": 100}),
    );
    let stream = unique_index("lfds");
    let mut lf = Logferry::start(&config(
        "",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "{stream}"
action = "create"
generate_id = true
compression = "gzip"
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    let record = |i: u64| json!({"n": i, "msg": format!("rec-{i}"), "time": T + i});
    post_all(addr, "ds", N, 500, record);
    // the same tag, time and content again: the same id, a 409, stored once
    let (status, body) = post(addr, "ds", &ndjson(7..8, record)).expect("an answer");
    assert_eq!(status, 200, "{body}");

    assert_eq!(os.count(&stream), N);
    assert_exactly(&numbers_once(&os.search_all(&stream), "n"), 0..N);
    assert_eq!(
        metric(
            api,
            "logferry_opensearch_items_total{component=\"os\",result=\"indexed\"}"
        ),
        N + 1,
        "the conflict counts as delivered"
    );
    assert_eq!(
        metric(
            api,
            "logferry_opensearch_items_total{component=\"os\",result=\"rejected\"}"
        ),
        0
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    os.delete_data_stream(&stream);
}

#[test]
fn the_elasticsearch_alias_is_the_same_sink() {
    const N: u64 = 500;
    let os = OpenSearch::shared();
    let index = unique_index("alias");
    let mut lf = Logferry::start(&config(
        "",
        &format!(
            r#"
[sinks.es]
type = "elasticsearch"
match = "**"
endpoints = ["{}"]
index = "{index}"
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    post_all(addr, "alias", N, 100, |i| json!({"n": i}));
    assert_eq!(os.count(&index), N);
    assert_exactly(&numbers_once(&os.search_all(&index), "n"), 0..N);
    assert!(lf.stop().success(), "{}", lf.log_text());
    os.delete_index(&index);
}

/// Records without the `id_key` field are not one document overwriting
/// itself: each is indexed (with an id the node chooses) and counted.
#[test]
fn records_lacking_the_id_field_are_each_indexed_not_collapsed_into_one() {
    const N: u64 = 200;
    let os = OpenSearch::shared();
    let index = unique_index("some-ids");
    let mut lf = Logferry::start(&config(
        "",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{}"]
index = "{index}"
id_key = "id"
"#,
            os.url()
        ),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    post_all(addr, "ids", N, 50, |i| {
        if i % 2 == 0 {
            json!({"n": i, "id": format!("id-{i}")})
        } else {
            json!({"n": i})
        }
    });
    assert_eq!(os.count(&index), N);
    assert_exactly(&numbers_once(&os.search_all(&index), "n"), 0..N);
    assert_eq!(
        metric(
            api,
            "logferry_opensearch_id_missing_total{component=\"os\"}"
        ),
        N / 2
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    os.delete_index(&index);
}

// ------------------------------------------------------- a scripted server

/// Whether the scripted server was sent a bulk request (not a probe).
fn is_bulk(r: &Request) -> bool {
    r.method == "POST" && r.path.contains("/_bulk")
}

/// The `n` of every document of a bulk body, in order.
fn numbers(r: &Request) -> Vec<u64> {
    let body = r.decoded_body();
    let text = String::from_utf8_lossy(&body);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len().is_multiple_of(2),
        "action and document lines: {text}"
    );
    lines
        .chunks(2)
        .map(|pair| {
            let doc: Value = serde_json::from_str(pair[1]).expect("a JSON document");
            doc["n"].as_u64().unwrap_or_else(|| panic!("no n in {doc}"))
        })
        .collect()
}

/// An answer: status, extra headers, body.
type Reply = (u16, Vec<(&'static str, String)>, String);

/// A scripted server (tests/common/scripted.rs) answering the `k`th bulk
/// request with `script(k, request)` and any other (the health probe)
/// with 200 `{}`.
fn bulk_server(script: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static) -> Scripted {
    let bulks = AtomicUsize::new(0);
    Scripted::start(move |_, req| {
        if !is_bulk(req) {
            return Answer::new(200, "application/json", b"{}".to_vec());
        }
        let (status, headers, body) = script(bulks.fetch_add(1, Ordering::SeqCst), req);
        headers.into_iter().fold(
            Answer::new(status, "application/json", body.into_bytes()),
            |a, (k, v)| a.with_header(k, &v),
        )
    })
}

/// The bulk requests the server was sent, in order.
fn bulks_of(server: &Scripted) -> Vec<Request> {
    server.requests().into_iter().filter(is_bulk).collect()
}

/// A bulk answer with one item per status; a failed item carries its
/// error `type`.
fn bulk_answer(items: &[(u16, Option<&str>)]) -> String {
    let errors = items.iter().any(|(s, _)| *s >= 300);
    let items: Vec<Value> = items
        .iter()
        .map(|(status, error)| match error {
            Some(kind) => json!({"index": {"status": status,
                "error": {"type": kind, "reason": format!("scripted {kind}")}}}),
            None => json!({"index": {"status": status}}),
        })
        .collect();
    json!({"errors": errors, "items": items}).to_string()
}

/// An answer storing every document of `req`.
fn all_stored(req: &Request) -> Reply {
    let items: Vec<_> = numbers(req).iter().map(|_| (201, None)).collect();
    (200, Vec::new(), bulk_answer(&items))
}

fn scripted_config(url: &str, extra: &str) -> String {
    config(
        "",
        &format!(
            r#"
[sinks.os]
type = "opensearch"
match = "**"
endpoints = ["{url}"]
index = "scripted"
dead_letter = "{{dir}}/dead.msgpack"
{extra}

[sinks.os.retry]
initial = "50ms"
max = "200ms"
"#
        ),
    )
}

#[test]
fn items_429_are_sent_again_alone_and_a_refused_item_is_set_aside_alone() {
    let server = bulk_server(|k, req| match k {
        0 => {
            let items: Vec<_> = numbers(req)
                .iter()
                .map(|n| match n {
                    3 | 7 => (429, Some("es_rejected_execution_exception")),
                    5 => (400, Some("mapper_parsing_exception")),
                    _ => (201, None),
                })
                .collect();
            (200, Vec::new(), bulk_answer(&items))
        }
        _ => all_stored(req),
    });
    let mut lf = Logferry::start(&scripted_config(&server.url(), ""));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    let (status, body) = post(addr, "items", &ndjson(0..10, |i| json!({"n": i}))).unwrap();
    assert_eq!(status, 422, "one document refused: {body}");
    assert!(body.contains("mapper_parsing_exception"), "{body}");

    let bulks = bulks_of(&server);
    assert_eq!(bulks.len(), 2, "one bulk, then one retry: {bulks:?}");
    assert_eq!(numbers(&bulks[0]), (0..10).collect::<Vec<_>>());
    assert_eq!(numbers(&bulks[1]), vec![3, 7], "only the items to retry");
    let dead = dead_letters(&lf.path("dead.msgpack"));
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].record["n"], json!(5));
    assert_eq!(dead[0].kind, "document_refused");
    assert!(
        dead[0].reason.contains("mapper_parsing_exception"),
        "{dead:?}"
    );
    let items = |result: &str| {
        metric(
            api,
            &format!("logferry_opensearch_items_total{{component=\"os\",result=\"{result}\"}}"),
        )
    };
    assert_eq!(items("indexed"), 9);
    assert_eq!(items("retried"), 2);
    assert_eq!(items("rejected"), 1);
    // nothing more is sent later
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(bulks_of(&server).len(), 2, "no loop");
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn a_whole_bulk_answered_503_with_retry_after_is_sent_again_whole() {
    let server = bulk_server(|k, req| match k {
        0 => (
            503,
            vec![("retry-after", "1".to_string())],
            "{\"error\":\"busy\"}".to_string(),
        ),
        _ => all_stored(req),
    });
    // Retry-After is honoured up to retry.max; the backoff alone is 50ms
    let mut lf = Logferry::start(
        &scripted_config(&server.url(), "").replace("max = \"200ms\"", "max = \"5s\""),
    );
    let addr = lf.http_addr("web");
    let (status, body) = post(addr, "whole", &ndjson(0..10, |i| json!({"n": i}))).unwrap();
    assert_eq!(status, 200, "{body}");
    let bulks = bulks_of(&server);
    assert_eq!(bulks.len(), 2, "{bulks:?}");
    assert_eq!(bulks[0].body, bulks[1].body, "the same bulk, whole");
    let waited = bulks[1].at - bulks[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "Retry-After: 1 honoured, waited {waited:?}"
    );
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn items_that_keep_failing_are_dead_lettered_after_max_attempts_and_nothing_loops() {
    let server = bulk_server(|_, req| {
        let items: Vec<_> = numbers(req)
            .iter()
            .map(|n| {
                if n % 2 == 1 {
                    (429, Some("es_rejected_execution_exception"))
                } else {
                    (201, None)
                }
            })
            .collect();
        (200, Vec::new(), bulk_answer(&items))
    });
    let mut lf = Logferry::start(
        &scripted_config(&server.url(), "")
            .replace("max = \"200ms\"", "max = \"200ms\"\nmax_attempts = 2"),
    );
    let addr = lf.http_addr("web");
    let (status, body) = post(addr, "exhausted", &ndjson(0..10, |i| json!({"n": i}))).unwrap();
    assert_eq!(status, 422, "set aside, not to be resent: {body}");

    let bulks = bulks_of(&server);
    assert_eq!(bulks.len(), 2, "two attempts, no more: {bulks:?}");
    assert_eq!(numbers(&bulks[1]), vec![1, 3, 5, 7, 9]);
    let mut stored: BTreeMap<u64, usize> = BTreeMap::new();
    for n in numbers(&bulks[0]).into_iter().filter(|n| n % 2 == 0) {
        *stored.entry(n).or_default() += 1;
    }
    assert_eq!(stored.len(), 5, "the others delivered, once");
    assert!(stored.values().all(|c| *c == 1));
    let dead = dead_letters(&lf.path("dead.msgpack"));
    let set: Vec<Value> = dead.iter().map(|d| d.record.clone()).collect();
    assert_exactly(&numbers_once(&set, "n"), [1, 3, 5, 7, 9]);
    assert!(
        dead.iter().all(|d| d.kind == "retries_exhausted"),
        "{dead:?}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(bulks_of(&server).len(), 2, "no loop");
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn an_answer_that_cannot_be_read_sends_the_bulk_again_in_halves_until_it_can() {
    // a node (or a proxy before it) whose answer to a bulk of more than 3
    // documents is cut short or not JSON: each is then sent in bulks whose
    // answers can be read, once each, and nothing loops
    let server = bulk_server(|k, req| {
        if numbers(req).len() > 3 {
            let garbage = if k % 2 == 0 {
                "<html>502 from a proxy, but 200</html>"
            } else {
                "{\"errors\":false,\"items\":["
            };
            (200, Vec::new(), garbage.to_string())
        } else {
            all_stored(req)
        }
    });
    let mut lf = Logferry::start(&scripted_config(&server.url(), "generate_id = true"));
    let addr = lf.http_addr("web");
    let (status, body) = post(addr, "halves", &ndjson(0..10, |i| json!({"n": i}))).unwrap();
    assert_eq!(status, 200, "{body}");
    let bulks = bulks_of(&server);
    let sizes: Vec<usize> = bulks.iter().map(|b| numbers(b).len()).collect();
    // 10 unreadable, 5 unreadable, then bulks of at most 2 until done
    assert_eq!(sizes[..2], [10, 5], "{sizes:?}");
    assert!(sizes[2..].iter().all(|s| *s <= 2), "{sizes:?}");
    let mut stored: BTreeMap<u64, usize> = BTreeMap::new();
    for b in &bulks[2..] {
        for n in numbers(b) {
            *stored.entry(n).or_default() += 1;
        }
    }
    assert_eq!(
        stored.keys().copied().collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(
        stored.values().all(|c| *c == 1),
        "each once after the halving: {stored:?}"
    );
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(bulks_of(&server).len(), bulks.len(), "no loop");
    assert!(lf.stop().success(), "{}", lf.log_text());
}
