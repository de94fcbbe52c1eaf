//! `bench sinks --workload otlp-in`: OTLP/HTTP in. Two keep-alive
//! connections post protobuf `ExportLogsServiceRequest`s of 1,000 log
//! records (100 B string bodies, one resource) to the measured process's
//! OTLP/HTTP receiver, logferry's `otlp` source or Fluent Bit's
//! `opentelemetry` input, which writes them to a file; the clock stops when
//! the file holds a line per record.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::super::filters::{free_port, wait_for_port, LineCount};
use super::super::process::{wait_until_every, Proc};
use super::super::report::Run;
use super::{record_json, Measured, SourceAck, System, CHUNK, DISTINCT_CHUNKS, RECORD_BYTES};

/// Connections posting at once.
const CONNECTIONS: usize = 2;

/// The requests every run posts.
pub struct Requests {
    /// Records posted: whole requests of [`CHUNK`].
    pub records: usize,
    /// The distinct protobuf bodies, posted in turn.
    bodies: Vec<Vec<u8>>,
    /// When logferry's source answers.
    ack: SourceAck,
}

impl Requests {
    pub fn new(records: usize, ack: SourceAck) -> Requests {
        let bodies = (0..DISTINCT_CHUNKS)
            .map(|c| export_request(c * CHUNK, CHUNK).encode_to_vec())
            .collect();
        Requests {
            records: records.div_ceil(CHUNK) * CHUNK,
            bodies,
            ack,
        }
    }

    /// The source's `ack` setting.
    pub fn ack_setting(&self) -> &'static str {
        match self.ack {
            SourceAck::Sinks => "sinks",
            SourceAck::Received => "received",
        }
    }

    /// Posts every request over [`CONNECTIONS`] keep-alive connections,
    /// a 503 (backpressure) posted again after a pause.
    fn send(&self, addr: SocketAddr) -> Result<(), String> {
        let next = AtomicUsize::new(0);
        let total = self.records / CHUNK;
        std::thread::scope(|s| {
            let posters: Vec<_> = (0..CONNECTIONS)
                .map(|_| {
                    s.spawn(|| -> Result<(), String> {
                        let mut conn = Conn::open(addr)?;
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= total {
                                return Ok(());
                            }
                            let body = &self.bodies[i % self.bodies.len()];
                            while conn.post(addr, body)? == 503 {
                                std::thread::sleep(Duration::from_millis(10));
                            }
                        }
                    })
                })
                .collect();
            posters
                .into_iter()
                .try_for_each(|p| p.join().map_err(|_| "a poster panicked".to_string())?)
        })
    }
}

/// One request of `n` log records from `first` on.
pub(super) fn export_request(first: usize, n: usize) -> ExportLogsServiceRequest {
    let records = (first..first + n)
        .map(|n| LogRecord {
            time_unix_nano: 1_700_000_000_000_000_000 + n as u64,
            severity_number: 9,
            severity_text: "info".into(),
            body: Some(AnyValue {
                value: Some(any_value::Value::StringValue(record_json(n))),
            }),
            ..Default::default()
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![KeyValue {
                    key: "service.name".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue("bench".into())),
                    }),
                }],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// A keep-alive HTTP/1.1 connection.
pub(super) struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    pub(super) fn open(addr: SocketAddr) -> Result<Conn, String> {
        let s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        Ok(Conn {
            reader: BufReader::new(s),
        })
    }

    /// Posts `body` to `/v1/logs`; the answer's status (2xx and 503 only).
    pub(super) fn post(&mut self, addr: SocketAddr, body: &[u8]) -> Result<u16, String> {
        let fail = |e: std::io::Error| format!("POST http://{addr}/v1/logs: {e}");
        let s = self.reader.get_mut();
        write!(
            s,
            "POST /v1/logs HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-protobuf\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .map_err(fail)?;
        s.write_all(body).map_err(fail)?;
        let mut line = String::new();
        self.reader.read_line(&mut line).map_err(fail)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("POST http://{addr}/v1/logs: no HTTP answer: {line:?}"))?;
        let mut length = 0usize;
        loop {
            line.clear();
            self.reader.read_line(&mut line).map_err(fail)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut answer = vec![0; length];
        self.reader.read_exact(&mut answer).map_err(fail)?;
        if !(200..300).contains(&status) && status != 503 {
            return Err(format!(
                "POST http://{addr}/v1/logs answered {status}: {}",
                String::from_utf8_lossy(&answer)
            ));
        }
        Ok(status)
    }
}

