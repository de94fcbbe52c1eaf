//! A file the load tools append to, optionally rotated the way logrotate
//! does it: renamed to `PATH.1` (replacing an older `.1`) and recreated.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct AppendFile {
    path: PathBuf,
    file: File,
    /// Bytes in the current file.
    size: u64,
    /// Rotate before a write would take the file past this many bytes.
    rotate_bytes: Option<u64>,
    /// Rotations done.
    pub rotations: u64,
}

impl AppendFile {
    pub fn open(path: &Path, rotate_bytes: Option<u64>) -> Result<AppendFile, String> {
        if rotate_bytes == Some(0) {
            return Err("--rotate-bytes must be positive".into());
        }
        let file = open(path)?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(AppendFile {
            path: path.to_path_buf(),
            file,
            size,
            rotate_bytes,
            rotations: 0,
        })
    }

    /// Appends `bytes` (whole lines), in one write unless the file must
    /// rotate first: then the lines that fit go to the old file, the rest
    /// to the new one (a line longer than the limit gets a file alone).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = match self.rotate_bytes {
                Some(limit) => limit.saturating_sub(self.size),
                None => u64::MAX,
            };
            if rest.len() as u64 <= room {
                return self.write_all(rest);
            }
            let fits = &rest[..room as usize];
            match memchr::memrchr(b'\n', fits) {
                Some(end) => {
                    self.write_all(&rest[..=end])?;
                    rest = &rest[end + 1..];
                    self.rotate()?;
                }
                None if self.size > 0 => self.rotate()?,
                None => {
                    let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
                    self.write_all(&rest[..end])?;
                    rest = &rest[end..];
                }
            }
        }
        Ok(())
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.file
            .write_all(bytes)
            .map_err(|e| format!("write {}: {e}", self.path.display()))?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    fn rotate(&mut self) -> Result<(), String> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)
            .map_err(|e| format!("rotate {}: {e}", self.path.display()))?;
        self.file = open(&self.path)?;
        self.size = 0;
        self.rotations += 1;
        Ok(())
    }
}

/// Opens `path` to append to, created if it is missing.
pub(super) fn open(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_renames_to_dot_one_before_the_limit_is_passed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let mut f = AppendFile::open(&path, Some(10)).unwrap();
        f.write(b"aaaa\n").unwrap();
        f.write(b"bbbb\n").unwrap();
        f.write(b"cccc\n").unwrap();
        assert_eq!(f.rotations, 1);
        assert_eq!(
            std::fs::read(dir.path().join("app.log.1")).unwrap(),
            b"aaaa\nbbbb\n"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"cccc\n");
        // one write of many lines is split at a line end
        f.write(b"dddd\neeee\nffff\n").unwrap();
        assert_eq!(f.rotations, 2);
        assert_eq!(
            std::fs::read(dir.path().join("app.log.1")).unwrap(),
            b"cccc\ndddd\n"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"eeee\nffff\n");
        // a line longer than the limit gets a file alone
        f.write(b"0123456789abcdef\ngggg\n").unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("app.log.1")).unwrap(),
            b"0123456789abcdef\n"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"gggg\n");
        assert!(AppendFile::open(&path, Some(0)).is_err());
    }
}
