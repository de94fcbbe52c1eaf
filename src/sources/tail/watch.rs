//! The kernel's change events for the directories the globs can match
//! (inotify, read directly: the events must be read in order, every one
//! queued so far at once, with rename pairs kept together). Names
//! (creations, renames, removals) and writes come in two inotify
//! instances, so that a reader letting lines gather is woken by a new file
//! but not by the lines written meanwhile. A followed file that gave its
//! descriptor back (idle, or the descriptor budget) is watched by itself
//! in the names queue, so a write to it wakes the reader even then.
//!
//! Filesystems without inotify (NFS, some overlays) give no events; the
//! tail source polls files there, and rescans its globs on a timer
//! everywhere.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// What happened to a name in a watched directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A file was created under this name (or moved in from an unwatched
    /// directory).
    Created(PathBuf),
    /// A file was written to (or truncated).
    Modified(PathBuf),
    /// The name was unlinked.
    Removed(PathBuf),
    /// A file was renamed; both names are in watched directories.
    Moved { from: PathBuf, to: PathBuf },
    /// A file was renamed out of the watched directories.
    MovedAway(PathBuf),
    /// A directory appeared: it may hold files to follow.
    DirCreated(PathBuf),
    /// The kernel's event queue overflowed: events were lost, so every
    /// glob must be expanded again.
    Overflow,
    /// A file watched by itself ([`Watcher::watch_file`]) was written to;
    /// the watch's id.
    FileWritten(i32),
}

pub struct Watcher {
    /// Creations, renames and removals (and, without `writes`, writes too).
    names: Queue,
    /// Writes, apart from the names: a reader letting lines gather (its
    /// `linger`) is not woken by the lines written meanwhile, but is by a
    /// new file, which it opens at once, before it can be removed. `None`
    /// where a second inotify instance could not be had: a reader letting
    /// lines gather then sees new names at the linger's end.
    writes: Option<Queue>,
    /// The last registration failed (said once, not at every turn).
    unregistered: bool,
    by_dir: HashMap<PathBuf, i32>,
    buf: Vec<u8>,
}

/// One inotify instance and the directories it watches.
struct Queue {
    /// The descriptor's registration with the runtime, while the reader
    /// waits for its events. Declared before `fd`: it is dropped
    /// (deregistered) before the descriptor is closed.
    waiting: Option<AsyncFd<RawFd>>,
    fd: OwnedFd,
    mask: u32,
    dirs: HashMap<i32, PathBuf>,
    /// Files watched by themselves (names queue only).
    files: HashSet<i32>,
}

/// What the names queue reports.
const NAMES: u32 = libc::IN_CREATE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// What the writes queue reports.
const WRITES: u32 = libc::IN_MODIFY | libc::IN_ONLYDIR;

/// What a file watched by itself reports.
const FILE_WRITES: u32 = libc::IN_MODIFY;

impl Queue {
    fn new(mask: u32) -> std::io::Result<Queue> {
        // SAFETY: inotify_init1 takes flags only and returns a descriptor
        // or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Queue {
            waiting: None,
            // SAFETY: `raw` is a descriptor we own from here on.
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            mask,
            dirs: HashMap::new(),
            files: HashSet::new(),
        })
    }

    fn watch(&mut self, dir: &Path, c: &std::ffi::CStr) -> std::io::Result<i32> {
        // SAFETY: a valid descriptor and C string.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), self.mask) };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.dirs.insert(wd, dir.to_path_buf());
        Ok(wd)
    }

    /// Registers the descriptor with the runtime, if it is not.
    fn register(&mut self) -> std::io::Result<()> {
        if self.waiting.is_none() {
            // registering a descriptor that is readable already reports it
            // SAFETY: `self.fd` stays open while the registration lives:
            // `waiting` is dropped first (field order, `Watcher::rest`)
            let fd =
                unsafe { AsyncFd::register_with_interest(self.fd.as_raw_fd(), Interest::READABLE) }
                    .map_err(|e| e.into_parts().1)?;
            self.waiting = Some(fd);
        }
        Ok(())
    }

    /// Resolves once events are waiting (never while not registered). A
    /// readiness left over from events already read (by a wait that ended
    /// on the other queue) is cleared, not taken for new events.
    async fn readable(&self) {
        let Some(fd) = &self.waiting else {
            return std::future::pending().await;
        };
        loop {
            let Ok(mut guard) = fd.readable().await else {
                return;
            };
            if self.queued() {
                return;
            }
            guard.clear_ready();
        }
    }

    /// Whether events are queued.
    fn queued(&self) -> bool {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer.
        let ok = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::FIONREAD, &mut n) } == 0;
        // if it cannot be asked, a read finds out
        !ok || n > 0
    }

    /// Every event queued so far, in order, without waiting.
    fn read(&self, buf: &mut [u8], out: &mut Vec<RawEvent>) {
        loop {
            // SAFETY: reads into `buf`, within its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            parse(&buf[..n as usize], out);
            // a read that left room for the largest event took every one
            // queued: no second read to be told there are none (events
            // queued since are read at the next turn, or wake the reader)
            if n as usize + MAX_EVENT <= buf.len() {
                break;
            }
        }
    }
}

