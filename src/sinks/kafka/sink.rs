//! The produce loop: batches in, one Kafka message per record, each batch
//! settled once every message of it has a delivery report.
//!
//! The sink's thread reads its queue and produces each batch's messages;
//! a full librdkafka queue (`QueueFull`) makes it wait and try again, so
//! backpressure reaches the sources and nothing is dropped. Each produced
//! batch is then watched by a task of its own, which waits for every
//! delivery report, produces failed messages again after a backoff, and
//! settles the batch through the shared [`Settler`]: accepted when all are
//! delivered; a message Kafka can never take (over `message.max.bytes`,
//! say) is set aside alone ([`Settler::settle_partly`]): dead-lettered if
//! `dead_letter` is set, else dropped, logged with its first bytes and
//! counted, while the batch's other records count as delivered once and
//! the source moves on.
//!
//! librdkafka holds messages for up to `linger_ms` to fill its requests,
//! which is right where nobody waits (tail, TCP, a forward chunk without
//! ack). The messages of a batch whose client waits for its
//! acknowledgement (`Batch::is_waited_on`: an HTTP request, a forward chunk
//! with ack) are marked as such ([`Outgoing::expedite`]), and once all are
//! handed over the sink tells librdkafka to send them now
//! ([`Producer::expedite`]): only their partitions skip the linger, so
//! that client's answer does not wait for it while other batches still
//! fill their requests.
//!
//! Delivery reports are served on the sink's own thread, when librdkafka's
//! queue signals its eventfd ([`serve_reports`]). Every message of a batch
//! points at the batch's [`Pending`] (a count, not an allocation or a
//! reference count per message), which a run of the batch's reports takes
//! down at once; only a failed message is copied out, to be produced
//! again. Messages are handed over through topic handles (`produce.rs`);
//! a raw payload borrowed from its batch is not copied (the batch is held
//! until its last report, and its bytes are retained past a stop that
//! gives it up earlier).
//!
//! After librdkafka's fatal error (the idempotent producer cannot go on,
//! and every produce call fails from then on) the sink logs and counts it,
//! builds a new producer ([`recover`]), and the watchers produce again,
//! through it, every message the old one did not report delivered: at
//! least once, as a message the broker stored just before the error may
//! be stored twice. If the new producer fails the same way soon after,
//! the next one waits `retry_backoff`…`retry_backoff_max` first.
//!
//! A stop that cuts a batch short (`drain_timeout`) settles the count of
//! its messages never handed over, so its [`Pending`] is freed with its
//! last report.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Headers as _;
use rdkafka::producer::{BaseProducer, DeliveryResult, Producer as _, ProducerContext};
use rdkafka::{ClientContext, Message as _};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::config::KafkaSinkConfig;
use super::encode::Encoder;
use super::produce::{Outgoing, Pending, Producer, Reported, Topic};
use super::producers::Producers;
use super::KafkaMetrics;
use crate::backoff::backoff_with_jitter;
use crate::buffer::{Delivery, Gathered, QueueReceiver};
use crate::event::EventTime;
use crate::format::Formatter;
use crate::kafka_client::{BrokerConnections, ClientErrors};
use crate::sinks::name::NameTemplate;
use crate::sinks::settle::{SetAside, Settler};
use crate::sinks::verdict::{Rejection, Verdict};
use crate::sinks::{Gather, SinkMetrics};
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

/// The longest wait before asking librdkafka again after `QueueFull` (it
/// usually has room sooner: after the next delivery reports are served).
const QUEUE_FULL_WAIT: Duration = Duration::from_millis(5);

/// How long a producer replaced after a fatal error has for the responses
/// to its requests in flight (a message the broker confirms is not
/// produced again) before what it still holds is purged and produced again.
const RETIRE_PATIENCE: Duration = Duration::from_secs(5);

pub struct KafkaSink {
    shared: Arc<Shared>,
    encoder: Encoder,
    topic: NameTemplate,
    /// The topic when it names no tag, time or field: not rendered per
    /// batch.
    static_topic: Option<String>,
}

