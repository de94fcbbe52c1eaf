//! `bench forward-writer`: Fluentd forward-protocol clients, as agents
//! and loggers (Fluency, fluent-logger) are: `--workers` connections send
//! PackedForward chunks (CompressedPackedForward with `--gzip`), over TLS
//! with `--tls`, optionally at a fixed rate and waiting for each chunk's
//! ack (`--ack`, Fluentd's `require_ack_response`); reports what was sent
//! and acknowledged. Each record's message carries the time its chunk was
//! built, just before it is sent (`stamp.rs`; records of at least 34
//! bytes).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::protocol::forward::{parse_ack, write_message_entry, write_packed_forward};
use crate::protocol::msgpack::write;

use super::load::tls_client;
use super::stamp::{self, Stamp};

#[derive(Debug, clap::Args)]
pub struct ForwardWriterArgs {
    /// Receiver `HOST:PORT`.
    #[arg(long)]
    pub address: SocketAddr,
    /// Records to send in all.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Bytes of each record's `message` (at least 34 to carry the
    /// write-time stamp).
    #[arg(long, default_value_t = 100)]
    pub size: usize,
    /// Records per PackedForward chunk.
    #[arg(long, default_value_t = 1000)]
    pub chunk_records: usize,
    /// Connections sending at once.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Records per second over all workers; 0 sends as fast as possible.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Ask for an ack for every chunk and wait for it before the next.
    #[arg(long)]
    pub ack: bool,
    /// Send CompressedPackedForward (gzip) chunks.
    #[arg(long)]
    pub gzip: bool,
    /// Connect over TLS, trusting the certificate authority in `--ca`.
    #[arg(long, requires = "ca")]
    pub tls: bool,
    /// PEM file of the certificate authority (with `--tls`).
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// Tag of the records.
    #[arg(long, default_value = "bench")]
    pub tag: String,
}

/// How long to wait for an ack before counting the chunk as an error.
const ACK_TIMEOUT: Duration = Duration::from_secs(60);

/// What one worker (or all of them) did.
#[derive(Debug, Default)]
pub(super) struct Sent {
    /// Records written to the connection.
    pub(super) records: usize,
    /// Bytes on the wire (frames, compressed if `--gzip`).
    bytes: u64,
    /// Chunks whose ack came back with their id.
    acked_chunks: usize,
    acked_records: usize,
    error: Option<String>,
}

pub fn run(a: ForwardWriterArgs) -> Result<(), String> {
    if a.records == 0 || a.size == 0 || a.chunk_records == 0 || a.workers == 0 {
        return Err("records, size, chunk-records and workers must be positive".into());
    }
    if !a.rate.is_finite() || a.rate < 0.0 {
        return Err("rate must be 0 (unlimited) or more".into());
    }
    let a = Arc::new(a);
    let chunks = a.records.div_ceil(a.chunk_records);
    let start = Instant::now();
    let (total, errors) = send(&a, start);
    let secs = start.elapsed().as_secs_f64();
    let acks = if a.ack {
        format!(
            "{} of {chunks} chunks acknowledged ({} records)",
            total.acked_chunks, total.acked_records
        )
    } else {
        "no acks asked".into()
    };
    println!(
        "sent {} of {} records, {} bytes{} in {chunks} chunk(s) over {} connection(s){} in {secs:.3} s: {:.0} records/s, {:.2} MB/s; {acks}; {} error(s)",
        total.records,
        a.records,
        total.bytes,
        if a.gzip { " (gzip)" } else { "" },
        a.workers,
        if a.tls { " (TLS)" } else { "" },
        total.records as f64 / secs,
        total.bytes as f64 / secs / 1e6,
        errors.len()
    );
    for e in &errors {
        eprintln!("forward-writer: {e}");
    }
    if !errors.is_empty() || total.records < a.records {
        return Err(format!(
            "{} record(s) not sent",
            a.records - total.records.min(a.records)
        ));
    }
    if a.ack && total.acked_records < a.records {
        return Err(format!(
            "{} record(s) not acknowledged",
            a.records - total.acked_records
        ));
    }
    Ok(())
}

