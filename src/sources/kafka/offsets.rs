//! Which offsets may be committed: per partition, the batches handed to
//! the sinks in offset order, and the offset past the longest run of
//! acknowledged batches at the front.
//!
//! A batch a sink rejected stops the commits of its partition there (its
//! records stay uncommitted, so a restart or a rebalance delivers them
//! again: at least once); later batches are not kept (the partition's
//! memory stays bounded however long it reads on) and never move the
//! committed offset past the rejected one.
//!
//! Only partitions this member owns are tracked: from their assignment to
//! their revoke. A revoke forgets a partition whole, so a batch read
//! before it can never be tracked, or committed, in a later assignment
//! that knows nothing of the batches before it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use crate::ack::AckOutcome;

/// A partition: topic and number.
pub type PartitionId = (String, i32);

#[derive(Debug, Default)]
pub struct Offsets {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    partitions: HashMap<PartitionId, Partition>,
    /// Partitions assigned to this member and not revoked since: the only
    /// ones whose batches are tracked (and so committed).
    owned: HashSet<PartitionId>,
    /// Source of partition generations: acknowledgements for a partition
    /// that was revoked (and maybe assigned again since) are ignored.
    next_generation: u64,
}

#[derive(Debug)]
struct Partition {
    generation: u64,
    in_flight: VecDeque<InFlight>,
    /// The offset to commit next: every message before it is acknowledged.
    committable: Option<i64>,
    /// The last offset committed (or being committed).
    committed: Option<i64>,
    /// A batch was rejected: nothing past it is committed, and later
    /// batches are not kept in `in_flight`.
    stuck: bool,
}

#[derive(Debug)]
struct InFlight {
    first: i64,
    /// The offset after the batch's last message.
    next: i64,
    outcome: Option<AckOutcome>,
}

/// A handed-out batch, to pass back to [`Offsets::settle`].
#[derive(Debug, Clone)]
pub struct Ticket {
    pub partition: PartitionId,
    generation: u64,
    first: i64,
}

impl Offsets {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `partitions` are this member's from now on (an assignment).
    pub fn assign(&self, partitions: &[PartitionId]) {
        self.lock().owned.extend(partitions.iter().cloned());
    }

    /// Records that messages `first..next` of `partition` go to the sinks;
    /// `None` if the partition is not this member's (revoked since they
    /// were read): they must not be handed over, their owner reads them.
    pub fn track(&self, partition: PartitionId, first: i64, next: i64) -> Option<Ticket> {
        let mut inner = self.lock();
        let Inner {
            partitions,
            owned,
            next_generation,
        } = &mut *inner;
        if !owned.contains(&partition) {
            return None;
        }
        let p = partitions.entry(partition.clone()).or_insert_with(|| {
            *next_generation += 1;
            Partition {
                generation: *next_generation,
                in_flight: VecDeque::new(),
                committable: None,
                committed: None,
                stuck: false,
            }
        });
        if !p.stuck {
            // a stuck partition never commits past its rejected batch
            // again: later batches need no place in the list
            p.in_flight.push_back(InFlight {
                first,
                next,
                outcome: None,
            });
        }
        Some(Ticket {
            partition,
            generation: p.generation,
            first,
        })
    }

    /// The sinks' verdict on a batch. Returns true when this verdict is
    /// the rejection that stops the partition's commits.
    pub fn settle(&self, t: &Ticket, outcome: AckOutcome) -> bool {
        let mut inner = self.lock();
        let Some(p) = inner.partitions.get_mut(&t.partition) else {
            return false;
        };
        if p.generation != t.generation {
            return false;
        }
        if let Some(b) = p.in_flight.iter_mut().find(|b| b.first == t.first) {
            b.outcome = Some(outcome);
        }
        while let Some(front) = p.in_flight.front() {
            match front.outcome {
                Some(AckOutcome::Accepted | AckOutcome::Refused(_)) if !p.stuck => {
                    p.committable = Some(front.next);
                    p.in_flight.pop_front();
                }
                Some(AckOutcome::Rejected) if !p.stuck => {
                    p.stuck = true;
                    p.in_flight.clear();
                    return true;
                }
                _ => break,
            }
        }
        false
    }

