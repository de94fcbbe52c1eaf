//! The `syslog` sink against a real rsyslogd (scripts/rsyslog.sh):
//! numbered records sent over TCP and TLS (octet-counted RFC 5424, and RFC 3164)
//! arrive each exactly once, parsed by rsyslog into the facility, severity,
//! app name, msgid and structured data the templates made; over UDP each
//! arrives at most once.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::rsyslog::Rsyslog;
use common::*;

/// A tcp source of JSON lines into a syslog sink with `sink` settings.
fn sender(sink: &str) -> (Logferry, SocketAddr) {
    let mut r = Logferry::start(&format!(
        "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\nformat = \"json\"\ntag = \"app.web\"\n\n[sinks.out]\ntype = \"syslog\"\nmatch = \"**\"\n{sink}\n"
    ));
    let a = r.address("tcp source listening source=in ");
    (r, a)
}

/// Sends records `n-0` … `n-(count-1)` as JSON lines.
fn send_numbered(addr: SocketAddr, count: usize) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut text = String::new();
    for i in 0..count {
        text.push_str(&format!(
            "{{\"message\":\"n-{i}\",\"level\":\"err\",\"sd\":{{\"seq@32473\":{{\"i\":\"{i}\",\"q\":\"a\\\"b\"}}}}}}\n"
        ));
        if text.len() > 64 * 1024 {
            s.write_all(text.as_bytes()).unwrap();
            text.clear();
        }
    }
    s.write_all(text.as_bytes()).unwrap();
}

