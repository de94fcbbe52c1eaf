//! Benchmark scenarios and their report.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::load::{packed_frame, send_frames};
use super::procfs;

#[derive(Debug, clap::Args)]
pub struct ForwardFileArgs {
    /// Bytes per record (the message written as one line).
    #[arg(long, default_value_t = 100)]
    pub record_size: usize,
    /// Records per run.
    #[arg(long, default_value_t = 10_000_000)]
    pub records: usize,
    /// Records per PackedForward chunk.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// Runs; the report shows each and the median.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Directory for configs and output files (removed afterwards).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// What one measured run produced.
#[derive(Debug, Clone, Copy)]
struct Run {
    seconds: f64,
    records: usize,
    out_bytes: u64,
    cpu: Option<Duration>,
    peak_rss: Option<u64>,
}

impl Run {
    fn row(&self, name: &str) -> String {
        let rps = self.records as f64 / self.seconds;
        let mbps = self.out_bytes as f64 / self.seconds / 1e6;
        let cpu = self
            .cpu
            .map(|c| format!("{:.3}", c.as_secs_f64() / (self.records as f64 / 1e6)))
            .unwrap_or_else(|| "-".into());
        let rss = self
            .peak_rss
            .map(|r| format!("{:.1}", r as f64 / (1024.0 * 1024.0)))
            .unwrap_or_else(|| "-".into());
        format!(
            "| {name} | {} | {:.3} | {:.0} | {:.1} | {cpu} | {rss} |",
            self.records, self.seconds, rps, mbps
        )
    }
}

fn header() -> &'static str {
    "| pipeline | records | seconds | records/s | MB/s | CPU s / M records | peak RSS MiB |\n|---|---|---|---|---|---|---|"
}

fn median(runs: &mut [Run]) -> Run {
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    runs[runs.len() / 2]
}

pub fn forward_file(a: ForwardFileArgs) -> Result<(), String> {
    if a.records == 0 || a.batch == 0 || a.runs == 0 || a.record_size == 0 {
        return Err("records, batch, runs and record-size must be positive".into());
    }
    let chunks = a.records.div_ceil(a.batch);
    let records = chunks * a.batch;
    let frame = packed_frame("bench", a.batch, a.record_size);
    let out_bytes = (records * (a.record_size + 1)) as u64;
    let wire_bytes = (frame.len() * chunks) as u64;
    let dir = WorkDir::new(a.dir.clone())?;
    println!(
        "forward → file (raw): {records} records of {} B in PackedForward chunks of {} ({:.1} MB on the wire, {:.1} MB written), {} runs",
        a.record_size,
        a.batch,
        wire_bytes as f64 / 1e6,
        out_bytes as f64 / 1e6,
        a.runs
    );
    let mut base = Vec::new();
    let mut ours = Vec::new();
    for i in 0..a.runs {
        base.push(socket_copy(
            &dir.path.join("baseline.out"),
            &frame,
            chunks,
            records,
            wire_bytes,
        )?);
        ours.push(logferry_forward_file(
            &dir.path, i, &frame, chunks, records, out_bytes,
        )?);
        eprintln!("run {}: {}", i + 1, ours[i].row("logferry"));
    }
    println!("\n{}", header());
    for (i, r) in base.iter().enumerate() {
        println!(
            "{}",
            r.row(&format!("baseline: socket → file copy, run {}", i + 1))
        );
    }
    for (i, r) in ours.iter().enumerate() {
        println!(
            "{}",
            r.row(&format!("logferry forward → file, run {}", i + 1))
        );
    }
    let (b, o) = (median(&mut base), median(&mut ours));
    println!("{}", b.row("**baseline median**"));
    println!("{}", o.row("**logferry median**"));
    println!(
        "\nlogferry median: {:.0} records/s, {:.1} MB/s of output; baseline moved the wire bytes at {:.1} MB/s (logferry/baseline wire rate: {:.2})",
        o.records as f64 / o.seconds,
        o.out_bytes as f64 / o.seconds / 1e6,
        wire_bytes as f64 / b.seconds / 1e6,
        b.seconds / o.seconds
    );
    Ok(())
}

