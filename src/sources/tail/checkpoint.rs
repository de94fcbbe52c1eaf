//! The checkpoint file: how far each followed file has been read *and
//! acknowledged by every sink*, so a restart (even after kill -9) resends at
//! most what was not yet acknowledged and skips nothing.
//!
//! ## Format
//!
//! `CHECKPOINT_DIR/SOURCE_NAME.checkpoint`, UTF-8 text, one file per line:
//!
//! ```text
//! # logferry tail checkpoint v2
//! <dev> <inode> <born> <head_len> <head_hash> <offset> <size> <path>
//! ```
//!
//! - `dev`, `inode`: decimal, from stat(2);
//! - `born`: the file's birth time in nanoseconds since the epoch, from
//!   statx(2) (`0` where the filesystem does not keep it): an inode that
//!   was freed and reused for a new file has another birth time, even when
//!   the new file starts with the same bytes;
//! - `head_len`, `head_hash`: the length (decimal, at most 256) and the
//!   FNV-1a 64-bit hash (16 hex digits) of the file's first bytes: they
//!   must match too (and alone tell a reused inode from the file where
//!   there is no birth time);
//! - `offset`: decimal byte offset up to which every line was acknowledged;
//! - `size`: the file's size at the last look (what a file that is gone
//!   left unread is `size - offset`, a lower bound);
//! - `path`: the rest of the line, as last seen: after a restart, a file
//!   no longer at a followed path is looked for in this directory.
//!
//! Version 1 files (`<dev> <inode> <head_len> <head_hash> <offset> <path>`)
//! are read too (no birth time, size = offset).
//!
//! It is written to `SOURCE_NAME.checkpoint.tmp`, fsynced, renamed over the
//! old one and the directory is fsynced: a crash leaves either the old or
//! the new checkpoint, never a torn one. Unknown or malformed lines (not
//! UTF-8, a missing or unparsable field, a head longer than 256 bytes) are
//! ignored with a warning; the other lines still count.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How a file is recognised: where it lives (device, inode) and, where the
/// filesystem keeps it, when it was born (a reused inode is another file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    /// Birth time in nanoseconds since the epoch; 0 where unknown.
    pub born: u64,
}

impl FileId {
    /// The identity of an open file.
    pub fn of(file: &std::fs::File) -> std::io::Result<FileId> {
        use std::os::fd::AsRawFd;
        statx(file.as_raw_fd(), c"", libc::AT_EMPTY_PATH).map(|(id, _, _)| id)
    }

    /// The identity of the file a path names now.
    pub fn of_path(path: &Path) -> std::io::Result<FileId> {
        Self::stat_path(path).map(|(id, _)| id)
    }

    /// The identity and size of the file a path names now (one call).
    pub fn stat_path(path: &Path) -> std::io::Result<(FileId, u64)> {
        stat_named(path).map(|(id, size, _)| (id, size))
    }

    /// Like [`FileId::stat_path`], in the same one call, if the path names
    /// a regular file (through symbolic links, as `Path::is_file`);
    /// `None` for anything else.
    pub fn stat_regular(path: &Path) -> std::io::Result<Option<(FileId, u64)>> {
        stat_named(path).map(|(id, size, regular)| regular.then_some((id, size)))
    }

    /// Device and inode only: where the file is, whoever it is.
    pub fn place(self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    /// True if `self` (as saved, with `saved_head`) is the file `now`,
    /// whose first bytes are `head_now` (read to `saved_head.len`): same
    /// place, same birth time where both are known (kernel timestamps are
    /// coarse, a few milliseconds), and the same first bytes.
    pub fn same_file(self, saved_head: Head, now: FileId, head_now: Head) -> bool {
        self.place() == now.place()
            && (self.born == 0 || now.born == 0 || self.born == now.born)
            && saved_head == head_now
    }
}

fn stat_named(path: &Path) -> std::io::Result<(FileId, u64, bool)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    statx(libc::AT_FDCWD, &c, 0)
}

