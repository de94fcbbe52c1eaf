//! The filesystem the kernel talks to: a directory tree kept in memory,
//! where every write is cut into records and shipped before it returns.
//! Requests that may wait (write, flush, release, fsync) run as in
//! `request`; the rest answer at once, holding the tree's lock briefly.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BsdFileFlags, Errno, FileHandle, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};
use tokio::time::Instant;

use super::config::FuseSourceConfig;
use super::mirror::{self, Mirror};
use super::pipeline::{OnShutdown, Pipeline};
use super::room::{LineRoom, WaitingRequests};
use super::telemetry::{Held, Refused};
use super::tree::Tree;
use super::write::{OpenFile, OpenSlot};
use crate::memory::MemoryBudget;

/// How long the kernel may cache names and attributes. logferry is the
/// only one changing the tree, always through the kernel, so caching is
/// safe; it spares a lookup per `open`.
const TTL: Duration = Duration::from_secs(1);

/// Block size `statfs` reports.
const BLOCK: u64 = 4096;

/// State shared by the request threads, their tasks and the source's
/// shutdown.
pub struct Shared {
    pub config: FuseSourceConfig,
    tree: Mutex<Tree>,
    files: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_fh: AtomicU64,
    pub pipeline: Pipeline,
    mirror: Option<Mirror>,
    /// The process budget (for `statfs`).
    memory: MemoryBudget,
    /// Room for unfinished lines.
    pub(super) lines: Arc<LineRoom>,
    /// Bound on what requests waiting in tasks hold.
    pub(super) waiting: WaitingRequests,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tree, locked; publishes its inode count when let go.
pub(super) struct TreeLock<'a> {
    tree: MutexGuard<'a, Tree>,
    held: &'a Held,
}

impl Deref for TreeLock<'_> {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.tree
    }
}

impl DerefMut for TreeLock<'_> {
    fn deref_mut(&mut self) -> &mut Tree {
        &mut self.tree
    }
}

impl Drop for TreeLock<'_> {
    fn drop(&mut self) {
        self.held.inodes.store(self.tree.len(), Ordering::Relaxed);
    }
}

impl Shared {
    pub fn new(
        config: FuseSourceConfig,
        pipeline: Pipeline,
        memory: MemoryBudget,
        name: Arc<str>,
    ) -> Result<Self, String> {
        let mirror = config.mirror_dir.as_deref().map(Mirror::new).transpose()?;
        let held = pipeline.metrics.held.clone();
        let lines = LineRoom::new(memory.clone(), name, held.line_bytes.clone());
        // one write waiting: its records and its new unfinished line
        let waiting = WaitingRequests::new(2 * config.max_write + 2 * config.max_line_bytes);
        let tree = Tree::new(config.max_inodes);
        held.inodes.store(tree.len(), Ordering::Relaxed);
        Ok(Shared {
            config,
            tree: Mutex::new(tree),
            files: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            pipeline,
            mirror,
            memory,
            lines,
            waiting,
        })
    }

