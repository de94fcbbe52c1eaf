//! The kernel's change events for the directories the globs can match
//! (inotify, read directly: the events must be read in order, every one
//! queued so far at once, with rename pairs kept together).
//!
//! Filesystems without inotify (NFS, some overlays) give no events; the
//! tail source polls files there, and rescans its globs on a timer
//! everywhere.

use std::collections::HashMap;
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
}

pub struct Watcher {
    /// The descriptor's registration with the runtime, while the reader
    /// waits for events. A reader letting lines gather (its `linger`)
    /// reads the events when it is done and drops it, so the lines written
    /// meanwhile do not wake its thread. Declared before `fd`: it is
    /// dropped (deregistered) before the descriptor is closed.
    waiting: Option<AsyncFd<RawFd>>,
    /// The last registration failed (said once, not at every turn).
    unregistered: bool,
    fd: OwnedFd,
    dirs: HashMap<i32, PathBuf>,
    by_dir: HashMap<PathBuf, i32>,
    buf: Vec<u8>,
}

const MASK: u32 = libc::IN_CREATE
    | libc::IN_MODIFY
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

impl Watcher {
    /// An inotify instance (must be called inside a tokio runtime).
    pub fn new() -> std::io::Result<Watcher> {
        // SAFETY: inotify_init1 takes flags only and returns a descriptor
        // or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Watcher {
            fd,
            waiting: None,
            unregistered: false,
            dirs: HashMap::new(),
            by_dir: HashMap::new(),
            buf: vec![0; 256 * 1024],
        })
    }

    /// Watches `dir` (again: a no-op). Fails where the filesystem has no
    /// events or the watch limit is reached.
    pub fn watch(&mut self, dir: &Path) -> std::io::Result<()> {
        if self.by_dir.contains_key(dir) {
            return Ok(());
        }
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: a valid descriptor and C string.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), MASK) };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.dirs.insert(wd, dir.to_path_buf());
        self.by_dir.insert(dir.to_path_buf(), wd);
        Ok(())
    }

    pub fn is_watched(&self, dir: &Path) -> bool {
        self.by_dir.contains_key(dir)
    }

    /// Resolves once events are waiting (at once if some were queued
    /// before the call).
    pub async fn ready(&mut self) {
        if self.waiting.is_none() {
            // registering a descriptor that is readable already reports it
            // SAFETY: `self.fd` stays open while the registration lives:
            // `waiting` is dropped first (field order, `rest`)
            match unsafe {
                AsyncFd::register_with_interest(self.fd.as_raw_fd(), Interest::READABLE)
            } {
                Ok(fd) => {
                    self.waiting = Some(fd);
                    self.unregistered = false;
                }
                Err(e) => {
                    let e = e.into_parts().1;
                    // the timers (rescans, polls) still find the changes;
                    // the next turn tries again
                    if !std::mem::replace(&mut self.unregistered, true) {
                        tracing::warn!(error = %e, "cannot wait for file events; polling until that works again");
                    }
                    return std::future::pending().await;
                }
            }
        }
        if let Some(fd) = &self.waiting {
            if let Ok(mut guard) = fd.readable().await {
                guard.clear_ready();
            }
        }
    }

    /// Stops waiting for events until the next [`Watcher::ready`]: events
    /// queue in the kernel meanwhile and [`Watcher::read`] takes them.
    pub fn rest(&mut self) {
        // dropping the registration removes the descriptor from the
        // runtime's epoll set; the descriptor itself stays open
        self.waiting = None;
    }

    /// Every event queued so far, in order, without waiting.
    pub fn read(&mut self) -> Vec<Change> {
        let mut raw = Vec::new();
        loop {
            // SAFETY: reads into our buffer, within its length.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                )
            };
            if n <= 0 {
                break;
            }
            parse(&self.buf[..n as usize], &mut raw);
        }
        self.changes(raw)
    }

    /// Turns raw events into changes: names made whole, rename halves
    /// paired by their cookie, directories that went away forgotten.
    fn changes(&mut self, raw: Vec<RawEvent>) -> Vec<Change> {
        let mut out = Vec::with_capacity(raw.len());
        // index in `out` of each rename's first half, by cookie
        let mut from: HashMap<u32, usize> = HashMap::new();
        for e in raw {
            if e.mask & libc::IN_Q_OVERFLOW != 0 {
                out.push(Change::Overflow);
                continue;
            }
            if e.mask & libc::IN_IGNORED != 0 {
                if let Some(dir) = self.dirs.remove(&e.wd) {
                    self.by_dir.remove(&dir);
                }
                continue;
            }
            let Some(dir) = self.dirs.get(&e.wd) else {
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
                        let Change::MovedAway(old) =
                            std::mem::replace(&mut out[i], Change::Overflow)
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
}

struct RawEvent {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: Vec<u8>,
}

/// Splits a buffer of `struct inotify_event`s.
fn parse(mut buf: &[u8], out: &mut Vec<RawEvent>) {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
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
    use super::*;

    fn raw(wd: i32, mask: u32, cookie: u32, name: &str) -> RawEvent {
        RawEvent {
            wd,
            mask,
            cookie,
            name: name.as_bytes().to_vec(),
        }
    }

    #[tokio::test]
    async fn renames_pair_and_overflow_passes_through() {
        let mut w = Watcher::new().unwrap();
        w.dirs.insert(1, PathBuf::from("/logs"));
        let changes = w.changes(vec![
            raw(1, libc::IN_CREATE, 0, "app.log"),
            raw(1, libc::IN_MOVED_FROM, 7, "app.log"),
            raw(1, libc::IN_MOVED_TO, 7, "app.log.1"),
            raw(1, libc::IN_MOVED_FROM, 8, "gone.log"),
            raw(1, libc::IN_MOVED_TO, 9, "in.log"),
            raw(-1, libc::IN_Q_OVERFLOW, 0, ""),
            raw(1, libc::IN_CREATE | libc::IN_ISDIR, 0, "sub"),
            raw(1, libc::IN_MODIFY, 0, "app.log"),
        ]);
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
}
