//! The real servers the otlp source and sink and the s3 sink are tested
//! against: an OpenTelemetry Collector (scripts/otelcol.sh,
//! tests/common/otelcol.rs) and s3s-fs (scripts/s3.sh, tests/common/s3.rs).
//! That the collector writes what it receives over OTLP/HTTP and gRPC,
//! that the OpenTelemetry Python SDK's exporters (the otlp source's
//! interop clients) deliver every record to it, that the S3 server checks
//! signatures and keeps objects where the helpers read them, and that
//! private servers killed with SIGKILL come back on their ports.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::otelcol::{post, unique_service, Collector};
use common::s3::{unique_bucket, S3, SECRET_KEY};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// One OTLP-JSON export request: a log record per number in `ns`, body
/// "n=<i>", attribute n=i, under resource service.name=`service`.
fn otlp_json(service: &str, ns: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let records: Vec<Value> = ns
        .into_iter()
        .map(|i| {
            json!({
                "timeUnixNano": "1795000000000000000",
                "severityNumber": 9,
                "severityText": "INFO",
                "body": {"stringValue": format!("n={i}")},
                "attributes": [{"key": "n", "value": {"intValue": i.to_string()}}],
            })
        })
        .collect();
    serde_json::to_vec(&json!({"resourceLogs": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": service}},
        ]},
        "scopeLogs": [{"scope": {"name": "otel-servers-test"}, "logRecords": records}],
    }]}))
    .unwrap()
}

fn send_json(c: &Collector, body: &[u8]) {
    let (status, answer) = post(c.http_url(), "/v1/logs", "application/json", body)
        .unwrap_or_else(|e| panic!("POST {}/v1/logs: {e}", c.http_url()));
    assert_eq!(status, 200, "{answer}");
}

/// The `n` attribute of every record, asserting each is there once and
/// that body and severity go with it.
fn numbers(records: &[Value]) -> BTreeSet<u64> {
    let mut set = BTreeSet::new();
    for r in records {
        let n = r["attributes"]["n"]
            .as_u64()
            .unwrap_or_else(|| panic!("no attribute n in {r}"));
        assert_eq!(r["body"], json!(format!("n={n}")), "{r}");
        assert_eq!(r["record"]["severityText"], json!("INFO"), "{r}");
        assert_eq!(r["record"]["severityNumber"], json!(9), "{r}");
        assert!(set.insert(n), "record n={n} arrived twice");
    }
    set
}

/// Asserts `got` holds exactly the numbers of `want`, naming the first
/// missing and unexpected ones.
fn assert_exactly(got: &BTreeSet<u64>, want: impl IntoIterator<Item = u64>) {
    let want: BTreeSet<u64> = want.into_iter().collect();
    let missing: Vec<_> = want.difference(got).take(10).collect();
    let extra: Vec<_> = got.difference(&want).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} records of {}: missing {missing:?}…, unexpected {extra:?}…",
        got.len(),
        want.len()
    );
}

#[test]
fn the_collector_writes_an_otlp_json_log_posted_over_http() {
    let c = Collector::shared();
    let service = unique_service("one-post");
    send_json(c, &otlp_json(&service, [7]));
    let got = c.wait_records_of(&service, 1, WAIT);
    println!("flattened record: {}", got[0]);
    assert_eq!(got.len(), 1, "{got:?}");
    let r = &got[0];
    assert_eq!(r["resource"]["service.name"], json!(service));
    assert_eq!(r["scope"]["name"], json!("otel-servers-test"));
    assert_eq!(r["attributes"], json!({"n": 7}));
    assert_eq!(r["body"], json!("n=7"));
    assert_eq!(r["record"]["timeUnixNano"], json!("1795000000000000000"));
    assert_exactly(&numbers(&got), [7]);
}

