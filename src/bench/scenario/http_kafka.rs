//! `bench scenario http-kafka`: an HTTP service that produces every posted
//! line to Kafka, as deployed behind load balancers (the classic
//! deployment reached 11–13 k records/s with three instances).
//!
//! ```text
//! HTTP writer (--connections) ──┬─ direct: connection i → instance (i mod N)
//!                               └─ haproxy (round robin) → instances
//! instance-1..N: logferry, HTTP source → Kafka sink → topic
//! ```
//!
//! Each step posts at one rate (requests/s over all connections) for
//! `--step-seconds`; every request is answered after Kafka's delivery
//! report. The output rate is the growth of the topic's end offsets; after
//! the step the topic must hold every line sent, no more, no less.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::http_client::{Answers, Latency, Posting, Writers};
use super::super::report::WorkDir;
use super::super::results::{Machine, ScenarioResult, Step};
use super::kafka::{self as common, kafka_values, Member, Watch, LOGFERRY_HTTP_KAFKA};
use super::template::{render, Target};
use super::topology::{free_port, output_log, spawn, spawn_logferry, wait_accepting};
use super::ScenarioArgs;
use crate::bench::monitor::interrupt_flag;

const TABLE_HEADER: &str = "| offered rate | via | sent requests/s | records/s into Kafka | instance CPU % / RSS (mean, peak) | haproxy CPU % / RSS | latency p50 / p99 | remarks |\n|---|---|---|---|---|---|---|---|";

/// What one step's writers did.
struct Posted {
    requests: u64,
    latency: Latency,
}

pub fn run(a: &ScenarioArgs) -> Result<(), String> {
    let k = &a.kafka;
    if a.target != Target::Logferry {
        return Err(format!(
            "http-kafka runs logferry instances only (--target {} applies to forward-kafka)",
            a.target.name()
        ));
    }
    if k.instances == 0 || k.connections == 0 || k.lines_per_request == 0 || k.partitions < 1 {
        return Err(
            "--instances, --connections, --lines-per-request and --partitions must be at least 1"
                .into(),
        );
    }
    if a.line_size < 8 {
        return Err("--line-size must be at least 8 (lines are numbered)".into());
    }
    let (rates, step_seconds, sample_every) = super::steps(a)?;
    let ways = k.via.ways();
    let haproxy_bin = if ways.contains(&true) {
        Some(haproxy()?)
    } else {
        None
    };
    let stop = interrupt_flag();
    let dir = WorkDir::new(a.dir.clone())?;
    let broker = common::connect(k.brokers.as_deref())?;
    let brokers = broker.brokers.clone();
    let topic = broker.topic(k.partitions, "http-kafka")?;
    println!(
        "http-kafka: HTTP writer ({} connection(s), {} line(s) of {} B per request) → {} logferry instance(s) → Kafka {brokers} topic {topic}; {} step(s) of {step_seconds} s; files in {}",
        k.connections,
        k.lines_per_request,
        a.line_size,
        k.instances,
        rates.len() * ways.len(),
        dir.path.display()
    );
    let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let template = match &a.template {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => LOGFERRY_HTTP_KAFKA.to_string(),
    };
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let linger = k.linger_ms.to_string();
    let mut instances = Vec::new();
    let mut addrs = Vec::new();
    for i in 1..=k.instances {
        let name = format!("instance-{i}");
        let config = render(&template, &kafka_values("0", &brokers, &topic, &linger, ""))
            .map_err(|e| format!("http-kafka template: {e}"))?;
        let mut proc = spawn_logferry(&exe, &dir.path, &name, &config)?;
        addrs.push(proc.address("source=in ")?);
        println!("started {name} pid={}", proc.pid());
        instances.push(Member {
            name,
            tier: "server",
            proc,
        });
    }
    let mut balancer = match haproxy_bin {
        Some(bin) => {
            let (m, addr) = start_haproxy(&bin, &dir.path, &addrs, k.connections)?;
            println!("started haproxy pid={} on {addr}", m.proc.pid());
            Some((m, addr))
        }
        None => None,
    };
    let mut watch = Watch::new(
        broker,
        topic,
        k.partitions,
        sample_every,
        a.drain_timeout,
        stop,
    );
    let mut steps = Vec::new();
    let mut latencies = Vec::new();
    let total = rates.len() * ways.len();
    println!("\n{TABLE_HEADER}");
    'steps: for via_haproxy in ways {
        for rate in &rates {
            let way = if via_haproxy { "haproxy" } else { "direct" };
            let label = match rate {
                Some(r) => format!("{r} req/s, {way}"),
                None => format!("max, {way}"),
            };
            watch
                .progress
                .set_message(format!("step {}/{total}: {label}", steps.len() + 1));
            let mut members: Vec<&mut Member> = instances.iter_mut().collect();
            let target = match (&mut balancer, via_haproxy) {
                (Some((m, addr)), true) => {
                    members.push(m);
                    vec![*addr]
                }
                _ => addrs.clone(),
            };
            let Some((step, latency)) = step(
                &mut watch,
                &mut members,
                &target,
                a,
                label,
                *rate,
                Duration::from_secs_f64(step_seconds),
            )?
            else {
                break 'steps;
            };
            watch
                .progress
                .suspend(|| println!("{}", table_row(&step, &latency, k.lines_per_request)));
            steps.push(step);
            latencies.push(latency);
        }
    }
    watch.progress.finish_and_clear();
    let interrupted = stop.load(Ordering::SeqCst);
    let mut params = serde_json::Map::new();
    params.insert("instances".into(), k.instances.into());
    params.insert("connections".into(), k.connections.into());
    params.insert("lines_per_request".into(), k.lines_per_request.into());
    params.insert("via".into(), format!("{:?}", k.via).to_lowercase().into());
    params.insert("step_seconds".into(), step_seconds.into());
    params.insert("line_size".into(), a.line_size.into());
    params.insert("partitions".into(), k.partitions.into());
    params.insert("linger_ms".into(), k.linger_ms.into());
    params.insert("sample_seconds".into(), sample_every.as_secs_f64().into());
    params.insert("brokers".into(), brokers.into());
    let result = ScenarioResult {
        scenario: "http-kafka".into(),
        target: a.target.name().into(),
        started,
        machine: Machine::this(),
        params,
        steps,
        samples: std::mem::take(&mut watch.samples),
    };
    // stop the processes before reporting
    drop(balancer);
    drop(instances);
    print_headline(&result);
    common::finish(&result, a.json.as_deref(), a.report.as_deref(), interrupted)
}