impl Watcher {
    /// Two inotify instances, one for names and one for writes (one for
    /// both if a second cannot be had); must be called inside a tokio
    /// runtime.
    pub fn new() -> std::io::Result<Watcher> {
        let names = Queue::new(NAMES)?;
        Ok(Self::of(names, Queue::new(WRITES).ok()))
    }

    fn of(mut names: Queue, writes: Option<Queue>) -> Watcher {
        if writes.is_none() {
            // nothing is watched yet: the one queue takes both
            names.mask |= WRITES;
        }
        Watcher {
            names,
            writes,
            unregistered: false,
            by_dir: HashMap::new(),
            buf: vec![0; 256 * 1024],
        }
    }

    /// Watches `dir` (again: a no-op). Fails where the filesystem has no
    /// events or the watch limit is reached.
    pub fn watch(&mut self, dir: &Path) -> std::io::Result<()> {
        if self.by_dir.contains_key(dir) {
            return Ok(());
        }
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        if let Some(w) = &mut self.writes {
            w.watch(dir, &c)?;
        }
        let wd = self.names.watch(dir, &c)?;
        self.by_dir.insert(dir.to_path_buf(), wd);
        Ok(())
    }

    pub fn is_watched(&self, dir: &Path) -> bool {
        self.by_dir.contains_key(dir)
    }

    /// Watches the open `file` by itself (whatever its name is now, even
    /// none) in the names queue, so that a write to it wakes a reader
    /// letting lines gather; returns the watch's id. Fails where names and
    /// writes share one queue (nothing wakes that reader) and where the
    /// watch limit is reached.
    pub fn watch_file(&mut self, file: &std::fs::File) -> std::io::Result<i32> {
        if self.writes.is_none() {
            return Err(std::io::Error::from(std::io::ErrorKind::Unsupported));
        }
        // the descriptor's link in /proc leads to the file itself, not to
        // whatever its name leads to by now
        let link = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        let q = &mut self.names;
        // SAFETY: a valid descriptor and C string.
        let wd = unsafe { libc::inotify_add_watch(q.fd.as_raw_fd(), link.as_ptr(), FILE_WRITES) };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        q.files.insert(wd);
        Ok(wd)
    }

    /// Stops watching a file watched by [`Watcher::watch_file`].
    pub fn unwatch_file(&mut self, wd: i32) {
        if self.names.files.remove(&wd) {
            // SAFETY: a valid descriptor; an id the kernel no longer knows
            // is refused (EINVAL), nothing else happens
            unsafe { libc::inotify_rm_watch(self.names.fd.as_raw_fd(), wd) };
        }
    }

    /// Resolves once events are waiting (at once if some were queued
    /// before the call).
    pub async fn ready(&mut self) {
        if !self.register(true) {
            return std::future::pending().await;
        }
        match &self.writes {
            Some(w) => tokio::select! {
                _ = self.names.readable() => {}
                _ = w.readable() => {}
            },
            None => self.names.readable().await,
        }
    }

    /// While the reader lets lines gather: resolves once a name changed (a
    /// file created, renamed or removed), not for writes; never where
    /// names and writes share one queue.
    pub async fn names_ready(&mut self) {
        self.rest();
        if self.writes.is_none() || !self.register(false) {
            return std::future::pending().await;
        }
        self.names.readable().await
    }

