//! What the Kafka scenarios (`http-kafka`, `forward-kafka`) share: their
//! options, the broker (given with `--brokers`, or the local one of
//! scripts/kafka.sh), their config templates, the processes they start and
//! sample, and the end of a step: waiting until the topic holds every
//! record sent.
//!
//! One topic per run, created fresh: a step's output is the growth of the
//! topic's end offsets during the step, so offsets need no reset between
//! steps and a duplicate shows as more messages than records sent.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use super::super::http_client::CLIENT_THREADS;
use super::super::kafka::Broker;
use super::super::pki::Pki;
use super::super::process::Proc;
use super::super::results::{ProcessStep, Sample, ScenarioResult};
use super::template::Target;
use super::Meter;

/// Options of `http-kafka` and `forward-kafka` (ignored by the other
/// scenarios).
#[derive(Debug, clap::Args)]
pub struct KafkaScenarioArgs {
    /// Kafka scenarios: bootstrap address of the broker (default: the
    /// local broker of scripts/kafka.sh, started if it is not running).
    #[arg(long)]
    pub brokers: Option<String>,
    /// Kafka scenarios: partitions of the topic created for the run.
    #[arg(long, default_value_t = 1)]
    pub partitions: i32,
    /// Kafka scenarios: librdkafka's `linger.ms` of the producing
    /// processes (the Kafka sink's default).
    #[arg(long, default_value_t = crate::sinks::kafka::DEFAULT_LINGER_MS)]
    pub linger_ms: f64,
    /// http-kafka: logferry HTTP → Kafka instances.
    #[arg(long, default_value_t = 3)]
    pub instances: usize,
    /// http-kafka: the writer's connections go straight to the instances
    /// (spread over them), through haproxy (round robin), or both (every
    /// rate twice).
    #[arg(long, value_enum, default_value_t = Via::Direct)]
    pub via: Via,
    /// http-kafka: keep-alive connections posting at once.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// http-kafka: threads running the load's event loops, each over its share of the
    /// connections.
    #[arg(long, default_value_t = CLIENT_THREADS)]
    pub client_threads: usize,
    /// http-kafka: lines (records) per POST request.
    #[arg(long, default_value_t = 1)]
    pub lines_per_request: usize,
    /// forward-kafka: TLS on the forward hop (agent → server, and the
    /// workers of the maximum-throughput table): off, on, or both.
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub tls: OnOff,
    /// forward-kafka: sender workers (connections) of the maximum
    /// throughput table, one step each.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4, 8])]
    pub workers: Vec<usize>,
    /// forward-kafka: records each maximum-throughput step sends.
    #[arg(long, default_value_t = 1_000_000)]
    pub worker_records: usize,
}

/// How the HTTP writer reaches the instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    Direct,
    Haproxy,
    Both,
}

impl Via {
    /// The ways measured, in order: direct first.
    pub fn ways(self) -> Vec<bool> {
        match self {
            Via::Direct => vec![false],
            Via::Haproxy => vec![true],
            Via::Both => vec![false, true],
        }
    }
}

/// `--tls off|on|both`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    Off,
    On,
    Both,
}

impl OnOff {
    pub fn modes(self) -> Vec<bool> {
        match self {
            OnOff::Off => vec![false],
            OnOff::On => vec![true],
            OnOff::Both => vec![false, true],
        }
    }
}

pub const LOGFERRY_KAFKA_SERVER: &str =
    include_str!("../../../bench/templates/logferry/kafka-server.toml");
pub const LOGFERRY_HTTP_KAFKA: &str =
    include_str!("../../../bench/templates/logferry/http-kafka.toml");
pub const LOGFERRY_FORWARD_AGENT: &str =
    include_str!("../../../bench/templates/logferry/forward-agent.toml");
pub const FLUENT_BIT_KAFKA_SERVER: &str =
    include_str!("../../../bench/templates/fluent-bit/kafka-server.conf");
