//! The `otlp` sink, black-box: the built binary with an HTTP source in
//! front, numbered records, and every number counted at the end in what
//! an OTLP/HTTP receiver was sent, decoded with `opentelemetry-proto`.
//!
//! The receiver here is a scripted server (tests/common/scripted.rs, and
//! tests/common/scripted_grpc.rs for OTLP/gRPC), for the answers a real
//! one rarely gives: a 503 with `Retry-After`, a 400 with a
//! `google.rpc.Status`, a partial success, UNAVAILABLE with a
//! `RetryInfo`, INVALID_ARGUMENT. The tests against a real OpenTelemetry
//! Collector (over HTTP and gRPC) use the same `config`, `post_all` and
//! `record`, and count the numbers in the collector's file instead.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::scripted::{Answer, Request, Scripted};
use common::scripted_grpc::{GrpcAnswer, ScriptedGrpc};
use common::{api_get, metric_value, Logferry};
use logferry::protocol::msgpack::{Reader, Value as Mp};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use prost::Message as _;
use serde_json::{json, Value};

/// logferry with its API, an HTTP source `web`, and an `otlp` sink `otel`
/// to `endpoint` (`extra` added to its table), retrying every 50 ms to
/// 5 s, with a dead-letter file.
fn config(endpoint: &str, extra: &str) -> String {
    format!(
        r#"
[api]
address = "127.0.0.1:0"

[sources.web]
type = "http"
address = "127.0.0.1:0"

[sinks.otel]
type = "otlp"
match = "**"
endpoint = "{endpoint}"
dead_letter = "{{dir}}/dead.msgpack"
resource_attributes = {{ "deployment.environment" = "test" }}
{extra}

[sinks.otel.retry]
initial = "50ms"
max = "5s"
"#
    )
}

/// Record `n`: its number in the message and as an attribute, a
/// severity, and one of three resources.
fn record(n: u64) -> serde_json::Value {
    json!({
        "message": format!("record {n}"),
        "n": n,
        "level": "warn",
        "resource": {"service.name": format!("svc-{}", n % 3)},
    })
}

/// One NDJSON POST on a connection of its own: (status, body).
fn post(addr: SocketAddr, tag: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "POST /{tag} HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-ndjson\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

fn ndjson(range: std::ops::Range<u64>) -> String {
    range.map(|n| format!("{}\n", record(n))).collect()
}

/// Posts records `0..n` in requests of `per`, from `threads` clients at
/// once, asserting each is answered 200 (the sink has them).
fn post_all(addr: SocketAddr, n: u64, per: u64, threads: u64) {
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut from = t * per;
                while from < n {
                    let to = (from + per).min(n);
                    let (status, body) = post(addr, "app", &ndjson(from..to));
                    assert_eq!(status, 200, "records {from}..{to}: {body}");
                    from += per * threads;
                }
            });
        }
    });
}

/// The path of OTLP/gRPC's `LogsService/Export` method.
const GRPC_EXPORT: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// The log records of an export request (OTLP/HTTP, or an OTLP/gRPC
/// call), each with its resource's attributes.
fn exported(req: &Request) -> Vec<(Vec<KeyValue>, LogRecord)> {
    assert_eq!(req.method, "POST");
    let message = if req.path == GRPC_EXPORT {
        assert_eq!(req.header("content-type"), Some("application/grpc"));
        assert_eq!(req.header("te"), Some("trailers"));
        common::scripted_grpc::message(req)
    } else {
        assert_eq!(req.path, "/v1/logs");
        assert_eq!(req.header("content-type"), Some("application/x-protobuf"));
        req.decoded_body()
    };
    let export = ExportLogsServiceRequest::decode(&message[..]).expect("protobuf");
    let mut out = Vec::new();
    for rl in export.resource_logs {
        let resource = rl.resource.map(|r| r.attributes).unwrap_or_default();
        for sl in rl.scope_logs {
            assert_eq!(sl.scope.map(|s| s.name).as_deref(), Some("logferry"));
            for r in sl.log_records {
                out.push((resource.clone(), r));
            }
        }
    }
    out
}

