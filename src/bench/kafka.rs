//! `bench forward-kafka` and `bench http-kafka`: records into logferry,
//! out to a real Kafka broker, timed until the topic holds every record
//! (its partitions' end offsets, read from the broker). The baseline is a
//! direct producer, `kcat -P`, sending the same records with the same
//! producer settings to a topic of its own in the same run, so the numbers
//! read as a ratio to what the broker on this machine can take.
//!
//! Each run gets fresh topics, so offsets count exactly this run's records:
//! a lost record shows as a run that never completes, a duplicate as more
//! offsets than records (both are errors).

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;

use super::http_client::{Latency, Posting, Writers, CLIENT_THREADS};
use super::load::{packed_frame, send_frames};
use super::pki;
use super::process::{metric, ready, wait_until_every, Proc};
use super::report::{self, Run, RunArgs, WorkDir};

/// The measured logferry's API (its counters explain a stuck run).
const API: &str = "[api]\naddress = \"127.0.0.1:0\"\n";

/// How often a run asks the broker how many messages a topic holds.
const BROKER_POLL: Duration = Duration::from_millis(10);

/// Producer settings shared by logferry's Kafka sink and the `kcat`
/// baseline (librdkafka property, value), on top of `linger.ms`.
const PRODUCER: &[(&str, &str)] = &[
    ("acks", "all"),
    ("enable.idempotence", "true"),
    ("batch.size", "1048576"),
    ("compression.type", "none"),
];

/// Options of both Kafka scenarios.
#[derive(Debug, clap::Args)]
pub struct KafkaArgs {
    /// Bootstrap address of the broker (`scripts/kafka.sh start` prints it).
    #[arg(long)]
    pub brokers: String,
    /// Partitions of each topic the benchmark creates.
    #[arg(long, default_value_t = 1)]
    pub partitions: i32,
    /// Bytes per record (one Kafka message each).
    #[arg(long, default_value_t = 100)]
    pub record_size: usize,
    /// Records per run.
    #[arg(long, default_value_t = 2_000_000)]
    pub records: usize,
    /// librdkafka's `linger.ms` for logferry and the baseline alike (the
    /// sink's default; logferry sends a batch whose client waits without
    /// it, the baseline cannot).
    #[arg(long, default_value_t = crate::sinks::kafka::DEFAULT_LINGER_MS)]
    pub linger_ms: f64,
    /// Another librdkafka producer property for logferry and the baseline
    /// alike, as `key=value` (repeatable).
    #[arg(long = "producer-option", value_name = "KEY=VALUE", value_parser = key_value)]
    pub producer_options: Vec<(String, String)>,
    /// Skip the `kcat -P` baseline.
    #[arg(long)]
    pub no_baseline: bool,
    /// The logferry binary measured (default: this one), e.g. an older
    /// build for a before/after with this build's load.
    #[arg(long, value_name = "PATH")]
    pub logferry_bin: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, clap::Args)]
pub struct ForwardKafkaArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// Records per PackedForward chunk.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,
    /// Also measure the same pipeline with TLS on the forward connection.
    #[arg(long)]
    pub tls: bool,
}

#[derive(Debug, clap::Args)]
pub struct HttpKafkaArgs {
    #[command(flatten)]
    pub kafka: KafkaArgs,
    /// Lines (records) per POST request.
    #[arg(long, default_value_t = 100)]
    pub lines_per_request: usize,
    /// Keep-alive connections posting at once.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Threads running the load's event loops, each over its share of the
    /// connections.
    #[arg(long, default_value_t = CLIENT_THREADS)]
    pub client_threads: usize,
    /// Mixed traffic: also send this many records per second, in
    /// PackedForward chunks of 1000 nobody acknowledges, over one forward
    /// connection to the same logferry and Kafka sink (a topic of their
    /// own) while the HTTP load runs; 0: none.
    #[arg(long, value_name = "RECORDS_PER_S", default_value_t = 0)]
    pub bulk_forward: usize,
}

/// Records per chunk of `--bulk-forward`.
const BULK_CHUNK: usize = 1000;

