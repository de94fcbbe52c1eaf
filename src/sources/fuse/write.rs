//! One open descriptor: its writes cut into records, its unfinished line
//! (charged to the [`LineRoom`](super::room::LineRoom)), shipping that
//! line at close, and waiting for acknowledgements at fsync.
//!
//! A write is cut on the request thread (the kernel's buffer is borrowed
//! there); what follows — room for the new unfinished line, budget and
//! queue room for the records — is a future that the request thread polls
//! once and, if it has to wait, hands to a task ([`Shared::run`]).

use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::{Mutex, OwnedMutexGuard};
use tokio::time::Instant;

use super::config::FuseMode;
use super::encode::{cut_lines, Entries, EntryWriter};
use super::fs::Shared;
use super::pipeline::{OnShutdown, Pending, SyncError};
use super::room::LineCharge;
use super::telemetry::{Held, WriteError};
use crate::event::EventTime;

/// One open descriptor.
pub struct OpenFile {
    pub ino: u64,
    /// The unfinished line, locked for the whole of a write (its waits
    /// included), so the writes of one descriptor apply in order. An async
    /// lock: a write waiting in a task holds it.
    line: Arc<Mutex<Line>>,
    /// The mirror file, with `mirror_dir` (reads and writes at offsets,
    /// no lock needed).
    pub mirror: Option<File>,
    /// Records shipped through this descriptor not yet settled by sinks.
    pub pending: Arc<Pending>,
    /// Counts the descriptor as open until it is gone.
    _slot: OpenSlot,
}

/// The bytes after a descriptor's last newline.
#[derive(Default)]
struct Line {
    bytes: Vec<u8>,
    /// Room taken for `bytes`' capacity.
    charge: LineCharge,
}

/// A place among the `max_open_files` descriptors; freed when dropped.
pub struct OpenSlot(Arc<Held>);

impl OpenSlot {
    /// A place if fewer than `max` descriptors are open.
    pub fn take(held: &Arc<Held>, max: usize) -> Option<OpenSlot> {
        held.open_files
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(OpenSlot(held.clone()))
    }
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.open_files.fetch_sub(1, Ordering::AcqRel);
    }
}

impl OpenFile {
    pub fn new(ino: u64, mirror: Option<File>, slot: OpenSlot) -> Self {
        OpenFile {
            ino,
            line: Arc::default(),
            mirror,
            pending: Arc::default(),
            _slot: slot,
        }
    }
}

/// A write cut into records, not applied yet.
struct Cut {
    entries: Entries,
    /// The descriptor's unfinished line once the write is applied.
    rest: Vec<u8>,
}

impl Cut {
    /// Bytes it holds outside the memory budget while it waits.
    fn holds(&self) -> usize {
        self.entries.bytes.capacity() + self.rest.capacity()
    }
}

impl Shared {
    /// A write of `data` at `offset` of `file`: answered at once when it
    /// can be shipped without waiting, otherwise from a task once it is
    /// shipped or has failed (EIO, after `write_timeout` at most).
    pub(super) fn write(
        self: &Arc<Self>,
        file: Arc<OpenFile>,
        offset: u64,
        data: &[u8],
        reply: fuser::ReplyWrite,
    ) {
        let len = data.len();
        let deadline = Instant::now() + self.pipeline.write_timeout();
        let path = self.path(file.ino);
        let done = {
            let this = self.clone();
            let path = path.clone();
            move |r: Result<(), WriteError>| match r {
                Ok(()) => reply.written(len as u32),
                Err(e) => {
                    this.pipeline.metrics.write_failed(e, &path, len);
                    reply.error(fuser::Errno::EIO)
                }
            }
        };
        if self.pipeline.is_closing() {
            return done(Err(WriteError::Closed));
        }
        if let Some(m) = &file.mirror {
            if super::mirror::write_at(m, data, offset).is_err() {
                return done(Err(WriteError::Mirror));
            }
        }
        let end = offset + len as u64;
        match file.line.clone().try_lock_owned() {
            Ok(line) => {
                let cut = self.cut(&line, &path, data);
                let holds = cut.holds();
                let apply = self.clone().apply(file, line, cut, path, end, deadline);
                self.run(apply, holds, deadline, Err(WriteError::Memory), done);
            }
            Err(_) => {
                // another write of this descriptor is under way: this one
                // waits for it in a task, with a copy of its bytes
                let data = data.to_vec();
                let holds = 2 * data.len() + self.config.max_line_bytes;
                let this = self.clone();
                let wait = async move {
                    let line = this
                        .pipeline
                        .bounded(file.line.clone().lock_owned(), deadline, OnShutdown::Abort)
                        .await
                        .map_err(|e| e.or(WriteError::Timeout))?;
                    let cut = this.cut(&line, &path, &data);
                    drop(data);
                    this.clone()
                        .apply(file, line, cut, path, end, deadline)
                        .await
                };
                self.run(wait, holds, deadline, Err(WriteError::Memory), done);
            }
        }
    }

