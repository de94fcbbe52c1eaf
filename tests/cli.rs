//! The command line as a user meets it.

mod common;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use common::*;

fn validate(config: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(BIN)
        .args(["validate", "-c"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn validate_accepts_a_good_config() {
    let (ok, stdout, _) = validate(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    assert!(ok);
    assert!(stdout.contains("ok (1 sources, 1 sinks)"), "{stdout}");
}

#[test]
fn validate_names_the_key_and_line() {
    let (ok, _, stderr) = validate(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:24224\"\nmax_conections = 5\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
    );
    assert!(!ok);
    assert!(stderr.contains("c.toml:4:"), "{stderr}");
    assert!(stderr.contains("unknown key `max_conections`"), "{stderr}");
}

#[test]
fn help_is_everywhere() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["validate", "--help"],
        &["bench", "--help"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}

#[test]
fn run_without_config_uses_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("run")
        .current_dir(dir.path())
        .env("LOGFERRY_FORWARD_ADDRESS", "127.0.0.1:0")
        .env("LOGFERRY_HTTP_ADDRESS", "127.0.0.1:0");
    let mut lf = Logferry::spawn(&mut cmd, dir);
    let addr = lf.forward_addr("forward");
    let http = lf.http_addr("http");
    let mut entries = Vec::new();
    for i in 0..10 {
        logferry::protocol::forward::write_message_entry(
            &mut entries,
            1,
            0,
            format!("d-{i}").as_bytes(),
        );
    }
    let mut frame = Vec::new();
    logferry::protocol::forward::write_packed_forward(&mut frame, "x", &entries, 10, None);
    drop(send(addr, &frame));
    let body = (10..15).map(|i| format!("d-{i}\n")).collect::<String>();
    let mut req = std::net::TcpStream::connect(http).unwrap();
    write!(
        req,
        "POST /web HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    req.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let out = lf.path("logferry-data/unified.log");
    let lines = wait_for_lines(&out, 15, Duration::from_secs(20));
    assert_exactly(&lines, "d", 15);
    assert!(lf.stop().success());
}

#[test]
fn a_finite_generator_drains_and_exits_zero() {
    let mut lf = Logferry::start(
        r#"
[sources.gen]
type = "generator"
count = 123456
size = 10
tag = "gen"

[sinks.file]
type = "file"
match = "gen"
path = "{dir}/gen.log"
"#,
    );
    assert!(lf.wait(Duration::from_secs(60)).success());
    let lines = read_lines(&lf.path("gen.log"));
    assert_eq!(lines.len(), 123_456);
    assert!(lines
        .iter()
        .enumerate()
        .all(|(i, l)| l == &format!("{i:010}")));
}

#[test]
fn sigterm_drains_everything_already_read() {
    let mut lf = Logferry::start(
        r#"
[sources.gen]
type = "generator"
rate = 20000
size = 20

[sinks.file]
type = "file"
match = "**"
path = "{dir}/gen.log"
"#,
    );
    wait_for_lines(&lf.path("gen.log"), 5000, Duration::from_secs(20));
    assert!(lf.stop().success());
    let lines = read_lines(&lf.path("gen.log"));
    let made = lf.final_counter("logferry_source_records_total{component=\"gen\"}");
    assert_eq!(
        lines.len() as u64,
        made,
        "every generated record is in the file"
    );
    assert!(lines
        .iter()
        .enumerate()
        .all(|(i, l)| l == &format!("{i:020}")));
}

#[test]
fn a_taken_port_fails_start_up_with_a_message() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"{}\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
        taken.local_addr().unwrap()
    );
    let mut lf = Logferry::start(&config);
    let status = lf.wait(Duration::from_secs(20));
    assert!(!status.success());
    assert!(
        lf.log_text().contains("cannot listen on"),
        "{}",
        lf.log_text()
    );
}

#[test]
fn sigterm_with_a_full_queue_and_a_dead_downstream_still_exits() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut lf = Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{dead}\" }}]\ndrain_timeout = \"1s\"\nbuffer = {{ max_bytes = \"64KiB\" }}\n"
    ));
    lf.wait_for_log("server connection failed", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500)); // the queue is full by now
    let started = std::time::Instant::now();
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        lf.log_text().contains("drain_timeout passed"),
        "{}",
        lf.log_text()
    );
}

