//! `type = "kafka"`: produces every record as one Kafka message through
//! librdkafka (the `rdkafka` crate, built from its bundled source).
//!
//! - `config.rs`: settings and the librdkafka properties they become;
//! - `encode.rs`: record → payload, key and timestamp;
//! - `sink.rs`: produce, delivery reports, retry and settlement;
//! - `produce.rs`: messages to librdkafka through topic handles;
//! - `producers.rs`: the producer, replaced after a fatal error.
//!
//! Delivery is at least once: a batch is acknowledged to its source only
//! when every one of its messages has a successful delivery report.

mod config;
pub use config::DEFAULT_LINGER_MS;
pub mod encode;
#[cfg(test)]
mod inflight_tests;
mod produce;
mod producers;
mod sink;

pub use config::{Compression, KafkaSinkConfig};
pub use sink::KafkaSink;

use crate::kafka_client::{BrokerConnections, ClientErrors};
use crate::metrics::{Counter, Histogram, Registry};

/// The kinds of rejection, each a `kind` label of
/// `logferry_kafka_sink_rejected_records_total`.
const REJECTION_KINDS: [&str; 5] = [
    crate::ack::TOO_LARGE,
    "unknown_topic",
    "not_authorized",
    "invalid_record",
    "bad_record",
];

/// Counters of the Kafka sink, on top of [`crate::sinks::SinkMetrics`].
#[derive(Clone)]
pub struct KafkaMetrics {
    /// Messages with a successful delivery report.
    pub delivered: Counter,
    /// Messages produced again after a failed attempt.
    pub retries: Counter,
    /// Times the sink waited because librdkafka's queue was full.
    pub queue_full_waits: Counter,
    /// librdkafka's fatal errors: each time, the producer was replaced.
    pub fatal_errors: Counter,
    /// Records whose topic names a field they lack (`_` stood in).
    pub topic_fields_missing: Counter,
    /// From a batch handed to librdkafka to its last delivery report.
    pub delivery_latency: Histogram,
    /// Records Kafka can never take, by kind (same order as `REJECTION_KINDS`).
    rejected: Vec<Counter>,
    /// librdkafka's errors outside any one message (TLS, authentication…).
    pub client: ClientErrors,
    /// Brokers connected now (`/ready` reads it); `None` with
    /// `statistics.interval.ms = 0`.
    pub connected: Option<BrokerConnections>,
}

impl KafkaMetrics {
    /// `properties`: the producer's librdkafka properties (whether
    /// statistics, and so the connected-brokers gauge, are on).
    pub fn new(
        r: &Registry,
        sink: &str,
        properties: &std::collections::BTreeMap<String, String>,
    ) -> Self {
        let l = &[("component", sink)];
        KafkaMetrics {
            delivered: r.counter(
                "logferry_kafka_sink_messages_delivered_total",
                "Messages Kafka confirmed (one per record).",
                l,
            ),
            retries: r.counter(
                "logferry_kafka_sink_retries_total",
                "Messages produced again after a failed attempt.",
                l,
            ),
            queue_full_waits: r.counter(
                "logferry_kafka_sink_queue_full_waits_total",
                "Waits because librdkafka's producer queue was full (backpressure).",
                l,
            ),
            fatal_errors: r.counter(
                "logferry_kafka_sink_fatal_errors_total",
                "Fatal errors of the Kafka producer (logged with librdkafka's reason); each time a new producer replaced it and produced again what was not reported delivered.",
                l,
            ),
            topic_fields_missing: r.counter(
                "logferry_kafka_sink_topic_fields_missing_total",
                "Records whose topic names a field they do not have, or hold as a map, an array or nil (`_` stands in for it).",
                l,
            ),
            delivery_latency: r.histogram(
                "logferry_kafka_sink_delivery_latency_seconds",
                "Time from a batch handed to librdkafka to the delivery report of its last message (first attempt).",
                l,
            ),
            rejected: REJECTION_KINDS
                .iter()
                .map(|kind| {
                    r.counter(
                        "logferry_kafka_sink_rejected_records_total",
                        "Records Kafka can never take (not acknowledged to their source), by kind.",
                        &[("component", sink), ("kind", kind)],
                    )
                })
                .collect(),
            client: ClientErrors::new(r, sink),
            connected: BrokerConnections::new(
                r,
                crate::metrics::CONNECTED_METRIC,
                "Servers (forward) or brokers (Kafka) a sink is connected to now.",
                sink,
                properties,
            ),
        }
    }

    /// The counter of rejections of `kind` (one of `REJECTION_KINDS`).
    pub fn rejected(&self, kind: &str) -> &Counter {
        let i = REJECTION_KINDS
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(REJECTION_KINDS.len() - 1);
        &self.rejected[i]
    }
}