/// One step: posts at `rate` requests/s (or as fast as answered) for
/// `duration`, then waits for the topic to hold every line. `None` if
/// interrupted.
fn step(
    watch: &mut Watch,
    members: &mut [&mut Member],
    targets: &[SocketAddr],
    a: &ScenarioArgs,
    label: String,
    rate: Option<f64>,
    duration: Duration,
) -> Result<Option<(Step, Latency)>, String> {
    let k = &a.kafka;
    let before = watch.in_topic()?;
    let mut meters = watch.meter(&members.iter().map(|m| &**m).collect::<Vec<_>>())?;
    // the writers take request numbers from `next` until `cap`; storing
    // `cap` into it ends the step (at its end, or on Ctrl-C)
    let cap = rate.map_or(usize::MAX / 2, |r| {
        ((r * duration.as_secs_f64()).ceil() as usize).max(1)
    });
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let pace = rate.map(|r| (start, Duration::from_secs_f64(1.0 / r)));
    let posting = Posting {
        targets: targets.to_vec(),
        connections: k.connections,
        threads: k.client_threads,
        requests: cap,
        lines: k.lines_per_request,
        size: a.line_size,
        pace,
    };
    let writers = Writers::start(posting, next.clone());
    let mut interrupted = false;
    while !writers.is_finished() {
        if start.elapsed() >= duration {
            next.store(cap, Ordering::SeqCst);
        }
        match watch.tick(members, &mut meters) {
            Ok(true) => {}
            Ok(false) => {
                // the writers end after the request they are in
                interrupted = true;
                next.store(cap, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                next.store(cap, Ordering::SeqCst);
                return Err(e);
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let Answers {
        micros,
        refused,
        errors,
    } = writers.join();
    if interrupted {
        return Ok(None);
    }
    if let Some(e) = errors.first() {
        return Err(format!(
            "{label}: {} writer connection(s) failed: {e}",
            errors.len()
        ));
    }
    let posted = Posted {
        requests: micros.len() as u64,
        latency: Latency::of(micros, refused),
    };
    let sent = posted.requests * k.lines_per_request as u64;
    let at_end = watch.in_topic()?;
    let members_ref: Vec<&Member> = members.iter().map(|m| &**m).collect();
    let processes = meters.finish(&members_ref, |_| None)?;
    let Some(have) = watch.drain(before + sent, members, &mut meters)? else {
        return Ok(None);
    };
    let received = have.saturating_sub(before);
    let (p50, p99) = posted.latency.p50_p99_ms();
    let mut remarks = vec![format!(
        "{:.0} requests/s sent; latency p50 {p50:.2} ms, p99 {p99:.2} ms",
        posted.requests as f64 / seconds
    )];
    if posted.latency.refused > 0 {
        remarks.push(format!(
            "{} request(s) refused (503) and sent again",
            posted.latency.refused
        ));
    }
    if at_end < before + sent {
        remarks.push("delay occurred".into());
    }
    remarks.extend(common::count_remark(received, sent, watch.drain_timeout));
    Ok(Some((
        Step {
            label,
            offered_rate: rate.map(|r| r * k.lines_per_request as f64),
            seconds,
            sent,
            received,
            received_rate: at_end.saturating_sub(before) as f64 / seconds,
            received_bytes_rate: None,
            processes,
            latency: None,
            remarks,
        },
        posted.latency,
    )))
}

/// The haproxy program, or an error saying how to install it.
fn haproxy() -> Result<String, String> {
    let ok = Command::new("haproxy")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(
            "--via haproxy needs haproxy on PATH (Debian: apt-get install -y haproxy; \
             scripts/test-deps.sh installs it)"
                .into(),
        );
    }
    Ok("haproxy".into())
}

/// haproxy's config: HTTP mode, each request to the next instance in turn;
/// room for `connections` clients (haproxy reserves descriptors for its
/// `maxconn` at start and refuses to start past the process's limit).
fn haproxy_config(port: u16, instances: &[SocketAddr], connections: usize) -> String {
    let maxconn = connections + 100;
    let mut c = format!(
        "# written by `logferry bench scenario http-kafka --via haproxy`\n\
         global\n    maxconn {maxconn}\n\n\
         defaults\n    mode http\n    http-reuse always\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n\n\
         frontend http-in\n    bind 127.0.0.1:{port}\n    default_backend instances\n\n\
         backend instances\n    balance roundrobin\n"
    );
    for (i, a) in instances.iter().enumerate() {
        c.push_str(&format!("    server instance-{} {a}\n", i + 1));
    }
    c
}

/// Starts haproxy in the foreground in front of `instances`.
fn start_haproxy(
    bin: &str,
    dir: &Path,
    instances: &[SocketAddr],
    connections: usize,
) -> Result<(Member, SocketAddr), String> {
    let port = free_port()?;
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, haproxy_config(port, instances, connections))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cmd = Command::new(bin);
    cmd.arg("-db")
        .arg("-f")
        .arg(&path)
        .stdout(output_log(dir, "haproxy")?);
    let mut proc = spawn(cmd, "haproxy")?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_accepting(&mut proc, addr, "haproxy")?;
    Ok((
        Member {
            name: "haproxy".into(),
            tier: "balancer",
            proc,
        },
        addr,
    ))
}

fn table_row(step: &Step, latency: &Latency, lines: usize) -> String {
    let (p50, p99) = latency.p50_p99_ms();
    // the first remark is the sent rate and latency, shown in their columns
    let problems: Vec<&str> = step.remarks.iter().skip(1).map(String::as_str).collect();
    let (rate, via) = step.label.rsplit_once(", ").unwrap_or((&step.label, ""));
    format!(
        "| {rate} | {via} | {:.0} | {:.0} | {} | {} | {p50:.2} / {p99:.2} ms | {} |",
        step.sent as f64 / lines as f64 / step.seconds,
        step.received_rate,
        common::tier_cell(&step.processes, "server"),
        common::tier_cell(&step.processes, "balancer"),
        problems.join("; ")
    )
}

fn print_headline(r: &ScenarioResult) {
    let sent: u64 = r.steps.iter().map(|s| s.sent).sum();
    let received: u64 = r.steps.iter().map(|s| s.received).sum();
    println!(
        "\nrecords: {sent} sent, {received} in the topic, {} lost",
        r.lost()
    );
    for way in ["direct", "haproxy"] {
        let best = r
            .steps
            .iter()
            .filter(|s| s.label.ends_with(way))
            .max_by(|a, b| a.received_rate.total_cmp(&b.received_rate));
        if let Some(s) = best {
            println!(
                "headline ({way}): {:.0} records/s into Kafka at best ({})",
                s.received_rate, s.label
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::results::ProcessStep;

    #[test]
    fn a_row_splits_rate_and_way_and_shows_each_tier() {
        let process = |tier: &str, cpu| ProcessStep {
            name: tier.into(),
            tier: tier.into(),
            system: None,
            pid: 1,
            rate: None,
            cpu_percent: cpu,
            rss_bytes: 1 << 20,
        };
        let step = Step {
            label: "1000 req/s, haproxy".into(),
            offered_rate: Some(2000.0),
            seconds: 2.0,
            sent: 4000,
            received: 4000,
            received_rate: 1900.0,
            received_bytes_rate: None,
            processes: vec![
                process("server", 10.0),
                process("server", 20.0),
                process("balancer", 5.0),
            ],
            latency: None,
            remarks: vec!["1000 requests/s sent; …".into(), "delay occurred".into()],
        };
        let latency = Latency::of(vec![1000, 2000, 3000], 0);
        assert_eq!(
            table_row(&step, &latency, 2),
            "| 1000 req/s | haproxy | 1000 | 1900 | 15.0 % / 1.0 MiB | 5.0 % / 1.0 MiB | 2.00 / 3.00 ms | delay occurred |"
        );
    }

    #[test]
    fn haproxy_balances_every_instance_round_robin_in_http_mode() {
        let addrs: Vec<SocketAddr> = vec![
            "127.0.0.1:1001".parse().unwrap(),
            "127.0.0.1:1002".parse().unwrap(),
        ];
        let c = haproxy_config(8080, &addrs, 64);
        assert!(c.contains("maxconn 164"), "{c}");
        assert!(c.contains("bind 127.0.0.1:8080"), "{c}");
        assert!(
            c.contains("mode http") && c.contains("balance roundrobin"),
            "{c}"
        );
        assert!(c.contains("server instance-1 127.0.0.1:1001"), "{c}");
        assert!(c.contains("server instance-2 127.0.0.1:1002"), "{c}");
    }
}
