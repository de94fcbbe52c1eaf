//! `bench udp-syslog` and `bench tcp-syslog`: what receiving syslog costs
//! and loses. The bench sends numbered RFC 5424 messages at a fixed rate
//! (by default 10,000 and then 100,000 messages/s, 20 s each): over UDP one
//! per datagram, over TCP one per `write()` on one connection, ended by a
//! newline. They go to logferry's `udp` or `tcp` source with
//! `parser = "syslog"` writing a file (`format = "json"`: every parsed
//! field, as Fluent Bit's file output writes), and, unless `--no-peer`, to
//! Fluent Bit's `syslog` input (`Mode udp` or `Mode tcp`, `Parser
//! syslog-rfc5424` from its parsers file) writing a file with its `file`
//! output; runs alternate between the two. Both keep their default socket
//! receive buffer and their defaults otherwise.
//!
//! UDP has no push-back: what the receiver does not read in time the
//! kernel drops. A run reports the messages sent, the lines in the output
//! once it has stopped growing (arrived), the difference (lost), for UDP
//! the kernel's drop count for the receiving socket (the `drops` column of
//! its line in `/proc/net/udp`, read for both systems) and logferry's own
//! `logferry_udp_kernel_drops_total`, the receiver's CPU over the sending
//! window as a share of one core, and its peak RSS.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::filters::LineCount;
use super::process::{metric, Proc};
use super::report::{RunArgs, WorkDir};
use super::sinks::System;

#[derive(Debug, clap::Args)]
pub struct SyslogArgs {
    /// Messages per second, a set of runs for each rate.
    #[arg(long, value_delimiter = ',', default_values_t = [10_000u64, 100_000])]
    pub rates: Vec<u64>,
    /// Seconds of sending per run.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Measure logferry alone, without Fluent Bit.
    #[arg(long)]
    pub no_peer: bool,
    /// Fluent Bit's program (default: the peers' build named in
    /// /opt/peers/env or by $LOGFERRY_PEERS_ENV, else `fluent-bit` on PATH).
    #[arg(long)]
    pub peer_bin: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// How the messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One datagram each.
    Udp,
    /// One `write()` each on one connection, ended by a newline.
    Tcp,
}

impl Transport {
    /// The source's `type`, and Fluent Bit's `Mode`.
    fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        }
    }

    /// The kernel's table of this transport's sockets.
    fn table(self) -> &'static str {
        match self {
            Transport::Udp => "/proc/net/udp",
            Transport::Tcp => "/proc/net/tcp",
        }
    }
}

/// Bytes of every message's MSG part (its number and padding).
pub const MSG_BYTES: usize = 100;
/// How long the output must stay the same, after the sending, for a run
/// to end (the receivers write within a second or two of receiving).
const SETTLED: Duration = Duration::from_secs(3);
/// How often the output is counted while it settles.
const COUNT_EVERY: Duration = Duration::from_millis(200);
/// Digits of a message's number.
const SEQ_DIGITS: usize = 10;

/// Fluent Bit's `syslog-rfc5424` parser, as its `conf/parsers.conf`
/// defines it (the peers' build installs no parsers file).
const FLUENT_BIT_PARSER: &str = "[PARSER]\n    Name        syslog-rfc5424\n    Format      regex\n    Regex       ^\\<(?<pri>[0-9]{1,5})\\>1 (?<time>[^ ]+) (?<host>[^ ]+) (?<ident>[^ ]+) (?<pid>[-0-9]+) (?<msgid>[^ ]+) (?<extradata>(\\[(.*?)\\]|-)) (?<message>.+)$\n    Time_Key    time\n    Time_Format %Y-%m-%dT%H:%M:%S.%L%z\n    Time_Keep   On\n";

/// One run's figures.
#[derive(Debug, Clone, Copy, Default)]
struct Received {
    sent: u64,
    arrived: u64,
    /// The kernel's drops for the receiving socket (`/proc/net/udp`).
    kernel_drops: Option<u64>,
    /// logferry's `logferry_udp_kernel_drops_total`.
    counted_drops: Option<u64>,
    /// The receiver's CPU over the sending window, % of one core.
    cpu_percent: f64,
    peak_rss: u64,
    /// The system's load average (1 min) at the end of the sending.
    load: f64,
}