/// What the produce loop and the batch tasks share (one thread).
struct Shared {
    name: String,
    config: KafkaSinkConfig,
    /// The producer, replaced after a fatal error.
    producers: Producers<Reports>,
    /// `tag_header` as librdkafka takes a header name.
    tag_header: Option<CString>,
    /// `time_header` as librdkafka takes a header name.
    time_header: Option<CString>,
    sink: SinkMetrics,
    kafka: KafkaMetrics,
    /// Accepts, dead-letters or rejects each batch.
    settler: Settler,
    log: RateLimitedLog,
    /// When the stop's `drain_timeout` ends; set once the queue is closed.
    stop_at: OnceLock<Instant>,
    /// Records of batches produced and not yet settled.
    in_flight: AtomicUsize,
    /// Told after each pass over librdkafka's delivery reports: the moment
    /// a full producer queue has room again.
    reported: Notify,
    /// Records of deliveries a stop cut short that went to the sink
    /// replacing this one (a reload), not rejected.
    handed_over: AtomicUsize,
}

/// Why a message was not handed to librdkafka.
enum Unproduced {
    /// Kafka can never take it.
    Rejected(Rejection),
    /// The stop's `drain_timeout` has passed.
    Stopped,
    /// The producer has a fatal error: the message waits, as a failed one,
    /// for the producer that replaces it.
    Fatal(KafkaError),
}

/// A batch being watched, until its delivery is settled: if it ends
/// before (the stop cut it short), the delivery is abandoned.
struct Watched {
    shared: Arc<Shared>,
    records: usize,
    delivery: Option<Delivery>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.shared
            .in_flight
            .fetch_sub(self.records, Ordering::AcqRel);
        if let Some(d) = self.delivery.take() {
            self.shared.abandon(d);
        }
    }
}

/// librdkafka's errors outside any one message and its statistics (the
/// connected brokers); the delivery reports the `rdkafka` crate serves
/// itself (`flush`, the purge on drop) also come here.
struct Reports {
    errors: ClientErrors,
    connected: Option<BrokerConnections>,
}

impl ClientContext for Reports {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        self.errors.log(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if let Some(c) = &self.connected {
            c.on_error(&error);
        }
        self.errors.error(error, reason);
    }

    fn stats_raw(&self, statistics: &[u8]) {
        if let Some(c) = &self.connected {
            c.update(statistics);
        }
    }
}

impl ProducerContext for Reports {
    type DeliveryOpaque = Reported;

    fn delivery(&self, result: &DeliveryResult<'_>, pending: Reported) {
        pending.settle(result);
    }
}

impl KafkaSink {
    pub fn new(
        name: &str,
        config: KafkaSinkConfig,
        settler: Settler,
        sink: SinkMetrics,
        kafka: KafkaMetrics,
    ) -> Result<Self, String> {
        config.validate()?;
        let producer = build_producer(&config, &kafka)?;
        let header = |field: &str, name: &Option<String>| {
            name.as_deref()
                .map(|n| {
                    CString::new(n).map_err(|_| format!("{field} must not contain a NUL byte"))
                })
                .transpose()
        };
        let tag_header = header("tag_header", &config.tag_header)?;
        let time_header = header("time_header", &config.time_header)?;
        let encoder = Encoder::new(Formatter::new(&config.format)?, config.key_field.as_deref());
        let topic = NameTemplate::parse("topic", &config.topic)?;
        let static_topic = topic.fixed();
        Ok(KafkaSink {
            shared: Arc::new(Shared {
                name: name.to_string(),
                config,
                producers: Producers::new(producer),
                tag_header,
                time_header,
                sink,
                kafka,
                settler,
                log: RateLimitedLog::new(WARN_INTERVAL),
                stop_at: OnceLock::new(),
                in_flight: AtomicUsize::new(0),
                reported: Notify::new(),
                handed_over: AtomicUsize::new(0),
            }),
            encoder,
            topic,
            static_topic,
        })
    }

