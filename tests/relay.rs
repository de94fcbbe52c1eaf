//! agent (generator → forward) → relay (forward → forward) → receiver
//! (forward → file): N records in, exactly N out, with every combination of
//! acks, gzip, shared key and TLS on every hop.

mod common;

use std::time::Duration;

use common::*;

const N: usize = 200_000;

/// Options applied to every hop.
#[derive(Clone, Copy, Debug)]
struct Hop {
    ack: bool,
    gzip: bool,
    shared_key: bool,
    tls: bool,
}

fn source_extra(h: Hop, pki: &Pki) -> String {
    let mut s = String::new();
    if h.shared_key {
        s.push_str("shared_key = \"s3cret\"\n");
    }
    if h.tls {
        s.push_str(&format!(
            "tls = {{ cert_file = {:?}, key_file = {:?} }}\n",
            pki.server_cert.display().to_string(),
            pki.server_key.display().to_string()
        ));
    }
    s
}

fn sink_extra(h: Hop, pki: &Pki) -> String {
    let mut s = format!("require_ack = {}\n", h.ack);
    if h.gzip {
        s.push_str("compress = \"gzip\"\n");
    }
    if h.shared_key {
        s.push_str("shared_key = \"s3cret\"\n");
    }
    if h.tls {
        s.push_str(&format!(
            "tls = {{ ca_file = {:?} }}\n",
            pki.ca.display().to_string()
        ));
    }
    s
}

fn receiver(h: Hop, pki: &Pki) -> Logferry {
    Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n",
        source_extra(h, pki)
    ))
}

fn relay(h: Hop, pki: &Pki, to: std::net::SocketAddr) -> Logferry {
    Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{}\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\n{}",
        source_extra(h, pki),
        sink_extra(h, pki)
    ))
}

fn agent(h: Hop, pki: &Pki, to: std::net::SocketAddr, n: usize) -> Logferry {
    Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\ncount = {n}\nsize = 30\ntag = \"app.agent\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\n{}",
        sink_extra(h, pki)
    ))
}

