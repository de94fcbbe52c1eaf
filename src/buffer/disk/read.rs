//! The reading side of a disk buffer: handing frames to the sink in
//! order, settling them (accepted: the cursor moves and delivered segments
//! go; rejected: delivered again after a backoff), skipping damage.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::cursor::{self, Pos};
use super::format::{self, SEGMENT_HEADER};
use super::{segment, start_of, Retry, Shared, State};
use crate::ack::{AckHandle, AckOutcome};
use crate::backoff::backoff;
use crate::buffer::{Delivery, Gathered};
use crate::event::Batch;
use crate::timer::Deadline;
use crate::warn_limited;

/// Most bytes handed to the sink and not settled yet: bounds the memory a
/// disk buffer uses for deliveries, whatever the sink does.
const MAX_IN_FLIGHT_BYTES: usize = 16 << 20;

enum Next {
    Ready(Delivery),
    /// Nothing now; look again by then (or when woken).
    Wait(Option<Instant>),
    End,
}

impl Shared {
    /// The next delivery for the sink, if one is ready now.
    fn next(self: &Arc<Self>) -> Next {
        let mut st = self.lock();
        let now = Instant::now();
        if st.retries.front().is_some_and(|r| r.due <= now) {
            let r = st.retries.pop_front().expect("checked");
            return Next::Ready(self.delivery(r.pos, r.len, r.batch, r.attempt));
        }
        let retry_due = st.retries.front().map(|r| r.due);
        if st.in_flight >= MAX_IN_FLIGHT_BYTES {
            return Next::Wait(retry_due);
        }
        loop {
            let (seg, off) = st.read;
            let end = match st.segments.get(&seg) {
                Some(s) => s.len,
                None => 0,
            };
            if off < end {
                match self.read_frame(&mut st, seg, off, end) {
                    Ok(Some((batch, len))) => {
                        st.read = (seg, off + len as u64);
                        st.unacked.insert((seg, off));
                        st.in_flight += len;
                        drop(st);
                        return Next::Ready(self.delivery((seg, off), len, batch, 0));
                    }
                    Ok(None) => continue,
                    Err(e) => {
                        self.metrics.errors.count("read");
                        warn_limited!(self.log, "read", sink = %self.sink, segment = seg, offset = off,
                            error = %e, "cannot read the disk buffer; retrying");
                        return Next::Wait(Some(now + Duration::from_secs(1)));
                    }
                }
            }
            // past the end of this segment: on to the next, if it exists
            let is_active = st.active.as_ref().is_some_and(|(id, _)| *id == seg);
            match st.segments.range(seg + 1..).next() {
                Some((&next, _)) => {
                    st.read = start_of(next);
                    if !is_active && st.segments.get(&seg).is_some_and(|s| s.outstanding == 0) {
                        self.remove_segment(&mut st, seg);
                    }
                }
                None => break,
            }
        }
        // at a stop, what is not accepted (waiting for a retry, or still
        // with the sink) stays on disk for the next start
        if st.closed {
            return Next::End;
        }
        Next::Wait(retry_due)
    }

