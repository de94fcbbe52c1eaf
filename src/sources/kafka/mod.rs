//! `type = "kafka"`: consumes topics as a member of a consumer group
//! through librdkafka (the `rdkafka` crate).
//!
//! - `config.rs`: settings and the librdkafka properties they become;
//! - `decode.rs`: message → record;
//! - `pending.rs`: records read and not handed to the sinks yet;
//! - `offsets.rs`: which offsets the sinks have acknowledged;
//! - `commit.rs`: commits of those offsets, and their results.
//!
//! Delivery is at least once: librdkafka's auto commit is off, and an
//! offset is committed only once every sink has acknowledged every message
//! before it. At a rebalance, the revoked partitions' records not handed to
//! the sinks yet are dropped, then their acknowledged offsets are committed
//! before they go; what is not acknowledged yet is delivered again to their
//! next owner. A restart resumes from the last commit.

mod commit;
mod config;
pub mod decode;
mod offsets;
mod pending;

pub use config::{KafkaSourceConfig, ValueFormat};

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, StreamConsumer,
};
use rdkafka::error::KafkaResult;
use rdkafka::message::{Message as _, Timestamp};
use rdkafka::{ClientContext, TopicPartitionList};

use crate::ack::{AckHandle, AckOutcome};
use crate::component::SourceContext;
use crate::event::{Batch, Records};
use crate::kafka_client::{BrokerConnections, ClientErrors};
use crate::metrics::{Counter, Registry};
use crate::telemetry::RateLimitedLog;
use crate::warn_limited;
use commit::commit;
use decode::{encode_entry, Message};
use offsets::{Offsets, PartitionId};
use pending::PendingRecords;

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

/// librdkafka callbacks: drop the revoked partitions' records not handed
/// over yet and commit their acknowledged offsets before they go to
/// another member; count the results of commits.
struct GroupContext {
    offsets: Arc<Offsets>,
    /// Records read and not handed to the sinks yet (the read loop's).
    pending: Arc<Mutex<PendingRecords>>,
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
        match rebalance {
            Rebalance::Assign(list) => self.offsets.assign(&partitions(list)),
            Rebalance::Revoke(list) => {
                let acked = revoke(
                    &self.pending,
                    &self.offsets,
                    &partitions(list),
                    &self.telemetry,
                );
                commit(consumer, &acked, CommitMode::Sync, &self.telemetry);
            }
            Rebalance::Error(e) => {
                // the `rdkafka` crate unassigns everything after this: what
                // was read is another member's to deliver now
                let dropped = lock(&self.pending).clear();
                self.offsets.lose_all();
                self.telemetry.error(
                    "consume",
                    &format!("{e}: the assignment is lost; {dropped} records read and not handed over yet are dropped (their next owner reads them again)"),
                );
            }
        }
    }

    /// The result of an asynchronous commit (see [`commit`]).
    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        commit::settled(&self.telemetry, &self.offsets, result, offsets);
    }
}

/// The partitions of `list`.
fn partitions(list: &TopicPartitionList) -> Vec<PartitionId> {
    list.elements()
        .iter()
        .map(|e| (e.topic().to_string(), e.partition()))
        .collect()
}

fn lock(pending: &Mutex<PendingRecords>) -> MutexGuard<'_, PendingRecords> {
    pending.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a revoke does before the partitions go: their records not handed
/// to the sinks yet are dropped (the next owner reads them again), their
/// tracking is forgotten, and their offsets acknowledged in order since
/// the last commit are returned, to commit now.
fn revoke(
    pending: &Mutex<PendingRecords>,
    offsets: &Offsets,
    revoked: &[PartitionId],
    t: &Telemetry,
) -> Vec<(PartitionId, i64)> {
    let dropped = lock(pending).drop_partitions(revoked);
    tracing::info!(source = %t.name, partitions = revoked.len(), dropped_records = dropped,
        "kafka partitions revoked; records read from them and not handed over yet are left to their next owner");
    offsets.revoke(revoked)
}

pub struct KafkaSource {
    config: KafkaSourceConfig,
    cx: SourceContext,
    consumer: StreamConsumer<GroupContext>,
    offsets: Arc<Offsets>,
    /// Shared with the rebalance callback, which empties revoked
    /// partitions' records.
    pending: Arc<Mutex<PendingRecords>>,
    telemetry: Arc<Telemetry>,
}