    /// Runs until the queue is closed, then drains what is in flight for at
    /// most `drain_timeout`.
    pub async fn run(mut self, mut rx: QueueReceiver) {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async move {
                let reports = tokio::task::spawn_local(serve_reports(Arc::clone(&self.shared)));
                let mut watching = JoinSet::new();
                // with a flush interval (a disk buffer's default), batches
                // written meanwhile wait in the queue, and all are handed
                // over together at its end: one wake-up and a request or
                // two where each batch took its own (at once for a batch a
                // client waits for, batch_bytes of them, or the end)
                let mut gather = Gather::new(
                    self.shared.config.flush_interval(rx.is_disk()),
                    (usize::MAX, self.shared.config.batch_bytes),
                );
                let mut held = Vec::new();
                loop {
                    let next = gather.next(&mut rx).await;
                    let closed = matches!(next, Gathered::Closed);
                    if let Gathered::Batch(d) = next {
                        gather.count(&d);
                        held.push(d);
                        if !gather.is_due() {
                            continue;
                        }
                    }
                    gather.reset();
                    for d in held.drain(..) {
                        while watching.try_join_next().is_some() {}
                        if let Some(watch) = self.produce_batch(d, &rx).await {
                            watching.spawn_local(watch);
                        }
                    }
                    if closed {
                        break;
                    }
                }
                self.drain(watching).await;
                reports.abort();
            })
            .await;
    }

    async fn drain(&self, mut watching: JoinSet<()>) {
        let s = &self.shared;
        let deadline = s.stop_deadline();
        while !watching.is_empty() {
            match tokio::time::timeout_at(deadline, watching.join_next()).await {
                Ok(_) => {}
                Err(_) => {
                    // dropping the tasks drops their deliveries unsettled:
                    // rejected, so their sources do not see an ack
                    let records = s.in_flight.load(Ordering::Acquire);
                    let handed_before = s.handed_over.load(Ordering::Acquire);
                    watching.abort_all();
                    while watching.join_next().await.is_some() {}
                    let handed = s.handed_over.load(Ordering::Acquire) - handed_before;
                    let lost = records.saturating_sub(handed);
                    if lost > 0 {
                        s.sink.errors.inc();
                        tracing::error!(sink = %s.name, records = lost, drain_timeout = ?s.config.drain_timeout,
                            "drain_timeout passed with undelivered messages; their records are not acknowledged");
                    }
                    if handed > 0 {
                        tracing::warn!(sink = %s.name, records = handed, drain_timeout = ?s.config.drain_timeout,
                            "drain_timeout passed with undelivered messages; the sink replacing this one delivers them");
                    }
                    break;
                }
            }
        }
        let _ = s.producers.current().client().flush(Duration::from_secs(1));
    }

    /// Produces every record of `d` and returns the task that settles it.
    async fn produce_batch(
        &mut self,
        d: Delivery,
        rx: &QueueReceiver,
    ) -> Option<impl std::future::Future<Output = ()>> {
        let s = Arc::clone(&self.shared);
        let batch = d.batch();
        // one topic for the batch, or one per record (named by its fields)
        let rendered;
        let (whole, per_record) = match &self.static_topic {
            Some(t) => (Some(t.as_str()), None),
            None => {
                rendered = self.topic.for_batch(&batch.tag, &chrono::Local::now());
                match rendered.whole() {
                    Some(t) => (Some(t), None),
                    None => (None, Some(&rendered)),
                }
            }
        };
        let messages = match self.encoder.encode(batch, per_record) {
            Ok(m) => m,
            Err(e) => {
                // cannot happen for frames the decoder accepted; never silent
                s.reject(
                    d,
                    &Rejection {
                        kind: "bad_record",
                        message: format!("cannot read the batch's records: {e}"),
                    },
                );
                return None;
            }
        };
        // declared before the batch's topic handles, which are its own
        let Some(producer) = s.producers.healthy(|| s.stopping(Some(rx))).await else {
            s.give_up(d);
            return None;
        };
        let mut topics = match whole.map(|name| producer.topic(name).map_err(|e| (name, e))) {
            None => Topics::PerRecord(None),
            Some(Ok(t)) => Topics::Whole(t),
            Some(Err((name, e))) => {
                s.reject(d, &topic_rejection(name, &e));
                return None;
            }
        };
        let pending = Arc::new(Pending::default());
        // every message, plus one while producing; what is not handed over
        // is settled as it happens
        pending.add(messages.len() + 1);
        let mut aside: Vec<SetAside> = Vec::new();
        let mut time = String::new();
        let waited_on = batch.is_waited_on();
        for (i, m) in messages.iter().enumerate() {
            let topic = match topics.of(&s, &producer, m) {
                Ok(t) => t,
                Err(r) => {
                    pending.report(1);
                    s.count_rejected(&r, 1, m.payload.len());
                    aside.push(set_aside(
                        r,
                        m.time,
                        &m.payload,
                        crate::sinks::settle::entry_at(batch, i),
                    ));
                    continue;
                }
            };
            let mut headers = [<(&CStr, &[u8])>::default(); 2];
            let mut n = 0;
            if let Some(name) = &s.tag_header {
                headers[n] = (name, batch.tag.as_bytes());
                n += 1;
            }
            if let Some(name) = &s.time_header {
                time.clear();
                let _ = write!(time, "{}.{:09}", m.time.secs, m.time.nanos);
                headers[n] = (name, time.as_bytes());
                n += 1;
            }
            let out = Outgoing {
                payload: &m.payload,
                // borrowed from the batch, which is held until every
                // report of it is served (or retained if given up)
                kept: matches!(m.payload, Cow::Borrowed(_)),
                expedite: waited_on,
                key: m.key.as_deref(),
                timestamp: m.time.secs as i64 * 1000 + (m.time.nanos / 1_000_000) as i64,
                headers: &headers[..n],
            };
            match s.produce(&producer, topic, &out, &pending, Some(rx)).await {
                Ok(()) => {}
                Err(Unproduced::Rejected(r)) => {
                    pending.report(1);
                    s.count_rejected(&r, 1, m.payload.len());
                    aside.push(set_aside(
                        r,
                        m.time,
                        &m.payload,
                        crate::sinks::settle::entry_at(batch, i),
                    ));
                }
                Err(Unproduced::Fatal(e)) => {
                    pending.fail_unsent(e, unsent(topic, &out));
                    pending.report(1);
                }
                Err(Unproduced::Stopped) => {
                    // this message and the rest were never handed over,
                    // and producing is over: what is outstanding now is
                    // what librdkafka holds, whose reports free `pending`
                    pending.report(messages.len() - i + 1);
                    drop(messages);
                    s.give_up(d);
                    return None;
                }
            }
        }
        let produced = messages.len();
        if waited_on {
            // its client waits for the acknowledgement: its messages, and
            // what their partitions queued before them, go now, whatever
            // linger_ms says
            producer.expedite();
        }
        // the topic handles go before their producer, which goes before
        // the watch (a producer replaced meanwhile is retired once free)
        drop(topics);
        drop(producer);
        drop(messages);
        pending.report(1); // producing is over
        s.in_flight.fetch_add(batch.count, Ordering::AcqRel);
        let watched = Watched {
            shared: Arc::clone(&s),
            records: batch.count,
            delivery: Some(d),
        };
        Some(watch(s, pending, produced, aside, watched))
    }
}