    /// Reads the frame at `off` of segment `seg`. `Ok(None)`: it was
    /// damaged, quarantined and skipped (the read position moved on).
    fn read_frame(
        &self,
        st: &mut State,
        seg: u64,
        off: u64,
        end: u64,
    ) -> io::Result<Option<(Batch, usize)>> {
        while st.fresh.front().is_some_and(|f| f.pos < (seg, off)) {
            let f = st.fresh.pop_front().expect("checked");
            st.fresh_bytes -= f.len;
        }
        if st.fresh.front().is_some_and(|f| f.pos == (seg, off)) {
            let f = st.fresh.pop_front().expect("checked");
            st.fresh_bytes -= f.len;
            return Ok(Some((f.batch, f.len)));
        }
        if st.reader.as_ref().is_none_or(|(id, _)| *id != seg) {
            let f = File::open(self.dir.join(segment::file_name(seg)))?;
            st.reader = Some((seg, f));
        }
        let (_, file) = st.reader.as_ref().expect("opened");
        let mut header = [0u8; format::FRAME_HEADER];
        let avail = (end - off) as usize;
        let len = if avail >= header.len() {
            file.read_exact_at(&mut header, off)?;
            format::frame_len(&header).ok().filter(|l| *l <= avail)
        } else {
            None
        };
        if let Some(len) = len {
            let mut buf = vec![0u8; len];
            file.read_exact_at(&mut buf, off)?;
            if let Ok((frame, _)) = format::decode(&Bytes::from(buf)) {
                return Ok(Some((frame.into_batch(), len)));
            }
        }
        // damaged under us: resync in what is left of the segment
        let mut rest = vec![0u8; avail];
        file.read_exact_at(&mut rest, off)?;
        let mut with_header = format::segment_header(seg).to_vec();
        with_header.extend_from_slice(&rest);
        let scan = segment::scan(&Bytes::from(with_header), 0);
        let skip = scan
            .frames
            .first()
            .map(|f| f.offset - SEGMENT_HEADER)
            .unwrap_or(avail);
        let path = segment::quarantine(&self.dir, seg, &rest[..skip]);
        self.quarantined(seg, off, skip as u64, path);
        st.read = (seg, off + skip as u64);
        // those bytes will never be delivered (their record count is
        // unknown: the records gauge keeps them until the next start)
        if let Some(s) = st.segments.get_mut(&seg) {
            s.outstanding = s.outstanding.saturating_sub(skip as u64);
        }
        let _ = self
            .held
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(skip as u64))
            });
        Ok(None)
    }

    fn quarantined(&self, seg: u64, off: u64, bytes: u64, path: io::Result<PathBuf>) {
        self.metrics.quarantined_bytes.add(bytes);
        self.metrics.quarantined_frames.inc();
        let errors = &self.metrics.errors;
        match path {
            Ok(p) => {
                crate::error_counted!(errors, "damaged_frames", sink = %self.sink, segment = seg,
                offset = off, bytes, quarantine = %p.display(),
                "damaged disk buffer frame skipped; its bytes are in the quarantine file")
            }
            Err(e) => {
                errors.count("damaged_frames");
                crate::error_counted!(errors, "quarantine_write", sink = %self.sink, segment = seg,
                    offset = off, bytes, error = %e,
                    "damaged disk buffer frame skipped; cannot write it to the quarantine directory")
            }
        }
    }

    /// Wraps a frame's batch in a delivery whose acknowledgement settles
    /// the frame in this buffer.
    fn delivery(self: &Arc<Self>, pos: Pos, len: usize, batch: Batch, attempt: u32) -> Delivery {
        let shared = self.clone();
        let kept = batch.clone();
        let ack = AckHandle::new(move |outcome| shared.settle(pos, len, kept, attempt, outcome));
        Delivery::standalone(batch.with_ack(ack))
    }

    fn settle(&self, pos: Pos, len: usize, batch: Batch, attempt: u32, outcome: AckOutcome) {
        let mut st = self.lock();
        match outcome {
            // set aside for good by the sink: off the disk too
            AckOutcome::Accepted | AckOutcome::Refused(_) => {
                st.in_flight -= len;
                st.unacked.remove(&pos);
                self.held.bytes.fetch_sub(len as u64, Ordering::Relaxed);
                self.held.records.fetch_sub(batch.count, Ordering::Relaxed);
                let (seg, _) = pos;
                let active = st.active.as_ref().map(|(id, _)| *id);
                let done = match st.segments.get_mut(&seg) {
                    Some(s) => {
                        s.outstanding = s.outstanding.saturating_sub(len as u64);
                        s.outstanding == 0
                    }
                    None => false,
                };
                if done && active != Some(seg) && st.read.0 > seg {
                    self.remove_segment(&mut st, seg);
                }
                self.store_cursor(&mut st);
            }
            AckOutcome::Rejected => {
                self.metrics.retried_records.add(batch.count as u64);
                let attempt = attempt + 1;
                let due = Instant::now()
                    + backoff(Duration::from_millis(200), Duration::from_secs(30), attempt);
                // in position order, so retries go out oldest first
                let at = st.retries.partition_point(|r| r.due <= due);
                st.retries.insert(
                    at,
                    Retry {
                        pos,
                        len,
                        batch,
                        attempt,
                        due,
                    },
                );
            }
        }
        drop(st);
        self.readable.notify_one();
        // a gathering sink learns of a retry (when it falls due) and of
        // room under MAX_IN_FLIGHT_BYTES: one wake-up per settlement
        self.gate.ring();
    }

    /// Rewrites the `ack` file if the first undelivered frame moved.
    fn store_cursor(&self, st: &mut State) {
        let cursor = st.unacked.first().copied().unwrap_or(st.read);
        if cursor != st.stored {
            if let Err(e) = cursor::store(&st.cursor_file, cursor) {
                self.write_failed("cursor", &e);
            }
            st.stored = cursor;
        }
    }

    /// The next delivery; `None` once the senders are gone and everything
    /// written has been handed out (what is not accepted stays on disk).
    pub(in crate::buffer) async fn recv(self: &Arc<Self>) -> Option<Delivery> {
        loop {
            let readable = self.readable.notified();
            tokio::pin!(readable);
            readable.as_mut().enable();
            match self.next() {
                Next::Ready(d) => return Some(d),
                Next::End => return None,
                Next::Wait(until) => {
                    let until = until.unwrap_or_else(|| Instant::now() + Duration::from_secs(1));
                    let _ = tokio::time::timeout_at(until, readable).await;
                }
            }
        }
    }

    /// [`crate::buffer::QueueReceiver::recv_until`]: the next delivery,
    /// waiting until `deadline` at most, woken by a frame written only
    /// once `records` or `bytes` more have come since the wait began (or
    /// the buffer is past half full), by a retry queued, or by the
    /// senders' end. Every other frame waits on disk (and in the cache of
    /// fresh frames), taken at `deadline`.
    pub(in crate::buffer) async fn recv_until(
        self: &Arc<Self>,
        timer: &mut Deadline,
        deadline: Instant,
        records: usize,
        bytes: usize,
    ) -> Gathered {
        let found = |next| match next {
            Next::Ready(d) => Ok(Gathered::Batch(d)),
            Next::End => Ok(Gathered::Closed),
            Next::Wait(until) => Err(until),
        };
        loop {
            if let Ok(found) = found(self.next()) {
                return found;
            }
            if Instant::now() >= deadline {
                return Gathered::Timeout;
            }
            self.gate.arm(records, bytes);
            let rung = self.gate.rung();
            tokio::pin!(rung);
            rung.as_mut().enable();
            // a frame written before the gate was armed did not ring
            let until = match found(self.next()) {
                Ok(found) => {
                    self.gate.disarm();
                    return found;
                }
                Err(until) => until.map_or(deadline, |u| u.min(deadline)),
            };
            tokio::select! {
                _ = rung => {}
                _ = timer.sleep_until(until.into_std()) => {}
            }
            self.gate.disarm();
        }
    }

    pub(in crate::buffer) fn try_recv(self: &Arc<Self>) -> Option<Delivery> {
        match self.next() {
            Next::Ready(d) => Some(d),
            _ => None,
        }
    }

    pub(in crate::buffer) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}
