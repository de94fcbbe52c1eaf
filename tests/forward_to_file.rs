//! The built binary receives every forward-protocol mode and writes every
//! record, once, to a unified file.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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

/// The forward-to-file configuration with the source's `linger` set.
fn lingering(linger: &str) -> String {
    let address = "address = \"127.0.0.1:0\"";
    CONFIG.replace(address, &format!("{address}\nlinger = \"{linger}\""))
}

/// Counts the lines of `path` every 2 ms on a thread of its own until
/// `n` are there (or 60 s pass): when each count was first seen.
fn watch_arrivals(
    path: std::path::PathBuf,
    n: usize,
) -> std::thread::JoinHandle<Vec<(Instant, usize)>> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = vec![(Instant::now(), 0)];
        while seen.last().unwrap().1 < n && Instant::now() < deadline {
            let count = read_lines(&path).len();
            if count != seen.last().unwrap().1 {
                seen.push((Instant::now(), count));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        seen
    })
}

#[test]
fn a_frequent_client_is_read_a_linger_at_a_time_and_every_record_arrives() {
    // the defaults (memory buffers): a 500 ms linger
    let mut lf = Logferry::start(CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let n = 300;
    let arrivals = watch_arrivals(out.clone(), n);
    // a logging library: a chunk per record, one every 5 ms for 1.5 s
    let mut s = TcpStream::connect(addr).unwrap();
    let mut sent = Vec::new();
    for i in 0..n {
        s.write_all(&message_frame("app", "often", i, None))
            .unwrap();
        sent.push(Instant::now());
        std::thread::sleep(Duration::from_millis(5));
    }
    let arrivals = arrivals.join().unwrap();
    let lines = read_lines(&out);
    assert_exactly(&lines, "often", n);
    // read a linger at a time: a few dozen writes to the file, not one
    // per chunk (those of the first quarter linger, 125 ms, until the
    // client is seen to send often, then 1.4 s of chunks is three or four
    // lingers, a chunk arriving as one ends may be written apart)
    let writes = arrivals.len() - 1;
    assert!(
        writes <= 40,
        "{writes} writes for {n} chunks: {:?}",
        arrivals.iter().map(|a| a.1).collect::<Vec<_>>()
    );
    // and no record waits much more than a linger
    for (i, at) in sent.iter().enumerate() {
        let (arrived, _) = arrivals
            .iter()
            .find(|(_, count)| *count > i)
            .expect("every record arrived");
        let waited = arrived.saturating_duration_since(*at);
        assert!(
            waited < Duration::from_millis(1500),
            "record {i} arrived {waited:?} after it was sent"
        );
    }
    assert!(lf.stop().success());
    assert_eq!(read_lines(&out).len(), n, "nothing more after the stop");
}

/// How long each of 400 records, sent one chunk each 5 ms to an agent
/// (a forward source with `agent_source` settings, forwarding to a relay
/// with the defaults), took to reach the relay's file; sorted.
fn relay_waits(agent_source: &str) -> Vec<Duration> {
    let mut relay = Logferry::start(CONFIG);
    let relay_addr = relay.forward_addr("in");
    let out = relay.path("unified.log");
    let mut agent = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{agent_source}\n\n\
         [sinks.relay]\ntype = \"forward\"\nmatch = \"**\"\n\
         servers = [{{ address = \"{relay_addr}\" }}]\n"
    ));
    let n = 400;
    let arrivals = watch_arrivals(out.clone(), n);
    let mut s = TcpStream::connect(agent.forward_addr("in")).unwrap();
    let mut sent = Vec::new();
    for i in 0..n {
        s.write_all(&message_frame("app", "relayed", i, None))
            .unwrap();
        sent.push(Instant::now());
        std::thread::sleep(Duration::from_millis(5));
    }
    let arrivals = arrivals.join().unwrap();
    assert_exactly(&read_lines(&out), "relayed", n);
    let mut waits: Vec<Duration> = sent
        .iter()
        .enumerate()
        .map(|(i, at)| {
            let (arrived, _) = arrivals.iter().find(|(_, c)| *c > i).unwrap();
            arrived.saturating_duration_since(*at)
        })
        .collect();
    waits.sort();
    assert!(agent.stop().success());
    assert!(relay.stop().success());
    waits
}

