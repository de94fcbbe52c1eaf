//! `logferry bench`: whole-pipeline benchmarks that any user can run on
//! their own machine. Each scenario starts this very binary as a separate
//! process (so its CPU and memory are measured alone, from /proc), drives
//! load from this process, stops the clock when the last record is in the
//! output file, and measures a plain baseline on the same machine in the
//! same run, so the numbers read as ratios.
//!
//! - `procfs.rs`: CPU and RSS of a process;
//! - `process.rs`: logferry processes under measurement;
//! - `load.rs`: load writers (forward-protocol frames, plain or TLS);
//! - `report.rs`: runs, medians and the markdown table;
//! - `forward_file.rs`, `relay.rs`, `tail_file.rs`, `kafka.rs`, `filters.rs`,
//!   `sinks.rs`, `syslog.rs`, `journald.rs`, `kubernetes/`: the scenarios;
//! - `scenario/`: `bench scenario NAME`, topologies of processes driven
//!   through load steps, with the measured role started from a template
//!   (`bench/templates/`) of logferry or another system.
//! - `results.rs`: what a scenario measured, as `--json FILE` writes it;
//!   `html.rs` with `plot.rs`: the HTML page `bench report` makes of it.
//!
//! Standalone load tools, run against any process (see "Load tools" in
//! docs/BENCHMARKS.md):
//!
//! - `monitor.rs`: CPU and RSS of running processes, sampled;
//! - `rounds.rs` with `tail_writer.rs` and `tcp_writer.rs`: rounds of
//!   lines into a file or a socket, the target sampled every round;
//! - `gen.rs`: log lines at a steady rate; `output.rs`: the file it and
//!   `tail-writer` append to (with rotation);
//! - `stamp.rs`: the write time every writer puts into its lines, read
//!   back at the far end as end-to-end latency;
//! - `forward_writer.rs`, `http_writer.rs` (with `http_client.rs`, shared
//!   with `kafka.rs`): forward-protocol and HTTP clients.
//!
//! `import_corpus.rs` is no benchmark: it checks `config import` on the
//! peers' own configurations, read from their source mirrors.

mod filters;
mod forward_file;
mod forward_writer;
mod gen;
pub mod html;
mod http_client;
mod http_writer;
mod import_corpus;
mod journald;
mod kafka;
pub mod kubernetes;
mod load;
mod monitor;
mod output;
mod pki;
mod plot;
mod process;
pub mod procfs;
mod relay;
mod report;
pub mod results;
mod rounds;
mod scenario;
mod sinks;
mod stamp;
mod syslog;
mod tail_file;
mod tail_writer;
mod tcp_writer;

use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub scenario: Scenario,
}

