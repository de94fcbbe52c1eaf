//! `bench sinks`: what the request-based sinks cost. One sender connection
//! sends PackedForward chunks of 100 B JSON records to a forward source
//! whose output is the sink measured; logferry and, unless `--no-peer`,
//! Fluent Bit (its `forward` input and the matching output) run
//! alternately on the same load into the same destination:
//!
//! - `opensearch`: the `opensearch` sink (Fluent Bit: `opensearch`) into
//!   a node given by `--endpoint`, each run into an index of its own
//!   (created before it with one shard and no replica, deleted after); the
//!   clock stops when the index's `_count` (after a `_refresh`, every
//!   200 ms) reaches the records sent. The node is the bottleneck, so its
//!   CPU over the run (`--node-pid`) is reported beside;
//! - `http`: the `http` sink (Fluent Bit: `http`), JSON arrays posted to
//!   a receiver that is a separate logferry process (HTTP source → file),
//!   the same for both systems and started afresh for each run; the clock
//!   stops when its file holds a line per record. The receiver's CPU is
//!   reported beside, not charged to the measured process;
//! - `otlp`: the `otlp` sink (Fluent Bit: `opentelemetry`, gzip both) into
//!   an OpenTelemetry Collector whose file exporter writes OTLP-JSON
//!   lines; the clock stops when the lines written since the run began
//!   hold a log record per record sent. The collector's CPU is reported
//!   beside;
//! - `s3`: the `s3` sink (Fluent Bit: `s3` with `use_put_object`) into
//!   s3s-fs, gzip objects closed at 8 MiB of records before compression,
//!   each run into a bucket of its own; the clock stops when the objects
//!   decompressed hold a line per record sent. The server's CPU is
//!   reported beside;
//! - `loki`: the `loki` sink, protobuf + snappy (Fluent Bit: `loki`,
//!   JSON), and `splunk`: the `splunk_hec` sink (Fluent Bit: `splunk`,
//!   TLS off), into one VictoriaLogs server, each run under a stream
//!   field of its own (the label `run`, the HEC `sourcetype`); the clock
//!   stops when a LogsQL `count()` of that field (every 250 ms) reaches
//!   the records sent. The server's CPU is reported beside (see
//!   `victorialogs.rs`);
//! - `otlp-in`, the way in rather than a sink: OTLP/HTTP protobuf
//!   requests of the same records posted to the `otlp` source (Fluent
//!   Bit: `opentelemetry` input) writing a file (see `otlp_in.rs`);
//! - `forward-gzip`: the `forward` sink with `compress = "gzip"` (Fluent
//!   Bit: `forward` with `Compress gzip`) into a receiver that is a
//!   separate logferry process (forward source → file), started afresh
//!   for each run like the `http` workload's; the clock stops when its
//!   file holds a line per record. Both sinks keep their batching
//!   defaults in this mode too (see `forward_gzip.rs`).
//!
//! With `--rates`, the records are sent at everyday rates instead, each
//! system with its defaults, and the end-to-end latency is measured (see
//! `rates.rs`).
//!
//! The three servers run from their scripts with a state dir given by
//! `--state-dir` (`LOGFERRY_OTELCOL_DIR=D scripts/otelcol.sh start`,
//! `LOGFERRY_S3_DIR=D scripts/s3.sh start`,
//! `LOGFERRY_VICTORIALOGS_DIR=D scripts/victorialogs.sh start`), where the
//! bench finds their address, process id and what they received.
//!
//! Batches are made alike: Fluent Bit sends one request per chunk at each
//! flush (`Flush 1`; a chunk is at most about 2 MB of records), so
//! logferry's sink takes up to [`BATCH_RECORDS`] records or
//! [`BATCH_BYTES`] bytes with a linger of a second; both keep two
//! requests in flight (`Workers 2`, `concurrency = 2`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::filters::{free_port, wait_for_port, LineCount};
use super::load::send_frames;
use super::process::{wait_until_every, Proc};
use super::procfs;
use super::report::{self, Run, RunArgs, WorkDir};
use super::scenario::peers;
use super::scenario::template::Target;
use crate::protocol::forward::write_packed_forward;
use crate::protocol::msgpack::write;

