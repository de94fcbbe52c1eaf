//! `logferry bench`: whole-pipeline benchmarks (see docs/BENCHMARKS.md).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub fn main(_args: BenchArgs) -> ExitCode {
    eprintln!("bench: not built yet");
    ExitCode::FAILURE
}
