//! Hot reload (SIGHUP, `POST /reload`) while records flow: unchanged
//! components keep running (a forward connection made before stays the same
//! socket), changed ones are replaced, an invalid configuration is refused,
//! and no record is lost or duplicated.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use logferry::protocol::forward::{write_message_entry, write_packed_forward};

/// A forward source and an API, every record to `{dir}/{file}`, plus `extra`.
fn config(file: &str, extra: &str) -> String {
    format!(
        r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/{file}"

[api]
address = "127.0.0.1:0"
{extra}"#
    )
}

/// `POST /reload`: status code and body.
fn post_reload(api: SocketAddr) -> (u16, String) {
    http(api, "POST /reload")
}

/// One request (`METHOD /path`) to the API: status code and body.
fn http(api: SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(api).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(
        format!("{request} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// One PackedForward frame of `<prefix>-<i>` for i in `range`, asking for an ack.
fn frame(prefix: &str, range: std::ops::Range<usize>, chunk: &str) -> Vec<u8> {
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
    write_packed_forward(&mut out, "app", &entries, n, Some(chunk.as_bytes()));
    out
}

/// Follows the files a file sink writes as they grow, to tell whether
/// numbered records (`<prefix>-<i>` lines) are in them yet: an ack that
/// comes before its records are written is an early ack. The files are
/// one union (the old and the new path of a sink a reload replaces).
struct Written {
    prefix: &'static str,
    /// Each file, the bytes read from it so far, and a line begun.
    files: Vec<(PathBuf, u64, Vec<u8>)>,
    /// Records seen, by number.
    seen: Vec<bool>,
}

impl Written {
    fn new(prefix: &'static str, paths: &[PathBuf]) -> Written {
        Written {
            prefix,
            files: paths.iter().map(|p| (p.clone(), 0, Vec::new())).collect(),
            seen: Vec::new(),
        }
    }

    /// Reads the complete lines the files gained since the last call.
    fn catch_up(&mut self) {
        use std::io::{Seek, SeekFrom};
        for (path, at, begun) in &mut self.files {
            // a path the sink has not opened yet
            let Ok(mut f) = std::fs::File::open(&*path) else {
                continue;
            };
            f.seek(SeekFrom::Start(*at)).unwrap();
            let before = begun.len();
            f.read_to_end(begun).unwrap();
            *at += (begun.len() - before) as u64;
            let end = begun.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            for line in begun[..end].split(|&b| b == b'\n') {
                let n = std::str::from_utf8(line)
                    .ok()
                    .and_then(|l| l.strip_prefix(self.prefix)?.strip_prefix('-')?.parse().ok());
                if let Some(n) = n {
                    if self.seen.len() <= n {
                        self.seen.resize(n + 1, false);
                    }
                    self.seen[n] = true;
                }
            }
            begun.drain(..end);
        }
    }

    /// The records of `range` not written yet.
    fn missing(&mut self, range: std::ops::Range<usize>) -> Vec<usize> {
        self.catch_up();
        range
            .filter(|&i| !self.seen.get(i).copied().unwrap_or(false))
            .collect()
    }
}

/// Sends numbered records on ONE connection until `stop`, up to 20 frames
/// of 50 in flight (so queues hold records when a reload comes); any error
/// (a closed or reset connection) fails the test. Acks may come in any
/// order (docs/protocols.md: a chunk is acknowledged when its sinks have
/// it, and a reload's replacement sink may deliver a chunk routed after
/// the swap before one it took over), so they are matched by chunk id, as
/// clients do; an ack for no chunk in flight (unknown, or a second one)
/// fails the test, and so does an ack whose records are not in `written`'s
/// files yet. Returns how many records were sent, every one of them
/// acknowledged.
fn sender(
    addr: SocketAddr,
    prefix: &'static str,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    mut written: Option<Written>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        // chunk id -> its records, for every chunk not acknowledged yet
        let mut in_flight = std::collections::HashMap::new();
        let mut next = 0;
        let mut ack_one = |s: &mut TcpStream,
                           in_flight: &mut std::collections::HashMap<
            String,
            std::ops::Range<usize>,
        >| {
            let ack = read_ack(s, Duration::from_secs(60)).expect("no ack within 60 s");
            let records = in_flight
                .remove(&ack)
                .unwrap_or_else(|| panic!("ack {ack:?}: no such chunk is waiting for one"));
            if let Some(written) = &mut written {
                let missing = written.missing(records);
                assert!(
                    missing.is_empty(),
                    "chunk {ack} acknowledged before records {missing:?} were written"
                );
            }
        };
        while !stop.load(Ordering::Acquire) {
            let chunk = format!("c{next}");
            s.write_all(&frame(prefix, next..next + 50, &chunk))
                .expect("the connection made before the reload must stay open");
            in_flight.insert(chunk, next..next + 50);
            next += 50;
            sent.store(next, Ordering::Release);
            if in_flight.len() >= 20 {
                ack_one(&mut s, &mut in_flight);
            }
        }
        while !in_flight.is_empty() {
            ack_one(&mut s, &mut in_flight);
        }
        next
    })
}

/// Every number from 0 to `n` exactly once in `lines`.
fn exactly_once(lines: &[String], prefix: &str, n: usize) {
    let got = numbers(lines, prefix);
    let dups = got.windows(2).filter(|w| w[0] == w[1]).count();
    assert_eq!(dups, 0, "{dups} {prefix} records duplicated");
    assert_eq!(got.len(), n, "{prefix}: {} of {n} records", got.len());
    assert!(
        got.iter().enumerate().all(|(i, v)| i == *v),
        "{prefix}: gaps"
    );
}

#[test]
fn reloads_under_load_lose_and_duplicate_nothing() {
    let mut lf = Logferry::start(&config("a.log", ""));
    let forward = lf.forward_addr("in");
    let api = lf.address("api listening");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    // an ack never comes before its records are in a.log or, after the
    // reload, b.log
    let written = Written::new("n", &[lf.path("a.log"), lf.path("b.log")]);
    let load = sender(forward, "n", stop.clone(), sent.clone(), Some(written));
    let progress = |from: usize| {
        let sent = sent.clone();
        wait_until("records to flow", Duration::from_secs(30), move || {
            sent.load(Ordering::Acquire) >= from + 20_000
        })
    };
    progress(0);

    // 1. change the sink (its path): drained and replaced over POST /reload
    lf.rewrite_config(&config("b.log", ""));
    let (_, metrics) = http(api, "GET /metrics");
    assert!(
        metrics.contains("logferry_reloads_total{result=\"ok\"} 0\n")
            && metrics.contains("logferry_reloads_total{result=\"rejected\"} 0\n"),
        "{metrics}"
    );
    let (status, body) = post_reload(api);
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    let (_, metrics) = http(api, "GET /metrics");
    assert!(
        metrics.contains("logferry_reloads_total{result=\"ok\"} 1\n"),
        "{metrics}"
    );
    assert!(
        body.contains("sources: 1 kept, 0 replaced") && body.contains("sinks: 0 kept, 1 replaced"),
        "{body}"
    );
    let at = sent.load(Ordering::Acquire);
    progress(at);
    assert!(!read_lines(&lf.path("b.log")).is_empty(), "new sink idle");

    // 2. add a source, over SIGHUP
    let added = "\n[sources.extra]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n";
    lf.rewrite_config(&config("b.log", added));
    lf.signal(libc::SIGHUP);
    let extra = lf.forward_addr("extra");
    lf.wait_for_log(
        "configuration reloaded summary=sources: 1 kept, 0 replaced, 1 added",
        Duration::from_secs(30),
    );
    let mut s = TcpStream::connect(extra).unwrap();
    s.write_all(&frame("extra", 0..10, "x")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(30)).as_deref(),
        Some("x")
    );
    let at = sent.load(Ordering::Acquire);
    progress(at);

    // 3. an invalid configuration is refused; the old one keeps running
    lf.rewrite_config(&config("b.log", &format!("{added}max_conections = 5\n")));
    let (status, body) = post_reload(api);
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("logferry.toml:16:") && body.contains("unknown key `max_conections`"),
        "{body}"
    );
    lf.wait_for_log("configuration reload rejected", Duration::from_secs(10));
    let at = sent.load(Ordering::Acquire);
    progress(at);

    stop.store(true, Ordering::Release);
    let total = load.join().expect("the sender failed");
    assert!(lf.stop().success(), "{}", lf.log_text());
    let mut lines = read_lines(&lf.path("a.log"));
    lines.extend(read_lines(&lf.path("b.log")));
    exactly_once(&lines, "n", total);
    exactly_once(&lines, "extra", 10);
    assert_eq!(lf.final_counter("logferry_reloads_total{result=\"ok\"}"), 2);
    assert_eq!(
        lf.final_counter("logferry_reloads_total{result=\"rejected\"}"),
        1
    );
}

