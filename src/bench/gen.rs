//! `bench gen`: writes log lines to a file at a steady rate (like
//! dummer): fixed-size lines or LTSV access-log lines with random values
//! from a seeded generator, optionally rotated, and reports what it wrote.
//! Every line carries its write time (`stamp.rs`): a fixed-size line is
//! `NUMBER t=STAMP xxx…` (the stamp needs lines of at least 34 bytes), an
//! LTSV line ends with a `stamp:t=STAMP` field.
//!
//! The rate holds over long runs because each line has a due time
//! (`start + n / rate`): the writer catches up on every line that is due,
//! then sleeps until the next one, so sleep overshoot never accumulates.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::monitor::{interrupt_flag, sleep_until};
use super::output::AppendFile;
use super::stamp::{self, Stamp};

#[derive(Debug, clap::Args)]
pub struct GenArgs {
    /// File to append to (created if missing).
    #[arg(long)]
    pub file: PathBuf,
    /// Lines per second; 0 writes as fast as possible.
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Stop after this long.
    #[arg(long, value_parser = crate::config::units::parse_duration, required_unless_present = "count")]
    pub duration: Option<Duration>,
    /// Stop after this many lines.
    #[arg(long)]
    pub count: Option<u64>,
    /// Bytes per line, newline excluded (fixed-size lines; at least 34 to
    /// carry the write-time stamp).
    #[arg(long, default_value_t = 100, conflicts_with = "template")]
    pub size: usize,
    /// Line template instead of fixed-size lines: `ltsv` (an access log:
    /// time, level, method, uri, status, reqtime, size, host, ua).
    #[arg(long, value_enum)]
    pub template: Option<Template>,
    /// Seed of the random values (the same seed writes the same values).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Rename the file to FILE.1 and start a new one before it would grow
    /// past this many bytes (`10MiB`, `500000`).
    #[arg(long, value_parser = crate::config::units::parse_bytes)]
    pub rotate_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Template {
    Ltsv,
}

/// Shortest sleep between writes: at high rates several due lines go out
/// in one write instead of one wake-up per line.
const MIN_SLEEP: Duration = Duration::from_millis(1);

pub fn run(a: GenArgs) -> Result<(), String> {
    if a.size == 0 || !a.rate.is_finite() || a.rate < 0.0 {
        return Err("size must be positive and rate 0 (unlimited) or more".into());
    }
    if a.rate == 0.0 && a.count.is_none() && a.duration.is_none() {
        return Err("give --count or --duration".into());
    }
    let mut file = AppendFile::open(&a.file, a.rotate_bytes)?;
    let interrupted = interrupt_flag();
    let start = Instant::now();
    let lines = Lines {
        rate: a.rate,
        duration: a.duration,
        count: a.count,
        size: a.size,
        template: a.template,
        seed: a.seed,
    };
    let (lines, bytes) = write_lines(&mut file, &lines, interrupted)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "wrote {lines} lines, {bytes} bytes to {} in {secs:.3} s: {:.0} lines/s ({}), {:.2} MB/s; {} rotation(s)",
        a.file.display(),
        lines as f64 / secs,
        if a.rate > 0.0 {
            format!("target {:.0}", a.rate)
        } else {
            "unlimited".into()
        },
        bytes as f64 / secs / 1e6,
        file.rotations
    );
    Ok(())
}

/// What [`write_lines`] writes: the generator's options, also used by
/// the scenarios' in-process writers.
pub struct Lines {
    /// Lines per second; 0: as fast as possible.
    pub rate: f64,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many lines.
    pub count: Option<u64>,
    /// Bytes per fixed-size line, newline excluded.
    pub size: usize,
    /// LTSV lines instead of fixed-size ones.
    pub template: Option<Template>,
    /// Seed of the LTSV values.
    pub seed: u64,
}

/// Appends lines to `file` at `l.rate` until `l.duration` or `l.count`
/// is reached or `stop` is set; returns the lines and bytes written.
pub fn write_lines(
    file: &mut AppendFile,
    l: &Lines,
    stop: &AtomicBool,
) -> Result<(u64, u64), String> {
    let mut rng = Rng::new(l.seed);
    let pace = Pace {
        rate: l.rate,
        duration: l.duration,
        count: l.count,
        hold: None,
    };
    write_paced(file, &pace, stop, |batch, n, stamp| match l.template {
        Some(Template::Ltsv) => ltsv_line(batch, &mut rng, stamp),
        None => stamp::numbered_line(batch, format!("{n:012}").as_bytes(), l.size, stamp),
    })
}

/// When [`write_paced`] writes and when it stops.
pub struct Pace<'a> {
    /// Lines per second; 0: as fast as possible.
    pub rate: f64,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many lines.
    pub count: Option<u64>,
    /// While set, nothing is written (a scenario holds its writers back
    /// while the pipeline is too far behind them).
    pub hold: Option<&'a AtomicBool>,
}