impl Received {
    fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.arrived)
    }
}

pub fn run(a: SyslogArgs, transport: Transport) -> Result<(), String> {
    if a.rates.is_empty() || a.rates.contains(&0) || a.seconds == 0 || a.run.runs == 0 {
        return Err("rates, seconds and runs must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let (systems, peer) = System::measured(a.no_peer, a.peer_bin.as_deref())?;
    let (t, each) = match transport {
        Transport::Udp => ("UDP", "one per datagram"),
        Transport::Tcp => ("TCP", "one write() each on one connection"),
    };
    let mode = transport.name();
    println!(
        "RFC 5424 over {t} ({MSG_BYTES} B MSG parts, numbered, {each}) at {:?} messages/s for {} s → {mode} source, parser = \"syslog\" → file (Fluent Bit: syslog input, Mode {mode}, Parser syslog-rfc5424 → file); defaults otherwise; {} runs per rate; load average at the start: {}",
        a.rates, a.seconds, a.run.runs, loadavg_text()
    );
    println!("\n| rate/s | system | sent | arrived | lost | kernel drops (/proc) | logferry's drop counter | CPU % of a core (sending) | peak RSS MiB | load avg |\n|---|---|---|---|---|---|---|---|---|---|");
    let mut medians = Vec::new();
    for &rate in &a.rates {
        let mut results: Vec<Vec<Received>> = systems.iter().map(|_| Vec::new()).collect();
        for i in 0..a.run.runs {
            for (k, &system) in systems.iter().enumerate() {
                let out = dir.path.join(format!("{mode}-{rate}-{}-{}.log", k, i + 1));
                let r = measure(
                    &dir.path,
                    system,
                    peer.as_deref(),
                    transport,
                    rate,
                    a.seconds,
                    &out,
                )?;
                println!(
                    "{}",
                    row(rate, &format!("{}, run {}", system.name(), i + 1), &r)
                );
                let _ = std::fs::remove_file(&out);
                results[k].push(r);
            }
        }
        for (s, rs) in systems.iter().zip(&results) {
            medians.push(row(rate, &format!("**{}, median**", s.name()), &median(rs)));
        }
    }
    for m in medians {
        println!("{m}");
    }
    println!("\nload average at the end: {}", loadavg_text());
    Ok(())
}

fn row(rate: u64, name: &str, r: &Received) -> String {
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    format!(
        "| {rate} | {name} | {} | {} | {} | {} | {} | {:.2} | {:.1} | {:.2} |",
        r.sent,
        r.arrived,
        r.lost(),
        opt(r.kernel_drops),
        opt(r.counted_drops),
        r.cpu_percent,
        r.peak_rss as f64 / 1048576.0,
        r.load
    )
}

/// Each figure's median over the runs, on its own.
fn median(runs: &[Received]) -> Received {
    fn mid<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v[v.len() / 2]
    }
    let opt = |f: fn(&Received) -> Option<u64>| {
        let v: Vec<u64> = runs.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| mid(v))
    };
    let sent = mid(runs.iter().map(|r| r.sent).collect());
    let lost = mid(runs.iter().map(Received::lost).collect());
    Received {
        sent,
        arrived: sent.saturating_sub(lost),
        kernel_drops: opt(|r| r.kernel_drops),
        counted_drops: opt(|r| r.counted_drops),
        cpu_percent: mid(runs.iter().map(|r| r.cpu_percent).collect()),
        peak_rss: mid(runs.iter().map(|r| r.peak_rss).collect()),
        load: mid(runs.iter().map(|r| r.load).collect()),
    }
}

