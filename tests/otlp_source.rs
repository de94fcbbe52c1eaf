//! The `otlp` source, black-box: the built binary receiving OTLP/HTTP
//! (the OpenTelemetry Python SDK's exporter, hand-made protobuf and JSON
//! bodies, and logferry's own `otlp` sink), writing a JSON file; every
//! numbered record counted at the end with its body, severity,
//! attributes and resource.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{wait_for_lines, Logferry};
use logferry::protocol::otlp::decode::MAX_TAGS;
use logferry::protocol::otlp::status::{self, Status};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// An `otlp` source `otel` (tag by service) into `{dir}/out.json`.
fn otlp_to_file(extra: &str) -> String {
    format!(
        r#"
[sources.otel]
type = "otlp"
address = "127.0.0.1:0"
tag = "otel.${{resource.service.name}}"
{extra}

[sinks.file]
type = "file"
match = "**"
path = "{{dir}}/out.json"
format = "json"
"#
    )
}

fn otlp_addr(lf: &mut Logferry, name: &str) -> SocketAddr {
    lf.address(&format!("otlp source listening source={name} "))
}

/// A status, headers (lowercase names) and body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn post(addr: SocketAddr, path: &str, content_type: &str, body: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap();
        headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut body = Vec::new();
    let _ = r.read_to_end(&mut body);
    Reply {
        status,
        headers,
        body,
    }
}

fn kv(k: &str, v: Any) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue { value: Some(v) }),
    }
}

/// Records `from..to` of service `service`: body `n=<i>`, attribute n,
/// severity WARN, a trace id.
fn request(service: &str, numbers: std::ops::Range<u64>) -> ExportLogsServiceRequest {
    let log_records = numbers
        .map(|i| LogRecord {
            time_unix_nano: 1_700_000_000_000_000_000 + i,
            severity_text: "WARN".into(),
            severity_number: 13,
            body: Some(AnyValue {
                value: Some(Any::StringValue(format!("n={i}"))),
            }),
            attributes: vec![kv("n", Any::IntValue(i as i64))],
            trace_id: vec![0xab; 16],
            ..LogRecord::default()
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![kv("service.name", Any::StringValue(service.into()))],
                ..Resource::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records,
                ..ScopeLogs::default()
            }],
            schema_url: String::new(),
        }],
    }
}

/// The records of the file sink's lines (`{"time", "tag", "record"}`).
fn records(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            line["record"].clone()
        })
        .collect()
}