/// Appends the lines that `line` makes (line `n`, from 0, appended to the
/// batch with the batch's write time) to `file` at `p.rate` until
/// `p.duration` or `p.count` is reached or `stop` is set; returns the
/// lines and bytes written. The lines due at one wake-up go out in one
/// `write()`, all stamped with the time just before it.
pub fn write_paced(
    file: &mut AppendFile,
    p: &Pace,
    stop: &AtomicBool,
    mut line: impl FnMut(&mut Vec<u8>, u64, &Stamp),
) -> Result<(u64, u64), String> {
    let start = Instant::now();
    let end = p.duration.map(|d| start + d);
    let limit = p.count.unwrap_or(u64::MAX);
    let (mut lines, mut bytes) = (0u64, 0u64);
    let mut batch = Vec::with_capacity(1 << 16);
    while lines < limit {
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            break;
        }
        if p.hold.is_some_and(|h| h.load(Ordering::Relaxed)) {
            if !sleep_until(now + MIN_SLEEP, stop) {
                break;
            }
            continue;
        }
        // every line due by now (a batch at most when unlimited)
        let due = if p.rate == 0.0 {
            lines + 10_000
        } else {
            lines_due(now - start, p.rate)
        };
        let due = due.min(limit);
        batch.clear();
        let stamp = Stamp::now();
        while lines < due {
            line(&mut batch, lines, &stamp);
            lines += 1;
        }
        if !batch.is_empty() {
            file.write(&batch)?;
            bytes += batch.len() as u64;
        }
        if lines >= limit {
            break;
        }
        if p.rate > 0.0 {
            let next = start + due_at(lines, p.rate);
            // at high rates, wake once a millisecond and write what is due
            let wake = next.max(now + MIN_SLEEP);
            if !sleep_until(end.map_or(wake, |e| wake.min(e)), stop) {
                break;
            }
        } else if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    Ok((lines, bytes))
}

/// Lines due `elapsed` after the start at `rate` lines/s (line `n`,
/// counted from 0, is due at `n / rate`).
fn lines_due(elapsed: Duration, rate: f64) -> u64 {
    (elapsed.as_secs_f64() * rate) as u64 + 1
}

/// When line `n` is due, after the start.
fn due_at(n: u64, rate: f64) -> Duration {
    Duration::from_secs_f64(n as f64 / rate)
}

/// One LTSV access-log line, its write time in a last `stamp` field.
fn ltsv_line(out: &mut Vec<u8>, rng: &mut Rng, stamp: &Stamp) {
    use std::io::Write;
    const LEVELS: [&str; 4] = ["INFO", "INFO", "WARN", "ERROR"];
    const METHODS: [&str; 4] = ["GET", "GET", "POST", "PUT"];
    const PATHS: [&str; 5] = [
        "/",
        "/api/v1/users",
        "/api/v1/orders",
        "/login",
        "/static/app.js",
    ];
    const STATUS: [u16; 5] = [200, 200, 201, 404, 500];
    const AGENTS: [&str; 3] = ["curl/8.5.0", "Mozilla/5.0", "logferry-gen/1"];
    let time = chrono::Utc::now().format("%d/%b/%Y:%H:%M:%S %z");
    let _ = write!(
        out,
        "time:{time}\tlevel:{}\tmethod:{}\turi:{}?id={}\tstatus:{}\treqtime:{}.{:03}\tsize:{}\thost:10.0.{}.{}\tua:{}\tstamp:",
        rng.pick(&LEVELS),
        rng.pick(&METHODS),
        rng.pick(&PATHS),
        rng.below(100_000),
        rng.pick(&STATUS),
        rng.below(3),
        rng.below(1000),
        rng.below(65_536),
        rng.below(256),
        rng.below(256),
        rng.pick(&AGENTS)
    );
    out.extend_from_slice(stamp.as_bytes());
    out.push(b'\n');
}

/// splitmix64: small, fast, and the same sequence for the same seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_holds_over_an_hour_whatever_the_sleeps_overshoot() {
        // the writer's loop on a simulated clock: every sleep wakes 3 ms
        // late, and at least 1 ms passes between writes
        let rate = 5000.0;
        let (mut t, mut written) = (Duration::ZERO, 0u64);
        let hour = Duration::from_secs(3600);
        while t < hour {
            written = written.max(lines_due(t, rate));
            let next = due_at(written, rate).max(t + MIN_SLEEP);
            t = next + Duration::from_millis(3);
        }
        let want = rate * 3600.0;
        // off by at most the lines of one late wake-up, not by an hour of
        // accumulated lateness
        assert!(
            (written as f64 - want).abs() <= rate * 0.005,
            "{written} lines, want {want}"
        );
    }

    #[test]
    fn ltsv_lines_have_every_field_and_follow_the_seed() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let (mut r1, mut r2) = (Rng::new(7), Rng::new(7));
        let s = Stamp::at(1_764_201_600_123_456_789);
        ltsv_line(&mut a, &mut r1, &s);
        ltsv_line(&mut b, &mut r2, &s);
        let line = String::from_utf8(a.clone()).unwrap();
        let keys: Vec<&str> = line
            .trim_end()
            .split('\t')
            .map(|f| f.split_once(':').unwrap().0)
            .collect();
        assert_eq!(
            keys,
            [
                "time", "level", "method", "uri", "status", "reqtime", "size", "host", "ua",
                "stamp"
            ]
        );
        assert!(line.ends_with("\tstamp:t=1764201600123456789\n"), "{line}");
        assert_eq!(stamp::find(&a), Some(1_764_201_600_123_456_789));
        // the same seed gives the same values (time aside)
        let strip = |v: &[u8]| {
            String::from_utf8_lossy(v)
                .split_once('\t')
                .unwrap()
                .1
                .to_string()
        };
        assert_eq!(strip(&a), strip(&b));
        assert_ne!(Rng::new(7).next(), Rng::new(8).next());
    }
}
