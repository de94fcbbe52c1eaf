//! `type = "throttle"`: lets at most `rate` records through per `window`,
//! per tag or per value of a field; the rest are dropped and counted
//! (Fluent Bit's `throttle`, Vector's `throttle`).
//!
//! ```toml
//! [filters.noisy]
//! type = "throttle"
//! match = "app.**"
//! rate = 1000
//! window = "1s"
//! key = "service"
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::field::FieldPath;
use super::records::retain;
use crate::event::{Batch, RecordRef};
use crate::metrics::{Counter, Registry};
use crate::router::{Filter, TagPattern};

/// The keys of a throttle filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottleConfig {
    /// Records let through per window, per group.
    pub rate: u64,
    /// The window (`"1s"`, `"1m"`); a group's count starts over when its
    /// window has passed.
    #[serde(
        default = "default_window",
        deserialize_with = "crate::config::units::duration"
    )]
    pub window: Duration,
    /// Group by this field's value (`service`, or `$a['b']`) instead of
    /// by tag; records without it share one group.
    pub key: Option<String>,
}

const fn default_window() -> Duration {
    Duration::from_secs(1)
}

impl ThrottleConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.window.is_zero() {
            return Err("window must be longer than 0".into());
        }
        if let Some(k) = &self.key {
            FieldPath::parse(k).map_err(|e| format!("key: {e}"))?;
        }
        Ok(())
    }
}

/// Most groups a throttle filter counts at once: their values come from
/// records, so past it the groups whose window has passed are forgotten,
/// and if all are current the oldest window goes.
const MAX_GROUPS: usize = 10_000;

/// A running throttle filter.
pub struct ThrottleFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    /// Records let through per window, per group.
    rate: u64,
    /// How long a group's count runs before it starts over.
    window: Duration,
    /// The field whose value names a record's group; `None`: its tag.
    key: Option<FieldPath>,
    /// The groups being counted.
    groups: Mutex<Groups>,
    /// Records that reached the filter.
    records: Counter,
    /// Records it dropped (settled as filtered).
    dropped: Counter,
}

/// The groups a throttle filter counts, with the order their windows
/// started in, so that a record costs a lookup and the oldest window is
/// found without a scan: every window is as long, so the one that started
/// first ends first.
#[derive(Default)]
struct Groups {
    /// Per group: its current window.
    by_key: HashMap<Arc<[u8]>, Window>,
    /// The groups in the order their current windows started, each with
    /// its window's number; an entry whose group has since started another
    /// window, or gone, is stale and skipped.
    starts: VecDeque<(Arc<[u8]>, u64)>,
    /// The number the next window takes.
    next_id: u64,
}

/// One group's current window.
struct Window {
    /// When it started.
    start: Instant,
    /// Records it let through (or tried to).
    count: u64,
    /// Its number, matched against its entry in [`Groups::starts`].
    id: u64,
}

impl Groups {
    /// Counts a record of `key` at `now`; whether it is within `rate`.
    fn admit(&mut self, key: &[u8], now: Instant, window: Duration, rate: u64) -> bool {
        self.expire(now, window);
        let count = match self.by_key.get_key_value(key) {
            Some((k, w)) if now.saturating_duration_since(w.start) >= window => {
                // a window the queue has not reached yet (times taken on
                // other threads can arrive slightly out of order)
                let k = k.clone();
                self.start_window(k, now)
            }
            Some(_) => match self.by_key.get_mut(key) {
                Some(w) => {
                    w.count += 1;
                    w.count
                }
                None => 1,
            },
            None => {
                if self.by_key.len() >= MAX_GROUPS {
                    self.evict_oldest();
                }
                self.start_window(Arc::from(key), now)
            }
        };
        count <= rate
    }