fn otlp_send(protocol: &str, endpoint: &str, service: &str, n: u64) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/interop/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test-deps.sh",
        python.display()
    );
    let out = Command::new(python)
        .arg(root.join("tests/interop/python/otlp_send.py"))
        .args(["--protocol", protocol, "--endpoint", endpoint])
        .args(["--service", service, "--count", &n.to_string()])
        .output()
        .expect("run otlp_send.py");
    assert!(
        out.status.success(),
        "otlp_send.py over {protocol} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_python_sdk_delivers_every_numbered_record_over_http_and_grpc() {
    const N: u64 = 100;
    let c = Collector::shared();
    for protocol in ["http", "grpc"] {
        let endpoint = if protocol == "http" {
            c.http_url()
        } else {
            c.grpc_addr()
        };
        let service = unique_service(&format!("python-{protocol}"));
        otlp_send(protocol, endpoint, &service, N);
        c.wait_records_of(&service, N as usize, WAIT);
        // a duplicate would come after the N-th record: give it time
        std::thread::sleep(Duration::from_millis(300));
        let got = c.records_of(&service);
        assert_exactly(&numbers(&got), 0..N);
        assert_eq!(
            got[0]["scope"]["name"],
            json!("logferry.interop.otlp_send"),
            "{protocol}"
        );
    }
}

#[test]
fn a_private_collector_killed_comes_back_on_its_ports() {
    let dir = tempfile::tempdir().unwrap();
    let c = Collector::private(dir.path());
    assert_ne!(c.http_url(), Collector::shared().http_url());
    let service = unique_service("killed");
    send_json(&c, &otlp_json(&service, 0..10));
    c.wait_records_of(&service, 10, WAIT);

    c.kill();
    assert!(!c.is_up(), "a killed collector does not answer");
    c.restart();
    assert!(c.is_up());
    send_json(&c, &otlp_json(&service, 10..20));
    // it appends to the file it had
    let got = c.wait_records_of(&service, 20, WAIT);
    assert_exactly(&numbers(&got), 0..20);

    c.clear();
    assert!(c.records().is_empty());
    send_json(&c, &otlp_json(&service, [20]));
    assert_exactly(&numbers(&c.wait_records_of(&service, 1, WAIT)), [20]);
}

fn ok(out: std::process::Output, what: &str) -> Vec<u8> {
    assert!(
        out.status.success(),
        "s3_client.py {what} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn s3_keeps_a_signed_put_where_the_helpers_read_it_and_refuses_a_wrong_secret() {
    let s3 = S3::shared();
    let bucket = unique_bucket("smoke");
    ok(
        s3.boto(SECRET_KEY, &["create-bucket", &bucket]),
        "create-bucket",
    );
    let body: Vec<u8> = (0..100)
        .map(|i| format!("n={i}\n"))
        .collect::<String>()
        .into();
    let key = "logs/2026/11/27/part-1.log";
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), &body).unwrap();
    let file = path.path().to_str().unwrap();
    ok(s3.boto(SECRET_KEY, &["put", &bucket, key, file]), "put");

    // the directory helpers see what the S3 API took
    assert_eq!(s3.list(&bucket, "logs/"), vec![key.to_string()]);
    assert!(s3.list(&bucket, "other/").is_empty());
    assert_eq!(s3.get(&bucket, key), body);
    // and the S3 API reads it back the same
    assert_eq!(ok(s3.boto(SECRET_KEY, &["get", &bucket, key]), "get"), body);
    assert_eq!(
        String::from_utf8(ok(s3.boto(SECRET_KEY, &["list", &bucket, "logs/"]), "list")).unwrap(),
        format!("{key}\n")
    );

    // a wrong secret is refused, and nothing is written
    let refused = s3.boto("not-the-secret", &["put", &bucket, "refused.log", file]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{err}");
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");
    assert_eq!(s3.list(&bucket, ""), vec![key.to_string()]);

    // a bucket made through the helper takes objects too
    let made = unique_bucket("made");
    s3.create_bucket(&made);
    ok(s3.boto(SECRET_KEY, &["put", &made, "x", file]), "put");
    assert_eq!(s3.list(&made, ""), vec!["x".to_string()]);
}

