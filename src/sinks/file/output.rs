//! One open output file: opening (with the directory fsyncs `fsync` asks
//! for), buffered and vectored writes, and whether the path still names it.

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::telemetry::{Op, Reopen};
use crate::buffer::Delivery;
use crate::event::{next_record, RecordRef};
use crate::format;
use crate::protocol::msgpack::{self, Reader};

/// Most iovecs per writev(2) (Linux's IOV_MAX).
const MAX_IOVECS: usize = 1024;

/// One open output file and what is waiting to be written to it.
pub(super) struct OpenFile {
    pub out: Output,
    /// Bytes in the file up to the end of the last settled delivery: where a
    /// failed write is cut back to.
    pub settled: u64,
    pub opened: Instant,
    pub last_used: Instant,
    /// Formatted records not yet written.
    pub pending: Vec<u8>,
    /// Deliveries whose records are in `pending` or written since the last
    /// settlement: kept until then, to be written again if the file turns
    /// out to be gone from its path.
    pub held: Vec<Delivery>,
    /// Device and inode of the file, to tell whether `path` still names it.
    pub id: (u64, u64),
}

impl OpenFile {
    /// Whether `path` no longer names this file: one stat(2).
    pub fn gone_from(&self, path: &Path) -> Option<Reopen> {
        match std::fs::metadata(path) {
            Ok(m) if (m.dev(), m.ino()) == self.id => None,
            Ok(_) => Some(Reopen::Replaced),
            Err(_) => Some(Reopen::Missing),
        }
    }
}

/// The file itself, and what the writes since the last settlement did.
pub(super) struct Output {
    pub file: File,
    /// Bytes in the file, including writes not yet settled.
    pub size: u64,
    /// The first error since the last settlement, and what failed.
    pub error: Option<(Op, io::Error)>,
}

impl Output {
    /// Writes the slices with writev(2) and clears them (unless an earlier
    /// write of this round failed).
    pub fn write_slices(&mut self, slices: &mut Vec<IoSlice<'_>>) {
        let mut rest = &mut slices[..];
        while self.error.is_none() && !rest.is_empty() {
            match self.file.write_vectored(rest) {
                Ok(0) => self.error = Some((Op::Write, io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    self.size += n as u64;
                    IoSlice::advance_slices(&mut rest, n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => self.error = Some((Op::Write, e)),
            }
        }
        slices.clear();
    }

    /// Writes and clears `buf` (unless an earlier write of this round failed).
    pub fn write(&mut self, buf: &mut Vec<u8>) {
        if self.error.is_none() && !buf.is_empty() {
            match self.file.write_all(buf) {
                Ok(()) => self.size += buf.len() as u64,
                Err(e) => self.error = Some((Op::Write, e)),
            }
        }
        buf.clear();
    }

    /// Writes `buf`, then `data`, in one writev(2), and clears `buf`
    /// (unless an earlier write of this round failed).
    pub fn write_then(&mut self, buf: &mut Vec<u8>, data: &[u8]) {
        let mut slices = vec![IoSlice::new(buf), IoSlice::new(data)];
        slices.retain(|s| !s.is_empty());
        self.write_slices(&mut slices);
        buf.clear();
    }

    /// fsync(2) of the data written (unless a write of this round failed).
    pub fn sync(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.file.sync_data() {
                self.error = Some((Op::Sync, e));
            }
        }
    }
}

/// Raw format for large records: each message is written from the frame
/// it arrived in, with its newline, in writev(2) calls of up to
/// [`MAX_IOVECS`] slices. Records that are not a plain string go through
/// the formatter, in order.
pub(super) fn write_raw_vectored(out: &mut Output, entries: &[u8]) -> msgpack::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(MAX_IOVECS);
    let mut scratch = Vec::new();
    let mut r = Reader::new(entries);
    while !r.is_empty() {
        let rec = RecordRef::Map(next_record(&mut r)?);
        match format::raw_text(rec) {
            Some(text) => {
                slices.push(IoSlice::new(text));
                slices.push(IoSlice::new(b"\n"));
                if slices.len() + 2 > MAX_IOVECS {
                    out.write_slices(&mut slices);
                }
            }
            None => {
                out.write_slices(&mut slices);
                format::write_raw_record(rec, &mut scratch);
                out.write(&mut scratch);
            }
        }
    }
    out.write_slices(&mut slices);
    Ok(())
}

/// How far back from the end [`cut_torn_line`] looks for a newline before
/// it leaves a file as it is.
const TORN_LINE_LOOKBACK: u64 = 1 << 20;

/// Cuts `file` back to just after its last newline when it ends inside a
/// line: a write that a kill -9 (or a crash) cut short, whose records were
/// never acknowledged and will be written again. Without the cut, the next
/// record would be glued to the fragment. Returns the bytes cut. A file
/// with no newline in its last [`TORN_LINE_LOOKBACK`] bytes, or none at
/// all, is left as it is: it is not a file of lines this sink wrote.
pub(super) fn cut_torn_line(file: &File, size: u64) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut end = size;
    let mut buf = vec![0u8; 64 * 1024];
    while end > 0 && size - end < TORN_LINE_LOOKBACK {
        let len = buf.len().min(end as usize);
        let start = end - len as u64;
        file.read_exact_at(&mut buf[..len], start)?;
        if end == size && buf[len - 1] == b'\n' {
            return Ok(0);
        }
        if let Some(at) = buf[..len].iter().rposition(|&b| b == b'\n') {
            let keep = start + at as u64 + 1;
            file.set_len(keep)?;
            return Ok(size - keep);
        }
        end = start;
    }
    Ok(0)
}

