//! `bench scenario file-transfer` (K2HFTFUSE's benchmark): `--senders`
//! sender processes pick up the files an application writes and forward
//! them to one server (the target system), which unifies every record
//! into one file. One step per record size.
//!
//! - `processes.rs`: the server and the senders, and the kinds of sender;
//! - `records.rs`: the numbered records and the check of the unified file;
//! - `report.rs`: the table and the headline;
//! - this file: the steps, the measurement and the report.
//!
//! Throughput is the unified file's growth, sampled every `--sample` after
//! `--warmup`, over `--window`: in bytes while the writers run (a `stat`,
//! nothing that competes with the measured processes for CPU), turned into
//! records with the step's mean line length once the file has been read.
//! MB/s are of payload (records × record size), whatever the output format
//! adds. After the window the writers stop, the server drains, and every
//! line the step added is read: each record written must be there exactly
//! once, and nothing else.

mod processes;
mod records;
mod report;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use super::super::gen::{write_paced, Pace};
use super::super::monitor::{interrupt_flag, sleep_until};
use super::super::output::AppendFile;
use super::super::procfs::{self, human_bytes, ProcSample};
use super::super::report::WorkDir;
use super::super::results::{Machine, ProcessStep, Sample, ScenarioResult, Step};
use super::ScenarioArgs;
pub use processes::SendersKind;
use processes::{Plan, Processes};
use records::{line_length_near_end, Follower, Numbering, Tally};
use report::{is_failure, print_headline, table_row, TABLE_HEADER};

/// What the server writes into the unified file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Each record as it was written.
    Raw,
    /// A JSON-like line of time, host, tag (naming the sender's file) and
    /// the record, through the server's template format.
    Template,
}