    /// Registers the names queue (and the writes queue if `writes`); false
    /// (said once) if that failed: the timers (rescans, polls) still find
    /// the changes, and the next turn tries again.
    fn register(&mut self, writes: bool) -> bool {
        let done = self.names.register().and_then(|()| match &mut self.writes {
            Some(w) if writes => w.register(),
            _ => Ok(()),
        });
        match done {
            Ok(()) => {
                self.unregistered = false;
                true
            }
            Err(e) => {
                if !std::mem::replace(&mut self.unregistered, true) {
                    tracing::warn!(error = %e, "cannot wait for file events; polling until that works again");
                }
                false
            }
        }
    }

    /// Stops waiting for writes until the next [`Watcher::ready`] (for any
    /// event, where names and writes share one queue): events queue in the
    /// kernel meanwhile and [`Watcher::read`] takes them.
    fn rest(&mut self) {
        // dropping a registration removes the descriptor from the
        // runtime's epoll set; the descriptor itself stays open
        match &mut self.writes {
            Some(w) => w.waiting = None,
            None => self.names.waiting = None,
        }
    }

    /// Every event queued so far, in order (the names' before the writes'),
    /// without waiting.
    pub fn read(&mut self) -> Vec<Change> {
        let mut changes = self.take_names();
        if let Some(w) = &mut self.writes {
            let mut raw = Vec::new();
            w.read(&mut self.buf, &mut raw);
            changes.extend(changes_of(&raw, &mut w.dirs, &mut w.files, None));
        }
        changes
    }

    /// Every change of names queued so far (nothing where names and writes
    /// share one queue: those events wait for [`Watcher::read`]).
    pub fn read_names(&mut self) -> Vec<Change> {
        if self.writes.is_none() {
            return Vec::new();
        }
        self.take_names()
    }

    /// Every event of the names queue so far, as changes.
    fn take_names(&mut self) -> Vec<Change> {
        let mut raw = Vec::new();
        self.names.read(&mut self.buf, &mut raw);
        let q = &mut self.names;
        changes_of(&raw, &mut q.dirs, &mut q.files, Some(&mut self.by_dir))
    }
}

/// Turns raw events into changes: names made whole, rename halves paired
/// by their cookie, directories that went away forgotten (in `dirs`, the
/// queue's, and in `by_dir`, the watcher's, if given), writes to files
/// watched by themselves (`files`) by their watch.
fn changes_of(
    raw: &[RawEvent],
    dirs: &mut HashMap<i32, PathBuf>,
    files: &mut HashSet<i32>,
    mut by_dir: Option<&mut HashMap<PathBuf, i32>>,
) -> Vec<Change> {
    let mut out = Vec::with_capacity(raw.len());
    // index in `out` of each rename's first half, by cookie
    let mut from: HashMap<u32, usize> = HashMap::new();
    for e in raw {
        if e.mask & libc::IN_Q_OVERFLOW != 0 {
            out.push(Change::Overflow);
            continue;
        }
        if files.contains(&e.wd) {
            if e.mask & libc::IN_IGNORED != 0 {
                files.remove(&e.wd);
            } else if e.mask & libc::IN_MODIFY != 0 {
                out.push(Change::FileWritten(e.wd));
            }
            continue;
        }
        if e.mask & libc::IN_IGNORED != 0 {
            if let (Some(dir), Some(by_dir)) = (dirs.remove(&e.wd), by_dir.as_deref_mut()) {
                by_dir.remove(&dir);
            }
            continue;
        }
        let Some(dir) = dirs.get(&e.wd) else {
            continue;
        };
        if e.name.is_empty() {
            continue; // the directory itself (deleted or moved)
        }
        let path = dir.join(OsStr::from_bytes(&e.name));
        let is_dir = e.mask & libc::IN_ISDIR != 0;
        if is_dir {
            if e.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
                out.push(Change::DirCreated(path));
            }
            continue;
        }
        if e.mask & libc::IN_MOVED_FROM != 0 {
            from.insert(e.cookie, out.len());
            out.push(Change::MovedAway(path));
        } else if e.mask & libc::IN_MOVED_TO != 0 {
            match from.remove(&e.cookie) {
                Some(i) => {
                    let Change::MovedAway(old) = std::mem::replace(&mut out[i], Change::Overflow)
                    else {
                        unreachable!("only MovedAway is indexed by cookie")
                    };
                    out[i] = Change::Moved {
                        from: old,
                        to: path,
                    };
                }
                None => out.push(Change::Created(path)),
            }
        } else if e.mask & libc::IN_CREATE != 0 {
            out.push(Change::Created(path));
        } else if e.mask & libc::IN_MODIFY != 0 {
            out.push(Change::Modified(path));
        } else if e.mask & libc::IN_DELETE != 0 {
            out.push(Change::Removed(path));
        }
    }
    out
}

