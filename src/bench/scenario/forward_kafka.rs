//! `bench scenario forward-kafka`: Fluentd-protocol clients into a forward
//! → Kafka server, with and without TLS on the forward hop
//! (kafka-connect-fluentd's benchmark: 1.14 M records/s with 8 workers on
//! 4 cores, about 200 k/s with TLS).
//!
//! ```text
//! rate steps:     writer → file → agent (logferry tail → forward) → server → Kafka
//! workers steps:  forward-writer workers at full speed ───────────→ server → Kafka
//! ```
//!
//! The server is the measured role: logferry, or another system from
//! `bench/templates/<system>/kafka-server.*` (`--target`). Every record
//! must reach the run's topic: a step fails on a missing or extra message.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::forward_writer::{self, ForwardWriterArgs};
use super::super::gen::{write_lines, Lines};
use super::super::output::AppendFile;
use super::super::pki::{self, Pki};
use super::super::report::WorkDir;
use super::super::results::{Machine, ScenarioResult, Step};
use super::kafka::{self as common, kafka_values, Member, Watch, LOGFERRY_FORWARD_AGENT};
use super::template::{render, Target};
use super::topology::{free_port, output_log, spawn, spawn_logferry, wait_accepting};
use super::ScenarioArgs;
use crate::bench::monitor::interrupt_flag;

const RATE_HEADER: &str = "| step | written lines/s | records/s into Kafka | agent CPU % / RSS | server CPU % / RSS | remarks |\n|---|---|---|---|---|---|";
const WORKERS_HEADER: &str = "| step (sender workers at full speed) | records/s into Kafka | server CPU % / RSS | server CPU s / M records | remarks |\n|---|---|---|---|---|";

/// Records per PackedForward chunk of the workers.
const CHUNK_RECORDS: usize = 1000;

/// The running server and agent of one TLS mode.
struct Pipeline {
    agent: Member,
    server: Member,
    server_addr: SocketAddr,
    /// The file the agent follows.
    tail: PathBuf,
}

