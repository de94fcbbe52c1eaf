//! Many forward connections at once, each mixing frames of every size
//! around the read buffer's thresholds (a large frame gets a buffer of its
//! own size, read to its end; the head of the next frame is read alone; a
//! waiting connection copies a small head out of a buffer its frames
//! share): every numbered record arrives once, with a roomy budget and
//! with the smallest one, and after a connection was idle mid-frame.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};

/// Largest frame the source accepts in these tests.
const MAX_FRAME: usize = 2 * 1024 * 1024;

fn config(memory: &str) -> String {
    let source = format!(
        "address = \"127.0.0.1:0\"\nmax_frame_bytes = {MAX_FRAME}\nmax_connections = 1000\n"
    );
    let pipeline = FORWARD_TO_FILE.replace("address = \"127.0.0.1:0\"\n", &source);
    format!("{pipeline}\n[limits]\nmemory = \"{memory}\"\n")
}

/// A PackedForward frame of records `first..first + n` named
/// `<prefix>-<i>`, each message padded to about `size` bytes.
fn frame(prefix: &str, first: usize, n: usize, size: usize) -> Vec<u8> {
    let mut entries = Vec::new();
    for i in first..first + n {
        let mut m = format!("{prefix}-{i} ").into_bytes();
        m.resize(size.max(m.len()), b'x');
        write_message_entry(&mut entries, 1_700_000_000, i as u32, &m);
    }
    let mut out = Vec::new();
    write_packed_forward(&mut out, "many", &entries, n, None);
    out
}

/// The frames connection `c` sends, records numbered from `first`: small
/// ones, ones just under, at and over 64 KiB, and one close to the
/// source's largest frame, in an order that depends on `c`. Returns the
/// frames and how many records they hold.
fn frames_of(c: usize, first: usize) -> (Vec<Vec<u8>>, usize) {
    // (records, bytes per record)
    let mut shapes = vec![
        (10, 100),
        (600, 100),
        (1, 64 * 1024 - 60),
        (1, 64 * 1024),
        (1, 64 * 1024 + 60),
        (1000, 100),
        (3, 100),
        (1, MAX_FRAME - 4096),
        (2, 300),
    ];
    let kinds = shapes.len();
    shapes.rotate_left(c % kinds);
    let mut frames = Vec::new();
    let mut next = first;
    for (n, size) in shapes {
        frames.push(frame("rec", next, n, size));
        next += n;
    }
    (frames, next - first)
}

/// Writes `bytes` in pieces that cut frames at awkward places: a few
/// bytes, a kilobyte and a little more, then the rest.
fn write_in_pieces(s: &mut TcpStream, bytes: &[u8], c: usize) {
    let cuts = [3, 1023, 1025, 70_000, 5];
    let mut at = 0;
    let mut k = c;
    while at < bytes.len() {
        let n = cuts[k % cuts.len()].min(bytes.len() - at);
        s.write_all(&bytes[at..at + n]).unwrap();
        at += n;
        k += 1;
    }
}

/// `conns` connections each send their frames at once; returns the
/// records sent.
fn send_all(addr: SocketAddr, conns: usize) -> usize {
    let per_conn: Vec<_> = (0..conns).map(|c| frames_of(c, c * 10_000)).collect();
    let total = per_conn.iter().map(|(_, n)| n).sum();
    let threads: Vec<_> = per_conn
        .into_iter()
        .enumerate()
        .map(|(c, (frames, _))| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let bytes: Vec<u8> = frames.concat();
                write_in_pieces(&mut s, &bytes, c);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    total
}

/// Every record `rec-<i>` of every connection, once.
fn assert_every_record_once(lines: &[String], conns: usize) {
    let mut got: Vec<usize> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("rec-")?.split(' ').next()?.parse().ok())
        .collect();
    got.sort_unstable();
    let mut want = Vec::new();
    for c in 0..conns {
        let (_, n) = frames_of(c, c * 10_000);
        want.extend(c * 10_000..c * 10_000 + n);
    }
    assert_eq!(got.len(), want.len(), "records written");
    assert!(got == want, "every record once, none lost or repeated");
}

fn many_connections(memory: &str, conns: usize) {
    let mut lf = Logferry::start(&config(memory));
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let sent = send_all(addr, conns);
    let lines = wait_for_lines(&out, sent, Duration::from_secs(120));
    assert_every_record_once(&lines, conns);
    assert!(lf.stop().success());
    assert_eq!(read_lines(&out).len(), sent, "nothing more after shutdown");
}