mod forward_gzip;
mod otlp_in;
mod rates;
mod stores;
mod victorialogs;
use stores::{Collector, Store};
use victorialogs::{Api, VictoriaLogs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// forward → opensearch sink → an OpenSearch node (`--endpoint`).
    Opensearch,
    /// forward → http sink → a logferry HTTP source writing a file.
    Http,
    /// forward → otlp sink → an OpenTelemetry Collector (`--state-dir`).
    Otlp,
    /// forward → s3 sink → s3s-fs (`--state-dir`).
    S3,
    /// forward → loki sink → VictoriaLogs (`--state-dir`).
    Loki,
    /// forward → splunk_hec sink → VictoriaLogs (`--state-dir`).
    Splunk,
    /// OTLP/HTTP protobuf posts → otlp source → file (not a sink: the
    /// way in, measured with the same records).
    OtlpIn,
    /// forward → forward sink with gzip → a logferry forward source
    /// writing a file.
    ForwardGzip,
}

#[derive(Debug, clap::Args)]
pub struct SinksArgs {
    /// The sink measured.
    #[arg(long, value_enum)]
    pub workload: Workload,
    /// Records per run (default 500,000 for `opensearch`, 2,000,000 for
    /// the others); rounded up to whole chunks of 1,000.
    #[arg(long)]
    pub records: Option<usize>,
    /// The OpenSearch node's base URL (`http://127.0.0.1:9200`;
    /// `scripts/opensearch.sh start` prints one).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// The OpenSearch node's process id, whose CPU over each run is
    /// reported (scripts/opensearch.sh keeps it in its state dir's `pid`).
    #[arg(long)]
    pub node_pid: Option<u32>,
    /// `otlp`: the collector's state dir (`LOGFERRY_OTELCOL_DIR` of
    /// scripts/otelcol.sh); `s3`: the S3 server's (`LOGFERRY_S3_DIR` of
    /// scripts/s3.sh); `loki`, `splunk`: the VictoriaLogs server's
    /// (`LOGFERRY_VICTORIALOGS_DIR` of scripts/victorialogs.sh). Private to the bench: the records it counts are
    /// all that arrive there during a run.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// `otlp-in`: when the `otlp` source answers (its `ack`): `sinks`
    /// (the default: once the file has the records) or `received` (once
    /// they are queued, as Fluent Bit's `opentelemetry` input answers).
    #[arg(long, default_value = "sinks")]
    pub source_ack: SourceAck,
    /// Measure logferry alone, without Fluent Bit.
    #[arg(long)]
    pub no_peer: bool,
    /// Fluent Bit's program (default: the peers' build named in
    /// /opt/peers/env or by $LOGFERRY_PEERS_ENV, else `fluent-bit` on PATH).
    #[arg(long)]
    pub peer_bin: Option<PathBuf>,
    /// Send at these rates (records/s, comma-separated) instead of as
    /// fast as possible, each system with its defaults, and report CPU %
    /// and end-to-end latency per rate (`--records` is then unused).
    #[arg(long, value_delimiter = ',')]
    pub rates: Vec<u64>,
    /// With `--rates`: how long each rate is sent.
    #[arg(long, default_value_t = 20)]
    pub step_seconds: u64,
    /// `s3`: the logferry sink's `time_format` (`epoch_millis`, the
    /// default, `epoch` or `rfc3339`).
    #[arg(long)]
    pub s3_time_format: Option<String>,
    /// With `--rates`: logferry's forward source's `linger` (`"100ms"`;
    /// default: the source's default, 500 ms).
    #[arg(long)]
    pub source_linger: Option<String>,
    /// With `--rates`: logferry's sink keeps its queue on disk (`buffer =
    /// { type = "disk" }`, its other settings as shipped; for `otlp-in`,
    /// the file sink), Fluent Bit's input its chunks (`storage.type
    /// filesystem`), each in a directory of the run's own.
    #[arg(long)]
    pub disk_buffer: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// When the source of `otlp-in` answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceAck {
    Sinks,
    Received,
}

/// Records per PackedForward chunk the sender writes.
const CHUNK: usize = 1000;
/// Distinct chunks the sender takes in turn.
const DISTINCT_CHUNKS: usize = 16;
/// Size of every record written as JSON (`{"seq":…,"msg":"…"}`).
pub const RECORD_BYTES: usize = 100;
/// Most records in one logferry request: about what one of Fluent Bit's
/// 2 MB chunks holds of these records.
pub const BATCH_RECORDS: usize = 20_000;
/// Most bytes (as received) in one logferry request: Fluent Bit's chunk
/// size.
pub const BATCH_BYTES: usize = 2_000_000;
/// How often the OpenSearch index is refreshed and counted.
const COUNT_EVERY: Duration = Duration::from_millis(200);

