//! Rejected records end in a sink's dead-letter file, and `logferry replay`
//! sends them on.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};

/// One PackedForward frame of `prefix-<i>` records.
fn frame(tag: &str, prefix: &str, range: std::ops::Range<usize>, chunk: Option<&[u8]>) -> Vec<u8> {
    let mut entries = Vec::new();
    let n = range.len();
    for i in range {
        write_message_entry(
            &mut entries,
            1_700_000_000,
            0,
            format!("{prefix}-{i}").as_bytes(),
        );
    }
    let mut out = Vec::new();
    write_packed_forward(&mut out, tag, &entries, n, chunk);
    out
}

/// A receiver that reads what it is sent and closes without ever acking;
/// returns its address and how many connections it took.
fn refusing_receiver() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let taken = Arc::new(AtomicUsize::new(0));
    let t = taken.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            t.fetch_add(1, Ordering::AcqRel);
            c.set_read_timeout(Some(Duration::from_millis(300))).ok();
            let mut buf = [0u8; 64 * 1024];
            let _ = c.read(&mut buf);
            // closed without an ack
        }
    });
    (addr, taken)
}

fn dead_letter_records(path: &std::path::Path) -> usize {
    let Ok(data) = std::fs::read(path) else {
        return 0;
    };
    let data = bytes::Bytes::from(data);
    let mut pos = 0;
    let mut n = 0;
    while pos < data.len() {
        let end = logferry::protocol::msgpack::skip(&data, pos).unwrap();
        let f =
            logferry::protocol::forward::decode_frame(data.slice(pos..end), &Default::default())
                .unwrap();
        n += f.count;
        pos = end;
    }
    n
}

#[test]
fn refused_chunks_go_to_the_dead_letter_file_and_replay_delivers_every_record() {
    const N: usize = 500;
    let (refuser, connections) = refusing_receiver();
    let mut relay = Logferry::start(&format!(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "forward"
match = "**"
servers = [{{ address = "{refuser}" }}]
require_ack = true
ack_timeout = "2s"
max_attempts = 2
reconnect_min = "50ms"
reconnect_max = "100ms"
dead_letter = "{{dir}}/rejected/out.msgpack"
"#
    ));
    let dead_letter = relay.dir.path().join("rejected/out.msgpack");
    let addr = relay.forward_addr("in");
    let mut c = send(addr, &frame("app", "rec", 0..N / 2, Some(b"a")));
    c.write_all(&frame("app.other", "rec", N / 2..N, Some(b"b")))
        .unwrap();
    wait_until("the dead-letter file", Duration::from_secs(30), || {
        dead_letter_records(&dead_letter) >= N
    });
    // kept in the dead-letter file: acknowledged to the client
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut acks = Vec::new();
    let mut buf = [0u8; 256];
    while !(String::from_utf8_lossy(&acks).contains('a')
        && String::from_utf8_lossy(&acks).contains('b'))
    {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed before both acks");
        acks.extend_from_slice(&buf[..n]);
    }
    assert!(relay.stop().success(), "{}", relay.log_text());
    assert_eq!(dead_letter_records(&dead_letter), N, "once each");
    assert!(
        connections.load(Ordering::Acquire) >= 2,
        "each chunk was tried max_attempts times"
    );
    assert_eq!(
        relay.final_counter("logferry_sink_dead_letter_records_total{component=\"out\"}"),
        N as u64
    );
    assert_eq!(
        relay.final_counter("logferry_forward_sink_chunks_given_up_total{component=\"out\"}"),
        2
    );
    assert!(relay.log_text().contains("written to the dead-letter file"));

    // a real receiver writing a file
    let mut rx = Logferry::start(FORWARD_TO_FILE);
    let rx_addr = rx.forward_addr("in");
    let out = Command::new(BIN)
        .args(["replay"])
        .arg(&dead_letter)
        .args(["--to", &rx_addr.to_string(), "--timeout", "20s"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("{N} acknowledged, 0 not acknowledged")),
        "{stdout}"
    );
    let lines = wait_for_lines(&rx.path("unified.log"), N, Duration::from_secs(20));
    assert_exactly(&lines, "rec", N);
    assert!(rx.stop().success());
}