/// Each `n` attribute once, exactly `0..n`.
fn assert_numbers(records: &[Value], n: u64) {
    let mut got: Vec<u64> = records
        .iter()
        .map(|r| {
            r["n"]
                .as_u64()
                .unwrap_or_else(|| panic!("no number in {r}"))
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, (0..n).collect::<Vec<_>>(), "every number once");
}

#[test]
fn the_python_sdks_numbered_records_arrive_once_with_body_severity_attributes_and_resource() {
    const N: u64 = 2_000;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/interop/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test-deps.sh",
        python.display()
    );
    let mut lf = Logferry::start(&otlp_to_file(""));
    let addr = otlp_addr(&mut lf, "otel");
    let out = Command::new(python)
        .arg(root.join("tests/interop/python/otlp_send.py"))
        .args([
            "--protocol",
            "http",
            "--endpoint",
            &format!("http://{addr}"),
        ])
        .args(["--service", "py", "--count", &N.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "otlp_send.py failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // every export was answered 200 after the file sink kept its records
    lf.stop();
    let got = records(&common::read_lines(&lf.path("out.json")));
    assert_numbers(&got, N);
    for r in &got {
        let n = r["n"].as_u64().unwrap();
        assert_eq!(r["message"], json!(format!("n={n}")), "{r}");
        assert_eq!(r["severity"], json!("INFO"), "{r}");
        assert_eq!(r.get("severity_number"), None, "INFO is 9: {r}");
        assert_eq!(r["resource"]["service.name"], json!("py"), "{r}");
        assert_eq!(
            r["scope"]["name"],
            json!("logferry.interop.otlp_send"),
            "{r}"
        );
    }
}

#[test]
fn protobuf_and_json_exports_by_resource_tag_and_malformed_or_oversize_bodies_refused() {
    let mut lf = Logferry::start(&format!(
        "{}\n[sinks.web]\ntype = \"file\"\nmatch = \"otel.web\"\npath = \"{{dir}}/web.json\"\nformat = \"json\"\n",
        otlp_to_file("max_body_bytes = \"64KiB\"")
    ));
    let addr = otlp_addr(&mut lf, "otel");
    let r = post(
        addr,
        "/v1/logs",
        "application/x-protobuf",
        &request("web", 0..100).encode_to_vec(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    let answer = ExportLogsServiceResponse::decode(&r.body[..]).unwrap();
    assert_eq!(answer.partial_success, None);

    // OTLP/JSON as the spec writes it: camelCase, hex ids, int64 as strings
    let body = json!({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "api"}}]},
        "scopeLogs": [{"scope": {"name": "s", "version": "1"}, "logRecords": (100..200).map(|i| json!({
            "timeUnixNano": "1700000000000000000",
            "severityNumber": 17, "severityText": "ERROR",
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
            "body": {"stringValue": format!("n={i}")},
            "attributes": [{"key": "n", "value": {"intValue": i.to_string()}}]
        })).collect::<Vec<_>>()}]
    }]});
    let r = post(
        addr,
        "/v1/logs",
        "application/json",
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));

    let bad = post(
        addr,
        "/v1/logs",
        "application/x-protobuf",
        b"\xff\xff\xff not protobuf",
    );
    assert_eq!(bad.status, 400, "{bad:?}");
    let bad_json = post(
        addr,
        "/v1/logs",
        "application/json",
        b"{\"resourceLogs\": 5}",
    );
    assert_eq!(bad_json.status, 400, "{bad_json:?}");
    // a google.rpc.Status in the request's format says why
    let why: Value = serde_json::from_slice(&bad_json.body).unwrap();
    assert_eq!(why["code"], json!(3), "INVALID_ARGUMENT: {why}");
    assert!(
        why["message"].as_str().unwrap().contains("OTLP/JSON"),
        "{why}"
    );
    let big = post(
        addr,
        "/v1/logs",
        "application/x-protobuf",
        &request("web", 0..5_000).encode_to_vec(),
    );
    assert_eq!(big.status, 413, "{big:?}");
    let wrong = post(addr, "/v1/traces", "application/x-protobuf", b"");
    assert_eq!(wrong.status, 404, "{wrong:?}");
    let text = post(addr, "/v1/logs", "text/plain", b"x\n");
    assert_eq!(text.status, 415, "{text:?}");
    let why = Status::decode(text.body.as_slice()).unwrap();
    assert!(why.message.contains("text/plain"), "{why:?}");

    lf.stop();
    let all = records(&common::read_lines(&lf.path("out.json")));
    assert_numbers(&all, 200);
    let web = records(&common::read_lines(&lf.path("web.json")));
    assert_eq!(
        web.len(),
        100,
        "tag otel.web: the web resource's records only"
    );
    let api = all.iter().find(|r| r["n"] == json!(150)).unwrap();
    assert_eq!(api["message"], json!("n=150"));
    assert_eq!(api["severity"], json!("ERROR"));
    assert_eq!(api["trace_id"], json!("5b8efff798038103d269b633813fc60c"));
    assert_eq!(api["span_id"], json!("eee19b7ec3c1b174"));
    assert_eq!(api["resource"], json!({"service.name": "api"}));
    assert_eq!(api["scope"], json!({"name": "s", "version": "1"}));
    let web1 = all.iter().find(|r| r["n"] == json!(1)).unwrap();
    assert_eq!(web1["trace_id"], json!("ab".repeat(16)));
    let errors = |kind: &str| {
        lf.final_counter(&format!(
            "logferry_http_errors_total{{component=\"otel\",kind=\"{kind}\"}}"
        ))
    };
    assert_eq!(errors("malformed"), 2);
    assert_eq!(errors("too_large"), 1);
}

/// An `otlp` source (with `extra` keys) whose one sink forwards to a
/// port nobody listens on: no request is ever kept.
fn behind_a_dead_server(extra: &str) -> Logferry {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    Logferry::start(&format!(
        r#"
[sources.otel]
type = "otlp"
address = "127.0.0.1:0"
request_timeout = "1s"
{extra}

[sinks.out]
type = "forward"
match = "**"
servers = [{{ address = "127.0.0.1:{port}" }}]
reconnect_min = "50ms"
reconnect_max = "100ms"
drain_timeout = "1s"
"#
    ))
}

