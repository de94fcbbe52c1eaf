//! `bench kubernetes`: a node of `--pods` pods, each container writing
//! `--rate-per-pod` numbered CRI lines a second into the kubelet's layout
//! (rotated at `--rotate-bytes` as the kubelet rotates), with the pods in
//! a real API server (`scripts/kube.sh`); logferry's `kubernetes` source
//! and, unless `--no-peer`, Fluent Bit's `tail` + `kubernetes` filter
//! collect them, in alternate runs, each with its defaults, forwarding
//! to the bench's receiver, which counts every line and checks it carries
//! its pod's labels.
//!
//! Each run writes for `--seconds`; CPU (user + system, from the
//! threads' nanosecond counts) is measured over the steady window, from
//! [`warmup`] after the first write to the last; peak RSS is the agent's
//! high-water mark; a line is lost when it has not arrived once the
//! writing ended and nothing more came for [`DRAIN_IDLE`].
//!
//! Then the metadata cache's memory (`cache.rs`): logferry's RSS holding
//! each of `--cache-pods` node-local pods, minus its RSS with none.
//!
//! - `cluster.rs`: the API server and the objects the bench creates;
//! - `kubelet.rs`: the log layout, the writer and the kubelet's rotation;
//! - `agents.rs`: the two agents' configurations;
//! - `receiver.rs`: the forward receiver that counts;
//! - `cache.rs`: the metadata cache's memory.

mod agents;
mod cache;
mod cluster;
pub mod kubelet;
mod receiver;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agents::{Agent, Node};
use cluster::{Cluster, NewPod};
use kubelet::{Container, Kubelet};
use receiver::{Counts, Receiver};

use super::process::Proc;
use super::report::WorkDir;
use super::scenario::peers;
use super::scenario::template::Target;

#[derive(Debug, clap::Args)]
pub struct KubernetesArgs {
    /// Pods on the node, one writing container each (110: Kubernetes'
    /// default most pods per node).
    #[arg(long, default_value_t = 110)]
    pub pods: usize,
    /// Lines a second each container writes (about 150 B each as CRI).
    #[arg(long, default_value_t = 100)]
    pub rate_per_pod: u32,
    /// How long each run writes.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// The kubelet's `containerLogMaxSize`: a live log is rotated at this
    /// size (each container's first rotation comes at a share of it in
    /// proportion to its place, as on a node in its steady state).
    #[arg(long, default_value = "10MiB", value_parser = crate::config::units::parse_bytes)]
    pub rotate_bytes: u64,
    /// How often the kubelet checks the logs' sizes
    /// (`containerLogMonitorInterval`): a rotated file stays uncompressed
    /// until the check after its rotation.
    #[arg(long, default_value = "10s", value_parser = crate::config::units::parse_duration)]
    pub rotate_check: Duration,
    /// Pods on other nodes (20 of them), which no agent should pay for.
    #[arg(long, default_value_t = 0)]
    pub other_pods: usize,
    /// Node-local pod counts whose metadata cache memory is measured
    /// after the runs (comma-separated; `0` alone skips it).
    #[arg(long, default_value = "110,5000", value_delimiter = ',')]
    pub cache_pods: Vec<usize>,
    /// Measure logferry alone, without Fluent Bit.
    #[arg(long)]
    pub no_peer: bool,
    /// Fluent Bit's program (default: the peers' build named in
    /// /opt/peers/env or by $LOGFERRY_PEERS_ENV, else `fluent-bit` on PATH).
    #[arg(long)]
    pub peer_bin: Option<PathBuf>,
    /// The API server's state dir (`LOGFERRY_KUBE_DIR` of
    /// scripts/kube.sh): started there unless it runs, and left running.
    #[arg(long, default_value = "target/bench-kube")]
    pub kube_dir: PathBuf,
    /// The script that starts the API server.
    #[arg(long, default_value = "scripts/kube.sh")]
    pub kube_script: PathBuf,
    #[command(flatten)]
    pub run: super::report::RunArgs,
}

