//! An HTTP/1.1 load client shared by the HTTP benchmarks (`http-kafka`,
//! `http-writer`): keep-alive connections posting newline-delimited
//! lines, retrying logferry's 503 backpressure answers, with request
//! latency percentiles.
//!
//! Like `wrk`, a few threads each run an event loop over their share of
//! the connections (connection `c` on thread `c % threads`), so the load
//! side costs little next to what it measures: an answer to a connection
//! whose thread is already awake wakes nobody. The bytes on the wire are
//! exactly the request built here; each request's lines carry the time it
//! was first sent (`stamp.rs`; lines of at least 30 bytes), written into
//! the request in place.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::stamp::{self, Stamp};

/// Default count of load threads. One event loop keeps up with 64
/// one-line connections on this project's 2-core reference machine and
/// leaves the other core to what is measured.
pub const CLIENT_THREADS: usize = 1;

/// What the load posts, and where.
#[derive(Debug, Clone)]
pub struct Posting {
    /// Connection `c` goes to `targets[c % targets.len()]`.
    pub targets: Vec<SocketAddr>,
    pub connections: usize,
    /// Threads running the connections' event loops (at least one).
    pub threads: usize,
    /// The writers take request numbers from a shared count until this.
    pub requests: usize,
    /// Lines per request, and bytes per line before its newline.
    pub lines: usize,
    pub size: usize,
    /// (start, time per request): request `n` is not sent before
    /// `start + n * time per request`, which holds a rate over all writers.
    pub pace: Option<(Instant, Duration)>,
}

/// What the writers answered: each request's latency in microseconds,
/// the 503s they retried, and why any connection failed.
#[derive(Debug, Default)]
pub struct Answers {
    pub micros: Vec<u32>,
    pub refused: usize,
    pub errors: Vec<String>,
}

/// The running writer threads of one [`Posting`].
pub struct Writers {
    threads: Vec<std::thread::JoinHandle<Answers>>,
}

impl Writers {
    /// Starts posting. Request numbers come from `next`; storing
    /// `posting.requests` into it makes every writer stop after the
    /// request it is in.
    pub fn start(posting: Posting, next: Arc<AtomicUsize>) -> Writers {
        let posting = Arc::new(posting);
        let count = posting.threads.clamp(1, posting.connections.max(1));
        let threads = (0..count)
            .map(|t| {
                let (posting, next) = (posting.clone(), next.clone());
                std::thread::spawn(move || writer_thread(&posting, t, count, next))
            })
            .collect();
        Writers { threads }
    }

    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(|t| t.is_finished())
    }

    /// Waits for every writer and gathers their answers.
    pub fn join(self) -> Answers {
        let mut all = Answers::default();
        for t in self.threads {
            match t.join() {
                Ok(mut a) => {
                    all.micros.append(&mut a.micros);
                    all.refused += a.refused;
                    all.errors.append(&mut a.errors);
                }
                Err(_) => all.errors.push("an HTTP writer thread panicked".into()),
            }
        }
        all
    }
}

/// One thread's event loop over connections `t`, `t + count`, ...
fn writer_thread(
    posting: &Arc<Posting>,
    t: usize,
    count: usize,
    next: Arc<AtomicUsize>,
) -> Answers {
    let mut answers = Answers::default();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            answers.errors.push(format!("HTTP writer runtime: {e}"));
            return answers;
        }
    };
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for c in (t..posting.connections).step_by(count) {
            let (posting, next) = (posting.clone(), next.clone());
            set.spawn(async move { connection(&posting, c, &next).await });
        }
        while let Some(done) = set.join_next().await {
            match done {
                Ok(Ok((mut micros, refused))) => {
                    answers.micros.append(&mut micros);
                    answers.refused += refused;
                }
                Ok(Err(e)) => answers.errors.push(e),
                Err(e) => answers.errors.push(format!("an HTTP writer failed: {e}")),
            }
        }
    });
    answers
}

/// One keep-alive connection posting requests until the shared count
/// reaches `posting.requests`; returns each request's latency in
/// microseconds and how many attempts were refused with 503.
/// A 503 (logferry's backpressure answer) is retried after its
/// `Retry-After`; any other failure ends the connection's run.
async fn connection(
    posting: &Posting,
    writer: usize,
    next: &AtomicUsize,
) -> Result<(Vec<u32>, usize), String> {
    let addr = posting.targets[writer % posting.targets.len()];
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (input, mut out) = stream.into_split();
    let mut input = BufReader::new(input);
    let (mut request, slots) = request(writer, posting.lines, posting.size);
    let (mut micros, mut refused) = (Vec::new(), 0);
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= posting.requests {
            break;
        }
        if let Some((start, every)) = posting.pace {
            tokio::time::sleep_until((start + every * n as u32).into()).await;
        }
        let start = Instant::now();
        let now = Stamp::now();
        for &at in &slots {
            request[at..at + stamp::WIDTH].copy_from_slice(now.as_bytes());
        }
        loop {
            out.write_all(&request)
                .await
                .map_err(|e| format!("send: {e}"))?;
            match read_response(&mut input).await? {
                (200, _) => break,
                (503, retry) => {
                    refused += 1;
                    tokio::time::sleep(Duration::from_secs(retry.unwrap_or(1))).await;
                }
                (status, _) => return Err(format!("logferry answered {status}")),
            }
        }
        micros.push(start.elapsed().as_micros().min(u32::MAX as u128) as u32);
    }
    Ok((micros, refused))
}