    /// Starts a window of `key` at `now` with this record counted; its count.
    fn start_window(&mut self, key: Arc<[u8]>, now: Instant) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.starts.push_back((key.clone(), id));
        self.by_key.insert(
            key,
            Window {
                start: now,
                count: 1,
                id,
            },
        );
        // stale entries pile up only from windows restarted out of order:
        // drop them before the queue outgrows the table
        if self.starts.len() > 2 * self.by_key.len() + 64 {
            let by_key = &self.by_key;
            self.starts
                .retain(|(k, id)| by_key.get(k).is_some_and(|w| w.id == *id));
        }
        1
    }

    /// Forgets the groups whose window has passed at `now`.
    fn expire(&mut self, now: Instant, window: Duration) {
        while let Some((key, id)) = self.starts.front() {
            match self.by_key.get(key) {
                Some(w) if w.id == *id => {
                    if now.saturating_duration_since(w.start) < window {
                        return;
                    }
                    self.by_key.remove(key);
                }
                _ => {}
            }
            self.starts.pop_front();
        }
    }

    /// Forgets the group whose window started first.
    fn evict_oldest(&mut self) {
        while let Some((key, id)) = self.starts.pop_front() {
            if self.by_key.get(&key).is_some_and(|w| w.id == id) {
                self.by_key.remove(&key);
                return;
            }
        }
    }
}

impl ThrottleFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &ThrottleConfig,
        metrics: &Registry,
    ) -> Result<ThrottleFilter, String> {
        config.validate()?;
        Ok(ThrottleFilter {
            name: name.to_string(),
            pattern,
            rate: config.rate,
            window: config.window,
            key: config.key.as_deref().map(FieldPath::parse).transpose()?,
            groups: Mutex::new(Groups::default()),
            records: super::records_counter(metrics, name, "throttle"),
            dropped: super::dropped_counter(metrics, name, "throttle"),
        })
    }

    /// The batch with the records over the rate dropped, as of `now`.
    pub fn filter_at(&self, batch: Batch, now: Instant) -> Option<Batch> {
        let before = batch.count;
        self.records.add(before as u64);
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let tag = batch.tag.clone();
        let mut admit = |group: &[u8]| groups.admit(group, now, self.window, self.rate);
        let out = retain(batch, |r: RecordRef<'_>| match &self.key {
            None => admit(tag.as_bytes()),
            Some(k) => {
                let by_value = k.lookup(r).and_then(|v| v.with_text(|t| admit(t)));
                by_value.unwrap_or_else(|| admit(b""))
            }
        });
        let after = out.as_ref().map_or(0, |b| b.count);
        self.dropped.add(before.saturating_sub(after) as u64);
        out
    }
}

