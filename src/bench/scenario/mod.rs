//! `bench scenario NAME`: a topology of separate processes on loopback,
//! driven through load steps, every process sampled from /proc, every
//! record counted where it arrives.
//!
//! - `template.rs`: the config templates (`bench/templates/`) and their
//!   placeholders;
//! - `peers.rs`: where the other systems' programs are;
//! - `topology.rs`: starting and stopping the processes;
//! - `arrivals.rs`: following the receivers' files: lines counted, their
//!   write-time stamps read as end-to-end latency;
//! - `file_transfer.rs`: the file-transfer scenario (senders → one server
//!   → one unified file), its own steps and checks;
//! - this file: the steps, the checks and the report.
//!
//! The deliver scenarios (Fluentd's benchmark): agents follow a file that
//! an in-process writer appends to at the step's rate (`gen.rs`), forward
//! to the deliver tier (the target system), which forwards to receivers
//! that write a line per record into a file each; the scenario follows
//! those files, counting the lines and timing them (`arrivals.rs`). Each
//! role can be another system (`--agent`, `--target`, `--receiver`).
//! Before the first step one line per agent must get through (so a system
//! that takes seconds to start does not count as latency). After each
//! step the writers stop and the receivers are given `--drain-timeout` to
//! catch up: every record sent must have arrived.
//!
//! The Kafka scenarios (`http_kafka.rs`, `forward_kafka.rs`, sharing
//! `kafka.rs`) count what reaches a topic instead.

mod arrivals;
mod file_transfer;
mod forward_kafka;
mod http_kafka;
mod kafka;
pub(super) mod peers;
pub(super) mod template;
mod topology;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::gen::{write_lines, Lines};
use super::monitor::interrupt_flag;
use super::output::AppendFile;
use super::procfs::{self, human_bytes, human_percent, ProcSample};
use super::report::WorkDir;
use super::results::{Latency, Machine, ProcessStep, Sample, ScenarioResult, Step};
use super::stamp::{self, Stamp};
use template::Target;
use topology::{Plan, Role, Shape, Tier, Topology};

/// How long the first line may take through a fresh topology (Fluentd
/// starts in seconds, and Fluent Bit and Fluentd flush once a second at
/// each hop).
const FIRST_LINE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Name {
    /// agent i → deliver i → receiver i.
    PeerDeliver,
    /// Every agent → all delivers → all receivers, round robin.
    RoundRobinDeliver,
    /// HTTP writer → logferry HTTP → Kafka instances (directly or through
    /// haproxy) → a topic.
    HttpKafka,
    /// Writer → tail agent → forward → the target's forward → Kafka server
    /// → a topic, and forward-writer workers at full speed into the server.
    ForwardKafka,
    /// Senders → one server writing one unified file (see `--senders`).
    FileTransfer,
}

