//! The keys of a multiline filter's table.

use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::filters::field::FieldPath;
use crate::format::multiline::{MultilineConfig, Preset, Presets};

/// The keys of a multiline filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultilineFilterConfig {
    /// A built-in rule set: `"java"`, `"python"`, `"go"`, `"ruby"`,
    /// `"cri"`, `"docker"`, or a chain `["cri", "java"]` (as the tail
    /// source's `multiline.parser`).
    #[serde(default)]
    pub parser: Option<Presets>,
    /// Your own rule instead of `parser`: a line matching this regex starts
    /// a record.
    #[serde(default)]
    pub start: Option<String>,
    /// With `start`: lines matching this regex continue the record; unset:
    /// every line not matching `start` does.
    #[serde(default, rename = "continue")]
    pub continue_: Option<String>,
    /// The top-level field holding the line; records without it (or where
    /// it is not text) pass unchanged.
    #[serde(default = "default_key")]
    pub key: String,
    /// Fields whose values tell streams apart (a pod and container, a
    /// host and file): lines are joined only with lines of the same tag
    /// and the same values. Empty: the tag alone.
    #[serde(default)]
    pub stream_key: Vec<String>,
    /// Most lines in one record.
    #[serde(default = "default_max_lines")]
    pub max_lines: usize,
    /// Most bytes in one record.
    #[serde(default = "default_max_bytes", deserialize_with = "units::bytes")]
    pub max_bytes: usize,
    /// A record no line was added to for this long is sent.
    #[serde(
        default = "default_flush_timeout",
        deserialize_with = "units::duration"
    )]
    pub flush_timeout: Duration,
    /// Most streams held at once: a `stream_key` with many values (a
    /// request id) would otherwise grow without bound. A line of a new
    /// stream past it sends the record of the stream that waited longest
    /// for a line, as it is (`ended_by="max_streams"`).
    #[serde(default = "default_max_streams")]
    pub max_streams: usize,
    /// When a client that waits for its answer (an HTTP request with the
    /// source's `ack = "sinks"`, a forward chunk with an ack, an OTLP
    /// request) is answered for lines this filter holds: `"held"`
    /// (default) as soon as they are held, so a client posting one line per
    /// request is answered at once and its trace still joined, but a crash
    /// (kill -9) before the joined record reaches its sinks loses those
    /// lines although their client was answered; `"sinks"` once the joined
    /// record is accepted by its sinks, like every other record (such a
    /// client then waits for `flush_timeout` on each held line). Batches
    /// nobody waits for (a tailed file, a Kafka topic) are always settled
    /// with the joined record: their source never moves past a held line.
    #[serde(default)]
    pub ack: HeldAck,
}

/// When a waiting client is answered for lines a multiline filter holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldAck {
    /// Once the lines are held.
    #[default]
    Held,
    /// Once the joined record is accepted by its sinks.
    Sinks,
}

fn default_key() -> String {
    "message".into()
}
/// The same bounds as the tail source's.
fn default_max_lines() -> usize {
    MultilineConfig::preset(Preset::Java).max_lines
}
fn default_max_bytes() -> usize {
    MultilineConfig::preset(Preset::Java).max_bytes
}
fn default_flush_timeout() -> Duration {
    MultilineConfig::preset(Preset::Java).flush_timeout
}
/// Ten thousand pods' containers, or a busy node's request ids for a
/// second; a stream costs its held lines and about 200 bytes more.
const fn default_max_streams() -> usize {
    10_000
}

impl MultilineFilterConfig {
    /// The rule keys, as the tail source's `multiline` table.
    pub(super) fn rules(&self) -> MultilineConfig {
        MultilineConfig {
            parser: self.parser.clone(),
            start: self.start.clone(),
            continue_: self.continue_.clone(),
            start_pattern: None,
            max_lines: self.max_lines,
            max_bytes: self.max_bytes,
            flush_timeout: self.flush_timeout,
            timeout: None,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.key.is_empty() {
            return Err("key must not be empty".into());
        }
        if self.max_streams == 0 {
            return Err("max_streams must be at least 1".into());
        }
        for k in &self.stream_key {
            FieldPath::parse(k).map_err(|e| format!("stream_key: {e}"))?;
        }
        self.rules().compile().map(|_| ())
    }

    /// What `validate` says about these keys: the trade-off of answering
    /// waiting clients for held lines, if that is what they ask for.
    pub fn warning(&self) -> Option<String> {
        (self.ack == HeldAck::Held).then(|| {
            "a client waiting for its answer (an HTTP request, a forward chunk with an ack) is answered as soon as this filter holds its lines (ack = \"held\", the default): if the process is killed before the joined record reaches its sinks, those lines are lost although their client was answered 200; ack = \"sinks\" answers once the record is delivered (a client posting one line per request then waits up to flush_timeout for each)".to_string()
        })
    }
}