/// Time between starting an agent and the first write: both find the
/// (empty) logs of every container at their start.
const STARTUP: Duration = Duration::from_secs(2);

/// The writing is over and nothing more arrived for this long: what has
/// not arrived is lost.
const DRAIN_IDLE: Duration = Duration::from_secs(15);

/// The start of a run left out of its CPU figure: the first list, the
/// first reads and metadata lookups.
fn warmup(seconds: u64) -> Duration {
    Duration::from_secs_f64((seconds as f64 / 4.0).min(10.0))
}

pub fn run(a: KubernetesArgs) -> Result<(), String> {
    if a.pods == 0 || a.rate_per_pod == 0 || a.seconds == 0 || a.run.runs == 0 {
        return Err("pods, rate-per-pod, seconds and runs must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let peer = if a.no_peer {
        None
    } else {
        Some(peers::program(Target::FluentBit, a.peer_bin.as_deref())?)
    };
    let cluster = Cluster::start(&a.kube_script, &a.kube_dir)?;
    cluster.grant_agent_read()?;
    let id = format!(
        "{:x}-{}",
        chrono::Utc::now().timestamp_millis(),
        std::process::id()
    );
    let ns = format!("bench-{id}");
    cluster.create_namespace(&ns)?;
    let token_file = dir.path.join("agent-token");
    std::fs::write(&token_file, &cluster.agent_token).map_err(|e| e.to_string())?;
    let kubeconfig = dir.path.join("kubeconfig");
    cluster.agent_kubeconfig(&kubeconfig)?;
    let node = Node {
        name: format!("bench-node-{id}"),
        kubeconfig,
        url: cluster.url.clone(),
        ca: cluster.ca.clone(),
        token_file,
        peer,
    };
    let result = bench(&dir.path, &a, &cluster, &ns, &node);
    if let Err(e) = cluster.delete_pods(&ns) {
        eprintln!("bench: the pods of namespace {ns} stay: {e}");
    }
    result
}

/// The runs and the cache measurement, once the namespace exists.
fn bench(
    dir: &Path,
    a: &KubernetesArgs,
    cluster: &Cluster,
    ns: &str,
    node: &Node,
) -> Result<(), String> {
    let started = Instant::now();
    let mut pods: Vec<NewPod> = (0..a.pods)
        .map(|i| NewPod {
            name: format!("orders-{i:05}"),
            node: node.name.clone(),
            index: i,
            container_id: Some(container_id(0, i)),
        })
        .collect();
    pods.extend((0..a.other_pods).map(|i| NewPod {
        name: format!("elsewhere-{i:05}"),
        node: format!("{}-other-{}", node.name, i % 20),
        index: i,
        container_id: None,
    }));
    let uids = cluster.create_pods(ns, &pods)?;
    eprintln!(
        "{} pods created in {:.1} s",
        pods.len(),
        started.elapsed().as_secs_f64()
    );
    let containers: Vec<Container> = pods
        .iter()
        .zip(&uids)
        .take(a.pods)
        .map(|(p, uid)| Container {
            namespace: ns.to_string(),
            pod: p.name.clone(),
            uid: uid.clone(),
            name: cluster::CONTAINER.into(),
            id: p.container_id.clone().unwrap_or_default(),
        })
        .collect();
    let mut agents = vec![Agent::Logferry];
    if node.peer.is_some() {
        agents.push(Agent::FluentBit);
    }
    println!(
        "kubernetes: {} pods on the node ({} on other nodes), {} lines/s each ({} in all), CRI lines of {} B of text, rotation at {} B checked every {:?}; {} s per run, CPU over the steady window from {:.1} s; {} runs",
        a.pods,
        a.other_pods,
        a.rate_per_pod,
        a.pods as u64 * u64::from(a.rate_per_pod),
        kubelet::TEXT_BYTES,
        a.rotate_bytes,
        a.rotate_check,
        a.seconds,
        warmup(a.seconds).as_secs_f64(),
        a.run.runs
    );
    let mut results: Vec<Vec<Measured>> = agents.iter().map(|_| Vec::new()).collect();
    for i in 0..a.run.runs {
        for (k, &agent) in agents.iter().enumerate() {
            let root = dir.join(format!("run-{}-{k}", i + 1));
            let m = measure(agent, dir, &root, node, &containers, a);
            let _ = std::fs::remove_dir_all(&root);
            let m = m?;
            eprintln!("run {}: {}", i + 1, m.row(agent.name()));
            results[k].push(m);
        }
    }
    print(&agents, &results);
    let counts: Vec<usize> = a.cache_pods.iter().copied().filter(|n| *n > 0).collect();
    if !counts.is_empty() {
        let rows = cache::measure(dir, cluster, ns, node, &counts, a.run.runs)?;
        cache::print(&rows);
    }
    Ok(())
}

/// A containerd id (64 hex digits), distinct for every `(set, i)`.
fn container_id(set: u64, i: usize) -> String {
    format!("{:032x}{:032x}", 0xbe9c_0000_0000_0000_u64 | set, i)
}

/// One run of one agent.
struct Measured {
    /// What the writer did.
    written: kubelet::Written,
    /// The steady window: its length, the lines written in it and the
    /// agent's CPU time over it.
    window: Duration,
    window_lines: u64,
    cpu: Duration,
    /// The agent's high-water mark, at the end of the run.
    peak_rss: u64,
    /// What the receiver counted.
    counts: Counts,
}

impl Measured {
    fn cpu_percent(&self) -> f64 {
        100.0 * self.cpu.as_secs_f64() / self.window.as_secs_f64().max(1e-9)
    }

    fn cpu_per_million(&self) -> f64 {
        self.cpu.as_secs_f64() / (self.window_lines.max(1) as f64 / 1e6)
    }

    fn lost(&self) -> u64 {
        self.written.lines.saturating_sub(self.counts.distinct)
    }

    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {:.0} | {} | {:.3} | {:.1} | {} | {} | {} | {} |",
            self.written.lines,
            self.written.lines as f64 / self.written.seconds.max(1e-9),
            super::procfs::human_percent(self.cpu_percent()),
            self.cpu_per_million(),
            cache::mib(self.peak_rss),
            self.lost(),
            self.counts.duplicates,
            self.counts.without_labels,
            self.written.rotations
        )
    }
}