/// A producer with the sink's settings, its reports and errors counted in
/// `kafka`.
fn build_producer(
    config: &KafkaSinkConfig,
    kafka: &KafkaMetrics,
) -> Result<Producer<Reports>, String> {
    let producer: BaseProducer<Reports> = config
        .client_config()
        .create_with_context(Reports {
            errors: kafka.client.clone(),
            connected: kafka.connected.clone(),
        })
        .map_err(|e| format!("cannot create the Kafka producer: {e}"))?;
    Producer::new(producer)
}

/// A copy of a message librdkafka did not take, to be produced again.
fn unsent(topic: &Topic, m: &Outgoing<'_>) -> rdkafka::message::OwnedMessage {
    let mut headers = rdkafka::message::OwnedHeaders::new_with_capacity(m.headers.len());
    for (name, value) in m.headers {
        headers = headers.insert(rdkafka::message::Header {
            key: &name.to_string_lossy(),
            value: Some(*value),
        });
    }
    rdkafka::message::OwnedMessage::new(
        Some(m.payload.to_vec()),
        m.key.map(<[u8]>::to_vec),
        topic.name(),
        rdkafka::Timestamp::CreateTime(m.timestamp),
        -1,
        -1,
        Some(headers),
    )
}

impl Shared {
    /// Hands one message to librdkafka, waiting while its queue is full and
    /// retrying other local errors with backoff; `Err` if Kafka can never
    /// take it.
    async fn produce(
        &self,
        producer: &Producer<Reports>,
        topic: &Topic,
        message: &Outgoing<'_>,
        pending: &Arc<Pending>,
        queue: Option<&QueueReceiver>,
    ) -> Result<(), Unproduced> {
        let mut attempt = 0;
        loop {
            // SAFETY: a kept payload is borrowed from a batch whose watch
            // holds it until every report of it is served; a batch given up
            // before that has its bytes retained (`Shared::abandon`)
            match unsafe { producer.send(topic, message, pending) } {
                Ok(()) => return Ok(()),
                Err(e @ KafkaError::MessageProduction(RDKafkaErrorCode::Fatal)) => {
                    self.producers.report_fatal();
                    return Err(Unproduced::Fatal(e));
                }
                Err(KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) => {
                    if queue.is_some_and(QueueReceiver::is_closed) {
                        self.stop_deadline();
                    }
                    if self.stop_at.get().is_some_and(|t| Instant::now() >= *t) {
                        return Err(Unproduced::Stopped);
                    }
                    self.kafka.queue_full_waits.inc();
                    // librdkafka makes room as its delivery reports are
                    // served (on this thread): try again after the next
                    // pass, or after QUEUE_FULL_WAIT if none comes
                    let reported = self.reported.notified();
                    let _ = tokio::time::timeout(QUEUE_FULL_WAIT, reported).await;
                }
                Err(e) => {
                    attempt += 1;
                    match self.verdict(&e, attempt) {
                        Verdict::Rejected { reason } => return Err(Unproduced::Rejected(reason)),
                        Verdict::Retry { after } => {
                            self.count_retry(&e, after);
                            tokio::time::sleep(after).await;
                        }
                        Verdict::Delivered => unreachable!("an error is never a delivery"),
                    }
                }
            }
        }
    }

