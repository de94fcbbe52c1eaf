//! One followed file: reading whole lines in large blocks, identity,
//! truncation (and the copy a copytruncate leaves), and which offsets have
//! been acknowledged.
//!
//! A followed file does not always hold a descriptor: under a descriptor
//! budget, or when idle, it is closed and later reopened by its last known
//! name, and the identity check makes sure the name still leads to the same
//! file.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use bytes::{Bytes, BytesMut};

use super::checkpoint::{fnv1a, FileId, Head, HEAD_BYTES};
use super::config::{LongLine, TailSourceConfig};
use super::copy;

/// Lines read from a file, ready to become a batch.
pub struct Lines {
    /// Complete lines, each ending in `\n` (`\r\n` turned into `\n`).
    pub data: Bytes,
    pub count: usize,
    /// File offset of the first byte these lines came from.
    pub start: u64,
    /// File offset just past the last byte these lines came from.
    pub end: u64,
    /// `data` is the file's bytes from `start` to `end` as they are (no
    /// `\r` taken out, no long line cut or skipped): each line's offset in
    /// the file is known, which lets a multiline record's checkpoint stop
    /// at its first line rather than at the start of the block.
    pub verbatim: bool,
}

/// Counters of one file, logged when it is released.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileStats {
    pub bytes_read: u64,
    pub lines: u64,
    pub bytes_skipped: u64,
    pub long_lines: u64,
    pub truncations: u64,
    /// Bytes known to have been lost to truncations (a lower bound).
    pub missed_bytes: u64,
}

/// The smallest block read: what a file that grew by a few lines is read
/// with (what it grew by is known from its size).
const SMALL_READ: usize = 16 * 1024;

/// What a look at a file's size before a read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Nothing new since the last read (or the file is closed).
    Nothing,
    /// New bytes to read.
    Grown,
    /// Shorter than what was read, or rewritten from the start, and a copy
    /// of its old content lies beside it (copytruncate): the `bytes` not
    /// yet read are read from `copy` first, then the file from 0. A
    /// compressed copy too large to hold in memory had `dropped` bytes
    /// more (counted as missed).
    Copied {
        copy: PathBuf,
        bytes: u64,
        dropped: u64,
    },
    /// Reading starts again at 0: the file is shorter than what was read,
    /// or was rewritten from the start (`after_copy`: the copy of its old
    /// content has just been read to its end). `missed` bytes were seen
    /// but not read.
    Truncated { missed: u64, after_copy: bool },
}

/// How much earlier than the last read a copy of a truncated file may
/// have been modified and still be taken for the copy (file times are
/// coarser than the clock, and the clock may step).
const COPY_CLOCK_SLACK: std::time::Duration = std::time::Duration::from_secs(1);

/// What reopening a closed file by its name found.
#[derive(Debug, PartialEq, Eq)]
pub enum Reopen {
    /// The name still leads to the file: it holds a descriptor again.
    Same,
    /// The name leads to another file now (or to none): the followed file
    /// was renamed or removed while it was closed.
    Moved,
}

pub struct TailedFile {
    /// The name the file was last known by.
    pub path: PathBuf,
    /// `None` while the file is closed (descriptor budget, idle).
    file: Option<File>,
    pub id: FileId,
    /// Length and hash of the first bytes, once there are any.
    pub head: Head,
    /// Next byte to read.
    pub read_offset: u64,
    /// Bytes of a line without its newline yet (they end at `read_offset`).
    partial: Vec<u8>,
    /// True while the rest of an over-long line is being skipped.
    skipping: bool,
    /// True while an over-long line is being split: its first pieces were
    /// sent (and the long line counted), the rest follows.
    splitting: bool,
    pub last_growth: Instant,
    /// The file no longer sits at a followed path: read it to its end,
    /// then release it.
    pub rotated_at: Option<Instant>,
    /// Offset up to which every line has been acknowledged.
    pub acked: u64,
    /// The file's size at the last look (to tell what a truncation took).
    seen_size: u64,
    /// Batches sent and not yet acknowledged: (sequence, end offset, done).
    in_flight: VecDeque<(u64, u64, bool)>,
    next_seq: u64,
    /// Bumped on truncation, so acks of batches read before it are ignored.
    pub generation: u64,
    /// After a sink dropped a batch: no reading before this instant, so a
    /// sink that keeps dropping is not fed the same lines in a tight loop.
    pub paused_until: Option<Instant>,
    pub stats: FileStats,
    /// `stats` as last reported to the metrics.
    reported: FileStats,
    /// `path` is a symbolic link (or could not be told apart from one): the
    /// kernel reports changes of the link's directory, not of the file, so
    /// every rescan looks at what the name leads to.
    pub linked: bool,
    /// After a copytruncate, while `file` is the copy of the old content
    /// (read from where reading stopped to its end): the followed file's
    /// own descriptor, read again from 0 after that.
    behind_copy: Option<File>,
    /// While closed: the watch on the file itself, whose write event opens
    /// it again at once.
    pub watch: Option<i32>,
    /// Written to while closed (its watch said so): if it is gone before
    /// it could be opened again, bytes of unknown number are lost.
    pub written_while_closed: bool,
    /// No watch on the file itself could be had: it is not closed when
    /// idle (only for the descriptor budget).
    pub keep_open: bool,
}