impl Name {
    fn as_str(self) -> &'static str {
        match self {
            Name::PeerDeliver => "peer-deliver",
            Name::RoundRobinDeliver => "round-robin-deliver",
            Name::HttpKafka => "http-kafka",
            Name::ForwardKafka => "forward-kafka",
            Name::FileTransfer => "file-transfer",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ScenarioArgs {
    /// The scenario.
    #[arg(value_enum)]
    pub name: Name,
    /// The system in the measured role, started from
    /// bench/templates/<system>/deliver.* (forward-kafka:
    /// kafka-server.*; file-transfer: file-server.*).
    #[arg(long, visible_alias = "deliver", value_enum, default_value_t = Target::Logferry)]
    pub target: Target,
    /// The target's program (default: this binary for logferry, else the
    /// peers' build named in /opt/peers/env or by $LOGFERRY_PEERS_ENV,
    /// else `fluent-bit`, `fluentd` or `vector` from PATH).
    #[arg(long, visible_alias = "deliver-bin")]
    pub target_bin: Option<PathBuf>,
    /// A deliver config template to use instead of the built-in one (same
    /// placeholders).
    #[arg(long, visible_alias = "deliver-template")]
    pub template: Option<PathBuf>,
    /// Deliver scenarios: the system in the agent role (tail → forward),
    /// from bench/templates/<system>/agent.* (not vector: it has no
    /// forward sink).
    #[arg(long, value_enum, default_value_t = Target::Logferry)]
    pub agent: Target,
    /// The agents' program (default as for --target-bin).
    #[arg(long)]
    pub agent_bin: Option<PathBuf>,
    /// An agent config template instead of the built-in one.
    #[arg(long)]
    pub agent_template: Option<PathBuf>,
    /// Deliver scenarios: the system in the receiver role (forward → a
    /// line per record in a file), from
    /// bench/templates/<system>/receiver.*.
    #[arg(long, value_enum, default_value_t = Target::Logferry)]
    pub receiver: Target,
    /// The receivers' program (default as for --target-bin).
    #[arg(long)]
    pub receiver_bin: Option<PathBuf>,
    /// A receiver config template instead of the built-in one.
    #[arg(long)]
    pub receiver_template: Option<PathBuf>,
    /// Agents, each following its own file.
    #[arg(long, default_value_t = 1)]
    pub agents: usize,
    /// Deliver processes (default: as many as agents in peer-deliver, 1 in
    /// round-robin-deliver).
    #[arg(long)]
    pub delivers: Option<usize>,
    /// Receivers (default: as for --delivers).
    #[arg(long)]
    pub receivers: Option<usize>,
    /// Writing rate of each agent's file, lines/s, one step per rate
    /// (http-kafka: requests/s over all connections), separated by commas
    /// or spaces (`100,1000` or "100 1000").
    #[arg(
        long,
        value_parser = parse_rates,
        default_value = "10,100,1000,10000,20000,50000,60000"
    )]
    pub rates: Vec<Rates>,
    /// One step writing as fast as possible instead of --rates.
    #[arg(long)]
    pub max: bool,
    /// Seconds each step writes.
    #[arg(long, default_value_t = 10.0)]
    pub step_seconds: f64,
    /// Time between samples of every process.
    #[arg(long, default_value = "1s", value_parser = crate::config::units::parse_duration)]
    pub sample: Duration,
    /// How long the processes run idle after the first line has crossed,
    /// before the first step: a step measures a running pipeline, not its
    /// start-up (whose peak RSS is reported apart). None with --smoke.
    #[arg(long, default_value = "5s", value_parser = crate::config::units::parse_duration)]
    pub settle: Duration,
    /// Bytes per line, newline excluded (at least 34 to carry the
    /// write-time stamp the latency is measured with).
    #[arg(long, default_value_t = 100)]
    pub line_size: usize,
    /// After each step, how long the receivers may take to catch up before
    /// the missing records count as lost.
    #[arg(long, default_value = "60s", value_parser = crate::config::units::parse_duration)]
    pub drain_timeout: Duration,
    /// Write the result (results::ScenarioResult) as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML page (DIR/index.html) with the tables
    /// and plots of this run (`bench report` compares several runs).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// A few seconds in all: rates 100 and 1000 for 1 s each, sampled
    /// every 250 ms (checks that everything works, measures nothing).
    #[arg(long)]
    pub smoke: bool,
    /// Directory for configs, followed files and the deliver's output
    /// (removed afterwards unless given).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub kafka: Box<kafka::KafkaScenarioArgs>,
    #[command(flatten)]
    pub file_transfer: file_transfer::FileTransferArgs,
}

/// Rates given in one `--rates` value.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates(pub Vec<f64>);

/// `100,1000` or `100 1000` (or both mixed).
fn parse_rates(text: &str) -> Result<Rates, String> {
    let rates = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|r| !r.is_empty())
        .map(|r| r.parse::<f64>().map_err(|_| format!("{r:?} is not a rate")))
        .collect::<Result<Vec<f64>, String>>()?;
    if rates.is_empty() {
        return Err("no rate given".into());
    }
    Ok(Rates(rates))
}

/// The steps' rates (`None`: as fast as it goes), seconds per step and
/// time between samples, from `--rates`, `--max`, `--step-seconds`,
/// `--sample` and `--smoke`.
pub(super) fn steps(a: &ScenarioArgs) -> Result<(Vec<Option<f64>>, f64, Duration), String> {
    let (rates, step_seconds, sample_every) = if a.smoke {
        let rates = if a.max {
            vec![None]
        } else {
            vec![Some(100.0), Some(1000.0)]
        };
        (rates, 1.0, Duration::from_millis(250))
    } else if a.max {
        (vec![None], a.step_seconds, a.sample)
    } else {
        (
            a.rates
                .iter()
                .flat_map(|r| &r.0)
                .map(|r| Some(*r))
                .collect(),
            a.step_seconds,
            a.sample,
        )
    };
    if rates.is_empty() || rates.iter().flatten().any(|r| !r.is_finite() || *r <= 0.0) {
        return Err("--rates must be positive numbers (or use --max)".into());
    }
    if !step_seconds.is_finite() || step_seconds <= 0.0 || sample_every.is_zero() {
        return Err("--step-seconds and --sample must be positive".into());
    }
    Ok((rates, step_seconds, sample_every))
}