/// The request a writer sends over and over: `lines` lines of `size`
/// bytes, each starting with the writer's and the line's number, then a
/// stamp where there is room; and where each stamp starts in it (none
/// for lines too short), to be rewritten before each request.
fn request(writer: usize, lines: usize, size: usize) -> (Vec<u8>, Vec<usize>) {
    let mut body = Vec::with_capacity(lines * (size + 1));
    let blank = Stamp::at(0);
    for i in 0..lines {
        let digits = format!("{writer:04}{i:04}");
        stamp::numbered_line(
            &mut body,
            &digits.as_bytes()[digits.len() - 8..],
            size,
            &blank,
        );
    }
    let head = format!(
        "POST /bench HTTP/1.1\r\nhost: bench\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut request = head.into_bytes();
    let slots = if stamp::fits(8, size) {
        // after the 8 digits and the space of each line
        (0..lines)
            .map(|i| request.len() + i * (size + 1) + 9)
            .collect()
    } else {
        Vec::new()
    };
    request.extend_from_slice(&body);
    (request, slots)
}

/// Reads one HTTP/1.1 response: its status and `Retry-After` seconds.
pub async fn read_response(
    input: &mut (impl AsyncBufRead + Unpin),
) -> Result<(u16, Option<u64>), String> {
    let mut line = String::new();
    let e = |e: std::io::Error| format!("read response: {e}");
    input.read_line(&mut line).await.map_err(e)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {line:?}"))?;
    let (mut length, mut retry) = (0usize, None);
    loop {
        line.clear();
        if input.read_line(&mut line).await.map_err(e)? == 0 {
            return Err("connection closed mid-response".into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((name, value)) = l.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value
                    .parse()
                    .map_err(|_| format!("bad content-length {value}"))?;
            } else if name.eq_ignore_ascii_case("retry-after") {
                retry = value.parse().ok();
            }
        }
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await.map_err(e)?;
    Ok((status, retry))
}

/// Request latency percentiles.
#[derive(Debug, Clone, Copy, Default)]
pub struct Latency {
    /// Attempts answered 503 (backpressure) and sent again.
    pub refused: usize,
    p50: u32,
    p90: u32,
    p99: u32,
    p999: u32,
    max: u32,
}

impl Latency {
    pub fn of(mut micros: Vec<u32>, refused: usize) -> Latency {
        if micros.is_empty() {
            return Latency {
                refused,
                ..Latency::default()
            };
        }
        micros.sort_unstable();
        let at = |q: f64| micros[((micros.len() - 1) as f64 * q).round() as usize];
        Latency {
            refused,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max: micros[micros.len() - 1],
        }
    }
}

impl Latency {
    /// The median and the 99th percentile, in milliseconds.
    pub fn p50_p99_ms(&self) -> (f64, f64) {
        (self.p50 as f64 / 1000.0, self.p99 as f64 / 1000.0)
    }
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |us: u32| us as f64 / 1000.0;
        write!(
            f,
            "latency ms p50 {:.2}, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2}; {} attempts refused (503) and retried",
            ms(self.p50),
            ms(self.p90),
            ms(self.p99),
            ms(self.p999),
            ms(self.max),
            self.refused
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_the_right_ranks() {
        let l = Latency::of((1..=1000).rev().collect(), 0);
        assert_eq!((l.p50, l.p90, l.p99, l.max), (501, 900, 990, 1000));
        assert_eq!(Latency::of(Vec::new(), 3).max, 0);
    }

    #[test]
    fn requests_have_a_stamp_slot_per_line_where_lines_have_room() {
        let (r, slots) = request(7, 3, 40);
        assert_eq!(slots.len(), 3);
        let body = &r[r.len() - 3 * 41..];
        assert!(body.starts_with(b"00070000 t=0000000000000000000 xxxxxxxxx\n"));
        for at in slots {
            assert_eq!(&r[at..at + stamp::WIDTH], Stamp::at(0).as_bytes());
        }
        let (r, slots) = request(7, 3, 29);
        assert!(slots.is_empty());
        assert!(r.ends_with(b"00070002xxxxxxxxxxxxxxxxxxxxx\n"));
    }

    #[tokio::test]
    async fn a_response_is_read_whole_with_its_retry_after() {
        let wire = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\ncontent-length: 4\r\n\r\nbusyHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        let mut r = BufReader::new(&wire[..]);
        assert_eq!(read_response(&mut r).await.unwrap(), (503, Some(2)));
        assert_eq!(read_response(&mut r).await.unwrap(), (200, None));
        assert!(read_response(&mut r).await.is_err());
    }
}
