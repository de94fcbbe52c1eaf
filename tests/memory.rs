//! The memory budget (`[limits] memory`): with many busy forward
//! connections and a slow downstream, logferry stops reading instead of
//! buffering, its peak RSS stays under the budget plus a fixed overhead,
//! and every record arrives once the downstream catches up.
//!
//! The downstream is a forward receiver in this test that reads at a set
//! rate until told to read at full speed. The forward sink's queue is made
//! large (1GiB) so that only the budget can bound memory.
//!
//! Environment (for measuring; docs/BENCHMARKS.md "Memory budget"):
//! - `LOGFERRY_MEMORY_CONNS`: connections of the many-connections test (1000);
//! - `LOGFERRY_MEMORY_BUDGET`: the budget (32MiB); empty: no `[limits]`
//!   table at all, for binaries that predate it;
//! - `LOGFERRY_MEMORY_BIN`: the logferry binary to run (the one built here);
//! - `LOGFERRY_SLOW_CONSUMER_SECS`: length of the slow-consumer test (15).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::*;
use logferry::protocol::forward::{
    ack_response, next_frame, write_message_entry, write_packed_forward, Limits, Scan,
};

const MIB: u64 = 1024 * 1024;

/// The budget the tests run with.
const BUDGET: &str = "32MiB";
const BUDGET_BYTES: u64 = 32 * MIB;

/// What logferry's peak RSS may exceed the budget by, once the program's
/// own file pages at rest are taken off ([`program_pages`]): the process
/// at rest (runtime, threads, allocator: about 6 MiB of anonymous memory
/// for a debug build), per-connection state of 1000 connections, the
/// forward sink's frame being sent (up to its 1 MiB `batch_bytes`) and the
/// allocator's slack around freed frames. These limits once held the
/// program's pages too (18 MiB of a 23 MiB debug process at rest): each is
/// that much lower than it was. docs/operations.md states the same figure.
const OVERHEAD: u64 = 30 * MIB;

/// The pages of the program file itself that a process at rest holds
/// (RssFile: its code and read-only data, shared with the page cache and
/// given back under pressure): part of every RSS reading, and no part of
/// what the budget governs. They grow with the binary, not with load (31
/// MiB for a debug build with VRL's standard library linked in).
fn program_pages(pid: u32) -> u64 {
    vm_bytes(pid, "RssFile")
}

/// The same for 1,000 TCP connections sending lines: line batches are
/// slices of 128 KiB read buffers, each pinned until its last batch is
/// written, and glibc's heap keeps the holes they leave (69–121 MiB
/// measured over the budget at the peak, while the downstream catches up;
/// it varies from run to run). docs/operations.md states the same figure.
const TCP_OVERHEAD: u64 = 142 * MIB;

/// The same for 1,000 HTTP connections posting 64 KiB bodies: hyper's own
/// per-connection buffers and state are not charged, and the allocator
/// keeps what they leave (166–173 MiB peak measured, against 362 MiB
/// before request bodies were charged while read). docs/operations.md
/// states the same figure.
const HTTP_OVERHEAD: u64 = 162 * MIB;

/// The same for 10 HTTP/2 connections of 100 streams each posting 64 KiB
/// bodies: what flow control lets each connection hold before its streams
/// read it (1 MiB), the bodies being put together, and the allocator's
/// slack (62 MiB over the budget measured with a debug build, 28 MiB with
/// a release build). docs/operations.md states the same figure.
const HTTP2_OVERHEAD: u64 = 62 * MIB;

/// A forward receiver: counts records, answers acks, and reads at most
/// `slow_rate` bytes per second until `fast` is set.
struct SlowReceiver {
    addr: SocketAddr,
    records: Arc<AtomicU64>,
    fast: Arc<AtomicBool>,
}

