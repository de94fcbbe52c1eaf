//! Tags and times from outside, through the built binary: any character of
//! a tag routes like any other, and an entry time logferry cannot represent
//! rejects its frame (counted) instead of being written as another time.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;
use logferry::protocol::forward::write_packed_forward;
use logferry::protocol::msgpack::write;

/// Sends `frame` followed by a frame that asks for an ack, and waits for
/// the ack: every frame before it on the connection has then been handled.
fn send_and_sync(s: &mut TcpStream, frames: &[u8], sync_tag: &str) {
    let id = "sync";
    let mut sync = Vec::new();
    write::array_len(&mut sync, 4);
    write::str(&mut sync, sync_tag.as_bytes());
    write::event_time(&mut sync, 1_700_000_000, 0);
    write::map_len(&mut sync, 1);
    write::str(&mut sync, b"message");
    write::str(&mut sync, b"sync");
    write::map_len(&mut sync, 1);
    write::str(&mut sync, b"chunk");
    write::str(&mut sync, id.as_bytes());
    s.write_all(frames).unwrap();
    s.write_all(&sync).unwrap();
    // {"ack": "sync"}: fixmap(1) + fixstr "ack" + fixstr id
    let mut ack = vec![0u8; 1 + 4 + 1 + id.len()];
    s.read_exact(&mut ack).expect("ack for the sync frame");
    assert!(ack.ends_with(id.as_bytes()), "ack {ack:?}");
}

/// A Message frame `[tag, time, {"message": message}]`, the tag as raw bytes.
fn message_frame(tag: &[u8], time: &[u8], message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    write::array_len(&mut out, 3);
    write::str(&mut out, tag);
    out.extend_from_slice(time);
    write::map_len(&mut out, 1);
    write::str(&mut out, b"message");
    write::str(&mut out, message.as_bytes());
    out
}

fn event_time(secs: u32, nanos: u32) -> Vec<u8> {
    let mut out = Vec::new();
    write::event_time(&mut out, secs, nanos);
    out
}

const ROUTES: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.all]
type = "file"
match = "**"
path = "{dir}/all.log"

[sinks.app]
type = "file"
match = "app.**"
path = "{dir}/app.log"

[sinks.star]
type = "file"
match = "app.* {x,y}.**"
path = "{dir}/star.log"
"#;

#[test]
fn any_character_in_a_tag_routes_like_any_other() {
    let long = format!("app.{}", "l".repeat(60_000));
    // (tag, goes to app.**, goes to `app.* {x,y}.**`)
    let tags: Vec<(String, bool, bool)> = vec![
        ("app.\nx".into(), true, true),
        ("app.x\r".into(), true, true),
        ("app.a\0b".into(), true, true),
        ("app.\n.\r".into(), true, false),
        ("app".into(), true, false),
        ("app.".into(), true, true),
        ("app..x".into(), true, false),
        ("app.é\u{2028}".into(), true, true),
        (long.clone(), true, true),
        ("\n".into(), false, false),
        ("\r\n".into(), false, false),
        ("\0".into(), false, false),
        (".".into(), false, false),
        ("..".into(), false, false),
        ("x.\n".into(), false, true),
        ("y".into(), false, true),
        ("other\n.app".into(), false, false),
    ];
    let mut lf = Logferry::start(ROUTES);
    let addr = lf.forward_addr("in");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut frames = Vec::new();
    for (i, (tag, _, _)) in tags.iter().enumerate() {
        let t = event_time(1_700_000_000, 0);
        frames.extend(message_frame(tag.as_bytes(), &t, &format!("rec-{i}")));
    }
    // a tag that is not UTF-8 is not a tag: that frame is rejected, counted,
    // and the connection goes on
    let t = event_time(1_700_000_000, 0);
    frames.extend(message_frame(b"app.\xff", &t, "not-a-tag"));
    send_and_sync(&mut s, &frames, "app.sync");

    let n = tags.len() + 1; // + the sync record
    let all = wait_for_lines(&lf.path("all.log"), n, Duration::from_secs(20));
    let app_n = tags.iter().filter(|t| t.1).count() + 1;
    let star_n = tags.iter().filter(|t| t.2).count() + 1;
    wait_for_lines(&lf.path("app.log"), app_n, Duration::from_secs(20));
    wait_for_lines(&lf.path("star.log"), star_n, Duration::from_secs(20));
    assert!(lf.stop().success(), "{}", lf.log_text());

    assert_exactly(
        &all.iter()
            .filter(|l| *l != "sync")
            .cloned()
            .collect::<Vec<_>>(),
        "rec",
        tags.len(),
    );
    let app = read_lines(&lf.path("app.log"));
    let star = read_lines(&lf.path("star.log"));
    for (i, (tag, in_app, in_star)) in tags.iter().enumerate() {
        let rec = format!("rec-{i}");
        let shown = &format!("{tag:?}")[..tag.len().min(30)];
        assert_eq!(app.contains(&rec), *in_app, "tag {shown} in app.log");
        assert_eq!(star.contains(&rec), *in_star, "tag {shown} in star.log");
    }
    assert_eq!(app.len(), app_n);
    assert_eq!(star.len(), star_n);
    assert_eq!(
        lf.final_counter("logferry_router_unrouted_records_total"),
        0,
        "{}",
        lf.log_text()
    );
    assert_eq!(
        lf.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"invalid_frame\"}"
        ),
        1
    );
}

