//! `logferry replay FILE --to HOST:PORT`: sends the records of a
//! dead-letter file (or any file of Forward-protocol frames) to a forward
//! receiver, with the forward sink's own client (chunking, TLS, shared
//! key), asking for an ack per chunk, and says how many were acknowledged.
//!
//! The file is read as a stream of frames, so it may be larger than memory:
//! the sink's queue (8 MiB) bounds what is held at once.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;

use super::{ForwardSink, ForwardSinkConfig};
use crate::ack::AckHandle;
use crate::buffer::{queue, BufferConfig};
use crate::event::{Batch, Records};
use crate::metrics::Registry;
use crate::protocol::forward::{next_frame, Limits, Scan};
use crate::sinks::settle::Settler;
use crate::sinks::{SinkMetrics, SinkRunner};

/// Where and how to replay.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayArgs {
    /// The file of Forward-protocol frames (a sink's `dead_letter` file).
    pub file: PathBuf,
    /// The forward receiver, `host:port`.
    #[arg(long)]
    pub to: String,
    /// Connect with TLS, trusting this CA file (PEM).
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// Name to verify the receiver's certificate against (with --tls-ca).
    #[arg(long)]
    pub tls_server_name: Option<String>,
    /// Shared key, if the receiver requires the handshake.
    #[arg(long, env = "LOGFERRY_SHARED_KEY")]
    pub shared_key: Option<String>,
    /// How long to keep trying once every record has been read.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    crate::config::units::parse_duration(s)
}

/// What a replay did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayReport {
    /// Frames read from the file.
    pub frames: usize,
    /// Records in them.
    pub records: usize,
    /// Records the receiver acknowledged.
    pub acknowledged: usize,
}

fn sink_config(args: &ReplayArgs) -> Result<ForwardSinkConfig, String> {
    let mut t = toml::Table::new();
    let mut server = toml::Table::new();
    server.insert("address".into(), args.to.clone().into());
    t.insert(
        "servers".into(),
        toml::Value::Array(vec![toml::Value::Table(server)]),
    );
    t.insert("require_ack".into(), true.into());
    t.insert(
        "drain_timeout".into(),
        format!("{}ms", args.timeout.as_millis()).into(),
    );
    if let Some(key) = &args.shared_key {
        t.insert("shared_key".into(), key.clone().into());
    }
    if let Some(ca) = &args.tls_ca {
        let mut tls = toml::Table::new();
        tls.insert("ca_file".into(), ca.display().to_string().into());
        if let Some(name) = &args.tls_server_name {
            tls.insert("server_name".into(), name.clone().into());
        }
        t.insert("tls".into(), tls.into());
    }
    let config: ForwardSinkConfig = serde::Deserialize::deserialize(toml::Value::Table(t))
        .map_err(|e| format!("--to {}: {e}", args.to))?;
    config.validate()?;
    Ok(config)
}

/// Replays `args.file`; an error if the file cannot be read or holds
/// something that is not a Forward-protocol frame (nothing after it is sent).
pub async fn replay(args: &ReplayArgs) -> Result<ReplayReport, String> {
    let config = sink_config(args)?;
    let registry = Registry::new();
    let metrics = SinkMetrics::new(&registry, "replay");
    let retry = config.retry_config();
    let settler = Settler::new("replay", &registry, metrics.clone(), retry, None);
    let sink = ForwardSink::new("replay", config, &registry, settler, metrics)?;
    let (tx, rx) = queue("replay", BufferConfig::default(), &registry);
    let done = crate::sinks::spawn("replay", SinkRunner::Forward(Box::new(sink)), rx)
        .map_err(|e| format!("cannot start the forward client: {e}"))?;
    let acked = Arc::new(AtomicUsize::new(0));
    let mut report = ReplayReport::default();
    let read = read_frames(&args.file, |tag, entries, count| {
        report.frames += 1;
        report.records += count;
        let acked = acked.clone();
        let batch = Batch::new(tag.into(), Records::Entries(entries), count).with_ack(
            AckHandle::new(move |o| {
                if o.is_done() {
                    acked.fetch_add(count, Ordering::AcqRel);
                }
            }),
        );
        let tx = tx.clone();
        async move { tx.send(batch).await.map_err(|e| e.to_string()) }
    })
    .await;
    drop(tx);
    let _ = done.await;
    report.acknowledged = acked.load(Ordering::Acquire);
    read.map(|()| report)
}

/// Calls `each` with every frame of `path`, in order.
async fn read_frames<F, Fut>(path: &Path, mut each: F) -> Result<(), String>
where
    F: FnMut(String, bytes::Bytes, usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let limits = Limits {
        max_frame_bytes: 1 << 30,
        max_decompressed_bytes: 1 << 30,
    };
    let mut buf = BytesMut::with_capacity(1 << 20);
    let mut scan = Scan::default();
    let mut read_total = 0usize;
    let mut eof = false;
    loop {
        // where the next frame starts in the file
        let offset = read_total - buf.len();
        match next_frame(&mut buf, &limits, &mut scan) {
            Ok(Some(frame)) => {
                each(frame.tag, frame.entries, frame.count).await?;
                continue;
            }
            Ok(None) if eof => {
                if buf.is_empty() {
                    return Ok(());
                }
                return Err(format!(
                    "{}: the file ends inside a frame ({} bytes after byte {offset}); \
                     the records before it were sent",
                    path.display(),
                    buf.len()
                ));
            }
            Ok(None) => {}
            Err(e) => {
                return Err(format!(
                    "{}: not a Forward-protocol frame near byte {offset}: {e}",
                    path.display()
                ))
            }
        }
        let mut chunk = vec![0u8; 1 << 20];
        let n = file
            .read(&mut chunk)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            eof = true;
        }
        read_total += n;
        buf.extend_from_slice(&chunk[..n]);
    }
}