#[test]
fn a_relay_behind_a_lingering_agent_does_not_linger_again() {
    // both with the defaults: the agent lingers for its frequent client,
    // and sends what gathered about once a linger (sometimes cut in a few
    // chunks); the relay reads those as they arrive
    let waits = relay_waits("");
    // one 500 ms linger on the path: a record waits a quarter of a second
    // in the middle; lingering twice would make that about three quarters
    let median = waits[waits.len() / 2];
    assert!(
        median < Duration::from_millis(500),
        "median wait {median:?}"
    );
}

#[test]
fn a_relay_behind_an_agent_lingering_100_ms_adds_no_linger_of_its_own() {
    // the agent writes what gathered every 100 ms: far less often than a
    // client the relay's 500 ms default is for, so the path's latency is
    // the one the agent's linger was chosen for
    let waits = relay_waits("linger = \"100ms\"");
    let (median, p95) = (waits[waits.len() / 2], waits[waits.len() * 95 / 100]);
    assert!(
        median < Duration::from_millis(150) && p95 < Duration::from_millis(300),
        "median wait {median:?}, p95 {p95:?}"
    );
}

#[test]
fn a_client_that_asks_for_acks_is_not_lingered_after_its_first() {
    // a linger far longer than the whole test may take once
    let mut lf = Logferry::start(&lingering("5s"));
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let mut s = TcpStream::connect(addr).unwrap();
    // chunks nobody waits for, often enough that they gather
    for i in 0..3 {
        s.write_all(&message_frame("t", "free", i, None)).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    // then the client asks for acks: its first may wait out the linger
    // that began before it, no more
    let asked = Instant::now();
    s.write_all(&message_frame("t", "acked", 0, Some("c0")))
        .unwrap();
    assert_eq!(read_ack(&mut s), "c0");
    assert!(
        asked.elapsed() < Duration::from_secs(9),
        "{:?}",
        asked.elapsed()
    );
    // every later chunk is read as it arrives: 20 round trips take far
    // less than one linger
    let took = acked_round_trips(&mut s, 1..21);
    assert!(
        took < Duration::from_secs(4),
        "20 acks took {took:?}: the connection lingered"
    );
    let lines = read_lines(&out);
    assert_exactly(&lines, "free", 3);
    assert_exactly(&lines, "acked", 21);
}

/// Sends chunks `acked-<i>` asking for acks, each after the last one's
/// ack: how long they all took.
fn acked_round_trips(s: &mut TcpStream, range: std::ops::Range<usize>) -> Duration {
    let started = Instant::now();
    for i in range {
        let id = format!("c{i}");
        s.write_all(&message_frame("t", "acked", i, Some(&id)))
            .unwrap();
        assert_eq!(read_ack(s), id);
    }
    started.elapsed()
}

#[test]
fn a_client_that_asks_for_acks_from_the_first_chunk_never_waits_for_a_linger() {
    // the defaults: chunks without acks would linger 500 ms
    let mut lf = Logferry::start(CONFIG);
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let mut s = TcpStream::connect(addr).unwrap();
    let took = acked_round_trips(&mut s, 0..20);
    // one linger a round trip would be 10 s
    assert!(
        took < Duration::from_secs(5),
        "20 acks took {took:?}: the connection lingered"
    );
    assert_exactly(&read_lines(&out), "acked", 20);
    assert!(lf.stop().success());
}

/// Sends `n` one-record chunks `<prefix>-<i>` without acks, one every
/// 5 ms (a logging library).
fn send_often(s: &mut TcpStream, prefix: &str, n: usize) {
    for i in 0..n {
        s.write_all(&message_frame("app", prefix, i, None)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Time to read the last chunk sent and route it, well under a 500 ms
/// linger.
const READ_AND_ROUTE: Duration = Duration::from_millis(150);

/// Starts `config` again after a kill -9 and checks that `0..n` of
/// `prefix` reached `out` (the disk buffer may send again what was
/// written before the kill).
fn restart_and_expect(config: &str, out: &std::path::Path, prefix: &str, n: usize) {
    let mut lf = Logferry::start(config);
    lf.forward_addr("in");
    wait_until("every record", Duration::from_secs(30), || {
        numbers(&read_lines(out), prefix).len() >= n
    });
    let mut got = numbers(&read_lines(out), prefix);
    got.dedup();
    assert_eq!(got, (0..n).collect::<Vec<_>>(), "records lost to kill -9");
    assert!(lf.stop().success());
}

#[test]
fn with_a_disk_buffer_a_frequent_client_is_read_at_once_and_survives_kill_9() {
    // the defaults, but the sink keeps a disk buffer: a chunk read is on
    // disk at once, so none may linger unread in the socket, where a
    // kill -9 would lose it
    let dir = tempfile::tempdir().unwrap();
    let config = CONFIG.replace("{dir}", &dir.path().display().to_string())
        + &format!(
            "buffer = {{ type = \"disk\", dir = \"{}/buffer\" }}\n",
            dir.path().display()
        );
    let out = dir.path().join("unified.log");
    let mut lf = Logferry::start(&config);
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    send_often(&mut s, "disk", 200);
    std::thread::sleep(READ_AND_ROUTE);
    lf.kill(); // SIGKILL
    drop(s);
    restart_and_expect(&config, &out, "disk", 200);
}

#[test]
fn a_reload_that_adds_a_disk_buffer_ends_the_linger_of_open_connections() {
    let dir = tempfile::tempdir().unwrap();
    let config = CONFIG.replace("{dir}", &dir.path().display().to_string());
    let with_disk = config.replace(
        "path = \"",
        &format!(
            "buffer = {{ type = \"disk\", dir = \"{}/buffer\" }}\npath = \"",
            dir.path().display()
        ),
    );
    let out = dir.path().join("unified.log");
    let mut lf = Logferry::start(&config);
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    // memory buffers: this client's chunks linger, and go on lingering
    // while it sends without a pause; the sink gets a disk buffer
    // meanwhile (the source and this connection stay as they are)
    let sender = std::thread::spawn(move || {
        send_often(&mut s, "memory", 200);
        s
    });
    std::thread::sleep(Duration::from_millis(300));
    lf.rewrite_config(&with_disk);
    lf.signal(libc::SIGHUP);
    lf.wait_for_log("configuration reloaded", Duration::from_secs(20));
    let mut s = sender.join().unwrap();
    // the chunks that a kill -9 must not lose, still without a pause
    send_often(&mut s, "disk", 200);
    std::thread::sleep(READ_AND_ROUTE);
    lf.kill(); // SIGKILL
    drop(s);
    restart_and_expect(&with_disk, &out, "disk", 200);
}

#[test]
fn a_stop_while_chunks_gather_delivers_every_chunk_sent() {
    let mut lf = Logferry::start(&lingering("30s"));
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&message_frame("t", "gather", 0, None)).unwrap();
    wait_for_lines(&out, 1, Duration::from_secs(10));
    // the next chunks come within a linger: they gather in the socket
    for i in 1..201 {
        s.write_all(&message_frame("t", "gather", i, None)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(300));
    let stopping = Instant::now();
    assert!(lf.stop().success());
    // the stop ends the linger; it does not wait it out
    assert!(
        stopping.elapsed() < Duration::from_secs(20),
        "{:?}",
        stopping.elapsed()
    );
    assert_exactly(&read_lines(&out), "gather", 201);
}

#[test]
fn a_client_that_closes_while_its_chunks_gather_loses_none() {
    let mut lf = Logferry::start(&lingering("2s"));
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    for round in 0..3 {
        let prefix = format!("closed{round}");
        let mut s = TcpStream::connect(addr).unwrap();
        for i in 0..100 {
            s.write_all(&message_frame("t", &prefix, i, None)).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(s);
    }
    let lines = wait_for_lines(&out, 300, Duration::from_secs(30));
    for round in 0..3 {
        assert_exactly(&lines, &format!("closed{round}"), 100);
    }
    assert!(lf.stop().success());
    assert_eq!(read_lines(&out).len(), 300);
}

#[test]
fn a_client_sending_in_bulk_is_read_as_it_sends_not_a_linger_at_a_time() {
    // a client that sends a bulk's worth within a linger ends it: these
    // 45 MB are read as they arrive (about a second), where a client held
    // to one kernel receive buffer (up to 32 MiB) per linger would wait
    // out at least one 20 s linger
    let mut lf = Logferry::start(&lingering("20s"));
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let (per_frame, frames) = (1000, 400);
    let pad = "x".repeat(100);
    let mut s = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    let (mut frame, mut e) = (Vec::new(), Vec::new());
    for k in 0..frames {
        e.clear();
        for i in 0..per_frame {
            let message = format!("bulk-{k}-{i}-{pad}");
            write_message_entry(&mut e, 1_700_000_000, 0, message.as_bytes());
        }
        frame.clear();
        write_packed_forward(&mut frame, "bulk", &e, per_frame, None);
        s.write_all(&frame).unwrap();
    }
    drop(s);
    let lines = wait_for_lines(&out, frames * per_frame, Duration::from_secs(90));
    assert_eq!(lines.len(), frames * per_frame);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}: the bulk client waited for a linger",
        started.elapsed()
    );
    assert!(lf.stop().success());
}