pub fn run(a: SinksArgs) -> Result<(), String> {
    let records = a.records.unwrap_or(match a.workload {
        Workload::Opensearch => 500_000,
        Workload::Http
        | Workload::Otlp
        | Workload::S3
        | Workload::Loki
        | Workload::Splunk
        | Workload::OtlpIn
        | Workload::ForwardGzip => 2_000_000,
    });
    if records == 0 || a.run.runs == 0 {
        return Err("records and runs must be positive".into());
    }
    let dir = WorkDir::new(a.run.dir.clone())?;
    let peer = if a.no_peer {
        None
    } else {
        Some(peers::program(Target::FluentBit, a.peer_bin.as_deref())?)
    };
    let dest = match a.workload {
        Workload::Opensearch => {
            let url = a
                .endpoint
                .clone()
                .ok_or("--workload opensearch needs --endpoint URL (scripts/opensearch.sh start prints one)")?;
            Dest::OpenSearch(Node::new(&url, a.node_pid)?)
        }
        Workload::Http => Dest::Http,
        Workload::Otlp => Dest::Otlp(Collector::new(&state_dir(&a, "otelcol")?)?),
        Workload::S3 => Dest::S3(Store::new(&state_dir(&a, "s3")?)?),
        Workload::Loki => Dest::VictoriaLogs(
            VictoriaLogs::new(&state_dir(&a, "victorialogs")?)?,
            Api::Loki,
        ),
        Workload::Splunk => Dest::VictoriaLogs(
            VictoriaLogs::new(&state_dir(&a, "victorialogs")?)?,
            Api::Splunk,
        ),
        Workload::OtlpIn => Dest::OtlpIn(otlp_in::Requests::new(records, a.source_ack)),
        Workload::ForwardGzip => Dest::ForwardGzip,
    };
    if !a.rates.is_empty() {
        return rates::run(&dir.path, &a, peer.as_deref(), &dest);
    }
    let load = Load::new(records);
    compare(&dir.path, &a, peer.as_deref(), &dest, &load)
}

/// `--state-dir`, which the workload needs.
fn state_dir(a: &SinksArgs, script: &str) -> Result<PathBuf, String> {
    a.state_dir.clone().ok_or_else(|| {
        format!(
            "--workload {:?} needs --state-dir DIR, the state dir of scripts/{script}.sh start",
            a.workload
        )
    })
}

/// The chunks every run sends.
struct Load {
    /// Records sent: whole chunks.
    records: usize,
    /// The distinct PackedForward frames, sent in turn.
    frames: Vec<Vec<u8>>,
}

impl Load {
    fn new(records: usize) -> Self {
        let frames = (0..DISTINCT_CHUNKS)
            .map(|c| {
                let mut entries = Vec::with_capacity(CHUNK * (RECORD_BYTES + 16));
                for i in 0..CHUNK {
                    write_entry(&mut entries, c * CHUNK + i);
                }
                let mut frame = Vec::with_capacity(entries.len() + 64);
                write_packed_forward(&mut frame, "bench", &entries, CHUNK, None);
                frame
            })
            .collect();
        Load {
            records: records.div_ceil(CHUNK) * CHUNK,
            frames,
        }
    }

    fn send(&self, addr: SocketAddr) -> Result<(), String> {
        let frames: Vec<&[u8]> = self.frames.iter().map(|f| f.as_slice()).collect();
        send_frames(addr, &frames, self.records / CHUNK, None)
    }
}

/// The record numbered `n` as JSON: `{"seq":n,"level":…,"msg":…}`, the
/// message padded so the whole is [`RECORD_BYTES`] bytes.
fn record_json(n: usize) -> String {
    let head = format!("{{\"seq\":{n},\"level\":\"info\",\"msg\":\"");
    let pad = RECORD_BYTES.saturating_sub(head.len() + 2);
    let text = "order accepted and queued for the warehouse, nothing to report ";
    let msg: String = text.chars().cycle().take(pad).collect();
    format!("{head}{msg}\"}}")
}

/// Appends `[time, record]` for [`record_json`]'s record `n`.
fn write_entry(out: &mut Vec<u8>, n: usize) {
    let json = record_json(n);
    let msg = json
        .split("\"msg\":\"")
        .nth(1)
        .and_then(|m| m.strip_suffix("\"}"))
        .unwrap_or("");
    write::array_len(out, 2);
    write::event_time(out, 1_700_000_000, n as u32);
    write::map_len(out, 3);
    write::str(out, b"seq");
    write::uint(out, n as u64);
    write::str(out, b"level");
    write::str(out, b"info");
    write::str(out, b"msg");
    write::str(out, msg.as_bytes());
}

