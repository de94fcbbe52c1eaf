//! Which offsets may be committed: per partition, the batches handed to
//! the sinks in offset order, and the offset past the longest run of
//! acknowledged batches at the front.
//!
//! A batch a sink rejected stops the commits of its partition there (its
//! records stay uncommitted, so a restart or a rebalance delivers them
//! again: at least once); later batches are still tracked but never move
//! the committed offset past the rejected one.

use std::collections::{HashMap, VecDeque};
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
    /// A batch was rejected: nothing past it is committed.
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

    /// Records that messages `first..next` of `partition` went to the sinks.
    pub fn track(&self, partition: PartitionId, first: i64, next: i64) -> Ticket {
        let mut inner = self.lock();
        let Inner {
            partitions,
            next_generation,
        } = &mut *inner;
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
        p.in_flight.push_back(InFlight {
            first,
            next,
            outcome: None,
        });
        Ticket {
            partition,
            generation: p.generation,
            first,
        }
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

    /// Forgets revoked partitions; returns their acknowledged offsets not
    /// yet committed.
    pub fn revoke(&self, revoked: &[PartitionId]) -> Vec<(PartitionId, i64)> {
        let mut inner = self.lock();
        let mut out = Vec::new();
        for id in revoked {
            if let Some(p) = inner.partitions.remove(id) {
                if let Some(c) = p.committable.filter(|c| p.committed != Some(*c)) {
                    out.push((id.clone(), c));
                }
            }
        }
        out
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

    #[test]
    fn commits_only_past_batches_acknowledged_in_order() {
        let o = Offsets::default();
        let a = o.track(p(0), 0, 10);
        let b = o.track(p(0), 10, 20);
        let c = o.track(p(0), 20, 30);
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
    fn a_rejected_batch_is_never_committed_past() {
        let o = Offsets::default();
        let a = o.track(p(1), 0, 10);
        let b = o.track(p(1), 10, 20);
        let c = o.track(p(1), 20, 30);
        o.settle(&a, Accepted);
        assert!(o.settle(&b, Rejected), "the first rejection is reported");
        o.settle(&c, Accepted);
        assert_eq!(o.take_committable(), vec![(p(1), 10)]);
        assert!(o.take_committable().is_empty());
    }

    #[test]
    fn revoke_returns_what_is_acknowledged_and_ignores_late_verdicts() {
        let o = Offsets::default();
        let a = o.track(p(2), 5, 10);
        let b = o.track(p(2), 10, 20);
        o.settle(&a, Accepted);
        assert_eq!(o.revoke(&[p(2)]), vec![(p(2), 10)]);
        // assigned again: a late verdict of the old assignment changes nothing
        let c = o.track(p(2), 10, 15);
        o.settle(&b, Accepted);
        assert!(o.take_committable().is_empty());
        o.settle(&c, Accepted);
        assert_eq!(o.take_committable(), vec![(p(2), 15)]);
    }
}