fn attr<'a>(kvs: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    kvs.iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// Checks each record as [`record`] made it, and returns how many times
/// each number came.
fn numbers(requests: &[Request]) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    for req in requests {
        for (resource, r) in exported(req) {
            let Some(Any::IntValue(n)) = attr(&r.attributes, "n") else {
                panic!("no n in {r:?}")
            };
            let n = *n as u64;
            let body = r.body.as_ref().and_then(|b| b.value.clone());
            assert_eq!(body, Some(Any::StringValue(format!("record {n}"))));
            assert_eq!((r.severity_text.as_str(), r.severity_number), ("warn", 13));
            assert_eq!(
                attr(&resource, "service.name"),
                Some(&Any::StringValue(format!("svc-{}", n % 3))),
                "record {n}"
            );
            assert_eq!(
                attr(&resource, "deployment.environment"),
                Some(&Any::StringValue("test".into()))
            );
            assert!(r.time_unix_nano > 0 && r.observed_time_unix_nano >= r.time_unix_nano);
            *seen.entry(n).or_insert(0) += 1;
        }
    }
    seen
}

fn ok_answer(response: ExportLogsServiceResponse) -> Answer {
    Answer::new(200, "application/x-protobuf", response.encode_to_vec())
}

fn metric(api: SocketAddr, name_and_labels: &str) -> u64 {
    metric_value(&api_get(api, "/metrics"), name_and_labels) as u64
}

/// One record set aside: the frame's `kind` and `reason`, and the
/// record's `n`.
#[derive(Debug)]
struct DeadLetter {
    kind: String,
    reason: String,
    n: u64,
}

/// Reads a string or an integer, skipping whatever else.
fn scalar(r: &mut Reader<'_>) -> Option<String> {
    match r.read().unwrap() {
        Mp::Str(s) => Some(String::from_utf8_lossy(s).into_owned()),
        Mp::UInt(u) => Some(u.to_string()),
        v @ (Mp::Array(_) | Mp::Map(_)) => {
            logferry::event::skip_rest(r, v).unwrap();
            None
        }
        _ => None,
    }
}

fn dead_letters(path: &std::path::Path) -> Vec<DeadLetter> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut r = Reader::new(&data);
    while !r.is_empty() {
        assert_eq!(r.read_array_len().unwrap(), 3, "a frame with options");
        r.read_bytes().unwrap();
        let entries = r.read_bytes().unwrap();
        let mut options = BTreeMap::new();
        for _ in 0..r.read_map_len().unwrap() {
            let k = scalar(&mut r).unwrap();
            options.insert(k, scalar(&mut r).unwrap_or_default());
        }
        let mut e = Reader::new(entries);
        while !e.is_empty() {
            e.read_array_len().unwrap();
            e.skip().unwrap();
            let mut n = None;
            for _ in 0..e.read_map_len().unwrap() {
                let k = scalar(&mut e);
                let v = scalar(&mut e);
                if k.as_deref() == Some("n") {
                    n = v.and_then(|v| v.parse().ok());
                }
            }
            out.push(DeadLetter {
                kind: options["kind"].clone(),
                reason: options["reason"].clone(),
                n: n.expect("a numbered record"),
            });
        }
    }
    out
}