impl KafkaArgs {
    /// Starts the measured logferry with `config`.
    fn start(&self, dir: &Path, name: &str, config: &str) -> Result<Proc, String> {
        match &self.logferry_bin {
            Some(bin) => Proc::start_bin(dir, name, config, bin),
            None => Proc::start(dir, name, config),
        }
    }

    /// The producer settings of both logferry and the baseline.
    fn producer(&self) -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = producer_settings(self.linger_ms)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for (key, value) in &self.producer_options {
            p.retain(|(k, _)| k != key);
            p.push((key.clone(), value.clone()));
        }
        p
    }

    fn check(&self) -> Result<(), String> {
        if self.records == 0 || self.record_size < 8 || self.run.runs == 0 || self.partitions < 1 {
            return Err(
                "records, runs and partitions must be positive, record-size at least 8".into(),
            );
        }
        Ok(())
    }
}

/// `key=value` of `--producer-option`.
fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected key=value, got {s:?}")),
    }
}

/// The producer settings of every measured pipeline and of the baseline,
/// with this `linger.ms`.
pub(crate) fn producer_settings(linger_ms: f64) -> Vec<(&'static str, String)> {
    let mut p: Vec<_> = PRODUCER.iter().map(|(k, v)| (*k, v.to_string())).collect();
    p.push(("linger.ms", linger_ms.to_string()));
    p
}

pub fn forward_kafka(a: ForwardKafkaArgs) -> Result<(), String> {
    let k = &a.kafka;
    k.check()?;
    if a.batch == 0 {
        return Err("batch must be positive".into());
    }
    let chunks = k.records.div_ceil(a.batch);
    let records = chunks * a.batch;
    let frame = packed_frame("bench", a.batch, k.record_size);
    let dir = WorkDir::new(k.run.dir.clone())?;
    let pki = if a.tls {
        Some(pki::generate(&dir.path)?)
    } else {
        None
    };
    let broker = Broker::new(&k.brokers)?;
    println!(
        "forward → Kafka: {records} records of {} B, one forward connection, PackedForward chunks of {}, {} partition(s), acks=all, idempotent, linger.ms={}; {} runs",
        k.record_size, a.batch, k.partitions, k.linger_ms, k.run.runs
    );
    println!("{}", libraries(k));
    let lines = records_file(&dir.path, records, k.record_size)?;
    let mut base = Vec::new();
    let mut plain = Vec::new();
    let mut tls = Vec::new();
    let mut senders = Vec::new();
    for i in 0..k.run.runs {
        if !k.no_baseline {
            base.push(kcat(&broker, k, &lines, records, &format!("kcat-{i}"))?);
        }
        let sink = sink_config(&broker, k, &format!("plain-{i}"))?;
        let (run, sender) =
            forward_run(&dir.path, &broker, &sink, &frame, chunks, records, k, None)?;
        eprintln!(
            "run {}: {} sender {:.3} CPU s / M records",
            i + 1,
            run.row("logferry"),
            per_million(sender, records)
        );
        plain.push(run);
        senders.push(sender);
        if let Some(p) = &pki {
            let sink = sink_config(&broker, k, &format!("tls-{i}"))?;
            let (run, sender) = forward_run(
                &dir.path,
                &broker,
                &sink,
                &frame,
                chunks,
                records,
                k,
                Some(p),
            )?;
            eprintln!(
                "run {}: {} sender {:.3} CPU s / M records",
                i + 1,
                run.row("logferry, TLS"),
                per_million(sender, records)
            );
            tls.push(run);
        }
    }
    let mut table: Vec<(&str, &[Run])> = Vec::new();
    if !base.is_empty() {
        table.push(("baseline: kcat -P (direct producer)", &base));
    }
    table.push(("logferry forward → Kafka", &plain));
    if !tls.is_empty() {
        table.push(("logferry forward (TLS) → Kafka", &tls));
    }
    report::print(&table);
    let p = report::median(&plain);
    senders.sort();
    println!(
        "\nmedians: logferry {:.0} records/s, peak RSS {:.1} MiB; the bench's forward sender {:.3} CPU s / M records",
        p.records_per_sec(),
        p.peak_rss.unwrap_or(0) as f64 / (1024.0 * 1024.0),
        per_million(senders[senders.len() / 2], records)
    );
    if !base.is_empty() {
        let b = report::median(&base);
        println!(
            "kcat -P {:.0} records/s; logferry / kcat rate: {:.2}",
            b.records_per_sec(),
            p.records_per_sec() / b.records_per_sec()
        );
    }
    if !tls.is_empty() {
        let t = report::median(&tls);
        println!(
            "TLS {:.0} records/s; TLS / plain rate: {:.2}",
            t.records_per_sec(),
            t.records_per_sec() / p.records_per_sec()
        );
    }
    Ok(())
}

