//! Bad peers are disconnected (or their frame skipped) with a logged and
//! counted reason, while a well-behaved client on another connection
//! delivers every record.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};
use logferry::protocol::msgpack::write;

const CONFIG: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"
max_frame_bytes = "1MiB"
idle_timeout = "1s"

[sinks.unified]
type = "file"
match = "**"
path = "{dir}/unified.log"

[api]
address = "127.0.0.1:0"
"#;

const GOOD_RECORDS: usize = 20_000;

const WAIT: Duration = Duration::from_secs(30);

/// Sends GOOD_RECORDS in acked PackedForward chunks of 500.
fn good_client(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    for k in 0..GOOD_RECORDS / 500 {
        let mut e = Vec::new();
        for i in k * 500..(k + 1) * 500 {
            write_message_entry(&mut e, 1_700_000_000, 0, format!("good-{i}").as_bytes());
        }
        let mut frame = Vec::new();
        let id = format!("chunk{k}");
        write_packed_forward(&mut frame, "good", &e, 500, Some(id.as_bytes()));
        s.write_all(&frame).unwrap();
        // {"ack": "chunkN"}: fixmap(1) + fixstr "ack" + fixstr id
        let mut ack = vec![0u8; 1 + 4 + 1 + id.len()];
        s.read_exact(&mut ack).expect("ack for every chunk");
        assert!(ack.ends_with(id.as_bytes()), "ack {ack:?} for {id}");
    }
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

fn metric(text: &str, name_and_labels: &str) -> u64 {
    metric_value(text, name_and_labels) as u64
}

#[test]
fn bad_connections_do_not_hurt_good_ones() {
    let mut lf = Logferry::start(CONFIG);
    let addr = lf.forward_addr("in");
    let api = lf.address("api listening");
    let good = std::thread::spawn(move || good_client(addr));

    let mut bad = Vec::new();
    // 1. garbage that is not msgpack at all (0xc1 is never valid)
    bad.push(send(addr, &[0xc1, 0x00, 0xff, 0x13]));
    // 2. random bytes, several connections
    for seed in 1..=20 {
        bad.push(send(addr, &noise(seed, 4096)));
    }
    // 3. a frame announcing 100 MB (limit is 1 MiB): rejected before the bytes come
    let mut huge = Vec::new();
    write::array_len(&mut huge, 2);
    write::str(&mut huge, b"t");
    huge.extend_from_slice(&[0xc6, 0x05, 0xf5, 0xe1, 0x00]); // bin32 of 100_000_000
    huge.extend_from_slice(&[0u8; 1024]);
    bad.push(send(addr, &huge));
    // 4. a truncated frame, then the peer closes
    let mut e = Vec::new();
    write_message_entry(&mut e, 1, 0, b"never");
    let mut frame = Vec::new();
    write_packed_forward(&mut frame, "trunc", &e, 1, None);
    drop(send(addr, &frame[..frame.len() - 3]));
    // 5. a well-formed msgpack value that is not a forward frame, then a valid
    //    frame on the same connection: the connection continues
    let mut both = Vec::new();
    write::array_len(&mut both, 2);
    write::uint(&mut both, 7);
    write::uint(&mut both, 8);
    let mut e = Vec::new();
    write_message_entry(&mut e, 1, 0, b"after-bad-frame-0");
    write_packed_forward(&mut both, "same.conn", &e, 1, None);
    drop(send(addr, &both));
    // 6. an idle connection, closed after idle_timeout (1s)
    let idle = TcpStream::connect(addr).unwrap();

    good.join().expect("the good client got every ack");
    let out = lf.path("unified.log");
    let lines = wait_for_lines(&out, GOOD_RECORDS + 1, Duration::from_secs(30));
    assert_exactly(&lines, "good", GOOD_RECORDS);
    assert!(lines.iter().any(|l| l == "after-bad-frame-0"));
    assert!(!lines.iter().any(|l| l == "never"));

    // the idle connection has been closed by the server
    idle.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(
        (&idle).read(&mut [0u8; 1]).unwrap(),
        0,
        "idle connection closed"
    );

    // still serving: a new client is accepted and delivered
    let mut e = Vec::new();
    write_message_entry(&mut e, 1, 0, b"late-0");
    let mut frame = Vec::new();
    write_packed_forward(&mut frame, "late", &e, 1, None);
    drop(send(addr, &frame));
    wait_for_lines(&out, GOOD_RECORDS + 2, Duration::from_secs(10));

    let m = http_get(api, "/metrics");
    let c = |kind: &str| {
        metric(
            &m,
            &format!("logferry_forward_frame_errors_total{{component=\"in\",kind=\"{kind}\"}}"),
        )
    };
    assert!(c("malformed") >= 1, "{m}");
    assert!(c("too_large") >= 1, "{m}");
    assert!(c("invalid_frame") >= 1, "{m}");
    let conn = |kind: &str| {
        metric(
            &m,
            &format!(
                "logferry_forward_connection_errors_total{{component=\"in\",kind=\"{kind}\"}}"
            ),
        )
    };
    assert!(conn("truncated") >= 1, "{m}");
    assert!(conn("idle_timeout") >= 1, "{m}");
    let log = lf.log_text();
    assert!(log.contains("exceeds max_frame_bytes"), "{log}");
    assert!(
        log.contains("peer closed the connection inside a frame"),
        "{log}"
    );
    assert!(http_get(api, "/health").ends_with("ok\n"));
    drop(bad);
    assert!(lf.stop().success());
}

#[test]
fn connections_over_the_limit_are_closed_and_counted() {
    let mut lf = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_connections = 2\n\n[sinks.unified]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/unified.log\"\n",
    );
    let addr = lf.forward_addr("in");
    let a = TcpStream::connect(addr).unwrap();
    let b = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut third = TcpStream::connect(addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(
        third.read(&mut [0u8; 1]).unwrap_or(0),
        0,
        "the third connection is closed at once"
    );
    // the warning is logged around the close: wait for it, not race it
    lf.wait_for_log("max_connections reached", Duration::from_secs(10));
    // the first two still work
    let mut e = Vec::new();
    write_message_entry(&mut e, 1, 0, b"ok-0");
    let mut frame = Vec::new();
    write_packed_forward(&mut frame, "t", &e, 1, None);
    (&a).write_all(&frame).unwrap();
    wait_for_lines(&lf.path("unified.log"), 1, Duration::from_secs(10));
    drop((a, b));
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_forward_connections_rejected_total{component=\"in\"}"),
        1
    );
}

