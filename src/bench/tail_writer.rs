//! `bench tail-writer`: rounds of lines appended to a file (see
//! `rounds.rs`), for a tailing process given by `--pid`.

use std::path::PathBuf;

use super::output::AppendFile;
use super::rounds::{self, RoundArgs};

#[derive(Debug, clap::Args)]
pub struct TailWriterArgs {
    /// File to append to (created if missing).
    #[arg(long)]
    pub file: PathBuf,
    /// Rename the file to FILE.1 and start a new one before it would grow
    /// past this many bytes (`10MiB`, `500000`).
    #[arg(long, value_parser = crate::config::units::parse_bytes)]
    pub rotate_bytes: Option<u64>,
    #[command(flatten)]
    pub rounds: RoundArgs,
}

pub fn run(a: TailWriterArgs) -> Result<(), String> {
    let mut file = AppendFile::open(&a.file, a.rotate_bytes)?;
    rounds::run(&a.rounds, |_, lines| file.write(lines))
}