#[test]
fn many_connections_with_frames_of_every_size_deliver_every_record_once() {
    many_connections("256MiB", 64);
}

#[test]
fn many_connections_on_the_smallest_budget_deliver_every_record_once() {
    // the budget is smaller than one large frame: readers wait, go over
    // it in turn, and copy heads out of shared buffers while they wait
    many_connections("1MiB", 32);
}

#[test]
fn a_connection_idle_inside_frames_then_busy_again_keeps_every_record() {
    let mut lf = Logferry::start(&config("256MiB"));
    let addr = lf.forward_addr("in");
    let out = lf.path("unified.log");
    let mut s = TcpStream::connect(addr).unwrap();
    // large frames at full speed, so that read buffers grow
    let mut busy = Vec::new();
    for k in 0..5 {
        busy.extend(frame("rec", k * 1000, 1000, 120));
    }
    s.write_all(&busy).unwrap();
    wait_for_lines(&out, 5000, Duration::from_secs(30));
    // a large frame's head, the rest after a pause; then the head of
    // another, cut inside its size, the rest after a pause
    let big = frame("rec", 5000, 1, MAX_FRAME - 4096);
    s.write_all(&big[..7]).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    s.write_all(&big[7..]).unwrap();
    let next = frame("rec", 5001, 1000, 100);
    s.write_all(&next[..2]).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    s.write_all(&next[2..]).unwrap();
    // and small frames again, the last one after a pause
    s.write_all(&frame("rec", 6001, 3, 50)).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    s.write_all(&frame("rec", 6004, 2, 50)).unwrap();
    drop(s);
    let lines = wait_for_lines(&out, 6006, Duration::from_secs(30));
    let mut got: Vec<usize> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("rec-")?.split(' ').next()?.parse().ok())
        .collect();
    got.sort_unstable();
    assert_eq!(got, (0..6006).collect::<Vec<_>>());
    assert!(lf.stop().success());
}

/// Busy connections whose sink cannot keep up hold about one frame each:
/// the budget in use stays near connections × frame size, not near the
/// budget (read buffers of up to 1 MiB, pinned by the start of the next
/// frame while their connection waited, used to fill it).
/// `LOGFERRY_MANY_BIN` runs another binary (an older build, to compare).
#[test]
fn busy_connections_hold_about_one_frame_each() {
    const CONNS: usize = 128;
    const FRAMES: usize = 24;
    let api = free_port();
    let config = format!("{FORWARD_TO_FILE}\n[api]\naddress = \"127.0.0.1:{api}\"\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logferry.toml");
    std::fs::write(
        &path,
        config.replace("{dir}", &dir.path().display().to_string()),
    )
    .unwrap();
    let out = dir.path().join("unified.log");
    let bin = std::env::var("LOGFERRY_MANY_BIN").unwrap_or_else(|_| BIN.into());
    let mut lf = Logferry::spawn(
        std::process::Command::new(bin)
            .args(["run", "--config"])
            .arg(&path),
        dir,
    );
    let addr = lf.forward_addr("in");
    let api = SocketAddr::from(([127, 0, 0, 1], api));
    // 1000 records of 100 B a frame (122 KB), as agents send them
    let frames: Vec<u8> = (0..FRAMES)
        .flat_map(|k| frame("rec", k * 1000, 1000, 100))
        .collect();
    let frame_bytes = frames.len() / FRAMES;
    let frames = std::sync::Arc::new(frames);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0.0f64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let text = api_get(api, "/metrics");
                peak = peak.max(metric_value(&text, "logferry_memory_used_bytes"));
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    let senders: Vec<_> = (0..CONNS)
        .map(|_| {
            let frames = frames.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(&frames).unwrap();
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    wait_for_lines(&out, CONNS * FRAMES * 1000, Duration::from_secs(300));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().unwrap() as usize;
    // two frames and their slack a connection, and the sink's 8 MiB queue
    let bound = CONNS * 2 * (frame_bytes + 2048) + 8 * 1024 * 1024;
    eprintln!(
        "peak budget in use: {} KiB (bound {} KiB)",
        peak / 1024,
        bound / 1024
    );
    assert!(
        peak <= bound,
        "{CONNS} busy connections held {peak} bytes of budget, more than {bound}"
    );
    assert!(lf.stop().success());
}
