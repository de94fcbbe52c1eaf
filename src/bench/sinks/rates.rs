//! `bench sinks --rates R1,R2,…`: the sinks at everyday rates. For each
//! rate, each system (logferry, then Fluent Bit) is started afresh with
//! its defaults (no batching, linger or worker setting: logferry's
//! request sinks take up to 5,000 records, linger 200 ms, 2 requests in
//! flight; Fluent Bit flushes every second, `Flush 1`, with its outputs'
//! default workers), and one connection sends at that rate for
//! `--step-seconds`: every [`TICK`] a PackedForward chunk (`otlp-in`: a
//! request) of the records due by then ([`due`]: `rate / 100` a tick, the
//! fraction carried over, so every rate is exact). The records are the
//! throughput mode's, numbered on from 0.
//!
//! Figures per system and rate: the CPU of the measured process over the
//! sending window, as a share of one core; its peak RSS at the end; and
//! the end-to-end latency of every record. Record `k` is sent at `t_k`;
//! the destination is counted every poll period (a file every 10 ms, a
//! server every 200 ms: the latency's resolution), and when a count
//! reaches `c`, every record below `c` not seen before arrived at that
//! poll ([`Arrivals`]). That holds as the records arrive in about the
//! order they were sent (one connection in, one at a time or a few
//! requests in flight out), which is close enough at these resolutions.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prost::Message;

use super::super::filters::LineCount;
use super::super::process::{wait_until_every, Proc};
use super::super::procfs::{self, ProcSample};
use super::stores::{self, S3_ENV};
use super::{
    forward_gzip, http_configs, opensearch_configs, otlp_in, start_receiver, start_with,
    write_entry, Batching, Dest, Setup, SinksArgs, System, HTTP_RECEIVER,
};
use crate::protocol::forward::write_packed_forward;

/// How often the sender sends: a chunk (a request) per tick.
pub const TICK: Duration = Duration::from_millis(10);
/// Ticks in a second.
const TICKS_PER_SECOND: u64 = 100;
/// How often a file is counted.
const FILE_POLL: Duration = Duration::from_millis(10);
/// How often a server is asked for its count.
const SERVER_POLL: Duration = Duration::from_millis(200);

/// Records due by the start of tick `tick` at `rate` records/s: whole
/// records only, the fraction carried to the next tick.
pub fn due(rate: u64, tick: u64) -> u64 {
    rate * tick / TICKS_PER_SECOND
}

/// Records sent in tick `tick`.
pub fn in_tick(rate: u64, tick: u64) -> u64 {
    due(rate, tick + 1) - due(rate, tick)
}

/// When the records sent so far left, chunk by chunk: the number of
/// records sent once that chunk was, and when it was sent.
type Sent = Vec<(usize, Instant)>;

/// The latency of each record counted at the destination so far.
#[derive(Debug, Default)]
pub struct Arrivals {
    /// Records counted.
    seen: usize,
    /// The chunk of record `seen`, in the sent list.
    chunk: usize,
    /// Each counted record's time from its sending to the poll that
    /// counted it, in record order.
    latencies: Vec<Duration>,
}

impl Arrivals {
    /// A poll at `now` counted `count` records: those below it not seen
    /// yet arrived now. Counts past what was sent (duplicates) are left.
    pub fn counted(&mut self, count: usize, now: Instant, sent: &[(usize, Instant)]) {
        while self.seen < count {
            while sent
                .get(self.chunk)
                .is_some_and(|&(end, _)| end <= self.seen)
            {
                self.chunk += 1;
            }
            let Some(&(end, at)) = sent.get(self.chunk) else {
                return;
            };
            let upto = end.min(count);
            let latency = now.saturating_duration_since(at);
            self.latencies
                .extend(std::iter::repeat_n(latency, upto - self.seen));
            self.seen = upto;
        }
    }

    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The latencies' p50, p99 and maximum.
    pub fn percentiles(&self) -> Option<Latency> {
        Latency::of(self.latencies.clone())
    }
}