/// What the steps share.
struct Run<'a> {
    topo: Topology,
    /// Scenario start, the zero of sample times.
    clock: Instant,
    sample_every: Duration,
    step: Duration,
    line_size: usize,
    drain_timeout: Duration,
    shape: Shape,
    stop: &'a AtomicBool,
    progress: ProgressBar,
    samples: Vec<Sample>,
    /// Idle time between the first line and the first step.
    settle: Duration,
    /// Lines written to each agent's file so far.
    sent: Vec<u64>,
}

pub fn run(a: ScenarioArgs) -> Result<(), String> {
    let deliver_scenario = matches!(a.name, Name::PeerDeliver | Name::RoundRobinDeliver);
    let other_roles = a.agent != Target::Logferry
        || a.receiver != Target::Logferry
        || a.agent_bin.is_some()
        || a.receiver_bin.is_some()
        || a.agent_template.is_some()
        || a.receiver_template.is_some();
    if !deliver_scenario && other_roles {
        return Err(format!(
            "--agent and --receiver (and their -bin and -template) belong to the deliver \
             scenarios (peer-deliver, round-robin-deliver); {} measures --target alone",
            a.name.as_str()
        ));
    }
    let shape = match a.name {
        Name::PeerDeliver => Shape::Peer,
        Name::RoundRobinDeliver => Shape::RoundRobin,
        Name::HttpKafka => return http_kafka::run(&a),
        Name::ForwardKafka => return forward_kafka::run(&a),
        Name::FileTransfer => return file_transfer::run(&a),
    };
    let tier_default = match shape {
        Shape::Peer => a.agents,
        Shape::RoundRobin => 1,
    };
    let plan = Plan {
        shape,
        agents: a.agents,
        delivers: a.delivers.unwrap_or(tier_default),
        receivers: a.receivers.unwrap_or(tier_default),
        agent: Role {
            system: a.agent,
            bin: a.agent_bin.clone(),
            template: a.agent_template.clone(),
        },
        deliver: Role {
            system: a.target,
            bin: a.target_bin.clone(),
            template: a.template.clone(),
        },
        receiver: Role {
            system: a.receiver,
            bin: a.receiver_bin.clone(),
            template: a.receiver_template.clone(),
        },
    };
    plan.validate()?;
    let (rates, step_seconds, sample_every) = steps(&a)?;
    if a.line_size == 0 {
        return Err("--line-size must be positive".into());
    }
    let stop = interrupt_flag();
    let dir = WorkDir::new(a.dir.clone())?;
    if !stamp::fits(12, a.line_size) {
        println!(
            "note: lines of {} B have no room for a write-time stamp (at least {} B): latency is not measured",
            a.line_size,
            12 + 1 + stamp::WIDTH
        );
    }
    println!(
        "{}: {} {} agent(s) → {} {} deliver(s) → {} {} receiver(s); {} step(s) of {step_seconds} s, lines of {} B; files in {}",
        a.name.as_str(),
        plan.agents,
        a.agent.name(),
        plan.delivers,
        a.target.name(),
        plan.receivers,
        a.receiver.name(),
        rates.len(),
        a.line_size,
        dir.path.display()
    );
    let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let topo = Topology::start(&plan, &dir.path)?;
    let mut run = Run {
        sent: vec![0; topo.agents.len()],
        topo,
        clock: Instant::now(),
        sample_every,
        step: Duration::from_secs_f64(step_seconds),
        line_size: a.line_size,
        drain_timeout: a.drain_timeout,
        shape,
        stop,
        progress: progress_bar(),
        samples: Vec::new(),
        settle: if a.smoke { Duration::ZERO } else { a.settle },
    };
    if !run.first_line()? {
        return Err("interrupted before the first step; every process was stopped".into());
    }
    let systems = Systems {
        agent: a.agent,
        deliver: a.target,
        receiver: a.receiver,
    };
    let mut steps = Vec::new();
    println!("\n{}", table_header(&systems));
    for (i, rate) in rates.iter().enumerate() {
        let label = rate.map_or("max".to_string(), |r| format!("{r} lines/s"));
        let Some(step) = run.step(i + 1, rates.len(), &label, *rate)? else {
            break;
        };
        run.progress.suspend(|| println!("{}", table_row(&step)));
        steps.push(step);
    }
    run.progress.finish_and_clear();
    let interrupted = stop.load(Ordering::SeqCst);
    let mut params = serde_json::Map::new();
    params.insert("agents".into(), plan.agents.into());
    params.insert("delivers".into(), plan.delivers.into());
    params.insert("receivers".into(), plan.receivers.into());
    params.insert("step_seconds".into(), step_seconds.into());
    params.insert("line_size".into(), a.line_size.into());
    params.insert("sample_seconds".into(), sample_every.as_secs_f64().into());
    params.insert("agent".into(), a.agent.name().into());
    params.insert("deliver".into(), a.target.name().into());
    params.insert("receiver".into(), a.receiver.name().into());
    for (key, bin) in [
        ("agent_bin", &a.agent_bin),
        ("target_bin", &a.target_bin),
        ("receiver_bin", &a.receiver_bin),
    ] {
        if let Some(b) = bin {
            params.insert(key.into(), b.display().to_string().into());
        }
    }
    let result = ScenarioResult {
        scenario: a.name.as_str().into(),
        target: a.target.name().into(),
        started,
        machine: Machine::this(),
        params,
        steps,
        samples: std::mem::take(&mut run.samples),
    };
    // the steps' RSS is a running pipeline's: the start-up's peak apart
    let startup_peaks: Vec<String> = run
        .topo
        .members()
        .filter_map(|m| {
            let s = procfs::sample(m.proc.pid())?;
            Some(format!("{} {}", m.name, human_bytes(s.peak_rss)))
        })
        .collect();
    // stop the processes before reporting, so a slow teardown is not
    // mistaken for the end of the report
    drop(run);
    println!(
        "peak RSS of each process since its start (VmHWM, the start-up included): {}",
        startup_peaks.join(", ")
    );
    print_headline(&result);
    if let Some(path) = &a.json {
        result.write(path)?;
        println!("result written to {}", path.display());
    }
    if let Some(dir) = &a.report {
        let page = super::html::write_report(dir, std::slice::from_ref(&result))?;
        println!("report written to {}", page.display());
    }
    if interrupted {
        return Err(format!(
            "interrupted after {} complete step(s); every process was stopped",
            result.steps.len()
        ));
    }
    let lost = result.lost();
    let mismatched: Vec<&str> = result
        .steps
        .iter()
        .flat_map(|s| &s.remarks)
        .filter(|r| r.contains(" got "))
        .map(String::as_str)
        .collect();
    if lost > 0 || !mismatched.is_empty() {
        return Err(format!("{lost} record(s) lost; {}", mismatched.join("; ")));
    }
    Ok(())
}