    pub(super) fn tree(&self) -> TreeLock<'_> {
        TreeLock {
            tree: lock(&self.tree),
            held: &self.pipeline.metrics.held,
        }
    }

    pub(super) fn path(&self, ino: u64) -> String {
        self.tree().path(ino).unwrap_or_default()
    }

    fn file(&self, fh: FileHandle) -> Option<Arc<OpenFile>> {
        lock(&self.files).get(&fh.0).cloned()
    }

    /// Every open descriptor.
    pub(super) fn open_files(&self) -> Vec<Arc<OpenFile>> {
        lock(&self.files).values().cloned().collect()
    }

    /// When a request has to be answered by.
    fn deadline(&self) -> Instant {
        Instant::now() + self.pipeline.write_timeout()
    }

    /// Creates a file or directory in the tree, counting a refusal at
    /// `max_inodes`.
    fn create_node(&self, parent: u64, name: &OsStr, dir: bool, perm: u16) -> Result<u64, Errno> {
        let created = self.tree().create(parent, name, dir, perm);
        if created == Err(Errno::ENOSPC) {
            let path = child_path(&self.path(parent), name);
            self.pipeline.metrics.refused(Refused::Inodes, &path);
        }
        created
    }

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
        self.create_node(parent.0, name, dir, (mode & 0o7777) as u16)
    }

    /// A place among the open descriptors, or ENFILE (counted).
    fn open_slot(&self, path: impl FnOnce() -> String) -> Result<OpenSlot, Errno> {
        let held = &self.pipeline.metrics.held;
        OpenSlot::take(held, self.config.max_open_files).ok_or_else(|| {
            self.pipeline.metrics.refused(Refused::OpenFiles, &path());
            Errno::ENFILE
        })
    }

    /// Registers an open descriptor of `ino`.
    fn open_file(&self, ino: u64, slot: OpenSlot) -> Result<FileHandle, Errno> {
        let mirror = match &self.mirror {
            Some(m) => Some(m.open(&self.path(ino)).map_err(|e| self.mirror_errno(e))?),
            None => None,
        };
        {
            let mut tree = self.tree();
            let node = tree.get_mut(ino).ok_or(Errno::ENOENT)?;
            if node.is_dir() {
                return Err(Errno::EISDIR);
            }
            node.open += 1;
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let file = OpenFile::new(ino, mirror, slot);
        lock(&self.files).insert(fh, Arc::new(file));
        Ok(FileHandle(fh))
    }

    /// A descriptor of `ino` is gone.
    fn closed(&self, ino: u64) {
        let mut tree = self.tree();
        if let Some(n) = tree.get_mut(ino) {
            n.open = n.open.saturating_sub(1);
        }
        tree.collect(ino);
    }

    fn entry(&self, ino: u64, reply: ReplyEntry) {
        match self.tree().attr(ino) {
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
        let found = self.0.tree().lookup(parent.0, name);
        match found {
            Ok(ino) => self.0.entry(ino, reply),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.0.tree().forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.0.tree().attr(ino.0) {
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
        let mut tree = self.0.tree();
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
        let done = self
            .0
            .tree()
            .rename(parent.0, name, newparent.0, newname, no_replace);
        if let Err(e) = done {
            return reply.error(e);
        }
        match self.0.mirror_op(|m| m.rename(&from, &to)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let slot = match self.0.open_slot(|| self.0.path(ino.0)) {
            Ok(s) => s,
            Err(e) => return reply.error(e),
        };
        match self.0.open_file(ino.0, slot) {
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
        // the descriptor's place first: a file created and then not opened
        // would stay behind
        let slot = match self
            .0
            .open_slot(|| child_path(&self.0.path(parent.0), name))
        {
            Ok(s) => s,
            Err(e) => return reply.error(e),
        };
        let ino = match self.0.create_node(parent.0, name, false, perm) {
            Ok(ino) => ino,
            Err(e) => return reply.error(e),
        };
        let fh = match self.0.open_file(ino, slot) {
            Ok(fh) => fh,
            Err(e) => return reply.error(e),
        };
        match self.0.tree().attr(ino) {
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
        match &file.mirror {
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
        self.0.write(file, offset, data, reply)
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
        let shared = self.0.clone();
        let deadline = shared.deadline();
        let work = async move {
            // counted and logged inside when either fails
            // the closer waits for this line's acknowledgement next
            shared
                .clone()
                .ship_line(file.clone(), deadline, OnShutdown::Abort, true)
                .await
                .map_err(drop)?;
            shared.wait_acks(&file, deadline).await.map_err(drop)
        };
        // the line is charged already: nothing is held outside the budget
        self.0.run(work, 0, deadline, Err(()), move |r| match r {
            Ok(()) => reply.ok(),
            Err(()) => reply.error(Errno::EIO),
        });
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
        let Some(file) = lock(&self.0.files).remove(&fh.0) else {
            return reply.ok();
        };
        let shared = self.0.clone();
        let deadline = shared.deadline();
        let work = async move {
            let ino = file.ino;
            // counted and logged inside when it fails
            let _ = shared
                .clone()
                .ship_line(file, deadline, OnShutdown::Finish, false)
                .await;
            shared.closed(ino);
        };
        // nothing held outside the budget; at most one per descriptor
        self.0.run(work, 0, deadline, (), move |()| reply.ok());
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
        let shared = self.0.clone();
        let deadline = shared.deadline();
        let work = async move { shared.wait_acks(&file, deadline).await };
        self.0.run(work, 0, deadline, Ok(()), move |r| match r {
            Ok(()) => reply.ok(),
            Err(_) => reply.error(Errno::EIO),
        });
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
        // one reply's worth of entries, straight from the tree
        let listed = self
            .0
            .tree()
            .read_dir(ino.0, offset, |child, kind, name, next| {
                reply.add(INodeNo(child), next, kind, name)
            });
        match listed {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
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
        // nothing is stored, but what is held waiting for the sinks or
        // for a newline is in the memory budget: its size and what is
        // free of it are the room there is; inodes are max_inodes
        let memory = &self.0.memory;
        let blocks = memory.limit() as u64 / BLOCK;
        let used = (memory.used() as u64).div_ceil(BLOCK);
        let free = blocks.saturating_sub(used);
        let files = self.0.config.max_inodes as u64;
        let ffree = files.saturating_sub(self.0.tree().len() as u64);
        reply.statfs(
            blocks,
            free,
            free,
            files,
            ffree,
            BLOCK as u32,
            255,
            BLOCK as u32,
        );
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }
}

fn remove(shared: &Shared, parent: INodeNo, name: &OsStr, dir: bool, reply: ReplyEmpty) {
    let path = child_path(&shared.path(parent.0), name);
    let done = shared.tree().remove(parent.0, name, dir);
    if let Err(e) = done {
        return reply.error(e);
    }
    match shared.mirror_op(|m| m.remove(&path, dir)) {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}
