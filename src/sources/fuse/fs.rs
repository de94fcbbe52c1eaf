//! The filesystem the kernel talks to: a directory tree kept in memory,
//! where every write is cut into records and shipped before it returns.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BsdFileFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};

use super::config::{FuseMode, FuseSourceConfig};
use super::encode::{cut_lines, Entries, EntryWriter};
use super::mirror::{self, Mirror};
use super::pipeline::{OnShutdown, Pending, Pipeline};
use super::telemetry::WriteError;
use super::tree::Tree;
use crate::event::EventTime;

/// How long the kernel may cache names and attributes. logferry is the
/// only one changing the tree, always through the kernel, so caching is
/// safe; it spares a lookup per `open`.
const TTL: Duration = Duration::from_secs(1);

/// One open descriptor.
pub struct OpenFile {
    ino: u64,
    state: Mutex<OpenState>,
    /// Records shipped through this descriptor not yet settled by sinks.
    pending: Arc<Pending>,
}

#[derive(Default)]
struct OpenState {
    /// The last line written, until its newline comes (or the close).
    partial: Vec<u8>,
    /// The mirror file, with `mirror_dir`.
    mirror: Option<File>,
}

/// State shared by the request threads and the source's shutdown.
pub struct Shared {
    pub config: FuseSourceConfig,
    tree: Mutex<Tree>,
    files: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_fh: AtomicU64,
    pub pipeline: Pipeline,
    mirror: Option<Mirror>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn new(config: FuseSourceConfig, pipeline: Pipeline) -> Result<Self, String> {
        let mirror = config.mirror_dir.as_deref().map(Mirror::new).transpose()?;
        Ok(Shared {
            config,
            tree: Mutex::new(Tree::new()),
            files: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            pipeline,
            mirror,
        })
    }

    fn path(&self, ino: u64) -> String {
        lock(&self.tree).path(ino).unwrap_or_default()
    }

    fn file(&self, fh: FileHandle) -> Option<Arc<OpenFile>> {
        lock(&self.files).get(&fh.0).cloned()
    }

    /// Registers an open descriptor of `ino`.
    /// Makes a file or directory `name` in `parent` (in the mirror first,
    /// if there is one) with the permission bits of `mode`.
    fn make(&self, parent: INodeNo, name: &OsStr, dir: bool, mode: u32) -> Result<u64, Errno> {
        let path = child_path(&self.path(parent.0), name);
        self.mirror_op(|m| {
            if dir {
                m.mkdir(&path)
            } else {
                m.open(&path).map(drop)
            }
        })?;
        lock(&self.tree).create(parent.0, name, dir, (mode & 0o7777) as u16)
    }

