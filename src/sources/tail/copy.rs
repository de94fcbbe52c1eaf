//! The copy a copytruncate leaves beside a truncated file: found by its
//! name (a rotated sibling), its first bytes and its time, plain or already
//! compressed (logrotate's `compress` without `delaycompress` compresses
//! the copy and removes it within milliseconds, so the reader may find
//! only `app.log.1.gz`).
//!
//! A compressed copy is inflated once, into memory (a `memfd`), from where
//! reading stopped: what lies before is a hole that costs nothing, so the
//! copy is then read like any file, at the same offsets as the file it is
//! a copy of.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::checkpoint::{fnv1a, Head};

/// Most bytes of a compressed copy kept in memory beyond what was read
/// already; the rest of it is counted as missed. At an everyday rate the
/// copy holds one `linger` of lines beyond that.
const INFLATED_MAX: u64 = 32 << 20;

/// How a rotated sibling's content is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Plain,
    Gzip,
    Zstd,
    /// Compressed in a way logferry does not read.
    Unreadable,
}

/// Compressed rotations, by name ending.
const COMPRESSED: &[(&str, Packing)] = &[
    (".gz", Packing::Gzip),
    (".zst", Packing::Zstd),
    (".bz2", Packing::Unreadable),
    (".xz", Packing::Unreadable),
    (".lz4", Packing::Unreadable),
    (".zip", Packing::Unreadable),
    (".z", Packing::Unreadable),
];

/// If the file name `name` is a rotated sibling of `base` (`app.log.1`,
/// `app.log-20261122`, `app.log_old`, `app.log.1.gz` beside `app.log`),
/// how it is stored.
pub fn sibling(name: &[u8], base: &[u8]) -> Option<Packing> {
    let rotated = name.len() > base.len()
        && name.starts_with(base)
        && matches!(name[base.len()], b'.' | b'-' | b'_');
    if !rotated {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let packing = COMPRESSED
        .iter()
        .find(|(ending, _)| lower.ends_with(ending.as_bytes()))
        .map_or(Packing::Plain, |(_, p)| *p);
    Some(packing)
}

/// Whether `name` is a rotated sibling of `base`, not compressed.
pub fn is_rotated_sibling(name: &[u8], base: &[u8]) -> bool {
    sibling(name, base) == Some(Packing::Plain)
}

/// What the copy of a truncated file must be like.
pub struct Sought<'a> {
    /// The truncated file's name.
    pub path: &'a Path,
    /// Its first bytes (the copy starts with them).
    pub head: Head,
    /// Where reading stopped (the copy is longer).
    pub read_offset: u64,
    /// The unfinished line read last (the copy holds it there).
    pub partial: &'a [u8],
    /// The copy was written after this (the lines it holds beyond what was
    /// read were written after the last read).
    pub changed_since: SystemTime,
}

/// A copy found.
pub struct Copy {
    pub path: PathBuf,
    /// Its content, at the offsets of the file it is a copy of (for a
    /// compressed copy, inflated from where reading stopped).
    pub file: File,
    /// Where its content ends.
    pub size: u64,
    /// Bytes of a compressed copy beyond [`INFLATED_MAX`], not kept.
    pub dropped: u64,
}

/// The copy beside the file: a plain one first (a compressed one beside it
/// may still be being written; gzip removes its input only once its output
/// is complete), the newest first.
pub fn find(s: &Sought) -> Option<Copy> {
    if s.head.len == 0 {
        return None;
    }
    let base = s.path.file_name()?.as_bytes();
    let mut found: Vec<(SystemTime, Packing, PathBuf, File)> = Vec::new();
    for entry in std::fs::read_dir(s.path.parent()?).ok()?.flatten() {
        let packing = match sibling(entry.file_name().as_bytes(), base) {
            None | Some(Packing::Unreadable) => continue,
            Some(p) => p,
        };
        let path = entry.path();
        let Ok(file) = File::open(&path) else {
            continue;
        };
        let Ok(meta) = file.metadata() else {
            continue;
        };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if !meta.is_file() || modified < s.changed_since {
            continue;
        }
        found.push((modified, packing, path, file));
    }
    found.sort_by_key(|(modified, packing, _, _)| {
        std::cmp::Reverse((*packing == Packing::Plain, *modified))
    });
    found
        .into_iter()
        .find_map(|(_, packing, path, file)| match packing {
            Packing::Plain => plain(file, s).map(|(file, size)| Copy {
                path,
                file,
                size,
                dropped: 0,
            }),
            _ => inflate(file, packing, s).map(|(file, size, dropped)| Copy {
                path,
                file,
                size,
                dropped,
            }),
        })
}

/// `file`, if it is the copy: longer than what was read, the same first
/// bytes, the unfinished line where it was. With its size.
fn plain(file: File, s: &Sought) -> Option<(File, u64)> {
    let size = file.metadata().ok()?.len();
    if size <= s.read_offset {
        return None;
    }
    let mut head = vec![0u8; s.head.len as usize];
    file.read_exact_at(&mut head, 0).ok()?;
    if fnv1a(&head) != s.head.hash || !holds_partial(&file, s) {
        return None;
    }
    Some((file, size))
}

/// Whether `copy` holds the unfinished line read last where it was.
fn holds_partial(copy: &File, s: &Sought) -> bool {
    let mut unfinished = vec![0u8; s.partial.len()];
    let start = s.read_offset - s.partial.len() as u64;
    copy.read_exact_at(&mut unfinished, start).is_ok() && unfinished == s.partial
}

