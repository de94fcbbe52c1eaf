//! `type = "stdout"`: writes formatted records to standard output.

use std::io::Write;

use serde::Deserialize;

use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;
use crate::format::{FormatConfig, FormatKind, Formatter};

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StdoutSinkConfig {
    /// Output format; JSON by default, so records are readable with their tag and time.
    #[serde(default = "default_format")]
    pub format: FormatConfig,
}

fn default_format() -> FormatConfig {
    FormatConfig {
        kind: FormatKind::Json,
        ..FormatConfig::default()
    }
}

pub struct StdoutSink {
    formatter: Formatter,
    out: Vec<u8>,
    held: Vec<Delivery>,
    metrics: SinkMetrics,
}

impl StdoutSink {
    pub fn new(config: StdoutSinkConfig, metrics: SinkMetrics) -> Result<Self, String> {
        Ok(StdoutSink {
            formatter: Formatter::new(&config.format)?,
            out: Vec::with_capacity(64 * 1024),
            held: Vec::new(),
            metrics,
        })
    }
}

impl Sink for StdoutSink {
    fn take(&mut self, d: Delivery) {
        if let Err(e) = self.formatter.write_batch(d.batch(), &mut self.out) {
            self.metrics.errors.inc();
            tracing::error!(error = %e, "stdout sink: cannot format batch");
        }
        self.held.push(d);
    }

    fn flush(&mut self) {
        let mut stdout = std::io::stdout().lock();
        let ok = stdout.write_all(&self.out).and_then(|_| stdout.flush());
        self.metrics.bytes.add(self.out.len() as u64);
        self.out.clear();
        for d in self.held.drain(..) {
            match &ok {
                Ok(()) => {
                    self.metrics.records.add(d.batch().count as u64);
                    d.accept()
                }
                Err(_) => {
                    self.metrics.rejected_records.add(d.batch().count as u64);
                    d.reject()
                }
            }
        }
        if let Err(e) = ok {
            self.metrics.errors.inc();
            tracing::error!(error = %e, "stdout sink: write failed");
        }
    }
}
