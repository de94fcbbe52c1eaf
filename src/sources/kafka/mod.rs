//! `type = "kafka"`: consumes topics as a member of a consumer group
//! through librdkafka (the `rdkafka` crate).
//!
//! - `config.rs`: settings and the librdkafka properties they become;
//! - `decode.rs`: message → record;
//! - `offsets.rs`: which offsets the sinks have acknowledged.
//!
//! Delivery is at least once: librdkafka's auto commit is off, and an
//! offset is committed only once every sink has acknowledged every message
//! before it. At a rebalance, the revoked partitions' acknowledged offsets
//! are committed before they go; what is not acknowledged yet is delivered
//! again to their next owner. A restart resumes from the last commit.

mod config;
pub mod decode;
mod offsets;

pub use config::{KafkaSourceConfig, ValueFormat};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer,
};
use rdkafka::message::{Message as _, Timestamp};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use super::SourceContext;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, Records};
use crate::kafka_client::{BrokerConnections, ClientErrors};
use crate::metrics::{Counter, Registry};
use crate::telemetry::RateLimitedLog;
use crate::warn_limited;
use decode::{encode_entry, Message};
use offsets::{Offsets, PartitionId};

/// How long records wait in a partly filled batch.
const BATCH_WAIT: Duration = Duration::from_millis(50);

/// At shutdown, how long to wait for the sinks' verdicts on what is in
/// flight before the last commit (what is left is delivered again).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

/// The kinds of error, each a `kind` label of
/// `logferry_kafka_source_errors_total`.
const ERROR_KINDS: [&str; 5] = [
    "invalid_json",
    "invalid_msgpack",
    "consume",
    "commit",
    "rejected_batch",
];

/// Counters of the Kafka source; also the one place that logs its errors.
struct Telemetry {
    name: Arc<str>,
    records: Counter,
    commits: Counter,
    errors: Vec<Counter>,
    log: RateLimitedLog,
}

impl Telemetry {
    fn new(r: &Registry, name: &Arc<str>) -> Self {
        let l = &[("component", &**name)];
        Telemetry {
            name: name.clone(),
            records: r.counter(
                "logferry_source_records_total",
                "Records received by a source.",
                l,
            ),
            commits: r.counter(
                "logferry_kafka_source_commits_total",
                "Offset commits of acknowledged messages (one per partition).",
                l,
            ),
            errors: ERROR_KINDS
                .iter()
                .map(|kind| {
                    r.counter(
                        "logferry_kafka_source_errors_total",
                        "Errors of the Kafka source, by kind.",
                        &[("component", &**name), ("kind", kind)],
                    )
                })
                .collect(),
            log: RateLimitedLog::default(),
        }
    }

    /// Counts an error of `kind` (one of `ERROR_KINDS`) and logs it,
    /// rate-limited per kind.
    fn error(&self, kind: &'static str, error: &dyn std::fmt::Display) {
        if let Some(i) = ERROR_KINDS.iter().position(|k| *k == kind) {
            self.errors[i].inc();
        }
        warn_limited!(self.log, kind, source = %self.name, kind, error = %error, "kafka source");
    }
}

/// librdkafka callbacks: commit the revoked partitions' acknowledged
/// offsets before they go to another member.
struct GroupContext {
    offsets: Arc<Offsets>,
    telemetry: Arc<Telemetry>,
    /// Where librdkafka's errors outside any one message are counted.
    client: ClientErrors,
    /// Brokers the consumer is connected to now (from its statistics).
    connected: Option<BrokerConnections>,
}

impl ClientContext for GroupContext {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, facility: &str, message: &str) {
        self.client.log(level, facility, message);
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        if let Some(c) = &self.connected {
            c.on_error(&error);
        }
        self.client.report(&error, reason);
    }

    fn stats_raw(&self, statistics: &[u8]) {
        if let Some(c) = &self.connected {
            c.update(statistics);
        }
    }
}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            let revoked: Vec<PartitionId> = list
                .elements()
                .iter()
                .map(|e| (e.topic().to_string(), e.partition()))
                .collect();
            let acked = self.offsets.revoke(&revoked);
            commit(consumer, &acked, CommitMode::Sync, &self.telemetry);
        }
    }
}

/// Commits `offsets`, counting commits and errors.
fn commit<C: Consumer<GroupContext>>(
    consumer: &C,
    offsets: &[(PartitionId, i64)],
    mode: CommitMode,
    t: &Telemetry,
) {
    if offsets.is_empty() {
        return;
    }
    let mut list = TopicPartitionList::new();
    for ((topic, partition), offset) in offsets {
        if let Err(e) = list.add_partition_offset(topic, *partition, Offset::Offset(*offset)) {
            t.error("commit", &e);
            return;
        }
    }
    match consumer.commit(&list, mode) {
        Ok(()) => t.commits.add(offsets.len() as u64),
        Err(e) => t.error("commit", &e),
    }
}

/// Records of one partition waiting to be handed to the sinks.
struct Pending {
    entries: Vec<u8>,
    count: usize,
    first: i64,
    next: i64,
}

pub struct KafkaSource {
    config: KafkaSourceConfig,
    cx: SourceContext,
    consumer: StreamConsumer<GroupContext>,
    offsets: Arc<Offsets>,
    telemetry: Arc<Telemetry>,
}