impl SlowReceiver {
    fn start(slow_rate: u64) -> SlowReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let records = Arc::new(AtomicU64::new(0));
        let fast = Arc::new(AtomicBool::new(false));
        let (r, f) = (records.clone(), fast.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (r, f) = (r.clone(), f.clone());
                std::thread::spawn(move || receive(stream, slow_rate, &r, &f));
            }
        });
        SlowReceiver {
            addr,
            records,
            fast,
        }
    }

    /// Waits until `n` records have arrived; on a timeout, fails with
    /// logferry's memory metrics.
    fn wait_for(&self, n: u64, timeout: Duration, lf: &mut Logferry) {
        let deadline = Instant::now() + timeout;
        while self.records.load(Ordering::Relaxed) < n {
            if Instant::now() > deadline {
                let metrics = metrics(lf);
                let memory: Vec<&str> = metrics
                    .lines()
                    .filter(|l| {
                        l.starts_with("logferry_memory") || l.starts_with("logferry_buffer")
                    })
                    .collect();
                panic!(
                    "{} of {n} records arrived; {memory:#?}",
                    self.records.load(Ordering::Relaxed)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// logferry's `/metrics` text.
fn metrics(lf: &mut Logferry) -> String {
    let addr = lf.address("api listening");
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text
}

fn receive(mut s: TcpStream, slow_rate: u64, records: &AtomicU64, fast: &AtomicBool) {
    let limits = Limits {
        max_frame_bytes: 64 * MIB as usize,
        max_decompressed_bytes: 64 * MIB as usize,
    };
    let mut buf = BytesMut::new();
    let mut scan = Scan::default();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let want = if fast.load(Ordering::Relaxed) {
            chunk.len()
        } else {
            // slow_rate bytes per second, in reads every 10 ms
            ((slow_rate / 100) as usize).clamp(1, chunk.len())
        };
        let n = match s.read(&mut chunk[..want]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(frame) = next_frame(&mut buf, &limits, &mut scan).unwrap() {
            records.fetch_add(frame.count as u64, Ordering::Relaxed);
            if let Some(c) = &frame.options.chunk {
                let _ = s.write_all(&ack_response(c));
            }
        }
        if !fast.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// One PackedForward chunk of about `bytes` bytes; returns it and its
/// record count.
fn packed_chunk(bytes: usize) -> (Vec<u8>, u64) {
    let mut entries = Vec::new();
    let mut count = 0;
    while entries.len() < bytes {
        write_message_entry(
            &mut entries,
            1_700_000_000,
            0,
            format!("{count:0100}").as_bytes(),
        );
        count += 1;
    }
    let mut frame = Vec::new();
    write_packed_forward(&mut frame, "mem.test", &entries, count, None);
    (frame, count as u64)
}

/// About `bytes` of 100-byte newline-terminated lines, and their count.
fn lines_chunk(bytes: usize) -> (Vec<u8>, u64) {
    let count = bytes / 100;
    let mut chunk = Vec::with_capacity(count * 100);
    for i in 0..count {
        let line = format!("line {i:08} ");
        chunk.extend_from_slice(line.as_bytes());
        chunk.resize(chunk.len() + 99 - line.len(), b'x');
        chunk.push(b'\n');
    }
    (chunk, count as u64)
}

/// The budget from `LOGFERRY_MEMORY_BUDGET`, else [`BUDGET`].
fn budget() -> String {
    std::env::var("LOGFERRY_MEMORY_BUDGET").unwrap_or_else(|_| BUDGET.into())
}

/// The source the clients write to.
#[derive(Clone, Copy)]
enum Input {
    /// Forward protocol: PackedForward chunks.
    Forward,
    /// TCP: newline-delimited lines.
    Tcp,
    /// HTTP: keep-alive POSTs of text lines.
    Http,
}

/// Starts logferry: a forward source, a forward sink to `downstream` with
/// a 1GiB queue, and `budget` (none if empty).
fn start(downstream: SocketAddr, budget: &str) -> Logferry {
    start_with(Input::Forward, downstream, budget)
}

/// [`start`] with the given source.
fn start_with(input: Input, downstream: SocketAddr, budget: &str) -> Logferry {
    let source = match input {
        Input::Forward => "type = \"forward\"",
        Input::Tcp => "type = \"tcp\"\ntag = \"mem.test\"",
        Input::Http => "type = \"http\"\nrequest_timeout = \"300s\"\nidle_timeout = \"300s\"",
    };
    let limits = if budget.is_empty() {
        String::new()
    } else {
        format!("[limits]\nmemory = \"{budget}\"\n")
    };
    let config = format!(
        r#"{limits}
[sources.in]
{source}
address = "127.0.0.1:0"
max_connections = 4096

[sinks.out]
type = "forward"
match = "**"
servers = [{{ address = "{downstream}" }}]

[sinks.out.buffer]
max_bytes = "1GiB"

[api]
address = "127.0.0.1:0"
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logferry.toml");
    std::fs::write(&path, config).unwrap();
    let bin = std::env::var("LOGFERRY_MEMORY_BIN").unwrap_or_else(|_| BIN.into());
    Logferry::spawn(Command::new(bin).args(["run", "--config"]).arg(&path), dir)
}

/// Writes `chunk` `repeat` times on each of `conns` connections, all at
/// once (non-blocking), until everything is written or `stop` is set.
/// Returns how many chunks were written whole, and the connections (open
/// until logferry has read everything).
fn send_on_many(
    addr: SocketAddr,
    conns: usize,
    chunk: &[u8],
    repeat: Option<u64>,
    stop: &AtomicBool,
) -> (u64, Vec<TcpStream>) {
    let mut streams: Vec<(TcpStream, u64)> = (0..conns)
        .map(|_| {
            let s = TcpStream::connect(addr).unwrap();
            s.set_nonblocking(true).unwrap();
            (s, 0)
        })
        .collect();
    let total = repeat.map(|r| r * chunk.len() as u64);
    loop {
        let mut progress = false;
        let mut done = 0;
        for (s, sent) in &mut streams {
            if total.is_some_and(|t| *sent >= t) {
                done += 1;
                continue;
            }
            let at = (*sent % chunk.len() as u64) as usize;
            let end = match total {
                Some(t) => chunk.len().min(at + (t - *sent) as usize),
                None => chunk.len(),
            };
            match s.write(&chunk[at..end]) {
                Ok(n) => {
                    *sent += n as u64;
                    progress |= n > 0;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("write: {e}"),
            }
        }
        if done == streams.len() {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            // finish the chunk each connection is in, so every record counts
            for (s, sent) in &mut streams {
                let at = (*sent % chunk.len() as u64) as usize;
                if at > 0 {
                    s.set_nonblocking(false).unwrap();
                    s.write_all(&chunk[at..]).unwrap();
                    *sent += (chunk.len() - at) as u64;
                }
            }
            break;
        }
        if !progress {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let written = streams
        .iter()
        .map(|(_, sent)| sent / chunk.len() as u64)
        .sum();
    (written, streams.into_iter().map(|(s, _)| s).collect())
}

/// 1,000 connections each send ~64 KiB PackedForward chunks to a
/// downstream that reads slowly: logferry's peak RSS stays under the
/// budget plus the overhead, the budget was reached (sources waited), and
/// every record arrives once the downstream reads at full speed.
#[test]
fn a_thousand_busy_connections_stay_within_the_memory_budget() {
    busy_connections_stay_within_the_budget(Input::Forward);
}

/// The same with TCP lines: the TCP source's read buffers are charged
/// before they are allocated, not only the batches cut from them.
#[test]
fn a_thousand_busy_tcp_connections_stay_within_the_memory_budget() {
    busy_connections_stay_within_the_budget(Input::Tcp);
}

/// The same with HTTP requests: bodies are charged while they are read,
/// not once they are whole.
#[test]
fn a_thousand_busy_http_connections_stay_within_the_memory_budget() {
    busy_connections_stay_within_the_budget(Input::Http);
}

fn busy_connections_stay_within_the_budget(input: Input) {
    raise_nofile();
    let conns: usize = std::env::var("LOGFERRY_MEMORY_CONNS")
        .map(|v| v.parse().unwrap())
        .unwrap_or(1000);
    let receiver = SlowReceiver::start(2 * MIB);
    let mut lf = start_with(input, receiver.addr, &budget());
    let addr = match input {
        Input::Forward => lf.forward_addr("in"),
        Input::Tcp => lf.address("tcp source listening"),
        Input::Http => lf.address("http source listening"),
    };
    std::thread::sleep(Duration::from_millis(300));
    let at_rest = vm_bytes(lf.pid(), "VmRSS");
    let program = program_pages(lf.pid());

    let (chunk, per_chunk) = match input {
        Input::Forward => packed_chunk(64 * 1024),
        Input::Tcp => lines_chunk(64 * 1024),
        Input::Http => {
            let (body, count) = lines_chunk(64 * 1024);
            let mut request = format!(
                "POST /mem.test HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            request.extend_from_slice(&body);
            (request, count)
        }
    };
    const CHUNKS: u64 = 3;
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (chunk, stop) = (chunk.clone(), stop.clone());
        std::thread::spawn(move || send_on_many(addr, conns, &chunk, Some(CHUNKS), &stop))
    };
    // the downstream is slow: logferry fills up to its budget
    std::thread::sleep(Duration::from_secs(8));
    let during = vm_bytes(lf.pid(), "VmRSS");
    receiver.fast.store(true, Ordering::Relaxed);
    let (written, _open) = sender.join().unwrap();
    assert_eq!(written, conns as u64 * CHUNKS);
    receiver.wait_for(written * per_chunk, Duration::from_secs(120), &mut lf);
    let peak = vm_bytes(lf.pid(), "VmHWM");
    eprintln!(
        "{conns} connections, {} MiB sent: RSS at rest {} MiB, while slow {} MiB, peak {} MiB",
        written * chunk.len() as u64 / MIB,
        at_rest / MIB,
        during / MIB,
        peak / MIB
    );
    lf.stop();
    assert_eq!(
        receiver.records.load(Ordering::Relaxed),
        written * per_chunk,
        "every record arrives, once"
    );
    let overhead = match input {
        Input::Forward => OVERHEAD,
        Input::Tcp => TCP_OVERHEAD,
        Input::Http => HTTP_OVERHEAD,
    };
    assert!(
        peak - program <= BUDGET_BYTES + overhead,
        "peak RSS {} MiB less the program's {} MiB is above the budget ({BUDGET}) + {} MiB",
        peak / MIB,
        program / MIB,
        overhead / MIB
    );
    if written * chunk.len() as u64 > 2 * BUDGET_BYTES {
        assert!(
            lf.final_counter("logferry_memory_waits_total") > 0,
            "the budget was reached:\n{}",
            lf.log_text()
        );
        let warnings = lf.log_text().matches("memory budget reached").count();
        assert!(
            (1..=3).contains(&warnings),
            "said once, rate-limited: {warnings} warnings"
        );
    }
}

/// HTTP/2: 10 connections, each with 100 streams at once posting 64 KiB
/// bodies, to a downstream that reads slowly: the streams' bodies are
/// charged as they are read (the connections' reads are not), so peak RSS
/// stays under the budget plus the overhead, and every record arrives.
#[test]
fn many_http2_streams_stay_within_the_memory_budget() {
    const CONNS: usize = 10;
    const REQUESTS: usize = 200;
    let receiver = SlowReceiver::start(2 * MIB);
    let mut lf = start_with(Input::Http, receiver.addr, &budget());
    let addr = lf.address("http source listening");
    let program = program_pages(lf.pid());
    let (body, per_body) = lines_chunk(64 * 1024);
    let senders: Vec<_> = (0..CONNS)
        .map(|_| {
            let body = body.clone();
            std::thread::spawn(move || {
                let requests = (0..REQUESTS)
                    .map(|_| ("/mem.test".to_string(), "text/plain", body.clone()))
                    .collect();
                h2_posts(addr, requests)
            })
        })
        .collect();
    // the downstream is slow: logferry fills up to its budget
    std::thread::sleep(Duration::from_secs(8));
    receiver.fast.store(true, Ordering::Relaxed);
    for s in senders {
        for answer in s.join().unwrap() {
            assert_eq!(answer.map(|a| a.0), Ok(200));
        }
    }
    let sent = (CONNS * REQUESTS) as u64;
    receiver.wait_for(sent * per_body, Duration::from_secs(120), &mut lf);
    let peak = vm_bytes(lf.pid(), "VmHWM");
    eprintln!(
        "{CONNS} HTTP/2 connections, {} MiB sent: peak RSS {} MiB",
        sent * body.len() as u64 / MIB,
        peak / MIB
    );
    lf.stop();
    assert_eq!(
        receiver.records.load(Ordering::Relaxed),
        sent * per_body,
        "every record arrives, once"
    );
    assert!(
        peak - program <= BUDGET_BYTES + HTTP2_OVERHEAD,
        "peak RSS {} MiB less the program's {} MiB is above the budget ({BUDGET}) + {} MiB",
        peak / MIB,
        program / MIB,
        HTTP2_OVERHEAD / MIB
    );
    assert!(
        lf.final_counter("logferry_memory_waits_total") > 0,
        "the budget was reached:\n{}",
        lf.log_text()
    );
}

/// A downstream slower than the input, for `LOGFERRY_SLOW_CONSUMER_SECS`
/// (15; run it with 60 for the long version): RSS (its own memory,
/// `RssAnon`) sampled every second
/// levels off instead of growing with the records waiting, and every
/// record sent arrives once the downstream reads at full speed.
#[test]
fn a_slow_consumer_at_full_input_rate_keeps_rss_flat() {
    raise_nofile();
    let secs: u64 = std::env::var("LOGFERRY_SLOW_CONSUMER_SECS")
        .map(|v| v.parse().unwrap())
        .unwrap_or(15)
        .max(9);
    let receiver = SlowReceiver::start(4 * MIB);
    let mut lf = start(receiver.addr, &budget());
    let addr = lf.forward_addr("in");

    let (chunk, per_chunk) = packed_chunk(64 * 1024);
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (chunk, stop) = (chunk.clone(), stop.clone());
        std::thread::spawn(move || send_on_many(addr, 64, &chunk, None, &stop))
    };
    let mut samples = Vec::new();
    for _ in 0..secs {
        std::thread::sleep(Duration::from_secs(1));
        // its own memory: code mapped in again as it first runs after the
        // start-up code was let go of is no part of what the budget governs
        samples.push(vm_bytes(lf.pid(), "RssAnon"));
    }
    stop.store(true, Ordering::Relaxed);
    receiver.fast.store(true, Ordering::Relaxed);
    let (written, _open) = sender.join().unwrap();
    receiver.wait_for(written * per_chunk, Duration::from_secs(120), &mut lf);
    let mib: Vec<u64> = samples.iter().map(|s| s / MIB).collect();
    eprintln!("RssAnon each second (MiB): {mib:?}; {written} chunks sent");
    lf.stop();
    assert_eq!(
        receiver.records.load(Ordering::Relaxed),
        written * per_chunk
    );
    // the first plateau: the highest sample of the first third, after the
    // first seconds of warming up
    let third = samples.len() / 3;
    let plateau = *samples[2..third.max(3)].iter().max().unwrap();
    let last = *samples[samples.len() - third..].iter().max().unwrap();
    assert!(
        last <= plateau + 8 * MIB,
        "RSS grows with a slow consumer: plateau {} MiB, later {} MiB ({mib:?})",
        plateau / MIB,
        last / MIB
    );
    assert!(last <= BUDGET_BYTES + OVERHEAD, "{mib:?}");
}

/// A frame larger than the whole budget is read alone instead of waiting
/// for ever, while other connections keep being served.
#[test]
fn a_frame_larger_than_the_budget_is_read_alone() {
    let receiver = SlowReceiver::start(MIB);
    receiver.fast.store(true, Ordering::Relaxed);
    let mut lf = start(receiver.addr, "1MiB");
    let addr = lf.forward_addr("in");
    let (big, big_count) = packed_chunk(4 * MIB as usize);
    let (small, small_count) = packed_chunk(64 * 1024);
    let mut a = TcpStream::connect(addr).unwrap();
    let mut b = TcpStream::connect(addr).unwrap();
    for _ in 0..3 {
        a.write_all(&big).unwrap();
        b.write_all(&small).unwrap();
    }
    receiver.wait_for(
        3 * (big_count + small_count),
        Duration::from_secs(60),
        &mut lf,
    );
    lf.stop();
    assert_eq!(
        receiver.records.load(Ordering::Relaxed),
        3 * (big_count + small_count)
    );
}

/// An idle connection waits for its client with a tiny read (it holds no
/// read buffer meanwhile); a TLS ClientHello arriving a byte at a time is
/// still recognised on a plain port.
#[test]
fn a_tls_hello_after_an_idle_wait_is_still_recognised() {
    let mut lf = Logferry::start(FORWARD_TO_FILE);
    let addr = lf.forward_addr("in");
    let mut s = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    s.write_all(&[0x16]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    s.write_all(&[0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5])
        .unwrap();
    lf.wait_for_log("TLS handshake on a plain port", Duration::from_secs(10));
}

/// An agent lets go of the code only its start ran: soon after the start
/// its program pages (RssFile) fall well below what the start left
/// resident, and it goes on tailing and writing every line with its code
/// mapped again as it runs.
#[test]
fn an_agent_lets_go_of_its_start_up_code_and_keeps_working() {
    let mut lf = Logferry::start(
        "[sources.app]\ntype = \"tail\"\npaths = [\"{dir}/app.log\"]\ntag = \"app\"\nread_from_head = true\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/out.log\"\nformat = \"raw\"\n",
    );
    lf.wait_for_log("open-file limit", Duration::from_secs(10));
    let at_start = program_pages(lf.pid());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut now = at_start;
    while now * 4 > at_start * 3 {
        assert!(
            Instant::now() < deadline,
            "the program's pages stayed at {} KiB (at the start {} KiB)",
            now / 1024,
            at_start / 1024
        );
        std::thread::sleep(Duration::from_millis(200));
        now = program_pages(lf.pid());
    }
    let mut app = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(lf.path("app.log"))
        .unwrap();
    for i in 0..100 {
        writeln!(app, "line {i}").unwrap();
    }
    let lines = wait_for_lines(&lf.path("out.log"), 100, Duration::from_secs(20));
    assert_eq!(lines.len(), 100);
    assert!(lf.stop().success());
}
