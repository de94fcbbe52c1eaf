//! The writing side of a disk buffer: framing a batch, waiting for room,
//! appending it to the active segment, rolling segments, syncing.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::format::{self, SEGMENT_HEADER};
use super::{segment, AppendError, Fsync, Segment, Shared, State};
use crate::backoff::backoff;
use crate::buffer::{Unsent, WhenFull};
use crate::event::{Batch, EventTime};
use crate::warn_limited;

impl Shared {
    /// Appends `batch`, waiting for room (or dropping it) as `when_full`
    /// says, and retrying a failed write with a backoff until it succeeds.
    /// A buffer closed (`Shared::close`) while senders remain gives the
    /// batch back, not written: the caller hands it to the sink that
    /// replaces this one, or refuses it.
    pub(in crate::buffer) async fn send(self: &Arc<Self>, batch: Batch) -> Result<(), Batch> {
        let unsent = Unsent(Some(batch));
        let Some(b) = unsent.batch() else {
            return Ok(());
        };
        let count = b.count;
        let bytes = b.byte_len();
        let Some(frame) = format::encode(b, EventTime::now()) else {
            tracing::error!(sink = %self.sink, records = count,
                "batch cannot be framed for the disk buffer (tag over 65535 bytes or body over 1 GiB); rejected");
            self.metrics.dropped_records.add(count as u64);
            return Ok(());
        };
        let mut failures = 0;
        let file = loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            match self.append(&frame, count, unsent.batch()) {
                Ok(file) => break file,
                // `close` while senders remain: given back, not on disk
                Err(AppendError::Closed) => return unsent.take().map_or(Ok(()), Err),
                Err(AppendError::NoRoom) => match self.when_full {
                    WhenFull::Block => {
                        // the poll is a safety net; settling wakes us at once
                        let _ = tokio::time::timeout(Duration::from_secs(1), room).await;
                    }
                    WhenFull::DropNewest => {
                        self.metrics.dropped_records.add(count as u64);
                        warn_limited!(self.log, "full", sink = %self.sink, records = count,
                            max_bytes = self.max_bytes, "disk buffer full; batch dropped");
                        return Ok(());
                    }
                },
                Err(AppendError::Io(e)) => {
                    failures += 1;
                    self.write_failed("write", &e);
                    tokio::time::sleep(backoff(
                        Duration::from_millis(50),
                        Duration::from_secs(2),
                        failures,
                    ))
                    .await;
                }
            }
        };
        if self.fsync == Fsync::Always {
            let shared = self.clone();
            let synced = tokio::task::spawn_blocking(move || {
                // a segment created since the last sync is durable only
                // once the directory holding its name is synced too
                if !shared.sync_dir_if_changed() {
                    return false;
                }
                match file.sync_data() {
                    Ok(()) => true,
                    Err(e) => {
                        shared.write_failed("sync", &e);
                        false
                    }
                }
            })
            .await;
            if synced.ok() != Some(true) {
                // the frame may or may not be durable: the source resends
                return Ok(());
            }
        }
        // the disk holds it now: releasing the batch acknowledges it
        drop(unsent.take());
        self.readable.notify_one();
        // no client waits on the sink (the disk acknowledged the batch): a
        // gathering sink is woken once its request is full, or now while
        // the buffer is past half full
        let filling = self.held.bytes.load(Ordering::Relaxed) > self.max_bytes / 2;
        self.gate.sent(count, bytes, filling);
        Ok(())
    }

    pub(super) fn write_failed(&self, op: &'static str, e: &io::Error) {
        self.metrics.write_errors.inc();
        let full = matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT));
        let hint = if full {
            "the file system is full: free space there (or lower other users of it); sends wait and resume by themselves"
        } else {
            "sends wait and retry; check the directory's file system"
        };
        warn_limited!(self.log, op, sink = %self.sink, dir = %self.dir.display(), error = %e,
            "disk buffer {op} failed: {hint}");
    }

    /// Appends one frame to the active segment (rolling to a new one when
    /// it is full); returns the active file for syncing.
    /// Appends `frame`; `batch`, what it was made from, is kept in memory
    /// for the reader while there is room for it.
    pub(super) fn append(
        &self,
        frame: &[u8],
        count: usize,
        batch: Option<&Batch>,
    ) -> Result<Arc<File>, AppendError> {
        let _appending = self.appending.lock().unwrap_or_else(|e| e.into_inner());
        let mut st = self.lock();
        let len = frame.len() as u64;
        if st.closed {
            return Err(AppendError::Closed);
        }
        if !self.has_room(&mut st, len) {
            return Err(AppendError::NoRoom);
        }
        let roll = match &st.active {
            None => true,
            Some((id, _)) => {
                let cur = st.segments[id].len;
                cur > SEGMENT_HEADER as u64 && cur + len > self.segment_bytes
            }
        };
        if roll {
            self.roll(&mut st).map_err(AppendError::Io)?;
        }
        let (id, file) = st.active.clone().expect("rolled");
        let at = st.segments[&id].len;
        #[cfg(test)]
        let full = st.full;
        // the write goes past the segment's known length, where neither the
        // reader nor another sender (they wait on `appending`) looks
        drop(st);
        #[cfg(test)]
        let written = if full {
            // as a full disk does: part of the frame, then ENOSPC
            let _ = file.write_all_at(&frame[..frame.len() / 2], at);
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        } else {
            file.write_all_at(frame, at)
        };
        #[cfg(not(test))]
        let written = file.write_all_at(frame, at);
        let mut st = self.lock();
        if let Err(e) = written {
            // a partial frame must not count: cut it off (if that fails
            // too, a restart finds a torn frame and quarantines it)
            if file.set_len(at).is_err() {
                st.active = None;
            }
            return Err(AppendError::Io(e));
        }
        let seg = st.segments.get_mut(&id).expect("active segment");
        seg.len += len;
        seg.outstanding += len;
        st.disk_bytes += len;
        st.dirty = true;
        if let Some(b) = batch {
            if st.fresh_bytes + frame.len() <= super::FRESH_BYTES {
                st.fresh_bytes += frame.len();
                // not waited on any more: the source was acknowledged
                // when the frame was written, so nobody waits downstream
                let mut batch = b.without_ack();
                // on disk now: the source's budget goes back with its batch
                batch.memory = Default::default();
                st.fresh.push_back(super::Fresh {
                    pos: (id, at),
                    len: frame.len(),
                    batch,
                });
            }
        }
        self.held.bytes.fetch_add(len, Ordering::Relaxed);
        self.held.records.fetch_add(count, Ordering::Relaxed);
        self.metrics.written_records.add(count as u64);
        self.metrics.written_bytes.add(len);
        Ok(file)
    }

    /// Whether `len` more bytes fit under `max_bytes`. A batch larger than
    /// the whole buffer still passes when nothing else is undelivered.
    fn has_room(&self, st: &mut State, len: u64) -> bool {
        if st.disk_bytes + len <= self.max_bytes {
            return true;
        }
        // the active segment may hold only delivered frames: start anew
        if let Some(id) = st.active.as_ref().map(|(id, _)| *id) {
            if st.segments[&id].outstanding == 0 {
                st.active = None;
                self.remove_segment(st, id);
                if st.disk_bytes + len <= self.max_bytes {
                    return true;
                }
            }
        }
        self.held.bytes.load(Ordering::Relaxed) == 0
    }

    fn roll(&self, st: &mut State) -> io::Result<()> {
        let id = st.next_id;
        let path = self.dir.join(segment::file_name(id));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        if let Err(e) = file.write_all_at(&format::segment_header(id), 0) {
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        st.next_id += 1;
        st.dir_unsynced |= self.fsync == Fsync::Always;
        if let Some((old, f)) = st.active.take() {
            // with `always` every frame is synced already; with `interval`
            // the syncer syncs it, outside the lock
            if self.fsync == Fsync::Interval {
                st.unsynced.push(f);
            }
            if st.segments.get(&old).is_some_and(|s| s.outstanding == 0) {
                self.remove_segment(st, old);
            }
        }
        let len = SEGMENT_HEADER as u64;
        st.segments.insert(
            id,
            Segment {
                len,
                outstanding: 0,
            },
        );
        st.disk_bytes += len;
        st.active = Some((id, Arc::new(file)));
        Ok(())
    }

    /// Syncs the active segment if anything was written since last time.
    pub(super) fn sync(&self) {
        let (files, cursor) = {
            let mut st = self.lock();
            if !std::mem::take(&mut st.dirty) {
                return;
            }
            let mut files = std::mem::take(&mut st.unsynced);
            files.extend(st.active.as_ref().map(|(_, f)| f.clone()));
            (files, st.cursor_file.try_clone().ok())
        };
        if let Some(c) = cursor {
            let _ = c.sync_data();
        }
        for f in files {
            if let Err(e) = f.sync_data() {
                self.write_failed("sync", &e);
            }
        }
    }
}