#[test]
fn backpressure_is_a_503_with_retry_after() {
    let mut lf = behind_a_dead_server("");
    let addr = otlp_addr(&mut lf, "otel");
    let r = post(
        addr,
        "/v1/logs",
        "application/x-protobuf",
        &request("web", 0..10).encode_to_vec(),
    );
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    // OTLP's error body: a google.rpc.Status, with how long to wait
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    assert_retry_in_1s(&Status::decode(r.body.as_slice()).unwrap(), 14);
    let j = post(
        addr,
        "/v1/logs",
        "application/json",
        serde_json::to_string(&request("web", 0..10))
            .unwrap()
            .as_bytes(),
    );
    assert_eq!(j.status, 503, "{j:?}");
    let v: Value = serde_json::from_slice(&j.body).unwrap();
    assert_eq!(v["code"], json!(14), "{v}");
    assert_eq!(v["details"][0]["@type"], json!(status::RETRY_INFO), "{v}");
    assert_eq!(v["details"][0]["retryDelay"], json!("1s"), "{v}");
    lf.stop();
}

/// `s` has `code` and a `RetryInfo` of one second.
fn assert_retry_in_1s(s: &Status, code: i32) {
    assert_eq!(s.code, code, "{s:?}");
    assert!(!s.message.is_empty(), "{s:?}");
    assert_eq!(s.details.len(), 1, "{s:?}");
    assert_eq!(s.details[0].type_url, status::RETRY_INFO);
    let info = status::RetryInfo::decode(s.details[0].value.as_slice()).unwrap();
    assert_eq!(info.retry_delay.map(|d| (d.seconds, d.nanos)), Some((1, 0)));
}

#[test]
fn a_record_sent_by_the_otlp_sink_comes_back_the_same() {
    let mut receiver = Logferry::start(&otlp_to_file(""));
    let addr = otlp_addr(&mut receiver, "otel");
    let mut sender = Logferry::start(&format!(
        r#"
[sources.web]
type = "http"
address = "127.0.0.1:0"

[sinks.otel]
type = "otlp"
match = "**"
endpoint = "http://{addr}"
"#
    ));
    let web = sender.http_addr("web");
    let sent = json!({
        "message": "hello", "severity": "warn", "n": 7, "ok": true, "ratio": 0.5,
        "nested": {"a": [1, "two"]}, "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "eee19b7ec3c1b174", "resource": {"service.name": "web", "host": "h1"}
    });
    let r = post(web, "/app", "application/json", sent.to_string().as_bytes());
    assert_eq!(r.status, 200, "{r:?}");
    sender.stop();
    let lines = wait_for_lines(&receiver.path("out.json"), 1, WAIT);
    receiver.stop();
    let mut got = records(&lines).remove(0);
    // the sink sends every record under its own scope
    let scope = got.as_object_mut().unwrap().remove("scope").unwrap();
    assert_eq!(scope["name"], json!("logferry"));
    let mut want = sent.as_object().unwrap().clone();
    let mut got = got.as_object().unwrap().clone();
    want.sort_keys();
    got.sort_keys();
    assert_eq!(Value::Object(got), Value::Object(want));
}

/// `curl --http2-prior-knowledge` posting `body` to `path` of the gRPC
/// address with `headers`; returns curl's raw output (status, headers,
/// body and trailers, lowercase).
fn grpc_curl(addr: SocketAddr, path: &str, headers: &[&str], body: &[u8]) -> String {
    let file = std::env::temp_dir().join(format!(
        "logferry-grpc-{}-{}",
        std::process::id(),
        addr.port()
    ));
    std::fs::write(&file, body).unwrap();
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "--raw",
        "-i",
        "--http2-prior-knowledge",
        "-X",
        "POST",
    ])
    .args(["--max-time", "20", "--data-binary"])
    .arg(format!("@{}", file.display()));
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(format!("http://{addr}{path}")).output().unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "curl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_lowercase()
}