/// Percentiles of a set of latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Latency {
    fn of(mut all: Vec<Duration>) -> Option<Latency> {
        if all.is_empty() {
            return None;
        }
        all.sort_unstable();
        let at = |q: f64| all[((q * all.len() as f64).ceil() as usize).clamp(1, all.len()) - 1];
        Some(Latency {
            p50: at(0.50),
            p99: at(0.99),
            max: *all.last()?,
        })
    }
}

/// One system at one rate.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// CPU of the measured process over the sending window, in % of one
    /// core.
    cpu_percent: f64,
    peak_rss: u64,
    latency: Latency,
    /// `otlp-in`: the requests' p99, from writing to the answer.
    request_p99: Option<Duration>,
    /// How late the sender was for a tick at worst.
    late: Duration,
}

/// A started step: the measured process, where it takes records, and how
/// arrivals are counted.
struct Started<'a> {
    p: Proc,
    /// Processes beside it (a receiver), stopped after it.
    others: Vec<Proc>,
    addr: SocketAddr,
    /// Records at the destination so far.
    count: Box<dyn FnMut() -> usize + 'a>,
    poll: Duration,
    /// Removes what the step left (an index, a bucket, a file).
    _cleanup: Cleanup<'a>,
}

/// Runs its closure when dropped, whether the step succeeded or not.
struct Cleanup<'a>(Option<Box<dyn FnOnce() + 'a>>);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// What the sender sends each tick.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// PackedForward chunks on one connection.
    Forward,
    /// OTLP/HTTP protobuf requests on one keep-alive connection.
    OtlpIn,
}

pub fn run(dir: &Path, a: &SinksArgs, peer: Option<&Path>, dest: &Dest) -> Result<(), String> {
    if a.rates.contains(&0) || a.step_seconds == 0 {
        return Err("--rates and --step-seconds must be positive".into());
    }
    let (what, poll) = describe(dest)?;
    println!(
        "{what} at {} records/s, {} s each, {} run(s); each system as shipped (logferry: request sinks up to 5,000 records, linger 200 ms, 2 requests in flight; \
         Fluent Bit: Flush 1, its outputs' default workers), started afresh for each rate; a chunk every {} ms of rate/100 records; \
         latency counted every {} ms (its resolution), records taken to arrive in order",
        a.rates
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        a.step_seconds,
        a.run.runs,
        TICK.as_millis(),
        poll.as_millis()
    );
    match (&a.source_linger, dest) {
        (Some(_), Dest::OtlpIn(_)) => {
            return Err("--source-linger is the forward source's: not otlp-in".into())
        }
        (Some(l), _) => println!("logferry's forward source: linger = \"{l}\""),
        (None, Dest::OtlpIn(_)) => {}
        (None, _) if a.disk_buffer => {
            println!("logferry's forward source: linger as shipped (0 with a disk buffer)")
        }
        (None, _) => println!("logferry's forward source: linger as shipped (500 ms)"),
    }
    match dest {
        Dest::OtlpIn(_) if a.disk_buffer => println!(
            "disk buffers: logferry's file sink `buffer = {{ type = \"disk\" }}`, Fluent Bit's input `storage.type filesystem`, as shipped otherwise"
        ),
        _ if a.disk_buffer => println!(
            "disk buffers: logferry's sink `buffer = {{ type = \"disk\" }}`, Fluent Bit's input `storage.type filesystem`, as shipped otherwise"
        ),
        _ => {}
    }
    let mut systems = vec![System::Logferry];
    if peer.is_some() {
        systems.push(System::FluentBit);
    }
    let mut rows = Vec::new();
    for &rate in &a.rates {
        let mut by_system: Vec<Vec<Step>> = systems.iter().map(|_| Vec::new()).collect();
        for i in 0..a.run.runs {
            for (k, &system) in systems.iter().enumerate() {
                let tag = format!("{}-{}-{rate}-{}", system.slug(), std::process::id(), i + 1);
                let started = start_step(dir, a, system, peer, dest, &tag)?;
                let way = if matches!(dest, Dest::OtlpIn(_)) {
                    Way::OtlpIn
                } else {
                    Way::Forward
                };
                let step = measure_step(started, way, rate, a.step_seconds)?;
                eprintln!(
                    "{rate} records/s, run {}: {}: {}",
                    i + 1,
                    system.name(),
                    cell(&step)
                );
                by_system[k].push(step);
            }
        }
        rows.push((rate, by_system));
    }
    let peer_column = systems.len() == 2;
    println!(
        "\n| rate | logferry CPU % / p50 / p99 / max latency / peak RSS |{}\n|---|---|{}",
        if peer_column {
            " Fluent Bit CPU % / p50 / p99 / max latency / peak RSS | CPU ratio (Fluent Bit / logferry) |"
        } else {
            ""
        },
        if peer_column { "---|---|" } else { "" }
    );
    for (rate, by_system) in rows {
        let medians: Vec<Step> = by_system.iter().map(|s| median(s)).collect();
        let mut line = format!("| {rate} | {} |", cell(&medians[0]));
        if let Some(fb) = medians.get(1) {
            line.push_str(&format!(
                " {} | {:.1}× |",
                cell(fb),
                fb.cpu_percent / medians[0].cpu_percent.max(1e-9)
            ));
        }
        println!("{line}");
    }
    Ok(())
}