/// Where the measured process sends the records.
enum Dest {
    OpenSearch(Node),
    /// A receiver started for each run.
    Http,
    Otlp(Collector),
    S3(Store),
    /// One server for both push APIs.
    VictoriaLogs(VictoriaLogs, Api),
    /// Not a destination: OTLP requests posted to the measured process.
    OtlpIn(otlp_in::Requests),
    /// A forward receiver started for each run.
    ForwardGzip,
}

/// The OpenSearch node.
struct Node {
    /// Its base URL, without a trailing slash.
    url: String,
    /// Where that URL's host and port resolve.
    addr: SocketAddr,
    /// Its process, whose CPU is read over each run.
    pid: Option<u32>,
}

impl Node {
    fn new(url: &str, pid: Option<u32>) -> Result<Node, String> {
        let url = url.trim_end_matches('/').to_string();
        let host = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// endpoints are benchmarked"))?;
        let addr = host
            .to_socket_addrs()
            .map_err(|e| format!("{host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host}: no address"))?;
        let node = Node { url, addr, pid };
        let (status, body) = node.request("GET", "/", None)?;
        if status != 200 {
            return Err(format!("{}: answered {status}: {body}", node.url));
        }
        Ok(node)
    }

    /// One request on a connection of its own; the status and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), String> {
        let body = body.unwrap_or("");
        exchange(self.addr, method, path, "application/json", body.as_bytes())
            .map_err(|e| format!("{method} {}{path}: {e}", self.url))
    }

    /// A fresh index: one shard, no replica (a single node).
    fn create(&self, index: &str) -> Result<(), String> {
        self.delete(index);
        let (status, body) = self.request(
            "PUT",
            &format!("/{index}"),
            Some(r#"{"settings":{"number_of_shards":1,"number_of_replicas":0}}"#),
        )?;
        if status != 200 {
            return Err(format!("create index {index}: {status} {body}"));
        }
        Ok(())
    }

    fn delete(&self, index: &str) {
        let _ = self.request("DELETE", &format!("/{index}"), None);
    }

    /// Documents searchable in `index` after a refresh.
    fn count(&self, index: &str) -> Result<usize, String> {
        self.request("POST", &format!("/{index}/_refresh"), None)?;
        let (status, body) = self.request("GET", &format!("/{index}/_count"), None)?;
        let n = body
            .split_once("\"count\":")
            .and_then(|(_, rest)| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
            .ok_or_else(|| format!("{index}/_count answered {status}: {body}"))?;
        Ok(n)
    }

    fn cpu(&self) -> Option<Duration> {
        self.pid.and_then(procfs::sample).map(|s| s.cpu())
    }
}

/// One request on a connection of its own: the status and the body.
/// HTTP/1.0, so the answer comes whole (never chunked) and the connection
/// closes after it.
fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut request = format!(
        "{method} {path} HTTP/1.0\r\nhost: bench\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    s.write_all(&request)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no HTTP answer"))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// The system measured (also by `syslog.rs`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum System {
    Logferry,
    FluentBit,
}

impl System {
    pub(super) fn name(self) -> &'static str {
        match self {
            System::Logferry => "logferry",
            System::FluentBit => "Fluent Bit",
        }
    }

    /// The systems a bench measures: logferry, and Fluent Bit unless
    /// `no_peer`, with Fluent Bit's program.
    pub(super) fn measured(
        no_peer: bool,
        peer_bin: Option<&Path>,
    ) -> Result<(Vec<System>, Option<PathBuf>), String> {
        if no_peer {
            return Ok((vec![System::Logferry], None));
        }
        let peer = peers::program(Target::FluentBit, peer_bin)?;
        Ok((vec![System::Logferry, System::FluentBit], Some(peer)))
    }

    fn slug(self) -> &'static str {
        match self {
            System::Logferry => "logferry",
            System::FluentBit => "fluent-bit",
        }
    }
}

/// One run's figures: the measured process's, and the CPU the
/// destination (the node, or the HTTP receiver) spent over the same time.
struct Measured {
    /// The measured process's run.
    run: Run,
    /// CPU time of the destination over the run (unknown without
    /// `--node-pid`).
    dest_cpu: Option<Duration>,
    /// Bytes the destination stored (`s3`: the objects, compressed).
    stored: Option<u64>,
}