/// A gRPC POST of `body` over HTTP/2 with hyper's client; returns the
/// answer's status and headers.
fn h2_post(addr: SocketAddr, path: &str, body: Vec<u8>) -> (u16, hyper::HeaderMap) {
    use http_body_util::Full;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let io = hyper_util::rt::TokioIo::new(tcp);
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = hyper::Request::post(format!("http://{addr}{path}"))
            .header("content-type", "application/grpc")
            .body(Full::new(bytes::Bytes::from(body)))
            .unwrap();
        let r = send.send_request(req).await.unwrap();
        (r.status().as_u16(), r.headers().clone())
    })
}

/// One gRPC message frame: not compressed, 4-byte big-endian length.
fn grpc_frame(message: &[u8]) -> Vec<u8> {
    let mut f = vec![0];
    f.extend_from_slice(&(message.len() as u32).to_be_bytes());
    f.extend_from_slice(message);
    f
}

const EXPORT: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

#[test]
fn the_python_sdks_grpc_exporter_records_arrive_once_with_body_severity_attributes_and_resource() {
    const N: u64 = 2_000;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/interop/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test-deps.sh",
        python.display()
    );
    let mut lf = Logferry::start(&otlp_to_file("grpc_address = \"127.0.0.1:0\""));
    let addr = lf.address("otlp grpc source listening source=otel ");
    let out = Command::new(python)
        .arg(root.join("tests/interop/python/otlp_send.py"))
        .args(["--protocol", "grpc", "--endpoint", &addr.to_string()])
        .args(["--service", "pyg", "--count", &N.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "otlp_send.py failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    lf.stop();
    let got = records(&common::read_lines(&lf.path("out.json")));
    assert_numbers(&got, N);
    for r in &got {
        let n = r["n"].as_u64().unwrap();
        assert_eq!(r["message"], json!(format!("n={n}")), "{r}");
        assert_eq!(r["severity"], json!("INFO"), "{r}");
        assert_eq!(r["resource"]["service.name"], json!("pyg"), "{r}");
        assert_eq!(
            r["scope"]["name"],
            json!("logferry.interop.otlp_send"),
            "{r}"
        );
    }
}

#[test]
fn grpc_exports_answer_a_framed_response_and_status_trailers_and_refusals_are_counted() {
    let mut lf = Logferry::start(&otlp_to_file(
        "grpc_address = \"127.0.0.1:0\"\nmax_body_bytes = \"64KiB\"",
    ));
    let addr = lf.address("otlp grpc source listening source=otel ");
    let grpc = "content-type: application/grpc";

    // plain frame: 200, a framed ExportLogsServiceResponse, grpc-status 0 in the trailers
    let ok = grpc_curl(
        addr,
        EXPORT,
        &[grpc, "te: trailers"],
        &grpc_frame(&request("web", 0..100).encode_to_vec()),
    );
    assert!(ok.starts_with("http/2 200"), "{ok}");
    assert!(ok.contains("content-type: application/grpc"), "{ok}");
    let (head, rest) = ok.split_once("\r\n\r\n").unwrap();
    assert!(!head.contains("grpc-status"), "status in trailers: {ok}");
    assert!(rest.contains("grpc-status: 0"), "{ok}");

    // gzip-compressed frame (flag 1, grpc-encoding gzip)
    let message = request("web", 100..200).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&message).unwrap();
    let mut frame = grpc_frame(&gz.finish().unwrap());
    frame[0] = 1;
    let zipped = grpc_curl(addr, EXPORT, &[grpc, "grpc-encoding: gzip"], &frame);
    assert!(zipped.contains("grpc-status: 0"), "{zipped}");

    // malformed: a frame that is not protobuf, a frame longer than its body
    let bad = grpc_curl(
        addr,
        EXPORT,
        &[grpc],
        &grpc_frame(b"\xff\xff\xff not protobuf"),
    );
    assert!(bad.starts_with("http/2 200"), "trailers-only: {bad}");
    assert!(bad.contains("grpc-status: 3"), "{bad}");
    let mut short = grpc_frame(&message);
    short.truncate(20);
    let truncated = grpc_curl(addr, EXPORT, &[grpc], &short);
    assert!(truncated.contains("grpc-status: 3"), "{truncated}");
    // too large: RESOURCE_EXHAUSTED, answered before the body is read (and
    // the stream then reset, which curl 7.88 takes for an error: hyper's
    // client reads the answer as gRPC clients do)
    let (status, headers) = h2_post(
        addr,
        EXPORT,
        grpc_frame(&request("web", 0..5_000).encode_to_vec()),
    );
    assert_eq!(status, 200, "{headers:?}");
    assert_eq!(headers["grpc-status"], "8", "{headers:?}");
    // a coding not read here: UNIMPLEMENTED
    let snappy = grpc_curl(addr, EXPORT, &[grpc, "grpc-encoding: snappy"], &frame);
    assert!(snappy.contains("grpc-status: 12"), "{snappy}");
    // another method: UNIMPLEMENTED
    let other = grpc_curl(
        addr,
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        &[grpc],
        &grpc_frame(b""),
    );
    assert!(other.contains("grpc-status: 12"), "{other}");

    lf.stop();
    let all = records(&common::read_lines(&lf.path("out.json")));
    assert_numbers(&all, 200);
    let errors = |kind: &str| {
        lf.final_counter(&format!(
            "logferry_http_errors_total{{component=\"otel\",kind=\"{kind}\"}}"
        ))
    };
    assert_eq!(errors("malformed"), 2);
    assert_eq!(errors("too_large"), 1);
    assert_eq!(errors("unsupported_encoding"), 1);
}