struct RawEvent {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: Vec<u8>,
}

/// Bytes of a `struct inotify_event` before its name.
const HEADER: usize = std::mem::size_of::<libc::inotify_event>();

/// Bytes of the largest event: the header and the longest name with its
/// terminating zero.
const MAX_EVENT: usize = HEADER + libc::NAME_MAX as usize + 1;

/// Splits a buffer of `struct inotify_event`s.
fn parse(mut buf: &[u8], out: &mut Vec<RawEvent>) {
    while buf.len() >= HEADER {
        let word = |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let (wd, mask, cookie, len) = (word(0) as i32, word(4), word(8), word(12) as usize);
        let end = (HEADER + len).min(buf.len());
        let name = &buf[HEADER..end];
        let name = &name[..memchr::memchr(0, name).unwrap_or(name.len())];
        out.push(RawEvent {
            wd,
            mask,
            cookie,
            name: name.to_vec(),
        });
        buf = &buf[end..];
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn raw(wd: i32, mask: u32, cookie: u32, name: &str) -> RawEvent {
        RawEvent {
            wd,
            mask,
            cookie,
            name: name.as_bytes().to_vec(),
        }
    }

    #[test]
    fn renames_pair_and_overflow_passes_through() {
        let mut dirs = HashMap::from([(1, PathBuf::from("/logs"))]);
        let changes = changes_of(
            &[
                raw(1, libc::IN_CREATE, 0, "app.log"),
                raw(1, libc::IN_MOVED_FROM, 7, "app.log"),
                raw(1, libc::IN_MOVED_TO, 7, "app.log.1"),
                raw(1, libc::IN_MOVED_FROM, 8, "gone.log"),
                raw(1, libc::IN_MOVED_TO, 9, "in.log"),
                raw(-1, libc::IN_Q_OVERFLOW, 0, ""),
                raw(1, libc::IN_CREATE | libc::IN_ISDIR, 0, "sub"),
                raw(1, libc::IN_MODIFY, 0, "app.log"),
            ],
            &mut dirs,
            &mut HashSet::new(),
            None,
        );
        let p = |s: &str| PathBuf::from(format!("/logs/{s}"));
        assert_eq!(
            changes,
            vec![
                Change::Created(p("app.log")),
                Change::Moved {
                    from: p("app.log"),
                    to: p("app.log.1")
                },
                Change::MovedAway(p("gone.log")),
                Change::Created(p("in.log")),
                Change::Overflow,
                Change::DirCreated(p("sub")),
                Change::Modified(p("app.log")),
            ]
        );
    }

    #[tokio::test]
    async fn real_events_arrive_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Watcher::new().unwrap();
        w.watch(dir.path()).unwrap();
        let a = dir.path().join("a.log");
        std::fs::write(&a, b"x\n").unwrap();
        std::fs::rename(&a, dir.path().join("a.log.1")).unwrap();
        w.ready().await;
        let changes = w.read();
        assert_eq!(changes.first(), Some(&Change::Created(a.clone())));
        assert!(changes.contains(&Change::Moved {
            from: a,
            to: dir.path().join("a.log.1")
        }));
    }

    #[tokio::test]
    async fn events_that_fill_the_buffer_are_all_read_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::new(NAMES).unwrap();
        let path = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid descriptor and C string.
        let wd = unsafe { libc::inotify_add_watch(q.fd.as_raw_fd(), path.as_ptr(), q.mask) };
        assert!(wd >= 0);
        // names of 200 bytes: two events nearly fill a buffer of two of
        // the largest, so each read is followed by another
        let names: Vec<String> = (0..50)
            .map(|i| format!("{i:03}{}", "n".repeat(197)))
            .collect();
        for n in &names {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        let mut buf = vec![0u8; 2 * MAX_EVENT];
        let mut raw = Vec::new();
        q.read(&mut buf, &mut raw);
        let created: Vec<String> = raw
            .iter()
            .filter(|e| e.mask & libc::IN_CREATE != 0)
            .map(|e| String::from_utf8(e.name.clone()).unwrap())
            .collect();
        assert_eq!(created, names);
        // and a read that took them all left none behind
        let mut again = Vec::new();
        q.read(&mut buf, &mut again);
        assert!(again.is_empty());
    }

    /// A watched directory, a file `a.log` created in it, and the changes
    /// that creation brought.
    async fn watching_a_new_file() -> (tempfile::TempDir, Watcher, PathBuf, Vec<Change>) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Watcher::new().unwrap();
        w.watch(dir.path()).unwrap();
        let a = dir.path().join("a.log");
        std::fs::write(&a, b"x\n").unwrap();
        w.ready().await;
        let changes = w.read();
        (dir, w, a, changes)
    }

    #[tokio::test]
    async fn while_lines_gather_a_new_name_wakes_the_reader_and_a_write_does_not() {
        let (dir, mut w, a, changes) = watching_a_new_file().await;
        assert!(changes.contains(&Change::Created(a.clone())));
        // written to: no wake while lines gather, the write waits for read
        std::fs::OpenOptions::new()
            .append(true)
            .open(&a)
            .unwrap()
            .write_all(b"y\n")
            .unwrap();
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(200), w.names_ready()).await;
        assert!(
            waited.is_err(),
            "a write woke a reader letting lines gather"
        );
        assert!(w.read_names().is_empty());
        // a new file wakes it, and only the names are read then
        let b = dir.path().join("b.log");
        std::fs::write(&b, b"z\n").unwrap();
        w.names_ready().await;
        assert_eq!(w.read_names(), [Change::Created(b.clone())]);
        // the writes are all there at the next read
        let changes = w.read();
        assert!(changes.contains(&Change::Modified(a)), "{changes:?}");
        assert!(changes.contains(&Change::Modified(b)), "{changes:?}");
    }

    #[tokio::test]
    async fn a_file_watched_by_itself_wakes_a_reader_letting_lines_gather_under_any_name() {
        let (dir, mut w, a, _) = watching_a_new_file().await;
        let file = std::fs::File::open(&a).unwrap();
        let wd = w.watch_file(&file).unwrap();
        drop(file);
        // renamed away, then written: the watch follows the file
        let moved = dir.path().join("a.log.1");
        std::fs::rename(&a, &moved).unwrap();
        w.names_ready().await;
        w.read_names();
        let mut out = std::fs::OpenOptions::new()
            .append(true)
            .open(&moved)
            .unwrap();
        out.write_all(b"y\n").unwrap();
        w.names_ready().await;
        assert_eq!(w.read_names(), [Change::FileWritten(wd)]);
        // no longer watched: a write wakes nothing while lines gather
        w.unwatch_file(wd);
        out.write_all(b"z\n").unwrap();
        let waited = tokio::time::timeout(std::time::Duration::from_millis(200), async {
            loop {
                w.names_ready().await;
                if !w.read_names().is_empty() {
                    break;
                }
            }
        })
        .await;
        assert!(waited.is_err(), "woken by a file no longer watched");
    }

    #[tokio::test]
    async fn with_one_queue_nothing_wakes_a_reader_letting_lines_gather() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Watcher::of(Queue::new(NAMES).unwrap(), None);
        w.watch(dir.path()).unwrap();
        let a = dir.path().join("a.log");
        std::fs::write(&a, b"x\n").unwrap();
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(200), w.names_ready()).await;
        assert!(waited.is_err(), "woken while lines gather");
        assert!(w.read_names().is_empty());
        w.ready().await;
        assert_eq!(w.read(), [Change::Created(a.clone()), Change::Modified(a)]);
    }
}
