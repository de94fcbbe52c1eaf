//! What the file-transfer scenario prints: a table row per step and the
//! headline.

use std::path::Path;

use crate::bench::procfs::{human_bytes, human_percent};
use crate::bench::results::{ProcessStep, ScenarioResult, Step};

/// Remarks that fail a step (the others only describe it).
pub fn is_failure(remark: &str) -> bool {
    !(remark.starts_with("delay occurred") || remark.starts_with("writers held back"))
}

pub const TABLE_HEADER: &str = "| record size | records/s | MB/s (payload) | sender CPU % / RSS (mean, largest) | server CPU % / RSS | written / in the file | remarks |\n|---|---|---|---|---|---|---|";

/// Mean CPU % and largest RSS of the processes of `tier` in a step.
fn tier(step: &Step, tier: &str) -> (f64, u64) {
    let ps: Vec<&ProcessStep> = step.processes.iter().filter(|p| p.tier == tier).collect();
    if ps.is_empty() {
        return (0.0, 0);
    }
    let cpu = ps.iter().map(|p| p.cpu_percent).sum::<f64>() / ps.len() as f64;
    (cpu, ps.iter().map(|p| p.rss_bytes).max().unwrap_or(0))
}

pub fn table_row(step: &Step) -> String {
    let cell = |t| {
        let (cpu, rss) = tier(step, t);
        format!("{} / {}", human_percent(cpu), human_bytes(rss))
    };
    format!(
        "| {} | {:.0} | {:.2} | {} | {} | {} / {} | {} |",
        step.label,
        step.received_rate,
        step.received_bytes_rate.unwrap_or(0.0) / 1e6,
        cell("sender"),
        cell("server"),
        step.sent,
        step.received,
        step.remarks.join("; ")
    )
}

pub fn print_headline(r: &ScenarioResult, unified: Option<&Path>) {
    let sent: u64 = r.steps.iter().map(|s| s.sent).sum();
    let received: u64 = r.steps.iter().map(|s| s.received).sum();
    println!(
        "\nrecords: {sent} written, {received} in the unified file{}, {} lost",
        unified.map_or(String::new(), |p| format!(" ({})", p.display())),
        r.lost()
    );
    let each: Vec<String> = (r.steps.iter())
        .map(|s| {
            format!(
                "{}: {:.0} records/s, {:.2} MB/s",
                s.label,
                s.received_rate,
                s.received_bytes_rate.unwrap_or(0.0) / 1e6
            )
        })
        .collect();
    if !each.is_empty() {
        println!(
            "headline: the {} server unified {} (K2HFTFUSE over 10 GbE: 937,779 records/s of 10 B, 253.7 MB/s of 4 KiB)",
            r.target,
            each.join("; ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(name: &str, tier: &str, cpu_percent: f64, rss_mib: u64) -> ProcessStep {
        ProcessStep {
            name: name.into(),
            tier: tier.into(),
            system: None,
            pid: 1,
            rate: None,
            cpu_percent,
            rss_bytes: rss_mib << 20,
        }
    }

    #[test]
    fn a_row_shows_records_payload_megabytes_and_each_role() {
        let step = Step {
            label: "4096 B records".into(),
            offered_rate: None,
            seconds: 13.0,
            sent: 30_000,
            received: 30_000,
            received_rate: 2_000.0,
            received_bytes_rate: Some(2_000.0 * 4096.0),
            processes: vec![
                process("sender-1", "sender", 10.0, 10),
                process("sender-2", "sender", 20.0, 12),
                process("server", "server", 50.0, 30),
            ],
            latency: None,
            remarks: vec![
                "delay occurred: 5 record(s) not in the unified file when the writers stopped"
                    .into(),
            ],
        };
        assert_eq!(
            table_row(&step),
            "| 4096 B records | 2000 | 8.19 | 15.0 % / 12.0 MiB | 50.0 % / 30.0 MiB | 30000 / 30000 | delay occurred: 5 record(s) not in the unified file when the writers stopped |"
        );
    }

    #[test]
    fn only_loss_duplicates_and_foreign_lines_fail_a_step() {
        assert!(!is_failure(
            "delay occurred: 3 record(s) not in the unified file"
        ));
        assert!(!is_failure("writers held back: more than 256.0 MiB …"));
        assert!(is_failure("sender-1: 1 record(s) duplicated"));
        assert!(is_failure("the window was not reached: nothing measured"));
    }
}