#[test]
fn grpc_backpressure_is_unavailable_which_exporters_retry() {
    let mut lf = behind_a_dead_server("grpc_address = \"127.0.0.1:0\"");
    let addr = lf.address("otlp grpc source listening source=otel ");
    let r = grpc_curl(
        addr,
        EXPORT,
        &["content-type: application/grpc"],
        &grpc_frame(&request("web", 0..10).encode_to_vec()),
    );
    assert!(r.starts_with("http/2 200"), "trailers-only: {r}");
    assert!(r.contains("grpc-status: 14"), "{r}");
    // the status again, with a RetryInfo the exporters wait for
    let (status, headers) = h2_post(
        addr,
        EXPORT,
        grpc_frame(&request("web", 0..10).encode_to_vec()),
    );
    assert_eq!(status, 200, "{headers:?}");
    assert_eq!(headers["grpc-status"], "14", "{headers:?}");
    let details = headers["grpc-status-details-bin"].to_str().unwrap();
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(details.trim_end_matches('='))
        .unwrap();
    assert_retry_in_1s(&Status::decode(bytes.as_slice()).unwrap(), 14);
    lf.stop();
}

#[test]
fn otlp_json_takes_64_bit_integers_as_json_numbers_as_well_as_strings() {
    const N: u64 = 100;
    const T0: u64 = 1_700_000_000_000_000_000;
    let mut lf = Logferry::start(&otlp_to_file(""));
    let addr = otlp_addr(&mut lf, "otel");
    // as the protobuf JSON mapping and the Collector read them: numbers
    // (even, n odd, the observed time only) and strings alike
    let record = |i: u64| {
        let time = T0 + i * 1_000_000_123;
        let mut r = json!({
            "severityNumber": 13,
            "body": {"stringValue": format!("n={i}")},
            "attributes": [
                {"key": "n", "value": {"intValue": i}},
                {"key": "big", "value": {"intValue": i64::MAX - i as i64}},
                {"key": "neg", "value": {"intValue": -(i as i64) - 1_000}},
            ],
        });
        match i % 3 {
            0 => r["timeUnixNano"] = json!(time),
            1 => r["observedTimeUnixNano"] = json!(time),
            _ => r["timeUnixNano"] = json!(time.to_string()),
        }
        r
    };
    let body = json!({"resourceLogs": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "num"}},
            {"key": "pid", "value": {"intValue": 4_294_967_296u64}},
        ]},
        "scopeLogs": [{"logRecords": (0..N).map(record).collect::<Vec<_>>()}]
    }]});
    let r = post(
        addr,
        "/v1/logs",
        "application/json",
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?} {}", String::from_utf8_lossy(&r.body));
    lf.stop();
    let lines = common::read_lines(&lf.path("out.json"));
    assert_numbers(&records(&lines), N);
    for l in &lines {
        let line: Value = serde_json::from_str(l).unwrap();
        let r = &line["record"];
        let i = r["n"].as_u64().unwrap();
        assert_eq!(line["tag"], json!("otel.num"), "{l}");
        let time = chrono::DateTime::parse_from_rfc3339(line["time"].as_str().unwrap()).unwrap();
        let nanos = time.timestamp_nanos_opt().unwrap() as u64;
        assert_eq!(nanos, T0 + i * 1_000_000_123, "{l}");
        assert_eq!(r["big"], json!(i64::MAX - i as i64), "{l}");
        assert_eq!(r["neg"], json!(-(i as i64) - 1_000), "{l}");
        assert_eq!(r["message"], json!(format!("n={i}")), "{l}");
        assert_eq!(r["severity"], json!(13), "{l}");
        assert_eq!(
            r["resource"],
            json!({"service.name": "num", "pid": 4_294_967_296u64}),
            "{l}"
        );
    }
}