/// One run: the receiver started, the messages sent, the output counted
/// once it settles.
fn measure(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    transport: Transport,
    rate: u64,
    seconds: u64,
    out: &Path,
) -> Result<Received, String> {
    let _ = std::fs::remove_file(out);
    let (mut p, addr, api) = start(dir, system, peer, transport, out)?;
    wait_for_socket(transport, addr.port(), &mut p)?;
    let before = p.sample()?;
    let start = Instant::now();
    let sent = send(transport, addr, rate, Duration::from_secs(seconds))?;
    let window = start.elapsed();
    let after = p.sample()?;
    let load = loadavg_text()
        .split_whitespace()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or(0.0);
    // logferry reads its socket's drop count every second
    let sent_at = Instant::now();
    let mut lines = LineCount::new(out);
    let (mut last, mut changed) = (lines.count(), Instant::now());
    loop {
        std::thread::sleep(COUNT_EVERY);
        if let Some(status) = p.exited() {
            return Err(format!("{} exited early ({status})", system.name()));
        }
        let n = lines.count();
        if n != last {
            (last, changed) = (n, Instant::now());
        }
        let settled = changed.elapsed() >= SETTLED && sent_at.elapsed() >= SETTLED;
        if settled || (n as u64 >= sent && sent_at.elapsed() >= Duration::from_millis(1500)) {
            break;
        }
        if sent_at.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "{}: the output still grows 120 s after the sending",
                system.name()
            ));
        }
    }
    let udp = transport == Transport::Udp;
    let kernel_drops = std::fs::read_to_string("/proc/net/udp")
        .ok()
        .filter(|_| udp)
        .and_then(|t| drops_on_port(&t, addr.port()));
    let counted_drops = api
        .filter(|_| udp)
        .map(|a| metric(a, "logferry_udp_kernel_drops_total", ""));
    let peak_rss = p.sample().map(|s| s.peak_rss).unwrap_or(after.peak_rss);
    drop(p);
    let arrived = lines.count() as u64;
    if let Some(first) = first_line(out) {
        eprintln!("{}: first line: {first}", system.name());
    }
    Ok(Received {
        sent,
        arrived,
        kernel_drops,
        counted_drops,
        cpu_percent: 100.0 * after.cpu_since(&before).as_secs_f64() / window.as_secs_f64(),
        peak_rss,
        load,
    })
}

/// Starts the receiver writing `out`: the process, the address it
/// receives on and (logferry) its API's address.
fn start(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    transport: Transport,
    out: &Path,
) -> Result<(Proc, SocketAddr, Option<SocketAddr>), String> {
    let mode = transport.name();
    match (system, peer) {
        (System::Logferry, _) => {
            let mut p = Proc::start(
                dir,
                &format!("logferry-{mode}"),
                &logferry_config(transport, out),
            )?;
            let addr = p.address("source=in ")?;
            let api = p.address("api listening")?;
            Ok((p, addr, Some(api)))
        }
        (System::FluentBit, Some(bin)) => {
            let port = free_port(transport)?;
            let parsers = dir.join("fluent-bit-parsers.conf");
            std::fs::write(&parsers, FLUENT_BIT_PARSER).map_err(|e| e.to_string())?;
            let conf = dir.join(format!("fluent-bit-{mode}.conf"));
            std::fs::write(&conf, fluent_bit_config(&parsers, transport, port, out))
                .map_err(|e| e.to_string())?;
            let mut cmd = Command::new(bin);
            cmd.arg("-c").arg(&conf).stdout(std::process::Stdio::null());
            let p = Proc::spawn(cmd, "fluent-bit")?;
            Ok((p, SocketAddr::from(([127, 0, 0, 1], port)), None))
        }
        (System::FluentBit, None) => Err("no Fluent Bit program".into()),
    }
}

fn logferry_config(transport: Transport, out: &Path) -> String {
    format!(
        "[sources.in]\ntype = \"{}\"\naddress = \"127.0.0.1:0\"\nparser = \"syslog\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"json\"\n\n\
         [api]\naddress = \"127.0.0.1:0\"\n",
        transport.name(),
        out.display().to_string()
    )
}

fn fluent_bit_config(parsers: &Path, transport: Transport, port: u16, out: &Path) -> String {
    format!(
        "[SERVICE]\n    Flush        1\n    Log_Level    warn\n    Parsers_File {}\n\n\
         [INPUT]\n    Name   syslog\n    Mode   {}\n    Listen 127.0.0.1\n    Port   {port}\n    Parser syslog-rfc5424\n\n\
         [OUTPUT]\n    Name  file\n    Match *\n    Path  {}\n    File  {}\n",
        parsers.display(),
        transport.name(),
        out.parent().unwrap_or(Path::new(".")).display(),
        out.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("out.log")
    )
}

