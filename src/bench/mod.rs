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
//! - `forward_file.rs`, `relay.rs`, `tail_file.rs`, `kafka.rs`: the scenarios.

mod forward_file;
mod kafka;
mod load;
mod pki;
mod process;
pub mod procfs;
mod relay;
mod report;
mod tail_file;

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
    /// One forward connection → Kafka sink → a real broker, timed until the
    /// topic holds every record (`--tls`: also with TLS on the forward
    /// hop). Baseline: `kcat -P` producing the same records.
    ForwardKafka(kafka::ForwardKafkaArgs),
    /// Keep-alive HTTP writers → HTTP source → Kafka sink, answered after
    /// Kafka's delivery report; requests/s and latency percentiles.
    /// Baseline: `kcat -P` producing the same records.
    HttpKafka(kafka::HttpKafkaArgs),
}

pub fn main(args: BenchArgs) -> ExitCode {
    let result = match args.scenario {
        Scenario::ForwardFile(a) => forward_file::run(a),
        Scenario::Relay(a) => relay::relay(a),
        Scenario::ForwardSink(a) => relay::forward_sink(a),
        Scenario::TailFile(a) => tail_file::run(a),
        Scenario::ForwardKafka(a) => kafka::forward_kafka(a),
        Scenario::HttpKafka(a) => kafka::http_kafka(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