pub fn http_kafka(a: HttpKafkaArgs) -> Result<(), String> {
    let k = &a.kafka;
    k.check()?;
    if a.lines_per_request == 0 || a.connections == 0 {
        return Err("lines-per-request and connections must be positive".into());
    }
    let requests = k.records.div_ceil(a.lines_per_request);
    let records = requests * a.lines_per_request;
    let dir = WorkDir::new(k.run.dir.clone())?;
    let broker = Broker::new(&k.brokers)?;
    println!(
        "HTTP → Kafka: {records} records of {} B in {requests} POST requests of {} line(s), {} keep-alive connections, answers after Kafka's delivery report, {} partition(s), linger.ms={}; {} runs",
        k.record_size, a.lines_per_request, a.connections, k.partitions, k.linger_ms, k.run.runs
    );
    if a.bulk_forward > 0 {
        println!(
            "beside it: {} records/s of {} B over one forward connection, chunks of {BULK_CHUNK} without ack, to a topic of their own through the same sink",
            a.bulk_forward, k.record_size
        );
    }
    println!("{}", libraries(k));
    let lines = records_file(&dir.path, records, k.record_size)?;
    let mut base = Vec::new();
    let mut ours = Vec::new();
    let mut latencies = Vec::new();
    for i in 0..k.run.runs {
        if !k.no_baseline {
            base.push(kcat(&broker, k, &lines, records, &format!("kcat-{i}"))?);
        }
        // the HTTP topic's name ends with the HTTP load's tag, so that a
        // topic template can tell it from the bulk records'
        let sink = sink_config(&broker, k, &format!("http-{i}-{HTTP_TAG}"))?;
        let (run, lat, bulk) = http_run(&dir.path, &broker, &sink, &a, requests, records)?;
        eprintln!(
            "run {}: {} | {:.0} requests/s | {lat}{bulk}",
            i + 1,
            run.row("logferry"),
            requests as f64 / run.seconds
        );
        ours.push(run);
        latencies.push((run.seconds, lat));
    }
    let mut table: Vec<(&str, &[Run])> = Vec::new();
    if !base.is_empty() {
        table.push(("baseline: kcat -P (direct producer)", &base));
    }
    table.push(("logferry HTTP → Kafka", &ours));
    report::print(&table);
    let o = report::median(&ours);
    let lat = latencies
        .iter()
        .find(|(s, _)| *s == o.seconds)
        .map(|(_, l)| l.to_string())
        .unwrap_or_default();
    println!(
        "\nmedians: logferry {:.0} records/s, {:.0} requests/s; latency of the median run: {lat}",
        o.records_per_sec(),
        requests as f64 / o.seconds
    );
    if !base.is_empty() {
        let b = report::median(&base);
        println!(
            "kcat -P {:.0} records/s; logferry / kcat rate: {:.2}",
            b.records_per_sec(),
            o.records_per_sec() / b.records_per_sec()
        );
    }
    Ok(())
}

/// The broker: creates topics and reads how many messages they hold.
pub(crate) struct Broker {
    pub(crate) brokers: String,
    admin: AdminClient<DefaultClientContext>,
    /// Asks for offsets; replaced by a fresh client when its queries keep
    /// failing (see [`Broker::messages`]).
    offsets: std::sync::Mutex<OffsetClient>,
    rt: tokio::runtime::Runtime,
    /// Topics this run created: deleted when it ends, so a broker shared
    /// by many runs does not fill with them.
    created: std::sync::Mutex<Vec<String>>,
}

