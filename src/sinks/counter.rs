//! `type = "counter"`: a flow counter. Every `interval` it logs, per tag,
//! the records and bytes seen in that interval and the rate, like
//! Fluentd's flowcounter_simple, then accepts the records and discards them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;
use crate::event::Tag;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CounterSinkConfig {
    /// How often to report.
    #[serde(
        default = "default_interval",
        deserialize_with = "crate::config::units::duration"
    )]
    pub interval: Duration,
}

const fn default_interval() -> Duration {
    Duration::from_secs(10)
}

impl CounterSinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.interval < Duration::from_millis(10) {
            return Err("interval must be at least 10ms".into());
        }
        Ok(())
    }
}

#[derive(Default)]
struct Flow {
    records: u64,
    bytes: u64,
}

pub struct CounterSink {
    name: String,
    interval: Duration,
    flows: BTreeMap<Tag, Flow>,
    since: Instant,
    metrics: SinkMetrics,
}

impl CounterSink {
    pub fn new(name: &str, config: CounterSinkConfig, metrics: SinkMetrics) -> Self {
        CounterSink {
            name: name.to_string(),
            interval: config.interval,
            flows: BTreeMap::new(),
            since: Instant::now(),
            metrics,
        }
    }

    fn report(&mut self) {
        let secs = self.since.elapsed().as_secs_f64().max(1e-9);
        for (tag, f) in std::mem::take(&mut self.flows) {
            tracing::info!(
                sink = %self.name,
                tag = %tag,
                records = f.records,
                bytes = f.bytes,
                records_per_sec = format_args!("{:.1}", f.records as f64 / secs),
                "flow"
            );
        }
        self.since = Instant::now();
    }
}

impl Sink for CounterSink {
    fn take(&mut self, d: Delivery) {
        let b = d.batch();
        let flow = self.flows.entry(b.tag.clone()).or_default();
        flow.records += b.count as u64;
        flow.bytes += b.byte_len() as u64;
        self.metrics.records.add(b.count as u64);
        self.metrics.bytes.add(b.byte_len() as u64);
        d.accept();
    }

    fn flush(&mut self) {}

    fn tick_interval(&self) -> Option<Duration> {
        Some(self.interval)
    }

    fn tick(&mut self) {
        self.report();
    }

    fn finish(&mut self) {
        self.report();
    }
}