#[test]
fn api_routes_ignore_the_query_string() {
    let mut lf = Logferry::start(CONFIG);
    let api = lf.address("api listening");
    let health = http_get(api, "/health?x=1");
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"),
        "{health}"
    );
    let metrics = http_get(api, "/metrics?name[]=logferry_source_records_total");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(
        metrics.contains("# TYPE logferry_source_records counter"),
        "{metrics}"
    );
    assert!(http_get(api, "/nothing?health").starts_with("HTTP/1.1 404"));
    assert!(lf.stop().success());
}

/// `[tag, bin(gz), {"compressed": "gzip", "chunk": id}]`.
fn compressed_chunk(tag: &str, gz: &[u8], id: &str) -> Vec<u8> {
    let mut f = Vec::new();
    write::array_len(&mut f, 3);
    write::str(&mut f, tag.as_bytes());
    write::bin_header(&mut f, gz.len());
    f.extend_from_slice(gz);
    write::map_len(&mut f, 2);
    write::str(&mut f, b"compressed");
    write::str(&mut f, b"gzip");
    write::str(&mut f, b"chunk");
    write::str(&mut f, id.as_bytes());
    f
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_gzip_bomb_in_a_compressed_chunk_is_dropped_and_the_connection_goes_on() {
    let mut lf = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nmax_frame_bytes = \"4MiB\"\nmax_decompressed_bytes = \"8MiB\"\n\n[sinks.unified]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/unified.log\"\n",
    );
    let addr = lf.forward_addr("in");
    let mut s = TcpStream::connect(addr).unwrap();
    let good = |k: usize| {
        let mut e = Vec::new();
        for i in k * 100..(k + 1) * 100 {
            write_message_entry(&mut e, 1_700_000_000, 0, format!("good-{i}").as_bytes());
        }
        compressed_chunk("good", &gzip(&e), &format!("good{k}"))
    };
    s.write_all(&good(0)).unwrap();
    assert_eq!(read_ack(&mut s, WAIT).as_deref(), Some("good0"));
    let before = vm_bytes(lf.pid(), "VmHWM");
    // 1 GiB of zeros: 256 gzip members of 4 MiB each, about a megabyte
    let bomb = gzip(&vec![0u8; 4 << 20]).repeat(256);
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    s.write_all(&compressed_chunk("bomb", &bomb, "bomb"))
        .unwrap();
    // no ack for the bomb; the next chunk on the same connection is acked
    s.write_all(&good(1)).unwrap();
    assert_eq!(read_ack(&mut s, WAIT).as_deref(), Some("good1"));
    // and another connection is served meanwhile
    let mut other = TcpStream::connect(addr).unwrap();
    other.write_all(&good(2)).unwrap();
    assert_eq!(read_ack(&mut other, WAIT).as_deref(), Some("good2"));
    let after = vm_bytes(lf.pid(), "VmHWM");
    assert!(
        after < before + (64 << 20),
        "peak RSS grew from {} MiB to {} MiB",
        before >> 20,
        after >> 20
    );
    drop((s, other));
    assert!(lf.stop().success());
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "good", 300);
    assert_eq!(lines.len(), 300);
    assert_eq!(
        lf.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"decompressed_too_large\"}"
        ),
        1
    );
    assert!(
        lf.log_text()
            .contains("gzip payload inflates past max_decompressed_bytes (8388608)"),
        "{}",
        lf.log_text()
    );
}