/// What is measured and how often the destination is counted.
fn describe(dest: &Dest) -> Result<(String, Duration), String> {
    Ok(match dest {
        Dest::OpenSearch(n) => (
            format!("forward → opensearch sink → the OpenSearch node at {}", n.url),
            SERVER_POLL,
        ),
        Dest::Http => ("forward → http sink → a logferry HTTP source → file".into(), FILE_POLL),
        Dest::Otlp(c) => (
            format!(
                "forward → otlp sink (gzip) → the OpenTelemetry Collector at {} (its file written every 100 ms)",
                c.url
            ),
            SERVER_POLL,
        ),
        Dest::S3(s) => (
            format!(
                "forward → s3 sink (gzip) → s3s-fs at {}, objects closed {} s after their first record (logferry max_object_age, Fluent Bit upload_timeout)",
                s.url,
                stores::RATE_OBJECT_AGE_SECS
            ),
            SERVER_POLL,
        ),
        Dest::OtlpIn(r) => (
            format!(
                "OTLP/HTTP protobuf, a request per tick on one connection → otlp source (ack = {:?}; Fluent Bit: opentelemetry input) → file",
                r.ack_setting()
            ),
            FILE_POLL,
        ),
        Dest::ForwardGzip => (
            "forward → forward sink (gzip) → a logferry forward source → file".into(),
            FILE_POLL,
        ),
        Dest::VictoriaLogs(..) => {
            return Err("--rates covers opensearch, http, otlp, s3, otlp-in and forward-gzip".into())
        }
    })
}

