//! Measured runs and the markdown table they are reported in.

use std::path::PathBuf;
use std::time::Duration;

/// What one measured run produced.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub seconds: f64,
    pub records: usize,
    /// Bytes the rate in MB/s is computed from (output or wire bytes).
    pub bytes: u64,
    /// CPU time of the measured logferry process, if one was measured.
    pub cpu: Option<Duration>,
    pub peak_rss: Option<u64>,
}

impl Run {
    pub fn records_per_sec(&self) -> f64 {
        self.records as f64 / self.seconds
    }

    pub fn row(&self, name: &str) -> String {
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
            self.records,
            self.seconds,
            self.records_per_sec(),
            self.bytes as f64 / self.seconds / 1e6
        )
    }
}

pub const HEADER: &str = "| pipeline | records | seconds | records/s | MB/s | CPU s / M records | peak RSS MiB |\n|---|---|---|---|---|---|---|";

/// The median run by duration (the slower middle one for an even count).
pub fn median(runs: &[Run]) -> Run {
    let mut sorted = runs.to_vec();
    sorted.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    sorted[sorted.len() / 2]
}

/// Prints every run of every pipeline and their medians.
pub fn print(pipelines: &[(&str, &[Run])]) {
    println!("\n{HEADER}");
    for (name, runs) in pipelines {
        for (i, r) in runs.iter().enumerate() {
            println!("{}", r.row(&format!("{name}, run {}", i + 1)));
        }
    }
    for (name, runs) in pipelines {
        println!("{}", median(runs).row(&format!("**{name}, median**")));
    }
}

/// Options every scenario has.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Runs; the report shows each and the median.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Directory for configs and output files (removed afterwards unless given).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// A scratch directory, removed on drop unless the user chose it.
pub struct WorkDir {
    pub path: PathBuf,
    remove: bool,
}

impl WorkDir {
    pub fn new(chosen: Option<PathBuf>) -> Result<Self, String> {
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

/// Says, under a file-writing benchmark's figures, that this machine hands
/// freed memory back to its host, which skews them (docs/BENCHMARKS.md,
/// "Reading the numbers"); nothing where it does not.
pub fn note_free_page_reporting() {
    if let Some(order) = super::procfs::free_page_reporting() {
        println!(
            "\nnote: this machine reports freed memory to its host (free page reporting, order \
             {order}): pages freed more than about 2 s before are faulted in again when reused, \
             so files written after a pause or by the slower program cost more to write. For \
             comparable figures pause it for the sitting (echo 11 > \
             /sys/module/page_reporting/parameters/page_reporting_order) after writing and \
             deleting a few times the output once; see docs/BENCHMARKS.md, Reading the numbers."
        );
    }
}