impl TailedFile {
    /// Opens `path` and positions it at `offset` (`None`: at the end; an
    /// offset past the end means the file was truncated: 0).
    pub fn open(path: &Path, offset: Option<u64>) -> std::io::Result<TailedFile> {
        let file = File::open(path)?;
        Ok(Self::from_open(path, file, offset))
    }

    /// Follows an already opened `file`, known by `path`.
    pub fn from_open(path: &Path, file: File, offset: Option<u64>) -> TailedFile {
        let id = FileId::of(&file).unwrap_or_default();
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let start = match offset {
            Some(o) if o > size => 0,
            Some(o) => o,
            None => size,
        };
        let mut f = TailedFile {
            path: path.to_path_buf(),
            file: Some(file),
            id,
            head: Head {
                len: 0,
                hash: fnv1a(&[]),
            },
            read_offset: start,
            partial: Vec::new(),
            skipping: false,
            splitting: false,
            last_growth: Instant::now(),
            rotated_at: None,
            acked: start,
            seen_size: start,
            in_flight: VecDeque::new(),
            next_seq: 0,
            generation: 0,
            paused_until: None,
            stats: FileStats::default(),
            reported: FileStats::default(),
            linked: is_link(path),
            behind_copy: None,
            watch: None,
            written_while_closed: false,
            keep_open: false,
        };
        f.refresh_head();
        f
    }

    /// Notes that the file is now known as `path`.
    pub fn renamed(&mut self, path: &Path) {
        self.path = path.to_path_buf();
        self.linked = is_link(path);
    }

    /// The head of `file` as it is now.
    pub fn head_of(file: &File, len: usize) -> Head {
        let mut buf = vec![0u8; len];
        let n = file.read_at(&mut buf, 0).unwrap_or(0);
        Head {
            len: n as u32,
            hash: fnv1a(&buf[..n]),
        }
    }

    fn refresh_head(&mut self) {
        if (self.head.len as usize) < HEAD_BYTES {
            if let Some(file) = &self.file {
                self.head = Self::head_of(file, HEAD_BYTES);
            }
        }
    }

    pub fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// The followed file's descriptor, while open (not a copy's).
    pub fn descriptor(&self) -> Option<&File> {
        self.behind_copy.as_ref().or(self.file.as_ref())
    }

    /// Gives the descriptor back; the file's state stays. (A copy being
    /// read is let go too: reopened, the file is found truncated again, and
    /// the copy read on from the same offset.)
    pub fn close(&mut self) {
        self.file = None;
        self.behind_copy = None;
    }

