//! Which files the tail source follows: glob expansion, the kernel's change
//! events, renames, and what a restart finds.
//!
//! Events only say which names to look at; what a name leads to is decided
//! by looking (statx, or fstat of the opened descriptor), so a late event
//! never makes a newer file pass for an older one. A file is known by its
//! place (device, inode) and birth time.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::checkpoint::{FileId, HEAD_BYTES};
use super::copy::is_rotated_sibling;
use super::file::TailedFile;
use super::watch::Change;
use super::{TailSource, RESCAN_AFTER_EVENT};

/// How far before the checkpoint's last write a file not in it must have
/// changed to be read at a restart as a rotation logferry may have missed.
const CHANGED_SINCE_SLACK: Duration = Duration::from_secs(1);

/// Deepest directory walk for `**` globs.
const MAX_DEPTH: usize = 16;

/// Every this many rescans, every followed file is looked at (once a minute
/// at the default `refresh_interval`): what events cannot tell, such as a
/// directory of the path now being another one (a link to a directory
/// pointed elsewhere), is noticed within that.
pub(super) const RESCAN_SWEEP: u32 = 12;

impl TailSource {
    /// Start-up: the checkpoint, the globs, then the checkpointed files
    /// that were renamed while logferry was down, and rotations of followed
    /// files it may not have seen.
    pub(super) fn start_up(&mut self) -> Result<(), String> {
        let loaded = match &self.checkpoint {
            Some(c) => c.load()?,
            None => None,
        };
        let written = match loaded {
            Some((parsed, written)) => {
                self.first_start = false;
                for line in parsed.malformed {
                    self.metrics.checkpoint_malformed_lines.inc();
                    tracing::warn!(source = %self.cx.name, file = %self.checkpoint.as_ref().map(|c| c.path().display().to_string()).unwrap_or_default(), line,
                        "ignoring a malformed checkpoint line; the file it was about is read from 0 if it is still followed");
                }
                self.saved = parsed.entries;
                Some(written)
            }
            None => None,
        };
        self.rescan(true);
        let Some(written) = written else {
            return Ok(());
        };
        // every directory of a followed file or of a checkpointed one
        let mut dirs: Vec<PathBuf> = self
            .files
            .values()
            .map(|f| f.path.clone())
            .chain(self.saved.values().map(|e| e.path.clone()))
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .collect();
        dirs.sort();
        dirs.dedup();
        let mut bases: HashSet<(PathBuf, Vec<u8>)> = HashSet::new();
        for p in self
            .files
            .values()
            .map(|f| &f.path)
            .chain(self.saved.values().map(|e| &e.path))
        {
            if let (Some(dir), Some(name)) = (p.parent(), p.file_name()) {
                use std::os::unix::ffi::OsStrExt;
                bases.insert((dir.to_path_buf(), name.as_bytes().to_vec()));
            }
        }
        let since = written.checked_sub(CHANGED_SINCE_SLACK).unwrap_or(written);
        for dir in dirs {
            self.search_dir(&dir, &bases, since);
        }
        for (_, e) in std::mem::take(&mut self.saved) {
            let unread = e.size.saturating_sub(e.offset);
            self.metrics.lost_files.inc();
            self.metrics.lost_bytes.add(unread);
            tracing::warn!(source = %self.cx.name, path = %e.path.display(), unread_bytes_at_least = unread,
                "a checkpointed file is gone (removed while logferry was down); its unread lines are lost");
        }
        self.dirty = true;
        Ok(())
    }