/// Opens `path` for append, creating it and its directories. With `fsync`,
/// every directory whose entries changed (a directory created, the file
/// created) is fsynced before this returns, so a file whose records are
/// then acknowledged survives a power loss under its name. With `lines`
/// (a format of one record per line), a file that ends inside a line is
/// first cut back to its last whole line ([`cut_torn_line`]). Returns the
/// file, how many directories were fsynced and how many torn bytes were
/// cut.
pub(super) fn open_append(
    path: &Path,
    fsync: bool,
    lines: bool,
) -> io::Result<(OpenFile, usize, u64)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // directories that will hold a new entry, deepest first
    let mut changed: Vec<PathBuf> = Vec::new();
    if fsync && !dir.is_dir() {
        let mut d = dir;
        while !d.is_dir() {
            changed.push(d.to_path_buf());
            match d.parent() {
                Some(p) if !p.as_os_str().is_empty() => d = p,
                _ => {
                    d = Path::new(".");
                    break;
                }
            }
        }
        changed.push(d.to_path_buf());
    }
    std::fs::create_dir_all(dir)?;
    let (file, created) = match OpenOptions::new().append(true).create_new(true).open(path) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (
            OpenOptions::new().create(true).append(true).open(path)?,
            false,
        ),
        Err(e) => return Err(e),
    };
    if fsync && created && changed.is_empty() {
        changed.push(dir.to_path_buf());
    }
    for d in &changed {
        File::open(d)?.sync_all()?;
    }
    let meta = file.metadata()?;
    let cut = if lines && !created && meta.is_file() && meta.len() > 0 {
        // append mode does not open for reading: read through a second handle
        cut_torn_line(
            &OpenOptions::new().read(true).write(true).open(path)?,
            meta.len(),
        )?
    } else {
        0
    };
    let size = meta.len() - cut;
    let now = Instant::now();
    Ok((
        OpenFile {
            out: Output {
                file,
                size,
                error: None,
            },
            settled: size,
            opened: now,
            last_used: now,
            pending: Vec::new(),
            held: Vec::new(),
            id: (meta.dev(), meta.ino()),
        },
        changed.len(),
        cut,
    ))
}