    /// Opens the file again by its last known name, and checks that the
    /// name still leads to it.
    pub fn reopen(&mut self) -> std::io::Result<Reopen> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Reopen::Moved),
            Err(e) => return Err(e),
        };
        if FileId::of(&file)? != self.id {
            return Ok(Reopen::Moved);
        }
        self.file = Some(file);
        Ok(Reopen::Same)
    }

    /// Gives this file the descriptor of `file` (found under another name).
    pub fn adopt(&mut self, path: &Path, file: File) {
        self.path = path.to_path_buf();
        self.file = Some(file);
    }

    /// Current size of the file (0 while it is closed).
    pub fn size(&self) -> u64 {
        self.file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Whether everything up to the size at the last look has been read.
    pub fn read_what_was_seen(&self) -> bool {
        self.read_offset >= self.seen_size
    }

    /// Size at the last look (also known while closed).
    pub fn seen_size(&self) -> u64 {
        self.seen_size.max(self.read_offset)
    }

    /// Looks at the file's size before a read: restarts at 0 if the file is
    /// now shorter than what was read (copytruncate), or was rewritten from
    /// the start; first, if a copy of the old content lies beside it, the
    /// rest of that content is read from the copy.
    pub fn check_truncation(&mut self) -> Change {
        let Some(file) = self.file.as_ref() else {
            return Change::Nothing;
        };
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        if self.behind_copy.is_some() {
            // the copy is not written to: at its end, back to the file
            if size > self.read_offset {
                self.seen_size = size;
                return Change::Grown;
            }
            self.file = self.behind_copy.take();
            return self.restart(true);
        }
        // shorter than what was read, or rewritten from the start (a
        // truncation followed by new writes can already be longer)
        let shorter = size < self.read_offset;
        let rewritten = !shorter
            && self.head.len > 0
            && Self::head_of(file, self.head.len as usize) != self.head;
        if !shorter && !rewritten {
            self.seen_size = size;
            return if size > self.read_offset {
                Change::Grown
            } else {
                Change::Nothing
            };
        }
        self.stats.truncations += 1;
        if let Some(c) = self.find_copy() {
            self.behind_copy = self.file.replace(c.file);
            self.seen_size = c.size;
            self.stats.missed_bytes += c.dropped;
            return Change::Copied {
                copy: c.path,
                bytes: c.size - self.read_offset,
                dropped: c.dropped,
            };
        }
        self.restart(false)
    }

    /// Whether the end of the old content is being read from its copy.
    pub fn reading_copy(&self) -> bool {
        self.behind_copy.is_some()
    }

    /// Reading starts again at 0, after a truncation.
    fn restart(&mut self, after_copy: bool) -> Change {
        // known to be missed: bytes seen in the file but not yet read when
        // it was truncated, plus an unfinished line; writes after the last
        // look are in the copy only and cannot be seen from here
        let missed = self.seen_size.saturating_sub(self.read_offset) + self.partial.len() as u64;
        self.seen_size = 0;
        self.read_offset = 0;
        self.acked = 0;
        self.partial.clear();
        self.skipping = false;
        self.splitting = false;
        self.in_flight.clear();
        self.generation += 1;
        self.head = Head {
            len: 0,
            hash: fnv1a(&[]),
        };
        self.stats.missed_bytes += missed;
        Change::Truncated { missed, after_copy }
    }

    /// A copy of this file's content as it was before a truncation, beside
    /// it under a rotated name (copytruncate's `app.log.1`, or already
    /// compressed, `app.log.1.gz`), longer than what was read: the same
    /// first bytes, the unfinished line read last where it was, and
    /// changed since the last read (an older rotation whose first lines
    /// happen to be the same is not it).
    fn find_copy(&self) -> Option<copy::Copy> {
        // the copy is written after the lines it holds beyond what was read
        let changed_since = SystemTime::now()
            .checked_sub(self.last_growth.elapsed() + COPY_CLOCK_SLACK)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        copy::find(&copy::Sought {
            path: &self.path,
            head: self.head,
            read_offset: self.read_offset,
            partial: &self.partial,
            changed_since,
        })
    }

    /// Reads the next block and returns its complete lines, if any. `None`
    /// at the end of the file, or while it is closed (a partial last line
    /// stays buffered).
    pub fn read_lines(
        &mut self,
        cfg: &TailSourceConfig,
        now: Instant,
    ) -> std::io::Result<Option<Lines>> {
        let Some(file) = &self.file else {
            return Ok(None);
        };
        let start = self.read_offset - self.partial.len() as u64;
        // a few lines appended need no `read_bytes` block made and zeroed:
        // the size looked at before the read says what is there
        let known = self.seen_size.saturating_sub(self.read_offset) as usize;
        let want = known.clamp(SMALL_READ.min(cfg.read_bytes), cfg.read_bytes);
        let mut block = BytesMut::with_capacity(self.partial.len() + want);
        block.extend_from_slice(&self.partial);
        let n = read_at_end(file, &mut block, want, self.read_offset)?;
        if n == 0 {
            return Ok(None);
        }
        self.read_offset += n as u64;
        self.seen_size = self.seen_size.max(self.read_offset);
        self.stats.bytes_read += n as u64;
        self.last_growth = now;
        self.refresh_head();
        let (mut data, mut count, mut verbatim) = match memchr::memrchr(b'\n', &block) {
            Some(last_nl) => {
                self.partial = block[last_nl + 1..].to_vec();
                block.truncate(last_nl + 1);
                self.clean(block.freeze(), cfg)
            }
            None if self.skipping => {
                // still inside an over-long line being skipped
                self.stats.bytes_skipped += n as u64;
                self.partial.clear();
                (Bytes::new(), 0, false)
            }
            None => {
                self.partial = block.to_vec();
                (Bytes::new(), 0, true)
            }
        };
        if let Some(pieces) = self.limit_partial(cfg) {
            verbatim = false;
            let mut joined = Vec::with_capacity(data.len() + pieces.0.len());
            joined.extend_from_slice(&data);
            joined.extend_from_slice(&pieces.0);
            data = Bytes::from(joined);
            count += pieces.1;
        }
        self.stats.lines += count as u64;
        Ok(Some(Lines {
            data,
            count,
            start,
            end: self.read_offset - self.partial.len() as u64,
            verbatim,
        }))
    }

    /// Handles `\r\n`, over-long lines and a line being skipped or split;
    /// returns the lines, their count, and whether they are the bytes as
    /// read. The fast path (nothing to change) copies nothing.
    fn clean(&mut self, data: Bytes, cfg: &TailSourceConfig) -> (Bytes, usize, bool) {
        let mut count = 0;
        let mut plain = !self.skipping && !self.splitting && memchr::memchr(b'\r', &data).is_none();
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', &data) {
            if nl - start > cfg.max_line_bytes {
                plain = false;
            }
            start = nl + 1;
            count += 1;
        }
        if plain {
            return (data, count, true);
        }
        let mut out = Vec::with_capacity(data.len());
        let mut count = 0;
        for line in data.split_inclusive(|b| *b == b'\n') {
            let mut line = &line[..line.len() - 1];
            if std::mem::take(&mut self.skipping) {
                // the end of a line whose start was skipped
                self.stats.bytes_skipped += line.len() as u64 + 1;
                continue;
            }
            if line.ends_with(b"\r") {
                line = &line[..line.len() - 1];
            }
            if std::mem::take(&mut self.splitting) {
                // the rest of a line whose first pieces were sent: at most
                // `max_line_bytes` (pieces are cut as soon as they are full)
                if !line.is_empty() {
                    count += push_pieces(&mut out, line, cfg.max_line_bytes);
                }
                continue;
            }
            if line.len() > cfg.max_line_bytes {
                self.stats.long_lines += 1;
                match cfg.on_long_line {
                    LongLine::Skip => {
                        self.stats.bytes_skipped += line.len() as u64 + 1;
                        continue;
                    }
                    LongLine::Split => {
                        count += push_pieces(&mut out, line, cfg.max_line_bytes);
                        continue;
                    }
                }
            }
            out.extend_from_slice(line);
            out.push(b'\n');
            count += 1;
        }
        (Bytes::from(out), count, false)
    }

    /// A partial line longer than the limit: skipped from now on, or its
    /// full pieces of exactly `max_line_bytes` are cut off and returned
    /// (the rest, at most `max_line_bytes`, waits for more bytes). The long
    /// line is counted once, when it is first found.
    fn limit_partial(&mut self, cfg: &TailSourceConfig) -> Option<(Vec<u8>, usize)> {
        let max = cfg.max_line_bytes;
        if self.partial.len() <= max {
            return None;
        }
        if !self.splitting && !self.skipping {
            self.stats.long_lines += 1;
        }
        if cfg.on_long_line == LongLine::Skip {
            self.stats.bytes_skipped += self.partial.len() as u64;
            self.partial.clear();
            self.skipping = true;
            return None;
        }
        self.splitting = true;
        // keep 1..=max bytes: the line's last piece is cut when it ends
        let cut = (self.partial.len() - 1) / max * max;
        let mut out = Vec::with_capacity(cut + cut / max);
        let count = push_pieces(&mut out, &self.partial[..cut], max);
        self.partial.drain(..cut);
        Some((out, count))
    }

    /// Takes a partial last line whose file has stopped growing for
    /// `partial_line_timeout` (or any, with `force`, at shutdown).
    pub fn take_partial(&mut self, cfg: &TailSourceConfig, now: Instant) -> Option<Lines> {
        let stale = now.duration_since(self.last_growth) >= cfg.partial_line_timeout;
        if !stale {
            return None;
        }
        self.take_partial_now(cfg)
    }

    /// Takes the partial last line, however fresh.
    pub fn take_partial_now(&mut self, cfg: &TailSourceConfig) -> Option<Lines> {
        if self.partial.is_empty() {
            return None;
        }
        let start = self.read_offset - self.partial.len() as u64;
        let mut line = std::mem::take(&mut self.partial);
        self.splitting = false;
        if line.ends_with(b"\r") {
            line.pop();
        }
        let mut data = Vec::with_capacity(line.len() + 1);
        let count = if line.is_empty() {
            0
        } else {
            push_pieces(&mut data, &line, cfg.max_line_bytes.max(1))
        };
        self.stats.lines += count as u64;
        Some(Lines {
            data: Bytes::from(data),
            count,
            start,
            end: self.read_offset,
            verbatim: false,
        })
    }

    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty()
    }

    /// Registers a batch ending at `end`; returns its sequence number.
    pub fn sent(&mut self, end: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight.push_back((seq, end, false));
        seq
    }

    /// Marks batch `seq` acknowledged and advances `acked` over every
    /// leading acknowledged batch. Returns true if `acked` moved.
    pub fn acknowledged(&mut self, seq: u64) -> bool {
        if let Some(entry) = self.in_flight.iter_mut().find(|(s, _, _)| *s == seq) {
            entry.2 = true;
        }
        let mut moved = false;
        while let Some(&(_, end, true)) = self.in_flight.front() {
            self.acked = end;
            self.in_flight.pop_front();
            moved = true;
        }
        moved
    }

    /// A sink dropped batch `seq`: read again from the last acknowledged
    /// offset (later batches are sent again too: at least once).
    pub fn rejected(&mut self) {
        self.paused_until = Some(Instant::now() + std::time::Duration::from_millis(200));
        self.read_offset = self.acked;
        self.partial.clear();
        self.skipping = false;
        self.splitting = false;
        self.in_flight.clear();
        self.generation += 1;
    }

    /// Counts since the last call (for the metrics).
    pub fn take_new_counts(&mut self) -> FileStats {
        let (s, r) = (self.stats, self.reported);
        self.reported = s;
        FileStats {
            bytes_read: s.bytes_read - r.bytes_read,
            lines: s.lines - r.lines,
            bytes_skipped: s.bytes_skipped - r.bytes_skipped,
            long_lines: s.long_lines - r.long_lines,
            truncations: s.truncations - r.truncations,
            missed_bytes: s.missed_bytes - r.missed_bytes,
        }
    }

    pub fn settled(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// True if nothing is buffered and everything was read.
    pub fn at_end(&self) -> bool {
        self.partial.is_empty() && self.size() <= self.read_offset
    }
}