    /// Looks through `dir` for checkpointed files under new names, and for
    /// rotated siblings of followed files (`app.log.1`, `app.log-2026…`)
    /// that changed since the checkpoint was written (rotated while
    /// logferry was down, or before it saved them).
    fn search_dir(&mut self, dir: &Path, bases: &HashSet<(PathBuf, Vec<u8>)>, since: SystemTime) {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let place = (meta.dev(), meta.ino());
            if self.places.contains_key(&place) {
                continue;
            }
            if let Some(e) = self.saved.get(&place).cloned() {
                let Ok(file) = std::fs::File::open(&path) else {
                    continue;
                };
                let id = FileId::of(&file).unwrap_or_default();
                let head = TailedFile::head_of(&file, e.head.len as usize);
                if !e.id.same_file(e.head, id, head) {
                    continue;
                }
                self.saved.remove(&place);
                self.metrics.found_renamed.inc();
                tracing::info!(source = %self.cx.name, was = %e.path.display(), path = %path.display(), offset = e.offset,
                    "a checkpointed file was renamed while logferry was down; reading it to its end");
                self.adopt_new(&path, file, Some(e.offset), true);
                continue;
            }
            let name = entry.file_name();
            let name = name.as_bytes();
            let sibling = bases
                .iter()
                .any(|(d, base)| d == dir && is_rotated_sibling(name, base));
            let changed = meta.modified().is_ok_and(|m| m >= since);
            if sibling && changed && !self.is_excluded(&path) {
                let Ok(file) = std::fs::File::open(&path) else {
                    continue;
                };
                tracing::info!(source = %self.cx.name, path = %path.display(),
                    "a rotated file changed since the last checkpoint and is not in it; reading it from the start");
                self.metrics.found_renamed.inc();
                self.adopt_new(&path, file, Some(0), true);
            }
        }
    }

    /// Expands the globs: follows new files, notices rotated and removed
    /// ones, and watches the directories files can appear in.
    ///
    /// A followed file the kernel reports on (at its name in a watched
    /// directory, the name not a link) is not looked at: its renaming,
    /// removal or growth comes as an event, so a thousand idle files cost
    /// no system call each. Every [`RESCAN_SWEEP`]th rescan, at start-up,
    /// and after the kernel's event queue overflowed, every file is.
    pub(super) fn rescan(&mut self, startup: bool) {
        self.rescans = self.rescans.wrapping_add(1);
        let sweep = startup || self.overflowed || self.rescans.is_multiple_of(RESCAN_SWEEP);
        self.overflowed = false;
        let mut found = Vec::new();
        let mut reported = Vec::new();
        let mut dirs = HashSet::new();
        for pattern in &self.config.paths {
            let root = glob_root(pattern);
            dirs.insert(root.clone());
            if let Some(parent) = Path::new(pattern).parent() {
                let parent = parent.to_string_lossy();
                if parent.contains("**") {
                    walk_dirs(&root, 0, &mut dirs);
                } else if parent.contains(['*', '?', '[']) {
                    if let Ok(ds) = glob::glob(&parent) {
                        dirs.extend(ds.flatten().filter(|d| d.is_dir()));
                    }
                }
            }
            let Ok(paths) = glob::glob(pattern) else {
                continue;
            };
            for path in paths.flatten() {
                if self.is_excluded(&path) {
                    continue;
                }
                if !sweep {
                    if let Some(f) = self.names.get(&path).map(|k| &self.files[k]) {
                        if !f.linked && !self.needs_looks(f) {
                            reported.push((path, f.id));
                            continue;
                        }
                    }
                }
                // one statx a path: a regular file, its identity and size
                if let Ok(Some((id, size))) = FileId::stat_regular(&path) {
                    found.push((path, id, size));
                }
            }
        }
        if let Some(w) = &mut self.watcher {
            for dir in &dirs {
                if let Err(e) = w.watch(dir) {
                    if self.warned.allow("watch").is_some() {
                        tracing::debug!(source = %self.cx.name, dir = %dir.display(), error = %e, "no change events for this directory; its files are polled");
                    }
                }
            }
        }
        let found_set: HashSet<&PathBuf> = found
            .iter()
            .map(|(path, _, _)| path)
            .chain(reported.iter().map(|(path, _)| path))
            .collect();
        // followed live files whose name is no longer among the matches
        let gone: Vec<PathBuf> = self
            .files
            .values()
            .filter(|f| f.rotated_at.is_none() && !found_set.contains(&f.path))
            .map(|f| f.path.clone())
            .collect();
        for p in gone {
            self.check_name(&p);
        }
        let mut present: HashSet<_> = reported.iter().map(|(_, id)| id.place()).collect();
        for &(ref path, id, size) in &found {
            present.insert(id.place());
            if let Some(&key) = self.names.get(path) {
                let f = &self.files[&key];
                if f.id == id {
                    if size != f.seen_size() || !f.is_open() && size > f.read_offset {
                        self.wake(key);
                    }
                    continue;
                }
                // the path names another file now: the followed one rotated
                self.check_name(path);
            }
            if let Some(&key) = self.places.get(&id.place()) {
                if self.files[&key].id == id {
                    self.wake(key);
                    continue;
                }
            }
            self.follow_new(path, startup);
        }
        // offsets of files no longer at a matching path are not kept, so
        // the checkpoint does not grow across restarts (start-up looks for
        // renamed ones before this runs again)
        if !startup {
            let before = self.saved.len();
            self.saved.retain(|place, _| present.contains(place));
            if self.saved.len() != before {
                self.dirty = true;
            }
        }
    }

    /// Handles the change events read so far, in order.
    pub(super) fn on_changes(&mut self, changes: Vec<Change>) {
        let mut check = Vec::new();
        let mut resolve = Vec::new();
        for c in changes {
            match c {
                Change::Overflow => {
                    self.metrics.overflows.inc();
                    self.overflowed = true;
                    if let Some(held) = self.warned.allow("overflow") {
                        tracing::warn!(source = %self.cx.name, suppressed = held,
                            "the kernel's event queue overflowed; expanding every glob again");
                    }
                    self.rescan_soon = Some(Instant::now());
                }
                Change::FileWritten(wd) => self.reopen_written(wd),
                Change::DirCreated(_) => {
                    let soon = Instant::now() + RESCAN_AFTER_EVENT;
                    self.rescan_soon = Some(self.rescan_soon.map_or(soon, |t| t.min(soon)));
                }
                Change::Created(p) => {
                    if self.matches(&p) {
                        resolve.push(p);
                    }
                }
                Change::Modified(p) => match self.names.get(&p) {
                    Some(&key) => self.wake(key),
                    None if self.matches(&p) => resolve.push(p),
                    None => {}
                },
                Change::Removed(p) | Change::MovedAway(p) => {
                    if self.names.contains_key(&p) {
                        check.push(p);
                    }
                }
                Change::Moved { from, to } => {
                    // a followed file, or one created under a followed name
                    // and maybe not opened yet: look at its new name
                    let chase = self.names.contains_key(&from) || self.matches(&from);
                    if self.names.contains_key(&from) {
                        check.push(from);
                    }
                    if chase || self.matches(&to) {
                        resolve.push(to);
                    }
                }
            }
        }
        for p in check {
            self.check_name(&p);
        }
        let mut seen = HashSet::new();
        for p in resolve {
            if seen.insert(p.clone()) {
                self.resolve(&p);
            }
        }
    }

    /// The followed file known as `path`: does the name still lead to it?
    /// If not, it was rotated (renamed or removed): read it to its end.
    fn check_name(&mut self, path: &Path) {
        let Some(&key) = self.names.get(path) else {
            return;
        };
        let now = stat(path).ok().map(|(id, _)| id);
        if now == Some(self.files[&key].id) {
            return;
        }
        self.names.remove(path);
        self.mark_rotated(key);
    }

    /// Looks at what `path` leads to now: a followed file under a new name,
    /// or a file to follow.
    fn resolve(&mut self, path: &Path) {
        let Ok((id, _)) = stat(path) else {
            return; // gone again already
        };
        if let Some(&key) = self.places.get(&id.place()) {
            if self.files[&key].id == id {
                self.rename(key, path);
                self.wake(key);
                return;
            }
        }
        if self.names.contains_key(path) {
            self.check_name(path);
        }
        self.follow_new(path, false);
    }

    /// File `key` is now known as `path`.
    fn rename(&mut self, key: u64, path: &Path) {
        let f = self.files.get_mut(&key).expect("followed");
        if f.path == path {
            self.names.insert(path.to_path_buf(), key);
            return;
        }
        let old = f.path.clone();
        f.renamed(path);
        if self.names.get(&old) == Some(&key) {
            self.names.remove(&old);
        }
        self.names.insert(path.to_path_buf(), key);
        let live = self.files[&key].rotated_at.is_none();
        if live && !self.matches(path) {
            self.mark_rotated(key);
        }
    }

    pub(super) fn mark_rotated(&mut self, key: u64) {
        let Some(f) = self.files.get_mut(&key) else {
            return;
        };
        if f.rotated_at.is_some() {
            return;
        }
        f.rotated_at = Some(Instant::now());
        self.metrics.rotations.inc();
        if self.config.per_file_metrics {
            let registry = &self.cx.metrics;
            let source = &self.cx.name;
            self.per_file
                .entry(f.path.clone())
                .or_insert_with(|| super::FileCounters::new(registry, source, &f.path))
                .rotations
                .inc();
        }
        tracing::info!(source = %self.cx.name, path = %f.path.display(), "file rotated; reading the old one to its end");
        self.wake(key);
    }

    /// Opens a file found at `path` and follows it.
    fn follow_new(&mut self, path: &Path, startup: bool) {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => {
                self.open_failed(path, &e);
                return;
            }
        };
        let id = FileId::of(&file).unwrap_or_default();
        if let Some(&key) = self.places.get(&id.place()) {
            if self.files[&key].id == id {
                return; // followed already (under another name)
            }
        }
        let head = TailedFile::head_of(&file, HEAD_BYTES);
        let known = |e: &super::checkpoint::Entry| {
            e.id.same_file(
                e.head,
                id,
                if (e.head.len as usize) < HEAD_BYTES {
                    TailedFile::head_of(&file, e.head.len as usize)
                } else {
                    head
                },
            )
        };
        let offset = if let Some(e) = self.saved.remove(&id.place()) {
            if known(&e) {
                Some(e.offset)
            } else {
                tracing::info!(source = %self.cx.name, path = %path.display(), "the checkpoint is for an earlier file with the same inode; reading from the start");
                Some(0)
            }
        } else if let Some((e, _)) = self.released.remove(&id.place()) {
            known(&e).then_some(e.offset).or(Some(0))
        } else if startup && self.first_start && !self.config.read_from_head {
            None
        } else {
            Some(0)
        };
        let rotated = !self.matches(path);
        self.adopt_new(path, file, offset, rotated);
    }

    /// Follows an opened `file` known as `path` from `offset`.
    fn adopt_new(&mut self, path: &Path, file: std::fs::File, offset: Option<u64>, rotated: bool) {
        let key = self.next_key;
        self.next_key += 1;
        let mut f = TailedFile::from_open(path, file, offset);
        tracing::info!(source = %self.cx.name, path = %path.display(), offset = f.read_offset, rotated, "following file");
        if rotated {
            // found under a rotated name (renamed away before it was
            // opened, or while logferry was down): a rotation all the same
            f.rotated_at = Some(Instant::now());
            self.metrics.rotations.inc();
        }
        if self
            .names
            .get(path)
            .is_some_and(|k| self.files.contains_key(k))
        {
            let old = self.names[path];
            self.names.remove(path);
            self.mark_rotated(old);
        }
        self.names.insert(path.to_path_buf(), key);
        self.places.insert(f.id.place(), key);
        self.files.insert(key, f);
        self.open += 1;
        // over the budget: wait (closed) for a turn, unless it is rotated
        // (it could vanish) and room can be made
        if self.open > self.budget && !(rotated && self.make_room(key)) {
            self.give_back(key, false);
        }
        self.wake(key);
        self.dirty = true;
        let soon = Instant::now() + super::CHECKPOINT_NEW_FILE;
        self.next_checkpoint = self.next_checkpoint.min(soon);
    }

    /// File `key` could not be opened again by its name: it was renamed
    /// (or removed) while it held no descriptor. Looks for it in its
    /// directory; if it is gone, what it held unread is lost and counted.
    pub(super) fn find_moved(&mut self, key: u64) {
        use std::os::unix::fs::MetadataExt;
        let f = &self.files[&key];
        let (id, dir, old) = (f.id, f.path.parent().map(Path::to_path_buf), f.path.clone());
        let found = dir
            .and_then(|d| std::fs::read_dir(d).ok())
            .into_iter()
            .flat_map(|entries| entries.flatten())
            .map(|e| e.path())
            .find(|p| {
                std::fs::metadata(p).is_ok_and(|m| (m.dev(), m.ino()) == id.place())
                    && stat(p).is_ok_and(|(now, _)| now == id)
            });
        if self.names.get(&old) == Some(&key) {
            self.names.remove(&old);
        }
        match found.and_then(|p| std::fs::File::open(&p).ok().map(|file| (p, file))) {
            Some((path, file)) => {
                let f = self.files.get_mut(&key).expect("followed");
                f.adopt(&path, file);
                self.open += 1;
                self.names.insert(path.clone(), key);
                if self.files[&key].rotated_at.is_none() && !self.matches(&path) {
                    self.mark_rotated(key);
                }
            }
            None => {
                let f = &self.files[&key];
                let unread = f.seen_size().saturating_sub(f.read_offset);
                // without a watch on it, writes after it was closed went
                // unseen: how much they held cannot be known
                let unknown = f.written_while_closed || f.watch.is_none();
                if unread == 0 && !unknown {
                    tracing::info!(source = %self.cx.name, path = %old.display(),
                        "a file that had given its descriptor back was removed; it had been read to its end");
                } else {
                    self.metrics.lost_files.inc();
                    self.metrics.lost_bytes.add(unread);
                    tracing::warn!(source = %self.cx.name, path = %old.display(), unread_bytes_at_least = unread, written_after_close = unknown,
                        "a file that had given its descriptor back was removed before it was read to its end (lines written after it was closed, if any, are lost too: their bytes cannot be counted)");
                }
                self.forget(key);
            }
        }
    }

    /// Logs (rate-limited) and counts a failed open.
    pub(super) fn open_failed(&mut self, path: &Path, e: &std::io::Error) {
        self.metrics.open_errors.inc();
        let kind = match e.raw_os_error() {
            Some(libc::EMFILE) | Some(libc::ENFILE) => "descriptors",
            Some(libc::EACCES) | Some(libc::EPERM) => "permission",
            Some(libc::ENOENT) => return, // gone between the event and the open
            _ => "other",
        };
        if kind == "descriptors" {
            // look again soon: the limit may have room by then
            let soon = Instant::now() + Duration::from_millis(500);
            self.rescan_soon = Some(self.rescan_soon.map_or(soon, |t| t.min(soon)));
        }
        if let Some(held) = self.warned.allow(kind) {
            tracing::warn!(source = %self.cx.name, path = %path.display(), error = %e, suppressed = held,
                "cannot open a file to follow (counted in logferry_tail_open_errors_total); trying again later");
        }
    }

    /// Whether any of `changes` is a name beside a followed file that a
    /// rotation makes: a followed name renamed or removed, or a rotated
    /// sibling of one appearing (a copytruncate's copy, plain or
    /// compressed).
    pub(super) fn near_rotation(&self, changes: &[Change]) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let near = |p: &PathBuf| {
            if self.names.contains_key(p) {
                return true;
            }
            let (Some(dir), Some(name)) = (p.parent(), p.file_name()) else {
                return false;
            };
            let name = name.as_bytes();
            // each prefix of the name that ends before a separator
            name.iter().enumerate().any(|(i, b)| {
                matches!(b, b'.' | b'-' | b'_')
                    && i > 0
                    && self
                        .names
                        .contains_key(&dir.join(std::ffi::OsStr::from_bytes(&name[..i])))
            })
        };
        changes.iter().any(|c| match c {
            Change::Created(p) | Change::Removed(p) | Change::MovedAway(p) => near(p),
            Change::Moved { from, to } => near(from) || near(to),
            _ => false,
        })
    }

    pub(super) fn matches(&self, path: &Path) -> bool {
        let opts = glob::MatchOptions {
            require_literal_separator: true,
            ..Default::default()
        };
        self.globs.iter().any(|p| p.matches_path_with(path, opts)) && !self.is_excluded(path)
    }

    fn is_excluded(&self, path: &Path) -> bool {
        self.excludes.iter().any(|p| p.matches_path(path))
    }
}

