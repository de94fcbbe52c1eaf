//! The sink as a whole, against librdkafka's mock cluster or no broker:
//! what a stop that cuts a batch leaves behind, and a fatal error of the
//! idempotent producer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rdkafka::consumer::Consumer as _;
use rdkafka::mocking::MockCluster;
use rdkafka::Message as _;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::buffer::{queue, BufferConfig};
use crate::event::{Batch, EventTime, Records};
use crate::metrics::Registry;
use crate::sinks::kafka::produce::LIVE_PENDINGS;
use crate::sinks::settle::Settler;

/// A sink named "k" with `config` (TOML) and its registry.
fn sink(config: &str) -> (KafkaSink, Registry) {
    let config: KafkaSinkConfig = toml::from_str(config).unwrap();
    let r = Registry::new();
    let metrics = SinkMetrics::new(&r, "k");
    let settler = Settler::new("k", &r, metrics.clone(), config.retry_config(), None);
    let kafka = KafkaMetrics::new(&r, "k", &config.client_properties());
    let sink = KafkaSink::new("k", config, settler, metrics, kafka).unwrap();
    (sink, r)
}

/// Records `first..first + n`, one line each ("record N").
fn numbered(first: usize, n: usize) -> Batch {
    numbered_as("app", first, n)
}

/// [`numbered`] tagged `tag`.
fn numbered_as(tag: &str, first: usize, n: usize) -> Batch {
    let text: String = (first..first + n)
        .map(|i| format!("record {i}\n"))
        .collect();
    Batch::new(
        tag.into(),
        Records::Lines {
            data: Bytes::from(text),
            time: EventTime::new(1_700_000_000, 0),
        },
        n,
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_batch_cut_by_drain_timeout_leaves_no_pending_behind() {
    // no broker, and room for one message in librdkafka's queue: the
    // second message of the batch waits on a full queue until the stop's
    // drain_timeout cuts the batch
    let before = LIVE_PENDINGS.with(|n| n.get());
    let (sink, r) = sink(
        "brokers = [\"127.0.0.1:1\"]\ntopic = \"t\"\ndrain_timeout = \"50ms\"\n\
         [librdkafka_options]\n\"queue.buffering.max.messages\" = \"1\"",
    );
    let outcome = Arc::new(Mutex::new(None));
    runtime().block_on(async {
        let (tx, rx) = queue("k", BufferConfig::default(), &r);
        let o = Arc::clone(&outcome);
        let batch = numbered(0, 3).with_ack(AckHandle::new(move |x| {
            *o.lock().unwrap() = Some(x);
        }));
        tx.send(batch).await.unwrap();
        drop(tx);
        sink.run(rx).await;
    });
    assert_eq!(*outcome.lock().unwrap(), Some(AckOutcome::Rejected));
    // the sink and its producer are gone: every report was served
    assert_eq!(
        LIVE_PENDINGS.with(|n| n.get()) - before,
        0,
        "the cut batch's Pending is never freed"
    );
}

fn fatal_errors(r: &Registry) -> u64 {
    r.value(
        "logferry_kafka_sink_fatal_errors_total",
        &[("component", "k")],
    )
}

/// What librdkafka does at an idempotence failure it cannot recover from:
/// from now on every produce call on `p` fails.
fn make_fatal(p: &Producer<Reports>) {
    use rdkafka::types::RDKafkaRespErr as E;
    assert!(p.fatal_error().is_none());
    let rk = p.client().client().native_ptr();
    // SAFETY: a live client; the reason is a C string
    let e = unsafe {
        rdkafka::bindings::rd_kafka_test_fatal_error(
            rk,
            E::RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
            c"test: the broker lost acknowledged messages".as_ptr(),
        )
    };
    assert_eq!(e, E::RD_KAFKA_RESP_ERR_NO_ERROR);
}

#[test]
fn after_a_fatal_error_every_record_arrives() {
    const BATCHES: usize = 200;
    const PER_BATCH: usize = 50;
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("numbered", 1, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let (sink, r) = sink(&format!(
        "brokers = [{brokers:?}]\ntopic = \"numbered\"\nretry_backoff = \"20ms\"\n\
         retry_backoff_max = \"200ms\"\ndrain_timeout = \"5s\""
    ));
    let shared = Arc::clone(&sink.shared);
    let accepted = Arc::new(AtomicUsize::new(0));
    let rejected = Arc::new(AtomicUsize::new(0));
    runtime().block_on(async {
        let (tx, rx) = queue("k", BufferConfig::default(), &r);
        let (a, j) = (Arc::clone(&accepted), Arc::clone(&rejected));
        let r2 = r.clone();
        let feed = tokio::spawn(async move {
            for b in 0..BATCHES {
                let (a, j) = (Arc::clone(&a), Arc::clone(&j));
                let batch =
                    numbered(b * PER_BATCH, PER_BATCH).with_ack(AckHandle::new(move |o| match o {
                        AckOutcome::Accepted => drop(a.fetch_add(1, Ordering::SeqCst)),
                        // none is set aside: count it with the failures
                        AckOutcome::Rejected | AckOutcome::Refused(_) => {
                            j.fetch_add(1, Ordering::SeqCst);
                        }
                    }));
                tx.send(batch).await.unwrap();
                // a fatal error a quarter of the way, and its replacement's
                // own soon after (it waits retry_backoff before the next)
                if b == BATCHES / 4 || b == BATCHES / 2 {
                    let before = fatal_errors(&r2);
                    make_fatal(&shared.producers.current());
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while (fatal_errors(&r2) == before
                        || shared.producers.current().fatal_error().is_some())
                        && Instant::now() < deadline
                    {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while a.load(Ordering::SeqCst) + j.load(Ordering::SeqCst) < BATCHES
                && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            drop(tx);
        });
        let stopped = tokio::time::timeout(Duration::from_secs(45), sink.run(rx)).await;
        assert!(stopped.is_ok(), "the sink did not stop within 45 s");
        feed.await.unwrap();
    });
    assert_eq!(
        (
            accepted.load(Ordering::SeqCst),
            rejected.load(Ordering::SeqCst)
        ),
        (BATCHES, 0),
        "batches acknowledged, rejected"
    );
    assert_eq!(fatal_errors(&r), 2, "fatal errors counted");
    assert!(
        r.value("logferry_kafka_sink_retries_total", &[("component", "k")]) > 0,
        "the fatal errors came while messages were outstanding, which were produced again"
    );
    // every number is in the topic (some may be there twice)
    let consumer = super::super::produce::tests::reader(&brokers, "numbered");
    let (_, high) = consumer
        .fetch_watermarks("numbered", 0, Duration::from_secs(10))
        .unwrap();
    let mut seen = vec![false; BATCHES * PER_BATCH];
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut read = 0;
    while read < high && Instant::now() < deadline {
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.unwrap();
            let text = std::str::from_utf8(m.payload().unwrap()).unwrap();
            let i: usize = text.strip_prefix("record ").unwrap().parse().unwrap();
            seen[i] = true;
            read += 1;
        }
    }
    let missing: Vec<usize> = (0..seen.len()).filter(|&i| !seen[i]).collect();
    assert!(
        missing.is_empty(),
        "{} of {} records missing, the first {:?}",
        missing.len(),
        seen.len(),
        &missing[..missing.len().min(5)]
    );
}

/// Sends `batch` (`waited_on` if a client waits for it) and returns how
/// long its acknowledgement took.
async fn acked_after(tx: &crate::buffer::QueueSender, batch: Batch, waited_on: bool) -> Duration {
    let (done, settled) = tokio::sync::oneshot::channel();
    let mut batch = batch.with_ack(AckHandle::new(move |o| {
        let _ = done.send(o);
    }));
    if waited_on {
        batch = batch.waited_on();
    }
    let at = Instant::now();
    tx.send(batch).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(30), settled)
        .await
        .expect("settled within 30 s")
        .unwrap();
    assert_eq!(outcome, AckOutcome::Accepted);
    at.elapsed()
}

/// Runs `sink` with `feed` writing to its queue, which answers how long a
/// batch a client waits for and one nobody waits for took to settle, and
/// asserts that only the second was held for `linger_ms = 3000`. Wide
/// margins: this tells a skipped linger from an honoured one, not a speed.
fn assert_only_the_unwaited_batch_lingers<F, Fut>(sink: KafkaSink, r: &Registry, feed: F)
where
    F: FnOnce(crate::buffer::QueueSender) -> Fut,
    Fut: std::future::Future<Output = (Duration, Duration)> + Send + 'static,
{
    let (waited, lingered) = runtime().block_on(async {
        let (tx, rx) = queue("k", BufferConfig::default(), r);
        let feed = tokio::spawn(feed(tx));
        sink.run(rx).await;
        feed.await.unwrap()
    });
    assert!(
        waited < Duration::from_millis(1500),
        "a batch a client waits for took {waited:?}: linger_ms must not hold it"
    );
    assert!(
        lingered >= Duration::from_millis(2500),
        "a batch nobody waits for took {lingered:?}: it should linger (a waited-on \
         batch must not take it along)"
    );
}

/// With `linger_ms = 3000`, a batch a client waits for is delivered at
/// once (its acknowledgement settles well before the linger), and a batch
/// nobody waits for is held for the linger.
#[test]
fn only_a_batch_nobody_waits_for_lingers() {
    let cluster = MockCluster::new(1).unwrap();
    cluster.create_topic("linger", 1, 1).unwrap();
    let brokers = cluster.bootstrap_servers();
    let (sink, r) = sink(&format!(
        "brokers = [{brokers:?}]\ntopic = \"linger\"\nlinger_ms = 3000\ndrain_timeout = \"10s\""
    ));
    assert_only_the_unwaited_batch_lingers(sink, &r, |tx| async move {
        // the connection, the producer id and the topic's metadata
        acked_after(&tx, numbered(0, 1), true).await;
        let waited = acked_after(&tx, numbered(1, 10), true).await;
        let lingered = acked_after(&tx, numbered(11, 10), false).await;
        (waited, lingered)
    });
}

/// Two brokers, each leading one topic, and `linger_ms = 3000`: a batch a
/// client waits for wakes its own topic's leader and is delivered at once,
/// while a batch nobody waits for, handed over just before it to the other
/// topic (the other leader), still lingers.
#[test]
fn a_batch_a_client_waits_for_leaves_another_leader_s_batch_lingering() {
    let cluster = MockCluster::new(2).unwrap();
    for (topic, leader) in [("bulk", 1), ("web", 2)] {
        cluster.create_topic(topic, 1, 1).unwrap();
        cluster.partition_leader(topic, 0, Some(leader)).unwrap();
    }
    let brokers = cluster.bootstrap_servers();
    let (sink, r) = sink(&format!(
        "brokers = [{brokers:?}]\ntopic = \"${{tag}}\"\nlinger_ms = 3000\ndrain_timeout = \"10s\""
    ));
    assert_only_the_unwaited_batch_lingers(sink, &r, |tx| async move {
        // the connections, the producer id and both topics' metadata
        acked_after(&tx, numbered_as("web", 0, 1), true).await;
        acked_after(&tx, numbered_as("bulk", 1, 1), true).await;
        let bulk_tx = tx.clone();
        let bulk =
            tokio::spawn(
                async move { acked_after(&bulk_tx, numbered_as("bulk", 2, 10), false).await },
            );
        tokio::time::sleep(Duration::from_millis(200)).await;
        let waited = acked_after(&tx, numbered_as("web", 12, 1), true).await;
        (waited, bulk.await.unwrap())
    });
}