/// Waits until rsyslog has written `n` messages (or `timeout` passed).
fn wait_for(rsyslog: &Rsyslog, n: usize, timeout: Duration) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let recs = rsyslog.records();
        if recs.len() >= n || Instant::now() >= deadline {
            return recs;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Each message's number, checked to be there at most once.
fn numbers(recs: &[serde_json::Value], count: usize) -> Vec<bool> {
    let mut seen = vec![false; count];
    for rec in recs {
        let m = rec["msg"].as_str().unwrap_or_else(|| panic!("{rec}"));
        let i: usize = m
            .trim_start()
            .strip_prefix("n-")
            .unwrap_or_else(|| panic!("{rec}"))
            .parse()
            .unwrap();
        assert!(!std::mem::replace(&mut seen[i], true), "n-{i} twice");
    }
    seen
}

#[test]
fn rfc5424_over_tcp_every_record_arrives_once_with_its_fields() {
    const N: usize = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let rsyslog = Rsyslog::start(dir.path(), None);
    let (mut r, addr) = sender(&format!(
        "address = \"{}\"\nfacility = \"local4\"\nseverity = \"{{level}}\"\napp_name = \"myapp\"\nhostname = \"h1\"\nmsg_id = \"M1\"\nstructured_data = \"sd\"",
        rsyslog.tcp
    ));
    send_numbered(addr, N);
    let recs = wait_for(&rsyslog, N, Duration::from_secs(120));
    let seen = numbers(&recs, N);
    assert!(seen.iter().all(|s| *s), "{} of {N} arrived", recs.len());
    for rec in &recs {
        assert_eq!(rec["facility"], "local4", "{rec}");
        assert_eq!(rec["severity"], "err", "{rec}");
        assert_eq!(rec["app_name"], "myapp", "{rec}");
        assert_eq!(rec["hostname"], "h1", "{rec}");
        assert_eq!(rec["msgid"], "M1", "{rec}");
        let i = rec["msg"].as_str().unwrap().strip_prefix("n-").unwrap();
        assert_eq!(
            rec["structured_data"],
            format!("[seq@32473 i=\"{i}\" q=\"a\\\"b\"]"),
            "{rec}"
        );
    }
    assert!(r.stop().success());
    assert_eq!(
        r.final_counter("logferry_sink_rejected_records_total{component=\"out\"}"),
        0
    );
}

/// On a disk buffer the sink gathers what its source wrote there for its
/// flush_interval (500 ms by default there) and sends it together, not
/// each line as it was read; every record still arrives once.
#[test]
fn on_a_disk_buffer_lines_read_one_at_a_time_are_sent_together() {
    const N: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let buffer = tempfile::tempdir().unwrap();
    let rsyslog = Rsyslog::start(dir.path(), None);
    let (mut r, addr) = sender(&format!(
        "address = \"{}\"\nbuffer = {{ type = \"disk\", dir = \"{}\" }}",
        rsyslog.tcp,
        buffer.path().display()
    ));
    let mut s = TcpStream::connect(addr).unwrap();
    let (recs, sizes) = sizes_while(rsyslog.out_path(), || {
        // one read, one write to the buffer each
        let lines = (0..N).map(|i| format!("{{\"message\":\"n-{i}\"}}"));
        write_lines_apart(&mut s, lines, Duration::from_millis(10));
        wait_for(&rsyslog, N, Duration::from_secs(30))
    });
    let seen = numbers(&recs, N);
    assert!(seen.iter().all(|s| *s), "{} of {N} arrived", recs.len());
    // the first size seen is none yet
    let sends = sizes.len() - 1;
    assert!(
        (1..=N / 4).contains(&sends),
        "{sends} sends for {N} lines read: {sizes:?}"
    );
    assert!(r.stop().success());
}

#[test]
fn rfc5424_over_tls_every_record_arrives_once() {
    const N: usize = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let rsyslog = Rsyslog::start(dir.path(), None);
    let (mut r, addr) = sender(&format!(
        "address = \"{}\"\nfacility = \"auth\"\nseverity = \"{{level}}\"\napp_name = \"tlsapp\"\ntls = {{ ca_file = \"{}\" }}",
        rsyslog.tls,
        rsyslog.ca.display()
    ));
    send_numbered(addr, N);
    let recs = wait_for(&rsyslog, N, Duration::from_secs(120));
    let seen = numbers(&recs, N);
    assert!(seen.iter().all(|s| *s), "{} of {N} arrived", recs.len());
    for rec in &recs {
        assert_eq!(rec["facility"], "auth", "{rec}");
        assert_eq!(rec["severity"], "err", "{rec}");
        assert_eq!(rec["app_name"], "tlsapp", "{rec}");
    }
    assert!(r.stop().success());
}

#[test]
fn rfc3164_over_tcp_arrives_once_with_facility_severity_and_tag() {
    const N: usize = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let rsyslog = Rsyslog::start(dir.path(), None);
    let (mut r, addr) = sender(&format!(
        "address = \"{}\"\nrfc = \"3164\"\nfacility = \"daemon\"\nseverity = \"warning\"\napp_name = \"{{tag}}\"",
        rsyslog.tcp
    ));
    send_numbered(addr, N);
    let recs = wait_for(&rsyslog, N, Duration::from_secs(60));
    let seen = numbers(&recs, N);
    assert!(seen.iter().all(|s| *s), "{} of {N} arrived", recs.len());
    for rec in &recs {
        assert_eq!(rec["facility"], "daemon", "{rec}");
        assert_eq!(rec["severity"], "warning", "{rec}");
        assert_eq!(rec["app_name"], "app.web", "{rec}");
    }
    assert!(r.stop().success());
}

#[test]
fn over_udp_each_record_arrives_at_most_once() {
    const N: usize = 5_000;
    let dir = tempfile::tempdir().unwrap();
    let rsyslog = Rsyslog::start(dir.path(), None);
    let (mut r, addr) = sender(&format!(
        "address = \"{}\"\nmode = \"udp\"\nfacility = \"local1\"\nseverity = \"info\"\napp_name = \"udpapp\"",
        rsyslog.udp
    ));
    send_numbered(addr, N);
    let recs = wait_for(&rsyslog, N, Duration::from_secs(30));
    numbers(&recs, N);
    assert!(!recs.is_empty());
    for rec in &recs {
        assert_eq!(rec["facility"], "local1", "{rec}");
        assert_eq!(rec["app_name"], "udpapp", "{rec}");
    }
    assert!(r.stop().success());
    assert_eq!(
        r.final_counter("logferry_sink_records_total{component=\"out\"}"),
        N as u64,
        "every record handed to the socket"
    );
}

/// A receiver whose certificate does not verify (not signed by a CA the
/// sink trusts): nothing is sent in clear, the errors are counted, and at
/// the stop the records are given back unacknowledged, not lost silently.
#[test]
fn a_certificate_that_does_not_verify_sends_nothing() {
    const N: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    let rsyslog = Rsyslog::start(dir.path(), None);
    // the system bundle, which does not hold the test CA
    let (mut r, addr) = sender(&format!(
        "address = \"{}\"\ntls = {{ server_name = \"localhost\" }}\nretry = {{ initial = \"100ms\", max = \"200ms\" }}",
        rsyslog.tls
    ));
    send_numbered(addr, N);
    r.wait_for_log("syslog sink: cannot send", Duration::from_secs(30));
    assert!(r.stop().success());
    assert!(rsyslog.records().is_empty(), "{:?}", rsyslog.records());
    assert!(r.final_counter("logferry_sink_errors_total{component=\"out\"}") > 0);
    assert_eq!(
        r.final_counter("logferry_sink_records_total{component=\"out\"}"),
        0
    );
}