impl KafkaSource {
    /// Creates the consumer and subscribes (a bad property fails start-up).
    pub fn new(config: KafkaSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let offsets = Arc::new(Offsets::default());
        let pending = Arc::new(Mutex::new(PendingRecords::default()));
        let telemetry = Arc::new(Telemetry::new(&cx.metrics, &cx.name));
        let context = GroupContext {
            offsets: offsets.clone(),
            pending: pending.clone(),
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
            pending,
            telemetry,
        })
    }

    pub async fn run(self) {
        let KafkaSource {
            config,
            cx,
            consumer,
            offsets,
            pending,
            telemetry,
        } = self;
        let SourceContext {
            mut router,
            mut shutdown,
            ..
        } = cx;
        let mut commit_tick = tokio::time::interval(config.commit_interval);
        commit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
                        let mut pending = lock(&pending);
                        let p = pending.at(&id, m.offset());
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
                        } else if config.linger.is_zero() {
                            flush_all = true;
                        } else if flush_at.is_none() {
                            flush_at = Some(tokio::time::Instant::now() + config.linger);
                        }
                    }
                },
            }
            let ready = if flush_all {
                flush_at = None;
                lock(&pending).take_all()
            } else {
                full.and_then(|id| lock(&pending).take(&id))
                    .into_iter()
                    .collect()
            };
            for (id, p) in ready {
                // the rebalance callback runs inside `consumer.recv()`, so
                // a partition revoked since has had its records dropped
                // already; this is the check that none is handed over
                let Some(ticket) = offsets.track(id.clone(), p.first, p.next) else {
                    tracing::debug!(source = %telemetry.name, topic = %id.0, partition = id.1,
                        records = p.count, "records of a partition not assigned to this member dropped");
                    continue;
                };
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
        lock(&pending).clear();
        drop(router);
        let deadline = tokio::time::Instant::now() + SHUTDOWN_WAIT;
        while offsets.unsettled() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        commit(
            &consumer,
            &offsets.take_all_committable(),
            CommitMode::Sync,
            &telemetry,
        );
        tracing::info!(source = %telemetry.name, "kafka source stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::AckOutcome::{Accepted, Rejected};

    fn telemetry(r: &Registry) -> Arc<Telemetry> {
        Arc::new(Telemetry::new(r, &"k".into()))
    }

    /// Reads messages `offsets` of `id` into `pending`, as the read loop does.
    fn read(pending: &Mutex<PendingRecords>, id: &PartitionId, offsets: std::ops::Range<i64>) {
        let mut pending = lock(pending);
        for o in offsets {
            let p = pending.at(id, o);
            p.entries
                .extend_from_slice(format!("record {o}").as_bytes());
            p.count += 1;
            p.next = o + 1;
        }
    }

    #[test]
    fn a_revoke_drops_the_partitions_pending_records_before_its_commit() {
        let (p0, p1): (PartitionId, PartitionId) = (("t".into(), 0), ("t".into(), 1));
        // 0..10 of p0 went to the sinks: no verdict yet, or rejected
        for verdict in [None, Some(Rejected)] {
            let r = Registry::new();
            let t = telemetry(&r);
            let offsets = Offsets::default();
            let pending = Mutex::new(PendingRecords::default());
            offsets.assign(&[p0.clone(), p1.clone()]);
            let a = offsets.track(p0.clone(), 0, 10).unwrap();
            if let Some(v) = verdict.clone() {
                offsets.settle(&a, v);
            }
            // 10..15 of p0 and 0..5 of p1 wait for their batch
            read(&pending, &p0, 10..15);
            read(&pending, &p1, 0..5);
            let commits = revoke(&pending, &offsets, std::slice::from_ref(&p0), &t);
            assert!(
                commits.is_empty(),
                "{verdict:?}: nothing of p0 is acknowledged in order"
            );
            // the next flush hands over p1's records only
            let ready: Vec<PartitionId> = lock(&pending)
                .take_all()
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            assert_eq!(ready, vec![p1.clone()], "{verdict:?}");
            // p0's records are not tracked (so never committed) however
            // they come back to the loop, nor does a late verdict count
            assert!(offsets.track(p0.clone(), 10, 15).is_none());
            offsets.settle(&a, Accepted);
            let b = offsets.track(p1.clone(), 0, 5).unwrap();
            offsets.settle(&b, Accepted);
            assert_eq!(
                offsets.take_committable(),
                vec![(p1.clone(), 5)],
                "{verdict:?}"
            );
        }
    }
}
