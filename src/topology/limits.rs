//! The whole configuration against the process's limits: descriptors it
//! may need against the open-file limit, records a source may accept that
//! a sink can never send.

use super::config::Config;
use super::kinds::{SinkKind, SourceKind};
use crate::limits::{nofile, RESERVED_DESCRIPTORS};
use crate::metrics::Registry;

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
            SourceKind::Otlp(o) => o.http.max_connections as u64,
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
            let reaches =
                super::kinds::known_tag(&source.kind).is_none_or(|tag| sink.pattern.matches(tag));
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
