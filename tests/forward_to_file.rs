//! The built binary receives every forward-protocol mode and writes every
//! record, once, to a unified file.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use flate2::{write::GzEncoder, Compression};
use logferry::protocol::forward::{write_message_entry, write_packed_forward};
use logferry::protocol::msgpack::{write, Reader, Value};

const CONFIG: &str = FORWARD_TO_FILE;

/// `n` entries `[time, {"message": "<prefix>-<i>"}]` for i in `range`.
fn entries(prefix: &str, range: std::ops::Range<usize>) -> Vec<u8> {
    let mut out = Vec::new();
    for i in range {
        write_message_entry(
            &mut out,
            1_700_000_000,
            i as u32,
            format!("{prefix}-{i}").as_bytes(),
        );
    }
    out
}

fn message_frame(tag: &str, prefix: &str, i: usize, chunk: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    write::array_len(&mut out, if chunk.is_some() { 4 } else { 3 });
    write::str(&mut out, tag.as_bytes());
    write::uint(&mut out, 1_700_000_000); // integer time
    write::map_len(&mut out, 1);
    write::str(&mut out, b"message");
    write::str(&mut out, format!("{prefix}-{i}").as_bytes());
    if let Some(c) = chunk {
        write::map_len(&mut out, 1);
        write::str(&mut out, b"chunk");
        write::str(&mut out, c.as_bytes());
    }
    out
}

fn forward_frame(tag: &str, prefix: &str, range: std::ops::Range<usize>) -> Vec<u8> {
    let mut out = Vec::new();
    write::array_len(&mut out, 2);
    write::str(&mut out, tag.as_bytes());
    write::array_len(&mut out, range.len());
    out.extend(entries(prefix, range));
    out
}

fn compressed_frame(
    tag: &str,
    prefix: &str,
    range: std::ops::Range<usize>,
    chunk: &str,
) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&entries(prefix, range.clone())).unwrap();
    let payload = gz.finish().unwrap();
    let mut out = Vec::new();
    write::array_len(&mut out, 3);
    write::str(&mut out, tag.as_bytes());
    write::bin_header(&mut out, payload.len());
    out.extend(payload);
    write::map_len(&mut out, 3);
    write::str(&mut out, b"size");
    write::uint(&mut out, range.len() as u64);
    write::str(&mut out, b"compressed");
    write::str(&mut out, b"gzip");
    write::str(&mut out, b"chunk");
    write::str(&mut out, chunk.as_bytes());
    out
}

/// Reads one `{"ack": id}` response.
fn read_ack(s: &mut TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 256];
    loop {
        if let Ok(end) = logferry::protocol::msgpack::skip(&buf, 0) {
            let mut r = Reader::new(&buf[..end]);
            assert_eq!(r.read(), Ok(Value::Map(1)));
            assert_eq!(r.read(), Ok(Value::Str(b"ack")));
            let Ok(Value::Str(id)) = r.read() else {
                panic!("ack id must be a string")
            };
            let id = String::from_utf8(id.to_vec()).unwrap();
            buf.drain(..end);
            assert!(buf.is_empty(), "one ack at a time in this test");
            return id;
        }
        let n = s.read(&mut byte).expect("ack within 20s");
        assert!(n > 0, "connection closed before the ack");
        buf.extend_from_slice(&byte[..n]);
    }
}

#[test]
fn every_mode_arrives_exactly_once() {
    let mut lf = Logferry::start(CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");

    // Message mode, integer time, one connection per 100 frames
    let mut bytes = Vec::new();
    for i in 0..100 {
        bytes.extend(message_frame("app.message", "message", i, None));
    }
    drop(send(addr, &bytes));

    // Forward mode, 10 frames of 100
    let mut bytes = Vec::new();
    for k in 0..10 {
        bytes.extend(forward_frame(
            "app.forward",
            "forward",
            k * 100..(k + 1) * 100,
        ));
    }
    drop(send(addr, &bytes));

    // PackedForward, 5 frames of 1000, sent in small pieces
    let mut bytes = Vec::new();
    for k in 0..5 {
        let e = entries("packed", k * 1000..(k + 1) * 1000);
        write_packed_forward(&mut bytes, "app.packed", &e, 1000, None);
    }
    let mut s = TcpStream::connect(addr).unwrap();
    for piece in bytes.chunks(777) {
        s.write_all(piece).unwrap();
    }
    drop(s);

    // CompressedPackedForward with acks
    let mut s = TcpStream::connect(addr).unwrap();
    for k in 0..4 {
        let id = format!("gz-{k}");
        s.write_all(&compressed_frame(
            "app.gzip",
            "gzip",
            k * 250..(k + 1) * 250,
            &id,
        ))
        .unwrap();
        assert_eq!(read_ack(&mut s), id);
    }

    let lines = wait_for_lines(&out, 100 + 1000 + 5000 + 1000, Duration::from_secs(30));
    assert_exactly(&lines, "message", 100);
    assert_exactly(&lines, "forward", 1000);
    assert_exactly(&lines, "packed", 5000);
    assert_exactly(&lines, "gzip", 1000);
    assert!(lf.stop().success());
    assert_eq!(read_lines(&out).len(), 7100, "nothing more after shutdown");
    assert_eq!(
        lf.final_counter("logferry_sink_records_total{component=\"unified\"}"),
        7100
    );
}

#[test]
fn acks_are_sent_only_after_the_record_is_in_the_file() {
    let mut lf = Logferry::start(CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let mut s = TcpStream::connect(addr).unwrap();
    for i in 0..50 {
        let id = format!("c{i}");
        s.write_all(&message_frame("t", "acked", i, Some(&id)))
            .unwrap();
        assert_eq!(read_ack(&mut s), id);
        // the ack promises the line is written: it must be readable now
        let lines = read_lines(&out);
        assert_eq!(
            lines.len(),
            i + 1,
            "ack {id} came before its record was written"
        );
    }
    assert_exactly(&read_lines(&out), "acked", 50);
}

#[test]
fn unified_file_is_appended_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let config = CONFIG.replace("{dir}", &dir.path().display().to_string());
    for round in 0..2 {
        let mut lf = Logferry::start(&config);
        let addr = lf.forward_addr("in");
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&message_frame("t", &format!("round{round}"), 0, Some("x")))
            .unwrap();
        read_ack(&mut s);
        assert!(lf.stop().success());
    }
    let lines = read_lines(&dir.path().join("unified.log"));
    assert_eq!(lines, vec!["round0-0", "round1-0"]);
}