    fn open_file(&self, ino: u64) -> Result<FileHandle, Errno> {
        let mirror = match &self.mirror {
            Some(m) => Some(m.open(&self.path(ino)).map_err(|e| self.mirror_errno(e))?),
            None => None,
        };
        {
            let mut tree = lock(&self.tree);
            let node = tree.get_mut(ino).ok_or(Errno::ENOENT)?;
            if node.is_dir() {
                return Err(Errno::EISDIR);
            }
            node.open += 1;
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let file = OpenFile {
            ino,
            state: Mutex::new(OpenState {
                partial: Vec::new(),
                mirror,
            }),
            pending: Arc::default(),
        };
        lock(&self.files).insert(fh, Arc::new(file));
        Ok(FileHandle(fh))
    }

    /// Cuts `data` into records, ships them and mirrors the bytes; on an
    /// error nothing of `data` counts as written.
    fn write(&self, file: &OpenFile, offset: u64, data: &[u8]) -> Result<(), WriteError> {
        let path = self.path(file.ino);
        if self.pipeline.is_closing() {
            return Err(WriteError::Closed);
        }
        let mut state = lock(&file.state);
        if let Some(m) = &state.mirror {
            mirror::write_at(m, data, offset).map_err(|_| WriteError::Mirror)?;
        }
        let mut entries = Entries::default();
        // room for long lines; short ones grow it (each adds its header)
        entries.bytes.reserve(data.len() + data.len() / 8 + 256);
        let binary = self.config.mode == FuseMode::Binary;
        let mut w = EntryWriter::new(&mut entries, EventTime::now(), &path, binary);
        let rest = if binary {
            w.push(data);
            Vec::new()
        } else {
            cut_lines(&state.partial, data, self.config.max_line_bytes, &mut w)
        };
        let tag = self.config.tag_for(&path);
        self.pipeline
            .ship(&tag, &path, entries, &file.pending, OnShutdown::Abort)?;
        state.partial = rest;
        drop(state);
        let mut tree = lock(&self.tree);
        if let Some(n) = tree.get_mut(file.ino) {
            n.size = n.size.max(offset + data.len() as u64);
            n.mtime = SystemTime::now();
        }
        Ok(())
    }

    /// Ships the descriptor's unfinished last line, if any.
    fn flush_partial(&self, file: &OpenFile, on_shutdown: OnShutdown) -> Result<(), WriteError> {
        let mut state = lock(&file.state);
        if state.partial.is_empty() {
            return Ok(());
        }
        let path = self.path(file.ino);
        let mut entries = Entries::default();
        let mut w = EntryWriter::new(&mut entries, EventTime::now(), &path, false);
        w.push(&state.partial);
        let tag = self.config.tag_for(&path);
        match self
            .pipeline
            .ship(&tag, &path, entries, &file.pending, on_shutdown)
        {
            Ok(()) => {
                state.partial.clear();
                Ok(())
            }
            Err(e) => {
                self.pipeline
                    .metrics
                    .write_failed(e, &path, state.partial.len());
                Err(e)
            }
        }
    }

    /// Waits until every record of the descriptor is settled by the sinks.
    fn wait_acks(&self, file: &OpenFile) -> Result<(), Errno> {
        file.pending.wait(self.config.write_timeout).map_err(|e| {
            let path = self.path(file.ino);
            self.pipeline.metrics.sync_failed(&path, e.reason());
            Errno::EIO
        })
    }

    /// At shutdown: ships the unfinished last line of every open file.
    pub fn flush_all(&self) {
        let files: Vec<Arc<OpenFile>> = lock(&self.files).values().cloned().collect();
        for f in files {
            let _ = self.flush_partial(&f, OnShutdown::Finish);
        }
    }

    fn entry(&self, ino: u64, reply: ReplyEntry) {
        match lock(&self.tree).attr(ino) {
            Some(a) => reply.entry(&TTL, &a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mirror_op(&self, op: impl FnOnce(&Mirror) -> io::Result<()>) -> Result<(), Errno> {
        match &self.mirror {
            Some(m) => op(m).map_err(|e| self.mirror_errno(e)),
            None => Ok(()),
        }
    }

    /// A failed mirror operation, logged and counted, as the caller's errno.
    fn mirror_errno(&self, e: io::Error) -> Errno {
        self.pipeline.metrics.mirror_failed(&e);
        Errno::from(e)
    }
}

fn child_path(parent: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if parent.is_empty() {
        name.into_owned()
    } else {
        format!("{parent}/{name}")
    }
}

/// The filesystem handed to fuser.
pub struct FuseFs(pub Arc<Shared>);

impl Filesystem for FuseFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let want = self.0.config.max_write as u32;
        if let Err(nearest) = config.set_max_write(want) {
            let _ = config.set_max_write(nearest);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let found = lock(&self.0.tree).lookup(parent.0, name);
        match found {
            Ok(ino) => self.0.entry(ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        lock(&self.0.tree).forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match lock(&self.0.tree).attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Some(size) = size {
            let path = self.0.path(ino.0);
            if let Err(e) = self.0.mirror_op(|m| m.truncate(&path, size)) {
                return reply.error(e);
            }
        }
        let mut tree = lock(&self.0.tree);
        let Some(n) = tree.get_mut(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        if let Some(size) = size {
            if n.is_dir() {
                return reply.error(Errno::EISDIR);
            }
            // records already shipped stay shipped: a truncate only makes
            // the file read as shorter
            n.size = size;
            n.mtime = SystemTime::now();
        }
        if let Some(mode) = mode {
            n.perm = (mode & 0o7777) as u16;
        }
        match mtime {
            Some(TimeOrNow::SpecificTime(t)) => n.mtime = t,
            Some(TimeOrNow::Now) => n.mtime = SystemTime::now(),
            None => {}
        }
        n.ctime = SystemTime::now();
        match tree.attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(Errno::EPERM);
        }
        match self.0.make(parent, name, false, mode & !umask) {
            Ok(ino) => self.0.entry(ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        match self.0.make(parent, name, true, mode & !umask) {
            Ok(ino) => self.0.entry(ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        remove(&self.0, parent, name, false, reply)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        remove(&self.0, parent, name, true, reply)
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            return reply.error(Errno::EINVAL);
        }
        let from = child_path(&self.0.path(parent.0), name);
        let to = child_path(&self.0.path(newparent.0), newname);
        let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        let done = lock(&self.0.tree).rename(parent.0, name, newparent.0, newname, no_replace);
        if let Err(e) = done {
            return reply.error(e);
        }
        match self.0.mirror_op(|m| m.rename(&from, &to)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.0.open_file(ino.0) {
            // direct I/O: writes come as the writer made them (up to
            // max_write), without a copy through the page cache
            Ok(fh) => reply.opened(fh, FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let perm = (mode & !umask & 0o7777) as u16;
        let created = lock(&self.0.tree).create(parent.0, name, false, perm);
        let ino = match created {
            Ok(ino) => ino,
            Err(e) => return reply.error(e),
        };
        let fh = match self.0.open_file(ino) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        match lock(&self.0.tree).attr(ino) {
            Some(a) => reply.created(&TTL, &a, Generation(0), fh, FopenFlags::FOPEN_DIRECT_IO),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Some(file) = self.0.file(fh) else {
            return reply.error(Errno::EBADF);
        };
        let state = lock(&file.state);
        match &state.mirror {
            // without a mirror the bytes are gone once shipped: reads see
            // an empty file
            None => reply.data(&[]),
            Some(m) => match mirror::read_at(m, offset, size as usize) {
                Ok(data) => reply.data(&data),
                Err(e) => reply.error(self.0.mirror_errno(e)),
            },
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let Some(file) = self.0.file(fh) else {
            return reply.error(Errno::EBADF);
        };
        match self.0.write(&file, offset, data) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => {
                let path = self.0.path(file.ino);
                self.0.pipeline.metrics.write_failed(e, &path, data.len());
                reply.error(Errno::EIO)
            }
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        if !self.0.config.ack_on_close {
            return reply.ok();
        }
        let Some(file) = self.0.file(fh) else {
            return reply.error(Errno::EBADF);
        };
        if self.0.flush_partial(&file, OnShutdown::Abort).is_err() {
            return reply.error(Errno::EIO);
        }
        match self.0.wait_acks(&file) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let file = lock(&self.0.files).remove(&fh.0);
        if let Some(file) = file {
            // counted and logged inside when it fails
            let _ = self.0.flush_partial(&file, OnShutdown::Finish);
            let mut tree = lock(&self.0.tree);
            if let Some(n) = tree.get_mut(file.ino) {
                n.open = n.open.saturating_sub(1);
            }
            tree.collect(file.ino);
        }
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let Some(file) = self.0.file(fh) else {
            return reply.error(Errno::EBADF);
        };
        match self.0.wait_acks(&file) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let entries = match lock(&self.0.tree).entries(ino.0) {
            Ok(e) => e,
            Err(e) => return reply.error(e),
        };
        for (i, (child, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), i as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // nothing is stored: report plenty of room, so tools that check
        // free space before writing go ahead
        let blocks = 1 << 40 >> 12;
        reply.statfs(blocks, blocks, blocks, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }
}

fn remove(shared: &Shared, parent: INodeNo, name: &OsStr, dir: bool, reply: ReplyEmpty) {
    let path = child_path(&shared.path(parent.0), name);
    let done = lock(&shared.tree).remove(parent.0, name, dir);
    if let Err(e) = done {
        return reply.error(e);
    }
    match shared.mirror_op(|m| m.remove(&path, dir)) {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}