#[test]
fn replay_says_what_is_wrong_with_a_file_that_is_not_frames() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.msgpack");
    let mut data = frame("t", "ok", 0..3, None);
    data.extend_from_slice(&[0xc1, 0, 0]); // 0xc1 is never valid msgpack
    std::fs::write(&bad, data).unwrap();
    let mut rx = Logferry::start(FORWARD_TO_FILE);
    let rx_addr = rx.forward_addr("in");
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&bad)
        .args(["--to", &rx_addr.to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a Forward-protocol frame"), "{stderr}");
    // the records before the bad bytes were delivered
    let lines = wait_for_lines(&rx.path("unified.log"), 3, Duration::from_secs(10));
    assert_exactly(&lines, "ok", 3);
    assert!(rx.stop().success());
}

/// A file sink whose output path is a directory: retrying cannot help, so
/// the records are Rejected; with `dead_letter` they are kept there (and
/// acknowledged), without it they are not acknowledged. Both are counted.
#[test]
fn a_file_sink_path_that_is_a_directory_rejects_into_the_dead_letter_file() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.kept]
type = "file"
match = "**"
path = "{dir}/out/${tag}"
dead_letter = "{dir}/kept.msgpack"

[sinks.plain]
type = "file"
match = "**"
path = "{dir}/plain/${tag}"
"#,
    );
    std::fs::create_dir_all(lf.dir.path().join("out/taken")).unwrap();
    std::fs::create_dir_all(lf.dir.path().join("plain/taken")).unwrap();
    let addr = lf.forward_addr("in");
    let mut c = send(addr, &frame("taken", "r", 0..10, Some(b"x")));
    // set aside by both sinks (kept in one's dead-letter file, dropped and
    // logged by the other): sending them again cannot help, so the chunk
    // is acknowledged
    assert_eq!(
        read_ack(&mut c, Duration::from_secs(10)).as_deref(),
        Some("x"),
        "{}",
        lf.log_text()
    );
    let dl = lf.dir.path().join("kept.msgpack");
    wait_until("the dead-letter file", Duration::from_secs(10), || {
        dead_letter_records(&dl) == 10
    });
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_sink_dead_letter_records_total{component=\"kept\"}"),
        10
    );
    assert_eq!(
        lf.final_counter("logferry_sink_dropped_records_total{component=\"plain\"}"),
        10
    );
    assert_eq!(
        lf.final_counter(
            "logferry_sink_rejections_total{component=\"plain\",kind=\"is_a_directory\"}"
        ),
        10
    );
    let log = lf.log_text();
    assert!(
        log.contains("records the destination can never take; dropped") && log.contains("r-0"),
        "the log names the dropped records by their first bytes:\n{log}"
    );
}

/// A sink that can never write a tailed file's records does not make the
/// tail read them again and again: the other sink gets each line once.
#[test]
fn records_a_sink_can_never_write_do_not_loop_their_source() {
    let mut lf = Logferry::start(
        r#"
[sources.app]
type = "tail"
paths = ["{dir}/app.log"]
read_from_head = true
tag = "app"

[sinks.bad]
type = "file"
match = "**"
path = "{dir}/${tag}/x.log"

[sinks.healthy]
type = "file"
match = "**"
path = "{dir}/healthy.log"
"#,
    );
    // a regular file where the bad sink needs its directory
    std::fs::write(lf.path("app"), "").unwrap();
    let mut f = std::fs::File::create(lf.path("app.log")).unwrap();
    for i in 0..1000 {
        f.write_all(format!("t-{i}\n").as_bytes()).unwrap();
    }
    drop(f);
    wait_until(
        "every line in the healthy sink",
        Duration::from_secs(20),
        || numbers(&read_lines(&lf.path("healthy.log")), "t").len() >= 1000,
    );
    // a loop would add copies every few hundred milliseconds
    std::thread::sleep(Duration::from_secs(2));
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_exactly(&read_lines(&lf.path("healthy.log")), "t", 1000);
    assert_eq!(
        lf.final_counter("logferry_sink_dropped_records_total{component=\"bad\"}"),
        1000
    );
}