/// A path's identity and size now.
fn stat(path: &Path) -> std::io::Result<(FileId, u64)> {
    FileId::stat_path(path)
}

/// Every directory below `dir`, to `MAX_DEPTH`.
fn walk_dirs(dir: &Path, depth: usize, out: &mut HashSet<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            let p = e.path();
            walk_dirs(&p, depth + 1, out);
            out.insert(p);
        }
    }
}

/// The directory a glob starts in: its longest prefix without wildcards.
pub(super) fn glob_root(pattern: &str) -> PathBuf {
    let mut root = PathBuf::new();
    for part in Path::new(pattern).components() {
        let s = part.as_os_str().to_string_lossy();
        if s.contains(['*', '?', '[', '{']) {
            break;
        }
        root.push(part);
    }
    if root.as_os_str().is_empty() || root == Path::new(pattern) {
        root = Path::new(pattern)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
    }
    root
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::buffer::{queue, BufferConfig};
    use crate::component::{shutdown_channel, SourceContext};
    use crate::metrics::Registry;
    use crate::router::{Route, Router, TagPattern};

    /// A source reading `dir/*.log`, without change events, and the queue
    /// its batches land in.
    fn source(dir: &Path) -> (TailSource, crate::buffer::QueueReceiver) {
        source_with(dir, "")
    }

    /// As [`source`], with more settings (TOML lines).
    fn source_with(dir: &Path, extra: &str) -> (TailSource, crate::buffer::QueueReceiver) {
        let metrics = Registry::new();
        let (tx, rx) = queue("out", BufferConfig::default(), &metrics);
        let router = Router::new(
            vec![Route {
                sink: Arc::from("out"),
                pattern: TagPattern::new("**").unwrap(),
                queue: tx,
            }],
            metrics.counter("unrouted", "", &[]),
        );
        let (_trigger, shutdown) = shutdown_channel();
        let config: super::super::TailSourceConfig = toml::from_str(&format!(
            "paths = [\"{}/*.log\"]\ntag = \"t\"\nread_from_head = true\n{extra}",
            dir.display()
        ))
        .unwrap();
        let cx = SourceContext {
            name: Arc::from("tail"),
            router,
            shutdown,
            metrics,
            memory: crate::memory::MemoryBudget::unlimited(),
        };
        (TailSource::new(config, cx).unwrap(), rx)
    }

    /// Events were lost (the kernel's queue overflowed): the overflow is
    /// counted, the globs are expanded again, and a file created meanwhile,
    /// whose event was among the lost ones, is read.
    #[tokio::test]
    async fn an_event_queue_overflow_rescans_and_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tail, mut rx) = source(dir.path());
        tail.start_up().unwrap();
        assert!(tail.files.is_empty());
        std::fs::write(dir.path().join("late.log"), b"one\ntwo\n").unwrap();
        tail.on_changes(vec![Change::Overflow]);
        assert_eq!(tail.metrics.overflows.get(), 1);
        let when = tail.rescan_soon.expect("a rescan is due");
        assert!(when <= Instant::now());
        tail.rescan(false);
        assert!(tail.names.contains_key(&dir.path().join("late.log")));
        assert!(tail.read_ready().await.unwrap());
        let delivery = rx.try_recv().expect("a batch");
        assert_eq!(delivery.batch().count, 2);
        delivery.accept();
    }

    /// A file created and renamed away before its events are read is
    /// found under its new name and read, once; the new file under the
    /// old name is followed too.
    #[tokio::test]
    async fn a_file_renamed_before_it_was_opened_is_chased() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tail, mut rx) = source(dir.path());
        tail.start_up().unwrap();
        let live = dir.path().join("app.log");
        std::fs::write(&live, b"first\n").unwrap();
        std::fs::rename(&live, dir.path().join("app.log.1")).unwrap();
        std::fs::write(&live, b"second\n").unwrap();
        // the events, read late: the name now leads to the second file
        tail.on_changes(vec![
            Change::Created(live.clone()),
            Change::Modified(live.clone()),
            Change::Moved {
                from: live.clone(),
                to: dir.path().join("app.log.1"),
            },
            Change::Created(live.clone()),
        ]);
        assert_eq!(tail.files.len(), 2);
        tail.read_ready().await.unwrap();
        let mut got = Vec::new();
        while let Some(d) = rx.try_recv() {
            got.push(String::from_utf8_lossy(d.batch().records.bytes()).to_string());
            d.accept();
        }
        got.sort();
        assert_eq!(got, ["first\n", "second\n"]);
        assert_eq!(tail.metrics.rotations.get(), 1);
    }

    /// An idle reader whose files all have change events is not woken to
    /// poll them every `poll_interval`: the next poll is due at its own
    /// timers (here a partial line going stale), or with the next rescan.
    /// A file that has grown since the last look, a rotated one, or one
    /// without change events is polled every `poll_interval`.
    #[tokio::test]
    async fn an_idle_reader_polls_only_when_a_poll_has_work() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tail, mut rx) = source_with(
            dir.path(),
            "refresh_interval = \"60s\"\npartial_line_timeout = \"7s\"",
        );
        tail.watcher = Some(super::super::watch::Watcher::new().unwrap());
        let path = dir.path().join("app.log");
        std::fs::write(&path, b"one\n").unwrap();
        tail.start_up().unwrap();
        assert!(tail.read_ready().await.unwrap());
        rx.try_recv().expect("a batch").accept();
        tail.drain_acks();
        // the lag of the file just read is reported at the next poll
        let last = Instant::now();
        let period = tail.config.poll_interval;
        assert_eq!(tail.poll_due(last), Some(last + period));
        tail.poll(last);
        tail.report_lag();
        // read and reported: nothing to do but close the file when idle
        let idle = tail.files[&tail.names[&path]].last_growth + tail.config.close_idle_after;
        assert_eq!(tail.poll_due(last), Some(idle));
        // a partial line: due when it goes stale, not before
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"par").unwrap();
        let key = tail.names[&path];
        tail.wake(key);
        tail.read_ready().await.unwrap();
        assert!(rx.try_recv().is_none(), "a partial line is held");
        tail.report_lag();
        let stale = tail.files[&key].last_growth + Duration::from_secs(7);
        assert_eq!(tail.poll_due(last), Some(stale));
        // a file renamed away (rotated) is looked at every period
        std::fs::rename(&path, dir.path().join("app.log.1")).unwrap();
        tail.rescan(false);
        assert!(tail.files.values().any(|f| f.rotated_at.is_some()));
        assert_eq!(tail.poll_due(last), Some(last + period));
        // without change events, every period
        std::fs::write(&path, b"two\n").unwrap();
        let (mut polled, _rx) = source(dir.path());
        polled.start_up().unwrap();
        assert_eq!(polled.poll_due(last), Some(last + period));
    }

    /// While lines gather, a name a rotation makes beside a followed file
    /// (its copy, plain or compressed; the file renamed or removed) ends
    /// the linger; another file's name does not.
    #[tokio::test]
    async fn names_near_a_rotation_are_told_from_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tail, _rx) = source(dir.path());
        let live = dir.path().join("app.log");
        std::fs::write(&live, b"one\n").unwrap();
        tail.start_up().unwrap();
        let p = |s: &str| dir.path().join(s);
        for near in ["app.log.1", "app.log.1.gz", "app.log-20261206", "app.log"] {
            assert!(tail.near_rotation(&[Change::Created(p(near))]), "{near}");
        }
        assert!(tail.near_rotation(&[Change::Moved {
            from: live.clone(),
            to: p("app.log.1")
        }]));
        assert!(tail.near_rotation(&[Change::Removed(live.clone())]));
        for far in ["other.log", "app.logger", "app.lo", "sub/app.log.1"] {
            assert!(!tail.near_rotation(&[Change::Created(p(far))]), "{far}");
        }
        assert!(!tail.near_rotation(&[Change::Modified(live)]));
    }

    /// A file that gave its descriptor back is watched by itself: a write
    /// to it opens it again at once (even while lines gather), so it is
    /// read whole though it is removed before its turn; the watch ends
    /// once it is open.
    #[tokio::test]
    async fn a_closed_file_written_to_is_opened_again_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (mut tail, mut rx) = source(dir.path());
        tail.watcher = Some(super::super::watch::Watcher::new().unwrap());
        let path = dir.path().join("app.log");
        std::fs::write(&path, b"one\n").unwrap();
        tail.start_up().unwrap();
        tail.read_ready().await.unwrap();
        rx.try_recv().expect("a batch").accept();
        tail.drain_acks();
        let key = tail.names[&path];
        tail.give_back(key, true);
        assert!(!tail.files[&key].is_open());
        assert_eq!(tail.closed_watches.len(), 1);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"two\n"))
            .unwrap();
        let w = tail.watcher.as_mut().unwrap();
        w.names_ready().await;
        let changes = w.read_names();
        tail.on_changes(changes);
        assert!(tail.files[&key].is_open(), "opened again at the write");
        assert!(tail.closed_watches.is_empty() && tail.files[&key].watch.is_none());
        std::fs::remove_file(&path).unwrap();
        tail.read_ready().await.unwrap();
        let d = rx.try_recv().expect("a batch");
        assert_eq!(&d.batch().records.bytes()[..], b"two\n");
        d.accept();
    }

    /// A rescan looks only at what events cannot tell: a name that is a
    /// link, whose file was replaced behind it, is noticed at once; a plain
    /// file replaced under its name (its events not read here) only at the
    /// sweep every `RESCAN_SWEEP` rescans, which looks at every name.
    #[tokio::test]
    async fn a_rescan_looks_at_links_every_time_and_at_plain_files_at_the_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let (mut tail, _rx) = source(dir.path());
        tail.watcher = Some(super::super::watch::Watcher::new().unwrap());
        let plain = dir.path().join("plain.log");
        std::fs::write(&plain, b"one\n").unwrap();
        let target = elsewhere.path().join("0.log");
        std::fs::write(&target, b"one\n").unwrap();
        let link = dir.path().join("link.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        tail.start_up().unwrap();
        let id = |tail: &TailSource, p: &Path| tail.files[&tail.names[p]].id;
        let (plain_before, link_before) = (id(&tail, &plain), id(&tail, &link));
        assert!(tail.files[&tail.names[&link]].linked);
        assert!(!tail.files[&tail.names[&plain]].linked);
        // both replaced by new files under the same names
        for p in [&plain, &target] {
            std::fs::rename(p, p.with_extension("log.1")).unwrap();
            std::fs::write(p, b"two\n").unwrap();
        }
        tail.rescan(false);
        assert_ne!(id(&tail, &link), link_before, "the link is looked at");
        assert_eq!(id(&tail, &plain), plain_before, "the plain file is not");
        while tail.rescans % RESCAN_SWEEP != RESCAN_SWEEP - 1 {
            tail.rescan(false);
            assert_eq!(id(&tail, &plain), plain_before);
        }
        tail.rescan(false);
        assert_ne!(id(&tail, &plain), plain_before, "the sweep looks at it");
        assert_eq!(tail.metrics.rotations.get(), 2);
    }
}