/// Per-member CPU and memory over one step.
struct Meter {
    pid: u32,
    first_at: Instant,
    last: ProcSample,
    last_at: Instant,
    /// CPU time since the first sample, summed sample by sample, so a
    /// thread that exits during the step costs at most its last slice.
    cpu: Duration,
    peak_rss: u64,
}

impl Meter {
    fn start(pid: u32, name: &str) -> Result<Meter, String> {
        let s = procfs::sample(pid).ok_or_else(|| format!("{name} exited (pid {pid} is gone)"))?;
        let now = Instant::now();
        Ok(Meter {
            pid,
            peak_rss: s.rss,
            last: s,
            first_at: now,
            last_at: now,
            cpu: Duration::ZERO,
        })
    }

    /// Samples again; returns the CPU % since the previous sample and RSS.
    fn sample(&mut self) -> Option<(f64, u64)> {
        let s = procfs::sample(self.pid)?;
        let now = Instant::now();
        let cpu = s.cpu_since_recent(&self.last);
        let wall = (now - self.last_at).as_secs_f64();
        self.cpu += cpu;
        self.peak_rss = self.peak_rss.max(s.rss);
        let rss = s.rss;
        self.last = s;
        self.last_at = now;
        let percent = if wall > 0.0 {
            cpu.as_secs_f64() / wall * 100.0
        } else {
            0.0
        };
        Some((percent, rss))
    }