/// An HTTP request whose records a sink can never write is answered 4xx,
/// saying why, not 503 (a resend would only duplicate what other sinks kept).
#[test]
fn http_records_a_sink_can_never_write_are_answered_422_not_503() {
    let mut lf = Logferry::start(
        r#"
[sources.web]
type = "http"
address = "127.0.0.1:0"

[sinks.named]
type = "file"
match = "**"
path = "{dir}/t/${tag}.log"

[sinks.healthy]
type = "file"
match = "**"
path = "{dir}/healthy.log"
"#,
    );
    let addr = lf.http_addr("web");
    let long_tag = "x".repeat(300);
    let answer = http_post(addr, &format!("/{long_tag}"), "h-0\n");
    assert!(answer.starts_with("HTTP/1.1 422"), "{answer}");
    assert!(answer.contains("name_too_long"), "{answer}");
    assert!(
        answer.contains("h-0"),
        "the answer names the record: {answer}"
    );
    let answer = http_post(addr, "/short", "h-1\n");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_exactly(&read_lines(&lf.path("healthy.log")), "h", 2);
}

/// One plain-text POST; the whole answer.
fn http_post(addr: std::net::SocketAddr, path: &str, body: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A disk-buffered sink without a `dead_letter` file rejects into one in
/// its buffer directory: the batch leaves the buffer (it is not delivered
/// again and again), and the records can still be replayed.
#[test]
fn a_disk_buffered_sink_without_dead_letter_rejects_into_its_buffer_dir() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.plain]
type = "file"
match = "**"
path = "{dir}/plain/${tag}"
buffer = { type = "disk", dir = "{dir}/buf" }
"#,
    );
    std::fs::create_dir_all(lf.dir.path().join("plain/taken")).unwrap();
    let addr = lf.forward_addr("in");
    let mut c = send(addr, &frame("taken", "r", 0..10, Some(b"x")));
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 64];
    // written to the disk buffer: acknowledged
    assert!(matches!(c.read(&mut buf), Ok(n) if n > 0));
    let dl = lf.dir.path().join("buf/dead-letter.msgpack");
    wait_until(
        "the buffer's dead-letter file",
        Duration::from_secs(10),
        || dead_letter_records(&dl) == 10,
    );
    // nothing is delivered again once it is in the dead-letter file
    std::thread::sleep(Duration::from_millis(1500));
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_sink_dead_letter_records_total{component=\"plain\"}"),
        10
    );
    assert_eq!(
        lf.final_counter("logferry_buffer_disk_retried_records_total{component=\"plain\"}"),
        0
    );
    assert_eq!(dead_letter_records(&dl), 10);
}

/// Replay over TLS to a receiver that requires a shared key: the same
/// client as the forward sink, so both work as configured there.
#[test]
fn replay_speaks_tls_and_the_shared_key_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let file = dir.path().join("dead.msgpack");
    let mut data = frame("a", "tls", 0..20, None);
    data.extend(frame("b", "tls", 20..30, None));
    std::fs::write(&file, data).unwrap();
    let mut rx = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nshared_key = \"k\"\n\
         tls = {{ cert_file = {:?}, key_file = {:?} }}\n\n\
         [sinks.unified]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/unified.log\"\n",
        pki.server_cert.display().to_string(),
        pki.server_key.display().to_string()
    ));
    let addr = rx.forward_addr("in");
    let run = |key: &str| {
        Command::new(BIN)
            .arg("replay")
            .arg(&file)
            .args(["--to", &addr.to_string(), "--timeout", "3s", "--tls-ca"])
            .arg(&pki.ca)
            .args(["--shared-key", key])
            .output()
            .unwrap()
    };
    let wrong = run("wrong");
    assert!(
        !wrong.status.success(),
        "a refused handshake acknowledges nothing"
    );
    assert!(
        String::from_utf8_lossy(&wrong.stdout).contains("0 acknowledged, 30 not acknowledged"),
        "{}",
        String::from_utf8_lossy(&wrong.stdout)
    );
    let right = run("k");
    let stdout = String::from_utf8_lossy(&right.stdout);
    assert!(right.status.success(), "{stdout}");
    assert!(
        stdout.contains("30 acknowledged, 0 not acknowledged"),
        "{stdout}"
    );
    let lines = wait_for_lines(&rx.path("unified.log"), 30, Duration::from_secs(10));
    assert_exactly(&lines, "tls", 30);
    assert!(rx.stop().success());
}
