//! `bench journald`: what reading the systemd journal costs at an everyday
//! rate. A writer appends numbered entries, shaped like a service's
//! journald entries (some twenty fields), to `system.journal` in a
//! directory at `--rate` entries a second for `--seconds`, through
//! Debian's `systemd-journal-remote` (journal export format on its stdin,
//! paced every 10 ms), the way journald appends them. logferry's
//! `journald` source and, unless `--no-peer`, Fluent Bit's `systemd` input
//! read the directory with their defaults and write every entry as a JSON
//! line to a file; runs alternate between the two.
//!
//! A run reports the entries written, the lines that arrived once the
//! output stopped growing (and so the lost), the reader's CPU over the
//! steady window (from [`WARMUP`] after the writing began to its end) as
//! a share of one core, and its peak RSS.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::filters::LineCount;
use super::process::Proc;
use super::report::{RunArgs, WorkDir};
use super::sinks::System;
use super::syslog::loadavg_text;

#[derive(Debug, clap::Args)]
pub struct JournaldArgs {
    /// Entries a second.
    #[arg(long, default_value_t = 1000)]
    pub rate: u64,
    /// Seconds of writing per run.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Measure logferry alone, without Fluent Bit.
    #[arg(long)]
    pub no_peer: bool,
    /// Fluent Bit's program (default: the peers' build named in
    /// /opt/peers/env or by $LOGFERRY_PEERS_ENV, else `fluent-bit` on PATH).
    #[arg(long)]
    pub peer_bin: Option<PathBuf>,
    /// The journal writer (Debian's systemd-journal-remote).
    #[arg(long, default_value = "/lib/systemd/systemd-journal-remote")]
    pub journal_remote: PathBuf,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Between the reader's start and the first entry.
const STARTUP: Duration = Duration::from_secs(2);
/// The start of the writing left out of the CPU figure.
const WARMUP: Duration = Duration::from_secs(3);
/// How long the output must stay the same, after the writing, for a run
/// to end.
const SETTLED: Duration = Duration::from_secs(4);

/// One run's figures.
#[derive(Debug, Clone, Copy, Default)]
struct Measured {
    written: u64,
    arrived: u64,
    /// The reader's CPU over the steady window, % of one core.
    cpu_percent: f64,
    /// CPU seconds per million entries over the steady window.
    cpu_per_million: f64,
    peak_rss: u64,
    load: f64,
}

pub fn run(a: JournaldArgs) -> Result<(), String> {
    if a.rate == 0 || a.seconds == 0 || a.run.runs == 0 {
        return Err("rate, seconds and runs must be positive".into());
    }
    if !a.journal_remote.exists() {
        return Err(format!(
            "{} not found (Debian: apt-get install systemd-journal-remote)",
            a.journal_remote.display()
        ));
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let (systems, peer) = System::measured(a.no_peer, a.peer_bin.as_deref())?;
    println!(
        "journald: {} entries/s for {} s into system.journal (systemd-journal-remote), {} fields an entry → journald source → file, JSON lines (Fluent Bit: systemd input → file, Format plain); defaults; CPU over the steady window from {} s; {} runs; load average at the start: {}",
        a.rate,
        a.seconds,
        FIELDS,
        WARMUP.as_secs(),
        a.run.runs,
        loadavg_text()
    );
    println!("\n| system | entries written | arrived | lost | CPU % of a core | CPU s / M entries | peak RSS MiB | load avg |\n|---|---|---|---|---|---|---|---|");
    let mut results: Vec<Vec<Measured>> = systems.iter().map(|_| Vec::new()).collect();
    for i in 0..a.run.runs {
        for (k, &system) in systems.iter().enumerate() {
            let root = dir.path.join(format!("journald-{k}-{}", i + 1));
            let m = measure(&root, system, peer.as_deref(), &a);
            let _ = std::fs::remove_dir_all(&root);
            let m = m?;
            println!("{}", row(&format!("{}, run {}", system.name(), i + 1), &m));
            results[k].push(m);
        }
    }
    let medians: Vec<Measured> = results.iter().map(|r| median(r)).collect();
    for (s, m) in systems.iter().zip(&medians) {
        println!("{}", row(&format!("**{}, median**", s.name()), m));
    }
    if let [ours, theirs] = medians.as_slice() {
        println!(
            "\nmedians, logferry / Fluent Bit: CPU {:.2} (goal ≤ 0.5), peak RSS {:.2}",
            ours.cpu_percent / theirs.cpu_percent.max(1e-9),
            ours.peak_rss as f64 / (theirs.peak_rss as f64).max(1.0)
        );
    }
    println!("load average at the end: {}", loadavg_text());
    Ok(())
}

fn row(name: &str, m: &Measured) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {:.3} | {:.1} | {:.2} |",
        m.written,
        m.arrived,
        m.written.saturating_sub(m.arrived),
        super::procfs::human_percent(m.cpu_percent),
        m.cpu_per_million,
        m.peak_rss as f64 / 1048576.0,
        m.load
    )
}