impl Drop for Broker {
    /// Deletes the topics this run created; a failure is only reported
    /// (the measurement is done).
    fn drop(&mut self) {
        let topics = std::mem::take(&mut *self.created.lock().unwrap_or_else(|e| e.into_inner()));
        if topics.is_empty() {
            return;
        }
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
        let deleted = self.rt.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(15),
                self.admin.delete_topics(&names, &opts),
            )
            .await
        });
        let failed: Vec<String> = match deleted {
            Err(_) => vec!["timed out".into()],
            Ok(Err(e)) => vec![e.to_string()],
            Ok(Ok(results)) => results
                .into_iter()
                .filter_map(|r| r.err().map(|(t, e)| format!("{t}: {e}")))
                .collect(),
        };
        if !failed.is_empty() {
            eprintln!(
                "bench: could not delete the topics it created on {}: {}",
                self.brokers,
                failed.join("; ")
            );
        }
    }
}

/// The client that reads end offsets, and when it was made.
struct OffsetClient {
    consumer: BaseConsumer,
    made: Instant,
}

impl OffsetClient {
    fn new(brokers: &str) -> Result<OffsetClient, String> {
        let consumer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("group.id", "logferry-bench")
            .create()
            .map_err(|e| format!("Kafka client: {e}"))?;
        Ok(OffsetClient {
            consumer,
            made: Instant::now(),
        })
    }
}