/// Starts the measured system with an OTLP/HTTP input writing `out`, a
/// line per record (logferry's source answering as `ack` says; with
/// `disk`, logferry's file sink keeps its queue there and Fluent Bit's
/// input its chunks); the process and where it listens.
pub(super) fn start(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    out: &Path,
    ack: &str,
    disk: Option<&Path>,
) -> Result<(Proc, SocketAddr), String> {
    let _ = std::fs::remove_file(out);
    match (system, peer) {
        (System::Logferry, _) => {
            let buffer = disk.map_or(String::new(), |d| {
                format!(
                    "buffer = {{ type = \"disk\", dir = {:?} }}\n",
                    d.display().to_string()
                )
            });
            let mut p = Proc::start(
                dir,
                "logferry-otlp-in",
                &format!(
                    "[sources.in]\ntype = \"otlp\"\naddress = \"127.0.0.1:0\"\nack = {ack:?}\n\n\
                     [sinks.file]\ntype = \"file\"\nmatch = \"**\"\npath = {:?}\nformat = \"json\"\n{buffer}",
                    out.display().to_string()
                ),
            )?;
            let addr = p.address("source=in ")?;
            Ok((p, addr))
        }
        (System::FluentBit, Some(bin)) => {
            let addr = free_port()?;
            let conf = dir.join("fluent-bit-otlp-in.conf");
            let name = out
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let out_dir = out.parent().unwrap_or(dir);
            let (storage_path, storage_type) = match disk {
                Some(d) => (
                    format!("    storage.path {}\n", d.display()),
                    "    storage.type filesystem\n",
                ),
                None => (String::new(), ""),
            };
            std::fs::write(
                &conf,
                format!(
                    "[SERVICE]\n    Flush     1\n    Log_Level warn\n{storage_path}\n\
                     [INPUT]\n    Name   opentelemetry\n    Listen 127.0.0.1\n    Port   {}\n{storage_type}\n\
                     [OUTPUT]\n    Name  file\n    Match *\n    Path  {}\n    File  {name}\n",
                    addr.port(),
                    out_dir.display()
                ),
            )
            .map_err(|e| e.to_string())?;
            let mut cmd = Command::new(bin);
            cmd.arg("-c").arg(&conf).stdout(std::process::Stdio::null());
            let mut p = Proc::spawn(cmd, "fluent-bit")?;
            wait_for_port(addr, &mut p)?;
            Ok((p, addr))
        }
        (System::FluentBit, None) => Err("no Fluent Bit program".into()),
    }
}

pub fn measure_otlp_in(
    dir: &Path,
    system: System,
    peer: Option<&Path>,
    tag: &str,
    load: &Requests,
) -> Result<Measured, String> {
    let out = dir.join(format!("otlp-in-{tag}.log"));
    let (mut p, addr) = start(dir, system, peer, &out, load.ack_setting(), None)?;
    let mut lines = LineCount::new(&out);
    let before = p.sample()?;
    let start = Instant::now();
    std::thread::scope(|s| {
        let sender = s.spawn(|| load.send(addr));
        wait_until_every(Duration::from_millis(5), &mut [&mut p], || {
            let n = lines.count();
            (
                n >= load.records,
                format!("{} holds {n} of {} lines", out.display(), load.records),
            )
        })?;
        sender
            .join()
            .map_err(|_| "the sender panicked".to_string())?
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let after = p.sample()?;
    drop(p);
    let _ = std::fs::remove_file(&out);
    Ok(Measured {
        run: Run {
            seconds,
            records: load.records,
            bytes: (load.records * RECORD_BYTES) as u64,
            cpu: Some(after.cpu_since(&before)),
            peak_rss: Some(after.peak_rss),
        },
        dest_cpu: None,
        stored: None,
    })
}