#[test]
fn ten_thousand_numbered_records_arrive_once_each_with_body_severity_attributes_and_resource() {
    let server = Scripted::start(|_, _| ok_answer(ExportLogsServiceResponse::default()));
    let mut lf = Logferry::start(&config(&server.url(), "batch_records = 1000"));
    let addr = lf.http_addr("web");
    let n = 10_000;
    post_all(addr, n, 250, 4);
    let requests = server.requests();
    let seen = numbers(&requests);
    assert_eq!(seen.len(), n as usize, "every number arrived");
    assert!(seen.values().all(|&c| c == 1), "each once");
    for req in &requests {
        assert_eq!(req.header("content-encoding"), Some("gzip"), "the default");
    }
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn an_export_answered_503_with_retry_after_is_sent_again_and_none_is_lost() {
    let server = Scripted::start(|k, _| match k {
        0 => Answer::new(503, "text/plain", b"busy".to_vec()).with_header("retry-after", "1"),
        _ => ok_answer(ExportLogsServiceResponse::default()),
    });
    let mut lf = Logferry::start(&config(&server.url(), "compression = \"none\""));
    let requests = five_hundred_sent_again_a_second_later(&mut lf, || server.requests());
    assert_eq!(requests[1].header("content-encoding"), None);
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// Posts records 0..500 through `lf`, whose receiver answers the first
/// request "again in 1 s" (the backoff alone is 50 ms) and takes the
/// second: the records are acknowledged once it does. Returns the two
/// requests (`requests` reads them), checking that the second is the
/// first whole, came after the second asked for, and holds every record
/// once.
fn five_hundred_sent_again_a_second_later(
    lf: &mut Logferry,
    requests: impl Fn() -> Vec<Request>,
) -> Vec<Request> {
    let (status, body) = post(lf.http_addr("web"), "app", &ndjson(0..500));
    assert_eq!(status, 200, "{body}");
    let requests = requests();
    assert_eq!(requests.len(), 2, "one export, then one retry");
    assert_eq!(requests[0].body, requests[1].body, "the same export, whole");
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "the 1 s asked for honoured (the backoff alone is 50ms), waited {waited:?}"
    );
    let seen = numbers(&requests[1..]);
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (0..500).collect::<Vec<_>>()
    );
    assert!(seen.values().all(|&c| c == 1));
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    requests
}

/// Posts records 0..10 through `lf`, whose sink sets them aside: the
/// client is told (422), and each is in the dead-letter file with `kind`
/// and `reason`.
fn ten_set_aside(lf: &mut Logferry, kind: &str, reason: &str) {
    let (status, body) = post(lf.http_addr("web"), "app", &ndjson(0..10));
    assert_eq!(status, 422, "the client is told: {body}");
    let dead = dead_letters(&lf.path("dead.msgpack"));
    let ns: Vec<u64> = dead.iter().map(|d| d.n).collect();
    assert_eq!(ns, (0..10).collect::<Vec<_>>(), "{dead:?}");
    for d in &dead {
        assert_eq!((d.kind.as_str(), d.reason.as_str()), (kind, reason));
    }
}

/// `google.rpc.Status`, the body of an OTLP/HTTP error answer and the
/// `grpc-status-details-bin` of an OTLP/gRPC one.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<ProtoAny>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
struct ProtoAny {
    #[prost(string, tag = "1")]
    type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, prost::Message)]
struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    retry_delay: Option<ProtoDuration>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, PartialEq, prost::Message)]
struct ProtoDuration {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

#[test]
fn an_export_answered_400_is_dead_lettered_with_the_receivers_message_and_not_sent_again() {
    let server = Scripted::start(|_, _| {
        let status = RpcStatus {
            code: 3,
            message: "log record attributes too large".into(),
            details: Vec::new(),
        };
        Answer::new(400, "application/x-protobuf", status.encode_to_vec())
    });
    let mut lf = Logferry::start(&config(&server.url(), ""));
    // the Status's message, not its protobuf bytes
    ten_set_aside(
        &mut lf,
        "http_4xx",
        "HTTP 400 Bad Request: log record attributes too large",
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(server.requests().len(), 1, "a 400 is never sent again");
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn a_partial_success_is_counted_and_logged_and_its_export_counts_delivered() {
    let server = Scripted::start(|_, _| {
        ok_answer(ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess {
                rejected_log_records: 4,
                error_message: "4 records older than the retention".into(),
            }),
        })
    });
    let mut lf = Logferry::start(&config(&server.url(), ""));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    let (status, body) = post(addr, "app", &ndjson(0..10));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        metric(
            api,
            "logferry_otlp_sink_rejected_records_total{component=\"otel\"}"
        ),
        4
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        server.requests().len(),
        1,
        "a partial success is not retried"
    );
    assert_eq!(numbers(&server.requests()).len(), 10);
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success());
    let log = lf.log_text();
    assert!(
        log.contains("partial success") && log.contains("older than the retention"),
        "{log}"
    );
}

