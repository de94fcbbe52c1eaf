//! `type = "stdout"`: writes formatted records to standard output.
//!
//! A failed write ends in the verdict its error gives
//! ([`crate::sinks::verdict::io_verdict`]): a closed pipe rejects the
//! records; a shortage (stdout redirected to a full disk) retries them with
//! the sink's `retry` settings, holding everything behind them.

use std::io::Write;

use serde::Deserialize;

use super::settle::{Parked, Settler};
use super::verdict::{io_verdict, Rejection, Verdict};
use super::{Sink, SinkMetrics};
use crate::buffer::Delivery;
use crate::format::{FormatConfig, FormatKind, Formatter};

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StdoutSinkConfig {
    /// Output format; JSON by default, so records are readable with their tag and time.
    #[serde(default = "default_format")]
    pub format: FormatConfig,
    /// How long batches nobody waits for may wait for more before they are
    /// written. Unset: 0 on a memory queue, [`super::DISK_FLUSH_INTERVAL`]
    /// on a disk buffer.
    #[serde(
        default,
        rename = "flush_interval",
        deserialize_with = "crate::config::units::opt_duration"
    )]
    pub flush_interval_set: Option<std::time::Duration>,
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
    settler: Settler,
    /// Deliveries waiting for a retry, and everything behind them.
    parked: Parked,
    /// `flush_interval` as set.
    flush_interval: Option<std::time::Duration>,
}

impl StdoutSink {
    pub fn new(
        config: StdoutSinkConfig,
        settler: Settler,
        metrics: SinkMetrics,
    ) -> Result<Self, String> {
        Ok(StdoutSink {
            formatter: Formatter::new(&config.format)?,
            out: Vec::with_capacity(64 * 1024),
            held: Vec::new(),
            metrics,
            settler,
            parked: Parked::default(),
            flush_interval: config.flush_interval_set,
        })
    }

    fn format(&mut self, d: Delivery) {
        let before = self.out.len();
        if let Err(e) = self.formatter.write_batch(d.batch(), &mut self.out) {
            self.out.truncate(before);
            let reason = Rejection {
                kind: "bad_record",
                message: format!("cannot format batch: {e}"),
            };
            self.settler
                .settle(vec![d], 1, Verdict::Rejected { reason });
            return;
        }
        self.held.push(d);
    }

    fn write(&mut self, force: bool) {
        if let Some(due) = self.parked.take_due(force) {
            for d in due {
                self.format(d);
            }
        }
        if self.held.is_empty() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        let verdict = match stdout.write_all(&self.out).and_then(|_| stdout.flush()) {
            Ok(()) => {
                self.metrics.bytes.add(self.out.len() as u64);
                Verdict::Delivered
            }
            Err(e) => {
                let attempt = self.parked.attempt + 1;
                let v = io_verdict(&e, self.settler.retry().after(attempt));
                self.metrics.errors.inc();
                tracing::error!(error = %e, "stdout sink: write failed");
                v
            }
        };
        self.out.clear();
        let held = std::mem::take(&mut self.held);
        self.parked.settle_write(&self.settler, held, verdict);
    }
}

impl Sink for StdoutSink {
    fn take(&mut self, d: Delivery) {
        if !self.parked.is_empty() {
            return self.parked.push(d);
        }
        self.format(d);
    }

    fn flush(&mut self) {
        self.write(false);
    }

    fn retry_at(&self) -> Option<std::time::Instant> {
        self.parked.retry_at()
    }

    fn flush_interval(&self, disk: bool) -> std::time::Duration {
        super::flush_interval(self.flush_interval, disk)
    }

    fn flush_threshold(&self) -> (usize, usize) {
        (usize::MAX, super::GATHER_BYTES)
    }

    fn finish(&mut self) {
        self.write(false);
        if !self.parked.is_empty() {
            // one last try now, then give up on what still fails
            self.write(true);
        }
        let left = self.parked.take_all();
        self.settler.stopped(left);
    }
}
