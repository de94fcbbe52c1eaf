//! `type = "generator"`: makes records itself (Fluentd's "dummy"), for
//! load tests, benchmarks and smoke tests.
//!
//! Each record is a line standing for `{"message": line}`: the fixed
//! `message` if set, otherwise the record's sequence number, zero-padded to
//! `size` bytes (or followed by `x` padding beyond 20 bytes), so every line
//! is distinct and a receiver can check that none is missing.

use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use tokio::time::Instant;

use crate::ack::{AckHandle, AckOutcome};
use crate::component::SourceContext;
use crate::event::{Batch, EventTime, Records};
use crate::metrics::Counter;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Tag of every record.
    #[serde(default = "default_tag")]
    pub tag: String,
    /// Records per second; 0 = as fast as the pipeline takes them.
    #[serde(default)]
    pub rate: u64,
    /// Records to make before stopping; 0 = never stop.
    #[serde(default)]
    pub count: u64,
    /// A fixed message for every record (instead of sequence numbers).
    pub message: Option<String>,
    /// Length in bytes of each generated line (without the newline) when
    /// `message` is not set.
    #[serde(
        default = "default_size",
        deserialize_with = "crate::config::units::bytes"
    )]
    pub size: usize,
    /// Most records per batch.
    #[serde(default = "default_batch_records")]
    pub batch_records: usize,
}

fn default_tag() -> String {
    "generator".into()
}

const fn default_size() -> usize {
    100
}

const fn default_batch_records() -> usize {
    1000
}

impl GeneratorConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.batch_records == 0 {
            return Err("batch_records must be at least 1".into());
        }
        if self.size == 0 && self.message.is_none() {
            return Err("size must be at least 1".into());
        }
        if self.message.as_deref().is_some_and(|m| m.contains('\n')) {
            return Err("message must be a single line".into());
        }
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        Ok(())
    }
}

pub struct GeneratorSource {
    config: GeneratorConfig,
    cx: SourceContext,
    records: Counter,
    /// Records a sink rejected (or dropped): a finite run that has any
    /// exits with status 1.
    undelivered: Counter,
}

impl GeneratorSource {
    pub fn new(config: GeneratorConfig, cx: SourceContext) -> Self {
        let records = cx.metrics.counter(
            "logferry_source_records_total",
            "Records received by a source.",
            &[("component", &cx.name)],
        );
        let undelivered = cx.metrics.counter(
            "logferry_generator_undelivered_records_total",
            "Generated records that a sink did not keep (rejected or dropped).",
            &[("component", &cx.name)],
        );
        GeneratorSource {
            config,
            cx,
            records,
            undelivered,
        }
    }

    pub async fn run(mut self) {
        let c = &self.config;
        let tag: crate::event::Tag = c.tag.as_str().into();
        let per_batch = if c.rate > 0 {
            // about a hundred batches a second keeps the rate smooth
            (c.rate / 100).clamp(1, c.batch_records as u64) as usize
        } else {
            c.batch_records
        };
        let mut lines = Lines::new(c.message.as_deref(), c.size);
        let start = Instant::now();
        let mut made: u64 = 0;
        while c.count == 0 || made < c.count {
            if self.cx.shutdown.is_triggered() {
                break;
            }
            let n = if c.count == 0 {
                per_batch
            } else {
                per_batch.min((c.count - made) as usize)
            };
            let data = lines.batch(made, n);
            let undelivered = self.undelivered.clone();
            let batch = Batch::new(
                tag.clone(),
                Records::Lines {
                    data,
                    time: EventTime::now(),
                },
                n,
            )
            .with_ack(AckHandle::new(move |outcome| {
                if outcome == AckOutcome::Rejected {
                    undelivered.add(n as u64);
                }
            }));
            let routed = tokio::select! {
                biased;
                routed = self.cx.router.route(batch) => routed.is_ok(),
                _ = self.cx.shutdown.wait() => false,
            };
            if !routed {
                break;
            }
            made += n as u64;
            self.records.add(n as u64);
            if c.rate > 0 {
                let due = start + Duration::from_secs_f64(made as f64 / c.rate as f64);
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    _ = self.cx.shutdown.wait() => break,
                }
            } else {
                // let other tasks (and the shutdown signal) in
                tokio::task::yield_now().await;
            }
        }
        tracing::info!(source = %self.cx.name, records = made, "generator finished");
    }
}

/// Builds batches of generated lines.
struct Lines {
    fixed: Option<Vec<u8>>,
    size: usize,
}

impl Lines {
    fn new(message: Option<&str>, size: usize) -> Self {
        Lines {
            fixed: message.map(|m| m.as_bytes().to_vec()),
            size,
        }
    }

    /// `n` lines numbered from `first`.
    fn batch(&mut self, first: u64, n: usize) -> Bytes {
        if let Some(m) = &self.fixed {
            let mut out = Vec::with_capacity(n * (m.len() + 1));
            for _ in 0..n {
                out.extend_from_slice(m);
                out.push(b'\n');
            }
            return out.into();
        }
        let width = self.size.min(20);
        let mut out = vec![b'x'; n * (self.size + 1)];
        for (i, line) in out.chunks_exact_mut(self.size + 1).enumerate() {
            let mut seq = first + i as u64;
            for d in line[..width].iter_mut().rev() {
                *d = b'0' + (seq % 10) as u8;
                seq /= 10;
            }
            line[self.size] = b'\n';
        }
        out.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_lines_have_the_configured_size() {
        let mut l = Lines::new(None, 24);
        let b = l.batch(41, 2);
        assert_eq!(
            &b[..],
            b"00000000000000000041xxxx\n00000000000000000042xxxx\n"
        );
        let mut l = Lines::new(None, 4);
        assert_eq!(&l.batch(12345, 1)[..], b"2345\n");
        let mut l = Lines::new(Some("hi"), 100);
        assert_eq!(&l.batch(0, 2)[..], b"hi\nhi\n");
    }
}