/// The compressed `file`, if it is the copy, inflated into memory from
/// where reading stopped (with the unfinished line), up to
/// [`INFLATED_MAX`] beyond: the content, where it ends, and how much more
/// it held. A stream cut short is not taken.
fn inflate(file: File, packing: Packing, s: &Sought) -> Option<(File, u64, u64)> {
    let mut reader: Box<dyn Read> = match packing {
        Packing::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(file))),
        Packing::Zstd => Box::new(zstd::stream::read::Decoder::new(file).ok()?),
        Packing::Plain | Packing::Unreadable => return None,
    };
    let start = s.read_offset - s.partial.len() as u64;
    let keep_to = s.read_offset + INFLATED_MAX;
    let head_len = s.head.len as usize;
    let mut head = Vec::with_capacity(head_len);
    let mut out: Option<File> = None;
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // cut short: still being written (its plain copy is still
            // there), or damaged
            Err(_) => return None,
        };
        let chunk = &buf[..n];
        if head.len() < head_len {
            let take = (head_len - head.len()).min(n);
            head.extend_from_slice(&chunk[..take]);
            if head.len() == head_len && fnv1a(&head) != s.head.hash {
                return None; // another file's rotation
            }
        }
        let (lo, hi) = (pos.max(start), (pos + n as u64).min(keep_to));
        if lo < hi {
            if out.is_none() {
                out = Some(memfd()?);
            }
            let piece = &chunk[(lo - pos) as usize..(hi - pos) as usize];
            out.as_ref()?.write_all_at(piece, lo).ok()?;
        }
        pos += n as u64;
    }
    if head.len() < head_len || pos <= s.read_offset {
        return None;
    }
    let out = out?;
    if !holds_partial(&out, s) {
        return None;
    }
    let size = pos.min(keep_to);
    Some((out, size, pos - size))
}

/// An anonymous file in memory.
fn memfd() -> Option<File> {
    // SAFETY: a C string and flags; returns a descriptor or -1.
    let raw = unsafe { libc::memfd_create(c"logferry-copy".as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return None;
    }
    // SAFETY: `raw` is a descriptor we own from here on.
    Some(File::from(unsafe { OwnedFd::from_raw_fd(raw) }))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(path: &Path, content: &[u8]) {
        let mut e = flate2::write::GzEncoder::new(
            File::create(path).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(content).unwrap();
        e.finish().unwrap();
    }

    #[test]
    fn siblings_and_how_they_are_stored() {
        let s = |name: &str| sibling(name.as_bytes(), b"app.log");
        assert_eq!(s("app.log.1"), Some(Packing::Plain));
        assert_eq!(s("app.log-20261122"), Some(Packing::Plain));
        assert_eq!(s("app.log.1.gz"), Some(Packing::Gzip));
        assert_eq!(s("app.log.2.ZST"), Some(Packing::Zstd));
        assert_eq!(s("app.log.1.xz"), Some(Packing::Unreadable));
        assert_eq!(s("app.log"), None);
        assert_eq!(s("app.logger"), None);
        assert!(!is_rotated_sibling(b"app.log.1.gz", b"app.log"));
    }

    /// A copy compressed at once, beside an older compressed rotation of
    /// another file and one that starts with the same lines but is older
    /// than the last read: the copy is found, and its content is there
    /// from where reading stopped, at the same offsets.
    #[test]
    fn a_compressed_copy_is_found_and_read_from_where_reading_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("app.log");
        let content: Vec<u8> = (0..5000)
            .flat_map(|i| format!("w-{i}\n").into_bytes())
            .collect();
        let read = 20_000u64;
        let partial = &content[read as usize - 3..read as usize];
        let head = Head {
            len: 256,
            hash: fnv1a(&content[..256]),
        };
        let sought = Sought {
            path: &live,
            head,
            read_offset: read,
            partial,
            changed_since: SystemTime::now() - std::time::Duration::from_secs(5),
        };
        gzip(&dir.path().join("app.log.2.gz"), b"other lines\n");
        let old = dir.path().join("app.log.3.gz");
        gzip(&old, &content);
        File::options()
            .append(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::now() - std::time::Duration::from_secs(60))
            .unwrap();
        assert!(find(&sought).is_none(), "an older rotation is not the copy");
        gzip(&dir.path().join("app.log.1.gz"), &content);
        let copy = find(&sought).expect("the copy");
        assert_eq!(copy.path, dir.path().join("app.log.1.gz"));
        assert_eq!((copy.size, copy.dropped), (content.len() as u64, 0));
        let mut rest = vec![0u8; content.len() - read as usize + 3];
        copy.file.read_exact_at(&mut rest, read - 3).unwrap();
        assert_eq!(rest, &content[read as usize - 3..]);
        // the same copy not yet compressed is taken first, and a
        // compressed one still being written is not taken
        std::fs::write(dir.path().join("app.log.1"), &content).unwrap();
        assert_eq!(find(&sought).unwrap().path, dir.path().join("app.log.1"));
        std::fs::remove_file(dir.path().join("app.log.1")).unwrap();
        let whole = std::fs::read(dir.path().join("app.log.1.gz")).unwrap();
        std::fs::write(dir.path().join("app.log.1.gz"), &whole[..whole.len() / 2]).unwrap();
        assert!(find(&sought).is_none(), "half a compressed copy");
        // nothing new beyond what was read: not the copy
        std::fs::write(dir.path().join("app.log.1.gz"), &whole).unwrap();
        let shorter = Sought {
            read_offset: content.len() as u64,
            partial: &[],
            ..sought
        };
        assert!(find(&shorter).is_none());
    }
}