fn compare(
    dir: &Path,
    a: &SinksArgs,
    peer: Option<&Path>,
    dest: &Dest,
    load: &Load,
) -> Result<(), String> {
    let (sink, destination) = match dest {
        Dest::OpenSearch(n) => ("opensearch", format!("the OpenSearch node at {}", n.url)),
        Dest::Http => ("http", "a logferry HTTP source → file".to_string()),
        Dest::ForwardGzip => (
            "forward (gzip)",
            "a logferry forward source → file (both sinks' batching as shipped)".to_string(),
        ),
        Dest::Otlp(c) => (
            "otlp",
            format!("the OpenTelemetry Collector at {} (file exporter)", c.url),
        ),
        Dest::OtlpIn(r) => {
            println!(
                "OTLP/HTTP protobuf → otlp source (ack = {:?}; Fluent Bit: opentelemetry input) → file: {} log records with {RECORD_BYTES} B string bodies, {CHUNK} a request, 2 connections; {} runs",
                r.ack_setting(), r.records, a.run.runs
            );
            ("", String::new())
        }
        Dest::S3(s) => (
            "s3",
            format!(
                "s3s-fs at {}, gzip objects of {} MiB before compression, logferry's time_format {}",
                s.url,
                stores::OBJECT_MIB,
                a.s3_time_format.as_deref().unwrap_or("as shipped (epoch_millis)")
            ),
        ),
        Dest::VictoriaLogs(v, Api::Loki) => {
            ("loki", format!("VictoriaLogs at {} (Loki push API)", v.url))
        }
        Dest::VictoriaLogs(v, Api::Splunk) => (
            "splunk_hec",
            format!("VictoriaLogs at {} (Splunk HEC)", v.url),
        ),
    };
    if !sink.is_empty() {
        println!(
        "forward → {sink} sink → {destination}: {} records of {RECORD_BYTES} B (JSON) in chunks of {CHUNK}; batches of up to {BATCH_RECORDS} records or {BATCH_BYTES} B, linger 1 s (Fluent Bit: Flush 1, a request per chunk), 2 in flight; {} runs",
        load.records, a.run.runs
    );
    }
    let mut systems = vec![System::Logferry];
    if peer.is_some() {
        systems.push(System::FluentBit);
    }
    let mut results: Vec<Vec<Measured>> = systems.iter().map(|_| Vec::new()).collect();
    for i in 0..a.run.runs {
        for (k, &system) in systems.iter().enumerate() {
            let tag = format!("{}-{}-{}", system.slug(), std::process::id(), i + 1);
            let m = match dest {
                Dest::OpenSearch(node) => {
                    let index = format!("bench-sinks-{tag}");
                    node.create(&index)?;
                    let m = measure_opensearch(dir, system, peer, node, &index, load);
                    node.delete(&index);
                    m?
                }
                Dest::Http => measure_into_receiver(
                    dir,
                    system,
                    peer,
                    &dir.join(format!("received-{tag}.log")),
                    HTTP_RECEIVER,
                    |r| http_configs(r, Batching::Throughput),
                    load,
                )?,
                Dest::ForwardGzip => measure_into_receiver(
                    dir,
                    system,
                    peer,
                    &dir.join(format!("forwarded-{tag}.log")),
                    forward_gzip::RECEIVER,
                    forward_gzip::configs,
                    load,
                )?,
                Dest::Otlp(c) => stores::measure_otlp(dir, system, peer, c, load)?,
                Dest::OtlpIn(r) => otlp_in::measure_otlp_in(dir, system, peer, &tag, r)?,
                Dest::S3(s) => {
                    let bucket = format!("bench-{tag}");
                    s.create(&bucket)?;
                    let m = stores::measure_s3(
                        dir,
                        system,
                        peer,
                        s,
                        &bucket,
                        load,
                        a.s3_time_format.as_deref(),
                    );
                    s.delete(&bucket);
                    m?
                }
                Dest::VictoriaLogs(v, api) => {
                    victorialogs::measure_victorialogs(dir, system, peer, v, *api, &tag, load)?
                }
            };
            eprintln!("run {}: {}", i + 1, m.run.row(system.name()));
            results[k].push(m);
        }
    }
    let runs: Vec<Vec<Run>> = results
        .iter()
        .map(|ms| ms.iter().map(|m| m.run).collect())
        .collect();
    let rows: Vec<(&str, &[Run])> = systems
        .iter()
        .zip(&runs)
        .map(|(s, r)| (s.name(), r.as_slice()))
        .collect();
    report::print(&rows);
    let dest_name = match dest {
        Dest::OpenSearch(_) => "OpenSearch node",
        Dest::Http => "HTTP receiver (logferry)",
        Dest::ForwardGzip => "forward receiver (logferry)",
        Dest::Otlp(_) => "OpenTelemetry Collector",
        Dest::S3(_) => "S3 server (s3s-fs)",
        Dest::VictoriaLogs(..) => "VictoriaLogs",
        Dest::OtlpIn(_) => "",
    };
    if results.iter().flatten().any(|m| m.dest_cpu.is_some()) {
        println!("\n| sender | {dest_name}: CPU s | CPU s / M records | CPU % of one core |\n|---|---|---|---|");
        for (s, ms) in systems.iter().zip(&results) {
            for (i, m) in ms.iter().enumerate() {
                if let Some(c) = m.dest_cpu {
                    let c = c.as_secs_f64();
                    println!(
                        "| {}, run {} | {c:.2} | {:.3} | {:.0} |",
                        s.name(),
                        i + 1,
                        c / (m.run.records as f64 / 1e6),
                        100.0 * c / m.run.seconds
                    );
                }
            }
        }
    }
    if results.iter().flatten().any(|m| m.stored.is_some()) {
        println!("\n| sender | stored bytes | stored B / record |\n|---|---|---|");
        for (s, ms) in systems.iter().zip(&results) {
            for (i, m) in ms.iter().enumerate() {
                if let Some(b) = m.stored {
                    println!(
                        "| {}, run {} | {b} | {:.2} |",
                        s.name(),
                        i + 1,
                        b as f64 / m.run.records as f64
                    );
                }
            }
        }
    }
    if runs.len() == 2 {
        let (o, t) = (report::median(&runs[0]), report::median(&runs[1]));
        if let (Some(oc), Some(tc)) = (o.cpu, t.cpu) {
            println!(
                "\nmedians: records per CPU-second, logferry / Fluent Bit: {:.2} (goal 3); records/s logferry / Fluent Bit: {:.2}; peak RSS logferry / Fluent Bit: {:.2}",
                tc.as_secs_f64() / oc.as_secs_f64(),
                o.records_per_sec() / t.records_per_sec(),
                o.peak_rss.unwrap_or(0) as f64 / t.peak_rss.unwrap_or(1).max(1) as f64
            );
        }
    }
    Ok(())
}