#[test]
fn an_unchanged_file_sink_keeps_its_file_and_a_disk_buffer_is_handed_over() {
    // the sink `kept` is untouched; `buffered` changes (its write buffer)
    // and its replacement opens the same disk buffer directory
    let base = |write_buffer: &str| {
        format!(
            r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.kept]
type = "file"
match = "**"
path = "{{dir}}/kept.log"

[sinks.buffered]
type = "file"
match = "**"
path = "{{dir}}/buffered.log"
write_buffer_bytes = "{write_buffer}"
buffer = {{ type = "disk", dir = "{{dir}}/buffer" }}
"#
        )
    };
    let mut lf = Logferry::start(&base("1MiB"));
    let forward = lf.forward_addr("in");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    // acknowledged once both sinks have it: `kept` wrote it to its file
    let written = Written::new("n", &[lf.path("kept.log")]);
    let load = sender(forward, "n", stop.clone(), sent.clone(), Some(written));
    wait_until("records to flow", Duration::from_secs(30), || {
        sent.load(Ordering::Acquire) >= 20_000
    });
    let kept = lf.path("kept.log");
    let inode = || {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&kept).unwrap().ino()
    };
    let before = inode();
    lf.rewrite_config(&base("64KiB"));
    lf.signal(libc::SIGHUP);
    lf.wait_for_log(
        "configuration reloaded summary=sources: 1 kept, 0 replaced, 0 added, 0 removed; sinks: 1 kept, 1 replaced",
        Duration::from_secs(30),
    );
    let at = sent.load(Ordering::Acquire);
    wait_until("records to flow", Duration::from_secs(30), || {
        sent.load(Ordering::Acquire) >= at + 20_000
    });
    stop.store(true, Ordering::Release);
    let total = load.join().expect("the sender failed");
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(inode(), before, "the unchanged sink's file was replaced");
    assert_eq!(lf.final_counter("logferry_reloads_total{result=\"ok\"}"), 1);
    exactly_once(&read_lines(&lf.path("kept.log")), "n", total);
    exactly_once(&read_lines(&lf.path("buffered.log")), "n", total);
}

