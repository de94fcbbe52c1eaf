//! `metadata_wait`: the batches of a container whose pod the cache does
//! not know yet wait for it, held by the filter (no thread waits), at
//! most `metadata_wait` from the first of them, in their order. A tag
//! that waited its whole time once is not held again (a pod this API
//! server never tells about costs one wait, not one per batch). Held
//! batches keep their acknowledgement: a client that waits for one is
//! answered once its records are written, as ever.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::event::{Batch, Tag};

/// How soon held batches are looked at again after the cache changed: a
/// cluster whose pods change all the time costs at most this many looks
/// a second, not one per change.
pub(super) const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// Most tags remembered as having waited; past it they are forgotten
/// (and may wait once more).
const MAX_WAITED: usize = 16_384;

/// One tag's held batches.
struct Held {
    /// When they go on, known or not.
    until: Instant,
    batches: Vec<Batch>,
}

/// What the filter holds.
#[derive(Default)]
pub(super) struct Waiting {
    /// Held batches by tag, in their order.
    tags: HashMap<Tag, Held>,
    /// Tags that waited their whole time once.
    waited: HashSet<Tag>,
    /// The cache generation the held tags were last looked up at.
    generation: u64,
    /// When the held batches were last looked at (while some are held).
    looked: Option<Instant>,
}

impl Waiting {
    /// The batches to send on now, in order: none when `batch` is held
    /// (its tag already waits, and its pod is not `known`; or the pod is
    /// not known and the tag never waited), else those held before it and
    /// `batch`.
    pub fn admit(
        &mut self,
        batch: Batch,
        known: bool,
        wait: Duration,
        generation: u64,
    ) -> Vec<Batch> {
        if let Some(held) = self.tags.get_mut(&batch.tag) {
            if !known {
                held.batches.push(batch);
                return Vec::new();
            }
            let mut batches = self
                .tags
                .remove(&batch.tag)
                .map_or_else(Vec::new, |h| h.batches);
            batches.push(batch);
            return batches;
        }
        if known || self.waited.contains(&batch.tag) {
            return vec![batch];
        }
        let now = Instant::now();
        if self.tags.is_empty() {
            self.generation = generation;
            self.looked = Some(now);
        }
        self.tags.insert(
            batch.tag.clone(),
            Held {
                until: now + wait,
                batches: vec![batch],
            },
        );
        Vec::new()
    }

    /// Gives back the held batches whose pod is now `known`, whose time is
    /// up at `now`, or all of them with `all`, by tag.
    pub fn release(
        &mut self,
        now: Instant,
        all: bool,
        generation: u64,
        mut known: impl FnMut(&Tag) -> bool,
    ) -> Vec<(Tag, Vec<Batch>)> {
        let due: Vec<(Tag, bool)> = self
            .tags
            .iter()
            .filter_map(|(tag, held)| {
                let k = known(tag);
                (all || k || held.until <= now).then(|| (tag.clone(), k))
            })
            .collect();
        let mut out = Vec::with_capacity(due.len());
        for (tag, k) in due {
            if let Some(held) = self.tags.remove(&tag) {
                if !k {
                    if self.waited.len() >= MAX_WAITED {
                        self.waited.clear();
                    }
                    self.waited.insert(tag.clone());
                }
                out.push((tag, held.batches));
            }
        }
        self.generation = generation;
        self.looked = (!self.tags.is_empty()).then_some(now);
        out
    }

    /// When held batches should be looked at next: [`LOOK_AGAIN`] after
    /// they last were when the cache changed since, else when the first
    /// wait ends.
    pub fn deadline(&self, generation: u64) -> Option<Instant> {
        if self.tags.is_empty() {
            return None;
        }
        if generation != self.generation {
            if let Some(looked) = self.looked {
                let first = self.tags.values().map(|h| h.until).min();
                return first.min(Some(looked + LOOK_AGAIN));
            }
        }
        self.tags.values().map(|h| h.until).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Records;

    fn batch(tag: &str, n: usize) -> Batch {
        Batch::new(
            tag.into(),
            Records::Entries(bytes::Bytes::from(vec![0xc0; n])),
            n,
        )
    }

    fn sizes(batches: &[Batch]) -> Vec<usize> {
        batches.iter().map(|b| b.count).collect()
    }

    #[test]
    fn a_tag_waits_in_order_until_its_pod_is_known() {
        let mut w = Waiting::default();
        let wait = Duration::from_secs(10);
        assert!(w.admit(batch("a", 1), false, wait, 5).is_empty());
        assert!(w.admit(batch("a", 2), false, wait, 5).is_empty());
        // another tag whose pod is known goes at once
        assert_eq!(sizes(&w.admit(batch("b", 9), true, wait, 5)), [9]);
        assert!(w.deadline(5).unwrap() > Instant::now());
        // the cache changed: look again soon
        assert!(w.deadline(6).unwrap() <= Instant::now() + LOOK_AGAIN);
        assert!(w.release(Instant::now(), false, 6, |_| false).is_empty());
        assert!(w.deadline(6).unwrap() > Instant::now() + LOOK_AGAIN);
        // the next batch finds the pod known: the held go first
        assert_eq!(sizes(&w.admit(batch("a", 3), true, wait, 7)), [1, 2, 3]);
        assert_eq!(w.deadline(8), None);
    }

    #[test]
    fn a_tag_whose_time_is_up_goes_and_never_waits_again() {
        let mut w = Waiting::default();
        let wait = Duration::from_millis(10);
        assert!(w.admit(batch("a", 1), false, wait, 1).is_empty());
        let later = Instant::now() + Duration::from_secs(1);
        let out = w.release(later, false, 1, |_| false);
        assert_eq!(out.len(), 1);
        assert_eq!(sizes(&out[0].1), [1]);
        assert_eq!(sizes(&w.admit(batch("a", 2), false, wait, 1)), [2]);
    }

    #[test]
    fn known_pods_and_all_release_at_once() {
        let mut w = Waiting::default();
        let wait = Duration::from_secs(10);
        w.admit(batch("a", 1), false, wait, 1);
        w.admit(batch("b", 2), false, wait, 1);
        let out = w.release(Instant::now(), false, 2, |t| &**t == "b");
        assert_eq!(out.len(), 1);
        assert_eq!(&*out[0].0, "b");
        let out = w.release(Instant::now(), true, 2, |_| false);
        assert_eq!(out.len(), 1);
        assert_eq!(w.deadline(3), None);
    }
}