    /// Gives up on a delivery a stop cut short: a reload hands it, its
    /// acknowledgement pending, to the sink replacing this one; otherwise
    /// it is rejected (when dropped) and its records counted as not kept.
    /// Its bytes are retained, since messages of it may still be in
    /// librdkafka's queues with their payloads kept. True if it was handed
    /// over.
    fn abandon(&self, d: Delivery) -> bool {
        self.producers.retain(d.batch().records.bytes().clone());
        let records = d.batch().count;
        let replaced = d.goes_to_a_replacement();
        if replaced {
            self.handed_over.fetch_add(records, Ordering::AcqRel);
        } else {
            self.sink.rejected_records.add(records as u64);
        }
        drop(d);
        replaced
    }

    /// Finds the entries (as they arrived) of records refused in a
    /// delivery report, which names them only by their message: the batch
    /// is encoded again, once, and matched by payload. Rare (a refusal),
    /// so not worth a per-message index on the hot path.
    fn find_entries(&self, batch: &crate::event::Batch, aside: &mut [SetAside]) {
        if aside.iter().all(|a| a.entry.is_some()) {
            return;
        }
        let Ok(formatter) = crate::format::Formatter::new(&self.config.format) else {
            return;
        };
        let mut encoder = Encoder::new(formatter, self.config.key_field.as_deref());
        let Ok(messages) = encoder.encode(batch, None) else {
            return;
        };
        let mut taken = vec![false; messages.len()];
        for a in aside.iter_mut().filter(|a| a.entry.is_none()) {
            let found = messages
                .iter()
                .enumerate()
                .find(|(i, m)| !taken[*i] && *m.payload == *a.payload);
            if let Some((i, _)) = found {
                taken[i] = true;
                a.entry = crate::sinks::settle::entry_at(batch, i);
            }
        }
    }

    /// Gives up a batch the stop's `drain_timeout` cut short before all of
    /// it was handed to librdkafka.
    fn give_up(&self, d: Delivery) {
        let records = d.batch().count;
        if self.abandon(d) {
            warn_limited!(self.log, "drain_timeout", sink = %self.name, records,
                "drain_timeout passed while Kafka's queue was full (or its producer was being replaced); the sink replacing this one takes the records");
        } else {
            self.sink.errors.inc();
            warn_limited!(self.log, "drain_timeout", sink = %self.name, records,
                "drain_timeout passed while Kafka's queue was full (or its producer was being replaced); records not acknowledged");
        }
    }

    /// Whether the stop's `drain_timeout` has passed (starting it if
    /// `queue` is closed).
    fn stopping(&self, queue: Option<&QueueReceiver>) -> bool {
        if queue.is_some_and(QueueReceiver::is_closed) {
            self.stop_deadline();
        }
        self.stop_at.get().is_some_and(|t| Instant::now() >= *t)
    }

    /// When a stop must end; starts the `drain_timeout` on the first call.
    fn stop_deadline(&self) -> Instant {
        *self
            .stop_at
            .get_or_init(|| Instant::now() + self.config.drain_timeout)
    }

