//! The checkpoint file: how far each followed file has been read *and
//! acknowledged by every sink*, so a restart (even after kill -9) resends at
//! most what was not yet acknowledged and skips nothing.
//!
//! ## Format
//!
//! `CHECKPOINT_DIR/SOURCE_NAME.checkpoint`, UTF-8 text, one file per line:
//!
//! ```text
//! # logferry tail checkpoint v1
//! <dev> <inode> <head_len> <head_hash> <offset> <path>
//! ```
//!
//! - `dev`, `inode`: decimal, from stat(2);
//! - `head_len`, `head_hash`: the length (decimal, at most 256) and the
//!   FNV-1a 64-bit hash (16 hex digits) of the file's first bytes, so a
//!   reused inode or a copy is not mistaken for the same file;
//! - `offset`: decimal byte offset up to which every line was acknowledged;
//! - `path`: the rest of the line, as last seen (informative only).
//!
//! It is written to `SOURCE_NAME.checkpoint.tmp`, fsynced, renamed over the
//! old one and the directory is fsynced: a crash leaves either the old or
//! the new checkpoint, never a torn one. Unknown or malformed lines are
//! ignored with a warning.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How a file is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// The head of a file: length and hash of its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub hash: u64,
}

/// Bytes of a file's head that identify it.
pub const HEAD_BYTES: usize = 256;

pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// One line of the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: FileId,
    pub head: Head,
    pub offset: u64,
    pub path: PathBuf,
}

pub struct Checkpoint {
    path: PathBuf,
    tmp: PathBuf,
    dir: PathBuf,
}

impl Checkpoint {
    pub fn new(dir: &Path, source: &str) -> Self {
        Checkpoint {
            path: dir.join(format!("{source}.checkpoint")),
            tmp: dir.join(format!("{source}.checkpoint.tmp")),
            dir: dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved entries (none if there is no checkpoint yet).
    pub fn load(&self) -> Result<HashMap<FileId, Entry>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let mut out = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            match parse_line(line) {
                Some(e) => {
                    out.insert(e.id, e);
                }
                None => {
                    tracing::warn!(file = %self.path.display(), line = n + 1, "ignoring a malformed checkpoint line")
                }
            }
        }
        Ok(out)
    }

    /// Atomically replaces the checkpoint with `entries`.
    pub fn save<'a>(&self, entries: impl Iterator<Item = &'a Entry>) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let mut text = String::from("# logferry tail checkpoint v1\n");
        for e in entries {
            text.push_str(&format!(
                "{} {} {} {:016x} {} {}\n",
                e.id.dev,
                e.id.ino,
                e.head.len,
                e.head.hash,
                e.offset,
                e.path.display()
            ));
        }
        let mut f = std::fs::File::create(&self.tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&self.tmp, &self.path)?;
        std::fs::File::open(&self.dir)?.sync_all()
    }
}

fn parse_line(line: &str) -> Option<Entry> {
    let mut it = line.splitn(6, ' ');
    let dev = it.next()?.parse().ok()?;
    let ino = it.next()?.parse().ok()?;
    let len = it.next()?.parse().ok()?;
    let hash = u64::from_str_radix(it.next()?, 16).ok()?;
    let offset = it.next()?.parse().ok()?;
    let path = PathBuf::from(it.next().unwrap_or(""));
    Some(Entry {
        id: FileId { dev, ino },
        head: Head { len, hash },
        offset,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_tolerates_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let c = Checkpoint::new(dir.path(), "tail");
        assert!(c.load().unwrap().is_empty());
        let e = Entry {
            id: FileId { dev: 2049, ino: 77 },
            head: Head {
                len: 12,
                hash: fnv1a(b"hello world\n"),
            },
            offset: 4096,
            path: PathBuf::from("/var/log/a b.log"),
        };
        c.save([&e].into_iter()).unwrap();
        let text = std::fs::read_to_string(c.path()).unwrap();
        assert!(
            text.starts_with("# logferry tail checkpoint v1\n2049 77 12 "),
            "{text}"
        );
        std::fs::write(c.path(), format!("{text}garbage line\n")).unwrap();
        let loaded = c.load().unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[&e.id], e);
    }
}