    fn cpu_percent(&self) -> f64 {
        let wall = (self.last_at - self.first_at).as_secs_f64();
        if wall > 0.0 {
            self.cpu.as_secs_f64() / wall * 100.0
        } else {
            0.0
        }
    }
}

impl Run<'_> {
    /// Writes one line into each agent's file and waits until every one
    /// has reached a receiver: the topology works, and a system slow to
    /// start does not count in the first step's latency; then lets every
    /// process settle, so that no step measures a start-up. False if
    /// interrupted.
    fn first_line(&mut self) -> Result<bool, String> {
        for (i, path) in self.topo.tail_paths.iter().enumerate() {
            let mut line = Vec::new();
            let id = format!("first-line-{}", i + 1);
            stamp::numbered_line(&mut line, id.as_bytes(), self.line_size, &Stamp::now());
            AppendFile::open(path, None)?.write(&line)?;
            self.sent[i] += 1;
        }
        let want: u64 = self.sent.iter().sum();
        let started = Instant::now();
        let deadline = started + FIRST_LINE_TIMEOUT;
        let mut next_sample = Instant::now() + self.sample_every;
        let mut meters = Vec::new();
        for m in self.topo.members() {
            meters.push(Meter::start(m.proc.pid(), &m.name)?);
        }
        while self.received().iter().sum::<u64>() < want {
            if Instant::now() > deadline {
                return Err(format!(
                    "{} of {want} first line(s) written to the agents' files reached a receiver \
                     within {FIRST_LINE_TIMEOUT:?}: see the processes' configs and NAME.out logs \
                     in the run's directory (--dir)",
                    self.received().iter().sum::<u64>()
                ));
            }
            if !self.tick(&mut meters, &mut next_sample)? {
                return Ok(false);
            }
        }
        // the first lines' latency is the start-up, not a step's
        for a in &self.topo.arrivals {
            a.take_latencies();
        }
        println!(
            "a first line from every agent reached the receivers after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let settled = Instant::now() + self.settle;
        while Instant::now() < settled {
            if !self.tick(&mut meters, &mut next_sample)? {
                return Ok(false);
            }
        }
        self.samples.clear();
        self.clock = Instant::now();
        Ok(true)
    }

    /// One load step; `None` if interrupted.
    fn step(
        &mut self,
        n: usize,
        of: usize,
        label: &str,
        rate: Option<f64>,
    ) -> Result<Option<Step>, String> {
        let received_before = self.received();
        let mut meters = Vec::new();
        for m in self.topo.members() {
            meters.push(Meter::start(m.proc.pid(), &m.name)?);
        }
        let start = Instant::now();
        let writers: Vec<JoinHandle<Result<u64, String>>> = self
            .topo
            .tail_paths
            .iter()
            .enumerate()
            .map(|(i, path)| {
                let path = path.clone();
                let lines = Lines {
                    rate: rate.unwrap_or(0.0),
                    duration: Some(self.step),
                    count: None,
                    size: self.line_size,
                    template: None,
                    seed: i as u64 + 1,
                };
                let stop = interrupt_flag();
                std::thread::spawn(move || {
                    let mut file = AppendFile::open(&path, None)?;
                    write_lines(&mut file, &lines, stop).map(|(lines, _)| lines)
                })
            })
            .collect();
        let mut next_sample = start + self.sample_every;
        while !writers.iter().all(|w| w.is_finished()) {
            if !self.tick(&mut meters, &mut next_sample)? {
                for w in writers {
                    let _ = w.join();
                }
                return Ok(None);
            }
            if self.progress.is_hidden() {
                continue;
            }
            let total: u64 = self.received().iter().sum();
            self.progress.set_message(format!(
                "step {n}/{of}: {label} × {} agent(s) · {:.0}/{:.0} s · elapsed {:.0} s · received {total}",
                self.topo.agents.len(),
                start.elapsed().as_secs_f64(),
                self.step.as_secs_f64(),
                self.clock.elapsed().as_secs_f64(),
            ));
        }
        let seconds = start.elapsed().as_secs_f64();
        let mut sent_step = Vec::new();
        for (i, w) in writers.into_iter().enumerate() {
            let lines = w.join().map_err(|_| "a writer panicked".to_string())??;
            self.sent[i] += lines;
            sent_step.push(lines);
        }
        for (m, member) in meters.iter_mut().zip(self.topo.members()) {
            if m.sample().is_none() {
                return Err(format!("{} has exited", member.name));
            }
        }
        let at_end = self.received();
        let sent_total: u64 = self.sent.iter().sum();
        let behind_at_end = at_end.iter().sum::<u64>() < sent_total;

        // CPU and memory of the writing period, before the drain
        let mut processes = Vec::new();
        let mut r = 0;
        for (m, member) in meters.iter().zip(self.topo.members()) {
            let rate = match member.tier {
                Tier::Agent => Some(sent_step[processes.len()] as f64 / seconds),
                Tier::Deliver => None,
                Tier::Receiver => {
                    r += 1;
                    Some(at_end[r - 1].saturating_sub(received_before[r - 1]) as f64 / seconds)
                }
            };
            processes.push(ProcessStep {
                name: member.name.clone(),
                tier: member.tier.name().into(),
                system: Some(member.system.name().into()),
                pid: m.pid,
                rate,
                cpu_percent: m.cpu_percent(),
                rss_bytes: m.peak_rss,
            });
        }
        // drain: the writers have stopped; wait for the receivers
        let deadline = Instant::now() + self.drain_timeout;
        let mut drained = at_end.clone();
        while drained.iter().sum::<u64>() < sent_total && Instant::now() < deadline {
            if !self.tick(&mut meters, &mut next_sample)? {
                return Ok(None);
            }
            drained = self.received();
        }
        let received: u64 = drained
            .iter()
            .zip(&received_before)
            .map(|(a, b)| a.saturating_sub(*b))
            .sum();
        let sent: u64 = sent_step.iter().sum();
        let remarks = remarks(&Counts {
            behind_at_end,
            peer: self.shape == Shape::Peer,
            drained: &drained,
            sent_so_far: &self.sent,
            received,
            sent,
            drain_timeout: self.drain_timeout,
        });

        let in_step: u64 = at_end
            .iter()
            .zip(&received_before)
            .map(|(a, b)| a.saturating_sub(*b))
            .sum();
        let mut micros: Vec<u32> = Vec::new();
        for a in &self.topo.arrivals {
            micros.extend(a.take_latencies());
        }
        Ok(Some(Step {
            label: label.to_string(),
            offered_rate: rate,
            seconds,
            sent,
            received,
            received_rate: in_step as f64 / seconds,
            received_bytes_rate: None,
            processes,
            latency: Latency::of(&mut micros),
            remarks,
        }))
    }

    /// Waits a little; samples every member when a sample is due. False if
    /// interrupted; an error if a member has exited.
    fn tick(&mut self, meters: &mut [Meter], next_sample: &mut Instant) -> Result<bool, String> {
        let wake = (*next_sample).min(Instant::now() + Duration::from_millis(50));
        if !super::monitor::sleep_until(wake, self.stop) {
            return Ok(false);
        }
        if let Some(e) = self.topo.exited() {
            return Err(e);
        }
        if Instant::now() < *next_sample {
            return Ok(true);
        }
        let now = Instant::now();
        while *next_sample <= now {
            *next_sample += self.sample_every;
        }
        let t = self.clock.elapsed().as_secs_f64();
        for (m, member) in meters.iter_mut().zip(self.topo.members()) {
            if let Some((cpu, rss)) = m.sample() {
                self.samples.push(Sample {
                    t,
                    name: member.name.clone(),
                    tier: member.tier.name().into(),
                    cpu_percent: cpu,
                    rss_bytes: rss,
                });
            }
        }
        Ok(true)
    }

    /// What each receiver has written so far.
    fn received(&self) -> Vec<u64> {
        self.topo.received()
    }
}