/// Starts `system` for one step of `dest`.
fn start_step<'a>(
    dir: &Path,
    a: &SinksArgs,
    system: System,
    peer: Option<&Path>,
    dest: &'a Dest,
    tag: &str,
) -> Result<Started<'a>, String> {
    let disk = a.disk_buffer.then(|| dir.join(format!("buffer-{tag}")));
    let setup = Setup {
        linger: a.source_linger.as_deref(),
        disk: disk.as_deref(),
    };
    let into_file = |out: PathBuf, p: Proc, others: Vec<Proc>, addr: SocketAddr| {
        let mut lines = LineCount::new(&out);
        Started {
            p,
            others,
            addr,
            count: Box::new(move || lines.count()),
            poll: FILE_POLL,
            _cleanup: Cleanup(Some(Box::new(move || {
                let _ = std::fs::remove_file(&out);
            }))),
        }
    };
    match dest {
        Dest::Http | Dest::ForwardGzip => {
            let out = dir.join(format!("received-{tag}.log"));
            let source = match dest {
                Dest::Http => HTTP_RECEIVER,
                _ => forward_gzip::RECEIVER,
            };
            let (receiver, recv) = start_receiver(dir, source, &out)?;
            let (sink, output) = match dest {
                Dest::Http => http_configs(recv, Batching::Defaults),
                _ => forward_gzip::configs(recv),
            };
            let (p, addr) = start_with(dir, system, peer, setup, &sink, &output, &[])?;
            Ok(into_file(out, p, vec![receiver], addr))
        }
        Dest::OtlpIn(r) => {
            let out = dir.join(format!("otlp-in-{tag}.log"));
            let (p, addr) = otlp_in::start(dir, system, peer, &out, r.ack_setting(), setup.disk)?;
            Ok(into_file(out, p, Vec::new(), addr))
        }
        Dest::OpenSearch(node) => {
            let index = format!("bench-sinks-{tag}");
            node.create(&index)?;
            let cleanup = {
                let index = index.clone();
                Cleanup(Some(Box::new(move || node.delete(&index))))
            };
            let (sink, output) = opensearch_configs(node, &index, Batching::Defaults);
            let (p, addr) = start_with(dir, system, peer, setup, &sink, &output, &[])?;
            let mut n = 0;
            Ok(Started {
                p,
                others: Vec::new(),
                addr,
                count: Box::new(move || {
                    n = node.count(&index).unwrap_or(n);
                    n
                }),
                poll: SERVER_POLL,
                _cleanup: cleanup,
            })
        }
        Dest::Otlp(collector) => {
            let (sink, output) = stores::otlp_configs(collector, Batching::Defaults)?;
            let (p, addr) = start_with(dir, system, peer, setup, &sink, &output, &[])?;
            let mut records = collector.counter();
            Ok(Started {
                p,
                others: Vec::new(),
                addr,
                count: Box::new(move || records.count()),
                poll: SERVER_POLL,
                _cleanup: Cleanup(Some(Box::new(move || collector.truncate()))),
            })
        }
        Dest::S3(store) => {
            let bucket = format!("bench-{tag}");
            store.create(&bucket)?;
            let store_dir = dir.join(format!("fluent-bit-s3-{bucket}"));
            let cleanup = {
                let (bucket, store_dir) = (bucket.clone(), store_dir.clone());
                Cleanup(Some(Box::new(move || {
                    store.delete(&bucket);
                    let _ = std::fs::remove_dir_all(&store_dir);
                })))
            };
            let (sink, output) = stores::s3_configs(
                store,
                &bucket,
                &store_dir,
                Batching::Defaults,
                a.s3_time_format.as_deref(),
            );
            let (p, addr) = start_with(dir, system, peer, setup, &sink, &output, &S3_ENV)?;
            let mut objects = store.counter(&bucket);
            Ok(Started {
                p,
                others: Vec::new(),
                addr,
                count: Box::new(move || objects.count()),
                poll: SERVER_POLL,
                _cleanup: cleanup,
            })
        }
        Dest::VictoriaLogs(..) => Err("--rates does not cover loki and splunk".into()),
    }
}