const TIMES: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.json]
type = "file"
match = "**"
path = "{dir}/times.json"
format = "json"

[sinks.template]
type = "file"
match = "**"
path = "{dir}/times.txt"
format = { type = "template", template = "{message} {time} f={f}" }
"#;

fn uint64(v: u64) -> Vec<u8> {
    let mut out = vec![0xcf];
    out.extend_from_slice(&v.to_be_bytes());
    out
}

fn int64(v: i64) -> Vec<u8> {
    let mut out = vec![0xd3];
    out.extend_from_slice(&v.to_be_bytes());
    out
}

fn float64(v: f64) -> Vec<u8> {
    let mut out = vec![0xcb];
    out.extend_from_slice(&v.to_bits().to_be_bytes());
    out
}

fn float32(v: f32) -> Vec<u8> {
    let mut out = vec![0xca];
    out.extend_from_slice(&v.to_bits().to_be_bytes());
    out
}

/// Fluent Bit's `[time, {metadata}]` pair.
fn pair(time: Vec<u8>) -> Vec<u8> {
    let mut out = vec![0x92];
    out.extend(time);
    out.push(0x80);
    out
}

/// The record `{"message": m, "f": 2.0}`.
fn record(out: &mut Vec<u8>, message: &str) {
    write::map_len(out, 2);
    write::str(out, b"message");
    write::str(out, message.as_bytes());
    write::str(out, b"f");
    out.extend(float64(2.0));
}

/// Frames carrying one record at `time`: a Message frame (`<message>-m`;
/// not for a Fluent Bit pair, which would read as Forward mode) and a
/// Forward frame (`<message>-f`).
fn timed_frames(time: &[u8], message: &str) -> (Vec<u8>, Vec<String>) {
    let mut out = Vec::new();
    let mut names = Vec::new();
    if time[0] != 0x92 {
        write::array_len(&mut out, 3);
        write::str(&mut out, b"t");
        out.extend_from_slice(time);
        record(&mut out, &format!("{message}-m"));
        names.push(format!("{message}-m"));
    }
    write::array_len(&mut out, 2);
    write::str(&mut out, b"t");
    write::array_len(&mut out, 1);
    write::array_len(&mut out, 2);
    out.extend_from_slice(time);
    record(&mut out, &format!("{message}-f"));
    names.push(format!("{message}-f"));
    (out, names)
}

