//! `mirror_dir`: every byte written into the mount also lands in a real
//! file of the same path, so reads of the mount return it. The mirror
//! follows creations, renames, truncations and removals.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct Mirror {
    dir: PathBuf,
}

impl Mirror {
    /// Creates `dir` if missing.
    pub fn new(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create mirror_dir {}: {e}", dir.display()))?;
        Ok(Mirror {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Opens (creating) the mirror of `rel` for reading and writing.
    pub fn open(&self, rel: &str) -> io::Result<File> {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(p)
    }

    pub fn mkdir(&self, rel: &str) -> io::Result<()> {
        std::fs::create_dir_all(self.path(rel))
    }

    pub fn remove(&self, rel: &str, dir: bool) -> io::Result<()> {
        let p = self.path(rel);
        let r = if dir {
            std::fs::remove_dir(p)
        } else {
            std::fs::remove_file(p)
        };
        match r {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let to = self.path(to);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::rename(self.path(from), to) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    pub fn truncate(&self, rel: &str, size: u64) -> io::Result<()> {
        self.open(rel)?.set_len(size)
    }
}

/// Writes `data` at `offset` of a mirror file.
pub fn write_at(f: &File, data: &[u8], offset: u64) -> io::Result<()> {
    f.write_all_at(data, offset)
}

/// Reads up to `size` bytes at `offset` of a mirror file.
pub fn read_at(f: &File, offset: u64, size: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; size];
    let mut n = 0;
    while n < size {
        match f.read_at(&mut buf[n..], offset + n as u64)? {
            0 => break,
            k => n += k,
        }
    }
    buf.truncate(n);
    Ok(buf)
}