/// Sends `rate` records/s for `seconds` into a started step and waits
/// for every record to arrive.
fn measure_step(mut s: Started, way: Way, rate: u64, seconds: u64) -> Result<Step, String> {
    let ticks = seconds * TICKS_PER_SECOND;
    let total = due(rate, ticks) as usize;
    let sent: Mutex<Sent> = Mutex::new(Vec::with_capacity(ticks as usize));
    let pid = s.p.pid();
    let before = s.p.sample()?;
    let mut arrivals = Arrivals::default();
    let mut count = s.count;
    let failed = AtomicBool::new(false);
    let sending = std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            let r = send(way, s.addr, rate, ticks, &sent, pid);
            failed.store(r.is_err(), Ordering::Relaxed);
            r
        });
        let mut watched: Vec<&mut Proc> = vec![&mut s.p];
        watched.extend(s.others.iter_mut());
        wait_until_every(s.poll, &mut watched, || {
            let c = count();
            let now = Instant::now();
            arrivals.counted(c, now, &sent.lock().unwrap_or_else(|e| e.into_inner()));
            // a sender that failed has its error told below
            (
                arrivals.seen() >= total || failed.load(Ordering::Relaxed),
                format!("{c} of {total} records arrived"),
            )
        })?;
        sender
            .join()
            .map_err(|_| "the sender panicked".to_string())?
    })?;
    let end = s.p.sample()?;
    Ok(Step {
        cpu_percent: 100.0 * sending.after.cpu_since(&before).as_secs_f64()
            / sending.window.as_secs_f64(),
        peak_rss: end.peak_rss,
        latency: arrivals.percentiles().ok_or("no record arrived")?,
        request_p99: Latency::of(sending.requests).map(|l| l.p99),
        late: sending.late,
    })
}

/// What the sender saw.
struct Sending {
    /// The measured process at the end of the sending window.
    after: ProcSample,
    /// The window's length.
    window: Duration,
    /// How late a tick was at worst.
    late: Duration,
    /// `otlp-in`: each request's time to its answer.
    requests: Vec<Duration>,
}

/// The sender: a chunk per tick for `ticks` ticks, each noted in `sent`
/// before it is written.
fn send(
    way: Way,
    addr: SocketAddr,
    rate: u64,
    ticks: u64,
    sent: &Mutex<Sent>,
    pid: u32,
) -> Result<Sending, String> {
    let mut forward = match way {
        Way::Forward => {
            let tcp = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
            tcp.set_nodelay(true).map_err(|e| e.to_string())?;
            Some(tcp)
        }
        Way::OtlpIn => None,
    };
    let mut otlp = match way {
        Way::OtlpIn => Some(otlp_in::Conn::open(addr)?),
        Way::Forward => None,
    };
    let mut requests = Vec::new();
    let mut late = Duration::ZERO;
    let mut entries = Vec::new();
    let mut frame = Vec::new();
    let start = Instant::now();
    for tick in 0..ticks {
        let at = start + TICK * tick as u32;
        if let Some(wait) = at.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let n = in_tick(rate, tick) as usize;
        if n == 0 {
            continue;
        }
        let first = due(rate, tick) as usize;
        let now = Instant::now();
        late = late.max(now.saturating_duration_since(at));
        sent.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((first + n, now));
        if let Some(tcp) = forward.as_mut() {
            use std::io::Write;
            entries.clear();
            frame.clear();
            for k in first..first + n {
                write_entry(&mut entries, k);
            }
            write_packed_forward(&mut frame, "bench", &entries, n, None);
            tcp.write_all(&frame).map_err(|e| format!("send: {e}"))?;
        }
        if let Some(conn) = otlp.as_mut() {
            let body = otlp_in::export_request(first, n).encode_to_vec();
            while conn.post(addr, &body)? == 503 {
                std::thread::sleep(TICK);
            }
            requests.push(now.elapsed());
        }
    }
    let window = start.elapsed();
    let after = procfs::sample(pid).ok_or("the measured process is gone")?;
    Ok(Sending {
        after,
        window,
        late,
        requests,
    })
}

/// A step's figures as a table cell.
fn cell(s: &Step) -> String {
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1e3);
    let mut c = format!(
        "{:.2} % / {} / {} / {} / {:.1} MiB",
        s.cpu_percent,
        ms(s.latency.p50),
        ms(s.latency.p99),
        ms(s.latency.max),
        s.peak_rss as f64 / 1048576.0
    );
    if let Some(r) = s.request_p99 {
        c.push_str(&format!(" (requests p99 {:.1} ms)", r.as_secs_f64() * 1e3));
    }
    if s.late > Duration::from_millis(100) {
        c.push_str(&format!(" (sender late by up to {})", ms(s.late)));
    }
    c
}

