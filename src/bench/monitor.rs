//! `bench monitor`: samples the CPU and RSS of running processes from
//! /proc, one row per sample, and prints a summary at the end (after
//! `--duration`, when every process has exited, or on Ctrl-C).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::procfs::{human_bytes, pids_named, Watch};

#[derive(Debug, clap::Args)]
pub struct MonitorArgs {
    /// Process ids to watch.
    #[arg(long, num_args = 1.., required_unless_present = "name", conflicts_with = "name")]
    pub pid: Vec<u32>,
    /// Watch every process with this command name (as in /proc/PID/comm).
    #[arg(long)]
    pub name: Option<String>,
    /// Time between samples.
    #[arg(long, default_value = "1s", value_parser = crate::config::units::parse_duration)]
    pub interval: Duration,
    /// Stop after this long (default: when every process has exited, or on Ctrl-C).
    #[arg(long, value_parser = crate::config::units::parse_duration)]
    pub duration: Option<Duration>,
}

/// Header of the per-sample rows.
pub const ROW_HEADER: &str =
    "| elapsed (s) | process | PID | % cpu | user (ms) | sys (ms) | Mem (bytes) | Mem |";
/// Header of the summary table.
pub const SUMMARY_HEADER: &str =
    "| process | PID | elapsed (s) | avg Mem (bytes) | avg Mem | peak Mem (bytes) | peak Mem | avg % cpu |";

pub fn run(a: MonitorArgs) -> Result<(), String> {
    if a.interval.is_zero() {
        return Err("--interval must be positive".into());
    }
    let pids = match &a.name {
        Some(n) => {
            let pids = pids_named(n);
            if pids.is_empty() {
                return Err(format!("no running process is named {n:?}"));
            }
            pids
        }
        None => a.pid.clone(),
    };
    let mut watches = Vec::new();
    for pid in pids {
        watches.push(Watch::start(pid).ok_or_else(|| {
            format!("process {pid} does not exist (or /proc/{pid} cannot be read)")
        })?);
    }
    let interrupted = interrupt_flag();
    let start = Instant::now();
    let mut running: Vec<bool> = vec![true; watches.len()];
    println!("{ROW_HEADER}");
    let mut next = start + a.interval;
    loop {
        if !sleep_until(next, interrupted) {
            break;
        }
        next += a.interval;
        let elapsed = start.elapsed().as_secs_f64();
        for (w, alive) in watches.iter_mut().zip(running.iter_mut()) {
            if !*alive {
                continue;
            }
            match w.sample() {
                Some(i) => println!(
                    "| {elapsed:.1} | {} | {} | {:.1} | {} | {} | {} | {} |",
                    w.name,
                    w.pid,
                    i.cpu_percent,
                    i.user_ms,
                    i.sys_ms,
                    i.rss,
                    human_bytes(i.rss)
                ),
                None => {
                    eprintln!("monitor: process {} ({}) has exited", w.pid, w.name);
                    *alive = false;
                }
            }
        }
        let over = a.duration.is_some_and(|d| start.elapsed() >= d);
        if over || !running.iter().any(|r| *r) {
            break;
        }
    }
    print_summary(&watches);
    Ok(())
}

pub fn print_summary(watches: &[Watch]) {
    println!("\nsummary\n{SUMMARY_HEADER}");
    for w in watches {
        println!(
            "| {} | {} | {:.1} | {} | {} | {} | {} | {:.1} |",
            w.name,
            w.pid,
            w.elapsed().as_secs_f64(),
            w.average_rss(),
            human_bytes(w.average_rss()),
            w.peak_rss(),
            human_bytes(w.peak_rss()),
            w.average_cpu_percent()
        );
    }
}

/// Set by SIGINT once [`interrupt_flag`] has installed its handler: the
/// tools stop and still print their summary.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the SIGINT handler and returns the flag it sets.
pub fn interrupt_flag() -> &'static AtomicBool {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
    &INTERRUPTED
}

/// Sleeps until `deadline` in short steps; false if interrupted.
pub fn sleep_until(deadline: Instant, interrupted: &AtomicBool) -> bool {
    loop {
        if interrupted.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}