/// Runs `a.workers` connections until every chunk is sent; what they
/// sent in all, and their errors.
pub(super) fn send(a: &Arc<ForwardWriterArgs>, start: Instant) -> (Sent, Vec<String>) {
    let chunks = a.records.div_ceil(a.chunk_records);
    let next = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..a.workers)
        .map(|w| {
            let (a, next) = (a.clone(), next.clone());
            std::thread::spawn(move || worker(&a, w, &next, chunks, start))
        })
        .collect();
    let mut total = Sent::default();
    let mut errors = Vec::new();
    for w in workers {
        let s = w.join().unwrap_or_else(|_| Sent {
            error: Some("worker panicked".into()),
            ..Sent::default()
        });
        total.records += s.records;
        total.bytes += s.bytes;
        total.acked_chunks += s.acked_chunks;
        total.acked_records += s.acked_records;
        errors.extend(s.error);
    }
    (total, errors)
}

/// One connection: takes chunk numbers from `next` until all are sent.
fn worker(
    a: &ForwardWriterArgs,
    w: usize,
    next: &AtomicUsize,
    chunks: usize,
    start: Instant,
) -> Sent {
    let mut sent = Sent::default();
    if let Err(e) = send_chunks(a, w, next, chunks, start, &mut sent) {
        sent.error = Some(format!("worker {w}: {e}"));
    }
    sent
}