pub fn run(a: &ScenarioArgs) -> Result<(), String> {
    let k = &a.kafka;
    if k.partitions < 1 || a.line_size == 0 || k.worker_records == 0 {
        return Err("--partitions, --line-size and --worker-records must be at least 1".into());
    }
    if k.workers.contains(&0) {
        return Err("--workers are counts of connections, each at least 1".into());
    }
    let (rates, step_seconds, sample_every) = super::steps(a)?;
    let worker_records = if a.smoke {
        k.worker_records.min(20_000)
    } else {
        k.worker_records
    };
    let modes = k.tls.modes();
    let stop = interrupt_flag();
    let dir = WorkDir::new(a.dir.clone())?;
    let broker = common::connect(k.brokers.as_deref())?;
    let brokers = broker.brokers.clone();
    let topic = broker.topic(k.partitions, "forward-kafka")?;
    let pki = if modes.contains(&true) {
        Some(pki::generate(&dir.path)?)
    } else {
        None
    };
    println!(
        "forward-kafka: writer → agent (logferry tail → forward) → {} server → Kafka {brokers} topic {topic}; lines of {} B; {} rate step(s) of {step_seconds} s and {} worker step(s) of {worker_records} records, TLS {:?}; files in {}",
        a.target.name(),
        a.line_size,
        rates.len() * modes.len(),
        k.workers.len() * modes.len(),
        k.tls,
        dir.path.display()
    );
    let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut watch = Watch::new(
        broker,
        topic,
        k.partitions,
        sample_every,
        a.drain_timeout,
        stop,
    );
    let mut steps = Vec::new();
    'modes: for tls in modes {
        let pki = if tls { pki.as_ref() } else { None };
        let mut p = start_pipeline(a, &brokers, &watch.topic, &dir.path, pki)?;
        let suffix = if tls { ", TLS" } else { "" };
        println!("\n{RATE_HEADER}");
        for rate in &rates {
            let label = match rate {
                Some(r) => format!("{r} lines/s{suffix}"),
                None => format!("max lines/s{suffix}"),
            };
            watch.progress.set_message(format!("{label} …"));
            let Some(step) = rate_step(
                &mut watch,
                &mut p,
                label,
                *rate,
                Duration::from_secs_f64(step_seconds),
                a.line_size,
            )?
            else {
                break 'modes;
            };
            watch.progress.suspend(|| println!("{}", rate_row(&step)));
            steps.push(step);
        }
        if !k.workers.is_empty() {
            println!("\n{WORKERS_HEADER}");
        }
        for &workers in &k.workers {
            let label = format!("{workers} worker(s){suffix}");
            watch.progress.set_message(format!("{label} …"));
            let send = ForwardWriterArgs {
                address: p.server_addr,
                records: worker_records,
                size: a.line_size,
                chunk_records: CHUNK_RECORDS.min(worker_records),
                workers,
                rate: 0.0,
                ack: false,
                gzip: false,
                tls,
                ca: pki.map(|p| p.ca.clone()),
                tag: "bench".into(),
            };
            let Some(step) = workers_step(&mut watch, &mut p.server, label, send)? else {
                break 'modes;
            };
            watch
                .progress
                .suspend(|| println!("{}", workers_row(&step)));
            steps.push(step);
        }
        // stopped (agent first) before the next mode starts its own
        drop(p);
    }
    watch.progress.finish_and_clear();
    let interrupted = stop.load(Ordering::SeqCst);
    let mut params = serde_json::Map::new();
    params.insert("tls".into(), format!("{:?}", k.tls).to_lowercase().into());
    params.insert("workers".into(), serde_json::Value::from(k.workers.clone()));
    params.insert("worker_records".into(), worker_records.into());
    params.insert("step_seconds".into(), step_seconds.into());
    params.insert("line_size".into(), a.line_size.into());
    params.insert("partitions".into(), k.partitions.into());
    params.insert("linger_ms".into(), k.linger_ms.into());
    params.insert("sample_seconds".into(), sample_every.as_secs_f64().into());
    params.insert("brokers".into(), brokers.into());
    if let Some(b) = &a.target_bin {
        params.insert("target_bin".into(), b.display().to_string().into());
    }
    let result = ScenarioResult {
        scenario: "forward-kafka".into(),
        target: a.target.name().into(),
        started,
        machine: Machine::this(),
        params,
        steps,
        samples: std::mem::take(&mut watch.samples),
    };
    print_headline(&result);
    common::finish(&result, a.json.as_deref(), a.report.as_deref(), interrupted)
}

/// Starts the server (the target, from its template) and the agent that
/// forwards to it.
fn start_pipeline(
    a: &ScenarioArgs,
    brokers: &str,
    topic: &str,
    dir: &Path,
    pki: Option<&Pki>,
) -> Result<Pipeline, String> {
    let target = a.target;
    let tls_name = if pki.is_some() { "-tls" } else { "" };
    let name = format!("server{tls_name}");
    let template = match &a.template {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => common::kafka_server_template(target).to_string(),
    };
    // logferry binds port 0 and logs the address; the others get a free
    // port picked here
    let port = match target {
        Target::Logferry => 0,
        _ => free_port()?,
    };
    let (port_text, linger) = (port.to_string(), a.kafka.linger_ms.to_string());
    let tls = common::server_tls(target, pki);
    let config = render(
        &template,
        &kafka_values(&port_text, brokers, topic, &linger, &tls),
    )
    .map_err(|e| format!("{} kafka-server template: {e}", target.name()))?;
    let path = dir.join(format!("{name}.{}", target.config_ext()));
    std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = super::peers::program(target, a.target_bin.as_deref())?;
    let mut cmd = Command::new(&bin);
    cmd.args(target.args(&path))
        .env("LOGFERRY_LOG", "info")
        .stdout(output_log(dir, &name)?);
    let mut proc = spawn(cmd, &name)?;
    let server_addr = match target {
        Target::Logferry => proc.address("source=in ")?,
        _ => {
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            wait_accepting(&mut proc, addr, &name)?;
            addr
        }
    };
    println!("started {name} pid={}", proc.pid());
    let server = Member {
        name,
        tier: "server",
        proc,
    };

    let agent_name = format!("agent{tls_name}");
    let tail = dir.join(format!("{agent_name}.log"));
    std::fs::write(&tail, "").map_err(|e| format!("{}: {e}", tail.display()))?;
    let tail_text = tail.display().to_string();
    let forward_to = format!("{{ address = \"{server_addr}\" }}");
    let agent_tls = pki
        .map(|p| format!("tls = {{ ca_file = \"{}\" }}", p.ca.display()))
        .unwrap_or_default();
    let config = render(
        LOGFERRY_FORWARD_AGENT,
        &[
            ("tail_path", tail_text.as_str()),
            ("forward_to", forward_to.as_str()),
            ("tls", agent_tls.as_str()),
        ],
    )
    .map_err(|e| format!("agent template: {e}"))?;
    let proc = spawn_logferry(&exe, dir, &agent_name, &config)?;
    println!("started {agent_name} pid={}", proc.pid());
    Ok(Pipeline {
        agent: Member {
            name: agent_name,
            tier: "agent",
            proc,
        },
        server,
        server_addr,
        tail,
    })
}

