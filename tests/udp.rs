//! The `udp` source against util-linux `logger`: numbered syslog messages
//! (RFC 5424 and RFC 3164) at about 10,000 a second, each either received
//! once or counted as dropped by the kernel, with the fields the `tcp`
//! source parses; a datagram that is not syslog is kept and counted.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A udp source `in` with `extra` settings, into a file sink of JSON lines.
fn receiver(extra: &str) -> (Logferry, SocketAddr) {
    let mut r = Logferry::start(&format!(
        "[sources.in]\ntype = \"udp\"\naddress = \"127.0.0.1:0\"\nparser = \"syslog\"\n{extra}\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\nformat = \"json\"\n"
    ));
    let a = r.address("udp source listening source=in ");
    (r, a)
}

/// Sends `n-0` … `n-(count-1)` through one `logger --udp` with `args`,
/// about 10,000 a second.
fn send_numbered(addr: SocketAddr, count: usize, args: &[&str]) {
    let mut logger = Command::new("logger")
        .args(["--udp", "--server", "127.0.0.1", "--port"])
        .arg(addr.port().to_string())
        .args(args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("util-linux logger: run scripts/test-deps.sh (apt-get install -y bsdutils)");
    let mut stdin = logger.stdin.take().unwrap();
    let started = Instant::now();
    for chunk in 0..count / 1000 {
        let mut text = String::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            text.push_str(&format!("n-{i}\n"));
        }
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
        // 1,000 per 100 ms, however long the writes took
        let due = started + Duration::from_millis(100 * (chunk as u64 + 1));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    drop(stdin);
    assert!(logger.wait().unwrap().success());
}

/// Stops logferry and checks that every numbered message arrived at most
/// once, and that what did not arrive is what the kernel counted as
/// dropped; returns the records that arrived.
fn arrived_or_dropped(mut r: Logferry, count: usize) -> Vec<serde_json::Value> {
    assert!(r.stop().success(), "{}", r.log_text());
    let text = std::fs::read_to_string(r.path("received.log")).unwrap_or_default();
    let recs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seen = vec![false; count];
    for rec in &recs {
        let m = rec["record"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{rec}"));
        let i: usize = m.strip_prefix("n-").unwrap().parse().unwrap();
        assert!(!std::mem::replace(&mut seen[i], true), "n-{i} twice");
    }
    let received = r.final_counter("logferry_source_records_total{component=\"in\"}");
    let dropped = r.final_counter("logferry_udp_kernel_drops_total{component=\"in\"}");
    eprintln!("{received} received, {dropped} dropped by the kernel");
    assert_eq!(
        received,
        recs.len() as u64,
        "every received record is in the file"
    );
    assert_eq!(
        received + dropped,
        count as u64,
        "{received} received + {dropped} dropped by the kernel"
    );
    assert_eq!(
        r.final_counter(
            "logferry_udp_message_errors_total{component=\"in\",kind=\"invalid_syslog\"}"
        ),
        0
    );
    recs
}

#[test]
fn rfc5424_from_logger_every_message_arrives_or_is_counted_as_a_kernel_drop() {
    const N: usize = 100_000;
    let (r, addr) = receiver("receive_buffer_bytes = \"4MiB\"");
    send_numbered(
        addr,
        N,
        &[
            "--rfc5424",
            "-t",
            "myapp",
            "-p",
            "local3.warning",
            "--msgid",
            "M1",
            "--sd-id",
            "test@32473",
            "--sd-param",
            "k=\"v\"",
        ],
    );
    let recs = arrived_or_dropped(r, N);
    assert!(!recs.is_empty());
    for rec in &recs {
        let f = &rec["record"];
        assert_eq!(f["facility"], "local3", "{rec}");
        assert_eq!(f["severity"], "warning", "{rec}");
        assert_eq!(f["app_name"], "myapp", "{rec}");
        assert_eq!(f["msgid"], "M1", "{rec}");
        assert_eq!(f["version"], 1, "{rec}");
        assert_eq!(f["structured_data"]["test@32473"]["k"], "v", "{rec}");
        assert!(f["hostname"].is_string(), "{rec}");
    }
}

/// The smallest receive buffer the kernel allows: drops are likely, and
/// each must be counted.
#[test]
fn rfc3164_from_logger_into_the_smallest_receive_buffer_loses_nothing_uncounted() {
    const N: usize = 100_000;
    let (r, addr) = receiver("receive_buffer_bytes = 1\nlinger = \"0s\"");
    send_numbered(addr, N, &["--rfc3164", "-t", "oldapp", "-p", "daemon.err"]);
    let recs = arrived_or_dropped(r, N);
    for rec in &recs {
        let f = &rec["record"];
        assert_eq!(f["facility"], "daemon", "{rec}");
        assert_eq!(f["severity"], "err", "{rec}");
        assert_eq!(f["app_name"], "oldapp", "{rec}");
    }
}

#[test]
fn a_datagram_that_is_not_syslog_is_kept_as_its_message_and_counted() {
    let (mut r, addr) = receiver("linger = \"10ms\"");
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.send_to(b"plain words\n", addr).unwrap();
    s.send_to(b"<13>Jan  5 10:00:00 host app[7]: fine\n", addr)
        .unwrap();
    let lines = wait_for_lines(&r.path("received.log"), 2, Duration::from_secs(30));
    let recs: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        recs[0]["record"],
        serde_json::json!({"message": "plain words"})
    );
    assert_eq!(recs[1]["record"]["app_name"], "app");
    assert_eq!(recs[1]["record"]["message"], "fine");
    assert!(r.stop().success());
    assert_eq!(
        r.final_counter(
            "logferry_udp_message_errors_total{component=\"in\",kind=\"invalid_syslog\"}"
        ),
        1
    );
}

/// rsyslogd forwarding (`*.* @127.0.0.1:PORT`, RFC 3164 over UDP) what it
/// receives on its TCP input: every numbered message arrives once or is
/// counted as dropped, with the facility, severity and app name sent.
#[test]
fn rsyslog_forwarding_over_udp_every_message_arrives_or_is_counted() {
    const N: usize = 10_000;
    let (r, addr) = receiver("receive_buffer_bytes = \"4MiB\"");
    let rsyslog = common::rsyslog::Rsyslog::start(&r.path("rsyslog"), Some(addr));
    let mut s = std::net::TcpStream::connect(rsyslog.tcp).unwrap();
    let started = Instant::now();
    for chunk in 0..N / 1000 {
        let mut text = String::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            // local3.err
            text.push_str(&format!("<155>fwdapp[42]: n-{i}\n"));
        }
        s.write_all(text.as_bytes()).unwrap();
        let due = started + Duration::from_millis(100 * (chunk as u64 + 1));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    drop(s);
    // rsyslog has processed them all once its own file has each
    let deadline = Instant::now() + Duration::from_secs(60);
    while rsyslog.records().len() < N {
        assert!(
            Instant::now() < deadline,
            "rsyslog wrote {} of {N}",
            rsyslog.records().len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // and forwarded them: wait for them at logferry (those the kernel
    // dropped never come, so this wait ends at its deadline then)
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline
        && std::fs::read_to_string(r.path("received.log"))
            .unwrap_or_default()
            .lines()
            .count()
            < N
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    // stopped while its state dir (in logferry's) is still there
    drop(rsyslog);
    let recs = arrived_or_dropped(r, N);
    for rec in &recs {
        let f = &rec["record"];
        assert_eq!(f["facility"], "local3", "{rec}");
        assert_eq!(f["severity"], "err", "{rec}");
        assert_eq!(f["app_name"], "fwdapp", "{rec}");
        assert_eq!(f["procid"], "42", "{rec}");
    }
}