#[derive(Debug, Subcommand)]
pub enum Scenario {
    /// One sender connection sends PackedForward chunks to a forward
    /// source; the records are written as raw lines to one file. Baseline:
    /// the same bytes copied from a loopback socket to a file.
    ForwardFile(forward_file::ForwardFileArgs),
    /// Load → relay (forward → forward) → receiver → file, against load →
    /// receiver → file in the same run.
    Relay(relay::RelayArgs),
    /// Generator → forward sink → a receiver that discards.
    ForwardSink(relay::ForwardSinkArgs),
    /// A file written before the start, tailed into a raw file. Baseline:
    /// `cat in > out`.
    TailFile(tail_file::TailFileArgs),
    /// What processing costs: tail → apache2 parse → file, forward → JSON
    /// parse + grep + modify → file, against Fluent Bit doing the same
    /// work in the same run; or forward/tail → file with five filters that
    /// match nothing against none (`--workload pass-through`).
    Filters(filters::FiltersArgs),
    /// What the request-based sinks cost: forward → opensearch sink → an
    /// OpenSearch node, or forward → http sink → a logferry HTTP source
    /// writing a file (also otlp, s3, loki and splunk_hec), against Fluent
    /// Bit's matching output on the same load into the same destination
    /// in the same run.
    Sinks(sinks::SinksArgs),
    /// Numbered RFC 5424 messages over UDP at fixed rates → udp source
    /// (`parser = "syslog"`) → file, against Fluent Bit's `syslog` input
    /// (`Mode udp`) in the same run: sent, arrived, lost, kernel drops,
    /// CPU and peak RSS.
    UdpSyslog(syslog::SyslogArgs),
    /// Numbered RFC 5424 messages over one TCP connection, one `write()`
    /// each, at fixed rates → tcp source (`parser = "syslog"`) → file,
    /// against Fluent Bit's `syslog` input (`Mode tcp`) in the same run:
    /// sent, arrived, CPU and peak RSS.
    TcpSyslog(syslog::SyslogArgs),
    /// Entries appended to a journal directory at an everyday rate (by
    /// systemd-journal-remote) → journald source → file, against Fluent
    /// Bit's `systemd` input in the same run: CPU, peak RSS, lost.
    Journald(journald::JournaldArgs),
    /// One forward connection → Kafka sink → a real broker, timed until the
    /// topic holds every record (`--tls`: also with TLS on the forward
    /// hop). Baseline: `kcat -P` producing the same records.
    ForwardKafka(kafka::ForwardKafkaArgs),
    /// Keep-alive HTTP writers → HTTP source → Kafka sink, answered after
    /// Kafka's delivery report; requests/s and latency percentiles.
    /// Baseline: `kcat -P` producing the same records.
    HttpKafka(kafka::HttpKafkaArgs),
    /// A node of pods writing CRI logs (kubelet layout and rotation) with
    /// their metadata in a real API server: the kubernetes source against
    /// Fluent Bit's tail + kubernetes filter in the same run, every line
    /// counted with its labels; then the metadata cache's memory.
    Kubernetes(kubernetes::KubernetesArgs),
    /// Sample CPU (user/sys) and RSS of running processes from /proc; a
    /// row per sample and a summary at the end or on Ctrl-C.
    Monitor(monitor::MonitorArgs),
    /// Append rounds of lines to a file, sampling a tailing process
    /// (`--pid`) every round until it goes idle.
    TailWriter(tail_writer::TailWriterArgs),
    /// Send rounds of lines over TCP, sampling the receiving process
    /// (`--pid`) every round until it goes idle.
    TcpWriter(tcp_writer::TcpWriterArgs),
    /// Write log lines (fixed size or an LTSV template) to a file at a
    /// steady rate, optionally rotating it.
    Gen(gen::GenArgs),
    /// A topology of processes (agents → deliver → receivers, or senders
    /// → one server writing one unified file) driven through load steps,
    /// every process sampled, every record counted; the measured role can
    /// be another system (`--target`).
    Scenario(Box<scenario::ScenarioArgs>),
    /// Send PackedForward chunks over forward-protocol connections
    /// (acks, gzip, TLS), optionally at a fixed rate.
    ForwardWriter(forward_writer::ForwardWriterArgs),
    /// POST lines over keep-alive HTTP connections, optionally at a fixed
    /// rate.
    HttpWriter(http_writer::HttpWriterArgs),
    /// Write an HTML page (tables and SVG plots, self-contained) from
    /// result files written with `--json FILE`.
    Report(html::ReportArgs),
    /// The peers' own example and test configurations, read from their
    /// source mirrors, each imported with `config import` and checked with
    /// `validate`: how many validate, list plugins logferry lacks, hold no
    /// pipeline, or fail.
    ImportCorpus(import_corpus::ImportCorpusArgs),
}

pub fn main(args: BenchArgs) -> ExitCode {
    let result = match args.scenario {
        Scenario::ForwardFile(a) => forward_file::run(a),
        Scenario::Relay(a) => relay::relay(a),
        Scenario::ForwardSink(a) => relay::forward_sink(a),
        Scenario::TailFile(a) => tail_file::run(a),
        Scenario::Filters(a) => filters::run(a),
        Scenario::Sinks(a) => sinks::run(a),
        Scenario::UdpSyslog(a) => syslog::run(a, syslog::Transport::Udp),
        Scenario::TcpSyslog(a) => syslog::run(a, syslog::Transport::Tcp),
        Scenario::Journald(a) => journald::run(a),
        Scenario::ForwardKafka(a) => kafka::forward_kafka(a),
        Scenario::HttpKafka(a) => kafka::http_kafka(a),
        Scenario::Kubernetes(a) => kubernetes::run(a),
        Scenario::Monitor(a) => monitor::run(a),
        Scenario::TailWriter(a) => tail_writer::run(a),
        Scenario::TcpWriter(a) => tcp_writer::run(a),
        Scenario::Gen(a) => gen::run(a),
        Scenario::Scenario(a) => scenario::run(*a),
        Scenario::ForwardWriter(a) => forward_writer::run(a),
        Scenario::HttpWriter(a) => http_writer::run(a),
        Scenario::Report(a) => html::run(a),
        Scenario::ImportCorpus(a) => import_corpus::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