/// A step's counts, for its remarks.
struct Counts<'a> {
    /// The receivers had not received everything written when the
    /// writers stopped.
    behind_at_end: bool,
    /// peer-deliver: receiver i hears from agent i alone.
    peer: bool,
    /// What each receiver had counted after the drain, since the start.
    drained: &'a [u64],
    /// What each agent's writer had written, since the start.
    sent_so_far: &'a [u64],
    /// Records received (after the drain) and sent during the step.
    received: u64,
    sent: u64,
    drain_timeout: Duration,
}

fn remarks(c: &Counts) -> Vec<String> {
    let mut remarks = Vec::new();
    if c.behind_at_end {
        remarks.push("delay occurred".to_string());
    }
    if c.peer {
        for (i, (got, want)) in c.drained.iter().zip(c.sent_so_far).enumerate() {
            if got != want {
                remarks.push(format!("receiver-{} got {got} of {want} records", i + 1));
            }
        }
    }
    if c.received < c.sent {
        remarks.push(format!(
            "{} record(s) missing after {:?}",
            c.sent - c.received,
            c.drain_timeout
        ));
    } else if c.received > c.sent {
        remarks.push(format!("{} record(s) arrived twice", c.received - c.sent));
    }
    remarks
}

/// Live progress on a terminal; hidden when stdout is not one.
pub(super) fn progress_bar() -> ProgressBar {
    if !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    // on stdout, where the table is printed (suspending the bar)
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The system in each role, named in the table's header.
struct Systems {
    agent: Target,
    deliver: Target,
    receiver: Target,
}

fn table_header(s: &Systems) -> String {
    format!(
        "| rate of writing (lines/s per agent) | received lines/s per receiver | latency p50 / p99 / max (ms) | agent {} CPU % / RSS | deliver {} CPU % / RSS | receiver {} CPU % / RSS | deliver / receiver CPU | remarks |\n|---|---|---|---|---|---|---|---|",
        s.agent.name(),
        s.deliver.name(),
        s.receiver.name()
    )
}

/// Mean CPU % and largest RSS of one tier in a step.
fn tier(step: &Step, tier: Tier) -> (f64, u64) {
    let ps: Vec<&ProcessStep> = step
        .processes
        .iter()
        .filter(|p| p.tier == tier.name())
        .collect();
    if ps.is_empty() {
        return (0.0, 0);
    }
    let cpu = ps.iter().map(|p| p.cpu_percent).sum::<f64>() / ps.len() as f64;
    (cpu, ps.iter().map(|p| p.rss_bytes).max().unwrap_or(0))
}

/// The deliver tier's CPU over the receivers' (mean per process).
fn deliver_over_receiver(step: &Step) -> Option<f64> {
    let (d, _) = tier(step, Tier::Deliver);
    let (r, _) = tier(step, Tier::Receiver);
    (r > 0.0).then(|| d / r)
}

fn table_row(step: &Step) -> String {
    let per_receiver: Vec<String> = step
        .processes
        .iter()
        .filter(|p| p.tier == Tier::Receiver.name())
        .map(|p| format!("{:.0}", p.rate.unwrap_or(0.0)))
        .collect();
    let cell = |t| {
        let (cpu, rss) = tier(step, t);
        format!("{} / {}", human_percent(cpu), human_bytes(rss))
    };
    let latency = step.latency.map_or("–".into(), |l| {
        format!("{:.1} / {:.1} / {:.1}", l.p50_ms, l.p99_ms, l.max_ms)
    });
    format!(
        "| {} | {} | {latency} | {} | {} | {} | {} | {} |",
        step.label,
        per_receiver.join(" / "),
        cell(Tier::Agent),
        cell(Tier::Deliver),
        cell(Tier::Receiver),
        deliver_over_receiver(step).map_or("-".into(), |x| format!("{x:.2}")),
        step.remarks.join("; ")
    )
}

fn print_headline(r: &ScenarioResult) {
    let sent: u64 = r.steps.iter().map(|s| s.sent).sum();
    let received: u64 = r.steps.iter().map(|s| s.received).sum();
    println!(
        "\nrecords: {sent} sent, {received} received, {} lost",
        r.lost()
    );
    if let Some(last) = r.steps.last() {
        match deliver_over_receiver(last) {
            Some(x) => println!(
                "headline: at {}, the {} deliver tier used {:.2}× the CPU of a receiver ({} vs {} of a core per process)",
                last.label,
                r.target,
                x,
                human_percent(tier(last, Tier::Deliver).0),
                human_percent(tier(last, Tier::Receiver).0)
            ),
            None => println!("headline: the receivers used no measurable CPU at {}", last.label),
        }
        if let Some(l) = last.latency {
            println!(
                "latency at {}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {} lines, from the writer's write() to the line read from a receiver's file",
                last.label, l.p50_ms, l.p99_ms, l.max_ms, l.lines
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts<'a>(drained: &'a [u64], sent_so_far: &'a [u64], received: u64) -> Counts<'a> {
        Counts {
            behind_at_end: false,
            peer: true,
            drained,
            sent_so_far,
            received,
            sent: sent_so_far.iter().sum(),
            drain_timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn rates_are_separated_by_commas_or_spaces() {
        assert_eq!(
            parse_rates("100 1000 10000").unwrap().0,
            [100.0, 1000.0, 10000.0]
        );
        assert_eq!(
            parse_rates("100,1000, 5e4").unwrap().0,
            [100.0, 1000.0, 50000.0]
        );
        assert!(parse_rates("100 fast")
            .unwrap_err()
            .contains("\"fast\" is not a rate"));
        assert!(parse_rates(" , ").is_err());
    }

    #[test]
    fn remarks_say_what_went_wrong_and_nothing_when_all_arrived() {
        assert!(remarks(&counts(&[10, 20], &[10, 20], 30)).is_empty());
        let late = Counts {
            behind_at_end: true,
            ..counts(&[10, 20], &[10, 20], 30)
        };
        assert_eq!(remarks(&late), ["delay occurred"]);
        // the total matches, but a peer receiver got another's records
        assert_eq!(
            remarks(&counts(&[11, 19], &[10, 20], 30)),
            [
                "receiver-1 got 11 of 10 records",
                "receiver-2 got 19 of 20 records"
            ]
        );
        // round robin: only the total counts
        let rr = Counts {
            peer: false,
            ..counts(&[11, 19], &[10, 20], 30)
        };
        assert!(remarks(&rr).is_empty());
        assert_eq!(
            remarks(&Counts {
                peer: false,
                ..counts(&[10, 15], &[10, 20], 25)
            }),
            ["5 record(s) missing after 60s"]
        );
    }

    fn process(tier: Tier, cpu_percent: f64, rate: Option<f64>) -> ProcessStep {
        ProcessStep {
            name: format!("{}-1", tier.name()),
            tier: tier.name().into(),
            system: None,
            pid: 1,
            rate,
            cpu_percent,
            rss_bytes: 1 << 20,
        }
    }

    #[test]
    fn a_row_shows_each_receiver_each_tier_and_the_deliver_ratio() {
        let step = Step {
            label: "1000 lines/s".into(),
            offered_rate: Some(1000.0),
            seconds: 10.0,
            sent: 10_000,
            received: 10_000,
            received_rate: 1000.0,
            received_bytes_rate: None,
            processes: vec![
                process(Tier::Agent, 5.0, Some(1000.0)),
                process(Tier::Deliver, 3.0, None),
                process(Tier::Deliver, 5.0, None),
                process(Tier::Receiver, 8.0, Some(400.0)),
                process(Tier::Receiver, 8.0, Some(600.0)),
            ],
            latency: None,
            remarks: vec!["delay occurred".into()],
        };
        assert_eq!(
            table_row(&step),
            "| 1000 lines/s | 400 / 600 | – | 5.0 % / 1.0 MiB | 4.0 % / 1.0 MiB | 8.0 % / 1.0 MiB | 0.50 | delay occurred |"
        );
        let timed = Step {
            latency: Latency::of(&mut [1500, 2500, 120_000]),
            ..step.clone()
        };
        assert!(table_row(&timed)
            .starts_with("| 1000 lines/s | 400 / 600 | 2.5 / 120.0 / 120.0 | 5.0 %"));
        let header = table_header(&Systems {
            agent: Target::FluentBit,
            deliver: Target::Logferry,
            receiver: Target::Fluentd,
        });
        assert!(
            header.starts_with("| rate of writing (lines/s per agent) |"),
            "{header}"
        );
        assert!(header.contains("| latency p50 / p99 / max (ms) | agent fluent-bit CPU % / RSS | deliver logferry CPU % / RSS | receiver fluentd CPU % / RSS |"), "{header}");
        // as many columns in the header as in a row
        let columns = |l: &str| l.matches(" | ").count();
        assert_eq!(
            columns(header.lines().next().unwrap()),
            columns(&table_row(&timed))
        );
        assert_eq!(deliver_over_receiver(&step), Some(0.5));
    }
}
