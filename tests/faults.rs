//! Fault tests: a tail → relay → receiver chain (and a Kafka pipeline) with
//! one tier killed (-9), stopped or starved of disk while numbered lines are
//! written at a steady rate. At the end every number is counted in the
//! output: each one present, duplicates within the window that could not
//! have been acknowledged.
//!
//! `LOGFERRY_FAULT_SCALE=K` multiplies the record counts (and with them the
//! run times) by K for a long soak; scripts/faults.sh runs it.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::kafka::{consume, OwnBroker};
use common::*;

/// Records per forward chunk and chunks awaiting an ack, on every forward
/// sink: a hop never holds more than `WINDOW` records sent but unacked.
const BATCH: usize = 500;
const IN_FLIGHT: usize = 8;
const WINDOW: usize = BATCH * IN_FLIGHT;

/// Lines per second the writer appends.
const RATE: usize = 5_000;

fn scale() -> usize {
    std::env::var("LOGFERRY_FAULT_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&k| k > 0)
        .unwrap_or(1)
}

/// A thread appending `{prefix}-{i}{pad}` for i in 0..n to `path` at
/// `rate` lines per second (50 per write); `written` counts the lines.
struct SteadyWriter {
    written: Arc<AtomicUsize>,
    handle: std::thread::JoinHandle<()>,
}

impl SteadyWriter {
    fn spawn(path: &Path, prefix: &'static str, n: usize, rate: usize, pad: usize) -> Self {
        let written = Arc::new(AtomicUsize::new(0));
        let count = written.clone();
        let path = path.to_path_buf();
        let handle = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            let pad = " ".repeat(pad);
            let start = Instant::now();
            let mut i = 0;
            while i < n {
                let end = (i + 50).min(n);
                let text: String = (i..end).map(|k| format!("{prefix}-{k}{pad}\n")).collect();
                f.write_all(text.as_bytes()).unwrap();
                i = end;
                count.store(i, Ordering::SeqCst);
                let due = start + Duration::from_secs_f64(i as f64 / rate as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        });
        SteadyWriter { written, handle }
    }

    fn written(&self) -> usize {
        self.written.load(Ordering::SeqCst)
    }

    fn wait_for(&self, n: usize) {
        while self.written() < n {
            assert!(!self.handle.is_finished(), "the writer stopped early");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn join(self) {
        self.handle.join().unwrap();
    }
}

/// How often each `{prefix}-i` (0 ≤ i < n) is in `path`, and the lines that
/// are none of them (torn or foreign).
fn tally(path: &Path, prefix: &str, n: usize) -> (Vec<u32>, Vec<String>) {
    let mut seen = vec![0u32; n];
    let mut odd = Vec::new();
    for l in read_lines(path) {
        let i = l
            .strip_prefix(prefix)
            .and_then(|s| s.strip_prefix('-'))
            .and_then(|s| s.trim_end_matches(' ').parse::<usize>().ok())
            .filter(|&i| i < n);
        match i {
            Some(i) => seen[i] += 1,
            None => odd.push(l),
        }
    }
    (seen, odd)
}

/// Waits until every `{prefix}-i` is in `path`; returns the duplicates.
/// `logs` is printed on a timeout.
fn wait_for_every_number(
    path: &Path,
    prefix: &str,
    n: usize,
    timeout: Duration,
    logs: impl Fn() -> String,
) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let (seen, odd) = tally(path, prefix, n);
        assert!(
            odd.is_empty(),
            "{} lines in {} that are no record: {:?}",
            odd.len(),
            path.display(),
            &odd[..odd.len().min(5)]
        );
        let missing = seen.iter().filter(|&&c| c == 0).count();
        if missing == 0 {
            return seen.iter().map(|&c| c as usize - 1).sum();
        }
        if Instant::now() > deadline {
            let first = seen.iter().position(|&c| c == 0).unwrap();
            panic!(
                "{missing} of {n} records never arrived (first: {prefix}-{first})\n{}",
                logs()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The offset of the tail checkpoint in `state` (one followed file; see
/// src/sources/tail/checkpoint.rs: `<dev> <inode> <born> <head_len>
/// <head_hash> <offset> <size> <path>`); 0 before the first one.
fn checkpoint_offset(state: &Path) -> u64 {
    let text = std::fs::read_to_string(state.join("tail.checkpoint")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .nth(5)
                .and_then(|o| o.parse().ok())
                .unwrap_or_else(|| panic!("malformed checkpoint line {l:?}"))
        })
        .max()
        .unwrap_or(0)
}

/// Lines of `path` that lie wholly before byte `offset`.
fn lines_before(path: &Path, offset: u64) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let end = (offset as usize).min(bytes.len());
    bytes[..end].iter().filter(|&&b| b == b'\n').count()
}

/// The forward sink settings every hop shares: acks, retry forever, and the
/// window that bounds duplicates.
fn forward_sink(to: u16) -> String {
    format!(
        "[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"127.0.0.1:{to}\" }}]\nrequire_ack = true\nmax_attempts = 0\nreconnect_min = \"50ms\"\nreconnect_max = \"500ms\"\nbatch_records = {BATCH}\nmax_in_flight = {IN_FLIGHT}\n"
    )
}

/// agent (tail → forward) → relay (forward → disk-buffered forward) →
/// receiver (forward → file), each restartable with the same ports, the
/// same checkpoint and the same disk buffer.
struct Chain {
    root: tempfile::TempDir,
    relay_port: u16,
    rx_port: u16,
    relay_buffer: String,
    agent: Option<Logferry>,
    relay: Option<Logferry>,
    rx: Option<Logferry>,
}

impl Chain {
    /// `relay_buffer`: the inline table of the relay sink's `buffer`, with
    /// `{buf}` for its directory.
    fn start(relay_buffer: &str) -> Chain {
        let root = tempfile::tempdir().unwrap();
        let relay_buffer = relay_buffer.replace(
            "{buf}",
            &root.path().join("relay-buffer").display().to_string(),
        );
        let mut c = Chain {
            root,
            relay_port: free_port(),
            rx_port: free_port(),
            relay_buffer,
            agent: None,
            relay: None,
            rx: None,
        };
        c.start_rx();
        c.start_relay();
        c.start_agent();
        c
    }

    fn live(&self) -> PathBuf {
        self.root.path().join("app.log")
    }
    fn state(&self) -> PathBuf {
        self.root.path().join("state")
    }
    fn out(&self) -> PathBuf {
        self.root.path().join("out.log")
    }

    fn start_rx(&mut self) {
        let mut rx = Logferry::start(&format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{}\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{}\"\nformat = \"raw\"\n",
            self.rx_port,
            self.out().display()
        ));
        rx.forward_addr("in");
        self.rx = Some(rx);
    }

    fn start_relay(&mut self) {
        let mut relay = Logferry::start(&format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{}\"\n\n{}buffer = {}\n",
            self.relay_port,
            forward_sink(self.rx_port),
            self.relay_buffer
        ));
        relay.forward_addr("in");
        self.relay = Some(relay);
    }

    fn start_agent(&mut self) {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.live())
            .unwrap();
        let mut agent = Logferry::start(&format!(
            "[sources.tail]\ntype = \"tail\"\npaths = [\"{}\"]\ntag = \"app\"\nread_from_head = true\ncheckpoint_dir = \"{}\"\ncheckpoint_interval = \"200ms\"\n\n{}",
            self.live().display(),
            self.state().display(),
            forward_sink(self.relay_port)
        ));
        agent.wait_for_log("following file", Duration::from_secs(20));
        self.agent = Some(agent);
    }

    fn logs(&self) -> String {
        let text = |l: &Option<Logferry>| l.as_ref().map(|l| l.log_text()).unwrap_or_default();
        format!(
            "--- agent\n{}\n--- relay\n{}\n--- receiver\n{}",
            text(&self.agent),
            text(&self.relay),
            text(&self.rx)
        )
    }

    fn wait_for_every_number(&self, n: usize) -> usize {
        wait_for_every_number(
            &self.out(),
            "f",
            n,
            Duration::from_secs(60 * scale() as u64),
            || self.logs(),
        )
    }
}

const DISK_BUFFER: &str =
    "{ type = \"disk\", dir = \"{buf}\", max_bytes = \"256MiB\", fsync = \"interval\" }";

#[derive(Debug, Clone, Copy)]
enum Tier {
    Agent,
    Relay,
    Receiver,
}

/// Kills `tier` with SIGKILL a third of the way through the run (with
/// `LOGFERRY_FAULT_SCALE=K`, K times, evenly spread), restarts it a second
/// later (lines keep being written), and counts every record.
fn kill_9_and_restart(tier: Tier) {
    let n = 30_000 * scale();
    let kills = scale();
    let mut chain = Chain::start(DISK_BUFFER);
    let writer = SteadyWriter::spawn(&chain.live(), "f", n, RATE, 0);
    let mut bound = 0;
    for k in 1..=kills {
        writer.wait_for(n * k / (kills + 2));
        bound += match tier {
            Tier::Agent => {
                chain.agent.as_mut().unwrap().kill();
                // After the kill the agent resends from its checkpoint:
                // only lines past it (read, maybe delivered, not yet
                // checkpointed) can arrive twice. Lines written after the
                // kill count too, which only loosens the bound.
                let offset = checkpoint_offset(&chain.state());
                let written = writer.written();
                let past = written - lines_before(&chain.live(), offset);
                std::thread::sleep(Duration::from_secs(1));
                chain.start_agent();
                past
            }
            Tier::Relay => {
                chain.relay.as_mut().unwrap().kill();
                std::thread::sleep(Duration::from_secs(1));
                chain.start_relay();
                // The agent resends what it sent but had no ack for (its
                // window); the relay replays its buffer from the delivered
                // cursor, which trails what the receiver took by at most
                // the relay's window.
                2 * WINDOW
            }
            Tier::Receiver => {
                chain.rx.as_mut().unwrap().kill();
                std::thread::sleep(Duration::from_secs(1));
                chain.start_rx();
                // The relay resends the chunks the receiver wrote but did
                // not ack: at most its window.
                WINDOW
            }
        };
    }
    assert!(writer.written() < n, "the writer must outlast the kills");
    writer.join();
    let dups = chain.wait_for_every_number(n);
    eprintln!("{tier:?}: {n} records, {kills} kills, {dups} duplicates (bound {bound})");
    assert!(
        dups <= bound,
        "{tier:?}: {dups} duplicates, more than the {bound} that could be unacknowledged"
    );
}

#[test]
fn chain_agent_kill_9_loses_nothing() {
    kill_9_and_restart(Tier::Agent);
}

#[test]
fn chain_relay_kill_9_loses_nothing() {
    kill_9_and_restart(Tier::Relay);
}

/// SIGTERM instead of SIGKILL, to every tier in turn while lines flow:
/// a bounded stop keeps what it could not deliver (disk buffer, tail
/// checkpoint, unacknowledged chunks) for the restart.
#[test]
fn chain_graceful_restarts_of_every_tier_lose_nothing() {
    let n = 40_000 * scale();
    let mut chain = Chain::start(DISK_BUFFER);
    let writer = SteadyWriter::spawn(&chain.live(), "f", n, RATE, 0);
    for (k, tier) in [Tier::Receiver, Tier::Relay, Tier::Agent]
        .into_iter()
        .enumerate()
    {
        writer.wait_for(n * (k + 1) / 5);
        let stopped = match tier {
            Tier::Agent => chain.agent.as_mut().unwrap().stop(),
            Tier::Relay => chain.relay.as_mut().unwrap().stop(),
            Tier::Receiver => chain.rx.as_mut().unwrap().stop(),
        };
        assert!(
            stopped.success(),
            "{tier:?} stopped with {stopped}\n{}",
            chain.logs()
        );
        match tier {
            Tier::Agent => chain.start_agent(),
            Tier::Relay => chain.start_relay(),
            Tier::Receiver => chain.start_rx(),
        }
    }
    assert!(writer.written() < n, "the writer must outlast the restarts");
    writer.join();
    // a stop settles what it can; what it cannot is resent, at most one
    // window per hop per stop
    let bound = 3 * 2 * WINDOW;
    let dups = chain.wait_for_every_number(n);
    eprintln!("{n} records, {dups} duplicates (bound {bound})");
    assert!(dups <= bound, "{dups} duplicates, bound {bound}");
}

/// The relay is killed while a backlog sits in its disk buffer (the
/// receiver is down), then killed again while it replays that backlog.
#[test]
fn chain_relay_kill_9_with_a_backlog_on_disk_and_during_its_replay() {
    let n = 40_000 * scale();
    let mut chain = Chain::start(DISK_BUFFER);
    let writer = SteadyWriter::spawn(&chain.live(), "f", n, RATE, 0);
    writer.wait_for(n / 8);
    chain.rx.as_mut().unwrap().kill();
    writer.wait_for(writer.written() + 2 * RATE); // two seconds of backlog
    chain.relay.as_mut().unwrap().kill();
    chain.start_relay();
    let backlog = chain
        .relay
        .as_mut()
        .unwrap()
        .wait_for_log("delivering them first", Duration::from_secs(10));
    eprintln!("{backlog}");
    chain.start_rx();
    // a moment into the replay
    std::thread::sleep(Duration::from_millis(100));
    chain.relay.as_mut().unwrap().kill();
    chain.start_relay();
    assert!(writer.written() < n, "the writer must outlast the faults");
    writer.join();
    let dups = chain.wait_for_every_number(n);
    // Per relay kill: the agent's unacknowledged window and the relay's
    // own window past its delivered cursor (one receiver kill adds at most
    // the relay's window).
    let bound = 2 * (2 * WINDOW) + WINDOW;
    eprintln!("{n} records, {dups} duplicates (bound {bound})");
    assert!(dups <= bound, "{dups} duplicates, bound {bound}");
}

#[test]
fn chain_receiver_kill_9_loses_nothing() {
    kill_9_and_restart(Tier::Receiver);
}

/// With the receiver gone and the relay's disk buffer full (when_full =
/// block), the relay stops acknowledging, so the agent's checkpoint stops
/// while the file keeps growing; once the receiver is back, everything
/// arrives and the checkpoint reaches the end of the file.
#[test]
fn the_checkpoint_waits_for_the_relays_disk_buffer() {
    let n = 60_000 * scale();
    let mut chain = Chain::start(
        "{ type = \"disk\", dir = \"{buf}\", max_bytes = \"128KiB\", segment_bytes = \"32KiB\", when_full = \"block\" }",
    );
    let writer = SteadyWriter::spawn(&chain.live(), "f", n, RATE, 0);
    writer.wait_for(n / 8);
    // the first checkpoint follows the first acknowledgement by up to one
    // checkpoint_interval (1 s), later on a loaded machine
    let deadline = Instant::now() + Duration::from_secs(20);
    let before = loop {
        let offset = checkpoint_offset(&chain.state());
        if offset > 0 || Instant::now() > deadline {
            break offset;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        before > 0,
        "the checkpoint advances while all is well\n{}",
        chain.logs()
    );
    chain.rx.as_mut().unwrap().kill();

    // fill the 128 KiB buffer (a few thousand records), then watch
    std::thread::sleep(Duration::from_secs(3));
    let held = checkpoint_offset(&chain.state());
    let size = std::fs::metadata(chain.live()).unwrap().len();
    std::thread::sleep(Duration::from_secs(2));
    let later = checkpoint_offset(&chain.state());
    let grown = std::fs::metadata(chain.live()).unwrap().len();
    assert!(
        writer.written() < n,
        "the writer must still be running (raise n)"
    );
    assert_eq!(
        later,
        held,
        "the checkpoint must not pass what the relay's full buffer has not taken\n{}",
        chain.logs()
    );
    assert!(grown > size && grown > later, "lines kept being written");

    // What the checkpoint covers must be in the relay's buffer, not in a
    // socket or a queue: kill both, and the restarted agent resends only
    // what lies past its checkpoint.
    chain.agent.as_mut().unwrap().kill();
    chain.relay.as_mut().unwrap().kill();
    let offset = checkpoint_offset(&chain.state());
    let past = writer.written() - lines_before(&chain.live(), offset);
    chain.start_relay();
    chain.start_agent();
    chain.start_rx();
    writer.join();
    // Duplicates: lines past the checkpoint the relay already held, and
    // what the relay had sent to the killed receiver without an ack (at
    // most its window).
    let bound = past + WINDOW;
    let dups = chain.wait_for_every_number(n);
    eprintln!("{n} records, {dups} duplicates (bound {bound})");
    assert!(dups <= bound, "{dups} duplicates, bound {bound}");
    let end = std::fs::metadata(chain.live()).unwrap().len();
    let deadline = Instant::now() + Duration::from_secs(20);
    while checkpoint_offset(&chain.state()) < end {
        assert!(
            Instant::now() < deadline,
            "the checkpoint never reached the end of the file ({} < {end})",
            checkpoint_offset(&chain.state())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The receiver is gone for 10 s while ~1 KiB lines flow: nothing is lost,
/// and the relay keeps the backlog on disk, not in memory.
#[test]
fn a_receiver_outage_is_held_on_disk_with_bounded_memory() {
    const PAD: usize = 1000;
    let n = 40_000 * scale();
    let rate = 2_500; // 2.5 MB/s
    let outage = Duration::from_secs(10 * scale() as u64);
    // room for the whole outage (~25 MiB per 10 s): a full buffer would
    // block, and the agent would resend after its ack timeout
    let mut chain = Chain::start(
        "{ type = \"disk\", dir = \"{buf}\", max_bytes = \"2GiB\", fsync = \"interval\" }",
    );
    let relay_pid = chain.relay.as_ref().unwrap().pid();
    let stop = Arc::new(AtomicBool::new(false));
    // all of it, and its own memory apart from the program's pages (code
    // the outage runs for the first time is mapped in then)
    let peak = Arc::new(AtomicUsize::new(0));
    let peak_anon = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (stop, peak, peak_anon) = (stop.clone(), peak.clone(), peak_anon.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Some(kib) = status_kib(relay_pid, "VmRSS") {
                    peak.fetch_max(kib as usize, Ordering::Relaxed);
                }
                if let Some(kib) = status_kib(relay_pid, "RssAnon") {
                    peak_anon.fetch_max(kib as usize, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let writer = SteadyWriter::spawn(&chain.live(), "f", n, rate, PAD);
    writer.wait_for(rate * 2);
    let rss_before = status_kib(relay_pid, "RssAnon").unwrap();
    chain.rx.as_mut().unwrap().kill();
    let down_at = writer.written();
    std::thread::sleep(outage);
    let during = writer.written() - down_at;
    let peak_down = peak_anon.load(Ordering::Relaxed) as u64;
    chain.start_rx();
    writer.join();
    let dups = chain.wait_for_every_number(n);
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed) as u64;
    eprintln!(
        "{n} records, {dups} duplicates; {during} records (~{} MiB) during the outage; relay RssAnon {rss_before} KiB before, peak {peak_down} KiB during; VmRSS peak {peak} KiB overall",
        (during * (PAD + 8)) >> 20
    );
    assert!(dups <= WINDOW, "{dups} duplicates");
    assert!(
        peak < 150 * 1024,
        "the relay's RSS reached {peak} KiB; its backlog belongs on disk"
    );
    // what came in during the outage (tens of MiB) must not sit in memory
    assert!(
        peak_down < rss_before + 16 * 1024,
        "the relay's own memory (RssAnon) grew from {rss_before} to {peak_down} KiB during the outage"
    );
}

/// A tmpfs mounted on a fresh directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (with the reason) where mounting is not allowed.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes to `path` until the file system is full (down to single bytes).
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).unwrap();
    let mut size = 1 << 20;
    let block = vec![b'x'; size];
    while size > 0 {
        match f.write(&block[..size]) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => size /= 2,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
}

/// A forward client sending `chunks` PackedForward chunks of `per` records
/// `{prefix}-i` (padded to ~100 bytes), each asking for an ack, with at
/// most `window` unacknowledged: when the acks stop, it holds.
struct AckingClient {
    acked: Arc<AtomicUsize>,
    sent: Arc<AtomicUsize>,
    handle: std::thread::JoinHandle<()>,
}

impl AckingClient {
    fn spawn(addr: std::net::SocketAddr, prefix: &'static str, chunks: usize, per: usize) -> Self {
        const WINDOW_CHUNKS: usize = 4;
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let mut r = s.try_clone().unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicUsize::new(0));
        let reader_count = acked.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut byte = [0u8; 4096];
            loop {
                while let Ok(end) = logferry::protocol::msgpack::skip(&buf, 0) {
                    reader_count.fetch_add(1, Ordering::SeqCst);
                    buf.drain(..end);
                }
                match std::io::Read::read(&mut r, &mut byte) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&byte[..n]),
                }
            }
        });
        let (a, c) = (acked.clone(), sent.clone());
        let handle = std::thread::spawn(move || {
            for k in 0..chunks {
                while c.load(Ordering::SeqCst) - a.load(Ordering::SeqCst) >= WINDOW_CHUNKS {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let mut entries = Vec::new();
                for i in k * per..(k + 1) * per {
                    let msg = format!("{prefix}-{i:<90}");
                    logferry::protocol::forward::write_message_entry(
                        &mut entries,
                        1_700_000_000,
                        0,
                        msg.as_bytes(),
                    );
                }
                let mut frame = Vec::new();
                logferry::protocol::forward::write_packed_forward(
                    &mut frame,
                    "disk",
                    &entries,
                    per,
                    Some(format!("c{k}").as_bytes()),
                );
                s.write_all(&frame).unwrap();
                c.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
            // keep the connection open until every ack is in
            while a.load(Ordering::SeqCst) < chunks {
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        AckingClient {
            acked,
            sent,
            handle,
        }
    }

    fn acked(&self) -> usize {
        self.acked.load(Ordering::SeqCst)
    }
}

/// The file sink's directory fills up while records arrive over forward
/// with acks: the writes fail with a clear error, the acks stop and the
/// client holds, the retries are counted; once space is freed everything
/// arrives exactly once (a failed write leaves no partial line behind).
#[test]
fn a_full_disk_under_the_file_sink_holds_acks_until_space_is_freed() {
    let fs = match Tmpfs::mount(&format!("{}m", 4 * scale())) {
        Ok(fs) => fs,
        Err(e) => {
            common::skipped(&format!(
                "this test mounts a tmpfs and needs root (mount -t tmpfs): {e}"
            ));
            return;
        }
    };
    const PER: usize = 100;
    let chunks = 200 * scale();
    let n = chunks * PER;
    let out = fs.path().join("out.log");
    let mut rx = Logferry::start(&format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{}\"\nformat = \"raw\"\nretry = {{ initial = \"50ms\", max = \"500ms\" }}\n",
        out.display()
    ));
    let client = AckingClient::spawn(rx.forward_addr("in"), "d", chunks, PER);
    while client.acked() < chunks / 5 {
        assert!(!client.handle.is_finished());
        std::thread::sleep(Duration::from_millis(10));
    }
    let filler = fs.path().join("filler");
    fill(&filler);

    rx.wait_for_log("kind=\"no_space\"", Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(1));
    let held = client.acked();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(client.acked(), held, "no ack while the disk is full");
    assert!(held < chunks, "the client must still have records to send");
    assert!(
        client.sent.load(Ordering::SeqCst) < chunks,
        "the client holds"
    );

    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30 * scale() as u64);
    while client.acked() < chunks {
        assert!(
            Instant::now() < deadline,
            "{} of {chunks} chunks acked after space was freed\n{}",
            client.acked(),
            rx.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    client.handle.join().unwrap();
    // every ack means written: compare the output now, before unmounting
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(&out, copy.path().join("out.log")).unwrap();
    rx.stop();
    let dups = wait_for_every_number(&copy.path().join("out.log"), "d", n, Duration::ZERO, || {
        rx.log_text()
    });
    // the client never resends, and a failed write is cut back: exactly once
    assert_eq!(dups, 0, "duplicates in the output");
    assert!(
        rx.final_counter("logferry_sink_retried_records_total{component=\"file\"}") > 0,
        "the file sink's retries are counted"
    );
    let errors = rx.final_counter(
        "logferry_file_errors_total{component=\"file\",op=\"write\",kind=\"no_space\"}",
    );
    // every failed retry is counted, not every one logged
    let logged = rx.log_text().matches("write failed").count();
    assert!(
        errors > 3 && (1..=2).contains(&logged),
        "{errors} errors counted, {logged} logged"
    );
    drop(fs);
}

/// tail → forward (acks) → logferry with a disk-buffered Kafka sink →
/// broker: the broker stops during the run, the Kafka logferry is killed
/// (-9) during that outage and restarted on its buffer, then the broker
/// comes back; every number reaches the topic.
#[test]
fn kafka_broker_restart_and_kill_9_lose_nothing() {
    let broker = OwnBroker::start();
    let root = tempfile::tempdir().unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let topic = format!("faults{}x{nanos}", std::process::id());
    let port = free_port();
    let live = root.path().join("app.log");
    std::fs::write(&live, b"").unwrap();
    let kafka_cfg = format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\n\n[sinks.k]\ntype = \"kafka\"\nmatch = \"**\"\nbrokers = [\"{}\"]\ntopic = \"{topic}\"\nretry_backoff = \"200ms\"\nretry_backoff_max = \"1s\"\nbuffer = {{ type = \"disk\", dir = \"{}\", max_bytes = \"256MiB\" }}\n[sinks.k.librdkafka_options]\n\"message.timeout.ms\" = \"3000\"\n",
        broker.addr,
        root.path().join("kafka-buffer").display()
    );
    let start_kafka_side = || {
        let mut lf = Logferry::start(&kafka_cfg);
        lf.forward_addr("in");
        lf
    };
    let mut lf = start_kafka_side();
    let mut agent = Logferry::start(&format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{}\"]\ntag = \"app\"\nread_from_head = true\ncheckpoint_dir = \"{}\"\n\n{}",
        live.display(),
        root.path().join("state").display(),
        forward_sink(port)
    ));
    agent.wait_for_log("following file", Duration::from_secs(20));

    let n = 40_000 * scale();
    let rate = 2_000;
    let writer = SteadyWriter::spawn(&live, "f", n, rate, 0);
    writer.wait_for(n / 8);
    let faults_from = writer.written();
    broker.stop();
    // killed while its disk buffer holds what the broker could not take
    std::thread::sleep(Duration::from_secs(1));
    lf.kill();
    let killed_at = writer.written();
    let mut lf = start_kafka_side();
    assert!(
        writer.written() < n,
        "the writer must outlast the kill (raise n)"
    );
    broker.restart();
    writer.join();

    let deadline = Instant::now() + Duration::from_secs(90 * scale() as u64);
    let (seen, odd) = loop {
        let mut seen = vec![0u32; n];
        let mut odd = Vec::new();
        for p in consume(&broker.addr, &topic, 0, Duration::ZERO)
            .into_iter()
            .map(|c| c.payload)
        {
            match p
                .strip_prefix("f-")
                .and_then(|s| s.parse::<usize>().ok())
                .filter(|&i| i < n)
            {
                Some(i) => seen[i] += 1,
                None => odd.push(p),
            }
        }
        let missing = seen.iter().filter(|&&c| c == 0).count();
        if missing == 0 {
            break (seen, odd);
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {n} records never reached Kafka\n--- agent\n{}\n--- kafka side\n{}",
            agent.log_text(),
            lf.log_text()
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    assert!(
        odd.is_empty(),
        "foreign messages: {:?}",
        &odd[..odd.len().min(5)]
    );
    let dups: usize = seen.iter().map(|&c| c as usize - 1).sum();
    // With the broker down nothing new is delivered, so only records
    // produced but not yet settled can arrive twice: those written up to a
    // second before the broker stop (in flight to it) until the kill, and
    // what the agent had sent without an ack (its window) at the kill.
    let bound = (killed_at - faults_from) + rate + WINDOW;
    eprintln!("{n} records, {dups} duplicates (bound {bound})");
    assert!(dups <= bound, "{dups} duplicates, bound {bound}");
    assert!(lf.stop().success());
    assert!(agent.stop().success());
}

/// One `text/plain` POST of `body` on a connection of its own: the
/// answer's status, 0 when none came.
fn post_lines(addr: std::net::SocketAddr, body: &str) -> u16 {
    use std::io::Read;
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
    let sent = write!(
        s,
        "POST /disk HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut out = String::new();
    if sent.is_err() || s.read_to_string(&mut out).is_err() {
        return 0;
    }
    out.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// HTTP clients post into a file sink with its default retry settings
/// while its disk is full for about 20 s: once space is freed, writing
/// resumes within a couple of seconds (the retries of records a client
/// waits for never wait long), every client is answered 200 (none waits
/// into the source's `request_timeout` and its 503), the log says that
/// writing resumed and how long the outage lasted, and every record is
/// written once.
#[test]
fn a_full_disk_freed_after_20s_resumes_within_seconds_and_says_so() {
    let fs = match Tmpfs::mount("4m") {
        Ok(fs) => fs,
        Err(e) => {
            common::skipped(&format!(
                "this test mounts a tmpfs and needs root (mount -t tmpfs): {e}"
            ));
            return;
        }
    };
    const CLIENTS: usize = 4;
    const PER: usize = 50;
    let out = fs.path().join("out.log");
    let mut lf = Logferry::start(&format!(
        "[sources.in]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = \"{}\"\nformat = \"raw\"\n",
        out.display()
    ));
    let addr = lf.http_addr("in");
    let stop = Arc::new(AtomicBool::new(false));
    // per client: requests answered, and the last answer's time
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                let mut k = 0;
                while !stop.load(Ordering::SeqCst) {
                    let from = (c * 1_000_000) + k * PER;
                    let body: String = (from..from + PER).map(|i| format!("h-{i}\n")).collect();
                    let status = post_lines(addr, &body);
                    answers.push((status, Instant::now(), from));
                    k += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                answers
            })
        })
        .collect();
    wait_until("records written", Duration::from_secs(20), || {
        read_lines(&out).len() >= 500
    });
    let filler = fs.path().join("filler");
    fill(&filler);
    lf.wait_for_log("kind=\"no_space\"", Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(20));
    let freed = Instant::now();
    std::fs::remove_file(&filler).unwrap();
    let before = read_lines(&out).len();
    wait_until(
        "writing resumed after space was freed",
        Duration::from_secs(60),
        || read_lines(&out).len() > before,
    );
    let resumed = freed.elapsed();
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    let answers: Vec<_> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(&out, copy.path().join("out.log")).unwrap();
    lf.stop();
    let log = lf.log_text();
    let refused: Vec<_> = answers.iter().filter(|a| a.0 != 200).collect();
    assert!(
        refused.is_empty(),
        "{} of {} requests not answered 200, first {:?}",
        refused.len(),
        answers.len(),
        refused.first().map(|a| a.0)
    );
    // a couple of seconds, with room for a loaded machine
    assert!(
        resumed < Duration::from_secs(5),
        "writing resumed {resumed:?} after space was freed"
    );
    // the longest outage the log reports (the disk may also have been
    // full for a moment while it was being filled)
    let secs = log
        .lines()
        .filter(|l| l.contains("delivering again after an outage of"))
        .filter_map(|l| {
            l.split("outage_secs=")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.trim_matches('"').parse::<f64>().ok())
        })
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))))
        .unwrap_or_else(|| panic!("no line says writing resumed, with outage_secs:\n{log}"));
    assert!(
        (15.0..60.0).contains(&secs),
        "the outage lasted about 20 s, the log says {secs} s:\n{log}"
    );
    // every record answered 200 is written once
    let (seen, odd) = {
        let mut seen = std::collections::HashMap::new();
        let mut odd = Vec::new();
        for l in read_lines(&copy.path().join("out.log")) {
            match l.strip_prefix("h-").and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => *seen.entry(n).or_insert(0) += 1,
                None => odd.push(l),
            }
        }
        (seen, odd)
    };
    assert!(odd.is_empty(), "torn lines: {:?}", &odd[..odd.len().min(3)]);
    for (_, _, from) in &answers {
        for i in *from..*from + PER {
            assert_eq!(seen.get(&i), Some(&1), "record h-{i}");
        }
    }
    drop(fs);
}