    /// What to do after `error` on the `attempt`th try of a message.
    fn verdict(&self, error: &KafkaError, attempt: u32) -> Verdict {
        match classify(error) {
            Some(reason) => Verdict::Rejected { reason },
            None => Verdict::Retry {
                after: backoff_with_jitter(
                    self.config.retry_backoff,
                    self.config.retry_backoff_max,
                    attempt,
                    self.settler.retry().jitter,
                ),
            },
        }
    }

    fn count_retry(&self, e: &KafkaError, after: Duration) {
        self.kafka.retries.inc();
        warn_limited!(self.log, "retry", sink = %self.name, error = %e, retry_in = ?after,
            "Kafka did not take a message; producing it again");
    }

    /// One message Kafka can never take: logged and counted by kind; its
    /// batch is settled as `Rejected` (and counted) by the settler.
    fn count_rejected(&self, r: &Rejection, records: u64, bytes: usize) {
        self.sink.errors.inc();
        self.kafka.rejected(r.kind).add(records);
        warn_limited!(self.log, r.kind, sink = %self.name, kind = r.kind, bytes,
            error = %r.message, "Kafka can never take this message; it is rejected");
    }

    fn reject(&self, d: Delivery, r: &Rejection) {
        let n = d.batch().count as u64;
        self.count_rejected(r, n, d.batch().byte_len());
        self.settler
            .settle(vec![d], 1, Verdict::Rejected { reason: r.clone() });
    }
}

/// Serves librdkafka's delivery reports (and its errors and statistics) on
/// the sink's thread whenever its queue signals; see `produce.rs` for why
/// not on a thread of their own. Replaces the producer after a fatal error.
async fn serve_reports(s: Arc<Shared>) {
    // fatal errors of producers that did not live long, in a row
    let mut failures = 0u32;
    loop {
        let producer = s.producers.current();
        let built = Instant::now();
        let (code, reason) = serve_until_fatal(&s, &producer).await;
        drop(producer);
        failures = if built.elapsed() >= s.config.retry_backoff_max {
            1
        } else {
            failures + 1
        };
        recover(&s, code, &reason, failures).await;
    }
}

/// Serves `p`'s reports until it has a fatal error; returns that error.
async fn serve_until_fatal(s: &Shared, p: &Producer<Reports>) -> (RDKafkaErrorCode, String) {
    // SAFETY: the fd is owned by the producer, which the caller keeps
    // alive (and open) for as long as this holds the registration.
    let mut fd = match unsafe { AsyncFd::register_with_interest(p.events(), Interest::READABLE) } {
        Ok(fd) => Some(fd),
        Err(e) => {
            // the reports are then served by polling
            s.sink.errors.inc();
            tracing::error!(sink = %s.name, error = %e,
                "cannot watch the Kafka sink's eventfd; serving delivery reports every 10 ms");
            None
        }
    };
    loop {
        p.serve_reports();
        s.reported.notify_waiters();
        if let Some(fatal) = p.fatal_error() {
            return fatal;
        }
        let ready = match &fd {
            Some(fd) => tokio::select! {
                ready = fd.readable() => Some(ready),
                () = s.producers.fatal_reported() => None,
            },
            None => tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(10)) => None,
                () = s.producers.fatal_reported() => None,
            },
        };
        match ready {
            Some(Ok(mut ready)) => {
                p.clear_events();
                ready.clear_ready();
            }
            Some(Err(_)) => fd = None,
            None => {}
        }
    }
}

/// After librdkafka's fatal error `code` (`reason`) on the current
/// producer, the `failures`th in a row: counts and logs it, waits
/// (backoff) if the producer it replaces was itself new, builds a new one
/// and makes it current; the old one is retired once it holds no message.
/// Watchers produce again, through the new one, every message the old one
/// reported failed or purged (at least once).
async fn recover(s: &Arc<Shared>, code: RDKafkaErrorCode, reason: &str, failures: u32) {
    s.kafka.fatal_errors.inc();
    s.sink.errors.inc();
    tracing::error!(sink = %s.name, error = %code, reason, failures,
        "the Kafka producer has a fatal error and can produce no more; building a new one, which produces again what was not reported delivered (at least once)");
    let mut attempt = failures;
    loop {
        if attempt > 1 {
            let wait = backoff_with_jitter(
                s.config.retry_backoff,
                s.config.retry_backoff_max,
                attempt - 1,
                s.settler.retry().jitter,
            );
            tokio::time::sleep(wait).await;
        }
        match build_producer(&s.config, &s.kafka) {
            Ok(p) => {
                let old = s.producers.replace(p);
                let shared = Arc::clone(s);
                tokio::task::spawn_local(async move {
                    shared.producers.retire(old, RETIRE_PATIENCE).await;
                });
                tracing::info!(sink = %s.name, "a new Kafka producer replaced the one with a fatal error");
                return;
            }
            Err(e) => {
                s.sink.errors.inc();
                tracing::error!(sink = %s.name, error = %e, "cannot build a new Kafka producer; trying again");
                attempt = attempt.max(1) + 1;
            }
        }
    }
}

