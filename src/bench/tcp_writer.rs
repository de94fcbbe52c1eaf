//! `bench tcp-writer`: rounds of newline-delimited lines over one TCP
//! connection (see `rounds.rs`), for a receiving process given by `--pid`.

use std::io::Write;
use std::net::TcpStream;

use super::rounds::{self, RoundArgs};

#[derive(Debug, clap::Args)]
pub struct TcpWriterArgs {
    /// Receiver `HOST:PORT`.
    #[arg(long)]
    pub address: String,
    #[command(flatten)]
    pub rounds: RoundArgs,
}

pub fn run(a: TcpWriterArgs) -> Result<(), String> {
    let mut conn =
        TcpStream::connect(&a.address).map_err(|e| format!("connect {}: {e}", a.address))?;
    rounds::run(&a.rounds, |_, lines| {
        conn.write_all(lines)
            .map_err(|e| format!("send to {}: {e}", a.address))
    })?;
    // a clean close: the receiver reads everything before it sees the end
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = std::io::copy(&mut conn, &mut std::io::sink());
    Ok(())
}