fn chain(h: Hop, n: usize) {
    eprintln!("chain {h:?}, {n} records");
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut rx = receiver(h, &pki);
    let rx_addr = rx.forward_addr("in");
    let mut relay = relay(h, &pki, rx_addr);
    let relay_addr = relay.forward_addr("in");
    let mut agent = agent(h, &pki, relay_addr, n);
    // the agent exits by itself once every record is delivered
    assert!(
        agent.wait(Duration::from_secs(120)).success(),
        "{h:?}\n{}",
        agent.log_text()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while read_lines(&rx.path("received.log")).len() < n {
        if std::time::Instant::now() > deadline {
            panic!(
                "{h:?}: the receiver holds {} of {n} lines\n--- agent\n{}\n--- relay\n{}\n--- receiver\n{}",
                read_lines(&rx.path("received.log")).len(),
                agent.log_text(),
                relay.log_text(),
                rx.log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(relay.stop().success());
    assert!(rx.stop().success());
    // everything is written by now: read the final file
    let lines = read_lines(&rx.path("received.log"));
    let counts = distinct(lines.iter().cloned());
    assert_eq!(counts.len(), n, "{h:?}: distinct records");
    assert_eq!(lines.len(), n, "{h:?}: no duplicates on a healthy chain");
    for i in (0..n).step_by(997) {
        assert!(
            counts.contains_key(&format!("{i:020}xxxxxxxxxx")),
            "{h:?}: record {i}"
        );
    }
    if h.ack {
        assert!(rx.final_counter("logferry_forward_acks_sent_total{component=\"in\"}") > 0);
        assert!(relay.final_counter("logferry_forward_acks_sent_total{component=\"in\"}") > 0);
    }
}

#[test]
fn plain() {
    chain(
        Hop {
            ack: false,
            gzip: false,
            shared_key: false,
            tls: false,
        },
        N,
    );
}

#[test]
fn everything_on_every_hop() {
    chain(
        Hop {
            ack: true,
            gzip: true,
            shared_key: true,
            tls: true,
        },
        N,
    );
}

/// Every combination of the four options, with fewer records each.
#[test]
fn every_option_combination() {
    for bits in 0..16u8 {
        let h = Hop {
            ack: bits & 1 != 0,
            gzip: bits & 2 != 0,
            shared_key: bits & 4 != 0,
            tls: bits & 8 != 0,
        };
        chain(h, 20_000);
    }
}

/// A frame larger than the next hop accepts is relayed in pieces that fit.
#[test]
fn frames_larger_than_the_receivers_limit_are_split() {
    let mut rx = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_frame_bytes = \"1MiB\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let rx_addr = rx.forward_addr("in");
    let mut relay = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{rx_addr}\" }}]\nrequire_ack = true\nbatch_bytes = \"256KiB\"\n"
    ));
    let relay_addr = relay.forward_addr("in");
    // one 4 MB frame of 1000 records, acked by the relay only when all is in
    let mut entries = Vec::new();
    for i in 0..1000 {
        let msg = format!("big-{i}-{}", "y".repeat(4000));
        logferry::protocol::forward::write_message_entry(&mut entries, 1, 0, msg.as_bytes());
    }
    let mut frame = Vec::new();
    logferry::protocol::forward::write_packed_forward(
        &mut frame,
        "big",
        &entries,
        1000,
        Some(b"c-big"),
    );
    let mut s = std::net::TcpStream::connect(relay_addr).unwrap();
    std::io::Write::write_all(&mut s, &frame).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut ack = [0u8; 32];
    let n = std::io::Read::read(&mut s, &mut ack).unwrap();
    assert!(
        ack[..n].ends_with(b"c-big"),
        "the relay acks once every piece is acked"
    );
    let lines = read_lines(&rx.path("received.log"));
    let got: Vec<String> = lines
        .iter()
        .map(|l| l.split('-').take(2).collect::<Vec<_>>().join("-"))
        .collect();
    assert_exactly(&got, "big", 1000);
    assert!(relay.stop().success());
    assert!(rx.stop().success());
    assert_eq!(
        rx.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"too_large\"}"
        ),
        0
    );
}

/// A PackedForward frame of `n` records `{prefix}-{i}` asking for an ack.
fn frame(tag: &str, prefix: &str, n: usize, chunk: &[u8]) -> Vec<u8> {
    let mut entries = Vec::new();
    for i in 0..n {
        logferry::protocol::forward::write_message_entry(
            &mut entries,
            1,
            0,
            format!("{prefix}-{i}").as_bytes(),
        );
    }
    let mut f = Vec::new();
    logferry::protocol::forward::write_packed_forward(&mut f, tag, &entries, n, Some(chunk));
    f
}

/// Reads one `{"ack": id}` and returns the id's bytes as text.
fn read_ack(s: &mut std::net::TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 256];
    let n = std::io::Read::read(s, &mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A chunk the next hop refuses (its frame is over the receiver's
/// `max_frame_bytes` once the relay re-frames it, and one entry cannot be
/// split) is sent `max_attempts` times, then given up, counted and logged;
/// the relay keeps delivering everything else, with backoff in between,
/// and stops promptly.
#[test]
fn a_chunk_the_next_hop_refuses_is_given_up_after_max_attempts() {
    let mut rx = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_frame_bytes = \"64KiB\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let rx_addr = rx.forward_addr("in");
    let mut relay = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{rx_addr}\" }}]\nrequire_ack = true\nmax_attempts = 3\nreconnect_min = \"50ms\"\nreconnect_max = \"400ms\"\n"
    ));
    let relay_addr = relay.forward_addr("in");
    let mut client = std::net::TcpStream::connect(relay_addr).unwrap();
    use std::io::Write;
    client
        .write_all(&frame("ok", "before", 100, b"c-before"))
        .unwrap();
    assert!(read_ack(&mut client).contains("c-before"));
    // one entry: a frame just under 64 KiB as the client sends it (with a
    // one-byte chunk id), just over it as the relay re-frames it (with its
    // longer chunk id)
    let mut entries = Vec::new();
    logferry::protocol::forward::write_message_entry(
        &mut entries,
        1,
        0,
        "p".repeat(64 * 1024 - 52).as_bytes(),
    );
    let mut poison = Vec::new();
    logferry::protocol::forward::write_packed_forward(&mut poison, "p", &entries, 1, Some(b"x"));
    assert!(poison.len() < 64 * 1024, "{}", poison.len());
    let mut poisoner = std::net::TcpStream::connect(relay_addr).unwrap();
    poisoner.write_all(&poison).unwrap();
    // while it is being refused, other records still go through
    for round in 0..5 {
        let id = format!("c-during-{round}");
        client
            .write_all(&frame("ok", &format!("during{round}"), 100, id.as_bytes()))
            .unwrap();
        assert!(read_ack(&mut client).contains(&id));
    }
    relay.wait_for_log("chunk given up", Duration::from_secs(30));
    client
        .write_all(&frame("ok", "after", 100, b"c-after"))
        .unwrap();
    assert!(read_ack(&mut client).contains("c-after"));
    // the refused chunk is not acknowledged to its client
    poisoner
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 64];
    let got = std::io::Read::read(&mut poisoner, &mut buf);
    assert!(
        !matches!(got, Ok(n) if n > 0),
        "no ack for the refused chunk"
    );
    drop(client);
    drop(poisoner);
    let started = std::time::Instant::now();
    assert!(relay.stop().success(), "{}", relay.log_text());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stop took {:?}",
        started.elapsed()
    );
    assert!(rx.stop().success());
    assert_eq!(
        relay.final_counter("logferry_forward_sink_chunks_given_up_total{component=\"out\"}"),
        1
    );
    assert_eq!(
        rx.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"too_large\"}"
        ),
        3,
        "sent exactly max_attempts times"
    );
    let lines = read_lines(&rx.path("received.log"));
    assert_eq!(lines.len(), 700, "every other record arrived");
    assert!(lines.iter().all(|l| !l.starts_with('p')));
}