/// Appends `line` as pieces of at most `max` bytes, each ending in `\n`;
/// returns how many.
fn push_pieces(out: &mut Vec<u8>, line: &[u8], max: usize) -> usize {
    let mut count = 0;
    for piece in line.chunks(max) {
        out.extend_from_slice(piece);
        out.push(b'\n');
        count += 1;
    }
    count
}

/// Whether `path` is a symbolic link; true when it cannot be told.
fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).map_or(true, |m| m.file_type().is_symlink())
}

/// Reads up to `want` bytes of `file` at `offset` onto the end of `block`
/// and returns how many came. The room is read into as it is, not filled
/// with zeros first: at full speed, zeroing each block cost the reader more
/// than finding its lines.
fn read_at_end(
    file: &File,
    block: &mut BytesMut,
    want: usize,
    offset: u64,
) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let offset = libc::off_t::try_from(offset)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    block.reserve(want);
    let room = &mut block.spare_capacity_mut()[..want];
    loop {
        // SAFETY: `room` is valid for writes of `room.len()` bytes, and
        // pread writes at most that many.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                room.as_mut_ptr().cast(),
                room.len(),
                offset,
            )
        };
        if let Ok(n) = usize::try_from(n) {
            // SAFETY: pread initialised the first `n` bytes of the room.
            unsafe { block.set_len(block.len() + n) };
            return Ok(n);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_read_onto_what_they_hold_from_any_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = File::open(&path).unwrap();
        let mut block = BytesMut::from(&b"held:"[..]);
        assert_eq!(read_at_end(&f, &mut block, 4, 3).unwrap(), 4);
        assert_eq!(&block[..], b"held:3456");
        // more room asked than the file has left: what there is
        assert_eq!(read_at_end(&f, &mut block, 100, 7).unwrap(), 3);
        assert_eq!(&block[..], b"held:3456789");
        // at the end: nothing, and nothing changed
        assert_eq!(read_at_end(&f, &mut block, 16, 10).unwrap(), 0);
        assert_eq!(&block[..], b"held:3456789");
        // an offset past what a file offset can be is refused
        assert!(read_at_end(&f, &mut block, 16, u64::MAX).is_err());
    }
    use std::io::Write;

    fn cfg(extra: &str) -> TailSourceConfig {
        toml::from_str(&format!(
            "paths = [\"/x\"]\ntag = \"t\"\nread_bytes = 4096\n{extra}"
        ))
        .unwrap()
    }

    fn read_all(f: &mut TailedFile, cfg: &TailSourceConfig) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(l) = f.read_lines(cfg, Instant::now()).unwrap() {
            out.extend_from_slice(&l.data);
        }
        out
    }

    #[test]
    fn lines_crlf_partial_and_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::fs::write(&p, b"one\r\ntwo\n\nthr").unwrap();
        let c = cfg("partial_line_timeout = \"1ms\"");
        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        assert_eq!(read_all(&mut f, &c), b"one\ntwo\n\n");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let last = f.take_partial(&c, Instant::now()).unwrap();
        assert_eq!(&last.data[..], b"thr\n");
        assert_eq!(last.end, 13);
    }

    #[test]
    fn long_lines_split_or_skip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let long = "x".repeat(10_000);
        std::fs::write(&p, format!("a\n{long}\nb\n")).unwrap();
        let c = cfg("max_line_bytes = 4000");
        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        let text = String::from_utf8(read_all(&mut f, &c)).unwrap();
        let lines: Vec<usize> = text.lines().map(str::len).collect();
        assert_eq!(lines, [1, 4000, 4000, 2000, 1]);
        assert_eq!(f.stats.long_lines, 1);

        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        let skipped = read_all(
            &mut f,
            &cfg("max_line_bytes = 4000\non_long_line = \"skip\""),
        );
        assert_eq!(skipped, b"a\nb\n");
        assert_eq!(f.stats.long_lines, 1);
        assert_eq!(f.stats.bytes_skipped, 10_001);
    }

    /// A 50 MiB line read in 256 KiB blocks with a 1 MiB limit: pieces of
    /// exactly 1 MiB, one long line counted, and the pieces put together
    /// are the line.
    #[test]
    fn a_huge_line_splits_into_exact_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let mib = 1 << 20;
        let line: Vec<u8> = (0..50 * mib + 12_345)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let mut content = b"before\n".to_vec();
        content.extend_from_slice(&line);
        content.extend_from_slice(b"\r\nafter\n");
        std::fs::write(&p, &content).unwrap();
        let c: TailSourceConfig =
            toml::from_str("paths = [\"/x\"]\ntag = \"t\"\nread_bytes = \"256KiB\"").unwrap();
        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        let out = read_all(&mut f, &c);
        let pieces: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
        assert_eq!(pieces.first(), Some(&&b"before"[..]));
        let body = &pieces[1..pieces.len() - 2];
        assert_eq!(pieces[pieces.len() - 2], b"after");
        assert_eq!(body.len(), 51);
        assert!(body[..50].iter().all(|p| p.len() == mib));
        assert_eq!(body[50].len(), 12_345);
        assert!(body.concat() == line, "the pieces are the line");
        assert_eq!(f.stats.long_lines, 1);
        assert_eq!(f.stats.lines, 53);
        assert!(f.settled() && !f.has_partial());
    }

    /// A long line of an exact multiple of the limit ends in a full piece,
    /// not in an empty one; nor does a `\r` left over at its end.
    #[test]
    fn exact_multiples_make_no_empty_piece() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        let c = cfg("max_line_bytes = 4096");
        for ending in ["\n", "\r\n"] {
            std::fs::write(&p, format!("{}{ending}z\n", "y".repeat(3 * 4096))).unwrap();
            let mut f = TailedFile::open(&p, Some(0)).unwrap();
            let text = String::from_utf8(read_all(&mut f, &c)).unwrap();
            let lines: Vec<usize> = text.lines().map(str::len).collect();
            assert_eq!(lines, [4096, 4096, 4096, 1], "{ending:?}");
        }
    }

    #[test]
    fn acks_advance_in_order_and_truncation_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::fs::write(&p, b"1\n2\n").unwrap();
        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        let a = f.sent(2);
        let b = f.sent(4);
        assert!(
            !f.acknowledged(b),
            "the later batch alone does not move the checkpoint"
        );
        assert_eq!(f.acked, 0);
        assert!(f.acknowledged(a));
        assert_eq!(f.acked, 4);
        f.read_offset = 4;
        std::fs::File::create(&p)
            .unwrap()
            .write_all(b"x\n")
            .unwrap();
        assert!(matches!(f.check_truncation(), Change::Truncated { .. }));
        assert_eq!((f.read_offset, f.acked, f.stats.truncations), (0, 0, 1));
    }

    /// Reads like the source's loop: a truncation check before each block.
    fn read_checked(f: &mut TailedFile, cfg: &TailSourceConfig) -> (Vec<Change>, Vec<u8>) {
        let (mut changes, mut out) = (Vec::new(), Vec::new());
        loop {
            match f.check_truncation() {
                Change::Nothing => break,
                Change::Grown => {}
                c => changes.push(c),
            }
            if let Some(l) = f.read_lines(cfg, Instant::now()).unwrap() {
                out.extend_from_slice(&l.data);
            }
        }
        (changes, out)
    }

    #[test]
    fn a_truncated_files_unread_end_is_read_from_its_copy_then_the_file_from_0() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::fs::write(&p, b"1\n2\n").unwrap();
        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        assert_eq!(read_checked(&mut f, &cfg("")).1, b"1\n2\n");
        // more lines and an unfinished one, then copytruncate: a copy that
        // is compressed, one of another file, and the copy
        let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        w.write_all(b"3\n4").unwrap();
        assert_eq!(read_checked(&mut f, &cfg("")).1, b"3\n");
        w.write_all(b"4\n5\n").unwrap();
        std::fs::copy(&p, dir.path().join("a.log.1.gz")).unwrap();
        std::fs::write(dir.path().join("a.log.0"), b"1\n2\n3\n9999\n").unwrap();
        std::fs::copy(&p, dir.path().join("a.log.1")).unwrap();
        w.set_len(0).unwrap();
        w.write_all(b"6\n").unwrap();
        let (changes, read) = read_checked(&mut f, &cfg(""));
        assert_eq!(String::from_utf8(read).unwrap(), "44\n5\n6\n");
        assert_eq!(
            changes,
            [
                Change::Copied {
                    copy: dir.path().join("a.log.1"),
                    bytes: 4,
                    dropped: 0,
                },
                Change::Truncated {
                    missed: 0,
                    after_copy: true
                }
            ]
        );
        assert_eq!(
            (f.read_offset, f.stats.truncations, f.stats.missed_bytes),
            (2, 1, 0)
        );
        // with no copy beside it, what was not read is lost, and counted
        w.write_all(b"7\n8\n").unwrap();
        assert_eq!(read_checked(&mut f, &cfg("")).1, b"7\n8\n");
        w.write_all(b"9\n").unwrap();
        f.check_truncation();
        for rotated in ["a.log.0", "a.log.1"] {
            std::fs::remove_file(dir.path().join(rotated)).unwrap();
        }
        // an older rotation that happens to hold these very lines: not
        // changed since the last read, so not the copy
        let old = dir.path().join("a.log.2");
        std::fs::copy(&p, &old).unwrap();
        std::fs::File::options()
            .append(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::now() - std::time::Duration::from_secs(60))
            .unwrap();
        w.set_len(0).unwrap();
        let (changes, read) = read_checked(&mut f, &cfg(""));
        assert!(read.is_empty());
        assert_eq!(
            changes,
            [Change::Truncated {
                missed: 2,
                after_copy: false
            }]
        );
    }

    #[test]
    fn closed_files_reopen_only_as_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.log");
        std::fs::write(&p, b"1\n").unwrap();
        let mut f = TailedFile::open(&p, Some(0)).unwrap();
        f.close();
        assert!(f.read_lines(&cfg(""), Instant::now()).unwrap().is_none());
        assert_eq!(f.reopen().unwrap(), Reopen::Same);
        assert_eq!(&read_all(&mut f, &cfg(""))[..], b"1\n");
        f.close();
        std::fs::rename(&p, dir.path().join("a.log.1")).unwrap();
        std::fs::write(&p, b"other\n").unwrap();
        assert_eq!(f.reopen().unwrap(), Reopen::Moved);
        assert!(!f.is_open());
    }
}
