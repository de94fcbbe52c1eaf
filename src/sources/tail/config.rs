//! Configuration of the tail source.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::format::multiline::{self, MultilineConfig};

/// `type = "tail"`: follows files as they are written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TailSourceConfig {
    /// Glob patterns of the files to follow (`/var/log/app/*.log`).
    pub paths: Vec<String>,
    /// Glob patterns of files not to follow.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Tag of the records; `*` is replaced by the file's path with `/`
    /// turned into `.` (Fluentd's convention: `app.*` for /var/log/a.log is
    /// `app.var.log.a.log`).
    pub tag: String,
    /// How often the globs are expanded again to find new files.
    #[serde(
        default = "default_refresh_interval",
        deserialize_with = "units::duration"
    )]
    pub refresh_interval: Duration,
    /// Once the reader has caught up with its files, how long it lets new
    /// lines gather before it reads again: a file written one line at a
    /// time is then read (and sent on) once a second in batches, not
    /// once per line (and every tier downstream handles one chunk a
    /// second), at the cost of up to this much latency. A reader
    /// that has not caught up (a backlog, full speed) never waits. 0: read
    /// at every change event.
    #[serde(default = "default_linger", deserialize_with = "units::duration")]
    pub linger: Duration,
    /// How often files are checked for growth when no change event came
    /// (filesystems without inotify, missed events).
    #[serde(
        default = "default_poll_interval",
        deserialize_with = "units::duration"
    )]
    pub poll_interval: Duration,
    /// On the very first start (no checkpoint yet), read the files found
    /// from their beginning (default: from their end, as Fluentd and Fluent
    /// Bit do). Files that appear later, and files that are not in an
    /// existing checkpoint, are always read from the beginning.
    #[serde(default)]
    pub read_from_head: bool,
    /// Directory of the checkpoint file (offsets survive restarts). Unset:
    /// no checkpoints, every start is a first start.
    pub checkpoint_dir: Option<PathBuf>,
    /// Most often the checkpoint is written while acknowledgements arrive:
    /// after kill -9, a restart resends about this much.
    #[serde(
        default = "default_checkpoint_interval",
        deserialize_with = "units::duration"
    )]
    pub checkpoint_interval: Duration,
    /// Most files held open at once; the others wait for a descriptor and
    /// are read in turn. Default: three quarters of the process's open-file
    /// limit (after raising it to the hard limit), leaving the rest to
    /// sockets, sinks and the checkpoint.
    pub max_open_files: Option<usize>,
    /// A file that has not grown for this long gives its descriptor back; it
    /// is opened again (and checked to be the same file) when it changes.
    #[serde(
        default = "default_close_idle_after",
        deserialize_with = "units::duration"
    )]
    pub close_idle_after: Duration,
    /// Counters per followed file (labelled with its path). Off by default:
    /// thousands of files would make thousands of series.
    #[serde(default)]
    pub per_file_metrics: bool,
    /// Record key of the line.
    #[serde(default = "default_message_key")]
    pub message_key: String,
    /// A field each record gets with the path of the file it was read
    /// from (Fluent Bit's `Path_Key`, Fluentd's `path_key`, Vector's
    /// `file`); unset, none.
    pub path_key: Option<String>,
    /// A last line without its newline is sent after the file has not
    /// grown for this long.
    #[serde(
        default = "default_partial_line_timeout",
        deserialize_with = "units::duration"
    )]
    pub partial_line_timeout: Duration,
    /// Longest line kept whole.
    #[serde(default = "default_max_line_bytes", deserialize_with = "units::bytes")]
    pub max_line_bytes: usize,
    /// What happens to longer lines: `"split"` into pieces of
    /// `max_line_bytes`, or `"skip"`.
    #[serde(default)]
    pub on_long_line: LongLine,
    /// Bytes read from a file at a time.
    #[serde(default = "default_read_bytes", deserialize_with = "units::bytes")]
    pub read_bytes: usize,
    /// Join the lines of one record (a stack trace, a container runtime's
    /// partial lines) before the batch is made: a built-in rule set
    /// (`"java"`, `"python"`, `"go"`, `"ruby"`, `"cri"`, `"docker"`) or a
    /// table (`parser` or `start`/`continue`, and the bounds). Per file.
    #[serde(default, deserialize_with = "multiline::preset_or_table")]
    pub multiline: Option<MultilineConfig>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LongLine {
    #[default]
    Split,
    Skip,
}

const fn default_refresh_interval() -> Duration {
    Duration::from_secs(5)
}
const fn default_checkpoint_interval() -> Duration {
    Duration::from_secs(1)
}
const fn default_close_idle_after() -> Duration {
    Duration::from_secs(300)
}
const fn default_linger() -> Duration {
    Duration::from_secs(1)
}
const fn default_poll_interval() -> Duration {
    Duration::from_millis(250)
}
fn default_message_key() -> String {
    "message".into()
}
const fn default_partial_line_timeout() -> Duration {
    Duration::from_secs(5)
}
const fn default_max_line_bytes() -> usize {
    1024 * 1024
}
const fn default_read_bytes() -> usize {
    256 * 1024
}

impl TailSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.paths.is_empty() {
            return Err("paths must list at least one glob".into());
        }
        for p in self.paths.iter().chain(&self.exclude) {
            glob::Pattern::new(p).map_err(|e| format!("glob {p:?}: {e}"))?;
        }
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        if self.max_line_bytes == 0 || self.read_bytes < 4096 {
            return Err("max_line_bytes must be positive and read_bytes at least 4KiB".into());
        }
        if let Some(m) = &self.multiline {
            m.compile().map_err(|e| format!("multiline: {e}"))?;
        }
        if self.poll_interval.is_zero() || self.refresh_interval.is_zero() {
            return Err("poll_interval and refresh_interval must be positive".into());
        }
        if self.checkpoint_interval.is_zero() {
            return Err("checkpoint_interval must be positive".into());
        }
        if self.max_open_files == Some(0) {
            return Err("max_open_files must be at least 1 (or unset for a default from the open-file limit)".into());
        }
        Ok(())
    }

    /// The tag of records read from `path`.
    pub fn tag_for(&self, path: &std::path::Path) -> String {
        if !self.tag.contains('*') {
            return self.tag.clone();
        }
        let p = path.to_string_lossy();
        let dotted = p.trim_start_matches('/').replace('/', ".");
        self.tag.replacen('*', &dotted, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_in_the_tag_is_the_dotted_path() {
        let c: TailSourceConfig = toml::from_str("paths = [\"/x\"]\ntag = \"app.*\"").unwrap();
        assert_eq!(
            c.tag_for(std::path::Path::new("/var/log/a.log")),
            "app.var.log.a.log"
        );
        let c: TailSourceConfig = toml::from_str("paths = [\"/x\"]\ntag = \"fixed\"").unwrap();
        assert_eq!(c.tag_for(std::path::Path::new("/var/log/a.log")), "fixed");
    }
}
