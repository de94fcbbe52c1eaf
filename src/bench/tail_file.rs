//! `bench tail-file`: files written in full before the start (one, or
//! `--files N` of them) are tailed from their head into one raw file;
//! measured until the output holds every line, then the CPU used while
//! idle is sampled. Baseline: `cat in… > out` in the same run.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::process::{wait_for_size, Proc};
use super::report::{self, Run, RunArgs, WorkDir};

/// How long CPU is sampled once every line is out.
const IDLE_SAMPLE: Duration = Duration::from_secs(6);

#[derive(Debug, clap::Args)]
pub struct TailFileArgs {
    /// Bytes per line, newline excluded.
    #[arg(long, default_value_t = 100)]
    pub line_size: usize,
    /// Lines in each input file.
    #[arg(long, default_value_t = 10_000_000)]
    pub lines: usize,
    /// Input files (each of `--lines` lines), all followed by one glob.
    #[arg(long, default_value_t = 1)]
    pub files: usize,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: TailFileArgs) -> Result<(), String> {
    if a.lines == 0 || a.run.runs == 0 || a.line_size == 0 || a.files == 0 {
        return Err("lines, files, runs and line-size must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let logs = dir.path.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let inputs: Vec<std::path::PathBuf> = if a.files == 1 {
        vec![logs.join("input.log")]
    } else {
        (0..a.files)
            .map(|i| logs.join(format!("input-{i}.log")))
            .collect()
    };
    for input in &inputs {
        write_input(input, a.line_size, a.lines)?;
    }
    let glob = if a.files == 1 {
        inputs[0].display().to_string()
    } else {
        logs.join("*.log").display().to_string()
    };
    let lines = a.lines * a.files;
    let bytes = (lines * (a.line_size + 1)) as u64;
    println!(
        "tail → file (raw): {} file(s) × {} lines of {} B ({:.1} MB), written before the start; {} runs",
        a.files,
        a.lines,
        a.line_size,
        bytes as f64 / 1e6,
        a.run.runs
    );
    let out = dir.path.join("out.log");
    let mut cat = Vec::new();
    let mut ours = Vec::new();
    let mut idle = Vec::new();
    for i in 0..a.run.runs {
        let _ = std::fs::remove_file(&out);
        let start = Instant::now();
        let status = Command::new("cat")
            .args(&inputs)
            .stdout(std::fs::File::create(&out).map_err(|e| e.to_string())?)
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| format!("cat: {e}"))?;
        if !status.success() {
            return Err("cat failed".into());
        }
        cat.push(Run {
            seconds: start.elapsed().as_secs_f64(),
            records: lines,
            bytes,
            cpu: None,
            peak_rss: None,
        });
        let _ = std::fs::remove_file(&out);

        let start = Instant::now();
        let mut p = Proc::start(
            &dir.path,
            "tail-file",
            &format!(
                "[sources.tail]\ntype = \"tail\"\npaths = [{:?}]\ntag = \"bench\"\nread_from_head = true\n\n[sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\n",
                glob,
                out.display().to_string()
            ),
        )?;
        wait_for_size(&out, bytes, &mut [&mut p])?;
        let seconds = start.elapsed().as_secs_f64();
        let after = p.sample()?;
        // idle: nothing is written now (long enough to include a rescan
        // of the globs)
        std::thread::sleep(IDLE_SAMPLE);
        let later = p.sample()?;
        idle.push(later.cpu_since(&after).as_secs_f64() / IDLE_SAMPLE.as_secs_f64() * 100.0);
        drop(p);
        ours.push(Run {
            seconds,
            records: lines,
            bytes,
            cpu: Some(after.cpu()),
            peak_rss: Some(after.peak_rss),
        });
        let _ = std::fs::remove_file(&out);
        eprintln!("run {}: {}", i + 1, ours[i].row("logferry"));
    }
    report::print(&[
        ("baseline: cat in… > out", &cat),
        ("logferry tail → file (start-up included)", &ours),
    ]);
    let (c, o) = (report::median(&cat), report::median(&ours));
    println!(
        "\nmedians: logferry {:.0} lines/s, {:.1} MB/s; cat {:.1} MB/s; logferry / cat: {:.2}; CPU while idle afterwards: {:.2} % of a core (max of runs)",
        o.records_per_sec(),
        o.bytes as f64 / o.seconds / 1e6,
        c.bytes as f64 / c.seconds / 1e6,
        c.seconds / o.seconds,
        idle.iter().copied().fold(0.0, f64::max)
    );
    report::note_free_page_reporting();
    Ok(())
}

fn write_input(path: &std::path::Path, size: usize, lines: usize) -> Result<(), String> {
    let mut f = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(path).map_err(|e| e.to_string())?,
    );
    let mut line = vec![b'x'; size + 1];
    line[size] = b'\n';
    for i in 0..lines {
        let digits = format!("{i:012}");
        let n = digits.len().min(size);
        line[..n].copy_from_slice(&digits.as_bytes()[digits.len() - n..]);
        f.write_all(&line).map_err(|e| e.to_string())?;
    }
    f.flush().map_err(|e| e.to_string())
}