/// A forward server in the test: records how many entries each frame it
/// receives holds, and acks every frame that asks.
fn frame_counting_server() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let frames = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let frames = frames.clone();
            std::thread::spawn(move || {
                use logferry::protocol::forward::{ack_response, next_frame, Limits, Scan};
                use std::io::{Read, Write};
                let mut buf = bytes::BytesMut::new();
                let mut scan = Scan::default();
                let mut chunk = vec![0u8; 64 * 1024];
                loop {
                    while let Ok(Some(f)) = next_frame(&mut buf, &Limits::default(), &mut scan) {
                        frames.lock().unwrap().push(f.count);
                        if let Some(id) = f.options.chunk {
                            if conn.write_all(&ack_response(&id)).is_err() {
                                return;
                            }
                        }
                    }
                    match conn.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// `batch_records` bounds every chunk, also when one received frame holds
/// many more records: it is split at entry boundaries, and acknowledged
/// once every piece is.
#[test]
fn a_relay_splits_frames_over_batch_records() {
    let (rx_addr, frames) = frame_counting_server();
    let mut relay = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{rx_addr}\" }}]\nrequire_ack = true\nbatch_records = 100\n"
    ));
    let relay_addr = relay.forward_addr("in");
    let mut client = std::net::TcpStream::connect(relay_addr).unwrap();
    std::io::Write::write_all(&mut client, &frame("big", "r", 5000, b"c-5000")).unwrap();
    assert!(
        read_ack(&mut client).contains("c-5000"),
        "acked once every piece is"
    );
    let frames = frames.lock().unwrap().clone();
    assert_eq!(frames.iter().sum::<usize>(), 5000, "{frames:?}");
    assert!(
        frames.iter().all(|&n| n <= 100),
        "chunks of at most batch_records: {frames:?}"
    );
    drop(client);
    assert!(relay.stop().success());
}

/// An agent following a file written one line per `write()` at 1,000
/// lines/s, and a TCP client writing the same way, each forwarding to a
/// receiver: the lines travel in far fewer chunks than lines (the readers
/// let lines gather for their `linger`), and every one arrives once. An
/// HTTP request meanwhile is answered without waiting for any linger.
#[test]
fn lines_written_one_at_a_time_travel_in_few_chunks() {
    let mut receiver = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let to = receiver.forward_addr("in");
    let mut agent = Logferry::start(&format!(
        "[sources.app]\ntype = \"tail\"\npaths = [\"{{dir}}/app.log\"]\ntag = \"app\"\nread_from_head = true\n\n\
         [sources.lines]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n\n\
         [sources.web]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\nrequire_ack = true\n\n\
         [api]\naddress = \"127.0.0.1:0\"\n"
    ));
    let api = agent.address("api listening");
    let tcp = agent.address("tcp source listening source=lines ");
    let web = agent.http_addr("web");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(agent.path("app.log"))
        .unwrap();
    let mut conn = std::net::TcpStream::connect(tcp).unwrap();
    use std::io::Write;
    const LINES: usize = 3000;
    let started = std::time::Instant::now();
    for i in 0..LINES {
        file.write_all(format!("t-{i}\n").as_bytes()).unwrap();
        conn.write_all(format!("n-{i}\n").as_bytes()).unwrap();
        let due = started + Duration::from_micros(i as u64 * 1000);
        std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
    }
    drop(conn);
    // a client that waits is not held back by the readers' linger (set
    // far longer here would not matter: HTTP has none)
    let answer = http_post_line(web, "h-0");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let out = receiver.path("received.log");
    wait_until(
        "every line at the receiver",
        Duration::from_secs(30),
        || read_lines(&out).len() > 2 * LINES,
    );
    let chunks = metric_value(
        &api_get(api, "/metrics"),
        "logferry_forward_sink_chunks_total{component=\"out\"}",
    );
    eprintln!("{chunks} chunks for {} lines", 2 * LINES + 1);
    assert!(agent.stop().success(), "{}", agent.log_text());
    assert!(receiver.stop().success(), "{}", receiver.log_text());
    let lines = read_lines(&out);
    assert_exactly(&lines, "t", LINES);
    assert_exactly(&lines, "n", LINES);
    assert_exactly(&lines, "h", 1);
    // one chunk per line before the readers let lines gather: 6,001
    assert!(
        chunks < (2 * LINES / 10) as f64,
        "{chunks} chunks for {} lines",
        2 * LINES
    );
}

/// One plain-text POST of `line`; the whole answer.
fn http_post_line(addr: std::net::SocketAddr, line: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /web HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{line}\n",
        line.len() + 1
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A stop that finds the sink's chunks all waiting for a server that is
/// not there yet, with more batches still queued behind them: once the
/// server comes (within `drain_timeout`), every queued batch goes too.
#[test]
fn a_stop_with_a_full_sink_and_a_late_server_delivers_everything_queued() {
    const RECORDS: usize = 200_000;
    let port = free_port();
    // 200 batches of 1,000: far more chunks than the sink lets wait
    let mut agent = Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\ncount = {RECORDS}\nsize = 30\ntag = \"app.agent\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"127.0.0.1:{port}\" }}]\nrequire_ack = true\nreconnect_min = \"50ms\"\nreconnect_max = \"200ms\"\ndrain_timeout = \"60s\"\n"
    ));
    // the generator is done and the queue closed while nothing can be sent
    agent.wait_for_log("every source has finished", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let mut rx = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/received.log\"\n"
    ));
    assert!(
        agent.wait(Duration::from_secs(60)).success(),
        "{}",
        agent.log_text()
    );
    assert!(rx.stop().success());
    let lines = read_lines(&rx.path("received.log"));
    let counts = distinct(lines.iter().cloned());
    assert_eq!(counts.len(), RECORDS, "distinct records");
    assert_eq!(
        agent.final_counter("logferry_generator_undelivered_records_total{component=\"gen\"}"),
        0
    );
}