impl Filter for ThrottleFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        out.extend(self.filter_at(batch, Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::event::{EventTime, Records};

    fn filter(toml: &str) -> ThrottleFilter {
        let config: ThrottleConfig = toml::from_str(toml).unwrap();
        ThrottleFilter::new(
            "t",
            TagPattern::new("**").unwrap(),
            &config,
            &Registry::new(),
        )
        .unwrap()
    }

    fn lines(tag: &str, text: String) -> Batch {
        let n = text.lines().count();
        let records = Records::Lines {
            data: Bytes::from(text),
            time: EventTime::default(),
        };
        Batch::new(tag.into(), records, n)
    }

    fn numbered(n: usize) -> String {
        (0..n).map(|i| format!("{i}\n")).collect()
    }

    #[test]
    fn at_most_rate_per_window_per_tag_then_again_in_the_next_window() {
        let f = filter("rate = 5\nwindow = '1s'");
        let t0 = Instant::now();
        let a = f.filter_at(lines("a", numbered(8)), t0).unwrap();
        assert_eq!(a.records.bytes().as_ref(), b"0\n1\n2\n3\n4\n");
        assert!(
            f.filter_at(lines("a", numbered(3)), t0).is_none(),
            "the window is full"
        );
        assert_eq!(
            f.filter_at(lines("b", numbered(8)), t0).unwrap().count,
            5,
            "its own"
        );
        let later = t0 + Duration::from_millis(1000);
        assert_eq!(
            f.filter_at(lines("a", numbered(8)), later).unwrap().count,
            5
        );
        assert_eq!(f.dropped.get(), 3 + 3 + 3 + 3);
    }

    #[test]
    fn by_key_each_value_has_its_rate_and_the_groups_stay_bounded() {
        let f = filter("rate = 2\nkey = 'message'");
        let t0 = Instant::now();
        let text: String = (0..30).map(|i| format!("v{}\n", i % 3)).collect();
        assert_eq!(f.filter_at(lines("x", text), t0).unwrap().count, 6);
        let many: String = (0..MAX_GROUPS + 500).map(|i| format!("u{i}\n")).collect();
        assert_eq!(
            f.filter_at(lines("x", many), t0).unwrap().count,
            MAX_GROUPS + 500
        );
        assert!(f.groups.lock().unwrap().by_key.len() <= MAX_GROUPS);
    }

    #[test]
    fn past_the_most_groups_the_oldest_window_goes_and_passed_windows_first() {
        let window = Duration::from_secs(20);
        let mut g = Groups::default();
        let t0 = Instant::now();
        let key = |i: usize| format!("k{i}").into_bytes();
        for i in 0..MAX_GROUPS {
            // one group a millisecond: k0 is the oldest
            assert!(g.admit(&key(i), t0 + Duration::from_millis(i as u64), window, 1));
        }
        assert!(
            !g.admit(&key(5), t0 + window / 2, window, 1),
            "k5 is counted"
        );
        // a new group at capacity pushes out k0 only
        let full = t0 + Duration::from_millis(MAX_GROUPS as u64);
        assert!(g.admit(b"new", full, window, 1));
        assert_eq!(g.by_key.len(), MAX_GROUPS);
        assert!(!g.by_key.contains_key(&key(0)[..]));
        assert!(g.by_key.contains_key(&key(1)[..]));
        // k0 comes back as a new group (its count forgotten), pushing out k1
        assert!(g.admit(&key(0), full, window, 1));
        assert!(!g.by_key.contains_key(&key(1)[..]));
        // once the first 5,000 windows have passed, they go, and nothing else
        let later = t0 + window + Duration::from_millis(4_999);
        assert!(g.admit(b"later", later, window, 1));
        assert_eq!(
            g.by_key.len(),
            MAX_GROUPS - 5_000 + 3,
            "k5000.. , new, k0, later"
        );
        assert!(!g.by_key.contains_key(&key(4_999)[..]));
        assert!(g.by_key.contains_key(&key(5_000)[..]));
        assert!(
            !g.admit(&key(5_000), later, window, 1),
            "still in its window"
        );
        // the queue holds no more than the table, give or take stale entries
        assert!(g.starts.len() <= 2 * g.by_key.len() + 64);
    }

    #[test]
    fn a_window_that_passed_out_of_order_starts_over_and_the_queue_stays_small() {
        let window = Duration::from_secs(1);
        let mut g = Groups::default();
        let t0 = Instant::now();
        // "b" starts first in time but is queued second
        assert!(g.admit(b"a", t0 + Duration::from_millis(500), window, 1));
        assert!(g.admit(b"b", t0, window, 1));
        // at t0 + 1.2 s: a's window runs, b's has passed though behind a
        let t = t0 + Duration::from_millis(1200);
        assert!(g.admit(b"b", t, window, 1), "b starts over");
        assert!(!g.admit(b"b", t, window, 1));
        for i in 0..10_000u64 {
            let t = t + Duration::from_millis(i / 4);
            g.admit(b"x", t, Duration::from_millis(1), 1);
        }
        assert!(
            g.starts.len() <= 2 * g.by_key.len() + 64,
            "{}",
            g.starts.len()
        );
    }

    #[test]
    fn a_zero_window_is_an_error() {
        let c: ThrottleConfig = toml::from_str("rate = 1\nwindow = '0s'").unwrap();
        assert!(c.validate().is_err());
    }
}