/// Runs `validate` and `run` on `config` (`{dir}` is a fresh directory);
/// returns each one's exit code and stderr.
fn validate_and_run(config: &str, env: &[(&str, &str)]) -> [(Option<i32>, String); 2] {
    let dir = tempfile::tempdir().unwrap();
    let config = config.replace("{dir}", &dir.path().display().to_string());
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    ["validate", "run"].map(|cmd| {
        let mut c = Command::new(BIN);
        c.args([cmd, "-c"]).arg(&path).env("LOGFERRY_LOG", "warn");
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // a config that `run` accepts would run forever
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
}

/// Both `validate` and `run` refuse `config` with exit code 1 and the same
/// message, which points at `line` and contains every one of `words`.
fn both_refuse(config: &str, line: usize, words: &[&str]) {
    let [(v_code, v_err), (r_code, r_err)] = validate_and_run(config, &[]);
    assert_eq!(v_code, Some(1), "validate: {v_err}");
    assert_eq!(r_code, Some(1), "run: {r_err}");
    let v_first = v_err
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or("");
    assert!(v_first.contains(&format!("c.toml:{line}: ")), "{v_err}");
    for w in words {
        assert!(v_first.contains(w), "{w:?} not in {v_err}");
    }
    assert!(
        r_err.contains(v_first),
        "run said {r_err}, validate {v_err}"
    );
}

const SINK: &str = "\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n";

#[test]
fn validate_agrees_with_run_on_api_addresses() {
    let source = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n";
    both_refuse(
        &format!("{source}{SINK}\n[api]\naddress = \"nope\"\n"),
        10,
        &["address", "nope", "host:port"],
    );
    both_refuse(
        &format!("{source}{SINK}\n[api]\naddress = \"127.0.0.1:99999\"\n"),
        10,
        &["address", "99999", "0 to 65535"],
    );
    both_refuse(
        &format!("{source}{SINK}\n[api]\naddress = \"no-such-host.invalid:80\"\n"),
        10,
        &["address", "cannot resolve"],
    );
    both_refuse(
        "[sources.in]\ntype = \"forward\"\n\naddress = \"127.0.0.1:77777\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
        4,
        &["[sources.in]", "address", "port"],
    );
}

#[test]
fn validate_agrees_with_run_on_files() {
    let source = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n";
    both_refuse(
        &format!("{source}\n[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/out/\"\n"),
        8,
        &["[sinks.f]", "path", "ends in `/`"],
    );
    both_refuse(
        &format!("{source}\n[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}\"\n"),
        8,
        &["path", "is a directory"],
    );
    both_refuse(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sources.in.tls]\nkey_file = \"/nonexistent/server.key\"\ncert_file = \"/nonexistent/server.pem\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n",
        7,
        &["tls.cert_file", "cannot read /nonexistent/server.pem"],
    );
    both_refuse(
        &format!("{source}tls = {{ cert_file = \"/nonexistent/a.pem\", key_file = \"/nonexistent/a.key\" }}\n{SINK}"),
        4,
        &["tls.cert_file", "/nonexistent/a.pem"],
    );
    both_refuse(
        "[sources.gen]\ntype = \"generator\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{ address = \"127.0.0.1:24224\" }]\ntls = { ca_file = \"/nonexistent/ca.pem\" }\n",
        8,
        &["[sinks.out]", "tls.ca_file", "/nonexistent/ca.pem"],
    );
}

#[test]
fn validate_agrees_with_run_on_huge_values() {
    let source = |extra: &str| {
        format!("[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{extra}\n{SINK}")
    };
    // a panic would exit 101
    both_refuse(
        &source("idle_timeout = \"99999999999999999999d\""),
        4,
        &["idle_timeout", "too long"],
    );
    both_refuse(
        &source("idle_timeout = 1e300"),
        4,
        &["idle_timeout", "too long"],
    );
    both_refuse(
        &source("max_frame_bytes = \"99999999999999999999GiB\""),
        4,
        &["max_frame_bytes", "too large"],
    );
    both_refuse(
        &source("max_frame_bytes = \"4GiB\""),
        4,
        &["max_frame_bytes", "most allowed"],
    );
    both_refuse(
        &source("max_frame_bytes = \"512MiB\""),
        4,
        &["max_decompressed_bytes", "raise max_decompressed_bytes"],
    );
    both_refuse(
        &source("\nmax_connections = 0"),
        5,
        &["max_connections must be at least 1"],
    );
}

#[test]
fn environment_values_are_taken_literally() {
    let config = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nshared_key = \"${LF_TEST_KEY}\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n";
    for key in [
        "with \"quotes\"",
        "back\\slash \\u0041 \\n",
        "two\nlines",
        "x\"\n\n[sinks.evil]\ntype = \"stdout\"\nmatch = \"**\"\n[x",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, config).unwrap();
        let out = Command::new(BIN)
            .args(["validate", "-c"])
            .arg(&path)
            .env("LF_TEST_KEY", key)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("ok (1 sources, 1 sinks)"),
            "{key:?}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut lf = Logferry::spawn(
        Command::new(BIN)
            .args(["run", "-c"])
            .arg({
                let dir = tempfile::tempdir().unwrap();
                let p = dir.path().join("c.toml");
                std::fs::write(&p, config).unwrap();
                std::mem::forget(dir);
                p
            })
            .env(
                "LF_TEST_KEY",
                "k\"\n[sinks.evil]\ntype = \"stdout\"\nmatch = \"**\"",
            ),
        tempfile::tempdir().unwrap(),
    );
    lf.forward_addr("in");
    assert!(lf.stop().success());
    assert!(!lf.log_text().contains("evil"), "{}", lf.log_text());
}

#[test]
fn an_unset_variable_names_itself_the_key_and_the_line() {
    let config = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sources.in.tls]\ncert_file = \"${LF_TEST_UNSET_CERT}/server.pem\"\nkey_file = \"k\"\n{SINK}".replace("{SINK}", SINK);
    both_refuse(
        &config,
        6,
        &[
            "LF_TEST_UNSET_CERT",
            "sources.in.tls.cert_file",
            "is not set",
        ],
    );
}

#[test]
fn a_bad_address_for_the_embedded_default_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("run")
        .current_dir(dir.path())
        .env("LOGFERRY_FORWARD_ADDRESS", "127.0.0.1:99999")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("<embedded default>:8:") && stderr.contains("0 to 65535"),
        "{stderr}"
    );
}