impl Broker {
    pub(crate) fn new(brokers: &str) -> Result<Broker, String> {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", brokers);
        let admin = c.create().map_err(|e| format!("Kafka admin client: {e}"))?;
        let offsets = std::sync::Mutex::new(OffsetClient::new(brokers)?);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Broker {
            brokers: brokers.to_string(),
            admin,
            offsets,
            rt,
            created: Default::default(),
        })
    }

    /// Whether the broker answers a metadata request within `timeout`.
    pub(crate) fn answers(&self, timeout: Duration) -> Result<(), String> {
        self.offsets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .consumer
            .fetch_metadata(None, timeout)
            .map(|_| ())
            .map_err(|e| format!("the Kafka broker at {} does not answer: {e}", self.brokers))
    }

    /// Creates a topic of its own for one measured pipeline.
    pub(crate) fn topic(&self, partitions: i32, name: &str) -> Result<String, String> {
        // the pid alone repeats across runs (and containers): the time
        // makes the name this run's own
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        self.create(
            partitions,
            format!("logferry-bench-{}-{nanos:x}-{name}", std::process::id()),
        )
    }

    /// Creates `topic`, deleted when the run ends, and waits for its
    /// leaders.
    fn create(&self, partitions: i32, topic: String) -> Result<String, String> {
        let new = NewTopic::new(&topic, partitions, TopicReplication::Fixed(1));
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        let results = self
            .rt
            .block_on(self.admin.create_topics([&new], &opts))
            .map_err(|e| format!("create topic {topic} on {}: {e}", self.brokers))?;
        for r in results {
            r.map_err(|(t, e)| format!("create topic {t}: {e}"))?;
        }
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(topic.clone());
        // wait until every partition has a leader that answers
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Err(e) = self.messages(&topic, partitions) {
            if Instant::now() > deadline {
                return Err(format!("topic {topic} has no leader after 30 s: {e}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(topic)
    }

    /// Messages written to `topic`: the sum of its partitions' end offsets.
    /// Its start offsets are not taken off: the bench's topics start empty
    /// at offset 0, and retention can move a start offset during a run
    /// (records stamped with an event time older than the broker's 7-day
    /// retention are deleted as soon as their segment rolls), which once
    /// left a run waiting for a count it could never reach.
    ///
    /// A client can keep failing for a topic created after it last read
    /// the cluster's metadata; after a failure a client older than a
    /// second is replaced, so the next query starts from fresh metadata.
    pub(crate) fn messages(&self, topic: &str, partitions: i32) -> Result<usize, String> {
        let mut client = self.offsets.lock().unwrap_or_else(|e| e.into_inner());
        let mut sum = 0;
        for p in 0..partitions {
            match client
                .consumer
                .fetch_watermarks(topic, p, Duration::from_secs(5))
            {
                Ok((_, end)) => sum += end.max(0) as usize,
                Err(e) => {
                    if client.made.elapsed() > Duration::from_secs(1) {
                        if let Ok(fresh) = OffsetClient::new(&self.brokers) {
                            *client = fresh;
                        }
                    }
                    return Err(format!("offsets of {topic}/{p}: {e}"));
                }
            }
        }
        Ok(sum)
    }

    /// Waits until `topic` holds `records` messages, failing on more (a
    /// duplicate) or if a watched process exits; returns when the count was
    /// first seen, before the pause that looks for duplicates, so a run's
    /// time does not include it.
    ///
    /// `api` is the measured logferry's API: when the topic stops growing,
    /// the error also says what logferry counted (handed to its sink,
    /// delivered, retried), so a stuck pipeline and a stuck query differ.
    fn wait_for(
        &self,
        topic: &str,
        partitions: i32,
        records: usize,
        watched: &mut [&mut Proc],
        api: Option<SocketAddr>,
    ) -> Result<Instant, String> {
        let mut last = 0;
        let mut failed = None;
        // every 10 ms: asking the broker costs it (and the pipeline
        // measured beside it) CPU; kcat's run is watched the same way
        wait_until_every(BROKER_POLL, watched, || {
            match self.messages(topic, partitions) {
                Ok(n) => (last, failed) = (n, None),
                Err(e) => failed = Some(e),
            }
            let why = failed
                .as_ref()
                .map(|e| format!(" (the last query failed: {e})"))
                .unwrap_or_default();
            (
                last >= records,
                format!("topic {topic} holds {last} of {records} records{why}"),
            )
        })
        .map_err(|e| match api {
            Some(api) => format!("{e}; {}", sink_counts(api)),
            None => e,
        })?;
        let reached = Instant::now();
        std::thread::sleep(Duration::from_millis(200));
        let n = self.messages(topic, partitions)?;
        if n != records {
            return Err(format!(
                "topic {topic} holds {n} records, {records} were sent"
            ));
        }
        Ok(reached)
    }
}

/// What a measured logferry's Kafka sink counted, for a stuck run's error.
fn sink_counts(api: SocketAddr) -> String {
    let m = |name| metric(api, name, "");
    format!(
        "logferry counted {} records handed to its sink, {} delivered, {} retried, {} rejected",
        m("logferry_sink_received_records_total"),
        m("logferry_sink_records_total"),
        m("logferry_sink_retried_records_total"),
        m("logferry_sink_rejected_records_total"),
    )
}

/// The records as lines, for `kcat -l`: the same sizes and numbering as the
/// messages the load writers send.
fn records_file(dir: &Path, records: usize, size: usize) -> Result<std::path::PathBuf, String> {
    let path = dir.join("records.txt");
    let f = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
    let mut line = vec![b'x'; size + 1];
    line[size] = b'\n';
    for i in 0..records {
        let digits = format!("{i:08}");
        line[..8].copy_from_slice(&digits.as_bytes()[digits.len() - 8..]);
        out.write_all(&line).map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())?;
    Ok(path)
}

/// The Kafka sink's table for a fresh topic, with the shared producer
/// settings.
fn sink_config(broker: &Broker, k: &KafkaArgs, name: &str) -> Result<(String, String), String> {
    let topic = broker.topic(k.partitions, name)?;
    let mut s = format!(
        "[sinks.kafka]\ntype = \"kafka\"\nmatch = \"**\"\nbrokers = [\"{}\"]\ntopic = \"{topic}\"\n[sinks.kafka.librdkafka_options]\n",
        broker.brokers
    );
    for (key, value) in k.producer() {
        s.push_str(&format!("\"{key}\" = \"{value}\"\n"));
    }
    Ok((topic, s))
}

/// Which librdkafka each producer runs on: logferry's own (vendored, with
/// the fix in vendor/rdkafka-sys/PATCHES.md), and whatever `kcat -V`
/// reports (the system's, or one `LD_LIBRARY_PATH` names:
/// scripts/librdkafka-so.sh builds logferry's as a shared library).
fn libraries(k: &KafkaArgs) -> String {
    let ours = format!(
        "logferry: librdkafka {} (vendor/rdkafka-sys, patched)",
        rdkafka::util::get_rdkafka_version().1
    );
    if k.no_baseline {
        return ours;
    }
    let kcat = Command::new("kcat")
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let at = text.find("librdkafka ")?;
            text[at..].split_whitespace().nth(1).map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into());
    format!("{ours}; kcat: librdkafka {kcat}")
}

/// Baseline: `kcat -P` produces the records file to a fresh topic. Its
/// start-up (process, connection, metadata: the time and CPU of producing
/// one record) is measured in the same run and taken off, as logferry's
/// start-up is not in its time either.
fn kcat(
    broker: &Broker,
    k: &KafkaArgs,
    lines: &Path,
    records: usize,
    name: &str,
) -> Result<Run, String> {
    let one = lines.with_file_name("one-record.txt");
    std::fs::write(&one, format!("{}\n", "x".repeat(k.record_size)))
        .map_err(|e| format!("{}: {e}", one.display()))?;
    let (start_secs, start_cpu, _) = kcat_produce(broker, k, &one, 1, &format!("{name}-start"))?;
    let (secs, cpu, rss) = kcat_produce(broker, k, lines, records, name)?;
    Ok(Run {
        seconds: (secs - start_secs).max(secs / 2.0),
        records,
        bytes: (records * k.record_size) as u64,
        cpu: Some(cpu.saturating_sub(start_cpu)),
        peak_rss: Some(rss),
    })
}

/// Runs `kcat -P` on `lines` into a fresh topic: seconds until the topic
/// holds `records` (asked of the broker as often as for logferry, so both
/// are timed alike and the broker answers the same queries during both),
/// and kcat's CPU time and peak RSS.
fn kcat_produce(
    broker: &Broker,
    k: &KafkaArgs,
    lines: &Path,
    records: usize,
    name: &str,
) -> Result<(f64, Duration, u64), String> {
    let topic = broker.topic(k.partitions, name)?;
    let mut cmd = Command::new("kcat");
    cmd.args(["-P", "-b", &broker.brokers, "-t", &topic, "-l"])
        .arg(lines);
    for (key, value) in k.producer() {
        cmd.arg("-X").arg(format!("{key}={value}"));
    }
    let start = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run kcat (apt-get install kcat): {e}"))?;
    let pid = child.id();
    // done when the topic holds every record, or when kcat exits (after
    // its last delivery report), whichever is seen first
    let seconds = loop {
        if exited(pid) {
            break start.elapsed().as_secs_f64();
        }
        if broker
            .messages(&topic, k.partitions)
            .is_ok_and(|n| n >= records)
        {
            break start.elapsed().as_secs_f64();
        }
        std::thread::sleep(BROKER_POLL);
    };
    let (status, (cpu, rss)) = wait_usage(pid)?;
    if status != 0 {
        return Err(format!("kcat failed (wait status {status})"));
    }
    broker.wait_for(&topic, k.partitions, records, &mut [], None)?;
    Ok((seconds, cpu, rss))
}

/// Whether child `pid` has exited, without reaping it.
fn exited(pid: u32) -> bool {
    // SAFETY: siginfo_t is plain data; waitid with WNOWAIT only reads the
    // child's state and leaves it to be reaped by `wait_usage`.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: waitid filled `info` (si_pid is 0 while the child runs)
    r != 0 || unsafe { info.si_pid() } != 0
}

/// Waits for child `pid` and returns its wait status, CPU time and peak RSS.
fn wait_usage(pid: u32) -> Result<(i32, (Duration, u64)), String> {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
    if r < 0 {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec * 1000) as u32);
    Ok((
        status,
        (
            tv(ru.ru_utime) + tv(ru.ru_stime),
            ru.ru_maxrss as u64 * 1024,
        ),
    ))
}

/// One run of forward → logferry → Kafka over one connection; also the
/// CPU time of the bench's own forward sender (it shares the cores with
/// logferry and the broker, and kcat's run has no such sender).
#[allow(clippy::too_many_arguments)]
fn forward_run(
    dir: &Path,
    broker: &Broker,
    (topic, sink): &(String, String),
    frame: &[u8],
    chunks: usize,
    records: usize,
    k: &KafkaArgs,
    pki: Option<&pki::Pki>,
) -> Result<(Run, Duration), String> {
    let tls = pki
        .map(|p| {
            format!(
                "tls = {{ cert_file = \"{}\", key_file = \"{}\" }}\n",
                p.cert.display(),
                p.key.display()
            )
        })
        .unwrap_or_default();
    let config = format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{tls}\n{sink}\n{API}"
    );
    let mut p = k.start(dir, "forward-kafka", &config)?;
    let addr = p.address("source=in ")?;
    let api = p.address("api listening")?;
    wait_ready(&mut p, api)?;
    let before = p.sample()?;
    let start = Instant::now();
    let frame = frame.to_vec();
    let ca = pki.map(|p| p.ca.clone());
    let sender = std::thread::spawn(move || {
        let cpu = thread_cpu();
        send_frames(addr, &[&frame], chunks, ca.as_deref()).map(|()| thread_cpu() - cpu)
    });
    let reached = broker.wait_for(topic, k.partitions, records, &mut [&mut p], Some(api))?;
    let seconds = (reached - start).as_secs_f64();
    let after = p.sample()?;
    let sender_cpu = sender.join().map_err(|_| "sender panicked".to_string())??;
    let run = Run {
        seconds,
        records,
        bytes: (records * k.record_size) as u64,
        cpu: Some(after.cpu_since(&before)),
        peak_rss: Some(after.peak_rss),
    };
    Ok((run, sender_cpu))
}