    /// Offsets acknowledged since the last call, to commit now.
    pub fn take_committable(&self) -> Vec<(PartitionId, i64)> {
        let mut inner = self.lock();
        let mut out = Vec::new();
        for (id, p) in inner.partitions.iter_mut() {
            if let Some(c) = p.committable {
                if p.committed != Some(c) {
                    p.committed = Some(c);
                    out.push((id.clone(), c));
                }
            }
        }
        out
    }

    /// Every partition's acknowledged offset, whether or not an
    /// asynchronous commit of it was sent already: at shutdown the results
    /// of those are no longer polled (so neither counted nor, on a failure,
    /// tried again), and committing an offset twice is harmless.
    pub fn take_all_committable(&self) -> Vec<(PartitionId, i64)> {
        let mut inner = self.lock();
        let mut out = Vec::new();
        for (id, p) in inner.partitions.iter_mut() {
            if let Some(c) = p.committable {
                p.committed = Some(c);
                out.push((id.clone(), c));
            }
        }
        out
    }

    /// Commits of `failed` (partition, offset) did not go through: they
    /// are returned again by the next [`Offsets::take_committable`] (unless
    /// a later offset is committed by then, or the partition has gone).
    pub fn commit_failed(&self, failed: &[(PartitionId, i64)]) {
        let mut inner = self.lock();
        for (id, offset) in failed {
            if let Some(p) = inner.partitions.get_mut(id) {
                if p.committed == Some(*offset) {
                    p.committed = None;
                }
            }
        }
    }

    /// Forgets revoked partitions; returns their acknowledged offsets not
    /// yet committed (contiguous from the last commit: never past a batch
    /// without a verdict or a rejected one).
    pub fn revoke(&self, revoked: &[PartitionId]) -> Vec<(PartitionId, i64)> {
        let mut inner = self.lock();
        let mut out = Vec::new();
        for id in revoked {
            inner.owned.remove(id);
            if let Some(p) = inner.partitions.remove(id) {
                if let Some(c) = p.committable.filter(|c| p.committed != Some(*c)) {
                    out.push((id.clone(), c));
                }
            }
        }
        out
    }

    /// Forgets every partition without committing anything: the
    /// assignment was lost (a failed rebalance), so commits would fail or
    /// land on another member's partitions.
    pub fn lose_all(&self) {
        let mut inner = self.lock();
        inner.owned.clear();
        inner.partitions.clear();
    }