/// Each figure's median over the runs, on its own.
fn median(runs: &[Measured]) -> Measured {
    fn mid(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    }
    let of = |f: fn(&Measured) -> f64| mid(runs.iter().map(f).collect());
    Measured {
        written: of(|m| m.written as f64) as u64,
        arrived: of(|m| m.arrived as f64) as u64,
        cpu_percent: of(|m| m.cpu_percent),
        cpu_per_million: of(|m| m.cpu_per_million),
        peak_rss: of(|m| m.peak_rss as f64) as u64,
        load: of(|m| m.load),
    }
}

/// One run: the reader started on an empty directory, the entries
/// written, the output counted once it settles.
fn measure(
    root: &Path,
    system: System,
    peer: Option<&Path>,
    a: &JournaldArgs,
) -> Result<Measured, String> {
    let _ = std::fs::remove_dir_all(root);
    let journal = root.join("journal");
    std::fs::create_dir_all(&journal).map_err(|e| format!("{}: {e}", journal.display()))?;
    let out = root.join("out.log");
    let mut p = start(root, system, peer, &journal, &out)?;
    p.pause(STARTUP)?;
    let mut writer = Command::new(&a.journal_remote)
        .arg("-o")
        .arg(journal.join("system.journal"))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", a.journal_remote.display()))?;
    let mut stdin = writer.stdin.take().ok_or("no stdin")?;
    let total = a.rate * a.seconds;
    let start = Instant::now();
    let mut entries = Entries::new();
    let (mut n, mut chunk) = (0u64, Vec::new());
    let mut before = None;
    while n < total {
        let due = ((start.elapsed().as_nanos() * u128::from(a.rate)) / 1_000_000_000) as u64;
        while n < due.min(total) {
            entries.write(&mut chunk, n);
            n += 1;
        }
        if !chunk.is_empty() {
            stdin
                .write_all(&chunk)
                .map_err(|e| format!("systemd-journal-remote: {e}"))?;
            chunk.clear();
        }
        if before.is_none() && start.elapsed() >= WARMUP {
            before = Some((p.sample()?, Instant::now(), n));
        }
        if let Some(status) = p.exited() {
            return Err(format!(
                "{} exited while entries were written ({status})",
                system.name()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let after = p.sample()?;
    drop(stdin);
    let status = writer.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("systemd-journal-remote: {status}"));
    }
    let (before, t0, n0) = before.ok_or("the run is shorter than its warmup")?;
    let window = t0.elapsed();
    let cpu = after.cpu_since(&before);
    let load = loadavg_text()
        .split_whitespace()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or(0.0);
    let mut lines = LineCount::new(&out);
    let (mut last, mut changed) = (lines.count(), Instant::now());
    while changed.elapsed() < SETTLED && (last as u64) < total {
        std::thread::sleep(Duration::from_millis(200));
        let c = lines.count();
        if c != last {
            (last, changed) = (c, Instant::now());
        }
    }
    if (last as u64) >= total {
        // what comes within a second more is a duplicate
        std::thread::sleep(Duration::from_secs(1));
    }
    let peak_rss = p.sample().map(|s| s.peak_rss).unwrap_or(after.peak_rss);
    drop(p);
    Ok(Measured {
        written: total,
        arrived: lines.count() as u64,
        cpu_percent: 100.0 * cpu.as_secs_f64() / window.as_secs_f64().max(1e-9),
        cpu_per_million: cpu.as_secs_f64() / ((total - n0).max(1) as f64 / 1e6),
        peak_rss,
        load,
    })
}

fn start(
    root: &Path,
    system: System,
    peer: Option<&Path>,
    journal: &Path,
    out: &Path,
) -> Result<Proc, String> {
    match (system, peer) {
        (System::Logferry, _) => {
            Proc::start(root, "logferry-journald", &logferry_config(journal, out))
        }
        (System::FluentBit, Some(bin)) => {
            let conf = root.join("fluent-bit-journald.conf");
            std::fs::write(&conf, fluent_bit_config(journal, out)).map_err(|e| e.to_string())?;
            let mut cmd = Command::new(bin);
            cmd.arg("-c").arg(&conf).stdout(Stdio::null());
            Proc::spawn(cmd, "fluent-bit")
        }
        (System::FluentBit, None) => Err("no Fluent Bit program".into()),
    }
}

fn logferry_config(journal: &Path, out: &Path) -> String {
    format!(
        "[sources.journal]\ntype = \"journald\"\ndirectory = {:?}\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"json\"\n",
        journal.display().to_string(),
        out.display().to_string()
    )
}

fn fluent_bit_config(journal: &Path, out: &Path) -> String {
    format!(
        "[SERVICE]\n    Flush     1\n    Log_Level warn\n\n\
         [INPUT]\n    Name systemd\n    Path {}\n    Tag  journal\n\n\
         [OUTPUT]\n    Name   file\n    Match  *\n    Path   {}\n    File   {}\n    Format plain\n",
        journal.display(),
        out.parent().unwrap_or(Path::new(".")).display(),
        out.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("out.log")
    )
}

/// Fields of every entry (the trusted fields journald adds to a
/// service's line, and the line's own).
const FIELDS: usize = 20;

/// Numbered entries in the journal export format.
struct Entries {
    boot_id: String,
    invocation: String,
}

impl Entries {
    fn new() -> Entries {
        let pid = std::process::id();
        Entries {
            boot_id: format!("{:032x}", 0x5eed_0000_0000_u64 ^ u64::from(pid)),
            invocation: format!("{:032x}", 0x1a2b_3c4d_u64 ^ u64::from(pid)),
        }
    }

    /// Entry `n`, written now.
    fn write(&mut self, out: &mut Vec<u8>, n: u64) {
        let now = chrono::Utc::now();
        let usec = now.timestamp_micros();
        let boot = &self.boot_id;
        let inv = &self.invocation;
        let _ = write!(
            out,
            "__REALTIME_TIMESTAMP={usec}\n__MONOTONIC_TIMESTAMP={mono}\n_BOOT_ID={boot}\n\
             _MACHINE_ID=9a7c1e2d3f4b5a6978877665544332211\n_HOSTNAME=bench-host\n\
             _TRANSPORT=journal\n_UID=998\n_GID=998\n_COMM=orders\n_EXE=/usr/bin/orders\n\
             _CMDLINE=/usr/bin/orders --config /etc/orders.toml\n\
             _CAP_EFFECTIVE=0\n_SYSTEMD_CGROUP=/system.slice/orders.service\n\
             _SYSTEMD_UNIT=orders.service\n_SYSTEMD_SLICE=system.slice\n\
             _SYSTEMD_INVOCATION_ID={inv}\n_PID=4242\nPRIORITY=6\nSYSLOG_FACILITY=3\n\
             SYSLOG_IDENTIFIER=orders\n_SOURCE_REALTIME_TIMESTAMP={usec}\n\
             MESSAGE=seq={n:010} order accepted and queued for the warehouse, customer 1042, 3 items\n\n",
            mono = 1_000_000 + n * 1000,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_has_its_fields_and_number() {
        let mut out = Vec::new();
        Entries::new().write(&mut out, 42);
        let text = String::from_utf8(out).unwrap();
        let fields = text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("__"))
            .count();
        assert_eq!(fields, FIELDS);
        assert!(text.contains("MESSAGE=seq=0000000042 "));
        assert!(text.ends_with("\n\n"));
    }
}