/// The run of median CPU among `steps`.
fn median(steps: &[Step]) -> Step {
    let mut sorted = steps.to_vec();
    sorted.sort_by(|a, b| a.cpu_percent.total_cmp(&b.cpu_percent));
    sorted[sorted.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rate_is_sent_exactly_a_tick_at_a_time() {
        // 100/s: one record a tick; 150/s: 1 and 2 in turn; 10,000/s: 100
        assert!((0..100).all(|t| in_tick(100, t) == 1));
        let odd: Vec<u64> = (0..4).map(|t| in_tick(150, t)).collect();
        assert_eq!(odd, [1, 2, 1, 2]);
        assert!((0..100).all(|t| in_tick(10_000, t) == 100));
        // below one a tick: a record every few ticks, none lost
        assert_eq!((0..100).map(|t| in_tick(30, t)).sum::<u64>(), 30);
        for rate in [1, 7, 99, 100, 101, 333, 1000, 12_345] {
            for seconds in [1, 3, 20] {
                let ticks = seconds * TICKS_PER_SECOND;
                let sum: u64 = (0..ticks).map(|t| in_tick(rate, t)).sum();
                assert_eq!(sum, rate * seconds, "{rate}/s for {seconds} s");
                assert_eq!(due(rate, ticks), rate * seconds);
                // never more than one record apart from the ideal
                assert!((0..ticks).all(|t| in_tick(rate, t).abs_diff(rate / 100) <= 1));
            }
        }
    }

    #[test]
    fn a_count_gives_each_newly_seen_record_the_time_since_its_chunk_left() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // chunks of 3, 2 and 4 records sent at 0, 10 and 20 ms
        let sent = vec![(3, t0), (5, t0 + ms(10)), (9, t0 + ms(20))];
        let mut a = Arrivals::default();
        a.counted(0, t0 + ms(5), &sent);
        assert_eq!(a.seen(), 0);
        // a poll at 15 ms sees 4: three of the first chunk, one of the second
        a.counted(4, t0 + ms(15), &sent);
        assert_eq!(a.latencies, [ms(15), ms(15), ms(15), ms(5)]);
        // the same count again: nothing new
        a.counted(4, t0 + ms(25), &sent);
        assert_eq!(a.seen(), 4);
        // all of it at 40 ms; a count past what was sent is not counted
        a.counted(12, t0 + ms(40), &sent);
        assert_eq!(a.seen(), 9);
        assert_eq!(&a.latencies[4..], [ms(30), ms(20), ms(20), ms(20), ms(20)]);
        // records counted before their chunk is noted wait for it
        let mut b = Arrivals::default();
        b.counted(5, t0 + ms(12), &sent[..1]);
        assert_eq!(b.seen(), 3);
        b.counted(5, t0 + ms(14), &sent);
        assert_eq!(b.latencies, [ms(12), ms(12), ms(12), ms(4), ms(4)]);
        let l = a.percentiles().unwrap();
        assert_eq!((l.p50, l.p99, l.max), (ms(20), ms(30), ms(30)));
        assert_eq!(Arrivals::default().percentiles(), None);
    }

    #[test]
    fn percentiles_are_of_the_sorted_latencies() {
        let all: Vec<Duration> = (1..=200).rev().map(Duration::from_millis).collect();
        let l = Latency::of(all).unwrap();
        assert_eq!(l.p50, Duration::from_millis(100));
        assert_eq!(l.p99, Duration::from_millis(198));
        assert_eq!(l.max, Duration::from_millis(200));
        let one = Latency::of(vec![Duration::from_millis(7)]).unwrap();
        assert_eq!(one.p99, Duration::from_millis(7));
    }
}
