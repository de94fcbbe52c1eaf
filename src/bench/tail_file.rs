//! `bench tail-file`: a file written in full before the start is tailed
//! from its head into a raw file; measured until the output holds every
//! line. Baseline: `cat in > out` in the same run.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::process::{wait_for_size, Proc};
use super::report::{self, Run, RunArgs, WorkDir};

#[derive(Debug, clap::Args)]
pub struct TailFileArgs {
    /// Bytes per line, newline excluded.
    #[arg(long, default_value_t = 100)]
    pub line_size: usize,
    /// Lines in the input file.
    #[arg(long, default_value_t = 10_000_000)]
    pub lines: usize,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn run(a: TailFileArgs) -> Result<(), String> {
    if a.lines == 0 || a.run.runs == 0 || a.line_size == 0 {
        return Err("lines, runs and line-size must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let logs = dir.path.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let input = logs.join("input.log");
    write_input(&input, a.line_size, a.lines)?;
    let bytes = (a.lines * (a.line_size + 1)) as u64;
    println!(
        "tail → file (raw): {} lines of {} B ({:.1} MB), file written before the start; {} runs",
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
            .arg(&input)
            .stdout(std::fs::File::create(&out).map_err(|e| e.to_string())?)
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| format!("cat: {e}"))?;
        if !status.success() {
            return Err("cat failed".into());
        }
        cat.push(Run {
            seconds: start.elapsed().as_secs_f64(),
            records: a.lines,
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
                input.display().to_string(),
                out.display().to_string()
            ),
        )?;
        wait_for_size(&out, bytes, &mut [&mut p])?;
        let seconds = start.elapsed().as_secs_f64();
        let after = p.sample()?;
        // idle: nothing is written now
        std::thread::sleep(Duration::from_secs(2));
        let later = p.sample()?;
        idle.push((later.cpu() - after.cpu()).as_secs_f64() / 2.0 * 100.0);
        drop(p);
        ours.push(Run {
            seconds,
            records: a.lines,
            bytes,
            cpu: Some(after.cpu()),
            peak_rss: Some(after.peak_rss),
        });
        let _ = std::fs::remove_file(&out);
        eprintln!("run {}: {}", i + 1, ours[i].row("logferry"));
    }
    report::print(&[
        ("baseline: cat in > out", &cat),
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