#[test]
fn s3_counts_a_multipart_upload_left_incomplete() {
    let s3 = S3::shared();
    let bucket = unique_bucket("mpu");
    s3.create_bucket(&bucket);
    let other = unique_bucket("mpu-other");
    s3.create_bucket(&other);
    assert_eq!(s3.incomplete_uploads(&bucket), 0);
    ok(
        s3.boto(SECRET_KEY, &["start-upload", &bucket, "a/big.log.gz"]),
        "start-upload",
    );
    ok(
        s3.boto(SECRET_KEY, &["start-upload", &bucket, "b.log"]),
        "start-upload",
    );
    let id = String::from_utf8(ok(
        s3.boto(SECRET_KEY, &["start-upload", &bucket, "c.log"]),
        "start-upload",
    ))
    .unwrap();
    assert_eq!(s3.incomplete_uploads(&bucket), 3);
    assert_eq!(s3.incomplete_uploads(&other), 0, "counted per bucket");
    assert!(
        s3.list(&bucket, "").is_empty(),
        "no object before completion"
    );

    // an aborted upload is gone
    ok(
        s3.boto(SECRET_KEY, &["abort-upload", &bucket, "c.log", id.trim()]),
        "abort-upload",
    );
    assert_eq!(s3.incomplete_uploads(&bucket), 2);

    // a completed one is an object, and not incomplete; s3s-fs refuses a
    // part but the last under 5 MiB (EntityTooSmall), as S3 does
    let body: Vec<u8> = (0..1_200_000)
        .map(|i| format!("n={i}\n"))
        .collect::<String>()
        .into();
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), &body).unwrap();
    let file = path.path().to_str().unwrap();
    let etag = ok(
        s3.boto(
            SECRET_KEY,
            &["multipart-put", &other, "whole.log", file, "2"],
        ),
        "multipart-put",
    );
    let etag = String::from_utf8(etag).unwrap();
    assert!(
        etag.trim().ends_with("-2\""),
        "an AWS-style multipart ETag: {etag}"
    );
    assert_eq!(s3.incomplete_uploads(&other), 0);
    assert_eq!(s3.list(&other, ""), vec!["whole.log".to_string()]);
    assert_eq!(s3.get(&other, "whole.log"), body);
}

/// Tests of several binaries start the shared servers at once: a state dir
/// takes one start at a time, and the later starts find the first's server.
#[test]
fn concurrent_starts_of_one_state_dir_run_one_server_each() {
    let dir = tempfile::tempdir().unwrap();
    let (cdir, sdir) = (dir.path().join("otelcol"), dir.path().join("s3"));
    let starts: Vec<_> = (0..3)
        .map(|_| {
            let (cdir, sdir) = (cdir.clone(), sdir.clone());
            std::thread::spawn(move || {
                (
                    common::otelcol::otelcol_sh("start", &cdir),
                    common::s3::s3_sh("start", &sdir),
                )
            })
        })
        .collect();
    let got: Vec<_> = starts.into_iter().map(|t| t.join().unwrap()).collect();
    // stopped however the asserts end
    let c = Collector::private(&cdir);
    let s3 = S3::private(&sdir);
    for (addresses, endpoint) in &got {
        assert_eq!(
            addresses,
            &format!("http={}\ngrpc={}", c.http_url(), c.grpc_addr())
        );
        assert_eq!(endpoint, s3.endpoint());
    }
    let procs = |name: &str| {
        let out = Command::new("pgrep")
            .args(["-f", &format!("{name}.*{}", dir.path().display())])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(procs("otelcol-bin"), 1, "one collector");
    assert_eq!(procs("s3s-fs"), 1, "one S3 server");
}

#[test]
fn a_private_s3_server_killed_comes_back_on_its_port_with_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let s3 = S3::private(dir.path());
    assert_ne!(s3.endpoint(), S3::shared().endpoint());
    s3.create_bucket("kept");
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), b"kept\n").unwrap();
    let file = path.path().to_str().unwrap();
    ok(s3.boto(SECRET_KEY, &["put", "kept", "k1", file]), "put");

    s3.kill();
    assert!(!s3.is_up(), "a killed server does not answer");
    s3.restart();
    assert!(s3.is_up());
    assert_eq!(
        ok(s3.boto(SECRET_KEY, &["get", "kept", "k1"]), "get"),
        b"kept\n"
    );
}
