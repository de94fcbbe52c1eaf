//! Interop with real clients from the Fluentd ecosystem, installed by
//! `scripts/test-deps.sh`: Python fluent-logger (PyPI), Fluency (Maven
//! Central, ack on) and fluent-logger-golang (Go proxy, ack on). Each sends
//! N records; the unified file must hold exactly N correct lines of each.
//!
//! Set LOGFERRY_SKIP_INTEROP=1 to skip when the clients are not installed;
//! otherwise a missing client fails the test (a skipped interop test would
//! prove nothing).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

const N: usize = 5000;

/// FORWARD_TO_FILE plus every record as JSON in `{dir}/all.json`.
const JSON_SINK: &str = r#"
[sinks.json]
type = "file"
match = "interop.**"
path = "{dir}/all.json"
format = "json"
"#;

fn client(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("LOGFERRY_SKIP_INTEROP").is_some() {
        eprintln!("skipping: {rel} is not installed (LOGFERRY_SKIP_INTEROP is set)");
        return None;
    }
    panic!("{rel} is missing: run scripts/test-deps.sh (or set LOGFERRY_SKIP_INTEROP=1)");
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Checks the unified file and the JSON file for `prefix` records.
fn check(lf: &Logferry, prefix: &str, tag: &str, client_name: &str) {
    let lines = wait_for_lines(&lf.path("unified.log"), 0, Duration::from_secs(1));
    assert_exactly(&lines, prefix, N);
    // the JSON file is a second sink, which may finish a moment later
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let json = loop {
        let json: Vec<serde_json::Value> = read_lines(&lf.path("all.json"))
            .iter()
            .map(|l| serde_json::from_str(l).expect("every JSON line parses"))
            .filter(|v: &serde_json::Value| v["tag"] == tag)
            .collect();
        if json.len() >= N || std::time::Instant::now() > deadline {
            break json;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(json.len(), N, "{tag}: JSON lines");
    for v in &json {
        let seq = v["record"]["seq"].as_u64().expect("seq field kept");
        assert_eq!(v["record"]["message"], format!("{prefix}-{seq}"));
        assert_eq!(v["record"]["client"], client_name);
        assert!(v["time"].as_str().unwrap().ends_with('Z'));
    }
}

#[test]
fn python_fluent_logger() {
    let Some(python) = client("target/interop/venv/bin/python") else {
        return;
    };
    let mut lf = Logferry::start(&format!("{FORWARD_TO_FILE}{JSON_SINK}"));
    let addr = lf.forward_addr("in");
    for nano in [false, true] {
        let prefix = if nano { "pyns" } else { "py" };
        let tag = format!("interop.{prefix}");
        let mut cmd = Command::new(&python);
        cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python/send.py"))
            .args(["--host", "127.0.0.1", "--port", &addr.port().to_string()])
            .args(["--tag", &tag, "--count", &N.to_string(), "--prefix", prefix]);
        if nano {
            cmd.arg("--nanosecond");
        }
        run(&mut cmd, "fluent-logger");
        wait_for_lines(
            &lf.path("unified.log"),
            N * (1 + usize::from(nano)),
            Duration::from_secs(60),
        );
        check(&lf, prefix, &tag, "python");
    }
    assert!(lf.stop().success());
}

#[test]
fn fluency_with_ack() {
    let Some(jar) = client("target/interop/fluency-sender.jar") else {
        return;
    };
    let mut lf = Logferry::start(&format!("{FORWARD_TO_FILE}{JSON_SINK}"));
    let addr = lf.forward_addr("in");
    run(
        Command::new("java").arg("-jar").arg(&jar).args([
            "127.0.0.1",
            &addr.port().to_string(),
            "interop.java",
            &N.to_string(),
            "java",
        ]),
        "fluency",
    );
    // Fluency waited for every ack: the records are already written
    check(&lf, "java", "interop.java", "fluency");
    assert!(lf.stop().success());
    assert!(lf.final_counter("logferry_forward_acks_sent_total{component=\"in\"}") >= 1);
}

#[test]
fn fluent_logger_golang_with_ack() {
    let Some(bin) = client("target/interop/go-sender") else {
        return;
    };
    let mut lf = Logferry::start(&format!("{FORWARD_TO_FILE}{JSON_SINK}"));
    let addr = lf.forward_addr("in");
    run(
        Command::new(bin)
            .args(["-host", "127.0.0.1", "-port", &addr.port().to_string()])
            .args([
                "-tag",
                "interop.go",
                "-count",
                &N.to_string(),
                "-prefix",
                "go",
                "-ack",
            ]),
        "fluent-logger-golang",
    );
    check(&lf, "go", "interop.go", "go");
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_forward_acks_sent_total{component=\"in\"}"),
        N as u64,
        "one ack per Message-mode record"
    );
}

/// FORWARD_TO_FILE and JSON_SINK with TLS on the forward source.
fn tls_receiver(pki: &Pki) -> Logferry {
    let tls = format!(
        "tls = {{ cert_file = {:?}, key_file = {:?} }}\n",
        pki.server_cert.display().to_string(),
        pki.server_key.display().to_string()
    );
    let config = format!("{FORWARD_TO_FILE}{JSON_SINK}").replace(
        "address = \"127.0.0.1:0\"\n",
        &format!("address = \"127.0.0.1:0\"\n{tls}"),
    );
    Logferry::start(&config)
}

#[test]
fn fluency_over_tls_with_ack() {
    let Some(jar) = client("target/interop/fluency-sender.jar") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut lf = tls_receiver(&pki);
    let addr = lf.forward_addr("in");
    run(
        Command::new("java")
            .arg("-jar")
            .arg(&jar)
            .args([
                "127.0.0.1",
                &addr.port().to_string(),
                "interop.java",
                &N.to_string(),
                "java",
                "--tls",
                "--ca",
            ])
            .arg(&pki.ca),
        "fluency over TLS",
    );
    check(&lf, "java", "interop.java", "fluency");
    assert!(lf.stop().success());
}

#[test]
fn fluent_logger_golang_over_tls() {
    let Some(bin) = client("target/interop/go-sender") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut lf = tls_receiver(&pki);
    let addr = lf.forward_addr("in");
    // with acks, and without: the client never reads, which must not cost records
    for (prefix, ack) in [("goack", true), ("gonoack", false)] {
        let mut cmd = Command::new(&bin);
        cmd.args(["-host", "127.0.0.1", "-port", &addr.port().to_string()])
            .args([
                "-tag",
                &format!("interop.{prefix}"),
                "-count",
                &N.to_string(),
                "-prefix",
                prefix,
                "-tls",
                "-ca",
            ])
            .arg(&pki.ca);
        if ack {
            cmd.arg("-ack");
        }
        run(&mut cmd, "fluent-logger-golang over TLS");
        let expected = if ack { N } else { 2 * N };
        wait_for_lines(&lf.path("unified.log"), expected, Duration::from_secs(30));
        check(&lf, prefix, &format!("interop.{prefix}"), "go");
    }
    assert!(lf.stop().success());
}
