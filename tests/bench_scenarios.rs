//! `logferry bench scenario`: the deliver and Kafka scenarios end to end
//! with logferry as the target (tiny steps: this checks that every record
//! is counted and reported, not how fast anything is), the templates of
//! the other systems as rendered, and Ctrl-C. The Kafka scenarios use the
//! local broker of scripts/kafka.sh and haproxy (scripts/test-deps.sh).
//!
//! The deliver scenarios with Fluent Bit and Fluentd in the agent and
//! receiver roles run the peers' build (named by /opt/peers/env, or the
//! file $LOGFERRY_PEERS_ENV names). A peer that is not built skips its
//! test, saying how to build it; LOGFERRY_REQUIRE_PEERS=1 makes it fail
//! the test instead.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{peer_is_built, BIN};
use serde_json::Value;

fn scenario(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["bench", "scenario"])
        .args(args)
        .env("LOGFERRY_LOG", "warn")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a smoke scenario and checks its JSON result: every step sent and
/// received the same number (> 0) of records, each tier has its processes
/// and every process was sampled.
fn smoke(name: &str, extra: &[&str], tiers: [(&str, usize); 3]) {
    let (stdout, r, dir) = run_smoke(name, extra);
    let (work, report) = (dir.path().join("work"), dir.path().join("report"));
    assert!(
        stdout.contains("| rate of writing (lines/s per agent) |") && stdout.contains("headline:"),
        "{stdout}"
    );
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{r:#}");
    for step in steps {
        let (sent, received) = (
            step["sent"].as_u64().unwrap(),
            step["received"].as_u64().unwrap(),
        );
        assert!(sent > 0 && sent == received, "{step:#}");
        let procs = step["processes"].as_array().unwrap();
        for (tier, n) in tiers {
            let of_tier: Vec<&Value> = procs.iter().filter(|p| p["tier"] == tier).collect();
            assert_eq!(of_tier.len(), n, "{tier} in {step:#}");
            assert!(
                of_tier.iter().all(|p| p["rss_bytes"].as_u64().unwrap() > 0),
                "{step:#}"
            );
        }
        assert!(
            procs
                .iter()
                .filter(|p| p["tier"] == "receiver")
                .all(|p| p["rate"].is_number()),
            "{step:#}"
        );
        assert!(procs.iter().all(|p| p["system"] == "logferry"), "{step:#}");
        latency(step, sent, None);
    }
    let samples = r["samples"].as_array().unwrap();
    for (tier, _) in tiers {
        assert!(
            samples.iter().any(|s| s["tier"] == tier),
            "no sample of the {tier} tier"
        );
    }
    // the run's own page: its table and its five plots (rate per step,
    // CPU and RSS over time, CPU and RSS per rate)
    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(page.matches("<table").count(), 1, "{page}");
    assert_eq!(page.matches("<svg").count(), 5, "{page}");
    assert!(page.contains("<th>latency p99 ms</th>"), "{page}");
    // the configs the processes ran, as rendered
    for file in ["agent-1.toml", "deliver-1.toml", "receiver-1.toml"] {
        let config = std::fs::read_to_string(work.join(file)).unwrap();
        assert!(!config.contains("{{"), "{file}:\n{config}");
    }
}

/// Checks a step's end-to-end latency: every line written was measured
/// (each carries its write-time stamp), p50 ≤ p99 ≤ max, all above zero
/// and, if `below` is given, the largest below it (ms).
fn latency(step: &Value, sent: u64, below: Option<f64>) {
    let l = &step["latency"];
    assert_eq!(l["lines"].as_u64(), Some(sent), "{step:#}");
    let (p50, p99, max) = (
        l["p50_ms"].as_f64().unwrap(),
        l["p99_ms"].as_f64().unwrap(),
        l["max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{step:#}");
    if let Some(below) = below {
        assert!(
            max < below,
            "max latency {max} ms, not below {below} ms: {step:#}"
        );
    }
}

/// Two steps of 3 s, every line timed from its write to its line in a
/// receiver's file: each latency is below the step's length, and the
/// table shows them.
#[test]
fn peer_deliver_measures_the_latency_of_every_line() {
    let (stdout, r, _dir) = run_with(
        "peer-deliver",
        &[
            "--rates",
            "200,2000",
            "--step-seconds",
            "3",
            "--sample",
            "500ms",
        ],
        false,
    );
    let header = stdout
        .lines()
        .find(|l| l.starts_with("| rate of writing"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        header.contains("| latency p50 / p99 / max (ms) | agent logferry CPU % / RSS | deliver logferry CPU % / RSS | receiver logferry CPU % / RSS |"),
        "{header}"
    );
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{r:#}");
    for step in steps {
        let sent = step["sent"].as_u64().unwrap();
        assert!(
            sent > 0 && sent == step["received"].as_u64().unwrap(),
            "{step:#}"
        );
        latency(step, sent, Some(3000.0));
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", step["label"].as_str().unwrap())))
            .unwrap_or_else(|| panic!("{stdout}"));
        let cell = format!(
            "| {:.1} / {:.1} / {:.1} |",
            step["latency"]["p50_ms"].as_f64().unwrap(),
            step["latency"]["p99_ms"].as_f64().unwrap(),
            step["latency"]["max_ms"].as_f64().unwrap()
        );
        assert!(row.contains(&cell), "{cell} not in {row}");
    }
    assert!(stdout.contains("latency at 2000 lines/s: p50 "), "{stdout}");
}

/// A deliver scenario with `system` as agent and receiver around a
/// logferry deliver tier: every record arrives, each process is of its
/// system, each line is timed.
fn agent_and_receiver_of(system: &str) {
    let (stdout, r, dir) = run_with(
        "peer-deliver",
        &["--smoke", "--agent", system, "--receiver", system],
        false,
    );
    assert!(
        stdout.contains(&format!("| agent {system} CPU % / RSS | deliver logferry CPU % / RSS | receiver {system} CPU % / RSS |")),
        "{stdout}"
    );
    assert_eq!(r["params"]["agent"], system);
    assert_eq!(r["params"]["receiver"], system);
    for step in r["steps"].as_array().unwrap() {
        let sent = step["sent"].as_u64().unwrap();
        assert!(
            sent > 0 && sent == step["received"].as_u64().unwrap(),
            "{step:#}"
        );
        let procs = step["processes"].as_array().unwrap();
        let system_of = |tier: &str| {
            let p = procs.iter().find(|p| p["tier"] == tier).unwrap();
            assert!(p["rss_bytes"].as_u64().unwrap() > 0, "{step:#}");
            p["system"].as_str().unwrap().to_string()
        };
        assert_eq!(
            [
                system_of("agent"),
                system_of("deliver"),
                system_of("receiver")
            ],
            [system, "logferry", system]
        );
        // (they flush once a second at each of their hops: no bound)
        latency(step, sent, None);
    }
    let work = dir.path().join("work");
    for file in ["agent-1.conf", "receiver-1.conf"] {
        let config = std::fs::read_to_string(work.join(file)).unwrap();
        assert!(!config.contains("{{"), "{file}:\n{config}");
    }
    let page = std::fs::read_to_string(dir.path().join("report/index.html")).unwrap();
    assert!(
        page.contains(&format!(">\nagent {system}\n</text>")),
        "{page}"
    );
}

#[test]
fn fluent_bit_as_agent_and_receiver_around_a_logferry_deliver() {
    if peer_is_built("ANCHOR_FLUENTBIT", "Fluent Bit") {
        agent_and_receiver_of("fluent-bit");
    }
}

#[test]
fn fluentd_as_agent_and_receiver_around_a_logferry_deliver() {
    if peer_is_built("ANCHOR_FLUENTD_DIR", "Fluentd") {
        agent_and_receiver_of("fluentd");
    }
}

#[test]
fn peer_deliver_smoke_counts_every_record_at_its_own_receiver() {
    smoke(
        "peer-deliver",
        &["--agents", "2"],
        [("agent", 2), ("deliver", 2), ("receiver", 2)],
    );
}

#[test]
fn round_robin_deliver_smoke_counts_every_record() {
    smoke(
        "round-robin-deliver",
        &["--agents", "2", "--delivers", "2", "--receivers", "2"],
        [("agent", 2), ("deliver", 2), ("receiver", 2)],
    );
}

#[test]
fn peer_deliver_needs_as_many_of_each_tier() {
    let out = scenario(&[
        "peer-deliver",
        "--smoke",
        "--agents",
        "2",
        "--delivers",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(text(&out).contains("give as many delivers and receivers as agents"));
}

/// The other systems are not installed here: started as `true`, they exit
/// at once, after their config was rendered into --dir.
/// Renders scenario `name`'s configs for `target` with `options`, run by
/// `true` in place of the target (so `process` exits at once and the
/// scenario fails, saying so), and returns the directory and the config
/// `file`, checked to hold no placeholder left unrendered.
fn rendered(
    name: &str,
    options: &[&str],
    target: &str,
    process: &str,
    file: &str,
) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![name, "--smoke", "--target", target, "--target-bin", "true"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["--dir", dir.path().to_str().unwrap()]);
    let out = scenario(&args);
    assert!(!out.status.success(), "{target}: {}", text(&out));
    assert!(
        text(&out).contains(&format!("{process} exited")),
        "{target}: {}",
        text(&out)
    );
    let config = std::fs::read_to_string(dir.path().join(file)).unwrap();
    assert!(
        !config.contains("{{") && !config.contains("}}"),
        "{target}:\n{config}"
    );
    (dir, config)
}

#[test]
fn the_deliver_template_of_every_system_is_rendered_whole() {
    for (target, file) in [
        ("fluent-bit", "deliver-1.conf"),
        ("fluentd", "deliver-1.conf"),
        ("vector", "deliver-1.toml"),
    ] {
        let (dir, config) = rendered("round-robin-deliver", &[], target, "deliver-1", file);
        if target == "fluent-bit" {
            let up = std::fs::read_to_string(dir.path().join("deliver-1.upstream.conf")).unwrap();
            assert!(up.contains("[UPSTREAM]") && up.contains("[NODE]"), "{up}");
            assert!(config.contains("deliver-1.upstream.conf"), "{config}");
        }
    }
    // Vector cannot balance over receivers: said before anything starts
    let out = scenario(&[
        "round-robin-deliver",
        "--smoke",
        "--target",
        "vector",
        "--receivers",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("vector has no forward sink"),
        "{}",
        text(&out)
    );
}

/// Like [`rendered`], with `true` in the agent or the receiver role.
fn rendered_role(role: &str, system: &str, process: &str, file: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (sys, bin) = (format!("--{role}"), format!("--{role}-bin"));
    let out = scenario(&[
        "peer-deliver",
        "--smoke",
        &sys,
        system,
        &bin,
        "true",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{system}: {}", text(&out));
    assert!(
        text(&out).contains(&format!("{process} exited")),
        "{system}: {}",
        text(&out)
    );
    let config = std::fs::read_to_string(dir.path().join(file)).unwrap();
    assert!(
        !config.contains("{{") && !config.contains("}}"),
        "{system}:\n{config}"
    );
    config
}

#[test]
fn the_agent_and_receiver_templates_of_every_system_are_rendered_whole() {
    for (system, file, says) in [
        ("fluent-bit", "agent-1.conf", "Name            tail"),
        ("fluentd", "agent-1.conf", "@type tail"),
    ] {
        let config = rendered_role("agent", system, "agent-1", file);
        assert!(
            config.contains(says) && config.contains("agent-1.log"),
            "{config}"
        );
    }
    for (system, file, says) in [
        ("fluent-bit", "receiver-1.conf", "Format       plain"),
        ("fluentd", "receiver-1.conf", "@type json"),
        ("vector", "receiver-1.toml", "encoding.codec = \"json\""),
    ] {
        let config = rendered_role("receiver", system, "receiver-1", file);
        assert!(
            config.contains(says) && config.contains("receiver-1"),
            "{config}"
        );
    }
    // said before anything starts
    for (args, says) in [
        (
            &["peer-deliver", "--agent", "vector"][..],
            "vector cannot be an agent",
        ),
        (
            &[
                "peer-deliver",
                "--target",
                "vector",
                "--receiver",
                "fluentd",
            ][..],
            "only the logferry receiver takes",
        ),
        (
            &["file-transfer", "--receiver", "fluent-bit"][..],
            "belong to the deliver scenarios",
        ),
    ] {
        let mut all = args.to_vec();
        all.push("--smoke");
        let out = scenario(&all);
        assert!(!out.status.success(), "{args:?}");
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        assert!(!text(&out).contains("started"), "{args:?}: {}", text(&out));
    }
}

#[test]
fn an_unknown_placeholder_in_a_template_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("deliver.toml");
    std::fs::write(
        &template,
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{{listen_prot}}\"\n",
    )
    .unwrap();
    let out = scenario(&[
        "peer-deliver",
        "--smoke",
        "--template",
        template.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("unknown placeholder {{listen_prot}} at line 3"),
        "{}",
        text(&out)
    );
}

#[test]
fn ctrl_c_mid_run_stops_every_process() {
    interrupt_mid_step(
        &[
            "round-robin-deliver",
            "--agents",
            "2",
            "--delivers",
            "2",
            "--receivers",
            "2",
            "--rates",
            "1000",
            "--step-seconds",
            "120",
        ],
        "| rate of writing",
        6,
    );
}

#[test]
fn ctrl_c_mid_file_transfer_stops_every_process() {
    interrupt_mid_step(
        &["file-transfer", "--rate", "1000", "--window", "120s"],
        "| record size",
        4,
    );
}

/// Starts scenario `args`, waits for the `processes` announced processes
/// and the table's `header`, sends SIGINT mid-step: the benchmark must
/// stop every process, then exit 1 saying it was interrupted.
fn interrupt_mid_step(args: &[&str], header: &str, processes: usize) {
    let mut child = Command::new(BIN)
        .args(["bench", "scenario"])
        .args(args)
        .env("LOGFERRY_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pids = Vec::new();
    // every process is announced, then the table header: the step is on
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(pid) = line
            .split_once(" pid=")
            .map(|(_, p)| p.parse::<u32>().unwrap())
        {
            pids.push(pid);
        }
        if line.starts_with(header) {
            break;
        }
    }
    assert_eq!(pids.len(), processes, "{pids:?}");
    std::thread::sleep(Duration::from_millis(1500));
    for &pid in &pids {
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "{pid} not running"
        );
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "bench did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    // it stopped by itself, not killed by the signal, and said so
    assert_eq!(status.code(), Some(1), "{status:?}\n{rest:?}\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    // and had stopped (and reaped) every process before exiting
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} outlived the benchmark"
        );
    }
}

/// Runs a Kafka scenario's smoke with `--json`, `--report` and `--dir`;
/// returns its parsed result and work directory. Every step must have put
/// exactly what it sent (> 0) into the topic.
fn kafka_smoke(name: &str, extra: &[&str]) -> (Value, tempfile::TempDir) {
    let (stdout, r, dir) = run_smoke(name, extra);
    assert!(
        stdout.contains("records/s into Kafka") && stdout.contains("headline"),
        "{stdout}"
    );
    assert!(stdout.contains(", 0 lost"), "{stdout}");
    assert!(r["machine"]["cores"].as_u64().unwrap() >= 1, "{r:#}");
    for step in r["steps"].as_array().unwrap() {
        let (sent, received) = (
            step["sent"].as_u64().unwrap(),
            step["received"].as_u64().unwrap(),
        );
        assert!(sent > 0 && sent == received, "{step:#}");
        // a short step on a loaded machine may end before its first record
        // is in the topic: its rate is 0, and the report says why
        let delayed = step["remarks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().starts_with("delay occurred"));
        assert!(
            step["received_rate"].as_f64().unwrap() > 0.0 || delayed,
            "{step:#}"
        );
        assert!(step["seconds"].as_f64().unwrap() > 0.0, "{step:#}");
        for p in step["processes"].as_array().unwrap() {
            assert!(p["rss_bytes"].as_u64().unwrap() > 0, "{step:#}");
            assert!(p["pid"].as_u64().unwrap() > 0, "{step:#}");
        }
    }
    assert!(
        r["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["received_rate"].as_f64().unwrap() > 0.0),
        "no step measured a rate: {r:#}"
    );
    assert!(!r["samples"].as_array().unwrap().is_empty(), "{r:#}");
    let page = std::fs::read_to_string(dir.path().join("report/index.html")).unwrap();
    assert_eq!(page.matches("<table").count(), 1, "{page}");
    // the run deletes the topic it made (its name is the run's own)
    let topic = stdout
        .split_whitespace()
        .find(|w| w.starts_with("logferry-bench-"))
        .map(|w| w.trim_end_matches([';', ',', ':']))
        .unwrap_or_else(|| panic!("no topic named in {stdout}"));
    let broker = common::kafka::shared_broker();
    let deadline = Instant::now() + Duration::from_secs(20);
    while common::kafka::topic_exists(broker, topic) {
        assert!(
            Instant::now() < deadline,
            "topic {topic} is still on the broker after the run"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (r, dir)
}

fn tiers(step: &Value) -> Vec<String> {
    step["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tier"].as_str().unwrap().to_string())
        .collect()
}

/// No --brokers: the scenario starts (or finds) the local broker of
/// scripts/kafka.sh, as the Kafka tests do.
#[test]
fn http_kafka_smoke_direct_and_through_haproxy_puts_every_line_in_the_topic() {
    let (r, dir) = kafka_smoke(
        "http-kafka",
        &[
            "--instances",
            "2",
            "--via",
            "both",
            "--connections",
            "8",
            "--lines-per-request",
            "2",
        ],
    );
    let steps = r["steps"].as_array().unwrap();
    let labels: Vec<&str> = steps.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "100 req/s, direct",
            "1000 req/s, direct",
            "100 req/s, haproxy",
            "1000 req/s, haproxy"
        ]
    );
    for step in steps {
        // two lines per request: twice the request rate in records
        let offered = step["offered_rate"].as_f64().unwrap();
        assert!(offered == 200.0 || offered == 2000.0, "{step:#}");
        assert_eq!(step["sent"].as_u64().unwrap() % 2, 0, "{step:#}");
        let remarks = step["remarks"].as_array().unwrap();
        assert!(
            remarks[0].as_str().unwrap().contains("latency p50"),
            "{step:#}"
        );
        let mut want = vec!["server", "server"];
        if step["label"].as_str().unwrap().ends_with("haproxy") {
            want.push("balancer");
        }
        assert_eq!(tiers(step), want, "{step:#}");
    }
    assert_eq!(r["params"]["instances"], 2);
    assert_eq!(r["params"]["via"], "both");
    let cfg = std::fs::read_to_string(dir.path().join("work/haproxy.cfg")).unwrap();
    assert_eq!(cfg.matches("    server instance-").count(), 2, "{cfg}");
    let instance = std::fs::read_to_string(dir.path().join("work/instance-1.toml")).unwrap();
    assert!(
        !instance.contains("{{") && instance.contains("type = \"http\""),
        "{instance}"
    );
}

#[test]
fn forward_kafka_smoke_with_and_without_tls_puts_every_record_in_the_topic() {
    let broker = common::kafka::shared_broker();
    let (r, dir) = kafka_smoke(
        "forward-kafka",
        &["--brokers", broker, "--tls", "both", "--workers", "1,2"],
    );
    let steps = r["steps"].as_array().unwrap();
    let labels: Vec<&str> = steps.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "100 lines/s",
            "1000 lines/s",
            "1 worker(s)",
            "2 worker(s)",
            "100 lines/s, TLS",
            "1000 lines/s, TLS",
            "1 worker(s), TLS",
            "2 worker(s), TLS"
        ]
    );
    for step in steps {
        let label = step["label"].as_str().unwrap();
        if label.contains("worker") {
            // the workers send straight to the server: it alone is measured
            assert_eq!(tiers(step), ["server"], "{step:#}");
            assert_eq!(step["sent"].as_u64().unwrap(), 20_000, "{step:#}");
            assert!(step["offered_rate"].is_null(), "{step:#}");
        } else {
            assert_eq!(tiers(step), ["agent", "server"], "{step:#}");
            assert!(step["offered_rate"].is_number(), "{step:#}");
        }
    }
    assert_eq!(r["params"]["tls"], "both");
    assert_eq!(r["params"]["brokers"], broker);
    let server = std::fs::read_to_string(dir.path().join("work/server-tls.toml")).unwrap();
    assert!(
        server.contains("cert_file") && !server.contains("{{"),
        "{server}"
    );
    let agent = std::fs::read_to_string(dir.path().join("work/agent-tls.toml")).unwrap();
    assert!(
        agent.contains("ca_file") && !agent.contains("{{"),
        "{agent}"
    );
}

/// The other systems are not installed here: started as `true`, they exit
/// at once, after their kafka-server config was rendered into --dir.
#[test]
fn the_kafka_server_template_of_every_system_is_rendered_whole() {
    let broker = common::kafka::shared_broker();
    for (target, file) in [
        ("fluent-bit", "server-tls.conf"),
        ("fluentd", "server-tls.conf"),
        ("vector", "server-tls.toml"),
    ] {
        let options = ["--brokers", broker, "--tls", "on"];
        let (_dir, config) = rendered("forward-kafka", &options, target, "server-tls", file);
        assert!(config.contains(broker), "{target}:\n{config}");
        assert!(config.contains("bench-server.key"), "{target}:\n{config}");
    }
    // http-kafka is logferry only: said before anything starts
    let out = scenario(&["http-kafka", "--smoke", "--target", "vector"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("http-kafka runs logferry instances only"),
        "{}",
        text(&out)
    );
}

#[test]
fn ctrl_c_mid_kafka_step_stops_every_instance_and_haproxy() {
    let mut child = Command::new(BIN)
        .args([
            "bench",
            "scenario",
            "http-kafka",
            "--brokers",
            common::kafka::shared_broker(),
            "--instances",
            "2",
            "--via",
            "haproxy",
            "--connections",
            "4",
            "--rates",
            "100",
            "--step-seconds",
            "120",
        ])
        .env("LOGFERRY_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pids = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some((_, rest)) = line.split_once(" pid=") {
            let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
            pids.push(pid.parse::<u32>().unwrap());
        }
        if line.starts_with("| offered rate |") {
            break;
        }
    }
    assert_eq!(pids.len(), 3, "{pids:?}");
    std::thread::sleep(Duration::from_millis(1500));
    for &pid in &pids {
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "{pid} not running"
        );
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "bench did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} outlived the benchmark"
        );
    }
}

#[test]
fn a_kafka_scenario_whose_broker_does_not_answer_says_how_to_start_one() {
    // nothing listens on port 1
    let out = scenario(&["forward-kafka", "--smoke", "--brokers", "127.0.0.1:1"]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("the Kafka broker at 127.0.0.1:1 does not answer")
            && t.contains("scripts/kafka.sh start"),
        "{t}"
    );
}

/// Runs scenario `name --smoke` with `extra` options in `dir`: its result
/// in `result.json`, its processes' files in `work/`, its report in
/// `report/`. Returns the directory, the output and the parsed result if
/// one was written.
fn smoke_in(
    dir: tempfile::TempDir,
    name: &str,
    extra: &[&str],
) -> (tempfile::TempDir, Output, Option<Value>) {
    run_in(dir, name, extra, true)
}

/// [`smoke_in`], with `--smoke` only if `smoke`.
fn run_in(
    dir: tempfile::TempDir,
    name: &str,
    extra: &[&str],
    smoke: bool,
) -> (tempfile::TempDir, Output, Option<Value>) {
    let json = dir.path().join("result.json");
    let (work, report) = (dir.path().join("work"), dir.path().join("report"));
    let mut args = vec![
        name,
        "--json",
        json.to_str().unwrap(),
        "--dir",
        work.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ];
    if smoke {
        args.push("--smoke");
    }
    args.extend_from_slice(extra);
    let out = scenario(&args);
    let result = std::fs::read_to_string(&json)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    (dir, out, result)
}

/// [`smoke_in`] a fresh directory; the run must succeed with a result of
/// this scenario, with logferry as the target. Returns its standard
/// output, its result and the directory.
fn run_smoke(name: &str, extra: &[&str]) -> (String, Value, tempfile::TempDir) {
    run_with(name, extra, true)
}

/// [`run_smoke`], with `--smoke` only if `smoke`.
fn run_with(name: &str, extra: &[&str], smoke: bool) -> (String, Value, tempfile::TempDir) {
    let (dir, out, r) = run_in(tempfile::tempdir().unwrap(), name, extra, smoke);
    assert!(out.status.success(), "{}", text(&out));
    let r = r.expect("a result");
    assert_eq!(r["scenario"], name);
    assert_eq!(r["target"], "logferry");
    (String::from_utf8_lossy(&out.stdout).into_owned(), r, dir)
}

/// [`smoke_in`] for `file-transfer`, whose run may fail.
fn file_transfer(extra: &[&str]) -> (tempfile::TempDir, Output, Option<Value>) {
    // no dot in the name: the senders' tags are made of the files' paths
    let dir = tempfile::Builder::new().prefix("ft").tempdir().unwrap();
    smoke_in(dir, "file-transfer", extra)
}

/// The unified file's lines.
fn unified_lines(dir: &tempfile::TempDir) -> Vec<String> {
    let text = std::fs::read_to_string(dir.path().join("work/out/unified.log")).unwrap();
    text.lines().map(str::to_string).collect()
}

/// Checks the steps of a file-transfer result: one per size, every record
/// written is in the file, throughput and payload MB/s reported, each
/// sender and the server measured; returns the records written per step.
fn check_file_transfer_steps(r: &Value, sizes: &[u64], senders: usize) -> Vec<u64> {
    assert_eq!(r["scenario"], "file-transfer");
    assert_eq!(r["target"], "logferry");
    assert_eq!(r["params"]["senders"], senders as u64, "{r:#}");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), sizes.len(), "{r:#}");
    let mut sent = Vec::new();
    for (step, size) in steps.iter().zip(sizes) {
        assert_eq!(step["label"], format!("{size} B records"));
        let (s, got) = (
            step["sent"].as_u64().unwrap(),
            step["received"].as_u64().unwrap(),
        );
        assert!(s > 0 && s == got, "{step:#}");
        let rate = step["received_rate"].as_f64().unwrap();
        assert!(rate > 0.0, "{step:#}");
        let mb = step["received_bytes_rate"].as_f64().unwrap();
        assert!(
            (mb - rate * *size as f64).abs() < 1e-6 * mb.max(1.0),
            "{step:#}"
        );
        // only descriptive remarks: nothing lost, twice or foreign
        for remark in step["remarks"].as_array().unwrap() {
            let remark = remark.as_str().unwrap();
            assert!(
                remark.starts_with("delay occurred") || remark.starts_with("writers held back"),
                "{step:#}"
            );
        }
        let procs = step["processes"].as_array().unwrap();
        let of = |tier: &str| procs.iter().filter(|p| p["tier"] == tier).count();
        assert_eq!((of("sender"), of("server")), (senders, 1), "{step:#}");
        for p in procs {
            assert!(p["rss_bytes"].as_u64().unwrap() > 0, "{step:#}");
            assert!(p["cpu_percent"].as_f64().unwrap() >= 0.0, "{step:#}");
            assert!(p["rate"].as_f64().unwrap() > 0.0, "{step:#}");
        }
        sent.push(s);
    }
    let samples = r["samples"].as_array().unwrap();
    for tier in ["sender", "server"] {
        assert!(
            samples.iter().any(|s| s["tier"] == tier),
            "no sample of the {tier}"
        );
    }
    sent
}

#[test]
fn file_transfer_smoke_unifies_every_record_exactly_once() {
    let (dir, out, r) = file_transfer(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("| record size | records/s | MB/s (payload) |")
            && stdout.contains("headline:"),
        "{stdout}"
    );
    let r = r.expect("a result file");
    let sent = check_file_transfer_steps(&r, &[10, 1024, 4096], 3);
    // the unified file holds exactly the lines written, in raw format:
    // each record as written, step after step
    let lines = unified_lines(&dir);
    assert_eq!(lines.len() as u64, sent.iter().sum::<u64>());
    let mut at = 0;
    for (n, size) in sent.iter().zip([10, 1024, 4096]) {
        let step = &lines[at..at + *n as usize];
        assert!(step.iter().all(|l| l.len() == size), "step of {size} B");
        for sender in 1..=3 {
            assert!(
                step.iter().any(|l| l.starts_with(&format!("{sender}."))),
                "no record of sender {sender} in the {size} B step"
            );
        }
        at += *n as usize;
    }
    // the page of the run
    let page = std::fs::read_to_string(dir.path().join("report/index.html")).unwrap();
    assert!(
        page.contains("file-transfer") && page.contains("<svg"),
        "{page}"
    );
}

/// The classic setup: the application writes into a FUSE mount per
/// sender. Every record arrives once, and no mount is left behind.
#[test]
fn file_transfer_with_fuse_senders_unifies_every_record_exactly_once() {
    if !std::path::Path::new("/dev/fuse").exists() || unsafe { libc::geteuid() } != 0 {
        common::skipped("FUSE senders need root and /dev/fuse");
        return;
    }
    let (dir, out, r) = file_transfer(&["--senders-kind", "fuse"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = r.expect("a result file");
    assert_eq!(r["params"]["senders_kind"], "fuse", "{r:#}");
    let sent = check_file_transfer_steps(&r, &[10, 1024, 4096], 3);
    assert_eq!(
        unified_lines(&dir).len() as u64,
        sent.iter().sum::<u64>(),
        "every line written into the mounts is in the unified file"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let work = dir.path().join("work");
    assert!(
        !mounts.contains(work.to_str().unwrap()),
        "a sender's mount is left behind:\n{mounts}"
    );
}

#[test]
fn file_transfer_template_format_writes_json_lines_with_host_and_tag() {
    let (dir, out, r) = file_transfer(&[
        "--senders",
        "2",
        "--record-sizes",
        "10,100",
        "--format",
        "template",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let r = r.expect("a result file");
    let sent = check_file_transfer_steps(&r, &[10, 100], 2);
    assert_eq!(r["params"]["format"], "template");
    let lines = unified_lines(&dir);
    assert_eq!(lines.len() as u64, sent.iter().sum::<u64>());
    for line in [&lines[0], lines.last().unwrap()] {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["time"].as_str().unwrap().starts_with("20"), "{line}");
        assert!(!v["host"].as_str().unwrap().is_empty(), "{line}");
        // the tag names the sender's file
        assert!(v["tag"].as_str().unwrap().contains(".sender-"), "{line}");
        assert!(v["message"].as_str().unwrap().contains('.'), "{line}");
    }
}

/// A server that writes every record twice, and one that loses a sender's
/// records: the run fails and says which.
#[test]
fn file_transfer_fails_on_duplicated_or_lost_records() {
    let dir = tempfile::tempdir().unwrap();
    let twice = dir.path().join("twice.toml");
    std::fs::write(
        &twice,
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{{listen_port}}\"\n\n\
         [sinks.a]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{output_path}}\"\nformat = {{format}}\n\n\
         [sinks.b]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{output_path}}\"\nformat = {{format}}\n",
    )
    .unwrap();
    let (_d, out, r) = file_transfer(&[
        "--senders",
        "1",
        "--record-sizes",
        "10",
        "--template",
        twice.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("record(s) duplicated"),
        "{}",
        text(&out)
    );
    assert!(r.is_some(), "the result is written all the same");

    // sender-2's records go nowhere
    let lossy = dir.path().join("lossy.toml");
    std::fs::write(
        &lossy,
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{{listen_port}}\"\n\n\
         [sinks.unified]\ntype = \"file\"\nmatch = \"**.sender-1.*.*\"\npath = \"{{output_path}}\"\nformat = {{format}}\n\n\
         [sinks.lost]\ntype = \"null\"\nmatch = \"**.sender-2.*.*\"\n",
    )
    .unwrap();
    let (_d, out, r) = file_transfer(&[
        "--senders",
        "2",
        "--record-sizes",
        "10",
        "--drain-timeout",
        "2s",
        "--template",
        lossy.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("sender-2: ") && t.contains("record(s) missing"),
        "{t}"
    );
    assert!(!t.contains("sender-1: "), "{t}");
    let step = &r.unwrap()["steps"][0];
    assert!(
        step["received"].as_u64() < step["sent"].as_u64(),
        "{step:#}"
    );
}

/// The other systems are not installed here: started as `true`, they exit
/// at once, after their file-server config was rendered into --dir.
#[test]
fn the_file_server_template_of_every_system_is_rendered_whole() {
    for (target, file, format) in [
        ("fluent-bit", "server.conf", "Format       template"),
        ("fluentd", "server.conf", "@type single_value"),
        ("vector", "server.toml", "encoding.codec = \"text\""),
    ] {
        let (dir, config) = rendered("file-transfer", &[], target, "server", file);
        assert!(config.contains(format), "{target}:\n{config}");
        assert!(
            config.contains(&dir.path().join("out").display().to_string()),
            "{config}"
        );
    }
}

#[test]
fn file_transfer_options_are_checked_before_anything_starts() {
    for (args, says) in [
        (&["--agents", "2"][..], "belong to the deliver scenarios"),
        (&["--record-sizes", "5"][..], "use at least 8 B"),
        (&["--senders", "0"][..], "--senders must be at least 1"),
        (&["--rate", "0"][..], "--rate must be a positive number"),
    ] {
        let mut all = vec!["file-transfer", "--smoke"];
        all.extend_from_slice(args);
        let out = scenario(&all);
        assert!(!out.status.success(), "{args:?}");
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        assert!(!text(&out).contains("started"), "{args:?}: {}", text(&out));
    }
}