/// Starts the measured system with a forward input and `output` (its
/// logferry sink, or its Fluent Bit `[OUTPUT]`); returns the process and
/// where it listens.
fn start(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    logferry_sink: &str,
    fluent_bit_output: &str,
    fluent_bit_env: &[(&str, &str)],
) -> Result<(Proc, SocketAddr), String> {
    start_with(
        dir,
        system,
        peer,
        Setup::default(),
        logferry_sink,
        fluent_bit_output,
        fluent_bit_env,
    )
}

/// What the rate mode sets beside the defaults.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Setup<'a> {
    /// logferry's forward source's `linger`.
    pub linger: Option<&'a str>,
    /// Where the measured system keeps its buffer on disk (logferry's
    /// sink, Fluent Bit's input): a directory of the run's own.
    pub disk: Option<&'a Path>,
}

/// [`start`], with what `setup` sets.
fn start_with(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    setup: Setup<'_>,
    logferry_sink: &str,
    fluent_bit_output: &str,
    fluent_bit_env: &[(&str, &str)],
) -> Result<(Proc, SocketAddr), String> {
    match (system, peer) {
        (System::Logferry, _) => {
            let linger = setup
                .linger
                .map_or(String::new(), |l| format!("linger = \"{l}\"\n"));
            // the buffer's line goes right under the sink's table header
            let sink = match (setup.disk, logferry_sink.split_once('\n')) {
                (Some(d), Some((header, rest))) => format!(
                    "{header}\nbuffer = {{ type = \"disk\", dir = {:?} }}\n{rest}",
                    d.display().to_string()
                ),
                _ => logferry_sink.to_string(),
            };
            let mut p = Proc::start(
                dir,
                "logferry-sinks",
                &format!(
                    "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n{linger}\n{sink}"
                ),
            )?;
            let addr = p.address("source=in ")?;
            Ok((p, addr))
        }
        (System::FluentBit, Some(bin)) => {
            let addr = free_port()?;
            let conf = dir.join("fluent-bit.conf");
            let (storage_path, storage_type) = match setup.disk {
                Some(d) => (
                    format!("    storage.path {}\n", d.display()),
                    "    storage.type filesystem\n",
                ),
                None => (String::new(), ""),
            };
            std::fs::write(
                &conf,
                format!(
                    "[SERVICE]\n    Flush     1\n    Log_Level warn\n{storage_path}\n\
                     [INPUT]\n    Name   forward\n    Listen 127.0.0.1\n    Port   {}\n{storage_type}\n{fluent_bit_output}",
                    addr.port()
                ),
            )
            .map_err(|e| e.to_string())?;
            let mut cmd = Command::new(bin);
            cmd.arg("-c")
                .arg(&conf)
                .envs(fluent_bit_env.iter().copied())
                .stdout(std::process::Stdio::null());
            let mut p = Proc::spawn(cmd, "fluent-bit")?;
            wait_for_port(addr, &mut p)?;
            Ok((p, addr))
        }
        (System::FluentBit, None) => Err("no Fluent Bit program".into()),
    }
}