    /// Cuts `data`, written after `line`, into records and the new
    /// unfinished line.
    fn cut(&self, line: &Line, path: &str, data: &[u8]) -> Cut {
        let binary = self.config.mode == FuseMode::Binary;
        // room for the records' bytes (up to the last newline; short lines
        // grow it, each adds its header); a write without a newline only
        // makes the unfinished line longer, and must hold no more than that
        let shipped = match binary {
            true => Some(data.len()),
            false => memchr::memrchr(b'\n', data).map(|i| line.bytes.len() + i),
        };
        let mut entries = Entries::default();
        if let Some(n) = shipped {
            entries.bytes.reserve(n + n / 8 + 256);
        }
        let mut w = EntryWriter::new(&mut entries, EventTime::now(), path, binary);
        let rest = if binary {
            w.push(data);
            Vec::new()
        } else {
            cut_lines(&line.bytes, data, self.config.max_line_bytes, &mut w)
        };
        Cut { entries, rest }
    }

    /// Applies a cut write: takes room for its new unfinished line, ships
    /// its records, then replaces the line. On an error nothing of the
    /// write counts (the line stays as it was).
    async fn apply(
        self: Arc<Self>,
        file: Arc<OpenFile>,
        mut line: OwnedMutexGuard<Line>,
        cut: Cut,
        path: String,
        end: u64,
        deadline: Instant,
    ) -> Result<(), WriteError> {
        let need = cut.rest.capacity().saturating_sub(line.charge.bytes());
        let more = match need {
            0 => None,
            n => Some(match self.lines.try_take(n) {
                Some(c) => c,
                None => self
                    .pipeline
                    .bounded(self.lines.take(n), deadline, OnShutdown::Abort)
                    .await
                    .map_err(|e| e.or(WriteError::Memory))?,
            }),
        };
        let tag = self.config.tag_for(&path);
        self.pipeline
            .ship(
                &tag,
                &path,
                cut.entries,
                &file.pending,
                OnShutdown::Abort,
                deadline,
            )
            .await?;
        let line = &mut *line;
        line.bytes = cut.rest;
        if let Some(more) = more {
            line.charge.merge(more);
        }
        line.charge.shrink_to(line.bytes.capacity());
        let mut tree = self.tree();
        if let Some(n) = tree.get_mut(file.ino) {
            n.size = n.size.max(end);
            n.mtime = SystemTime::now();
        }
        Ok(())
    }

    /// Ships the descriptor's unfinished line, if any (at its close, or at
    /// shutdown); `waited_on` if the writer waits for its acknowledgement
    /// next (a close with `ack_on_close`).
    pub(super) async fn ship_line(
        self: Arc<Self>,
        file: Arc<OpenFile>,
        deadline: Instant,
        on_shutdown: OnShutdown,
        waited_on: bool,
    ) -> Result<(), WriteError> {
        let mut line = self
            .pipeline
            .bounded(file.line.clone().lock_owned(), deadline, on_shutdown)
            .await
            .map_err(|e| e.or(WriteError::Timeout))?;
        if line.bytes.is_empty() {
            return Ok(());
        }
        let path = self.path(file.ino);
        let mut entries = Entries {
            waited_on,
            ..Entries::default()
        };
        EntryWriter::new(&mut entries, EventTime::now(), &path, false).push(&line.bytes);
        let tag = self.config.tag_for(&path);
        let shipped = self
            .pipeline
            .ship(&tag, &path, entries, &file.pending, on_shutdown, deadline)
            .await;
        match shipped {
            Ok(()) => {
                *line = Line::default();
                Ok(())
            }
            Err(e) => {
                self.pipeline
                    .metrics
                    .write_failed(e, &path, line.bytes.len());
                Err(e)
            }
        }
    }

    /// Waits until every record of the descriptor is settled by the sinks.
    pub(super) async fn wait_acks(
        &self,
        file: &OpenFile,
        deadline: Instant,
    ) -> Result<(), SyncError> {
        file.pending.wait(deadline).await.inspect_err(|e| {
            let path = self.path(file.ino);
            self.pipeline.metrics.sync_failed(&path, e.reason());
        })
    }

    /// At shutdown: ships the unfinished last line of every open file, all
    /// at once (from a thread that may block).
    pub fn flush_all(self: &Arc<Self>) {
        let deadline = Instant::now() + self.pipeline.write_timeout();
        let runtime = self.pipeline.runtime();
        let mut ships = tokio::task::JoinSet::new();
        for f in self.open_files() {
            // counted and logged inside when it fails
            let ship = self
                .clone()
                .ship_line(f, deadline, OnShutdown::Finish, false);
            ships.spawn_on(ship, runtime);
        }
        runtime.block_on(async { while ships.join_next().await.is_some() {} });
    }
}