/// One rate step: lines appended to the agent's file at `rate` for
/// `duration`, then the topic must hold every one. `None` if interrupted.
fn rate_step(
    watch: &mut Watch,
    p: &mut Pipeline,
    label: String,
    rate: Option<f64>,
    duration: Duration,
    line_size: usize,
) -> Result<Option<Step>, String> {
    let before = watch.in_topic()?;
    let mut members = [&mut p.agent, &mut p.server];
    let mut meters = watch.meter(&[&*members[0], &*members[1]])?;
    let lines = Lines {
        rate: rate.unwrap_or(0.0),
        duration: Some(duration),
        count: None,
        size: line_size,
        template: None,
        seed: 1,
    };
    let path = p.tail.clone();
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        let mut file = AppendFile::open(&path, None)?;
        write_lines(&mut file, &lines, interrupt_flag()).map(|(lines, _)| lines)
    });
    while !writer.is_finished() {
        if !watch.tick(&mut members, &mut meters)? {
            let _ = writer.join();
            return Ok(None);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let sent = writer
        .join()
        .map_err(|_| "the writer panicked".to_string())??;
    let at_end = watch.in_topic()?;
    let out_rate = at_end.saturating_sub(before) as f64 / seconds;
    let processes = meters.finish(&[&*members[0], &*members[1]], |m| {
        Some(if m.tier == "agent" {
            sent as f64 / seconds
        } else {
            out_rate
        })
    })?;
    let Some(have) = watch.drain(before + sent, &mut members, &mut meters)? else {
        return Ok(None);
    };
    let received = have.saturating_sub(before);
    let mut remarks = Vec::new();
    if at_end < before + sent {
        remarks.push("delay occurred".to_string());
    }
    remarks.extend(common::count_remark(received, sent, watch.drain_timeout));
    Ok(Some(Step {
        label,
        offered_rate: rate,
        seconds,
        sent,
        received,
        received_rate: out_rate,
        received_bytes_rate: None,
        processes,
        latency: None,
        remarks,
    }))
}

/// One maximum-throughput step: `send.workers` connections send
/// `send.records` records as fast as they can; timed until the topic holds
/// them all. `None` if interrupted.
fn workers_step(
    watch: &mut Watch,
    server: &mut Member,
    label: String,
    send: ForwardWriterArgs,
) -> Result<Option<Step>, String> {
    let before = watch.in_topic()?;
    let want = send.records as u64;
    let mut members = [server];
    let mut meters = watch.meter(&[&*members[0]])?;
    let start = Instant::now();
    let send = Arc::new(send);
    let sender = std::thread::spawn(move || forward_writer::send(&send, start));
    let mut have = before;
    let mut sent_at: Option<Instant> = None;
    while have < before + want {
        if !watch.tick(&mut members, &mut meters)? {
            let _ = sender.join();
            return Ok(None);
        }
        have = watch.in_topic()?;
        if sender.is_finished() {
            let at = *sent_at.get_or_insert_with(Instant::now);
            if at.elapsed() > watch.drain_timeout {
                break;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let (sent, errors) = sender
        .join()
        .map_err(|_| "the sender panicked".to_string())?;
    if let Some(e) = errors.first() {
        return Err(format!("{label}: {} worker(s) failed: {e}", errors.len()));
    }
    let rate = have.saturating_sub(before) as f64 / seconds;
    let processes = meters.finish(&[&*members[0]], |_| Some(rate))?;
    let Some(have) = watch.drain(before + want, &mut members, &mut meters)? else {
        return Ok(None);
    };
    let received = have.saturating_sub(before);
    let sent = sent.records as u64;
    let remarks = common::count_remark(received, sent, watch.drain_timeout)
        .into_iter()
        .collect();
    Ok(Some(Step {
        label,
        offered_rate: None,
        seconds,
        sent,
        received,
        received_rate: rate,
        received_bytes_rate: None,
        processes,
        latency: None,
        remarks,
    }))
}

fn rate_row(s: &Step) -> String {
    format!(
        "| {} | {:.0} | {:.0} | {} | {} | {} |",
        s.label,
        s.sent as f64 / s.seconds,
        s.received_rate,
        common::tier_cell(&s.processes, "agent"),
        common::tier_cell(&s.processes, "server"),
        s.remarks.join("; ")
    )
}

/// CPU seconds the server spent per million records in a step.
fn cpu_per_million(s: &Step) -> Option<f64> {
    let (cpu, _) = common::tier_use(&s.processes, "server")?;
    (s.received > 0).then(|| cpu / 100.0 * s.seconds / (s.received as f64 / 1e6))
}

fn workers_row(s: &Step) -> String {
    format!(
        "| {} | {:.0} | {} | {} | {} |",
        s.label,
        s.received_rate,
        common::tier_cell(&s.processes, "server"),
        cpu_per_million(s).map_or("-".into(), |c| format!("{c:.2}")),
        s.remarks.join("; ")
    )
}

fn print_headline(r: &ScenarioResult) {
    let sent: u64 = r.steps.iter().map(|s| s.sent).sum();
    let received: u64 = r.steps.iter().map(|s| s.received).sum();
    println!(
        "\nrecords: {sent} sent, {received} in the topic, {} lost",
        r.lost()
    );
    let best = |tls: bool| {
        r.steps
            .iter()
            .filter(|s| s.label.contains("worker") && s.label.ends_with(", TLS") == tls)
            .max_by(|a, b| a.received_rate.total_cmp(&b.received_rate))
    };
    let (plain, tls) = (best(false), best(true));
    for (s, what) in [(plain, "plain"), (tls, "TLS")] {
        if let Some(s) = s {
            println!(
                "headline ({what}): {} server peaked at {:.0} records/s into Kafka ({})",
                r.target, s.received_rate, s.label
            );
        }
    }
    if let (Some(p), Some(t)) = (plain, tls) {
        println!(
            "TLS / plain peak rate: {:.2}",
            t.received_rate / p.received_rate
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::results::ProcessStep;

    #[test]
    fn the_workers_row_shows_the_rate_and_cpu_per_million_records() {
        let step = Step {
            label: "4 worker(s), TLS".into(),
            offered_rate: None,
            seconds: 2.0,
            sent: 1_000_000,
            received: 1_000_000,
            received_rate: 500_000.0,
            received_bytes_rate: None,
            processes: vec![ProcessStep {
                name: "server-tls".into(),
                tier: "server".into(),
                system: None,
                pid: 1,
                rate: Some(500_000.0),
                cpu_percent: 75.0,
                rss_bytes: 1 << 20,
            }],
            latency: None,
            remarks: vec![],
        };
        // 75 % of a core for 2 s = 1.5 CPU s for 1 M records
        assert_eq!(cpu_per_million(&step), Some(1.5));
        assert_eq!(
            workers_row(&step),
            "| 4 worker(s), TLS | 500000 | 75.0 % / 1.0 MiB | 1.50 |  |"
        );
    }
}