/// How the measured systems batch: alike and wide for throughput, or
/// each as shipped (the rate mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Batching {
    /// logferry's request sinks take up to [`BATCH_RECORDS`] records or
    /// [`BATCH_BYTES`] with a linger of 1 s, both keep 2 requests in
    /// flight (`Workers 2`).
    Throughput,
    /// Every batching, linger and worker setting left at its default.
    Defaults,
}

impl Batching {
    /// The lines of a logferry request sink's table.
    fn logferry(self) -> String {
        match self {
            Batching::Throughput => logferry_batching(),
            Batching::Defaults => String::new(),
        }
    }

    /// The `Workers` line of a Fluent Bit output.
    fn fluent_bit_workers(self) -> &'static str {
        match self {
            Batching::Throughput => "    Workers 2\n",
            Batching::Defaults => "",
        }
    }
}

/// logferry's batching, the same for both sinks.
fn logferry_batching() -> String {
    format!("batch_records = {BATCH_RECORDS}\nbatch_bytes = {BATCH_BYTES}\nlinger = \"1s\"\nconcurrency = 2\n")
}

/// The logferry sink and the Fluent Bit output into `index` of `node`.
fn opensearch_configs(node: &Node, index: &str, batching: Batching) -> (String, String) {
    let sink = format!(
        "[sinks.out]\ntype = \"opensearch\"\nmatch = \"**\"\nendpoints = [{:?}]\nindex = {index:?}\n{}",
        node.url,
        batching.logferry()
    );
    let port = node.addr.port();
    let output = format!(
        "[OUTPUT]\n    Name               opensearch\n    Match              *\n    Host               {}\n    Port               {port}\n    Index              {index}\n    Suppress_Type_Name On\n    Buffer_Size        False\n{}",
        node.addr.ip(),
        batching.fluent_bit_workers()
    );
    (sink, output)
}

fn measure_opensearch(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    node: &Node,
    index: &str,
    load: &Load,
) -> Result<Measured, String> {
    let (sink, output) = opensearch_configs(node, index, Batching::Throughput);
    let (mut p, addr) = start(dir, system, peer, &sink, &output, &[])?;
    let node_before = node.cpu();
    let mut last = Instant::now();
    let mut n = 0;
    let json_bytes = (load.records * RECORD_BYTES) as u64;
    let run = measure(&mut p, &mut [], addr, load, json_bytes, COUNT_EVERY, || {
        // refresh and count no more often than COUNT_EVERY
        if last.elapsed() >= COUNT_EVERY {
            last = Instant::now();
            n = node.count(index).unwrap_or(n);
        }
        (
            n >= load.records,
            format!("{index} holds {n} of {} documents", load.records),
        )
    })?;
    let dest_cpu = match (node_before, node.cpu()) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b)),
        _ => None,
    };
    if n > load.records {
        eprintln!(
            "{}: {index} holds {n} documents for {} records sent (duplicates)",
            system.name(),
            load.records
        );
    }
    Ok(Measured {
        run,
        dest_cpu,
        stored: None,
    })
}