/// Identity, size, and whether it is a regular file.
fn statx(dirfd: i32, path: &std::ffi::CStr, flags: i32) -> std::io::Result<(FileId, u64, bool)> {
    // SAFETY: statx writes into the zeroed struct it is given; `path` is a
    // valid C string for the call's duration.
    let mut sx: libc::statx = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::statx(
            dirfd,
            path.as_ptr(),
            flags | libc::AT_STATX_SYNC_AS_STAT,
            libc::STATX_TYPE | libc::STATX_INO | libc::STATX_BTIME | libc::STATX_SIZE,
            &mut sx,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let born = if sx.stx_mask & libc::STATX_BTIME != 0 && sx.stx_btime.tv_sec > 0 {
        sx.stx_btime.tv_sec as u64 * 1_000_000_000 + u64::from(sx.stx_btime.tv_nsec)
    } else {
        0
    };
    let id = FileId {
        dev: libc::makedev(sx.stx_dev_major, sx.stx_dev_minor),
        ino: sx.stx_ino,
        born,
    };
    let regular = u32::from(sx.stx_mode) & libc::S_IFMT == libc::S_IFREG;
    Ok((id, sx.stx_size, regular))
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
    /// The file's size at the last look.
    pub size: u64,
    pub path: PathBuf,
}

/// The saved entries, by place (device, inode).
pub type Saved = HashMap<(u64, u64), Entry>;

pub struct Checkpoint {
    path: PathBuf,
    /// The file's name in `dir`.
    name: String,
    dir: PathBuf,
}

impl Checkpoint {
    pub fn new(dir: &Path, source: &str) -> Self {
        let name = format!("{source}.checkpoint");
        Checkpoint {
            path: dir.join(&name),
            name,
            dir: dir.to_path_buf(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved entries (and the malformed lines, for the caller to log
    /// and count) and when they were written, or `None` if there is no
    /// checkpoint yet (the very first start).
    pub fn load(&self) -> Result<Option<(Parsed, std::time::SystemTime)>, String> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let written = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        Ok(Some((parse(&bytes), written)))
    }

    /// Atomically replaces the checkpoint with `entries`.
    pub fn save<'a>(&self, entries: impl Iterator<Item = &'a Entry>) -> std::io::Result<()> {
        crate::sources::durable::replace(&self.dir, &self.name, render(entries).as_bytes())
    }
}

/// What a checkpoint file holds.
#[derive(Debug, Default)]
pub struct Parsed {
    pub entries: Saved,
    /// Line numbers (from 1) of the lines that were ignored: not UTF-8,
    /// missing or unparsable fields, a head longer than [`HEAD_BYTES`].
    pub malformed: Vec<usize>,
}

/// Parses the contents of a checkpoint file (either version). Any bytes
/// give entries: a damaged line is only that line lost, never the others.
pub fn parse(bytes: &[u8]) -> Parsed {
    let v1 = bytes.starts_with(b"# logferry tail checkpoint v1");
    let mut out = Parsed::default();
    // '\n' only, as written: a path may end in '\r'
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let Ok(line) = std::str::from_utf8(line) else {
            out.malformed.push(n + 1);
            continue;
        };
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        match if v1 { parse_v1(line) } else { parse_line(line) } {
            Some(e) => {
                out.entries.insert(e.id.place(), e);
            }
            None => out.malformed.push(n + 1),
        }
    }
    out
}

/// The text of a version 2 checkpoint holding `entries`.
pub fn render<'a>(entries: impl Iterator<Item = &'a Entry>) -> String {
    let mut text = String::from("# logferry tail checkpoint v2\n");
    for e in entries {
        text.push_str(&format!(
            "{} {} {} {} {:016x} {} {} {}\n",
            e.id.dev,
            e.id.ino,
            e.id.born,
            e.head.len,
            e.head.hash,
            e.offset,
            e.size,
            e.path.display()
        ));
    }
    text
}

/// A head length as saved: a longer one was not written by logferry, and
/// would make it allocate that much to compare heads.
fn head_len(field: &str) -> Option<u32> {
    field
        .parse()
        .ok()
        .filter(|&len: &u32| len as usize <= HEAD_BYTES)
}

fn parse_line(line: &str) -> Option<Entry> {
    let mut it = line.splitn(8, ' ');
    let dev = it.next()?.parse().ok()?;
    let ino = it.next()?.parse().ok()?;
    let born = it.next()?.parse().ok()?;
    let len = head_len(it.next()?)?;
    let hash = u64::from_str_radix(it.next()?, 16).ok()?;
    let offset = it.next()?.parse().ok()?;
    let size = it.next()?.parse().ok()?;
    let path = PathBuf::from(it.next().unwrap_or(""));
    Some(Entry {
        id: FileId { dev, ino, born },
        head: Head { len, hash },
        offset,
        size,
        path,
    })
}

fn parse_v1(line: &str) -> Option<Entry> {
    let mut it = line.splitn(6, ' ');
    let dev = it.next()?.parse().ok()?;
    let ino = it.next()?.parse().ok()?;
    let len = head_len(it.next()?)?;
    let hash = u64::from_str_radix(it.next()?, 16).ok()?;
    let offset = it.next()?.parse().ok()?;
    let path = PathBuf::from(it.next().unwrap_or(""));
    Some(Entry {
        id: FileId { dev, ino, born: 0 },
        head: Head { len, hash },
        offset,
        size: offset,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_stated_through_links_and_anything_else_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("app.log");
        std::fs::write(&file, b"12345").unwrap();
        let link = dir.path().join("link.log");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let (id, size) = FileId::stat_regular(&file)
            .unwrap()
            .expect("a regular file");
        assert_eq!(size, 5);
        assert_eq!((id, size), FileId::stat_path(&file).unwrap());
        assert_eq!(FileId::stat_regular(&link).unwrap(), Some((id, size)));
        assert_eq!(FileId::stat_regular(dir.path()).unwrap(), None);
        assert!(FileId::stat_regular(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn round_trips_and_tolerates_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let c = Checkpoint::new(dir.path(), "tail");
        assert!(c.load().unwrap().is_none());
        let e = Entry {
            id: FileId {
                dev: 2049,
                ino: 77,
                born: 1_795_347_703_158_287_787,
            },
            head: Head {
                len: 12,
                hash: fnv1a(b"hello world\n"),
            },
            offset: 4096,
            size: 5000,
            path: PathBuf::from("/var/log/a b.log"),
        };
        c.save([&e].into_iter()).unwrap();
        let text = std::fs::read_to_string(c.path()).unwrap();
        assert!(
            text.starts_with("# logferry tail checkpoint v2\n2049 77 1795347703158287787 12 "),
            "{text}"
        );
        std::fs::write(c.path(), format!("{text}garbage line\n")).unwrap();
        let loaded = c.load().unwrap().unwrap().0.entries;
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[&e.id.place()], e);
    }

    #[test]
    fn reads_version_1() {
        let dir = tempfile::tempdir().unwrap();
        let c = Checkpoint::new(dir.path(), "tail");
        std::fs::write(
            c.path(),
            "# logferry tail checkpoint v1\n2049 77 12 00000000000000ff 4096 /var/log/a b.log\n",
        )
        .unwrap();
        let loaded = c.load().unwrap().unwrap().0.entries;
        let e = &loaded[&(2049, 77)];
        assert_eq!((e.id.born, e.offset, e.size), (0, 4096, 4096));
        assert_eq!(e.path, PathBuf::from("/var/log/a b.log"));
    }

    /// A damaged line (a bad sector, a hand edit) loses that file's offset
    /// only: the checkpoint still loads, with every other line.
    #[test]
    fn a_line_that_is_not_utf8_loses_only_that_line() {
        let dir = tempfile::tempdir().unwrap();
        let c = Checkpoint::new(dir.path(), "tail");
        let mut bytes = b"# logferry tail checkpoint v2\n".to_vec();
        bytes.extend_from_slice(b"2049 78 0 12 00000000000000ff 10 10 /var/log/\xff\xfe.log\n");
        bytes.extend_from_slice(b"2049 77 0 12 00000000000000ff 4096 5000 /var/log/a.log\n");
        std::fs::write(c.path(), &bytes).unwrap();
        let loaded = c.load().unwrap().unwrap().0.entries;
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[&(2049, 77)].offset, 4096);
        assert_eq!(parse(&bytes).malformed, vec![2]);
    }

    /// The head length decides how many bytes are read to compare heads:
    /// a damaged one must not make logferry allocate gigabytes.
    #[test]
    fn a_head_longer_than_logferry_keeps_is_malformed() {
        let dir = tempfile::tempdir().unwrap();
        let c = Checkpoint::new(dir.path(), "tail");
        std::fs::write(
            c.path(),
            "# logferry tail checkpoint v2\n\
             2049 77 0 4294967295 00000000000000ff 4096 5000 /var/log/a.log\n\
             2049 78 0 256 00000000000000ff 1 1 /var/log/b.log\n",
        )
        .unwrap();
        let loaded = c.load().unwrap().unwrap().0.entries;
        assert_eq!(loaded.keys().collect::<Vec<_>>(), vec![&(2049, 78)]);
        std::fs::write(
            c.path(),
            "# logferry tail checkpoint v1\n2049 77 257 00000000000000ff 4096 /var/log/a.log\n",
        )
        .unwrap();
        assert!(c.load().unwrap().unwrap().0.entries.is_empty());
    }

    /// What `parse` accepts, `render` writes back to the same entries
    /// (paths with spaces, a trailing '\r', an empty path).
    #[test]
    fn parsed_entries_render_to_the_same_entries() {
        let text = "# logferry tail checkpoint v2\n\
                    1 2 3 4 00000000000000ff 5 6 /a b\r\n\
                    7 8 0 0 0 0 0 \n\
                    9 10 0 1 1 2 3  lead\n";
        let first = parse(text.as_bytes());
        assert_eq!(first.entries.len(), 3);
        assert!(first.malformed.is_empty());
        assert_eq!(first.entries[&(1, 2)].path, PathBuf::from("/a b\r"));
        let again = parse(render(first.entries.values()).as_bytes());
        assert_eq!(again.entries, first.entries);
    }

    /// A file freed and its inode reused by a new file with the same first
    /// bytes (a fixed banner) is another file where birth times are kept.
    #[test]
    fn a_reused_inode_is_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::fs::write(&p, b"BANNER\n1\n").unwrap();
        let old = FileId::of_path(&p).unwrap();
        let head = Head {
            len: 7,
            hash: fnv1a(b"BANNER\n"),
        };
        assert!(old.same_file(head, FileId::of_path(&p).unwrap(), head));
        std::fs::remove_file(&p).unwrap();
        // past the kernel's timestamp granularity
        std::thread::sleep(std::time::Duration::from_millis(25));
        std::fs::write(&p, b"BANNER\n2\n").unwrap();
        let new = FileId::of_path(&p).unwrap();
        if new.place() == old.place() && new.born != 0 {
            assert!(
                !old.same_file(head, new, head),
                "reused inode taken for the old file"
            );
        }
        // without birth times, the head decides
        let no_birth = |id: FileId| FileId { born: 0, ..id };
        let other = Head {
            len: 7,
            hash: fnv1a(b"OTHER!\n"),
        };
        assert!(!no_birth(old).same_file(head, no_birth(old), other));
    }
}