pub const FLUENTD_KAFKA_SERVER: &str =
    include_str!("../../../bench/templates/fluentd/kafka-server.conf");
pub const VECTOR_KAFKA_SERVER: &str =
    include_str!("../../../bench/templates/vector/kafka-server.toml");

/// The forward → Kafka server template of `target`.
pub fn kafka_server_template(target: Target) -> &'static str {
    match target {
        Target::Logferry => LOGFERRY_KAFKA_SERVER,
        Target::FluentBit => FLUENT_BIT_KAFKA_SERVER,
        Target::Fluentd => FLUENTD_KAFKA_SERVER,
        Target::Vector => VECTOR_KAFKA_SERVER,
    }
}

/// `{{tls}}` of a forward → Kafka server: the forward input's TLS settings
/// in `target`'s syntax, or nothing.
pub fn server_tls(target: Target, pki: Option<&Pki>) -> String {
    let Some(p) = pki else {
        return String::new();
    };
    let (cert, key) = (p.cert.display(), p.key.display());
    match target {
        Target::Logferry => format!("tls = {{ cert_file = \"{cert}\", key_file = \"{key}\" }}"),
        Target::FluentBit => format!(
            "    tls          on\n    tls.verify   off\n    tls.crt_file {cert}\n    tls.key_file {key}"
        ),
        Target::Fluentd => format!(
            "<transport tls>\n    cert_path {cert}\n    private_key_path {key}\n  </transport>"
        ),
        Target::Vector => format!(
            "tls.enabled = true\ntls.crt_file = \"{cert}\"\ntls.key_file = \"{key}\""
        ),
    }
}

/// The values every Kafka template is filled with.
pub fn kafka_values<'a>(
    listen_port: &'a str,
    brokers: &'a str,
    topic: &'a str,
    linger_ms: &'a str,
    tls: &'a str,
) -> [(&'static str, &'a str); 5] {
    [
        ("listen_port", listen_port),
        ("brokers", brokers),
        ("topic", topic),
        ("linger_ms", linger_ms),
        ("tls", tls),
    ]
}

/// How to get a broker when none is given.
const START_A_BROKER: &str = "start a Kafka broker and give its address with --brokers HOST:PORT \
     (in a logferry checkout, `scripts/kafka.sh start` starts a local one and prints its address; \
     it needs java 17+ and mvn, see scripts/test-deps.sh)";