/// A scratch directory, removed on drop unless the user chose it.
struct WorkDir {
    path: PathBuf,
    remove: bool,
}

impl WorkDir {
    fn new(chosen: Option<PathBuf>) -> Result<Self, String> {
        let (path, remove) = match chosen {
            Some(p) => (p, false),
            None => (
                std::env::temp_dir().join(format!("logferry-bench-{}", std::process::id())),
                true,
            ),
        };
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(WorkDir { path, remove })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Waits until `path` holds `bytes` bytes.
fn wait_for_size(path: &Path, bytes: u64, child: &mut Option<&mut Child>) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if size >= bytes {
            return Ok(());
        }
        if let Some(c) = child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                return Err(format!(
                    "logferry exited early ({status}) with {size} of {bytes} bytes written"
                ));
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{} stuck at {size} of {bytes} bytes",
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Baseline: a loopback receiver copies the same wire bytes into a file.
fn socket_copy(
    out: &Path,
    frame: &[u8],
    chunks: usize,
    records: usize,
    wire: u64,
) -> Result<Run, String> {
    let _ = std::fs::remove_file(out);
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let out_path = out.to_path_buf();
    let receiver = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        let mut f = std::fs::File::create(out_path)?;
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            f.write_all(&buf[..n])?;
        }
    });
    let start = Instant::now();
    send_frames(addr, frame, chunks).map_err(|e| format!("baseline sender: {e}"))?;
    receiver
        .join()
        .map_err(|_| "baseline receiver panicked".to_string())?
        .map_err(|e| format!("baseline receiver: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(out);
    Ok(Run {
        seconds,
        records,
        out_bytes: wire,
        cpu: None,
        peak_rss: None,
    })
}

/// Starts `logferry run` on a config and returns it with its forward address.
fn start_logferry(config: &Path) -> Result<(Child, SocketAddr), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["run", "--config"])
        .arg(config)
        .env("LOGFERRY_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start logferry: {e}"))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("ERROR") || line.contains("WARN") {
                eprintln!("logferry: {line}");
            }
            if let Some(addr) = line
                .contains("forward source listening")
                .then(|| {
                    line.split_whitespace()
                        .find_map(|w| w.strip_prefix("address="))
                })
                .flatten()
                .and_then(|a| a.parse::<SocketAddr>().ok())
            {
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| "logferry did not start listening".to_string())?;
    Ok((child, addr))
}

fn stop(child: &mut Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

fn logferry_forward_file(
    dir: &Path,
    run: usize,
    frame: &[u8],
    chunks: usize,
    records: usize,
    out_bytes: u64,
) -> Result<Run, String> {
    let out = dir.join(format!("out-{run}.log"));
    let _ = std::fs::remove_file(&out);
    let config = dir.join("forward-file.toml");
    std::fs::write(
        &config,
        format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"raw\"\n",
            out.display().to_string()
        ),
    )
    .map_err(|e| e.to_string())?;
    let (mut child, addr) = start_logferry(&config)?;
    let pid = child.id();
    let before = procfs::sample(pid).ok_or("cannot read /proc for logferry")?;
    let start = Instant::now();
    let frame = frame.to_vec();
    let sender = std::thread::spawn(move || send_frames(addr, &frame, chunks));
    let waited = wait_for_size(&out, out_bytes, &mut Some(&mut child));
    let seconds = start.elapsed().as_secs_f64();
    let after = procfs::sample(pid);
    let sent = sender.join();
    stop(&mut child);
    let _ = std::fs::remove_file(&out);
    waited?;
    sent.map_err(|_| "sender panicked".to_string())?
        .map_err(|e| format!("sender: {e}"))?;
    let after = after.ok_or("logferry exited during the run")?;
    Ok(Run {
        seconds,
        records,
        out_bytes,
        cpu: Some(after.cpu().saturating_sub(before.cpu())),
        peak_rss: Some(after.peak_rss),
    })
}
