//! `logferry bench`: whole-pipeline benchmarks that any user can run on
//! their own machine. Each scenario starts this very binary as a separate
//! process (so its CPU and memory are measured alone, from /proc), drives
//! load from this process, stops the clock when the last record is in the
//! output file, and measures a plain baseline on the same machine in the
//! same run, so the numbers read as ratios.
//!
//! - `procfs.rs`: CPU and RSS of a process;
//! - `load.rs`: load writers (forward-protocol frames);
//! - `scenario.rs`: the scenarios and the report.

mod load;
pub mod procfs;
mod scenario;

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
    ForwardFile(scenario::ForwardFileArgs),
}

pub fn main(args: BenchArgs) -> ExitCode {
    let result = match args.scenario {
        Scenario::ForwardFile(a) => scenario::forward_file(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