impl OutputFormat {
    fn name(self) -> &'static str {
        match self {
            OutputFormat::Raw => "raw",
            OutputFormat::Template => "template",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct FileTransferArgs {
    /// file-transfer: sender processes, each forwarding the files its
    /// application writes to the one server.
    #[arg(long, default_value_t = 3)]
    pub senders: usize,
    /// file-transfer: how records get from the application's files to the
    /// server.
    #[arg(long, value_enum, default_value_t = SendersKind::Tail)]
    pub senders_kind: SendersKind,
    /// file-transfer: bytes per record (newline excluded), one step per
    /// size.
    #[arg(long, value_delimiter = ',', default_values_t = [10usize, 1024, 4096])]
    pub record_sizes: Vec<usize>,
    /// file-transfer: what the server writes into the unified file.
    #[arg(long, value_enum, default_value_t = OutputFormat::Raw)]
    pub format: OutputFormat,
    /// file-transfer: time at the start of each step that is not measured.
    #[arg(long, default_value = "3s", value_parser = crate::config::units::parse_duration)]
    pub warmup: Duration,
    /// file-transfer: time after the warm-up over which the throughput is
    /// averaged (the writers stop at its end).
    #[arg(long, default_value = "10s", value_parser = crate::config::units::parse_duration)]
    pub window: Duration,
    /// file-transfer: records/s each sender's application writes (default:
    /// as fast as it can).
    #[arg(long)]
    pub rate: Option<f64>,
    /// file-transfer: the writers pause while more than this many bytes
    /// they wrote are not yet in the unified file, so that a slow server
    /// does not fill the disk (the step then says "writers held back").
    #[arg(long, default_value = "256MiB", value_parser = crate::config::units::parse_bytes)]
    pub max_backlog: u64,
}

/// The timing of the steps.
struct Timing {
    warmup: Duration,
    window: Duration,
    sample: Duration,
    rate: Option<f64>,
}

pub fn run(a: &ScenarioArgs) -> Result<(), String> {
    let f = &a.file_transfer;
    if a.delivers.is_some() || a.receivers.is_some() || a.max || a.agents != 1 {
        return Err(
            "--agents, --delivers, --receivers and --max belong to the deliver \
                    scenarios: file-transfer takes --senders and, for a fixed rate, --rate"
                .into(),
        );
    }
    if f.senders == 0 {
        return Err("--senders must be at least 1".into());
    }
    if f.record_sizes.is_empty() {
        return Err("--record-sizes needs at least one size".into());
    }
    for &size in &f.record_sizes {
        Numbering::new(f.senders, size)?;
    }
    if f.rate.is_some_and(|r| !r.is_finite() || r <= 0.0) {
        return Err("--rate must be a positive number of records/s per sender".into());
    }
    let timing = if a.smoke {
        Timing {
            warmup: Duration::from_millis(500),
            window: Duration::from_secs(1),
            sample: Duration::from_millis(250),
            rate: Some(f.rate.unwrap_or(1000.0)),
        }
    } else {
        Timing {
            warmup: f.warmup,
            window: f.window,
            sample: a.sample,
            rate: f.rate,
        }
    };
    if timing.sample.is_zero() || timing.window < timing.sample {
        return Err("--sample must be positive and --window at least one --sample".into());
    }
    let stop = interrupt_flag();
    let dir = WorkDir::new(a.dir.clone())?;
    println!(
        "file-transfer: {} {} sender(s) → 1 {} server → one {} file; records of {} B; \
         {:?} warm-up + {:?} window per step, {}; files in {}",
        f.senders,
        f.senders_kind.name(),
        a.target.name(),
        f.format.name(),
        f.record_sizes
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        timing.warmup,
        timing.window,
        timing
            .rate
            .map_or("writing as fast as they can".to_string(), |r| format!(
                "{r} records/s per sender"
            )),
        dir.path.display()
    );
    let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let plan = Plan {
        senders: f.senders,
        kind: f.senders_kind,
        target: a.target,
        target_bin: a.target_bin.as_deref(),
        template: a.template.as_deref(),
        format: f.format,
    };
    let procs = Processes::start(&plan, &dir.path)?;
    let mut run = Run {
        procs,
        clock: Instant::now(),
        timing,
        format: f.format,
        max_backlog: f.max_backlog,
        drain_timeout: a.drain_timeout,
        interrupted: stop,
        progress: super::progress_bar(),
        samples: Vec::new(),
        follower: Follower::new(0),
        last: Vec::new(),
    };
    let mut steps = Vec::new();
    println!("\n{TABLE_HEADER}");
    for (i, &size) in f.record_sizes.iter().enumerate() {
        let Some(step) = run.step(i + 1, f.record_sizes.len(), size)? else {
            break;
        };
        run.progress.suspend(|| println!("{}", table_row(&step)));
        steps.push(step);
    }
    run.progress.finish_and_clear();
    let unified = run.procs.unified().ok().flatten();
    let interrupted = stop.load(Ordering::SeqCst);
    let mut params = serde_json::Map::new();
    params.insert("senders".into(), f.senders.into());
    params.insert("senders_kind".into(), f.senders_kind.name().into());
    params.insert("record_sizes".into(), f.record_sizes.clone().into());
    params.insert("format".into(), f.format.name().into());
    params.insert(
        "warmup_seconds".into(),
        run.timing.warmup.as_secs_f64().into(),
    );
    params.insert(
        "window_seconds".into(),
        run.timing.window.as_secs_f64().into(),
    );
    params.insert(
        "sample_seconds".into(),
        run.timing.sample.as_secs_f64().into(),
    );
    if let Some(r) = run.timing.rate {
        params.insert("rate".into(), r.into());
    }
    if let Some(b) = &a.target_bin {
        params.insert("target_bin".into(), b.display().to_string().into());
    }
    let result = ScenarioResult {
        scenario: "file-transfer".into(),
        target: a.target.name().into(),
        started,
        machine: Machine::this(),
        params,
        steps,
        samples: std::mem::take(&mut run.samples),
    };
    // stop the processes before reporting
    drop(run);
    print_headline(&result, unified.as_deref());
    if let Some(path) = &a.json {
        result.write(path)?;
        println!("result written to {}", path.display());
    }
    if let Some(dir) = &a.report {
        let page = super::super::html::write_report(dir, std::slice::from_ref(&result))?;
        println!("report written to {}", page.display());
    }
    if interrupted {
        return Err(format!(
            "interrupted after {} complete step(s); every process was stopped",
            result.steps.len()
        ));
    }
    let failed: Vec<String> = (result.steps.iter())
        .filter(|s| s.sent != s.received || s.remarks.iter().any(|r| is_failure(r)))
        .map(|s| format!("{}: {}", s.label, s.remarks.join("; ")))
        .collect();
    if !failed.is_empty() {
        return Err(format!(
            "the unified file does not hold every record exactly once: {}",
            failed.join(" | ")
        ));
    }
    Ok(())
}

/// What the steps share.
struct Run {
    procs: Processes,
    /// Scenario start, the zero of sample times.
    clock: Instant,
    timing: Timing,
    format: OutputFormat,
    max_backlog: u64,
    drain_timeout: Duration,
    interrupted: &'static AtomicBool,
    progress: ProgressBar,
    samples: Vec<Sample>,
    /// Reads the unified file, from one step's lines to the next.
    follower: Follower,
    /// Each process's previous sample, for the CPU % between samples.
    last: Vec<(Instant, Option<ProcSample>)>,
}

/// One sample of every process and of the unified file's size.
struct Mark {
    at: Instant,
    /// Bytes in the unified file.
    bytes: u64,
    procs: Vec<Option<ProcSample>>,
}

/// One sender's writer in a step.
struct Writer {
    thread: JoinHandle<Result<(u64, u64), String>>,
    /// Records written so far.
    written: Arc<AtomicU64>,
    file: PathBuf,
}

impl Run {
    /// One step of `size`-byte records; `None` if interrupted.
    fn step(&mut self, n: usize, of: usize, size: usize) -> Result<Option<Step>, String> {
        let label = format!("{size} B records");
        let start_offset = self.follower.offset();
        let done = Arc::new(AtomicBool::new(false));
        let hold = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for (i, s) in self.procs.senders.iter().enumerate() {
            writers.push(spawn_writer(
                s.files.join(format!("step-{n}.log")),
                Numbering::new(i + 1, size)?,
                self.timing.rate,
                done.clone(),
                hold.clone(),
            ));
        }
        let start = Instant::now();
        let every = self.timing.sample;
        let first = self.timing.warmup.as_nanos().div_ceil(every.as_nanos()) as u32;
        let last = first + self.timing.window.as_nanos().div_ceil(every.as_nanos()) as u32;
        let (mut window_start, mut window_end) = (None, None);
        let mut k = 0u32;
        let mut held = false;
        let mut line_len = (size + 1) as f64;
        let mut peak_rss = vec![0u64; self.procs.members().count()];
        if first == 0 {
            let bytes = file_size(self.procs.unified()?.as_deref());
            window_start = Some(self.sample(bytes, &mut peak_rss));
        }
        while window_end.is_none() {
            if writers.iter().all(|w| w.thread.is_finished()) {
                // out of record numbers (or failed): measure what there is
                break;
            }
            let due = start + every * (k + 1);
            if !sleep_until(
                due.min(Instant::now() + Duration::from_millis(50)),
                self.interrupted,
            ) {
                done.store(true, Ordering::SeqCst);
                for w in writers {
                    let _ = w.thread.join();
                }
                return Ok(None);
            }
            if let Some(e) = self.procs.exited() {
                done.store(true, Ordering::SeqCst);
                return Err(e);
            }
            let unified = self.procs.unified()?;
            let bytes = file_size(unified.as_deref());
            // the writers wait while the server is too far behind
            let written: u64 = writers
                .iter()
                .map(|w| w.written.load(Ordering::Relaxed))
                .sum();
            let too_far = too_far_behind(
                written,
                bytes.saturating_sub(start_offset),
                line_len,
                size,
                self.max_backlog,
            );
            held |= too_far;
            hold.store(too_far, Ordering::Relaxed);
            if Instant::now() < due {
                continue;
            }
            k += 1;
            if self.format == OutputFormat::Template {
                if let Some(l) = unified.as_deref().and_then(line_length_near_end) {
                    line_len = l;
                }
            }
            let mark = self.sample(bytes, &mut peak_rss);
            if k == first {
                window_start = Some(mark);
            } else if k == last {
                window_end = Some(mark);
            }
            if !self.progress.is_hidden() {
                self.progress.set_message(format!(
                    "step {n}/{of}: {label} · {:.0}/{:.0} s · written {written} · unified file {}",
                    start.elapsed().as_secs_f64(),
                    (self.timing.warmup + self.timing.window).as_secs_f64(),
                    human_bytes(bytes)
                ));
            }
        }
        done.store(true, Ordering::SeqCst);
        let seconds = start.elapsed().as_secs_f64();
        let at_stop = file_size(self.procs.unified()?.as_deref());
        let mut written = Vec::new();
        let mut files = Vec::new();
        for w in writers {
            let (lines, _) = w
                .thread
                .join()
                .map_err(|_| "a writer panicked".to_string())??;
            written.push(lines);
            files.push(w.file);
        }

        // drain: read the step's lines until every record is there
        let mut tally = Tally::new(size, self.format, &written);
        let deadline = Instant::now() + self.drain_timeout;
        let mut next = Instant::now() + every;
        loop {
            self.follower
                .read(self.procs.unified()?.as_deref(), &mut tally)?;
            if tally.found() == tally.written() || tally.has_extra() || Instant::now() > deadline {
                break;
            }
            if !sleep_until(Instant::now() + Duration::from_millis(20), self.interrupted) {
                return Ok(None);
            }
            if let Some(e) = self.procs.exited() {
                return Err(e);
            }
            if Instant::now() >= next {
                next += every;
                self.sample(0, &mut peak_rss);
            }
        }
        // anything sent twice would come right behind
        std::thread::sleep(Duration::from_millis(300));
        self.follower
            .read(self.procs.unified()?.as_deref(), &mut tally)?;
        for f in files {
            let _ = std::fs::remove_file(f);
        }

        let mean_line = if tally.lines > 0 {
            tally.bytes as f64 / tally.lines as f64
        } else {
            (size + 1) as f64
        };
        let mut remarks = Vec::new();
        let in_file_at_stop = at_stop.saturating_sub(start_offset) as f64 / mean_line;
        if in_file_at_stop + 0.5 < tally.written() as f64 {
            remarks.push(format!(
                "delay occurred: {:.0} record(s) not in the unified file when the writers stopped",
                tally.written() as f64 - in_file_at_stop
            ));
        }
        if held {
            remarks.push(format!(
                "writers held back: more than {} written was not in the unified file yet",
                human_bytes(self.max_backlog)
            ));
        }
        remarks.extend(tally.remarks());
        let (rate, cpu) = match (&window_start, &window_end) {
            (Some(a), Some(b)) => {
                let secs = (b.at - a.at).as_secs_f64();
                let records = b.bytes.saturating_sub(a.bytes) as f64 / mean_line;
                let cpu: Vec<f64> = (a.procs.iter().zip(&b.procs))
                    .map(|(x, y)| match (x, y) {
                        (Some(x), Some(y)) => {
                            procfs::Interval::between(x, y, b.at - a.at).cpu_percent
                        }
                        _ => 0.0,
                    })
                    .collect();
                (records / secs, cpu)
            }
            _ => {
                remarks.push("the window was not reached: nothing measured".into());
                (0.0, vec![0.0; peak_rss.len()])
            }
        };
        let mut processes = Vec::new();
        for (i, m) in self.procs.members().enumerate() {
            let rate = match written.get(i) {
                Some(w) => Some(*w as f64 / seconds),
                None => Some(rate),
            };
            processes.push(ProcessStep {
                name: m.name.clone(),
                tier: m.tier.into(),
                system: None,
                pid: m.proc.pid(),
                rate,
                cpu_percent: cpu[i],
                rss_bytes: peak_rss[i],
            });
        }
        Ok(Some(Step {
            label,
            offered_rate: self.timing.rate,
            seconds,
            sent: tally.written(),
            received: tally.found(),
            received_rate: rate,
            received_bytes_rate: Some(rate * size as f64),
            processes,
            latency: None,
            remarks,
        }))
    }

    /// Samples every process (CPU % since its previous sample, RSS) into
    /// the result's samples.
    fn sample(&mut self, bytes: u64, peak_rss: &mut [u64]) -> Mark {
        let now = Instant::now();
        let t = self.clock.elapsed().as_secs_f64();
        let members: Vec<(String, &'static str, u32)> = (self.procs.members())
            .map(|m| (m.name.clone(), m.tier, m.proc.pid()))
            .collect();
        self.last.resize(members.len(), (self.clock, None));
        let mut procs = Vec::new();
        for (i, (name, tier, pid)) in members.into_iter().enumerate() {
            let s = procfs::sample(pid);
            if let Some(s) = &s {
                peak_rss[i] = peak_rss[i].max(s.rss);
                if let (at, Some(prev)) = &self.last[i] {
                    self.samples.push(Sample {
                        t,
                        name,
                        tier: tier.into(),
                        cpu_percent: procfs::Interval::between(prev, s, now - *at).cpu_percent,
                        rss_bytes: s.rss,
                    });
                }
            }
            self.last[i] = (now, s.clone());
            procs.push(s);
        }
        Mark {
            at: now,
            bytes,
            procs,
        }
    }
}

fn spawn_writer(
    file: PathBuf,
    numbering: Numbering,
    rate: Option<f64>,
    done: Arc<AtomicBool>,
    hold: Arc<AtomicBool>,
) -> Writer {
    let written = Arc::new(AtomicU64::new(0));
    let progress = written.clone();
    let path = file.clone();
    let thread = std::thread::spawn(move || {
        let mut out = AppendFile::open(&path, None)?;
        let pace = Pace {
            rate: rate.unwrap_or(0.0),
            duration: None,
            count: Some(numbering.capacity()),
            hold: Some(&hold),
        };
        write_paced(&mut out, &pace, &done, |batch, n, _stamp| {
            numbering.append(batch, n);
            progress.store(n + 1, Ordering::Relaxed);
        })
    });
    Writer {
        thread,
        written,
        file,
    }
}

/// Whether the writers, having written `written` records of `size` bytes,
/// are more than `max_backlog` bytes ahead of a unified file that grew by
/// `grown` bytes of lines about `line_len` bytes long.
fn too_far_behind(written: u64, grown: u64, line_len: f64, size: usize, max_backlog: u64) -> bool {
    let arrived = grown as f64 / line_len;
    (written as f64 - arrived) * (size + 1) as f64 > max_backlog as f64
}

fn file_size(path: Option<&Path>) -> u64 {
    path.and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_pause_only_when_the_file_is_too_far_behind() {
        let mib = 1 << 20;
        // raw 4 KiB records: 1000 written, 900 in the file: 100 behind
        let raw = 4097.0;
        assert!(!too_far_behind(1000, 900 * 4097, raw, 4096, mib));
        assert!(too_far_behind(1000, 700 * 4097, raw, 4096, mib));
        // template lines are longer than the records: counted in lines,
        // not in bytes, so a file ahead in bytes is not taken for caught up
        let json = 4097.0 + 90.0;
        assert!(too_far_behind(1000, 700 * 4187, json, 4096, mib));
        assert!(!too_far_behind(1000, 1000 * 4187, json, 4096, 0));
    }
}