/// The default `max_body_bytes` of the `otlp` source.
const DEFAULT_MAX_BODY: usize = 8 * 1024 * 1024;

/// How slow another source's `/health` may be meanwhile: 50 ms for a
/// release build; a debug build on a machine shared with the rest of the
/// suite measured up to 44 ms, so it is given 250 ms. A stall of the
/// runtime's threads, as before, took seconds.
const HEALTH_WITHIN: Duration = if cfg!(debug_assertions) {
    Duration::from_millis(250)
} else {
    Duration::from_millis(50)
};

/// How soon the costliest request is answered: within a second by a
/// release build; an unoptimised (debug) build, which tests run, decodes
/// several times slower (about 0.8–1 s alone for these requests on a
/// 2-CPU machine), so it is given 4 s. Either way far from what a cost
/// growing with the square of the request took: over 30 s.
const ANSWERED_WITHIN: Duration = if cfg!(debug_assertions) {
    Duration::from_secs(4)
} else {
    Duration::from_secs(1)
};

/// The `i`-th shortest distinct string over `alphabet` ("", then one
/// character, then two, …; `i` from 0 is the first non-empty one).
fn nth_name(alphabet: &[u8], i: usize) -> String {
    let base = alphabet.len();
    let (mut i, mut len, mut count) = (i, 1, base);
    while i >= count {
        i -= count;
        len += 1;
        count *= base;
    }
    let mut name = vec![0u8; len];
    for c in name.iter_mut().rev() {
        *c = alphabet[i % base];
        i /= base;
    }
    String::from_utf8(name).unwrap()
}

