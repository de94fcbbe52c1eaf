//! Records a sink is done with (stored, or set aside for good) in batches
//! it gave back to their sources when `retry.max_attempts` ran out with
//! other records of the same batch still failing.
//!
//! A source can only send a batch again whole (an HTTP client its
//! request, a forward client its chunk, a tail source its lines), so
//! without this every resend would store its stored records once more.
//! A sink that learns the fate of each record (OpenSearch's `_bulk`, item
//! by item) remembers those it is done with, and skips them once when
//! they come again: only the records not stored are sent again.
//!
//! A record is known by its tag and content, not its time (a resent HTTP
//! request, or a line read again, gets a new one). A record with the same
//! tag and content arriving from elsewhere before the resend is taken as
//! the resend (the store has one copy of that content for it, and the
//! resend then goes as new); only if the resend never comes does the store
//! hold one such record fewer than was sent. What is remembered is bounded
//! ([`MAX_REMEMBERED`] records, each for [`REMEMBERED_FOR`]) and is only
//! ever filled by batches given back, never in normal running.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Most records remembered; the oldest are forgotten first (and would be
/// stored again if their batch comes back after that).
pub const MAX_REMEMBERED: usize = 100_000;

/// How long a record is remembered: far longer than a client or a tail
/// source takes to send a rejected batch again.
pub const REMEMBERED_FOR: Duration = Duration::from_secs(600);

/// The records done with in batches given back, as a multiset of keys.
#[derive(Debug, Default)]
pub struct GivenBack {
    /// Key → how many such records are remembered.
    counts: HashMap<u128, u32>,
    /// Keys in the order remembered, with when: the oldest are forgotten.
    order: VecDeque<(Instant, u128)>,
}

impl GivenBack {
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Remembers one record done with, of a batch given back.
    pub fn remember(&mut self, key: u128, now: Instant) {
        self.forget_old(now);
        if self.order.len() >= MAX_REMEMBERED {
            self.forget_first();
        }
        *self.counts.entry(key).or_insert(0) += 1;
        self.order.push_back((now, key));
    }

    /// Whether a record with `key` is one done with already; if so it is
    /// taken (skipped once).
    pub fn take(&mut self, key: u128, now: Instant) -> bool {
        self.forget_old(now);
        match self.counts.get_mut(&key) {
            Some(n) => {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(&key);
                }
                true
            }
            None => false,
        }
    }

    fn forget_old(&mut self, now: Instant) {
        while self
            .order
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) >= REMEMBERED_FOR)
        {
            self.forget_first();
        }
        if self.counts.is_empty() {
            self.order.clear();
        }
    }

    /// Forgets the oldest entry (if a record with its key was taken
    /// since, another one of that key goes instead: the same content).
    fn forget_first(&mut self) {
        if let Some((_, key)) = self.order.pop_front() {
            if let Some(n) = self.counts.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_record_done_with_is_skipped_once() {
        let mut g = GivenBack::default();
        let now = Instant::now();
        assert!(!g.take(1, now));
        g.remember(1, now);
        g.remember(1, now);
        g.remember(2, now);
        assert!(g.take(1, now) && g.take(1, now));
        assert!(!g.take(1, now), "two were remembered, not three");
        assert!(g.take(2, now));
        assert!(g.is_empty());
    }

    #[test]
    fn records_are_forgotten_after_a_while_and_beyond_the_bound() {
        let mut g = GivenBack::default();
        let now = Instant::now();
        g.remember(7, now);
        assert!(!g.take(7, now + REMEMBERED_FOR));
        for k in 0..MAX_REMEMBERED as u128 + 10 {
            g.remember(k, now);
        }
        assert_eq!(g.order.len(), MAX_REMEMBERED);
        assert!(!g.take(3, now), "the oldest are forgotten first");
        assert!(g.take(MAX_REMEMBERED as u128 + 9, now));
    }
}