/// A logferry process receiving what the measured system sends: the
/// source `source` (its table's lines after `[sources.in]`) → the file
/// `out`, in `json`, a line per record.
fn start_receiver(dir: &Path, source: &str, out: &Path) -> Result<(Proc, SocketAddr), String> {
    let _ = std::fs::remove_file(out);
    let mut receiver = Proc::start(
        dir,
        "receiver",
        &format!(
            "[sources.in]\n{source}address = \"127.0.0.1:0\"\n\n\
             [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"json\"\n",
            out.display().to_string()
        ),
    )?;
    let addr = receiver.address("source=in ")?;
    Ok((receiver, addr))
}

/// The HTTP receiver's source.
const HTTP_RECEIVER: &str = "type = \"http\"\nmax_body_bytes = \"64MiB\"\n";

/// The logferry sink and the Fluent Bit output posting to `recv`.
fn http_configs(recv: SocketAddr, batching: Batching) -> (String, String) {
    // Fluent Bit's `json` format: an array of objects, the time as `date`
    let sink = format!(
        "[sinks.out]\ntype = \"http\"\nmatch = \"**\"\nuri = \"http://{recv}/bench\"\nencoding = \"json\"\ntime_key = \"date\"\n{}",
        batching.logferry()
    );
    let output = format!(
        "[OUTPUT]\n    Name    http\n    Match   *\n    Host    {}\n    Port    {}\n    URI     /bench\n    Format  json\n{}",
        recv.ip(),
        recv.port(),
        batching.fluent_bit_workers()
    );
    (sink, output)
}

/// One run into a receiver (a logferry process with the source
/// `source`, see [`start_receiver`]) writing `out`, the measured system
/// configured by `configs` to send to it: the clock stops when the file
/// holds a line per record; the receiver's CPU is reported beside.
fn measure_into_receiver(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    out: &Path,
    source: &str,
    configs: impl FnOnce(SocketAddr) -> (String, String),
    load: &Load,
) -> Result<Measured, String> {
    let (mut receiver, recv) = start_receiver(dir, source, out)?;
    let (sink, output) = configs(recv);
    let (mut p, addr) = start(dir, system, peer, &sink, &output, &[])?;
    let receiver_before = receiver.sample()?;
    let mut lines = LineCount::new(out);
    let run = measure(
        &mut p,
        &mut [&mut receiver],
        addr,
        load,
        0,
        Duration::from_millis(5),
        || {
            let n = lines.count();
            (
                n >= load.records,
                format!("{} holds {n} of {} lines", out.display(), load.records),
            )
        },
    )?;
    let dest_cpu = Some(receiver.sample()?.cpu_since(&receiver_before));
    drop(p);
    drop(receiver);
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(out);
    Ok(Measured {
        run: Run { bytes, ..run },
        dest_cpu,
        stored: None,
    })
}

/// One run of a started process: the load sent from another thread while
/// `done` is polled every `period` (failing if the process, or one of
/// `others`, exits). CPU and peak RSS are the measured process's.
fn measure(
    p: &mut Proc,
    others: &mut [&mut Proc],
    addr: SocketAddr,
    load: &Load,
    bytes: u64,
    period: Duration,
    mut done: impl FnMut() -> (bool, String),
) -> Result<Run, String> {
    let before = p.sample()?;
    let start = Instant::now();
    std::thread::scope(|s| {
        let sender = s.spawn(move || load.send(addr));
        let mut watched: Vec<&mut Proc> = vec![&mut *p];
        watched.extend(others.iter_mut().map(|o| &mut **o));
        wait_until_every(period, &mut watched, &mut done)?;
        sender
            .join()
            .map_err(|_| "the sender panicked".to_string())?
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let after = p.sample()?;
    Ok(Run {
        seconds,
        records: load.records,
        bytes,
        cpu: Some(after.cpu_since(&before)),
        peak_rss: Some(after.peak_rss),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_100_bytes_of_json_and_the_frames_say_so() {
        for n in [0, 7, 999, 15_999] {
            let j = record_json(n);
            assert_eq!(j.len(), RECORD_BYTES, "{j}");
            let v: serde_json::Value = serde_json::from_str(&j).unwrap();
            assert_eq!(v["seq"], n);
        }
        let load = Load::new(2500);
        assert_eq!(load.records, 3000);
        for f in &load.frames {
            let frame = crate::protocol::forward::decode_frame(
                bytes::Bytes::from(f.clone()),
                &Default::default(),
            )
            .unwrap();
            assert_eq!(frame.count, CHUNK);
            assert_eq!(
                crate::protocol::forward::count_entries(&frame.entries).unwrap(),
                CHUNK
            );
        }
    }
}
