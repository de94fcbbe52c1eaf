//! `bench http-writer`: keep-alive connections POST newline-delimited
//! lines to an HTTP endpoint (logferry's HTTP source, or anything that
//! answers 200), optionally at a fixed rate; reports what was sent and
//! what was answered.

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::http_client::{Answers, Latency, Posting, Writers, CLIENT_THREADS};

#[derive(Debug, clap::Args)]
pub struct HttpWriterArgs {
    /// Receiver `HOST:PORT`.
    #[arg(long)]
    pub address: SocketAddr,
    /// Records (lines) to send in all.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Bytes per line, newline excluded (at least 8: lines are numbered;
    /// at least 30 to carry the request's write-time stamp).
    #[arg(long, default_value_t = 100)]
    pub size: usize,
    /// Lines per POST request.
    #[arg(long, default_value_t = 100)]
    pub lines_per_request: usize,
    /// Keep-alive connections posting at once.
    #[arg(long, default_value_t = 4)]
    pub connections: usize,
    /// Threads running the load's event loops, each over its share of the
    /// connections.
    #[arg(long, default_value_t = CLIENT_THREADS)]
    pub client_threads: usize,
    /// Records per second over all connections; 0 sends as fast as the
    /// receiver answers.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
}

pub fn run(a: HttpWriterArgs) -> Result<(), String> {
    if a.records == 0 || a.size < 8 || a.lines_per_request == 0 || a.connections == 0 {
        return Err(
            "records, lines-per-request and connections must be positive, size at least 8".into(),
        );
    }
    if !a.rate.is_finite() || a.rate < 0.0 {
        return Err("rate must be 0 (unlimited) or more".into());
    }
    let requests = a.records.div_ceil(a.lines_per_request);
    let records = requests * a.lines_per_request;
    let start = Instant::now();
    let pace = (a.rate > 0.0).then(|| {
        (
            start,
            Duration::from_secs_f64(a.lines_per_request as f64 / a.rate),
        )
    });
    let posting = Posting {
        targets: vec![a.address],
        connections: a.connections,
        threads: a.client_threads,
        requests,
        lines: a.lines_per_request,
        size: a.size,
        pace,
    };
    let Answers {
        micros,
        refused,
        errors,
    } = Writers::start(posting, Arc::new(AtomicUsize::new(0))).join();
    let secs = start.elapsed().as_secs_f64();
    let answered = micros.len();
    let sent_records = answered * a.lines_per_request;
    println!(
        "sent {sent_records} of {records} records ({} bytes of lines) in {answered} of {requests} requests over {} connection(s) in {secs:.3} s: {:.0} records/s, {:.0} requests/s; {answered} answered 200; {} error(s)",
        sent_records * (a.size + 1),
        a.connections,
        sent_records as f64 / secs,
        answered as f64 / secs,
        errors.len()
    );
    println!("{}", Latency::of(micros, refused));
    for e in &errors {
        eprintln!("http-writer: {e}");
    }
    if answered < requests {
        return Err(format!(
            "{} request(s) were not answered 200",
            requests - answered
        ));
    }
    Ok(())
}