impl KafkaSource {
    /// Creates the consumer and subscribes (a bad property fails start-up).
    pub fn new(config: KafkaSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let offsets = Arc::new(Offsets::default());
        let telemetry = Arc::new(Telemetry::new(&cx.metrics, &cx.name));
        let context = GroupContext {
            offsets: offsets.clone(),
            telemetry: telemetry.clone(),
            client: ClientErrors::new(&cx.metrics, &cx.name),
            connected: BrokerConnections::new(
                &cx.metrics,
                "logferry_kafka_source_connected_brokers",
                "Brokers a Kafka source's consumer is connected to now.",
                &cx.name,
                &config.client_properties(),
            ),
        };
        let consumer: StreamConsumer<GroupContext> = config
            .client_config()
            .create_with_context(context)
            .map_err(|e| format!("cannot create the Kafka consumer: {e}"))?;
        let topics: Vec<&str> = config.topics.iter().map(String::as_str).collect();
        consumer
            .subscribe(&topics)
            .map_err(|e| format!("cannot subscribe to {topics:?}: {e}"))?;
        Ok(KafkaSource {
            config,
            cx,
            consumer,
            offsets,
            telemetry,
        })
    }

    pub async fn run(self) {
        let KafkaSource {
            config,
            cx,
            consumer,
            offsets,
            telemetry,
        } = self;
        let SourceContext {
            mut router,
            mut shutdown,
            ..
        } = cx;
        let mut commit_tick = tokio::time::interval(config.commit_interval);
        commit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut pending: HashMap<PartitionId, Pending> = HashMap::new();
        let mut flush_at: Option<tokio::time::Instant> = None;
        'run: loop {
            let mut full: Option<PartitionId> = None;
            let mut flush_all = false;
            tokio::select! {
                biased;
                _ = shutdown.wait() => break,
                _ = commit_tick.tick() => {
                    commit(&consumer, &offsets.take_committable(), CommitMode::Async, &telemetry);
                }
                _ = tokio::time::sleep_until(flush_at.unwrap_or_else(tokio::time::Instant::now)),
                    if flush_at.is_some() => flush_all = true,
                m = consumer.recv() => match m {
                    Err(e) => telemetry.error("consume", &e),
                    Ok(m) => {
                        let id = (m.topic().to_string(), m.partition());
                        let p = pending.entry(id.clone()).or_insert_with(|| Pending {
                            entries: Vec::new(),
                            count: 0,
                            first: m.offset(),
                            next: m.offset(),
                        });
                        let timestamp_ms = match m.timestamp() {
                            Timestamp::NotAvailable => None,
                            Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) => Some(t),
                        };
                        let msg = Message {
                            value: m.payload(),
                            key: m.key(),
                            partition: m.partition(),
                            offset: m.offset(),
                            timestamp_ms,
                        };
                        match encode_entry(&config, &msg, &mut p.entries) {
                            Ok(()) => p.count += 1,
                            Err(e) => telemetry.error(
                                e.kind(),
                                &format!("{}: topic {} partition {} offset {}", e, id.0, id.1, m.offset()),
                            ),
                        }
                        p.next = m.offset() + 1;
                        if p.count >= config.batch_records {
                            full = Some(id);
                        } else if flush_at.is_none() {
                            flush_at = Some(tokio::time::Instant::now() + BATCH_WAIT);
                        }
                    }
                },
            }
            let ready: Vec<(PartitionId, Pending)> = if flush_all {
                flush_at = None;
                pending.drain().collect()
            } else {
                full.and_then(|id| pending.remove_entry(&id))
                    .into_iter()
                    .collect()
            };
            for (id, p) in ready {
                let ticket = offsets.track(id.clone(), p.first, p.next);
                if p.count == 0 {
                    // only undecodable messages: nothing to wait for
                    offsets.settle(&ticket, AckOutcome::Accepted);
                    continue;
                }
                let settle = {
                    let offsets = offsets.clone();
                    let telemetry = telemetry.clone();
                    let (first, next) = (p.first, p.next);
                    move |outcome| {
                        if offsets.settle(&ticket, outcome) {
                            telemetry.error(
                                "rejected_batch",
                                &format!(
                                    "a sink rejected offsets {first}..{next} of topic {} partition {}; \
                                     commits of that partition stop there, and a restart or a \
                                     rebalance delivers them again",
                                    ticket.partition.0, ticket.partition.1
                                ),
                            );
                        }
                    }
                };
                let tag: crate::event::Tag = config.tag_for(&id.0).into();
                let batch = Batch::new(tag, Records::Entries(p.entries.into()), p.count)
                    .with_ack(AckHandle::new(settle));
                telemetry.records.add(p.count as u64);
                let routed = tokio::select! {
                    biased;
                    routed = router.route(batch) => routed.is_ok(),
                    _ = shutdown.wait() => false,
                };
                if !routed {
                    break 'run;
                }
            }
        }
        // what was not handed over is not committed: delivered again later.
        // Dropping the router lets the sinks drain, which settles every batch.
        drop(pending);
        drop(router);
        let deadline = tokio::time::Instant::now() + SHUTDOWN_WAIT;
        while offsets.unsettled() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        commit(
            &consumer,
            &offsets.take_committable(),
            CommitMode::Sync,
            &telemetry,
        );
        tracing::info!(source = %telemetry.name, "kafka source stopped");
    }
}