#[test]
fn out_of_range_times_reject_their_frame_and_are_counted() {
    let good: Vec<(Vec<u8>, &str)> = vec![
        (vec![0x00], "1970-01-01T00:00:00.000000000Z"),
        (
            uint64(u64::from(u32::MAX)),
            "2106-02-07T06:28:15.000000000Z",
        ),
        (int64(1_700_000_000), "2023-11-14T22:13:20.000000000Z"),
        (float64(1.5), "1970-01-01T00:00:01.500000000Z"),
        (float64(-0.0), "1970-01-01T00:00:00.000000000Z"),
        (float32(1_700_000_000.0), "2023-11-14T22:13:20.000000000Z"),
        (
            event_time(1_700_000_000, 999_999_999),
            "2023-11-14T22:13:20.999999999Z",
        ),
        (
            pair(event_time(1_700_000_000, 5)),
            "2023-11-14T22:13:20.000000005Z",
        ),
        (event_time(u32::MAX, 0), "2106-02-07T06:28:15.000000000Z"),
    ];
    let bad: Vec<Vec<u8>> = vec![
        uint64(1_700_000_000_123), // milliseconds sent as seconds
        uint64((1 << 32) + 5),
        uint64(u64::MAX),
        vec![0xff], // -1
        int64(-1_700_000_000),
        int64(i64::MIN),
        float64(f64::NAN),
        float64(f64::INFINITY),
        float64(f64::NEG_INFINITY),
        float64(-1.0),
        float64(4_294_967_296.0),
        float64(1.7e12),
        float32(f32::NAN),
        float32(-0.5),
        event_time(1_700_000_000, 1_000_000_000),
        event_time(1_700_000_000, 2_000_000_000),
        event_time(1_700_000_000, u32::MAX),
        pair(uint64((1 << 32) + 5)),
        pair(event_time(0, 1_000_000_000)),
    ];
    let mut frames = Vec::new();
    let mut good_names = Vec::new();
    for (i, (time, want)) in good.iter().enumerate() {
        let (f, names) = timed_frames(time, &format!("good-{i}"));
        frames.extend(f);
        good_names.extend(names.into_iter().map(|n| (n, *want)));
    }
    let mut bad_frames = 0;
    for (i, time) in bad.iter().enumerate() {
        let (f, names) = timed_frames(time, &format!("bad-{i}"));
        frames.extend(f);
        bad_frames += names.len();
    }
    // one bad entry among good ones rejects a packed frame whole
    let mut entries = Vec::new();
    write::array_len(&mut entries, 2);
    entries.extend(event_time(1, 0));
    write::map_len(&mut entries, 1);
    write::str(&mut entries, b"message");
    write::str(&mut entries, b"bad-packed-0");
    write::array_len(&mut entries, 2);
    entries.extend(uint64(1 << 40));
    write::map_len(&mut entries, 1);
    write::str(&mut entries, b"message");
    write::str(&mut entries, b"bad-packed-1");
    write_packed_forward(&mut frames, "t", &entries, 2, None);

    let mut lf = Logferry::start(TIMES);
    let addr = lf.forward_addr("in");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    send_and_sync(&mut s, &frames, "t");
    let json = wait_for_lines(
        &lf.path("times.json"),
        good_names.len() + 1,
        Duration::from_secs(20),
    );
    let text = wait_for_lines(
        &lf.path("times.txt"),
        good_names.len() + 1,
        Duration::from_secs(20),
    );
    assert!(lf.stop().success(), "{}", lf.log_text());

    assert_eq!(json.len(), good_names.len() + 1, "{json:#?}");
    assert_eq!(text.len(), good_names.len() + 1, "{text:#?}");
    for (msg, want) in &good_names {
        let line = json
            .iter()
            .find(|l| l.contains(&format!("\"{msg}\"")))
            .unwrap_or_else(|| panic!("{msg} missing from {json:#?}"));
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["time"], *want, "{line}");
        assert!(
            chrono::DateTime::parse_from_rfc3339(want).is_ok(),
            "{want} is RFC 3339"
        );
        assert!(line.contains("\"f\":2.0"), "{line}");
        assert!(
            text.contains(&format!("{msg} {want} f=2.0")),
            "{msg} {want} missing from {text:#?}"
        );
    }
    assert!(!json.iter().any(|l| l.contains("bad-")), "{json:#?}");
    assert!(!text.iter().any(|l| l.contains("bad-")), "{text:#?}");
    assert_eq!(
        lf.final_counter(
            "logferry_forward_frame_errors_total{component=\"in\",kind=\"invalid_frame\"}"
        ),
        bad_frames as u64 + 1,
        "{}",
        lf.log_text()
    );
    assert!(
        lf.log_text().contains("milliseconds"),
        "the error names the likely cause:\n{}",
        lf.log_text()
    );
}
