//! The benchmark toolkit runs end to end (tiny sizes: this checks that
//! every scenario works and reports, not how fast anything is).

mod common;

use std::process::Command;

use common::BIN;

/// `logferry bench ARGS`, which must succeed; its stdout, with the
/// whole-pipeline table.
fn bench(args: &[&str]) -> String {
    let stdout = run_bench(args);
    assert!(stdout.contains("| pipeline | records | seconds | records/s | MB/s | CPU s / M records | peak RSS MiB |"), "{stdout}");
    stdout
}

/// `logferry bench ARGS`, which must succeed; its stdout.
fn run_bench(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .arg("bench")
        .args(args)
        .env("LOGFERRY_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn forward_file_reports_logferry_and_its_baseline() {
    let out = bench(&["forward-file", "--records", "20000", "--runs", "1"]);
    assert!(
        out.contains("baseline: socket → file copy") && out.contains("logferry forward → file"),
        "{out}"
    );
}

#[test]
fn forward_file_over_many_connections() {
    let out = bench(&[
        "forward-file",
        "--records",
        "20000",
        "--runs",
        "1",
        "--connections",
        "7",
    ]);
    assert!(
        out.contains("over 7 connection(s)") && out.contains("logferry forward → file"),
        "{out}"
    );
}

#[test]
fn forward_file_behind_a_disk_buffer() {
    let out = bench(&[
        "forward-file",
        "--records",
        "20000",
        "--runs",
        "1",
        "--disk-buffer",
    ]);
    assert!(
        out.contains("disk buffer, fsync = interval") && out.contains("logferry forward → file"),
        "{out}"
    );
}

#[test]
fn relay_with_tls_and_acks() {
    let out = bench(&[
        "relay",
        "--records",
        "20000",
        "--runs",
        "1",
        "--tls",
        "--ack",
    ]);
    assert!(out.contains("the relay tier keeps"), "{out}");
}

#[test]
fn forward_sink() {
    let out = bench(&["forward-sink", "--records", "20000", "--runs", "1"]);
    assert!(out.contains("generator → forward sink → receiver"), "{out}");
}

#[test]
fn tail_file_against_cat() {
    let out = bench(&["tail-file", "--lines", "20000", "--runs", "1"]);
    assert!(
        out.contains("baseline: cat in… > out") && out.contains("CPU while idle"),
        "{out}"
    );
    let out = bench(&[
        "tail-file",
        "--lines",
        "2000",
        "--files",
        "20",
        "--runs",
        "1",
    ]);
    assert!(
        out.contains("20 file(s) × 2000 lines") && out.contains("| 40000 |"),
        "{out}"
    );
}

#[test]
fn sinks_opensearch_counts_every_record_in_the_index() {
    // the run ends only once the index's _count holds every record sent
    let os = common::opensearch::OpenSearch::shared();
    let out = bench(&[
        "sinks",
        "--workload",
        "opensearch",
        "--endpoint",
        os.url(),
        "--records",
        "3000",
        "--runs",
        "1",
        "--no-peer",
    ]);
    assert!(
        out.contains("forward → opensearch sink")
            && out.contains("| **logferry, median** | 3000 |"),
        "{out}"
    );
}

#[test]
fn sinks_http_counts_every_record_in_the_receivers_file() {
    // the run ends only once the receiver's file holds a line per record
    let out = bench(&[
        "sinks",
        "--workload",
        "http",
        "--records",
        "3000",
        "--runs",
        "1",
        "--no-peer",
    ]);
    assert!(
        out.contains("forward → http sink") && out.contains("| **logferry, median** | 3000 |"),
        "{out}"
    );
    assert!(out.contains("HTTP receiver (logferry): CPU s"), "{out}");
}

#[test]
fn syslog_over_udp_and_tcp_counts_every_message() {
    // 500 numbered messages a second for 2 s into the udp source, then
    // over one TCP connection (a write each) into the tcp source with its
    // default 1 s linger: every one is counted in the output
    for command in ["udp-syslog", "tcp-syslog"] {
        let out = run_bench(&[
            command,
            "--rates",
            "500",
            "--seconds",
            "2",
            "--runs",
            "1",
            "--no-peer",
        ]);
        assert!(
            out.contains("| 500 | **logferry, median** | 1000 | 1000 | 0 |"),
            "{command}: {out}"
        );
    }
}

#[test]
fn sinks_at_a_rate_report_cpu_and_latency() {
    // 200 records/s for a second: the run ends once the receiver's file
    // holds all 200, each record's latency taken when a count first saw
    // it; then again with the sink's queue on disk, in the run's directory
    // (and the file sink's queue of otlp-in)
    for (workload, disk) in [("http", false), ("http", true), ("otlp-in", true)] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "sinks",
            "--workload",
            workload,
            "--rates",
            "200",
            "--step-seconds",
            "1",
            "--runs",
            "1",
            "--no-peer",
            "--dir",
            dir.path().to_str().unwrap(),
        ];
        if disk {
            args.push("--disk-buffer");
        }
        let out = run_bench(&args);
        assert!(
            out.contains("| rate | logferry CPU % / p50 / p99 / max latency / peak RSS |"),
            "{out}"
        );
        let row = out
            .lines()
            .find(|l| l.starts_with("| 200 | "))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(
            row.contains(" % / ") && row.contains(" ms / ") && row.contains(" MiB"),
            "{row}"
        );
        // the records went through a disk buffer of the run's own (its
        // delivered cursor)
        let buffers = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("buffer-"))
            .flat_map(|e| std::fs::read_dir(e.path()).unwrap().flatten())
            .filter(|e| e.file_name() == "ack")
            .count();
        assert_eq!(buffers, usize::from(disk), "{out}");
    }
}