#[test]
fn an_endpoint_that_refuses_connections_is_retried_until_it_listens() {
    // a port that was free a moment ago: nothing listens there yet
    let port = common::free_port();
    let mut lf = Logferry::start(&config(&format!("http://127.0.0.1:{port}"), ""));
    let addr = lf.http_addr("web");
    let client = std::thread::spawn(move || post(addr, "app", &ndjson(0..100)));
    lf.wait_for_log("request failed; retrying", Duration::from_secs(10));
    let server = scripted_on(port);
    let (status, body) = client.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let seen = numbers(&server.requests());
    assert_eq!(seen.len(), 100);
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// A collector that takes the export and never answers: a stop does not
/// wait out `request_timeout` but ends within `drain_timeout` and says
/// so, and the client that posted the records is told to send them again
/// (so nothing is lost unsaid), not that they were kept.
#[test]
fn a_stop_while_the_collector_never_answers_ends_within_drain_timeout() {
    let server = Scripted::start(|_, _| {
        std::thread::sleep(Duration::from_secs(120));
        ok_answer(ExportLogsServiceResponse::default())
    });
    let mut lf = Logferry::start(&config(
        &server.url(),
        "request_timeout = \"60s\"\ndrain_timeout = \"1s\"",
    ));
    let addr = lf.http_addr("web");
    let client = std::thread::spawn(move || post(addr, "app", &ndjson(0..100)));
    common::wait_until("an export sent", Duration::from_secs(30), || {
        !server.requests().is_empty()
    });
    lf.stop_within_drain_timeout();
    let log = lf.log_text();
    assert!(
        log.contains("drain_timeout passed with requests unanswered"),
        "{log}"
    );
    let (code, body) = client.join().unwrap();
    assert_eq!(code, 503, "undelivered records: {body}");
}

// ------------------------------------------------------------ OTLP/gRPC, scripted

/// A gRPC error answer: `code`, `message`, and a `google.rpc.Status`
/// with a `RetryInfo` of `retry_after` when set.
fn grpc_error(code: u16, message: &str, retry_after: Option<Duration>) -> GrpcAnswer {
    let details = retry_after
        .map(|d| ProtoAny {
            type_url: "type.googleapis.com/google.rpc.RetryInfo".into(),
            value: RetryInfo {
                retry_delay: Some(ProtoDuration {
                    seconds: d.as_secs() as i64,
                    nanos: d.subsec_nanos() as i32,
                }),
            }
            .encode_to_vec(),
        })
        .into_iter()
        .collect();
    let status = RpcStatus {
        code: i32::from(code),
        message: message.into(),
        details,
    };
    GrpcAnswer::Error {
        code,
        message: message.into(),
        details: status.encode_to_vec(),
    }
}

fn grpc_ok(response: ExportLogsServiceResponse) -> GrpcAnswer {
    GrpcAnswer::Ok(response.encode_to_vec())
}

#[test]
fn a_grpc_export_answered_unavailable_with_retry_info_is_sent_again_after_its_delay_and_none_is_lost(
) {
    let server = ScriptedGrpc::start(|k, _| match k {
        0 => grpc_error(14, "the queue is full", Some(Duration::from_secs(1))),
        // the retry is taken, with a partial success to count
        _ => grpc_ok(ExportLogsServiceResponse {
            partial_success: Some(ExportLogsPartialSuccess {
                rejected_log_records: 3,
                error_message: "3 records too old".into(),
            }),
        }),
    });
    let mut lf = Logferry::start(&config(
        &server.url(),
        "protocol = \"grpc\"\ncompression = \"none\"",
    ));
    let api = lf.address("api listening");
    // RetryInfo's 1 s honoured
    let requests = five_hundred_sent_again_a_second_later(&mut lf, || server.requests());
    assert_eq!(requests[1].path, GRPC_EXPORT);
    assert_eq!(requests[1].header("grpc-encoding"), None);
    assert_eq!(requests[1].body[0], 0, "an uncompressed message");
    let grpc = |code: &str| {
        metric(
            api,
            &format!("logferry_otlp_sink_grpc_answers_total{{component=\"otel\",code=\"{code}\"}}"),
        )
    };
    assert_eq!((grpc("UNAVAILABLE"), grpc("OK")), (1, 1));
    assert_eq!(
        metric(
            api,
            "logferry_otlp_sink_rejected_records_total{component=\"otel\"}"
        ),
        3,
        "the partial success of the OK"
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn a_grpc_export_answered_invalid_argument_is_dead_lettered_with_its_message_and_not_sent_again() {
    let server = ScriptedGrpc::start(|k, _| match k {
        0 => grpc_error(3, "log record attributes too large", None),
        _ => grpc_ok(ExportLogsServiceResponse::default()),
    });
    // one call at a time: a retry of the first would come before the next
    let mut lf = Logferry::start(&config(
        &server.url(),
        "protocol = \"grpc\"\nconcurrency = 1",
    ));
    ten_set_aside(
        &mut lf,
        "grpc_status",
        "gRPC INVALID_ARGUMENT (3): log record attributes too large",
    );
    let (status, body) = post(lf.http_addr("web"), "app", &ndjson(10..20));
    assert_eq!(status, 200, "{body}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the refused export was never sent again");
    assert_eq!(
        requests[1].header("grpc-encoding"),
        Some("gzip"),
        "the default"
    );
    let seen = numbers(&requests[1..]);
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (10..20).collect::<Vec<_>>()
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// A server that accepts every export, on `port`.
fn scripted_on(port: u16) -> Scripted {
    Scripted::start_on(port, |_, _| ok_answer(ExportLogsServiceResponse::default()))
}

// ------------------------------------------------ a real OpenTelemetry Collector

/// The numbers of the collector's records (attribute `n`), with how often
/// each came.
fn collected(c: &common::otelcol::Collector) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    for r in c.records() {
        if let Some(n) = r["attributes"]["n"].as_u64() {
            *seen.entry(n).or_insert(0) += 1;
        }
    }
    seen
}

/// Waits until records `0..n` are all in the collector's file (and no
/// other number) and returns how often each came.
fn every_number_collected(c: &common::otelcol::Collector, n: u64) -> BTreeMap<u64, usize> {
    common::wait_until(
        "every record in the collector's file",
        Duration::from_secs(60),
        || collected(c).len() as u64 >= n,
    );
    let seen = collected(c);
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>()
    );
    seen
}

/// Checks one record as the collector read it: body, severity,
/// attributes, resource.
fn assert_record_7(collector: &common::otelcol::Collector) {
    let r = collector
        .records()
        .into_iter()
        .find(|r| r["attributes"]["n"] == 7)
        .unwrap();
    assert_eq!(r["body"], "record 7");
    assert_eq!(
        r["attributes"]["level"],
        Value::Null,
        "the severity, not an attribute"
    );
    assert_eq!(r["resource"]["service.name"], "svc-1");
    assert_eq!(r["resource"]["deployment.environment"], "test");
    assert_eq!(r["record"]["severityText"], "warn");
    assert_eq!(r["record"]["severityNumber"], 13);
    assert_eq!(r["scope"]["name"], "logferry");
}

#[test]
fn twenty_thousand_numbered_records_reach_a_real_collector_over_grpc_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let collector = common::otelcol::Collector::private(dir.path());
    once_each_over_grpc(&collector, "batch_records = 1000", 20_000);
}

#[test]
fn numbered_records_reach_a_real_collector_over_grpc_with_tls() {
    let dir = tempfile::tempdir().unwrap();
    let pki = common::pki(dir.path());
    let collector =
        common::otelcol::Collector::private_grpc_tls(dir.path(), &pki.server_cert, &pki.server_key);
    assert!(collector.grpc_url().starts_with("https://"));
    let tls = format!("tls = {{ ca_file = \"{}\" }}", pki.ca.display());
    once_each_over_grpc(&collector, &tls, 2_000);
}

/// Posts records `0..n` through a sink with `protocol = "grpc"` (and
/// `extra`) to `collector`'s gRPC receiver: each arrives once, intact,
/// in calls answered OK.
fn once_each_over_grpc(collector: &common::otelcol::Collector, extra: &str, n: u64) {
    let mut lf = Logferry::start(&config(
        &collector.grpc_url(),
        &format!("protocol = \"grpc\"\n{extra}"),
    ));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    post_all(addr, n, 250, 4);
    // each was answered OK: the file has them within its flush interval
    let seen = every_number_collected(collector, n);
    assert!(seen.values().all(|&c| c == 1), "each once");
    assert_record_7(collector);
    let ok = "logferry_otlp_sink_grpc_answers_total{component=\"otel\",code=\"OK\"}";
    assert!(metric(api, ok) > 0, "gRPC calls, answered OK");
    assert!(dead_letters(&lf.path("dead.msgpack")).is_empty());
    assert!(lf.stop().success(), "{}", lf.log_text());
}

#[test]
fn a_real_collector_killed_mid_run_and_restarted_gets_every_record_over_http() {
    every_record_through_a_killed_collector(false);
}

#[test]
fn a_real_collector_killed_mid_run_and_restarted_gets_every_record_over_grpc() {
    every_record_through_a_killed_collector(true);
}

/// 20,000 numbered records to a collector killed with SIGKILL mid-run
/// and started again two seconds later: every one arrives (some twice).
fn every_record_through_a_killed_collector(grpc: bool) {
    // it writes each export to its file before answering it: what it
    // acknowledged survives a kill -9, so every record must be there
    let dir = tempfile::tempdir().unwrap();
    let collector = common::otelcol::Collector::private_write_through(dir.path());
    let linger = "linger = \"50ms\"\nbatch_records = 500";
    let mut lf = Logferry::start(&if grpc {
        config(
            &collector.grpc_url(),
            &format!("protocol = \"grpc\"\n{linger}"),
        )
    } else {
        config(collector.http_url(), linger)
    });
    let addr = lf.http_addr("web");
    const N: u64 = 20_000;
    let sender = std::thread::spawn(move || post_all(addr, N, 250, 4));
    // mid-run, exports in flight: the collector crashes and is back after
    // two seconds of refused connections
    common::wait_until("a first export", Duration::from_secs(60), || {
        !collected(&collector).is_empty()
    });
    collector.kill();
    std::thread::sleep(Duration::from_secs(2));
    collector.restart();
    sender.join().unwrap();
    let seen = every_number_collected(&collector, N);
    assert!(
        lf.log_text().contains("request failed; retrying"),
        "the sink saw the collector gone: {}",
        lf.log_text()
    );
    let twice = seen.values().filter(|c| **c > 1).count();
    assert!(
        twice <= 2_000,
        "at least once, not a resend of everything: {twice} twice"
    );
    assert_record_7(&collector);
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// A reload that moves the sink to another collector while records come:
/// the old sink delivers what it holds before the new one takes the
/// queue, so every number is in one of the two files, the second got
/// the records after the reload, and no request was answered but 200.
#[test]
fn a_reload_moving_the_sink_to_another_collector_loses_nothing() {
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = common::otelcol::Collector::private(dir_a.path());
    let b = common::otelcol::Collector::private(dir_b.path());
    let extra = "linger = \"50ms\"\nbatch_records = 500";
    let mut lf = Logferry::start(&config(a.http_url(), extra));
    let addr = lf.http_addr("web");
    let api = lf.address("api listening");
    const N: u64 = 20_000;
    // slow enough that the reload lands mid-run: 100 records a request,
    // one request at a time per thread
    let sender = std::thread::spawn(move || post_all(addr, N, 100, 2));
    common::wait_until("a first export", Duration::from_secs(60), || {
        !collected(&a).is_empty()
    });
    lf.rewrite_config(&config(b.http_url(), extra));
    let answer = common::api_post(api, "/reload");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    sender.join().unwrap();
    // the first collector had the records exported before the reload
    let before = collected(&a).len();
    let mut seen = BTreeMap::new();
    common::wait_until(
        "every record in one file or the other",
        Duration::from_secs(60),
        || {
            let mut all = collected(&a);
            for (n, k) in collected(&b) {
                *all.entry(n).or_insert(0) += k;
            }
            seen = all;
            seen.len() as u64 >= N
        },
    );
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        (0..N).collect::<Vec<_>>()
    );
    assert!(seen.values().all(|&k| k == 1), "a record sent twice");
    assert!(
        (before as u64) < N && !collected(&b).is_empty(),
        "the reload did not land mid-run: {before} records before it"
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}
