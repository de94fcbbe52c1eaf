//! `type = "sample"`: keeps one record in `rate` (Vector's `sample`
//! transform). With `key`, the choice follows a hash of that field's
//! value, so every record of one value (a trace id, a user) is kept or
//! dropped together, the same way after a restart.
//!
//! ```toml
//! [filters.one_in_ten]
//! type = "sample"
//! match = "debug.**"
//! rate = 10
//! key = "trace_id"
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;

use super::field::FieldPath;
use super::records::retain;
use crate::event::{Batch, RecordRef};
use crate::metrics::{Counter, Registry};
use crate::router::{Filter, TagPattern};

/// The keys of a sample filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleConfig {
    /// Keep one record in this many (1 keeps all).
    pub rate: u64,
    /// The field whose value decides (`trace_id`, or `$a['b']`); a record
    /// without it is sampled by count, as with no `key`.
    pub key: Option<String>,
}

impl SampleConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rate == 0 {
            return Err("rate must be at least 1 (keep one record in `rate`)".into());
        }
        if let Some(k) = &self.key {
            FieldPath::parse(k).map_err(|e| format!("key: {e}"))?;
        }
        Ok(())
    }
}

/// A running sample filter.
pub struct SampleFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    rate: u64,
    key: Option<FieldPath>,
    /// Records sampled by count so far.
    seen: AtomicU64,
    /// Records that reached the filter.
    records: Counter,
    /// Records it dropped (settled as filtered).
    dropped: Counter,
}

/// FNV-1a, 64 bits: fixed, so a value is kept or dropped the same way by
/// every process and after every restart (std's hasher promises neither).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl SampleFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &SampleConfig,
        metrics: &Registry,
    ) -> Result<SampleFilter, String> {
        config.validate()?;
        Ok(SampleFilter {
            name: name.to_string(),
            pattern,
            rate: config.rate,
            key: config.key.as_deref().map(FieldPath::parse).transpose()?,
            seen: AtomicU64::new(0),
            records: super::records_counter(metrics, name, "sample"),
            dropped: super::dropped_counter(metrics, name, "sample"),
        })
    }

    fn keeps(&self, record: RecordRef<'_>) -> bool {
        let by_value = self.key.as_ref().and_then(|k| {
            k.lookup(record)?
                .with_text(|text| fnv1a(text).is_multiple_of(self.rate))
        });
        by_value.unwrap_or_else(|| {
            self.seen
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(self.rate)
        })
    }

    /// The batch with the records not sampled dropped; `None` if none is left.
    pub fn filter(&self, batch: Batch) -> Option<Batch> {
        let before = batch.count;
        self.records.add(before as u64);
        let out = retain(batch, |r| self.keeps(r));
        let after = out.as_ref().map_or(0, |b| b.count);
        self.dropped.add(before.saturating_sub(after) as u64);
        out
    }
}

impl Filter for SampleFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        out.extend(self.filter(batch));
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::event::{EventTime, Records};

    fn filter(toml: &str) -> SampleFilter {
        let config: SampleConfig = toml::from_str(toml).unwrap();
        SampleFilter::new(
            "s",
            TagPattern::new("**").unwrap(),
            &config,
            &Registry::new(),
        )
        .unwrap()
    }

    fn lines(text: String) -> Batch {
        let n = text.lines().count();
        let records = Records::Lines {
            data: Bytes::from(text),
            time: EventTime::default(),
        };
        Batch::new("t".into(), records, n)
    }

    #[test]
    fn one_in_rate_is_kept_by_count() {
        let f = filter("rate = 10");
        let text: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let out = f.filter(lines(text)).unwrap();
        assert_eq!(out.count, 100);
        assert_eq!(f.dropped.get(), 900);
    }

    #[test]
    fn by_key_every_record_of_a_value_goes_the_same_way_in_every_process() {
        let text: String = (0..3000).map(|i| format!("user-{}\n", i % 300)).collect();
        let a = filter("rate = 4\nkey = 'message'");
        let b = filter("rate = 4\nkey = 'message'");
        let kept_a = a.filter(lines(text.clone())).unwrap();
        let kept_b = b.filter(lines(text)).unwrap();
        assert_eq!(kept_a.records.bytes(), kept_b.records.bytes());
        let values: std::collections::BTreeMap<&[u8], usize> = kept_a
            .records
            .bytes()
            .split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .fold(Default::default(), |mut m, l| {
                *m.entry(l).or_default() += 1;
                m
            });
        assert!(
            values.values().all(|n| *n == 10),
            "all ten of a value, or none"
        );
        // roughly one value in four
        assert!(
            (40..110).contains(&values.len()),
            "{} of 300 values",
            values.len()
        );
    }

    #[test]
    fn a_zero_rate_is_an_error() {
        let c: SampleConfig = toml::from_str("rate = 0").unwrap();
        assert!(c.validate().unwrap_err().contains("at least 1"));
    }
}
