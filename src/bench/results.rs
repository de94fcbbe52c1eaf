//! What a benchmark scenario measured, in one shape for every scenario and
//! every measured system: printed as tables, written with `--json FILE`,
//! and read back by `bench report` to draw the HTML page. Several result
//! files of one scenario (one per system) make one comparison.
//!
//! Rates are records per second, CPU is percent of one core, memory is
//! bytes of resident set (VmRSS), times are seconds from the scenario's
//! start.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The whole result of one scenario run against one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// `peer-deliver`, `round-robin-deliver`, `file-transfer`,
    /// `http-kafka`, `forward-kafka`, `tail-writer`, `tcp-writer`.
    pub scenario: String,
    /// The system in the measured role: `logferry`, `fluent-bit`,
    /// `fluentd`, `vector`.
    pub target: String,
    /// When the run started (RFC 3339, UTC).
    pub started: String,
    pub machine: Machine,
    /// The scenario's parameters as given (topology sizes, record size…).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// One entry per load step (a rate, a record size, a worker count).
    pub steps: Vec<Step>,
    /// Every monitor sample of every process, for the plots over time.
    pub samples: Vec<Sample>,
}

/// The machine the run was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub memory_bytes: u64,
    /// `uname -sr`.
    pub kernel: String,
}

/// One load step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// What this step varies, as shown in the first table column
    /// (`"10000 lines/s"`, `"4 KiB records"`, `"8 workers"`).
    pub label: String,
    /// Offered rate per writer (records/s); `None` for "as fast as it goes".
    pub offered_rate: Option<f64>,
    pub seconds: f64,
    /// Records the writers wrote or sent.
    pub sent: u64,
    /// Records that reached the end of the topology.
    pub received: u64,
    /// Records/s the end of the topology took in over the step.
    pub received_rate: f64,
    /// Bytes/s at the end of the topology, where it is measured in bytes.
    pub received_bytes_rate: Option<f64>,
    /// Per process: its role and what it used during the step.
    pub processes: Vec<ProcessStep>,
    /// End-to-end latency of the step's stamped lines, where the scenario
    /// reads what arrives (the deliver scenarios); absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Free-text remarks, e.g. "delay occurred" when the receivers fell
    /// behind the writers.
    pub remarks: Vec<String>,
}

impl Step {
    /// Records sent that never arrived (zero in a good run).
    pub fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.received)
    }
}

/// What one process did during one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessStep {
    /// The process's name in the topology (`agent-1`, `deliver-1`,
    /// `receiver-1`, `server`).
    pub name: String,
    /// Its tier (`agent`, `deliver`, `receiver`, `server`, `writer`).
    pub tier: String,
    /// The system it runs (`logferry`, `fluent-bit`, …), where the
    /// scenario lets each role be another system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub pid: u32,
    /// Records/s it passed on or took in, where known.
    pub rate: Option<f64>,
    /// Average CPU over the step, percent of one core.
    pub cpu_percent: f64,
    /// Largest resident set seen during the step.
    pub rss_bytes: u64,
}

/// End-to-end latency of one step: from the time a writer stamped a line
/// (just before its `write()`) to the time the scenario read it from a
/// receiver's output file. Milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Lines measured (those that carried a stamp).
    pub lines: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    /// The percentiles of `micros` (latencies in microseconds, in any
    /// order; sorted here); `None` if there are none.
    pub fn of(micros: &mut [u32]) -> Option<Latency> {
        if micros.is_empty() {
            return None;
        }
        micros.sort_unstable();
        // nearest rank: the smallest value with at least q of the lines
        // at or below it
        let at = |q: f64| {
            let rank = (q * micros.len() as f64).ceil() as usize;
            f64::from(micros[rank.clamp(1, micros.len()) - 1]) / 1000.0
        };
        Some(Latency {
            lines: micros.len() as u64,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: f64::from(micros[micros.len() - 1]) / 1000.0,
        })
    }
}

/// One monitor sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the scenario started.
    pub t: f64,
    pub name: String,
    pub tier: String,
    pub cpu_percent: f64,
    pub rss_bytes: u64,
}

impl ScenarioResult {
    /// Records lost over every step.
    pub fn lost(&self) -> u64 {
        self.steps.iter().map(Step::lost).sum()
    }

    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn read(path: &Path) -> Result<ScenarioResult, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a scenario result: {e}", path.display()))
    }
}

impl Machine {
    /// This machine, read from the system.
    pub fn this() -> Machine {
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| format!("Linux {}", r.trim()))
            .unwrap_or_default();
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles_are_nearest_ranks() {
        let mut micros: Vec<u32> = (1..=1000).rev().collect();
        let l = Latency::of(&mut micros).unwrap();
        assert_eq!(
            (l.lines, l.p50_ms, l.p99_ms, l.max_ms),
            (1000, 0.5, 0.99, 1.0)
        );
        let l = Latency::of(&mut [7000]).unwrap();
        assert_eq!((l.p50_ms, l.p99_ms, l.max_ms), (7.0, 7.0, 7.0));
        assert_eq!(Latency::of(&mut []), None);
    }

    #[test]
    fn a_result_reads_back_as_written() {
        let r = ScenarioResult {
            scenario: "peer-deliver".into(),
            target: "logferry".into(),
            started: "2026-11-22T16:00:00Z".into(),
            machine: Machine::this(),
            params: serde_json::Map::new(),
            steps: vec![Step {
                label: "1000 lines/s".into(),
                offered_rate: Some(1000.0),
                seconds: 10.0,
                sent: 10_000,
                received: 9_990,
                received_rate: 999.0,
                received_bytes_rate: None,
                processes: vec![ProcessStep {
                    name: "agent-1".into(),
                    tier: "agent".into(),
                    system: Some("fluent-bit".into()),
                    pid: 42,
                    rate: Some(1000.0),
                    cpu_percent: 3.5,
                    rss_bytes: 20 << 20,
                }],
                latency: Latency::of(&mut [3000, 1000, 2000]),
                remarks: vec![],
            }],
            samples: vec![Sample {
                t: 0.5,
                name: "agent-1".into(),
                tier: "agent".into(),
                cpu_percent: 3.0,
                rss_bytes: 19 << 20,
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        r.write(&path).unwrap();
        assert_eq!(ScenarioResult::read(&path).unwrap(), r);
        assert_eq!(r.lost(), 10);
        assert!(r.machine.cores >= 1 && r.machine.memory_bytes > 0);
        // a result written before latency and systems were measured
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"p99_ms\": 3.0") && text.contains("\"system\": \"fluent-bit\""));
        let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
        old["steps"][0].as_object_mut().unwrap().remove("latency");
        old["steps"][0]["processes"][0]
            .as_object_mut()
            .unwrap()
            .remove("system");
        std::fs::write(&path, old.to_string()).unwrap();
        let old = ScenarioResult::read(&path).unwrap();
        assert_eq!(old.steps[0].latency, None);
        assert_eq!(old.steps[0].processes[0].system, None);
        std::fs::write(&path, "{}").unwrap();
        assert!(ScenarioResult::read(&path)
            .unwrap_err()
            .contains("not a scenario result"));
    }
}