/// The broker at `given`, or at the local broker of scripts/kafka.sh (in
/// the current directory's checkout, or the one this binary was built
/// from), started if it is not running and left running afterwards; an
/// error saying how to start one if neither answers.
pub fn connect(given: Option<&str>) -> Result<Broker, String> {
    let scripts = [
        PathBuf::from("scripts/kafka.sh"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kafka.sh"),
    ];
    let addr = brokers(given, &scripts)?;
    let broker = Broker::new(&addr)?;
    broker
        .answers(Duration::from_secs(10))
        .map_err(|e| format!("{e}; {START_A_BROKER}"))?;
    Ok(broker)
}

/// The bootstrap address: `given`, or what the first of `scripts` that
/// exists prints when asked to start the local broker.
fn brokers(given: Option<&str>, scripts: &[PathBuf]) -> Result<String, String> {
    if let Some(b) = given {
        return Ok(b.to_string());
    }
    let script = scripts.iter().find(|p| p.is_file()).ok_or_else(|| {
        format!("no --brokers given and no scripts/kafka.sh here: {START_A_BROKER}")
    })?;
    println!(
        "no --brokers: using the local broker of {} (started if needed; `{} stop` stops it)",
        script.display(),
        script.display()
    );
    let out = Command::new(script)
        .arg("start")
        .output()
        .map_err(|e| format!("cannot run {}: {e}; {START_A_BROKER}", script.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let addr = stdout.lines().last().unwrap_or("").trim().to_string();
    if !out.status.success() || addr.is_empty() {
        return Err(format!(
            "{} start failed: {}\n{START_A_BROKER}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(addr)
}

/// One process a Kafka scenario started.
pub struct Member {
    /// `instance-1`, `haproxy`, `agent`, `server`.
    pub name: String,
    /// Its tier in the results: `server`, `balancer`, `agent`.
    pub tier: &'static str,
    pub proc: Proc,
}

/// The run's topic and the steps' clock and samples.
pub struct Watch<'a> {
    pub broker: Broker,
    pub topic: String,
    pub partitions: i32,
    /// Scenario start, the zero of sample times.
    pub clock: Instant,
    pub sample_every: Duration,
    pub drain_timeout: Duration,
    pub stop: &'a AtomicBool,
    pub progress: ProgressBar,
    pub samples: Vec<Sample>,
}

impl<'a> Watch<'a> {
    /// Watches `topic` on `broker`, clock starting now.
    pub fn new(
        broker: Broker,
        topic: String,
        partitions: i32,
        sample_every: Duration,
        drain_timeout: Duration,
        stop: &'a AtomicBool,
    ) -> Self {
        Watch {
            broker,
            topic,
            partitions,
            clock: Instant::now(),
            sample_every,
            drain_timeout,
            stop,
            progress: super::progress_bar(),
            samples: Vec::new(),
        }
    }
}

/// The meters of a step's processes and when the next sample is due.
pub struct Meters {
    meters: Vec<Meter>,
    next_sample: Instant,
}

impl Watch<'_> {
    /// Messages in the topic now.
    pub fn in_topic(&self) -> Result<u64, String> {
        self.broker
            .messages(&self.topic, self.partitions)
            .map(|n| n as u64)
    }

    /// Starts metering `members` for a step.
    pub fn meter(&self, members: &[&Member]) -> Result<Meters, String> {
        let mut meters = Vec::new();
        for m in members {
            meters.push(Meter::start(m.proc.pid(), &m.name)?);
        }
        Ok(Meters {
            meters,
            next_sample: Instant::now() + self.sample_every,
        })
    }

    /// Waits a little and samples `members` when a sample is due. False if
    /// interrupted; an error if a member has exited.
    pub fn tick(&mut self, members: &mut [&mut Member], m: &mut Meters) -> Result<bool, String> {
        // 10 ms: the workers steps stop their clock when the topic is
        // full, and asking the broker more often costs it CPU
        let wake = m
            .next_sample
            .min(Instant::now() + Duration::from_millis(10));
        if !super::super::monitor::sleep_until(wake, self.stop) {
            return Ok(false);
        }
        for member in members.iter_mut() {
            if let Some(status) = member.proc.exited() {
                return Err(format!("{} exited ({status})", member.name));
            }
        }
        let now = Instant::now();
        if now < m.next_sample {
            return Ok(true);
        }
        while m.next_sample <= now {
            m.next_sample += self.sample_every;
        }
        let t = self.clock.elapsed().as_secs_f64();
        for (meter, member) in m.meters.iter_mut().zip(members.iter()) {
            if let Some((cpu, rss)) = meter.sample() {
                self.samples.push(Sample {
                    t,
                    name: member.name.clone(),
                    tier: member.tier.into(),
                    cpu_percent: cpu,
                    rss_bytes: rss,
                });
            }
        }
        Ok(true)
    }

    /// After the writers stopped: waits up to `--drain-timeout` until the
    /// topic holds `want` messages, sampling meanwhile. `None` if
    /// interrupted, else what the topic holds.
    pub fn drain(
        &mut self,
        want: u64,
        members: &mut [&mut Member],
        m: &mut Meters,
    ) -> Result<Option<u64>, String> {
        let deadline = Instant::now() + self.drain_timeout;
        let mut have = self.in_topic()?;
        while have < want && Instant::now() < deadline {
            if !self.tick(members, m)? {
                return Ok(None);
            }
            have = self.in_topic()?;
        }
        // a duplicate may land after the last record: look once more
        std::thread::sleep(Duration::from_millis(200));
        Ok(Some(self.in_topic()?))
    }
}

impl Meters {
    /// Each member's CPU % and peak RSS over the step, with its rate.
    pub fn finish(
        &mut self,
        members: &[&Member],
        rate: impl Fn(&Member) -> Option<f64>,
    ) -> Result<Vec<ProcessStep>, String> {
        let mut out = Vec::new();
        for (meter, member) in self.meters.iter_mut().zip(members) {
            if meter.sample().is_none() {
                return Err(format!("{} has exited", member.name));
            }
            out.push(ProcessStep {
                name: member.name.clone(),
                tier: member.tier.into(),
                system: None,
                pid: meter.pid,
                rate: rate(member),
                cpu_percent: meter.cpu_percent(),
                rss_bytes: meter.peak_rss,
            });
        }
        Ok(out)
    }
}

/// The remark of a step whose topic holds `got` of `want` new messages
/// (none when they match).
pub fn count_remark(got: u64, want: u64, drain_timeout: Duration) -> Option<String> {
    if got < want {
        Some(format!(
            "{} record(s) missing from the topic after {drain_timeout:?}",
            want - got
        ))
    } else if got > want {
        Some(format!(
            "{} record(s) more in the topic than sent (duplicates)",
            got - want
        ))
    } else {
        None
    }
}

/// Mean CPU % and largest RSS of a step's processes of `tier`; `None` if
/// it has none.
pub fn tier_use(processes: &[ProcessStep], tier: &str) -> Option<(f64, u64)> {
    let ps: Vec<&ProcessStep> = processes.iter().filter(|p| p.tier == tier).collect();
    if ps.is_empty() {
        return None;
    }
    let cpu = ps.iter().map(|p| p.cpu_percent).sum::<f64>() / ps.len() as f64;
    Some((cpu, ps.iter().map(|p| p.rss_bytes).max().unwrap_or(0)))
}

/// `12.3 % / 20.1 MiB`, or `-`.
pub fn tier_cell(processes: &[ProcessStep], tier: &str) -> String {
    tier_use(processes, tier).map_or("-".into(), |(cpu, rss)| {
        use super::super::procfs::{human_bytes, human_percent};
        format!("{} / {}", human_percent(cpu), human_bytes(rss))
    })
}

/// Writes `--json` and `--report`, then says whether every record arrived.
pub fn finish(
    result: &ScenarioResult,
    json: Option<&Path>,
    report: Option<&Path>,
    interrupted: bool,
) -> Result<(), String> {
    if let Some(path) = json {
        result.write(path)?;
        println!("result written to {}", path.display());
    }
    if let Some(dir) = report {
        let page = super::super::html::write_report(dir, std::slice::from_ref(result))?;
        println!("report written to {}", page.display());
    }
    if interrupted {
        return Err(format!(
            "interrupted after {} complete step(s); every process was stopped",
            result.steps.len()
        ));
    }
    let problems: Vec<String> = result
        .steps
        .iter()
        .filter(|s| s.sent != s.received)
        .map(|s| format!("{}: {} sent, {} in the topic", s.label, s.sent, s.received))
        .collect();
    if !problems.is_empty() {
        return Err(format!(
            "{} record(s) lost; {}",
            result.lost(),
            problems.join("; ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::template::render;
    use super::*;

    #[test]
    fn every_kafka_template_renders_whole_with_and_without_tls() {
        let dir = tempfile::tempdir().unwrap();
        let pki = super::super::super::pki::generate(dir.path()).unwrap();
        let key = pki.key.display().to_string();
        let targets = [
            Target::Logferry,
            Target::FluentBit,
            Target::Fluentd,
            Target::Vector,
        ];
        for target in targets {
            let template = kafka_server_template(target);
            // a value of several lines must not land in a comment, where
            // its first line would be commented out and the rest not
            for l in template.lines().filter(|l| l.trim_start().starts_with('#')) {
                assert!(!l.contains("{{"), "{}: {l}", target.name());
            }
            for pki in [None, Some(&pki)] {
                let tls = server_tls(target, pki);
                let values = kafka_values("24224", "127.0.0.1:9092", "bench-t", "5", &tls);
                let out = render(kafka_server_template(target), &values)
                    .unwrap_or_else(|e| panic!("{}: {e}", target.name()));
                assert!(!out.contains("{{") && !out.contains("}}"), "{out}");
                assert!(
                    out.contains("bench-t") && out.contains("127.0.0.1:9092"),
                    "{out}"
                );
                assert!(out.contains("24224"), "{out}");
                assert_eq!(out.contains(&key), pki.is_some(), "{out}");
                if target == Target::Logferry {
                    crate::topology::config::Config::parse(&out, "template")
                        .unwrap_or_else(|e| panic!("{e}\n{out}"));
                }
            }
        }
        for t in [LOGFERRY_HTTP_KAFKA, LOGFERRY_FORWARD_AGENT] {
            for l in t.lines().filter(|l| l.trim_start().starts_with('#')) {
                assert!(!l.contains("{{"), "{l}");
            }
        }
        // the logferry HTTP instance and forward agent are configs logferry accepts
        let http = render(
            LOGFERRY_HTTP_KAFKA,
            &kafka_values("0", "127.0.0.1:9092", "t", "1", ""),
        )
        .unwrap();
        crate::topology::config::Config::parse(&http, "template")
            .unwrap_or_else(|e| panic!("{e}\n{http}"));
        let ca = format!("tls = {{ ca_file = \"{}\" }}", pki.ca.display());
        for tls in ["", ca.as_str()] {
            let agent = render(
                LOGFERRY_FORWARD_AGENT,
                &[
                    ("tail_path", "/tmp/a.log"),
                    ("forward_to", r#"{ address = "127.0.0.1:1" }"#),
                    ("tls", tls),
                ],
            )
            .unwrap();
            crate::topology::config::Config::parse(&agent, "template")
                .unwrap_or_else(|e| panic!("{e}\n{agent}"));
        }
    }

    #[test]
    fn without_brokers_or_a_start_script_the_error_says_how_to_start_one() {
        assert_eq!(brokers(Some("h:1"), &[]).unwrap(), "h:1");
        let e = brokers(None, &[PathBuf::from("/nonexistent/kafka.sh")]).unwrap_err();
        assert!(
            e.contains("--brokers HOST:PORT") && e.contains("scripts/kafka.sh start"),
            "{e}"
        );
        // a start script that fails: its message and the way out
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("kafka.sh");
        std::fs::write(&script, "#!/bin/sh\necho 'java not found' >&2\nexit 1\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = brokers(None, &[script]).unwrap_err();
        assert!(
            e.contains("java not found") && e.contains("--brokers"),
            "{e}"
        );
    }

    #[test]
    fn count_remarks_name_missing_and_duplicated_records() {
        let t = Duration::from_secs(60);
        assert_eq!(count_remark(10, 10, t), None);
        assert_eq!(
            count_remark(7, 10, t).unwrap(),
            "3 record(s) missing from the topic after 60s"
        );
        assert!(count_remark(12, 10, t)
            .unwrap()
            .contains("2 record(s) more"));
    }

    #[test]
    fn via_and_tls_modes_run_in_order() {
        assert_eq!(Via::Both.ways(), [false, true]);
        assert_eq!(Via::Haproxy.ways(), [true]);
        assert_eq!(OnOff::Both.modes(), [false, true]);
        assert_eq!(OnOff::Off.modes(), [false]);
    }
}
