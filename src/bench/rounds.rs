//! The round loop shared by `tail-writer` and `tcp-writer` (after Fluent
//! Bit's perf tools): `--records` lines of `--size` bytes per round for
//! `--rounds` rounds, one round every `--round-interval`; the target
//! process is sampled at every round's end, then until it has been idle
//! for `--idle` seconds; one table row per round and a summary. Each
//! line carries the round's write time (`stamp.rs`) when it is long
//! enough (37 bytes: its 15-digit number, a space and the stamp).

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::monitor::{interrupt_flag, sleep_until};
use super::procfs::{human_bytes, Watch};
use super::stamp::{self, Stamp};

/// The table's header, exactly as Fluent Bit's tools print it.
pub const HEADER: &str =
    "records | write (b) | write | secs || % cpu | user (ms) | sys (ms) | Mem (bytes) | Mem";

#[derive(Debug, clap::Args)]
pub struct RoundArgs {
    /// Records (lines) written per round.
    #[arg(long, default_value_t = 1000)]
    pub records: usize,
    /// Bytes per record, newline excluded (at least 37 to carry the
    /// write-time stamp).
    #[arg(long, default_value_t = 100)]
    pub size: usize,
    /// Rounds.
    #[arg(long, default_value_t = 10)]
    pub rounds: usize,
    /// Time from one round's start to the next.
    #[arg(long, default_value = "1s", value_parser = crate::config::units::parse_duration)]
    pub round_interval: Duration,
    /// Process to sample each round (without it the tool only writes).
    #[arg(long)]
    pub pid: Option<u32>,
    /// After the last round, sample until the target's CPU has stayed
    /// below `--idle-cpu` for this many seconds.
    #[arg(long, default_value_t = 5)]
    pub idle: u64,
    /// CPU (percent of one core) below which the target counts as idle.
    #[arg(long, default_value_t = 2.0)]
    pub idle_cpu: f64,
    /// Give up waiting for the target to go idle after this long.
    #[arg(long, default_value = "5m", value_parser = crate::config::units::parse_duration)]
    pub idle_timeout: Duration,
}

impl RoundArgs {
    fn check(&self) -> Result<(), String> {
        if self.records == 0 || self.size == 0 || self.rounds == 0 || self.round_interval.is_zero()
        {
            return Err("records, size, rounds and round-interval must be positive".into());
        }
        Ok(())
    }
}

/// One round's lines: `size` bytes each plus a newline, numbered
/// `RRRRRRNNNNNNNNN` (round, record) so every line is distinct, stamped
/// with `stamp` where they have room.
pub fn round_lines(round: usize, records: usize, size: usize, stamp: &Stamp) -> Vec<u8> {
    let mut out = Vec::with_capacity(records * (size + 1));
    for i in 0..records {
        let digits = format!("{round:06}{i:09}");
        stamp::numbered_line(&mut out, digits.as_bytes(), size, stamp);
    }
    out
}

/// Runs the rounds; `write(round, lines)` writes one round's lines.
pub fn run(
    a: &RoundArgs,
    mut write: impl FnMut(usize, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    a.check()?;
    let mut watch = match a.pid {
        Some(pid) => Some(Watch::start(pid).ok_or_else(|| {
            format!("process {pid} does not exist (or /proc/{pid} cannot be read)")
        })?),
        None => None,
    };
    let interrupted = interrupt_flag();
    let start = Instant::now();
    let (mut records, mut write_secs) = (0usize, 0.0f64);
    println!("{HEADER}");
    for round in 0..a.rounds {
        // stamped when built, just before the write
        let lines = round_lines(round, a.records, a.size, &Stamp::now());
        let t = Instant::now();
        write(round, &lines)?;
        let secs = t.elapsed().as_secs_f64();
        records += a.records;
        write_secs += secs;
        let round_end = start + a.round_interval * (round as u32 + 1);
        let done = !sleep_until(round_end, interrupted);
        let left = format!(
            "{} | {} | {} | {secs:.4}",
            a.records,
            lines.len(),
            human_bytes(lines.len() as u64)
        );
        let right = match watch.as_mut() {
            Some(w) => {
                let i = w
                    .sample()
                    .ok_or_else(|| format!("process {} has exited", w.pid))?;
                format!(
                    "{:.2} | {} | {} | {} | {}",
                    i.cpu_percent,
                    i.user_ms,
                    i.sys_ms,
                    i.rss,
                    human_bytes(i.rss)
                )
            }
            None => "- | - | - | - | -".into(),
        };
        println!("{left} || {right}");
        if done {
            break;
        }
    }
    let writing = start.elapsed();
    let idle = match watch.as_mut() {
        Some(w) => wait_idle(w, a, interrupted)?,
        None => None,
    };
    println!("\nsummary");
    if let Some(w) = &watch {
        println!("- process: {} (PID {})", w.name, w.pid);
        println!("- elapsed: {:.1} s", start.elapsed().as_secs_f64());
        println!(
            "- average memory: {} ({} bytes), peak {}",
            human_bytes(w.average_rss()),
            w.average_rss(),
            human_bytes(w.peak_rss())
        );
        println!("- average CPU: {:.2} %", w.average_cpu_percent());
        match idle {
            Some(d) => println!("- idle after the last round: {:.1} s", d.as_secs_f64()),
            None => println!("- did not go idle (interrupted or --idle-timeout reached)"),
        }
    }
    println!(
        "- average rate: {:.0} records/s written ({records} records in {:.1} s of rounds; {:.4} s spent writing)",
        records as f64 / writing.as_secs_f64(),
        writing.as_secs_f64(),
        write_secs
    );
    Ok(())
}

/// Samples every second until the target has been below `idle_cpu` for
/// `idle` seconds in a row; how long that took after the last round, or
/// `None` if interrupted or timed out.
fn wait_idle(
    w: &mut Watch,
    a: &RoundArgs,
    interrupted: &AtomicBool,
) -> Result<Option<Duration>, String> {
    let start = Instant::now();
    let step = Duration::from_secs(1);
    let mut quiet = 0u64;
    let mut next = start + step;
    while quiet < a.idle {
        if start.elapsed() > a.idle_timeout || !sleep_until(next, interrupted) {
            return Ok(None);
        }
        next += step;
        let i = w
            .sample()
            .ok_or_else(|| format!("process {} has exited", w.pid))?;
        quiet = if i.cpu_percent < a.idle_cpu {
            quiet + 1
        } else {
            0
        };
    }
    Ok(Some(start.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_lines_are_distinct_and_sized() {
        let s = Stamp::at(1_764_201_600_123_456_789);
        let lines = round_lines(3, 4, 20, &s);
        let lines: Vec<&[u8]> = lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|l| l.len() == 20));
        assert_eq!(&lines[1][..15], b"000003000000001");
        // shorter than the numbering: still the size asked for
        assert_eq!(round_lines(0, 2, 3, &s), b"000\n001\n");
        // long enough: stamped
        let lines = round_lines(0, 2, 37, &s);
        assert_eq!(&lines[..38], b"000000000000000 t=1764201600123456789\n");
        assert_eq!(stamp::find(&lines[38..]), Some(1_764_201_600_123_456_789));
    }
}
