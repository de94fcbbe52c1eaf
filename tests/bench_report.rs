//! `logferry bench report` end to end: result files as scenarios write them
//! with `--json`, the built binary, and the page opened in headless
//! Chromium (Debian `chromium`; scripts/test-deps.sh installs it). Tests
//! fail, never skip, when Chromium is missing.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::BIN;
use serde_json::{json, Value};

const PROCESSES: [(&str, &str); 3] = [
    ("agent-1", "agent"),
    ("deliver-1", "deliver"),
    ("receiver-1", "receiver"),
];

/// A peer-deliver result of `target` in two steps, every process sampled
/// once a second; `load` scales its CPU and memory.
fn result(target: &str, load: f64) -> Value {
    let step = |label: &str, rate: f64, lost: u64| {
        let sent = (rate * 10.0) as u64;
        json!({
            "label": label,
            "offered_rate": rate,
            "seconds": 10.0,
            "sent": sent,
            "received": sent - lost,
            "received_rate": (sent - lost) as f64 / 10.0,
            "received_bytes_rate": null,
            "processes": PROCESSES.iter().map(|(name, tier)| json!({
                "name": name, "tier": tier, "pid": 4242, "rate": rate,
                "cpu_percent": 20.0 * load, "rss_bytes": (load * 40.0) as u64 * 1_048_576,
            })).collect::<Vec<_>>(),
            "remarks": if lost > 0 { json!(["delay occurred"]) } else { json!([]) },
        })
    };
    let samples: Vec<Value> = (0..20)
        .flat_map(|t| {
            PROCESSES.iter().map(move |(name, tier)| {
                json!({
                    "t": f64::from(t) + 0.5, "name": name, "tier": tier,
                    "cpu_percent": load * (10.0 + f64::from(t % 10) * 3.0),
                    "rss_bytes": ((load * 30.0) as u64 + t as u64) * 1_048_576,
                })
            })
        })
        .collect();
    json!({
        "scenario": "peer-deliver",
        "target": target,
        "started": "2026-11-22T16:00:00Z",
        "machine": { "cores": 2, "memory_bytes": 25_769_803_776u64, "kernel": "Linux 6.1.0" },
        "params": { "agents": 1, "delivers": 1, "receivers": 1, "record_size": 100 },
        "steps": [step("5000 lines/s", 5000.0, 0), step("20000 lines/s", 20000.0, 1500)],
        "samples": samples,
    })
}

fn report(args: &[&Path]) -> Output {
    Command::new(BIN)
        .args(["bench", "report"])
        .args(args)
        .env("LOGFERRY_LOG", "warn")
        .output()
        .unwrap()
}

/// Runs headless Chromium (bounded in time) on `page`.
fn chromium(profile: &Path, args: &[&str], page: &Path) -> Output {
    let out = Command::new("timeout")
        .args([
            "-k",
            "10",
            "120",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(127),
        "chromium must be installed (apt-get install chromium; scripts/test-deps.sh does)"
    );
    assert!(
        out.status.success(),
        "chromium {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn the_report_renders_in_chromium_with_tables_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("logferry.json");
    let theirs = dir.path().join("fluentd.json");
    std::fs::write(&ours, result("logferry", 1.0).to_string()).unwrap();
    std::fs::write(&theirs, result("fluentd", 2.5).to_string()).unwrap();
    let out_dir = dir.path().join("report");

    let out = report(&[Path::new("--out"), &out_dir, &ours, &theirs]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench report failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = out_dir.join("index.html");
    assert!(stdout.contains(&page.display().to_string()), "{stdout}");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing to fetch, nothing to run.
    for outside in ["src=", "href=", "url(", "<script", "<link"] {
        assert!(!html.contains(outside), "page has {outside}");
    }

    let profile = dir.path().join("chromium-profile");
    let shot = dir.path().join("shot.png");
    chromium(
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2000",
        ],
        &page,
    );
    let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 2000));
    // A blank page compresses to a few kilobytes; text and plots do not.
    assert!(png.len() > 30_000, "screenshot of {} bytes", png.len());

    let dom = chromium(&profile, &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<table").count(), 2, "a table per result file");
    assert_eq!(dom.matches("<svg").count(), 3, "three plots");
    for text in [
        "5000 lines/s",
        "20000 lines/s",
        "delay occurred",
        "Received records/s per step",
        "CPU over time",
        "Resident memory (RSS) over time",
        // Legends: systems in the rate plot, system and process over time.
        ">\nlogferry\n</text>",
        ">\nfluentd\n</text>",
        "logferry deliver-1",
        "fluentd receiver-1",
    ] {
        assert!(dom.contains(text), "{text:?} missing in Chromium's DOM");
    }
}

#[test]
fn a_file_that_is_not_a_result_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("logferry.json");
    let bad = dir.path().join("bad.json");
    std::fs::write(&good, result("logferry", 1.0).to_string()).unwrap();
    std::fs::write(&bad, r#"{"records": 12}"#).unwrap();
    let out_dir = dir.path().join("report");

    let out = report(&[Path::new("--out"), &out_dir, &good, &bad]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("bad.json") && stderr.contains("not a scenario result"),
        "{stderr}"
    );
    assert!(!out_dir.join("index.html").exists());
}