/// Errors after which Kafka will never take the message as it is.
fn classify(e: &KafkaError) -> Option<Rejection> {
    use RDKafkaErrorCode as C;
    let (kind, hint) = match e.rdkafka_error_code()? {
        C::MessageSizeTooLarge | C::InvalidMessageSize | C::MessageBatchTooLarge => (
            crate::ack::TOO_LARGE,
            "raise message.max.bytes on the topic/broker and in librdkafka_options, or send smaller records",
        ),
        C::UnknownTopic | C::UnknownTopicOrPartition | C::InvalidTopic => (
            "unknown_topic",
            "create the topic, or enable auto-creation on the broker",
        ),
        C::TopicAuthorizationFailed => ("not_authorized", "grant this client write access to the topic"),
        C::InvalidRecord | C::InvalidMessage => ("invalid_record", "the broker refused the record"),
        _ => return None,
    };
    Some(Rejection {
        kind,
        message: format!("{e}: {hint}"),
    })
}

/// Why a record cannot go to topic `name`: librdkafka refused its handle.
/// The topic handles of one batch's messages.
enum Topics<'a> {
    /// One topic for the whole batch.
    Whole(Arc<Topic>),
    /// A topic per record, named by its fields: the handle of the last
    /// one, reused while the name repeats.
    PerRecord(Option<(&'a str, Arc<Topic>)>),
}

impl<'a> Topics<'a> {
    /// The handle of `m`'s topic, counting (and warning of) a field its
    /// name lacks; or why the message cannot go there.
    fn of(
        &mut self,
        s: &Shared,
        producer: &Producer<Reports>,
        m: &'a super::encode::Message<'_>,
    ) -> Result<&Arc<Topic>, Rejection> {
        let last = match self {
            Topics::Whole(t) => return Ok(t),
            Topics::PerRecord(last) => last,
        };
        let (name, missing) = m
            .topic
            .as_ref()
            .expect("a per-record topic for every message");
        if *missing {
            s.kafka.topic_fields_missing.inc();
            warn_limited!(s.log, "topic_field_missing", sink = %s.name, topic = %name,
                "a record lacks a field its topic names (or holds a map, an array or nil there): `_` stands in for it");
        }
        if last.as_ref().is_none_or(|(n, _)| *n != name) {
            let t = producer
                .topic(name)
                .map_err(|e| topic_rejection(name, &e))?;
            *last = Some((name, t));
        }
        Ok(&last.as_ref().expect("just set").1)
    }
}

fn topic_rejection(name: &str, e: &KafkaError) -> Rejection {
    classify(e).unwrap_or_else(|| Rejection {
        kind: "unknown_topic",
        message: format!("topic {name:?}: {e}"),
    })
}

/// Waits for every delivery report of one batch, produces failed messages
/// again, and settles the batch.
async fn watch(
    s: Arc<Shared>,
    pending: Arc<Pending>,
    mut produced: usize,
    mut aside: Vec<SetAside>,
    mut watched: Watched,
) {
    let waited_on = watched
        .delivery
        .as_ref()
        .is_some_and(|d| d.batch().is_waited_on());
    let mut attempt = 0u32;
    let started = Instant::now();
    loop {
        pending.all_reported().await;
        if attempt == 0 {
            s.kafka
                .delivery_latency
                .observe(started.elapsed().as_secs_f64());
        }
        let failed = pending.take_failed();
        s.kafka
            .delivered
            .add(produced.saturating_sub(failed.len()) as u64);
        if failed.is_empty() {
            break;
        }
        attempt += 1;
        let mut after = Duration::ZERO;
        let mut again = Vec::new();
        for f in failed {
            match s.verdict(&f.error, attempt) {
                Verdict::Rejected { reason } => {
                    let payload = f.message.payload().unwrap_or_default();
                    s.count_rejected(&reason, 1, payload.len());
                    aside.push(set_aside(reason, report_time(&f.message), payload, None));
                }
                Verdict::Retry { after: a } => {
                    s.count_retry(&f.error, a);
                    after = after.max(a);
                    again.push(f.message);
                }
                Verdict::Delivered => {}
            }
        }
        tokio::time::sleep(after).await;
        // declared before the round's topic handles, which are its own;
        // let go before the next wait, so a replaced one can be retired
        let Some(producer) = s.producers.healthy(|| s.stopping(None)).await else {
            return; // unsettled: `watched` abandons the delivery
        };
        produced = 0;
        pending.add(again.len() + 1); // every message, plus one while producing
        for (i, m) in again.iter().enumerate() {
            let topic = match producer.topic(m.topic()) {
                Ok(t) => t,
                Err(e) => {
                    let r = topic_rejection(m.topic(), &e);
                    let payload = m.payload().unwrap_or_default();
                    s.count_rejected(&r, 1, payload.len());
                    aside.push(set_aside(r, report_time(m), payload, None));
                    pending.report(1);
                    continue;
                }
            };
            let names: Vec<(CString, &[u8])> = m
                .headers()
                .map(|h| {
                    h.iter()
                        .filter_map(|h| Some((CString::new(h.key).ok()?, h.value?)))
                        .collect()
                })
                .unwrap_or_default();
            let headers: Vec<(&CStr, &[u8])> =
                names.iter().map(|(k, v)| (k.as_c_str(), *v)).collect();
            let out = Outgoing {
                payload: m.payload().unwrap_or_default(),
                kept: false,
                expedite: waited_on,
                key: m.key(),
                timestamp: m.timestamp().to_millis().unwrap_or(0),
                headers: &headers,
            };
            match s.produce(&producer, &topic, &out, &pending, None).await {
                Ok(()) => produced += 1,
                Err(Unproduced::Rejected(r)) => {
                    pending.report(1);
                    let payload = m.payload().unwrap_or_default();
                    s.count_rejected(&r, 1, payload.len());
                    aside.push(set_aside(r, report_time(m), payload, None));
                }
                Err(Unproduced::Fatal(e)) => {
                    pending.fail_unsent(e, m.clone());
                    pending.report(1);
                }
                Err(Unproduced::Stopped) => {
                    // this message and the rest were never handed over,
                    // and producing is over; unsettled, `watched` abandons
                    // the delivery
                    pending.report(again.len() - i + 1);
                    return;
                }
            }
        }
        if waited_on {
            // the client still waits: the retried messages do not linger
            producer.expedite();
        }
        pending.report(1); // producing is over
    }
    let d = watched
        .delivery
        .take()
        .expect("a watched batch is settled once");
    if aside.is_empty() {
        s.sink.bytes.add(d.batch().byte_len() as u64);
        s.settler
            .settle(vec![d], attempt.max(1), Verdict::Delivered);
    } else {
        s.find_entries(d.batch(), &mut aside);
        s.settler.settle_partly(d, aside);
    }
}

/// A message Kafka can never take, to be set aside alone.
fn set_aside(
    reason: Rejection,
    time: EventTime,
    payload: &[u8],
    entry: Option<bytes::Bytes>,
) -> SetAside {
    SetAside {
        reason,
        time,
        payload: bytes::Bytes::copy_from_slice(payload),
        entry,
    }
}

/// The event time of a message being produced again (its timestamp).
fn report_time(m: &rdkafka::message::OwnedMessage) -> EventTime {
    let ms = m.timestamp().to_millis().unwrap_or(0).max(0) as u64;
    EventTime {
        secs: (ms / 1000) as u32,
        nanos: (ms % 1000) as u32 * 1_000_000,
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod sink_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_kafka_can_never_get_past_are_rejections() {
        let e = KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge);
        assert_eq!(classify(&e).unwrap().kind, "message_too_large");
        let e = KafkaError::MessageProduction(RDKafkaErrorCode::UnknownTopicOrPartition);
        assert_eq!(classify(&e).unwrap().kind, "unknown_topic");
        for code in [
            RDKafkaErrorCode::MessageTimedOut,
            RDKafkaErrorCode::BrokerTransportFailure,
            RDKafkaErrorCode::NotLeaderForPartition,
            RDKafkaErrorCode::AllBrokersDown,
        ] {
            assert!(
                classify(&KafkaError::MessageProduction(code)).is_none(),
                "{code:?}"
            );
        }
    }
}