/// `body` as protobuf field `field` (length-delimited).
fn pb_field(out: &mut Vec<u8>, field: u32, body: &[u8]) {
    prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// The request of one LogRecord with as many distinct attribute keys
/// (no values: each key is all an attribute costs) as `limit` bytes of
/// protobuf hold; and how many.
fn pb_many_keys(limit: usize) -> (Vec<u8>, usize) {
    // 0x01..=0x7f: one byte of UTF-8 each
    let alphabet: Vec<u8> = (1..=0x7f).collect();
    let (mut record, mut kv) = (Vec::with_capacity(limit), Vec::new());
    let mut keys = 0;
    // the three messages around the record: a tag and a length each
    while record.len() + 3 * 5 < limit {
        kv.clear();
        pb_field(&mut kv, 1, nth_name(&alphabet, keys).as_bytes());
        if record.len() + kv.len() + 2 + 3 * 5 > limit {
            break;
        }
        pb_field(&mut record, 6, &kv);
        keys += 1;
    }
    let (mut scope, mut resource, mut request) = (Vec::new(), Vec::new(), Vec::new());
    pb_field(&mut scope, 2, &record);
    pb_field(&mut resource, 2, &scope);
    pb_field(&mut request, 1, &resource);
    assert!(request.len() <= limit);
    (request, keys)
}

/// The request of as many resources as `limit` bytes of protobuf hold,
/// each with one empty LogRecord and a `service.name` of `tags` (each
/// one's own tag, taken in turn); and how many.
fn pb_many_resources(limit: usize, tags: usize) -> (Vec<u8>, usize) {
    let alphabet = name_alphabet();
    let mut request = Vec::with_capacity(limit);
    let mut n = 0;
    loop {
        let resource = Resource {
            attributes: vec![kv(
                "service.name",
                Any::StringValue(nth_name(&alphabet, n % tags)),
            )],
            ..Resource::default()
        };
        let rl = ResourceLogs {
            resource: Some(resource),
            scope_logs: vec![ScopeLogs {
                log_records: vec![LogRecord::default()],
                ..ScopeLogs::default()
            }],
            schema_url: String::new(),
        }
        .encode_to_vec();
        if request.len() + rl.len() + 2 > limit {
            break;
        }
        pb_field(&mut request, 1, &rl);
        n += 1;
    }
    (request, n)
}

/// Printable ASCII but `"` and `\`: one byte in a JSON string.
fn json_alphabet() -> Vec<u8> {
    (b' '..=b'~').filter(|c| !b"\"\\".contains(c)).collect()
}

/// A JSON body of `head`, as many items `item(0)`, `item(1)`, … (with
/// commas) as `limit` bytes hold, and `tail`; and how many.
fn json_filled(
    limit: usize,
    head: &str,
    tail: &str,
    item: impl Fn(usize) -> String,
) -> (Vec<u8>, usize) {
    let mut body = Vec::with_capacity(limit);
    body.extend_from_slice(head.as_bytes());
    let mut n = 0;
    loop {
        let next = item(n);
        if body.len() + next.len() + 1 + tail.len() > limit {
            break;
        }
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(next.as_bytes());
        n += 1;
    }
    body.extend_from_slice(tail.as_bytes());
    (body, n)
}

/// [`pb_many_keys`] in OTLP/JSON.
fn json_many_keys(limit: usize) -> (Vec<u8>, usize) {
    let alphabet = json_alphabet();
    json_filled(
        limit,
        r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":["#,
        "]}]}]}]}",
        |i| format!(r#"{{"key":"{}"}}"#, nth_name(&alphabet, i)),
    )
}

/// Letters and digits: tag parts as a service names itself.
fn name_alphabet() -> Vec<u8> {
    (b'0'..=b'9')
        .chain(b'a'..=b'z')
        .chain(b'A'..=b'Z')
        .collect()
}

/// [`pb_many_resources`] in OTLP/JSON.
fn json_many_resources(limit: usize, tags: usize) -> (Vec<u8>, usize) {
    let alphabet = name_alphabet();
    json_filled(limit, r#"{"resourceLogs":["#, "]}", |i| {
        format!(
            r#"{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{}"}}}}]}},"scopeLogs":[{{"logRecords":[{{}}]}}]}}"#,
            nth_name(&alphabet, i % tags)
        )
    })
}

/// The longest a `GET /health` of `addr` took, asked again and again
/// until `done`.
fn slowest_health(addr: SocketAddr, done: &std::sync::atomic::AtomicBool) -> (Duration, usize) {
    let (mut slowest, mut asked) = (Duration::ZERO, 0);
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let t = std::time::Instant::now();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        slowest = slowest.max(t.elapsed());
        asked += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    (slowest, asked)
}

#[test]
fn the_costliest_requests_the_default_body_limit_allows_are_answered_within_a_second_and_stall_no_other_source(
) {
    let mut lf = Logferry::start(
        r#"
[sources.otel]
type = "otlp"
address = "127.0.0.1:0"
tag = "otel.${resource.service.name}"

[sources.web]
type = "http"
address = "127.0.0.1:0"

[sinks.null]
type = "null"
match = "**"
"#,
    );
    let otlp = otlp_addr(&mut lf, "otel");
    let web = lf.http_addr("web");
    let limit = DEFAULT_MAX_BODY;
    let (pb_keys, keys) = pb_many_keys(limit);
    let (pb_resources, resources) = pb_many_resources(limit, MAX_TAGS);
    let (json_keys, json_key_count) = json_many_keys(limit);
    let (json_resources, json_resource_count) = json_many_resources(limit, MAX_TAGS);
    eprintln!(
        "bodies: {keys} keys, {resources} resources (protobuf); {json_key_count} keys, {json_resource_count} resources (JSON)"
    );
    // a tag more than a request may render: refused at once, whole
    for (what, content_type, (body, _)) in [
        (
            "protobuf",
            "application/x-protobuf",
            pb_many_resources(limit, usize::MAX),
        ),
        (
            "JSON",
            "application/json",
            json_many_resources(limit, usize::MAX),
        ),
    ] {
        let t = std::time::Instant::now();
        let r = post(otlp, "/v1/logs", content_type, &body);
        let took = t.elapsed();
        eprintln!("{what}, a tag per resource: {} in {took:?}", r.status);
        assert_eq!(r.status, 413, "{what}: {r:?}");
        assert!(took < ANSWERED_WITHIN, "{what}: answered in {took:?}");
    }
    let worst: [(&str, &str, &[u8], usize); 4] = [
        ("protobuf keys", "application/x-protobuf", &pb_keys, 1),
        (
            "protobuf resources",
            "application/x-protobuf",
            &pb_resources,
            resources,
        ),
        ("JSON keys", "application/json", &json_keys, 1),
        (
            "JSON resources",
            "application/json",
            &json_resources,
            json_resource_count,
        ),
    ];
    let mut sent = 0;
    for (what, content_type, body, records) in worst {
        assert!(body.len() <= limit, "{what}: {} bytes", body.len());
        // alone: answered within a second
        let t = std::time::Instant::now();
        let r = post(otlp, "/v1/logs", content_type, body);
        let alone = t.elapsed();
        assert_eq!(r.status, 200, "{what}: {r:?}");
        // two at once, while another source is asked for its health
        let done = std::sync::atomic::AtomicBool::new(false);
        let (health, asked, both) = std::thread::scope(|s| {
            let poll = s.spawn(|| slowest_health(web, &done));
            let t = std::time::Instant::now();
            let posts: Vec<_> = (0..2)
                .map(|_| s.spawn(|| post(otlp, "/v1/logs", content_type, body)))
                .collect();
            for p in posts {
                let r = p.join().unwrap();
                assert_eq!(r.status, 200, "{what}: {r:?}");
            }
            let both = t.elapsed();
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            let (health, asked) = poll.join().unwrap();
            (health, asked, both)
        });
        eprintln!(
            "{what} ({} bytes): alone {alone:?}, two at once {both:?}; slowest of {asked} /health of another source {health:?}",
            body.len()
        );
        assert!(alone < ANSWERED_WITHIN, "{what}: answered in {alone:?}");
        assert!(
            health < HEALTH_WITHIN,
            "{what}: another source's /health took {health:?}"
        );
        sent += 3 * records;
    }
    lf.stop();
    assert_eq!(
        lf.final_counter("logferry_sink_records_total{component=\"null\"}"),
        sent as u64
    );
}

#[test]
fn a_small_request_whose_records_repeat_a_large_resource_past_the_memory_budget_is_refused() {
    let mut lf = Logferry::start(&otlp_to_file("").replace(
        "[sinks.file]",
        "[limits]\nmemory = \"8MiB\"\n\n[sinks.file]",
    ));
    let addr = otlp_addr(&mut lf, "otel");
    // 200 KB of resource attributes repeated in each of 20,000 empty
    // records: a 240 KB body that would be 4 GB of records
    let mut req = request("big", 0..0);
    let rl = &mut req.resource_logs[0];
    rl.resource
        .as_mut()
        .unwrap()
        .attributes
        .push(kv("pad", Any::StringValue("x".repeat(200_000))));
    rl.scope_logs[0].log_records = vec![LogRecord::default(); 20_000];
    let t = std::time::Instant::now();
    let r = post(
        addr,
        "/v1/logs",
        "application/x-protobuf",
        &req.encode_to_vec(),
    );
    let why = Status::decode(r.body.as_slice()).unwrap();
    assert_eq!(r.status, 413, "{r:?} {why:?}");
    assert!(why.message.contains("memory budget"), "{why:?}");
    assert!(
        t.elapsed() < ANSWERED_WITHIN,
        "answered in {:?}",
        t.elapsed()
    );
    // and the source goes on
    let ok = post(
        addr,
        "/v1/logs",
        "application/x-protobuf",
        &request("web", 0..10).encode_to_vec(),
    );
    assert_eq!(ok.status, 200, "{ok:?}");
    lf.stop();
    assert_numbers(&records(&common::read_lines(&lf.path("out.json"))), 10);
    assert_eq!(
        lf.final_counter(
            "logferry_http_errors_total{component=\"otel\",kind=\"decoded_too_large\"}"
        ),
        1
    );
}