const HEADER: &str = "| agent | lines written | lines/s | CPU % of a core (steady) | CPU s / M lines | peak RSS MiB | lost | duplicated | without its pod's labels | rotations |\n|---|---|---|---|---|---|---|---|---|---|";

fn measure(
    agent: Agent,
    dir: &Path,
    root: &Path,
    node: &Node,
    containers: &[Container],
    a: &KubernetesArgs,
) -> Result<Measured, String> {
    let _ = std::fs::remove_dir_all(root);
    let mut kubelet = Kubelet::create(root, containers, a.rotate_bytes, a.rotate_check)?;
    let per_pod = u64::from(a.rate_per_pod) * a.seconds;
    let receiver = Receiver::start(containers.len(), per_pod)?;
    let mut p = agents::start(agent, dir, node, &kubelet, receiver.addr)?;
    p.pause(STARTUP)?;
    let progress = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (written, window, window_lines, cpu) = std::thread::scope(|s| {
        let writer = s.spawn(|| kubelet.write(a.rate_per_pod, a.seconds, &progress, &stop));
        let steady = (|| {
            p.pause(warmup(a.seconds))?;
            let before = p.sample()?;
            let (t0, lines0) = (Instant::now(), progress.load(Ordering::Relaxed));
            while !writer.is_finished() {
                if let Some(status) = p.exited() {
                    return Err(format!(
                        "{} exited while the logs were written ({status})",
                        agent.name()
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let after = p.sample()?;
            Ok((
                t0.elapsed(),
                progress.load(Ordering::Relaxed) - lines0,
                after.cpu_since(&before),
            ))
        })();
        if steady.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let written = writer
            .join()
            .map_err(|_| "the writer panicked".to_string())??;
        let (window, lines, cpu) = steady?;
        Ok::<_, String>((written, window, lines, cpu))
    })?;
    drain(&mut p, &receiver, written.lines)?;
    let missing = receiver.missing(per_pod, 5);
    if !missing.is_empty() {
        let ranges: Vec<String> = missing
            .iter()
            .map(|(pod, first, last)| format!("pod {pod} lines {first}–{last}"))
            .collect();
        eprintln!("{}: not arrived: {}", agent.name(), ranges.join(", "));
    }
    let peak_rss = p.sample()?.peak_rss;
    drop(p);
    if let Some(e) = receiver.error() {
        return Err(format!(
            "the receiver refused {}'s records: {e}",
            agent.name()
        ));
    }
    Ok(Measured {
        written,
        window,
        window_lines,
        cpu,
        peak_rss,
        counts: receiver.counts(),
    })
}

/// Waits until every line written has arrived, or nothing more arrived
/// for [`DRAIN_IDLE`].
fn drain(p: &mut Proc, receiver: &Receiver, lines: u64) -> Result<(), String> {
    let mut last = receiver.counts().records;
    let mut moved = Instant::now();
    loop {
        let c = receiver.counts();
        if c.distinct >= lines {
            return Ok(());
        }
        if c.records != last {
            last = c.records;
            moved = Instant::now();
        } else if moved.elapsed() >= DRAIN_IDLE {
            return Ok(());
        }
        if let Some(status) = p.exited() {
            return Err(format!(
                "the agent exited ({status}) with {} of {lines} lines delivered",
                c.distinct
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The median of `f` over `runs`.
fn median(runs: &[Measured], f: impl Fn(&Measured) -> f64) -> f64 {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Every run, the medians, and logferry against Fluent Bit.
fn print(agents: &[Agent], results: &[Vec<Measured>]) {
    println!("\n{HEADER}");
    for (agent, runs) in agents.iter().zip(results) {
        for (i, m) in runs.iter().enumerate() {
            println!("{}", m.row(&format!("{}, run {}", agent.name(), i + 1)));
        }
    }
    for (agent, runs) in agents.iter().zip(results) {
        let sum = |f: fn(&Measured) -> u64| runs.iter().map(f).sum::<u64>();
        println!(
            "| **{}, median** | {:.0} | {:.0} | {} | {:.3} | {:.1} | {} in all | {} in all | {} in all | {:.0} |",
            agent.name(),
            median(runs, |m| m.written.lines as f64),
            median(runs, |m| m.written.lines as f64 / m.written.seconds.max(1e-9)),
            super::procfs::human_percent(median(runs, Measured::cpu_percent)),
            median(runs, Measured::cpu_per_million),
            median(runs, |m| cache::mib(m.peak_rss)),
            sum(Measured::lost),
            sum(|m| m.counts.duplicates),
            sum(|m| m.counts.without_labels),
            median(runs, |m| m.written.rotations as f64),
        );
    }
    if let [ours, theirs] = results {
        let cpu =
            median(ours, Measured::cpu_percent) / median(theirs, Measured::cpu_percent).max(1e-9);
        let rss =
            median(ours, |m| m.peak_rss as f64) / median(theirs, |m| m.peak_rss as f64).max(1.0);
        println!(
            "\nmedians, logferry / Fluent Bit: CPU {cpu:.2} (goal ≤ 0.5), peak RSS {rss:.2} (goal ≤ 0.5)"
        );
    }
    if let Some(ours) = results.first() {
        let lost: u64 = ours.iter().map(Measured::lost).sum();
        let written: u64 = ours.iter().map(|m| m.written.lines).sum();
        println!(
            "logferry: peak RSS {:.1} MiB (goal ≤ 64), {lost} of {written} lines lost (goal 0)",
            median(ours, |m| cache::mib(m.peak_rss))
        );
    }
}