    /// Batches handed to the sinks without a verdict yet (of partitions
    /// that are not stuck).
    pub fn unsettled(&self) -> usize {
        self.lock()
            .partitions
            .values()
            .filter(|p| !p.stuck)
            .map(|p| p.in_flight.iter().filter(|b| b.outcome.is_none()).count())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AckOutcome::*;

    fn p(n: i32) -> PartitionId {
        ("t".into(), n)
    }

    /// `o` with partition `n` assigned.
    fn owning(n: i32) -> Offsets {
        let o = Offsets::default();
        o.assign(&[p(n)]);
        o
    }

    fn track(o: &Offsets, n: i32, first: i64, next: i64) -> Ticket {
        o.track(p(n), first, next).expect("an owned partition")
    }

    #[test]
    fn commits_only_past_batches_acknowledged_in_order() {
        let o = owning(0);
        let a = track(&o, 0, 0, 10);
        let b = track(&o, 0, 10, 20);
        let c = track(&o, 0, 20, 30);
        o.settle(&b, Accepted);
        assert!(o.take_committable().is_empty(), "batch 0..10 is not acked");
        o.settle(&a, Accepted);
        assert_eq!(o.take_committable(), vec![(p(0), 20)]);
        assert!(o.take_committable().is_empty(), "already committed");
        assert_eq!(o.unsettled(), 1);
        o.settle(&c, Accepted);
        assert_eq!(o.take_committable(), vec![(p(0), 30)]);
    }

    #[test]
    fn the_stop_commits_again_what_an_async_commit_may_not_have_settled() {
        let o = owning(0);
        let a = track(&o, 0, 0, 10);
        o.settle(&a, Accepted);
        assert_eq!(o.take_committable(), vec![(p(0), 10)]);
        // its result was never polled: the stop's commit includes it
        assert_eq!(o.take_all_committable(), vec![(p(0), 10)]);
        let _ = track(&o, 0, 10, 20);
        assert_eq!(
            o.take_all_committable(),
            vec![(p(0), 10)],
            "not past a batch without a verdict"
        );
    }

    #[test]
    fn a_rejected_batch_is_never_committed_past() {
        let o = owning(1);
        let a = track(&o, 1, 0, 10);
        let b = track(&o, 1, 10, 20);
        let c = track(&o, 1, 20, 30);
        o.settle(&a, Accepted);
        assert!(o.settle(&b, Rejected), "the first rejection is reported");
        o.settle(&c, Accepted);
        assert_eq!(o.take_committable(), vec![(p(1), 10)]);
        assert!(o.take_committable().is_empty());
    }

    #[test]
    fn revoke_returns_what_is_acknowledged_and_ignores_late_verdicts() {
        let o = owning(2);
        let a = track(&o, 2, 5, 10);
        let b = track(&o, 2, 10, 20);
        o.settle(&a, Accepted);
        assert_eq!(o.revoke(&[p(2)]), vec![(p(2), 10)]);
        // assigned again: a late verdict of the old assignment changes nothing
        o.assign(&[p(2)]);
        let c = track(&o, 2, 10, 15);
        o.settle(&b, Accepted);
        assert!(o.take_committable().is_empty());
        o.settle(&c, Accepted);
        assert_eq!(o.take_committable(), vec![(p(2), 15)]);
    }

    #[test]
    fn records_read_before_a_revoke_never_move_a_commit() {
        // 0..10 went to the sinks and has no verdict (or was rejected);
        // 10..15 was read and waited for its batch when the partition was
        // revoked
        for first_verdict in [None, Some(Rejected)] {
            let o = owning(3);
            let a = track(&o, 3, 0, 10);
            if let Some(v) = first_verdict.clone() {
                o.settle(&a, v);
            }
            assert!(o.revoke(&[p(3)]).is_empty(), "{first_verdict:?}");
            // handed over after the revoke, it would be tracked afresh and
            // its ack would commit 15, past 0..10, for a partition another
            // member owns
            assert!(o.track(p(3), 10, 15).is_none(), "{first_verdict:?}");
            assert!(o.take_committable().is_empty());
            // assigned back: reading resumes at the last commit (0)
            o.assign(&[p(3)]);
            o.settle(&a, Accepted); // late, of the old assignment
            assert!(o.take_committable().is_empty(), "{first_verdict:?}");
            let again = track(&o, 3, 0, 15);
            o.settle(&again, Accepted);
            assert_eq!(o.take_committable(), vec![(p(3), 15)]);
        }
    }

    #[test]
    fn a_partition_never_assigned_or_lost_is_not_tracked() {
        let o = Offsets::default();
        assert!(o.track(p(4), 0, 10).is_none());
        o.assign(&[p(4), p(5)]);
        let a = track(&o, 4, 0, 10);
        o.lose_all();
        o.settle(&a, Accepted);
        assert!(o.take_committable().is_empty());
        assert!(o.track(p(5), 0, 10).is_none());
    }

    #[test]
    fn a_stuck_partition_keeps_no_list_of_later_batches() {
        let o = owning(6);
        let a = track(&o, 6, 0, 10);
        let b = track(&o, 6, 10, 20);
        assert!(o.settle(&a, Rejected));
        o.settle(&b, Accepted);
        for i in 2..10_000 {
            let t = track(&o, 6, i * 10, i * 10 + 10);
            assert!(!o.settle(&t, Accepted), "reported once");
        }
        let kept = o.lock().partitions[&p(6)].in_flight.len();
        assert_eq!(
            kept, 0,
            "batches kept for a partition that never commits again"
        );
        assert!(o.take_committable().is_empty());
        assert_eq!(o.unsettled(), 0);
    }
}