#[test]
fn sinks_otlp_counts_every_record_in_the_collectors_file() {
    // a collector of this test's own: the run counts every log record
    // written to its file while it lasts
    let dir = tempfile::tempdir().unwrap();
    let _collector = common::otelcol::Collector::private(dir.path());
    let out = bench(&[
        "sinks",
        "--workload",
        "otlp",
        "--state-dir",
        dir.path().to_str().unwrap(),
        "--records",
        "3000",
        "--runs",
        "1",
        "--no-peer",
    ]);
    assert!(
        out.contains("forward → otlp sink") && out.contains("| **logferry, median** | 3000 |"),
        "{out}"
    );
    assert!(out.contains("OpenTelemetry Collector: CPU s"), "{out}");
}

#[test]
fn sinks_s3_counts_every_line_in_the_objects() {
    // the run ends only once the bucket's gzip objects hold a line per
    // record; the bucket is removed after it
    let dir = tempfile::tempdir().unwrap();
    let s3 = common::s3::S3::private(dir.path());
    let out = bench(&[
        "sinks",
        "--workload",
        "s3",
        "--state-dir",
        dir.path().to_str().unwrap(),
        "--records",
        "3000",
        "--runs",
        "1",
        "--no-peer",
    ]);
    assert!(
        out.contains("forward → s3 sink") && out.contains("| **logferry, median** | 3000 |"),
        "{out}"
    );
    assert!(out.contains("S3 server (s3s-fs): CPU s"), "{out}");
    let left: Vec<_> = std::fs::read_dir(s3.data_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(left.is_empty(), "buckets left: {left:?}");
}

#[test]
fn sinks_otlp_in_counts_every_record_in_the_file() {
    // the run ends only once the file holds a line per log record posted
    let out = bench(&[
        "sinks",
        "--workload",
        "otlp-in",
        "--records",
        "3000",
        "--runs",
        "1",
        "--no-peer",
    ]);
    assert!(
        out.contains("OTLP/HTTP protobuf → otlp source")
            && out.contains("| **logferry, median** | 3000 |"),
        "{out}"
    );
}

/// `bench kubernetes` on a node of 4 pods in the shared API server, 50
/// lines/s each, logferry alone, with `extra` arguments; its stdout.
fn bench_kubernetes(extra: &[&str]) -> String {
    let kube = common::kube::Kube::shared();
    let dir = kube.dir().to_str().unwrap();
    let mut args = vec![
        "kubernetes",
        "--pods",
        "4",
        "--rate-per-pod",
        "50",
        "--runs",
        "1",
        "--no-peer",
        "--kube-dir",
        dir,
    ];
    args.extend_from_slice(extra);
    run_bench(&args)
}

/// The median row's cell in `column` (0: the agent).
fn median_cell(out: &str, column: usize) -> String {
    out.lines()
        .find(|l| l.starts_with("| **logferry, median**"))
        .and_then(|l| l.split(" | ").nth(column))
        .unwrap_or_else(|| panic!("no median row: {out}"))
        .trim_matches(|c| c == '|' || c == ' ')
        .to_string()
}

#[test]
fn kubernetes_counts_every_line_with_its_pods_labels() {
    // the run ends only once the receiver holds every line or nothing
    // more comes; every line must carry its own pod's labels; 20 pods of
    // other nodes are there too; then the cache's memory with 5 pods
    let out = bench_kubernetes(&["--seconds", "4", "--other-pods", "20", "--cache-pods", "5"]);
    assert_eq!(median_cell(&out, 1), "800", "lines written: {out}");
    for (column, what) in [(6, "lost"), (7, "duplicated"), (8, "without labels")] {
        assert_eq!(median_cell(&out, column), "0 in all", "{what}: {out}");
    }
    assert!(
        out.contains("\n| 5 | "),
        "no cache figure for 5 pods: {out}"
    );
}

#[test]
fn kubernetes_loses_no_line_across_kubelet_rotations() {
    // rotated at 4 KiB with the sizes checked every 2 s (the kubelet's
    // default is 10 s): every container's log is rotated twice, each
    // rotated file gzipped 2 s after its rotation
    let out = bench_kubernetes(&[
        "--seconds",
        "6",
        "--rotate-bytes",
        "4KiB",
        "--rotate-check",
        "2s",
        "--cache-pods",
        "0",
    ]);
    assert_eq!(median_cell(&out, 1), "1200", "lines written: {out}");
    assert!(
        median_cell(&out, 9).parse::<u64>().unwrap() >= 8,
        "rotations: {out}"
    );
    for (column, what) in [(6, "lost"), (7, "duplicated"), (8, "without labels")] {
        assert_eq!(median_cell(&out, column), "0 in all", "{what}: {out}");
    }
}
