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

use std::collections::HashMap;
use std::sync::Mutex;
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
    rate: u64,
    window: Duration,
    key: Option<FieldPath>,
    /// Per group: when its window started, and how many it let through.
    groups: Mutex<HashMap<Vec<u8>, (Instant, u64)>>,
    /// Records that reached the filter.
    records: Counter,
    /// Records it dropped (settled as filtered).
    dropped: Counter,
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
            groups: Mutex::new(HashMap::new()),
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
        let mut admit = |group: &[u8]| {
            if !groups.contains_key(group) && groups.len() >= MAX_GROUPS {
                groups.retain(|_, (start, _)| now.duration_since(*start) < self.window);
                if groups.len() >= MAX_GROUPS {
                    let oldest = groups
                        .iter()
                        .min_by_key(|(_, (s, _))| *s)
                        .map(|(k, _)| k.clone());
                    if let Some(k) = oldest {
                        groups.remove(&k);
                    }
                }
            }
            let (start, count) = groups.entry(group.to_vec()).or_insert((now, 0));
            if now.duration_since(*start) >= self.window {
                *start = now;
                *count = 0;
            }
            *count += 1;
            *count <= self.rate
        };
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
        assert!(f.groups.lock().unwrap().len() <= MAX_GROUPS);
    }

    #[test]
    fn a_zero_window_is_an_error() {
        let c: ThrottleConfig = toml::from_str("rate = 1\nwindow = '0s'").unwrap();
        assert!(c.validate().is_err());
    }
}
