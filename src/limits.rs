//! The process's open-file limit: raised to its maximum at start, and
//! compared with what the configuration may need, so running out of
//! descriptors is announced at start rather than found under load.

use crate::config::{units, Config};
use crate::metrics::Registry;
use crate::sinks::SinkKind;
use crate::sources::SourceKind;

/// Descriptors kept aside for what the configuration does not count: the
/// runtimes' epoll and event descriptors, listeners, standard streams
/// (about 18 for a forward source, a file sink and the API), the API's
/// connections and checkpoints.
pub const RESERVED_DESCRIPTORS: u64 = 32;

/// The soft and hard `RLIMIT_NOFILE`.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux only
pub fn nofile() -> std::io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((lim.rlim_cur as u64, lim.rlim_max as u64))
}

/// Raises the soft open-file limit to the hard one (the soft default of
/// 1024 is far below what a busy forward source holds) and logs both, once.
/// Call once, early, before any thread opens descriptors.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux only
pub fn raise_nofile() {
    let (soft, hard) = match nofile() {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open-file limit");
            return;
        }
    };
    if soft >= hard {
        tracing::info!(soft, hard, "open-file limit");
        return;
    }
    let lim = libc::rlimit {
        rlim_cur: hard as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == 0 {
        tracing::info!(
            soft = hard,
            hard,
            was = soft,
            "open-file limit raised to the hard limit"
        );
    } else {
        let e = std::io::Error::last_os_error();
        tracing::info!(soft, hard, error = %e, "open-file limit (could not raise it to the hard limit)");
    }
}

/// Descriptors the configuration may hold at once: every forward and tcp
/// source's `max_connections`, every file a file sink may keep open, a connection
/// per forward sink server, and a reserve.
pub fn descriptors_needed(config: &Config) -> u64 {
    let connections: u64 = config
        .sources
        .iter()
        .map(|s| match &s.kind {
            SourceKind::Forward(f) => f.max_connections as u64,
            SourceKind::Http(h) => h.max_connections as u64,
            SourceKind::Tcp(t) => t.max_connections as u64,
            // by default the tail's budget is a share of the limit itself
            SourceKind::Tail(t) => t.max_open_files.unwrap_or(0) as u64,
            _ => 0,
        })
        .sum();
    let files: u64 = config
        .sinks
        .iter()
        .map(|s| match &s.kind {
            SinkKind::File(f) if f.path.contains("${tag") || f.path.contains('%') => {
                f.max_open_files as u64
            }
            SinkKind::File(_) => 1,
            SinkKind::Forward(f) => f.servers.len() as u64,
            _ => 0,
        })
        .sum();
    connections + files + RESERVED_DESCRIPTORS
}

/// Warns (and counts) when the configuration may need more descriptors
/// than the open-file limit allows.
pub fn check(config: &Config, metrics: &Registry) {
    for (_, warning) in oversized_records(config) {
        metrics
            .counter(
                "logferry_startup_warnings_total",
                "Problems found at start that do not stop logferry, by kind (nofile).",
                &[("kind", "record_limits")],
            )
            .inc();
        tracing::warn!("{warning}");
    }
    let Ok((soft, _)) = nofile() else { return };
    let needed = descriptors_needed(config);
    if needed > soft {
        metrics
            .counter(
                "logferry_startup_warnings_total",
                "Problems found at start that do not stop logferry, by kind (nofile).",
                &[("kind", "nofile")],
            )
            .inc();
        tracing::warn!(needed, limit = soft,
            "the open-file limit is lower than the configuration may need (max_connections of the forward sources, files of the file sinks, and {RESERVED_DESCRIPTORS} in reserve): raise the limit (ulimit -n, systemd LimitNOFILE=) or lower max_connections; when descriptors run out, new connections wait and files cannot be opened");
    }
}

/// The `[limits]` table: limits of the whole process.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Memory budget shared by every connection's read buffer and every
    /// batch not yet settled by all its sinks (in memory queues or being
    /// written). When it is used up, sources stop reading until sinks
    /// catch up. Per-sink `buffer.max_bytes` still applies below it.
    #[serde(default = "default_memory", deserialize_with = "units::bytes")]
    pub memory: usize,
}

const fn default_memory() -> usize {
    crate::memory::DEFAULT_MEMORY_BYTES
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            memory: default_memory(),
        }
    }
}

impl LimitsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.memory < crate::memory::MIN_MEMORY_BYTES {
            return Err(format!(
                "memory = {} is below the least allowed, 1MiB; write e.g. memory = \"64MiB\"",
                self.memory
            ));
        }
        Ok(())
    }
}

/// librdkafka's `message.max.bytes` when not set.
const KAFKA_MESSAGE_MAX_BYTES: usize = 1_000_000;

/// The largest record a source accepts as configured, and the key that
/// sets it; `None` where a record's size is not bounded by one key, or
/// where the client is told when a record is set aside (HTTP: 413).
fn largest_record(kind: &SourceKind) -> Option<(usize, &'static str)> {
    match kind {
        SourceKind::Tail(c) => Some((c.max_line_bytes, "max_line_bytes")),
        SourceKind::Tcp(c) => Some((c.max_line_bytes, "max_line_bytes")),
        SourceKind::Fuse(c) => Some((c.max_line_bytes, "max_line_bytes")),
        _ => None,
    }
}

/// Sources that accept records larger than a sink they may feed can ever
/// send: such a record would be set aside (dead-lettered, or dropped and
/// logged), so `validate` and the start say so. Each warning with the name
/// of its sink.
pub fn oversized_records(config: &Config) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for sink in &config.sinks {
        let SinkKind::Kafka(k) = &sink.kind else {
            continue;
        };
        let limit = k
            .librdkafka_options
            .get("message.max.bytes")
            .and_then(|v| v.parse().ok())
            .unwrap_or(KAFKA_MESSAGE_MAX_BYTES);
        for source in &config.sources {
            let Some((largest, key)) = largest_record(&source.kind) else {
                continue;
            };
            let reaches = crate::validate::known_tag(&source.kind)
                .is_none_or(|tag| sink.pattern.matches(tag));
            if reaches && largest > limit {
                out.push((sink.name.clone(), format!(
                    "[sources.{}] accepts records of up to {largest} bytes ({key}) but [sinks.{}] can send messages of at most {limit} bytes (librdkafka's message.max.bytes): a larger record is set aside (its dead_letter file, or dropped and logged) while the others go on; lower {key} or raise message.max.bytes (and the topic's max.message.bytes)",
                    source.name, sink.name
                )));
            }
        }
    }
    out
}