#[test]
fn sigusr1_reopens_the_outputs_without_a_reload() {
    let mut lf = Logferry::start(&config("a.log", ""));
    let forward = lf.forward_addr("in");
    let mut s = TcpStream::connect(forward).unwrap();
    s.write_all(&frame("r", 0..10, "1")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(30)).as_deref(),
        Some("1")
    );
    std::fs::rename(lf.path("a.log"), lf.path("a.log.1")).unwrap();
    // a configuration being edited must not be picked up
    lf.rewrite_config(&config("b.log", ""));
    lf.signal(libc::SIGUSR1);
    // the log says which signal it was
    lf.wait_for_log("output files reopened (SIGUSR1)", Duration::from_secs(10));
    s.write_all(&frame("r", 10..20, "2")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(30)).as_deref(),
        Some("2")
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(
        numbers(&read_lines(&lf.path("a.log.1")), "r"),
        (0..10).collect::<Vec<_>>()
    );
    assert_eq!(
        numbers(&read_lines(&lf.path("a.log")), "r"),
        (10..20).collect::<Vec<_>>()
    );
    assert!(!lf.path("b.log").exists());
    assert!(
        !lf.log_text().contains("configuration reloaded"),
        "{}",
        lf.log_text()
    );
}

#[test]
fn a_changed_tail_source_hands_over_at_its_checkpoint() {
    let tail = |read_bytes: &str| {
        format!(
            r#"[sources.tail]
type = "tail"
paths = ["{{dir}}/in.log"]
tag = "app"
read_from_head = true
poll_interval = "50ms"
checkpoint_dir = "{{dir}}/state"
read_bytes = "{read_bytes}"

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/out.log"
"#
        )
    };
    let mut lf = Logferry::start(&tail("64KiB"));
    let input = lf.path("in.log");
    let total = 20_000;
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&input)
            .unwrap();
        for start in (0..total).step_by(200) {
            let text: String = (start..start + 200).map(|i| format!("t-{i}\n")).collect();
            f.write_all(text.as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    wait_for_lines(&lf.path("out.log"), 2_000, Duration::from_secs(30));
    lf.rewrite_config(&tail("4KiB"));
    lf.signal(libc::SIGHUP);
    lf.wait_for_log(
        "configuration reloaded summary=sources: 0 kept, 1 replaced",
        Duration::from_secs(30),
    );
    writer.join().unwrap();
    wait_for_lines(&lf.path("out.log"), total, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    assert!(lf.stop().success(), "{}", lf.log_text());
    exactly_once(&read_lines(&lf.path("out.log")), "t", total);
}

#[test]
fn a_changed_api_is_refused_and_nothing_else_changes() {
    let mut lf = Logferry::start(&config("a.log", ""));
    let api = lf.address("api listening");
    let text = config("b.log", "").replace(
        "[api]\naddress = \"127.0.0.1:0\"",
        "[api]\naddress = \"127.0.0.2:0\"",
    );
    lf.rewrite_config(&text);
    let (status, body) = post_reload(api);
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("[api] changed"), "{body}");
    let forward = lf.forward_addr("in");
    let mut s = TcpStream::connect(forward).unwrap();
    s.write_all(&frame("r", 0..10, "1")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(30)).as_deref(),
        Some("1")
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(
        numbers(&read_lines(&lf.path("a.log")), "r"),
        (0..10).collect::<Vec<_>>()
    );
    assert!(!lf.path("b.log").exists());
    assert_eq!(
        lf.final_counter("logferry_reloads_total{result=\"rejected\"}"),
        1
    );
}

/// Like [`sender`], but when its connection closes (its source was
/// replaced) it connects to `then` and sends again every frame not
/// acknowledged yet, as a forward client does. Returns how many records
/// were sent and how many times it reconnected.
fn reconnecting_sender(
    first: SocketAddr,
    then: SocketAddr,
    prefix: &'static str,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<(usize, usize)> {
    std::thread::spawn(move || {
        let connect = |addr: SocketAddr| {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                match TcpStream::connect(addr) {
                    Ok(s) => return s,
                    Err(e) => {
                        assert!(Instant::now() < deadline, "connecting to {addr}: {e}");
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        };
        let mut s = connect(first);
        let mut reconnects = 0;
        // (chunk id, first record) of every frame not acknowledged yet
        let mut in_flight: std::collections::VecDeque<(String, usize)> = Default::default();
        let mut next = 0;
        let mut broken = false;
        loop {
            let stopping = stop.load(Ordering::Acquire);
            if stopping && in_flight.is_empty() {
                break;
            }
            if broken {
                s = connect(then);
                reconnects += 1;
                broken = false;
                for (chunk, at) in &in_flight {
                    if s.write_all(&frame(prefix, *at..*at + 50, chunk)).is_err() {
                        broken = true;
                        break;
                    }
                }
                continue;
            }
            if !stopping && in_flight.len() < 20 {
                let chunk = format!("c{next}");
                if s.write_all(&frame(prefix, next..next + 50, &chunk))
                    .is_err()
                {
                    broken = true;
                }
                in_flight.push_back((chunk, next));
                next += 50;
                sent.store(next, Ordering::Release);
                continue;
            }
            match ack_or_closed(&mut s, Duration::from_secs(60)) {
                Ok(Some(ack)) => {
                    let (want, _) = in_flight.pop_front().unwrap();
                    assert_eq!(ack, want, "ack");
                }
                Ok(None) => panic!("no ack within 60s"),
                Err(_) => broken = true,
            }
        }
        (next, reconnects)
    })
}

/// Two forward sources `moved` (at `moved_address`) and `kept`, an API and
/// every record to `{dir}/out.log`.
fn two_sources(moved_address: &str, moved_extra: &str) -> String {
    format!(
        r#"[sources.moved]
type = "forward"
address = "{moved_address}"
{moved_extra}
[sources.kept]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/out.log"

[api]
address = "127.0.0.1:0"
"#
    )
}

#[test]
fn a_listening_source_moves_to_another_port_under_load() {
    let mut lf = Logferry::start(&two_sources("127.0.0.1:0", ""));
    let old = lf.forward_addr("moved");
    let kept = lf.forward_addr("kept");
    let api = lf.address("api listening");
    let new: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (moved_sent, kept_sent) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
    let moved = reconnecting_sender(old, new, "m", stop.clone(), Arc::clone(&moved_sent));
    // its connection must stay open across the reload (it panics otherwise)
    let written = Written::new("k", &[lf.path("out.log")]);
    let steady = sender(kept, "k", stop.clone(), kept_sent.clone(), Some(written));
    let progress = |n: &Arc<AtomicUsize>| {
        let at = n.load(Ordering::Acquire);
        wait_until("records to flow", Duration::from_secs(30), || {
            n.load(Ordering::Acquire) >= at + 10_000
        })
    };
    progress(&moved_sent);
    progress(&kept_sent);

    lf.rewrite_config(&two_sources(&new.to_string(), ""));
    let (status, body) = post_reload(api);
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    assert!(body.contains("sources: 1 kept, 1 replaced"), "{body}");
    // the old listener is closed, the new one serves
    assert!(TcpStream::connect(old).is_err(), "the old listener is open");
    progress(&moved_sent);
    progress(&kept_sent);

    // a limit changes at the same address: the same again
    lf.rewrite_config(&two_sources(&new.to_string(), "max_connections = 100\n"));
    let (status, body) = post_reload(api);
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    progress(&moved_sent);
    progress(&kept_sent);

    stop.store(true, Ordering::Release);
    let (moved_total, reconnects) = moved.join().expect("the moved sender failed");
    let kept_total = steady.join().expect("the kept sender failed");
    assert!(reconnects >= 1, "the moved sender never reconnected");
    assert!(lf.stop().success(), "{}", lf.log_text());
    let lines = read_lines(&lf.path("out.log"));
    exactly_once(&lines, "m", moved_total);
    exactly_once(&lines, "k", kept_total);
}

#[test]
fn a_source_address_in_use_refuses_the_reload_and_the_old_one_keeps_serving() {
    let mut lf = Logferry::start(&config("a.log", ""));
    let forward = lf.forward_addr("in");
    let api = lf.address("api listening");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let written = Written::new("n", &[lf.path("a.log")]);
    let load = sender(forward, "n", stop.clone(), sent.clone(), Some(written));
    wait_until("records to flow", Duration::from_secs(30), || {
        sent.load(Ordering::Acquire) >= 10_000
    });
    lf.rewrite_config(&config("b.log", "").replace(
        "address = \"127.0.0.1:0\"\n\n[sinks",
        &format!("address = \"{taken_addr}\"\n\n[sinks"),
    ));
    let (status, body) = post_reload(api);
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("[sources.in].address")
            && body.contains(&taken_addr.to_string())
            && body.contains("in use"),
        "{body}"
    );
    let logged = lf.wait_for_log("configuration reload rejected", Duration::from_secs(10));
    assert!(logged.contains("[sources.in].address"), "{logged}");
    // the old pipeline keeps delivering: on the open connection and a new one
    let at = sent.load(Ordering::Acquire);
    wait_until("records to flow", Duration::from_secs(30), || {
        sent.load(Ordering::Acquire) >= at + 10_000
    });
    let mut s = TcpStream::connect(forward).unwrap();
    s.write_all(&frame("after", 0..10, "x")).unwrap();
    assert_eq!(
        read_ack(&mut s, Duration::from_secs(30)).as_deref(),
        Some("x")
    );
    stop.store(true, Ordering::Release);
    let total = load.join().expect("the sender failed");
    assert!(lf.stop().success(), "{}", lf.log_text());
    drop(taken);
    let lines = read_lines(&lf.path("a.log"));
    exactly_once(&lines, "n", total);
    exactly_once(&lines, "after", 10);
    assert!(!lf.path("b.log").exists());
    assert_eq!(
        lf.final_counter("logferry_reloads_total{result=\"rejected\"}"),
        1
    );
}

/// A forward source, a forward sink to `server` and an API.
fn relay(server: &str) -> String {
    format!(
        r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "forward"
match = "**"
servers = [{{ address = "{server}" }}]
reconnect_min = "50ms"
reconnect_max = "200ms"
max_attempts = 0
batch_records = 100
drain_timeout = "2s"

[api]
address = "127.0.0.1:0"
"#
    )
}

/// Sends `frames` chunks of `per` numbered records (tag `d`, chunk ids
/// `c0`, `c1`, …) to source `in` and waits until sink `out` holds them
/// all; returns the connection, which is waiting for their acks.
fn queue_for_out(lf: &mut Logferry, frames: usize, per: usize) -> TcpStream {
    let api = lf.address("api listening");
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    for f in 0..frames {
        s.write_all(&frame("d", f * per..(f + 1) * per, &format!("c{f}")))
            .unwrap();
    }
    wait_until("every record queued", Duration::from_secs(30), || {
        let (_, m) = http(api, "GET /metrics");
        metric_value(&m, "logferry_buffer_records{component=\"out\"}") as usize == frames * per
    });
    s
}

#[test]
fn a_sink_with_a_dead_destination_is_replaced_within_its_drain_timeout() {
    let mut receiver = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let live = receiver.forward_addr("in");
    let dead = format!("127.0.0.1:{}", free_port());
    let mut lf = Logferry::start(&relay(&dead));
    let api = lf.address("api listening");
    // more frames than the sink holds ready (64 chunks), none deliverable
    let (frames, per) = (100, 100);
    let mut s = queue_for_out(&mut lf, frames, per);
    assert_eq!(ack_or_closed(&mut s, Duration::from_millis(200)), Ok(None));

    lf.rewrite_config(&relay(&live.to_string()));
    let started = Instant::now();
    let (status, body) = post_reload(api);
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    // the bound is the old sink's drain_timeout (2s); generous for a slow machine
    assert!(took < Duration::from_secs(20), "the reload took {took:?}");
    lf.wait_for_log("handed over to its replacement", Duration::from_secs(10));

    // every chunk is acknowledged once the new sink has delivered it
    let mut acks = Vec::new();
    for _ in 0..frames {
        match ack_or_closed(&mut s, Duration::from_secs(30)) {
            Ok(Some(a)) => acks.push(a),
            other => panic!("ack {}: {other:?}\n{}", acks.len(), lf.log_text()),
        }
    }
    acks.sort();
    let mut want: Vec<String> = (0..frames).map(|f| format!("c{f}")).collect();
    want.sort();
    assert_eq!(acks, want);
    assert!(lf.stop().success(), "{}", lf.log_text());
    let handed = lf.final_counter("logferry_reload_handed_over_records_total{component=\"out\"}");
    assert_eq!(handed as usize, frames * per);
    assert_eq!(
        lf.final_counter("logferry_sink_rejected_records_total{component=\"out\"}"),
        0
    );
    assert!(receiver.stop().success(), "{}", receiver.log_text());
    exactly_once(
        &read_lines(&receiver.path("received.log")),
        "d",
        frames * per,
    );
}

/// 2,000 numbered records acknowledged onto the disk buffer of sink `out`
/// (dir `{dir}/buffer`) behind a dead destination, then a reload points
/// it at a live receiver with its buffer in `{dir}/<new_dir>`: the relay
/// and the receiver, and the number of records.
fn replaced_with_records_on_disk(new_dir: &str) -> (Logferry, Logferry, usize) {
    let mut receiver = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let buffered = |server: &str, dir: &str| {
        relay(server).replace(
            "drain_timeout = \"2s\"\n",
            &format!(
                "drain_timeout = \"2s\"\nbuffer = {{ type = \"disk\", dir = \"{{dir}}/{dir}\" }}\n"
            ),
        )
    };
    let dead = format!("127.0.0.1:{}", free_port());
    let mut lf = Logferry::start(&buffered(&dead, "buffer"));
    let (frames, per) = (20, 100);
    // acknowledged once on disk, none deliverable
    let mut s = queue_for_out(&mut lf, frames, per);
    for _ in 0..frames {
        assert!(matches!(
            ack_or_closed(&mut s, Duration::from_secs(10)),
            Ok(Some(_))
        ));
    }
    lf.rewrite_config(&buffered(&receiver.forward_addr("in").to_string(), new_dir));
    let (status, body) = post_reload(lf.address("api listening"));
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    (lf, receiver, frames * per)
}

#[test]
fn a_disk_buffered_sink_replaced_with_records_on_disk_leaves_them_to_its_replacement() {
    let (mut lf, mut receiver, n) = replaced_with_records_on_disk("buffer");
    lf.wait_for_log(
        "stay in the disk buffer for the sink that replaces this one",
        Duration::from_secs(20),
    );
    wait_until(
        "the replacement delivers what is on disk",
        Duration::from_secs(30),
        || numbers(&read_lines(&receiver.path("received.log")), "d").len() >= n,
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert!(
        !lf.log_text().contains("delivered after the next start"),
        "{}",
        lf.log_text()
    );
    assert_eq!(
        lf.final_counter("logferry_buffer_disk_kept_records_total{component=\"out\"}"),
        0
    );
    assert!(receiver.stop().success(), "{}", receiver.log_text());
    exactly_once(&read_lines(&receiver.path("received.log")), "d", n);
}

#[test]
fn a_replacement_with_another_disk_buffer_directory_leaves_the_old_one_kept() {
    let (mut lf, mut receiver, n) = replaced_with_records_on_disk("buffer2");
    lf.wait_for_log("delivered after the next start", Duration::from_secs(20));
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(
        lf.final_counter("logferry_buffer_disk_kept_records_total{component=\"out\"}") as usize,
        n
    );
    assert!(receiver.stop().success(), "{}", receiver.log_text());
    assert!(numbers(&read_lines(&receiver.path("received.log")), "d").is_empty());
}

#[test]
fn a_removed_sink_with_a_dead_destination_rejects_what_it_held() {
    let dead = format!("127.0.0.1:{}", free_port());
    let keep = "\n[sinks.keep]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/kept.log\"\n";
    let mut lf = Logferry::start(&format!("{}{keep}", relay(&dead)));
    let api = lf.address("api listening");
    let (frames, per) = (10, 100);
    let mut s = queue_for_out(&mut lf, frames, per);

    // the new configuration has no sink `out`: what it holds has nowhere to go
    let without_out = relay(&dead)
        .replace("[sinks.out]", "[sinks.unused]")
        .replace("match = \"**\"", "match = \"nothing.matches.this\"");
    lf.rewrite_config(&format!("{without_out}{keep}"));
    let started = Instant::now();
    let (status, body) = post_reload(api);
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    lf.wait_for_log("have no sink to go to", Duration::from_secs(10));
    // not acknowledged: the client must send them again
    assert_eq!(ack_or_closed(&mut s, Duration::from_millis(500)), Ok(None));

    // the source still serves: a chunk sent now reaches `keep` and is acknowledged
    s.write_all(&frame("d", frames * per..frames * per + 1, "after"))
        .unwrap();
    assert_eq!(
        ack_or_closed(&mut s, Duration::from_secs(10)),
        Ok(Some("after".to_string())),
        "{}",
        lf.log_text()
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(
        lf.final_counter("logferry_reload_rejected_records_total{component=\"out\"}") as usize,
        frames * per
    );
}

/// A forward source feeding sink `dead` (a forward sink to `server`, its
/// 64 KiB queue filled), a tail and a TCP source feeding a healthy file
/// sink, and an API.
fn one_full_queue(server: &str, drain_timeout: &str) -> String {
    format!(
        r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sources.app]
type = "tail"
paths = ["{{dir}}/app.log"]
tag = "ok.tail"

[sources.lines]
type = "tcp"
address = "127.0.0.1:0"
tag = "ok.tcp"

[sinks.dead]
type = "forward"
match = "d"
servers = [{{ address = "{server}" }}]
reconnect_min = "50ms"
reconnect_max = "200ms"
drain_timeout = "{drain_timeout}"
buffer = {{ max_bytes = "64KiB" }}

[sinks.healthy]
type = "file"
match = "ok.**"
path = "{{dir}}/healthy.log"

[api]
address = "127.0.0.1:0"
"#
    )
}

/// Writes numbered lines (`<prefix>-<i>`) at about `per_second` until
/// `stop`, one `write` each; returns how many.
fn steady_writer(
    mut out: impl Write + Send + 'static,
    prefix: &'static str,
    per_second: u64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut i = 0;
        let started = Instant::now();
        while !stop.load(Ordering::Acquire) {
            out.write_all(format!("{prefix}-{i}\n").as_bytes()).unwrap();
            i += 1;
            let due = started + Duration::from_micros(i as u64 * 1_000_000 / per_second);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        out.flush().unwrap();
        i
    })
}

/// Lines of `prefix` in the healthy sink's file.
fn healthy_count(lf: &Logferry, prefix: &str) -> usize {
    numbers(&read_lines(&lf.path("healthy.log")), prefix).len()
}

/// Sends 40 chunks of 100 numbered records (`d-<i>`, tag `d`, chunk ids
/// `c0`…) for sink `dead`, well past its 64 KiB queue, and waits until the
/// queue is full (the forward source then waits on it while routing).
/// Returns the connection, waiting for acks, and the number of records.
fn fill_dead_queue(lf: &mut Logferry) -> (TcpStream, usize) {
    let api = lf.address("api listening");
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    let (frames, per) = (40, 100);
    for f in 0..frames {
        let mut entries = Vec::new();
        for i in f * per..(f + 1) * per {
            write_message_entry(&mut entries, 1_700_000_000, 0, format!("d-{i}").as_bytes());
        }
        let mut out = Vec::new();
        write_packed_forward(
            &mut out,
            "d",
            &entries,
            per,
            Some(format!("c{f}").as_bytes()),
        );
        s.write_all(&out).unwrap();
    }
    wait_until(
        "the dead sink's queue is full",
        Duration::from_secs(30),
        || {
            let (_, m) = http(api, "GET /metrics");
            metric_value(&m, "logferry_buffer_fill_ratio{component=\"dead\"}") >= 0.9
        },
    );
    (s, frames * per)
}

/// Starts the steady tail and TCP writers of [`one_full_queue`].
fn healthy_flows(lf: &mut Logferry, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<usize>> {
    let tcp = lf.address("tcp source listening source=lines ");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(lf.path("app.log"))
        .unwrap();
    vec![
        steady_writer(file, "t", 200, stop.clone()),
        steady_writer(TcpStream::connect(tcp).unwrap(), "n", 200, stop.clone()),
    ]
}

/// Both healthy flows gain at least `min` lines within `within`.
fn flows_move(lf: &Logferry, min: usize, within: Duration, when: &str) {
    let before = (healthy_count(lf, "t"), healthy_count(lf, "n"));
    wait_until(&format!("healthy flows move {when}"), within, || {
        healthy_count(lf, "t") >= before.0 + min && healthy_count(lf, "n") >= before.1 + min
    });
}

#[test]
fn a_full_queue_freezes_no_reload_and_no_other_flow() {
    let mut receiver = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let live = receiver.forward_addr("in");
    let dead = format!("127.0.0.1:{}", free_port());
    let mut lf = Logferry::start(&one_full_queue(&dead, "3s"));
    let api = lf.address("api listening");
    std::fs::write(lf.path("app.log"), "").unwrap();
    let (mut s, records) = fill_dead_queue(&mut lf);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = healthy_flows(&mut lf, &stop);
    flows_move(&lf, 200, Duration::from_secs(15), "before any reload");

    // SIGHUP with the configuration unchanged (logrotate's postrotate):
    // a no-op that answers at once; the flows go on
    lf.signal(libc::SIGHUP);
    lf.wait_for_log("nothing changed", Duration::from_secs(10));
    flows_move(
        &lf,
        400,
        Duration::from_secs(10),
        "after an unchanged SIGHUP",
    );

    // the dead sink's address corrected: the reload ends within its
    // drain_timeout (3 s) plus a little, the flows move meanwhile, and
    // what the dead sink held reaches the new receiver
    lf.rewrite_config(&one_full_queue(&live.to_string(), "3s"));
    let reload = std::thread::spawn(move || {
        let started = Instant::now();
        let answer = post_reload(api);
        (answer, started.elapsed())
    });
    flows_move(&lf, 200, Duration::from_secs(3), "during the reload");
    let ((status, body), took) = reload.join().unwrap();
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    assert!(took < Duration::from_secs(15), "the reload took {took:?}");
    flows_move(&lf, 400, Duration::from_secs(10), "after the reload");
    for f in 0..records / 100 {
        match ack_or_closed(&mut s, Duration::from_secs(30)) {
            Ok(Some(_)) => {}
            other => panic!("ack {f}: {other:?}\n{}", lf.log_text()),
        }
    }

    stop.store(true, Ordering::Release);
    let written: Vec<usize> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    wait_until(
        "every healthy line arrives",
        Duration::from_secs(20),
        || healthy_count(&lf, "t") >= written[0] && healthy_count(&lf, "n") >= written[1],
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    let healthy = read_lines(&lf.path("healthy.log"));
    exactly_once(&healthy, "t", written[0]);
    exactly_once(&healthy, "n", written[1]);
    assert!(receiver.stop().success(), "{}", receiver.log_text());
    exactly_once(&read_lines(&receiver.path("received.log")), "d", records);
}

#[test]
fn a_stop_signal_during_a_reload_is_served_at_once() {
    let dead = format!("127.0.0.1:{}", free_port());
    let mut lf = Logferry::start(&one_full_queue(&dead, "60s"));
    let api = lf.address("api listening");
    let _ = fill_dead_queue(&mut lf);
    // replaced by another dead destination, with a short drain_timeout:
    // the reload waits up to the old sink's 60 s
    let other = format!("127.0.0.1:{}", free_port());
    lf.rewrite_config(&one_full_queue(&other, "2s"));
    let reload = std::thread::spawn(move || post_reload(api));
    std::thread::sleep(Duration::from_secs(2));
    let started = Instant::now();
    lf.signal(libc::SIGTERM);
    let status = lf.wait(Duration::from_secs(30));
    let took = started.elapsed();
    // the old sink is stopped at once, the new one drains for its 2 s
    assert!(
        took < Duration::from_secs(12),
        "stopped after {took:?}\n{}",
        lf.log_text()
    );
    assert!(status.success(), "{}", lf.log_text());
    let _ = reload.join();
}

#[test]
fn a_sink_that_starts_in_neither_configuration_acknowledges_nothing() {
    use std::os::fd::AsRawFd;
    let mut lf = Logferry::start(&config("first/a.log", ""));
    let api = lf.address("api listening");
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    s.write_all(&frame("d", 0..10, "c0")).unwrap();
    assert_eq!(
        ack_or_closed(&mut s, Duration::from_secs(10)),
        Ok(Some("c0".into()))
    );
    // the new configuration's disk buffer is locked by another process,
    // and the old one's file can no longer be opened
    let buf = lf.path("buf");
    std::fs::create_dir_all(&buf).unwrap();
    let lock = std::fs::File::create(buf.join("lock")).unwrap();
    // SAFETY: flock on a descriptor this test owns
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    std::fs::remove_dir_all(lf.path("first")).unwrap();
    std::fs::write(lf.path("first"), "").unwrap();
    let new = config("second.log", "").replace(
        "path = \"{dir}/second.log\"",
        &format!(
            "path = \"{{dir}}/second.log\"\nbuffer = {{ type = \"disk\", dir = \"{}\" }}",
            buf.display()
        ),
    );
    lf.rewrite_config(&new);
    let (status, body) = post_reload(api);
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("partly applied"), "{body}");
    // what the sink's match takes now is held: not acknowledged, not lost
    s.write_all(&frame("d", 10..20, "c1")).unwrap();
    assert_eq!(ack_or_closed(&mut s, Duration::from_secs(2)), Ok(None));
    let metrics = api_get(api, "/metrics");
    assert_eq!(
        metric_value(&metrics, "logferry_router_unrouted_records_total"),
        0.0
    );
    // the lock let go: the next reload hands what was held to the sink
    // that starts then
    drop(lock);
    let (status, body) = post_reload(api);
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    assert_eq!(
        ack_or_closed(&mut s, Duration::from_secs(10)),
        Ok(Some("c1".into())),
        "{}",
        lf.log_text()
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    let got = read_lines(&lf.path("second.log"));
    assert_eq!(numbers(&got, "d"), (10..20).collect::<Vec<_>>());
}

#[test]
fn a_refused_reload_never_quotes_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logferry.toml");
    std::fs::write(
        &path,
        config("a.log", "").replace("{dir}", &dir.path().display().to_string()),
    )
    .unwrap();
    let mut lf = Logferry::spawn(
        std::process::Command::new(BIN)
            .args(["run", "--config"])
            .arg(&path)
            .env("LF_TEST_SECRET_ADDRESS", "secret-host-8c2f.internal:99999"),
        dir,
    );
    let api = lf.address("api listening");
    // each of these makes a message that quotes the value: a port out of
    // range, a number where librdkafka options take strings
    lf.rewrite_config(&format!(
        r#"{}
[sources.other]
type = "forward"
address = "${{LF_TEST_SECRET_ADDRESS}}"

[sinks.k]
type = "kafka"
match = "none"
brokers = ["127.0.0.1:9"]
topic = "t"
librdkafka_options = {{ "sasl.password" = 73519024681 }}
"#,
        config("a.log", "")
    ));
    let (status, body) = post_reload(api);
    assert_eq!(status, 422, "{body}");
    for secret in ["secret-host-8c2f", "73519024681"] {
        assert!(!body.contains(secret), "{secret} in the answer:\n{body}");
    }
    // still says what and where
    assert!(
        body.contains("${LF_TEST_SECRET_ADDRESS}") && body.contains("sources.other"),
        "{body}"
    );
    assert!(body.contains("***") && body.contains("sinks.k"), "{body}");
    assert!(lf.stop().success(), "{}", lf.log_text());
    let log = lf.log_text();
    assert!(log.contains("configuration reload rejected"), "{log}");
    for secret in ["secret-host-8c2f", "73519024681"] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
}

#[test]
fn a_disk_buffered_sink_is_replaced_while_a_source_waits_on_another_full_queue() {
    // `buffered` first, `dead` second: a forward connection routing to both
    // waits on `dead`'s full queue holding the routes the reload replaces
    let cfg = |write_buffer: &str, dead: &str| {
        format!(
            r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.buffered]
type = "file"
match = "**"
path = "{{dir}}/buffered.log"
write_buffer_bytes = "{write_buffer}"
buffer = {{ type = "disk", dir = "{{dir}}/buffer" }}

[sinks.dead]
type = "forward"
match = "d"
servers = [{{ address = "{dead}" }}]
buffer = {{ max_bytes = "64KiB" }}

[api]
address = "127.0.0.1:0"
"#
        )
    };
    let dead = format!("127.0.0.1:{}", free_port());
    let mut lf = Logferry::start(&cfg("1MiB", &dead));
    let (_waiting, _) = fill_dead_queue(&mut lf);
    let api = lf.address("api listening");
    lf.rewrite_config(&cfg("64KiB", &dead));
    let (status, body) = post_reload(api);
    // the replacement opens the same disk buffer directory
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    let mut s = TcpStream::connect(lf.forward_addr("in")).unwrap();
    s.write_all(&frame("after", 0..10, "a")).unwrap();
    wait_until(
        "records reach the new sink",
        Duration::from_secs(20),
        || numbers(&read_lines(&lf.path("buffered.log")), "after").len() == 10,
    );
}

#[test]
fn a_send_on_the_replaced_routes_to_a_closed_disk_buffer_goes_to_its_replacement() {
    // `dead` first, `buffered` second: a forward connection routing to
    // both waits on `dead`'s full queue holding the routes the reload
    // replaces; the reload replaces both, so that send goes on to
    // `buffered`'s old disk buffer once it is closed. The connection made
    // before the reload stays open and every chunk is acknowledged once,
    // after both sinks have it.
    let cfg = |server: &str, write_buffer: &str| {
        format!(
            r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.dead]
type = "forward"
match = "d"
servers = [{{ address = "{server}" }}]
reconnect_min = "50ms"
reconnect_max = "200ms"
drain_timeout = "1s"
buffer = {{ max_bytes = "64KiB" }}

[sinks.buffered]
type = "file"
match = "**"
path = "{{dir}}/buffered.log"
write_buffer_bytes = "{write_buffer}"
buffer = {{ type = "disk", dir = "{{dir}}/buffer" }}

[api]
address = "127.0.0.1:0"
"#
        )
    };
    let mut receiver = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/received.log\"\n",
    );
    let live = receiver.forward_addr("in");
    let dead = format!("127.0.0.1:{}", free_port());
    let mut lf = Logferry::start(&cfg(&dead, "1MiB"));
    let (mut s, records) = fill_dead_queue(&mut lf);
    let api = lf.address("api listening");
    lf.rewrite_config(&cfg(&live.to_string(), "64KiB"));
    let (status, body) = post_reload(api);
    assert_eq!(status, 200, "{body}\n{}", lf.log_text());
    assert!(body.contains("sinks: 0 kept, 2 replaced"), "{body}");

    let frames = records / 100;
    let mut acks = Vec::new();
    for _ in 0..frames {
        match ack_or_closed(&mut s, Duration::from_secs(30)) {
            Ok(Some(a)) => acks.push(a),
            other => panic!("ack {}: {other:?}\n{}", acks.len(), lf.log_text()),
        }
    }
    acks.sort();
    let mut want: Vec<String> = (0..frames).map(|f| format!("c{f}")).collect();
    want.sort();
    assert_eq!(acks, want);
    // the same connection goes on (tag `app`: for `buffered` alone)
    s.write_all(&frame("d", records..records + 10, "after"))
        .unwrap();
    assert_eq!(
        ack_or_closed(&mut s, Duration::from_secs(30)),
        Ok(Some("after".to_string())),
        "{}",
        lf.log_text()
    );
    // acknowledged once on disk; a stop would keep the rest there
    wait_until(
        "the disk buffer is written out",
        Duration::from_secs(20),
        || numbers(&read_lines(&lf.path("buffered.log")), "d").len() >= records + 10,
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_eq!(
        lf.final_counter(
            "logferry_forward_connection_errors_total{component=\"in\",kind=\"sink_stopped\"}"
        ),
        0,
        "{}",
        lf.log_text()
    );
    exactly_once(&read_lines(&lf.path("buffered.log")), "d", records + 10);
    assert!(receiver.stop().success(), "{}", receiver.log_text());
    // the chunk sent after (tag `app`) is not for `dead`
    exactly_once(&read_lines(&receiver.path("received.log")), "d", records);
}