/// The same stop with no server at all: past `drain_timeout` every record,
/// in chunks or still queued, is counted as rejected, and the generator
/// knows none was delivered.
#[test]
fn a_stop_past_drain_timeout_counts_what_is_still_queued_as_rejected() {
    const RECORDS: usize = 200_000;
    let port = free_port();
    let mut agent = Logferry::start(&format!(
        "[sources.gen]\ntype = \"generator\"\ncount = {RECORDS}\nsize = 30\ntag = \"app.agent\"\n\n[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"127.0.0.1:{port}\" }}]\nrequire_ack = true\nreconnect_min = \"50ms\"\nreconnect_max = \"200ms\"\ndrain_timeout = \"1s\"\n"
    ));
    assert!(!agent.wait(Duration::from_secs(60)).success());
    let log = agent.log_text();
    assert!(log.contains("drain_timeout passed"), "{log}");
    for counter in [
        "logferry_sink_rejected_records_total{component=\"out\"}",
        "logferry_generator_undelivered_records_total{component=\"gen\"}",
    ] {
        assert_eq!(
            agent.final_counter(counter),
            RECORDS as u64,
            "{counter}\n{log}"
        );
    }
}

/// gzip chunks of a single short record (stored inside the gzip member)
/// and of 500 records (deflated) sent by logferry's forward sink to a
/// peer's forward input: every record arrives once.
fn gzip_chunks_to_peer(port: u16, out: &std::path::Path) {
    const SMALL: u64 = 100;
    const LARGE: u64 = 5_000;
    wait_until("the peer listening", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let config = format!(
        r#"
[sources.small]
type = "generator"
tag = "gz.small"
count = {SMALL}
rate = 100
size = 20
batch_records = 1

[sources.large]
type = "generator"
tag = "gz.large"
count = {LARGE}
size = 100
batch_records = 500

[sinks.out]
type = "forward"
match = "**"
servers = [{{ address = "127.0.0.1:{port}" }}]
compress = "gzip"
require_ack = true
"#
    );
    let mut lf = Logferry::start(&config);
    let status = lf.wait(Duration::from_secs(60));
    assert!(status.success(), "{}", lf.log_text());
    // the small records' messages are 20 digits, the large ones' padded
    // to 100 bytes with `x` (the peers' lines need not name the tag)
    let seen = |size: usize| {
        let mut c = std::collections::BTreeMap::new();
        for l in read_lines(out) {
            let Some(at) = l.find('{') else { continue };
            let v: serde_json::Value = serde_json::from_str(&l[at..]).unwrap_or_default();
            let Some(m) = v["message"].as_str().filter(|m| m.len() == size) else {
                continue;
            };
            let n: u64 = m.trim_end_matches('x').parse().unwrap();
            *c.entry(n).or_insert(0usize) += 1;
        }
        c
    };
    wait_until("every record at the peer", Duration::from_secs(60), || {
        seen(20).len() as u64 >= SMALL && seen(100).len() as u64 >= LARGE
    });
    std::thread::sleep(Duration::from_millis(500));
    for (size, n) in [(20, SMALL), (100, LARGE)] {
        let c = seen(size);
        assert_eq!(
            c.len() as u64,
            n,
            "records of {size} B: {} distinct",
            c.len()
        );
        assert!(
            c.keys().all(|&k| k < n) && c.values().all(|&k| k == 1),
            "records of {size} B: {c:?}"
        );
    }
}

#[test]
fn fluent_bit_takes_stored_and_deflated_gzip_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("out.log");
    let input = format!("Name forward\nListen 127.0.0.1\nPort {port}");
    let Some(_peer) = peers::fluent_bit(dir.path(), &input, &out) else {
        return;
    };
    gzip_chunks_to_peer(port, &out);
}

#[test]
fn fluentd_takes_stored_and_deflated_gzip_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let out = dir.path().join("out.log");
    let source = format!("@type forward\nbind 127.0.0.1\nport {port}");
    let Some(_peer) = peers::fluentd(dir.path(), &source, &out) else {
        return;
    };
    gzip_chunks_to_peer(port, &out);
}