/// Waits until the measured logferry's sinks are ready (its Kafka sink
/// connected), so its start-up is not in its time, as kcat's is not in
/// the baseline's.
fn wait_ready(p: &mut Proc, api: SocketAddr) -> Result<(), String> {
    wait_until_every(Duration::from_millis(10), &mut [p], || {
        (
            ready(api),
            "logferry's /ready still answers 503".to_string(),
        )
    })
}

/// CPU time (user and system) the calling thread has used so far.
fn thread_cpu() -> Duration {
    // SAFETY: timespec is plain data; clock_gettime only writes it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU seconds per million records.
fn per_million(cpu: Duration, records: usize) -> f64 {
    cpu.as_secs_f64() / (records as f64 / 1e6)
}

/// One run of HTTP writers → logferry → Kafka, with `--bulk-forward`'s
/// records beside it; also what the bulk sender achieved (empty without
/// it).
fn http_run(
    dir: &Path,
    broker: &Broker,
    (topic, sink): &(String, String),
    a: &HttpKafkaArgs,
    requests: usize,
    records: usize,
) -> Result<(Run, Latency, String), String> {
    let k = &a.kafka;
    let mut sink = sink.clone();
    let mut bulk_topic = None;
    let mut forward = String::new();
    if a.bulk_forward > 0 {
        // one sink (one producer) for both loads, a topic for each tag
        let prefix = topic
            .strip_suffix(HTTP_TAG)
            .ok_or("the HTTP topic's name ends with its tag")?;
        bulk_topic = Some(broker.create(k.partitions, format!("{prefix}{BULK_TAG}"))?);
        sink = sink.replace(
            &format!("topic = \"{topic}\""),
            &format!("topic = \"{prefix}${{tag}}\""),
        );
        forward = "[sources.bulk]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n".into();
    }
    let config = format!(
        "[sources.in]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\nmax_connections = {}\n\n{forward}{sink}\n{API}",
        a.connections.max(1024)
    );
    let mut p = k.start(dir, "http-kafka", &config)?;
    let addr = p.address("source=in ")?;
    let bulk_addr = match bulk_topic {
        Some(_) => Some(p.address("source=bulk ")?),
        None => None,
    };
    let api = p.address("api listening")?;
    wait_ready(&mut p, api)?;
    let before = p.sample()?;
    let start = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bulk = bulk_addr.map(|to| {
        let frame = packed_frame(BULK_TAG, BULK_CHUNK, k.record_size);
        let (rate, stop) = (a.bulk_forward, Arc::clone(&stop));
        std::thread::spawn(move || paced_chunks(to, &frame, rate, &stop))
    });
    let posting = Posting {
        targets: vec![addr],
        connections: a.connections,
        threads: a.client_threads,
        requests,
        lines: a.lines_per_request,
        size: k.record_size,
        pace: None,
    };
    let answers = Writers::start(posting, Arc::new(AtomicUsize::new(0))).join();
    if let Some(e) = answers.errors.first() {
        return Err(e.clone());
    }
    let reached = broker.wait_for(topic, k.partitions, records, &mut [&mut p], Some(api))?;
    let seconds = (reached - start).as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut beside = String::new();
    if let (Some(sender), Some(bulk_topic)) = (bulk, &bulk_topic) {
        let chunks = sender
            .join()
            .map_err(|_| "bulk sender panicked".to_string())??;
        let sent = start.elapsed().as_secs_f64();
        let n = chunks * BULK_CHUNK;
        broker.wait_for(bulk_topic, k.partitions, n, &mut [&mut p], Some(api))?;
        beside = format!(
            " | bulk forward beside it: {n} records, {:.0} records/s sent, all delivered (the row's CPU is both loads')",
            n as f64 / sent
        );
    }
    // the CPU of both loads, when there are two
    let after = p.sample()?;
    Ok((
        Run {
            seconds,
            records,
            bytes: (records * k.record_size) as u64,
            cpu: Some(after.cpu_since(&before)),
            peak_rss: Some(after.peak_rss),
        },
        Latency::of(answers.micros, answers.refused),
        beside,
    ))
}

/// The HTTP load's tag (its requests' path).
const HTTP_TAG: &str = "bench";

/// The tag of `--bulk-forward`'s chunks.
const BULK_TAG: &str = "bulk";

/// Sends `frame` (a chunk of [`BULK_CHUNK`] records) over one forward
/// connection at `rate` records per second until `stop`; returns how many
/// chunks it sent.
fn paced_chunks(
    to: SocketAddr,
    frame: &[u8],
    rate: usize,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<usize, String> {
    let mut tcp = std::net::TcpStream::connect(to).map_err(|e| format!("connect {to}: {e}"))?;
    let every = Duration::from_secs_f64(BULK_CHUNK as f64 / rate as f64);
    let start = Instant::now();
    let mut sent = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        tcp.write_all(frame).map_err(|e| format!("send: {e}"))?;
        sent += 1;
        let next = start + every * sent as u32;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins until the thread used `until` of CPU (or 10 s passed, so a
    /// clock that does not move fails the test instead of hanging it).
    fn busy(until: Duration) -> Duration {
        let start = thread_cpu();
        let wall = Instant::now();
        let mut x = 1u64;
        while thread_cpu() - start < until && wall.elapsed() < Duration::from_secs(10) {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        thread_cpu() - start
    }

    #[test]
    fn the_sender_cpu_is_its_own_thread_s_not_the_process_s() {
        let mine = thread_cpu();
        let other = std::thread::spawn(|| busy(Duration::from_millis(200)))
            .join()
            .unwrap();
        let mine = thread_cpu() - mine;
        assert!(other >= Duration::from_millis(200), "{other:?}");
        assert!(
            mine < other / 2,
            "waiting thread {mine:?}, busy one {other:?}"
        );
        assert!(busy(Duration::from_millis(50)) >= Duration::from_millis(50));
    }

    #[test]
    fn cpu_reads_per_million_records() {
        assert_eq!(per_million(Duration::from_millis(500), 2_000_000), 0.25);
    }
}
