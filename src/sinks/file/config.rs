//! Configuration of the file sink.

use std::time::Duration;

use serde::Deserialize;

use super::path::PathTemplate;
use crate::config::units;
use crate::format::FormatConfig;

/// `type = "file"`: appends formatted records to files.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileSinkConfig {
    /// Output path. May contain `${tag}` (the record's tag), `${tag[N]}`
    /// (its Nth dot-separated part, from 0) and strftime sequences such as
    /// `%Y-%m-%d` (local time when written). Without placeholders every
    /// matched record goes to one unified file.
    pub path: String,
    /// `"raw"` (default), `"json"`, `"msgpack"`, or a template table.
    #[serde(default)]
    pub format: FormatConfig,
    /// Rotate a file before a write would take it past this size.
    #[serde(default, deserialize_with = "units::opt_bytes")]
    pub rotate_bytes: Option<usize>,
    /// Rotate a file once it has been open this long.
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub rotate_interval: Option<Duration>,
    /// Bytes gathered before a write; a write also happens whenever the
    /// sink's queue runs empty, so records never wait for a full buffer.
    #[serde(
        default = "default_write_buffer_bytes",
        deserialize_with = "units::bytes"
    )]
    pub write_buffer_bytes: usize,
    /// How long records nobody waits for may wait for more before they are
    /// written. Unset: 0 on a memory queue (written as soon as the queue
    /// runs empty), [`crate::sinks::DISK_FLUSH_INTERVAL`] on a disk
    /// buffer (see [`FileSinkConfig::flush_interval`]). A batch whose
    /// client waits for its acknowledgement, or `write_buffer_bytes` of
    /// records, is written at once.
    #[serde(
        default,
        rename = "flush_interval",
        deserialize_with = "units::opt_duration"
    )]
    pub flush_interval_set: Option<Duration>,
    /// `fsync` each write before acknowledging its records.
    #[serde(default)]
    pub fsync: bool,
    /// Most files kept open at once (paths with `${tag}` or dates); the
    /// least recently used are closed first.
    #[serde(default = "default_max_open_files")]
    pub max_open_files: usize,
}

const fn default_write_buffer_bytes() -> usize {
    1024 * 1024
}

const fn default_max_open_files() -> usize {
    256
}

impl FileSinkConfig {
    /// How long records may wait for more: the setting, else 0 on a
    /// memory queue and [`crate::sinks::DISK_FLUSH_INTERVAL`] on a disk
    /// buffer (`disk`).
    pub fn flush_interval(&self, disk: bool) -> Duration {
        crate::sinks::flush_interval(self.flush_interval_set, disk)
    }

    pub fn validate(&self) -> Result<(), String> {
        self.format.validate()?;
        PathTemplate::parse(&self.path)?;
        if self.path.ends_with('/') {
            return Err(format!(
                "path {:?} ends in `/`: it must name a file, e.g. \"{}unified.log\"",
                self.path, self.path
            ));
        }
        if std::path::Path::new(&self.path).is_dir() {
            return Err(format!(
                "path {:?} is a directory: it must name a file in it, e.g. \"{}/unified.log\"",
                self.path, self.path
            ));
        }
        if self.rotate_bytes == Some(0) {
            return Err("rotate_bytes must be greater than 0".into());
        }
        if self
            .rotate_interval
            .is_some_and(|d| d < Duration::from_secs(1))
        {
            return Err("rotate_interval must be at least 1s".into());
        }
        if self.max_open_files == 0 {
            return Err("max_open_files must be at least 1".into());
        }
        Ok(())
    }
}
