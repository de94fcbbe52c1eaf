//! An HTTP/1.1 load client shared by the HTTP benchmarks (`http-kafka`,
//! `http-writer`): keep-alive connections posting newline-delimited
//! lines, retrying logferry's 503 backpressure answers, with request
//! latency percentiles.
//!
//! Blocking, one thread per connection: the load side needs no runtime of
//! its own, and the bytes on the wire are exactly the request built here.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What one [`http_writer`] thread returns.
pub type Answers = Result<(Vec<u32>, usize), String>;

/// Waits for every [`http_writer`] thread: the answer times (µs) of all,
/// the 503s they retried, and why any of them failed.
pub fn join_writers(
    writers: Vec<std::thread::JoinHandle<Answers>>,
) -> (Vec<u32>, usize, Vec<String>) {
    let mut micros = Vec::new();
    let (mut refused, mut errors) = (0, Vec::new());
    for w in writers {
        match w.join() {
            Ok(Ok((mut m, r))) => {
                micros.append(&mut m);
                refused += r;
            }
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("an HTTP writer panicked".into()),
        }
    }
    (micros, refused, errors)
}

/// One keep-alive connection posting requests (taken from a shared count)
/// until all are sent; returns each request's latency in microseconds and
/// how many attempts were refused with 503.
/// A 503 (logferry's backpressure answer) is retried after its
/// `Retry-After`; any other failure ends the run. With `pace`
/// (start, time per request), request `n` is not sent before
/// `start + n * time per request`, which holds a rate over all writers.
pub fn http_writer(
    addr: SocketAddr,
    writer: usize,
    next: &AtomicUsize,
    requests: usize,
    lines: usize,
    size: usize,
    pace: Option<(Instant, Duration)>,
) -> Answers {
    let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut out = stream.try_clone().map_err(|e| e.to_string())?;
    let mut input = BufReader::new(stream);
    let mut body = vec![b'x'; lines * (size + 1)];
    for (i, line) in body.chunks_mut(size + 1).enumerate() {
        let digits = format!("{writer:04}{i:04}");
        line[..8].copy_from_slice(&digits.as_bytes()[digits.len() - 8..]);
        line[size] = b'\n';
    }
    let head = format!(
        "POST /bench HTTP/1.1\r\nhost: bench\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(&body);
    let (mut micros, mut refused) = (Vec::new(), 0);
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= requests {
            break;
        }
        if let Some((start, every)) = pace {
            let due = start + every * n as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let start = Instant::now();
        loop {
            out.write_all(&request).map_err(|e| format!("send: {e}"))?;
            match read_response(&mut input)? {
                (200, _) => break,
                (503, retry) => {
                    refused += 1;
                    std::thread::sleep(Duration::from_secs(retry.unwrap_or(1)));
                }
                (status, _) => return Err(format!("logferry answered {status}")),
            }
        }
        micros.push(start.elapsed().as_micros().min(u32::MAX as u128) as u32);
    }
    Ok((micros, refused))
}

/// Reads one HTTP/1.1 response: its status and `Retry-After` seconds.
pub fn read_response(input: &mut impl BufRead) -> Result<(u16, Option<u64>), String> {
    let mut line = String::new();
    let e = |e: std::io::Error| format!("read response: {e}");
    input.read_line(&mut line).map_err(e)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {line:?}"))?;
    let (mut length, mut retry) = (0usize, None);
    loop {
        line.clear();
        if input.read_line(&mut line).map_err(e)? == 0 {
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
    input.read_exact(&mut body).map_err(e)?;
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
    fn a_response_is_read_whole_with_its_retry_after() {
        let wire = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\ncontent-length: 4\r\n\r\nbusyHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        let mut r = BufReader::new(&wire[..]);
        assert_eq!(read_response(&mut r).unwrap(), (503, Some(2)));
        assert_eq!(read_response(&mut r).unwrap(), (200, None));
        assert!(read_response(&mut r).is_err());
    }
}