fn send_chunks(
    a: &ForwardWriterArgs,
    w: usize,
    next: &AtomicUsize,
    chunks: usize,
    start: Instant,
    sent: &mut Sent,
) -> Result<(), String> {
    let tcp = TcpStream::connect(a.address).map_err(|e| format!("connect {}: {e}", a.address))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(ACK_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut conn = match (&a.ca, a.tls) {
        (Some(ca), true) => Conn::Tls(Box::new(tls_client(tcp, ca)?)),
        _ => Conn::Plain(tcp),
    };
    let mut reply = Vec::new();
    loop {
        let c = next.fetch_add(1, Ordering::Relaxed);
        if c >= chunks {
            break;
        }
        let first = c * a.chunk_records;
        let n = a.chunk_records.min(a.records - first);
        if a.rate > 0.0 {
            let due = start + Duration::from_secs_f64(first as f64 / a.rate);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let id = format!("w{w}-c{c}");
        let frame = chunk_frame(a, first, n, a.ack.then_some(id.as_bytes()))?;
        conn.write_all(&frame)
            .map_err(|e| format!("send chunk {c}: {e}"))?;
        sent.records += n;
        sent.bytes += frame.len() as u64;
        if a.ack {
            let got =
                read_ack(&mut conn, &mut reply).map_err(|e| format!("ack of chunk {c}: {e}"))?;
            if got != id {
                return Err(format!("ack for {got:?} while waiting for {id:?}"));
            }
            sent.acked_chunks += 1;
            sent.acked_records += n;
        }
    }
    conn.close();
    Ok(())
}

/// One chunk of records `first..first + n`, each
/// `[time, {"message": "<12-digit record number> t=<stamp> xxx…"}]`.
fn chunk_frame(
    a: &ForwardWriterArgs,
    first: usize,
    n: usize,
    chunk: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let mut entries = Vec::with_capacity(n * (a.size + 24));
    let mut message = Vec::with_capacity(a.size + 1);
    let stamp = Stamp::now();
    for i in first..first + n {
        message.clear();
        stamp::numbered_line(&mut message, format!("{i:012}").as_bytes(), a.size, &stamp);
        message.pop(); // the newline: a record's message is the line alone
        write_message_entry(&mut entries, 1_700_000_000, i as u32, &message);
    }
    let mut frame = Vec::with_capacity(entries.len() + 64);
    if !a.gzip {
        write_packed_forward(&mut frame, &a.tag, &entries, n, chunk);
        return Ok(frame);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&entries).map_err(|e| e.to_string())?;
    let packed = gz.finish().map_err(|e| e.to_string())?;
    // CompressedPackedForward: [tag, bin(gzip(entries)), {size, compressed, chunk?}]
    write::array_len(&mut frame, 3);
    write::str(&mut frame, a.tag.as_bytes());
    write::bin_header(&mut frame, packed.len());
    frame.extend_from_slice(&packed);
    write::map_len(&mut frame, if chunk.is_some() { 3 } else { 2 });
    write::str(&mut frame, b"size");
    write::uint(&mut frame, n as u64);
    write::str(&mut frame, b"compressed");
    write::str(&mut frame, b"gzip");
    if let Some(chunk) = chunk {
        write::str(&mut frame, b"chunk");
        write::str(&mut frame, chunk);
    }
    Ok(frame)
}

/// Reads until the bytes in `buf` are one `{"ack": id}` answer.
fn read_ack(conn: &mut Conn, buf: &mut Vec<u8>) -> Result<String, String> {
    buf.clear();
    let mut chunk = [0u8; 512];
    loop {
        if let Some(id) = parse_ack(buf) {
            return Ok(id);
        }
        if buf.len() > 64 * 1024 {
            return Err("the answer is not an ack".into());
        }
        match conn.read(&mut chunk) {
            Ok(0) => return Err("the receiver closed the connection".into()),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// A connection to the receiver, plain or TLS.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Conn {
    /// A clean close: the receiver reads everything before it sees the end.
    fn close(self) {
        let mut tcp = match self {
            Conn::Plain(t) => t,
            Conn::Tls(mut t) => {
                t.conn.send_close_notify();
                let _ = t.flush();
                t.sock
            }
        };
        let _ = tcp.shutdown(std::net::Shutdown::Write);
        let _ = std::io::copy(&mut tcp, &mut std::io::sink());
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(t) => t.read(buf),
            Conn::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(t) => t.write(buf),
            Conn::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(t) => t.flush(),
            Conn::Tls(t) => t.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::forward::{decode_frame, Limits, Mode};

    fn args(gzip: bool) -> ForwardWriterArgs {
        ForwardWriterArgs {
            address: "127.0.0.1:1".parse().unwrap(),
            records: 10,
            size: 20,
            chunk_records: 4,
            workers: 1,
            rate: 0.0,
            ack: true,
            gzip,
            tls: false,
            ca: None,
            tag: "t".into(),
        }
    }

    #[test]
    fn chunks_decode_as_packed_and_compressed_forward_with_their_id() {
        for gzip in [false, true] {
            let frame = chunk_frame(&args(gzip), 4, 3, Some(b"w0-c1")).unwrap();
            let f = decode_frame(bytes::Bytes::from(frame), &Limits::default()).unwrap();
            let want = if gzip {
                Mode::CompressedPackedForward
            } else {
                Mode::PackedForward
            };
            assert_eq!(f.mode, want);
            assert_eq!(f.count, 3);
            assert_eq!(f.options.chunk.as_deref(), Some(&b"w0-c1"[..]));
            assert!(memchr::memmem::find(&f.entries, b"000000000005xxxxxxxx").is_some());
            // 20-byte records have no room for a stamp; 40-byte ones do
            let long = ForwardWriterArgs {
                size: 40,
                ..args(gzip)
            };
            let frame = chunk_frame(&long, 4, 3, None).unwrap();
            let f = decode_frame(bytes::Bytes::from(frame), &Limits::default()).unwrap();
            let at = memchr::memmem::find(&f.entries, b"000000000005 t=").unwrap();
            let stamped = stamp::find(&f.entries[at..]).unwrap();
            assert!(stamped.abs_diff(stamp::now_nanos()) < 60_000_000_000);
        }
    }
}
