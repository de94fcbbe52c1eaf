//! `type = "null"`: accepts and discards everything (benchmarks, tests).

use serde::Deserialize;

use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct NullSinkConfig {}

pub struct NullSink {
    metrics: SinkMetrics,
}

impl NullSink {
    pub fn new(metrics: SinkMetrics) -> Self {
        NullSink { metrics }
    }
}

impl Sink for NullSink {
    fn take(&mut self, d: Delivery) {
        self.metrics.records.add(d.batch().count as u64);
        self.metrics.bytes.add(d.batch().byte_len() as u64);
        d.accept();
    }

    fn flush(&mut self) {}
}