/// A free loopback port (closed again: the peer binds it next).
fn free_port(transport: Transport) -> Result<u16, String> {
    let bound = match transport {
        Transport::Udp => UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr()),
        Transport::Tcp => TcpListener::bind("127.0.0.1:0").and_then(|s| s.local_addr()),
    };
    bound.map(|a| a.port()).map_err(|e| e.to_string())
}

/// Waits until a socket is bound to `port` (its line is in the kernel's
/// table of the transport's sockets).
fn wait_for_socket(transport: Transport, port: u16, p: &mut Proc) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let table = std::fs::read_to_string(transport.table()).unwrap_or_default();
        if line_on(&table, port).is_some() {
            return Ok(());
        }
        if let Some(status) = p.exited() {
            return Err(format!("the receiver exited ({status}) before binding"));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "nothing bound {} port {port} in 20 s",
                transport.name()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fields of the line in a table of `/proc/net` (`udp`, `tcp`) whose
/// local address is 127.0.0.1:`port`.
fn line_on(table: &str, port: u16) -> Option<Vec<&str>> {
    let local = format!("0100007F:{port:04X}");
    table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.get(1) == Some(&local.as_str()))
}

/// The `drops` column of the line in `/proc/net/udp` whose local address
/// is 127.0.0.1:`port`.
fn drops_on_port(table: &str, port: u16) -> Option<u64> {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    let fields = line_on(table, port)?;
    if fields.len() < 13 {
        return None;
    }
    fields.last()?.parse().ok()
}

/// The numbered RFC 5424 messages, made in one buffer whose number is
/// written in place.
struct Messages {
    buf: Vec<u8>,
    /// Where the number's digits start in `buf`.
    seq_at: usize,
}

impl Messages {
    /// Messages ended by `end` (a newline over TCP).
    fn new(end: &str) -> Messages {
        let time = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6f+00:00");
        // local0.info
        let head = format!(
            "<134>1 {time} bench-host bench-app {} ID47 - ",
            std::process::id()
        );
        let mut msg = format!("seq={:0SEQ_DIGITS$} ", 0);
        let text = "order accepted and queued for the warehouse, nothing to report ";
        msg.extend(
            text.chars()
                .cycle()
                .take(MSG_BYTES.saturating_sub(msg.len())),
        );
        Messages {
            seq_at: head.len() + "seq=".len(),
            buf: format!("{head}{msg}{end}").into_bytes(),
        }
    }

    /// Message number `n`.
    fn numbered(&mut self, n: u64) -> &[u8] {
        let digits = &mut self.buf[self.seq_at..self.seq_at + SEQ_DIGITS];
        let mut v = n;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        &self.buf
    }
}

/// Where the messages go.
enum Sender {
    Udp(UdpSocket),
    Tcp(TcpStream),
}

impl Sender {
    fn connect(transport: Transport, addr: SocketAddr) -> std::io::Result<Sender> {
        Ok(match transport {
            Transport::Udp => {
                let s = UdpSocket::bind("127.0.0.1:0")?;
                s.connect(addr)?;
                Sender::Udp(s)
            }
            Transport::Tcp => {
                let s = TcpStream::connect(addr)?;
                // each message its own segment, as an application logging
                // a line at a time sends it
                s.set_nodelay(true)?;
                Sender::Tcp(s)
            }
        })
    }

    fn send(&mut self, message: &[u8]) -> std::io::Result<()> {
        match self {
            Sender::Udp(s) => s.send(message).map(drop),
            Sender::Tcp(s) => s.write_all(message),
        }
    }
}

