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
}
