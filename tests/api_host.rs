//! The API serves only requests that name it in `Host`: a web page whose
//! name an attacker pointed at 127.0.0.1 (DNS rebinding) sends its own
//! name, and must read neither `/config` nor `/tap`, nor reload; the
//! address itself, `localhost`, and the names in `[api] allowed_hosts`
//! keep working, and so do `logferry tap` and `logferry top`.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use common::*;

fn config(api_extra: &str) -> String {
    format!(
        r#"
[sources.gen]
type = "generator"
tag = "app.web"
rate = 200
message = "hello"

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/out.log"

[api]
address = "127.0.0.1:0"
{api_extra}
"#
    )
}

/// `request` (`GET /config`) with `Host: host`: the status code and the
/// answer as far as it came within 3 s (a tap streams for ever).
fn ask(api: SocketAddr, request: &str, host: &str) -> (u16, String) {
    let mut s = TcpStream::connect(api).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    write!(
        s,
        "{request} HTTP/1.1\r\nHost: {host}\r\ncontent-length: 0\r\n\r\n"
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while std::time::Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[test]
fn a_host_that_is_not_the_apis_is_refused_and_the_usual_ones_are_served() {
    let mut lf = Logferry::start(&config(""));
    let api = lf.address("api listening");
    let port = api.port();
    for host in ["evil.example", &format!("evil.example:{port}")] {
        for request in [
            "GET /config",
            "GET /tap?component=out",
            "GET /metrics",
            "POST /reload",
        ] {
            let (status, answer) = ask(api, request, host);
            assert!(
                status == 421 || status == 403,
                "{request} with Host {host}: {answer}"
            );
            assert!(answer.contains("Host"), "says why: {answer}");
            assert!(
                !answer.contains("[sinks.out]") && !answer.contains("app.web"),
                "{request} with Host {host} showed something:\n{answer}"
            );
        }
    }
    let refused = metric_value(
        &api_get(api, "/metrics"),
        "logferry_api_refused_requests_total{reason=\"host\"}",
    );
    assert_eq!(refused, 8.0);

    // what clients send: the address, localhost, 127.0.0.1 with another
    // port (a port forward)
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "127.0.0.1".to_string(),
        "localhost:18686".to_string(),
    ] {
        let (status, answer) = ask(api, "GET /config", &host);
        assert_eq!(status, 200, "Host {host}: {answer}");
        assert!(answer.contains("[sinks.out]"), "{answer}");
    }
    let (status, answer) = ask(api, "GET /tap?component=gen", &format!("localhost:{port}"));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"component\":\"gen\""), "{answer}");

    // the command-line clients
    let tap = Command::new(BIN)
        .args(["tap", "gen", "--api", &api.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) on the pid of a child we own.
    unsafe { libc::kill(tap.id() as i32, libc::SIGINT) };
    let out = tap.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("\"record\":{\"message\":\"hello\"}"),
        "logferry tap: {printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let top = Command::new(BIN)
        .args([
            "top",
            "--once",
            "--interval",
            "1s",
            "--api",
            &api.to_string(),
        ])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&top.stdout);
    assert!(top.status.success(), "logferry top: {table}");
    assert!(table.lines().any(|l| l.starts_with("gen ")), "{table}");
    lf.stop();
}

#[test]
fn a_name_in_allowed_hosts_is_served() {
    let mut lf = Logferry::start(&config(r#"allowed_hosts = ["logs.example"]"#));
    let api = lf.address("api listening");
    let (status, answer) = ask(api, "GET /config", &format!("logs.example:{}", api.port()));
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = ask(api, "GET /config", "LOGS.example");
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = ask(api, "GET /config", "evil.logs.example");
    assert_eq!(status, 421, "{answer}");
    lf.stop();
}