/// Sends numbered messages to `addr` at `rate` a second for `time`
/// (paced every millisecond); returns how many the kernel took.
fn send(transport: Transport, addr: SocketAddr, rate: u64, time: Duration) -> Result<u64, String> {
    let mut s = Sender::connect(transport, addr).map_err(|e| format!("{addr}: {e}"))?;
    let mut messages = Messages::new(match transport {
        Transport::Udp => "",
        Transport::Tcp => "\n",
    });
    let total = rate * time.as_secs();
    let (mut n, mut sent, mut failed) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    while n < total {
        let due = ((start.elapsed().as_nanos() * u128::from(rate)) / 1_000_000_000) as u64;
        while n < due.min(total) {
            match s.send(messages.numbered(n)) {
                Ok(()) => sent += 1,
                Err(_) => failed += 1,
            }
            n += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if failed > 0 {
        eprintln!("{failed} of {total} sends failed (not counted as sent)");
    }
    Ok(sent)
}

/// The load average (1, 5, 15 min), as `/proc/loadavg` gives it.
pub(super) fn loadavg_text() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn first_line(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    std::io::BufReader::new(f).lines().next()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::syslog;

    #[test]
    fn messages_are_rfc5424_numbered_in_place() {
        let mut m = Messages::new("");
        for n in [0u64, 7, 99_999, 1_999_999] {
            let msg = m.numbered(n).to_vec();
            let p = syslog::parse(&msg, crate::event::EventTime::now()).unwrap();
            assert_eq!(p.version, Some(1));
            assert_eq!((p.facility, p.severity), (16, 6), "local0.info");
            assert!(p.time.is_some(), "{}", String::from_utf8_lossy(&msg));
            assert_eq!(p.hostname, Some(&b"bench-host"[..]));
            assert_eq!(p.app_name, Some(&b"bench-app"[..]));
            assert_eq!(p.msgid, Some(&b"ID47"[..]));
            assert_eq!(p.message.len(), MSG_BYTES);
            let text = String::from_utf8_lossy(p.message);
            assert!(text.starts_with(&format!("seq={n:010} ")), "{text}");
        }
    }

    #[test]
    fn drops_are_read_from_the_line_of_the_port() {
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:8B5C 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 4242 2 0000000000000000 0
  456: 0100007F:14E9 00000000:0000 07 00000000:00034000 00:00000000 00000000  1000        0 917 2 0000000000000000 31337
  457: 00000000:14EA 00000000:0000 07 00000000:00034000 00:00000000 00000000  1000        0 918 2 0000000000000000 5
";
        assert_eq!(drops_on_port(table, 0x14E9), Some(31337));
        assert_eq!(drops_on_port(table, 0x8B5C), Some(0));
        assert_eq!(drops_on_port(table, 0x14EA), None, "not on 127.0.0.1");
        assert_eq!(drops_on_port("header\n", 1), None);
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = s.local_addr().unwrap().port();
        let real = std::fs::read_to_string("/proc/net/udp").unwrap();
        assert_eq!(drops_on_port(&real, port), Some(0));
    }

    #[test]
    fn medians_are_taken_figure_by_figure() {
        let r = |sent, arrived, cpu| Received {
            sent,
            arrived,
            cpu_percent: cpu,
            ..Default::default()
        };
        let m = median(&[r(100, 90, 5.0), r(100, 100, 9.0), r(100, 95, 7.0)]);
        assert_eq!((m.sent, m.lost(), m.cpu_percent), (100, 5, 7.0));
    }

    #[test]
    fn both_configurations_name_the_parser_and_the_file() {
        let out = Path::new("/tmp/x/out.log");
        for t in [Transport::Udp, Transport::Tcp] {
            let lf = logferry_config(t, out);
            crate::topology::config::Config::parse(&lf, "bench").unwrap();
            assert!(lf.contains("parser = \"syslog\""), "{lf}");
            assert!(lf.contains(&format!("type = \"{}\"", t.name())), "{lf}");
            let fb = fluent_bit_config(Path::new("/tmp/x/p.conf"), t, 5140, out);
            assert!(fb.contains(&format!("Mode   {}", t.name())), "{fb}");
            assert!(fb.contains("Parser syslog-rfc5424"), "{fb}");
            assert!(fb.contains("Path  /tmp/x\n    File  out.log"), "{fb}");
        }
    }
}
