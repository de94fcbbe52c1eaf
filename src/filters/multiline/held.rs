//! What a stream holds: the record being joined, where its lines came
//! from, and the acknowledgements of the batches they came in.

use std::collections::VecDeque;

use crate::ack::{AckHandle, AckOutcome};
use crate::event::{EventTime, Tag};
use crate::format::multiline::Joiner;
use crate::memory::{MemoryCharge, SharedCharge};

/// Where a held line came from: what its record keeps if the line is the
/// first of a joined record.
pub(super) struct Origin {
    /// The record's time, which the joined record takes.
    pub(super) time: EventTime,
    /// The record's encoded map; `None` for a line record.
    pub(super) map: Option<Vec<u8>>,
}

/// Acknowledgements of batches whose lines a stream still holds: (the
/// position of the batch's last line in the stream, its handle). Dropped
/// while still held (a reload removed the filter), they are rejected, so
/// their sources send the lines again rather than move past them.
#[derive(Default)]
pub(super) struct HeldAcks(pub(super) VecDeque<(u64, AckHandle)>);

impl HeldAcks {
    /// The handles of batches whose every line is before `held_from`
    /// (every one with `None`): their lines are all in records given back.
    pub(super) fn release(&mut self, held_from: Option<u64>, into: &mut Vec<AckHandle>) {
        while let Some((last, _)) = self.0.front() {
            if held_from.is_some_and(|h| *last >= h) {
                break;
            }
            if let Some((_, h)) = self.0.pop_front() {
                into.push(h);
            }
        }
    }
}

impl Drop for HeldAcks {
    fn drop(&mut self) {
        for (_, h) in &self.0 {
            h.reject();
        }
    }
}

/// One stream's record being joined.
pub(super) struct Stream {
    /// The tag of its records (part of what tells streams apart).
    pub(super) tag: Tag,
    /// The record being joined.
    pub(super) joiner: Joiner,
    /// Position of the next line.
    pub(super) next: u64,
    /// The lines held, by position (from `joiner.held_from()` on).
    pub(super) origins: VecDeque<(u64, Origin)>,
    pub(super) acks: HeldAcks,
    /// The memory budget's charge for the text and records held: the
    /// batches they came in may be gone (settled, or every line held and
    /// the batch dropped), so their charge no longer covers them.
    pub(super) memory: MemoryCharge,
}

impl Stream {
    pub(super) fn origin(&self, pos: u64) -> Option<&Origin> {
        self.origins
            .binary_search_by_key(&pos, |(p, _)| *p)
            .ok()
            .map(|i| &self.origins[i].1)
    }

    /// Bytes held: the joined text so far and the records of the lines
    /// (with a little for each line's place in the queue).
    pub(super) fn held_bytes(&self) -> usize {
        let origins: usize = self
            .origins
            .iter()
            .map(|(_, o)| o.map.as_ref().map_or(0, Vec::len) + 32)
            .sum();
        self.joiner.held_bytes() + origins
    }

    /// Makes the stream's charge what it holds now: more from the budget
    /// `batch` (a batch it took lines from) is charged to, or the surplus
    /// given back.
    pub(super) fn recharge(&mut self, batch: &SharedCharge) {
        let held = self.held_bytes();
        let charged = self.memory.bytes();
        if held > charged {
            self.memory.merge(batch.charge_apart(held - charged));
        } else {
            self.memory.shrink_to(held);
        }
    }

    /// Forgets the origins of lines no longer held.
    pub(super) fn prune(&mut self) {
        let from = self.joiner.held_from().unwrap_or(self.next);
        while self.origins.front().is_some_and(|(p, _)| *p < from) {
            self.origins.pop_front();
        }
    }
}

/// One handle that passes its verdict on to each of `handles` (a joined
/// record's batch, and the batches its lines came from).
pub(super) fn passing_on(mut handles: Vec<AckHandle>) -> AckHandle {
    handles.retain(AckHandle::is_tracked);
    if handles.len() <= 1 {
        return handles.pop().unwrap_or_default();
    }
    let waited = handles.iter().any(AckHandle::is_waited_on);
    let ack = AckHandle::new(move |outcome| {
        for h in &handles {
            match &outcome {
                AckOutcome::Accepted => {}
                AckOutcome::Rejected => h.reject(),
                AckOutcome::Refused(r) => h.refuse((**r).clone()),
            }
        }
    });
    if waited {
        ack.mark_waited_on();
    }
    ack
}
