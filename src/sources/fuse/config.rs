//! Configuration of the FUSE source.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;

/// `type = "fuse"`: a mounted directory where writing a file ships it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FuseSourceConfig {
    /// Directory to mount on (created if missing). A stale mount left there
    /// by a killed process ("Transport endpoint is not connected") is
    /// unmounted at start; a live mount there is an error.
    pub mountpoint: PathBuf,
    /// Tag of the records: this prefix followed by the file's path inside
    /// the mount with `/` turned into `.` (`app/web.log` with the default
    /// prefix is `fuse.app.web.log`).
    #[serde(default = "default_tag_prefix")]
    pub tag_prefix: String,
    /// `"lines"`: each complete line is one record; `"binary"`: each write
    /// is one record, as it came.
    #[serde(default)]
    pub mode: FuseMode,
    /// Directory where every written byte also lands in a real file of the
    /// same path, so reads of the mount return what was written. Unset:
    /// reads return no data (end of file at once).
    pub mirror_dir: Option<PathBuf>,
    /// How long a write may wait for room in the pipeline (sink queues,
    /// the memory budget, room for unfinished lines) before it fails with
    /// EIO; also the longest `fsync()` waits for acknowledgements.
    #[serde(
        default = "default_write_timeout",
        deserialize_with = "units::duration"
    )]
    pub write_timeout: Duration,
    /// Largest write the kernel hands over at once (4KiB to 16MiB; the
    /// kernel may cap it lower, usually at 1MiB).
    #[serde(default = "default_max_write", deserialize_with = "units::bytes")]
    pub max_write: usize,
    /// Threads serving requests from the kernel.
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// Longest line kept whole: a longer one is shipped in pieces of this
    /// size (each piece one record).
    #[serde(default = "default_max_line_bytes", deserialize_with = "units::bytes")]
    pub max_line_bytes: usize,
    /// `close()` of a file returns only once every record written through
    /// that descriptor is acknowledged by the sinks (delivered downstream
    /// or written), or fails with EIO after `write_timeout`. `fsync()`
    /// always waits so.
    #[serde(default)]
    pub ack_on_close: bool,
    /// Let users other than the one running logferry use the mount.
    #[serde(default)]
    pub allow_other: bool,
    /// Most descriptors open on the mount at once; past it `open()` and
    /// `creat()` fail with ENFILE.
    #[serde(default = "default_max_open_files")]
    pub max_open_files: usize,
    /// Most files and directories the mount holds (removed ones count
    /// while still open); past it creating one fails with ENOSPC.
    #[serde(default = "default_max_inodes")]
    pub max_inodes: usize,
}

/// What a record is.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum FuseMode {
    /// Each complete line is a record; a last line without newline is sent
    /// when the file is closed.
    #[default]
    Lines,
    /// Each write is a record, byte for byte.
    Binary,
}

fn default_tag_prefix() -> String {
    "fuse.".into()
}
const fn default_write_timeout() -> Duration {
    Duration::from_secs(10)
}
const fn default_max_write() -> usize {
    1024 * 1024
}
const fn default_threads() -> usize {
    2
}
const fn default_max_line_bytes() -> usize {
    1024 * 1024
}
const fn default_max_open_files() -> usize {
    4096
}
const fn default_max_inodes() -> usize {
    65536
}

/// Limits of the kernel's FUSE protocol for one write.
const MIN_WRITE: usize = 4096;
const MAX_WRITE: usize = 16 * 1024 * 1024;

impl FuseSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.mountpoint.as_os_str().is_empty() {
            return Err("mountpoint must name a directory".into());
        }
        if let Some(m) = &self.mirror_dir {
            if m.starts_with(&self.mountpoint) {
                return Err(format!(
                    "mirror_dir {m:?} is inside the mountpoint: it must be a directory elsewhere"
                ));
            }
        }
        if !(MIN_WRITE..=MAX_WRITE).contains(&self.max_write) {
            return Err(format!(
                "max_write must be between 4KiB and 16MiB (got {})",
                self.max_write
            ));
        }
        if self.threads == 0 || self.threads > 64 {
            return Err("threads must be between 1 and 64".into());
        }
        if self.max_line_bytes == 0 {
            return Err("max_line_bytes must be positive".into());
        }
        if self.write_timeout.is_zero() {
            return Err("write_timeout must be positive".into());
        }
        if self.max_open_files == 0 {
            return Err("max_open_files must be positive".into());
        }
        // the root directory is one of them
        if self.max_inodes < 2 {
            return Err("max_inodes must be at least 2".into());
        }
        Ok(())
    }

    /// The tag of records written to `path` (relative to the mount).
    pub fn tag_for(&self, path: &str) -> String {
        format!("{}{}", self.tag_prefix, path.replace('/', "."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> FuseSourceConfig {
        toml::from_str(&format!("mountpoint = \"/mnt/logs\"\n{extra}")).unwrap()
    }

    #[test]
    fn defaults_and_tags() {
        let c = parse("");
        c.validate().unwrap();
        assert_eq!(c.mode, FuseMode::Lines);
        assert_eq!(c.max_write, 1024 * 1024);
        assert_eq!((c.max_open_files, c.max_inodes), (4096, 65536));
        assert_eq!(c.tag_for("app/web.log"), "fuse.app.web.log");
        let c = parse("tag_prefix = \"logs.\"\nmode = \"binary\"");
        assert_eq!(c.tag_for("x"), "logs.x");
        assert_eq!(c.mode, FuseMode::Binary);
    }

    #[test]
    fn bad_settings_are_named() {
        let e = parse("max_write = \"1KiB\"").validate().unwrap_err();
        assert!(e.contains("max_write"), "{e}");
        let e = parse("mirror_dir = \"/mnt/logs/m\"")
            .validate()
            .unwrap_err();
        assert!(e.contains("inside the mountpoint"), "{e}");
        let e = parse("threads = 0").validate().unwrap_err();
        assert!(e.contains("threads"), "{e}");
        let e = parse("max_open_files = 0").validate().unwrap_err();
        assert!(e.contains("max_open_files"), "{e}");
        let e = parse("max_inodes = 1").validate().unwrap_err();
        assert!(e.contains("max_inodes"), "{e}");
        assert!(toml::from_str::<FuseSourceConfig>("mountpoint = \"/m\"\nbogus = 1").is_err());
    }
}
