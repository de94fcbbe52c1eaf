//! The idempotent producer with several requests in flight per partition
//! (the change to librdkafka in `vendor/rdkafka-sys`, see its PATCHES.md),
//! against librdkafka's mock cluster, which checks producer sequences and
//! keeps the broker's window of five batches as Kafka does.
//!
//! Each test produces numbered messages with the Kafka sink's own producer
//! settings, breaks something while five requests are out (a produce
//! error, a client-side timeout of requests the broker did store, a leader
//! change, a broker going down), then reads the partition back: every
//! number is there, in order, and none twice.

use super::produce::tests::reader;
use super::KafkaSinkConfig;
use rdkafka::consumer::Consumer;
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::statistics::Statistics;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientConfig, ClientContext};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TOPIC: &str = "numbered";

/// Counts delivery reports and the most produce requests seen waiting for
/// a response at once on any broker.
#[derive(Default)]
struct Watch {
    delivered: AtomicUsize,
    failed: Mutex<Vec<KafkaError>>,
    most_in_flight: AtomicI64,
}

impl ClientContext for Watch {
    fn stats(&self, s: Statistics) {
        for b in s.brokers.values().filter(|b| b.nodeid >= 0) {
            self.most_in_flight
                .fetch_max(b.waitresp_cnt, Ordering::Relaxed);
        }
    }
}

impl ProducerContext for Watch {
    type DeliveryOpaque = ();
    fn delivery(&self, r: &DeliveryResult<'_>, (): ()) {
        match r {
            Ok(_) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => self.failed.lock().unwrap().push(e.clone()),
        }
    }
}

/// A cluster of three mock brokers with `TOPIC` (one partition) led by
/// broker 1, whose responses take `round_trip`.
fn cluster(
    round_trip: Duration,
) -> MockCluster<'static, rdkafka::producer::DefaultProducerContext> {
    let cluster = MockCluster::new(3).unwrap();
    cluster.create_topic(TOPIC, 1, 3).unwrap();
    cluster.partition_leader(TOPIC, 0, Some(1)).unwrap();
    cluster.broker_round_trip_time(1, round_trip).unwrap();
    cluster
}

/// The Kafka sink's producer for `brokers` with `extra` librdkafka
/// properties; statistics every 5 ms feed `Watch::most_in_flight`.
fn producer(brokers: &str, extra: &[(&str, &str)]) -> BaseProducer<Watch> {
    let mut options = String::from("\"statistics.interval.ms\" = \"5\"\n");
    for (k, v) in extra {
        options.push_str(&format!("{k:?} = {v:?}\n"));
    }
    let sink: KafkaSinkConfig = toml::from_str(&format!(
        "brokers = [{brokers:?}]\ntopic = \"{TOPIC}\"\n[librdkafka_options]\n{options}"
    ))
    .unwrap();
    sink.validate().unwrap();
    let properties = sink.client_properties();
    assert_eq!(properties["enable.idempotence"], "true");
    let mut config = ClientConfig::new();
    for (k, v) in &properties {
        config.set(k, v);
    }
    config.create_with_context(Watch::default()).unwrap()
}

/// What a run produced.
struct Run {
    /// Delivery reports without error.
    delivered: usize,
    /// Most produce requests in flight at once, from the statistics.
    most_in_flight: i64,
}

/// Produces messages `0..n` to partition 0 (small batches, so a backlog is
/// many requests) and calls `trouble` once `n / 4` are delivered, then
/// waits for every report.
fn produce(
    what: &str,
    brokers: &str,
    n: usize,
    extra: &[(&str, &str)],
    trouble: impl FnOnce(),
) -> Run {
    let mut settings = vec![
        ("batch.num.messages", "500"),
        ("queue.buffering.max.messages", "1000000"),
    ];
    settings.extend_from_slice(extra);
    let p = producer(brokers, &settings);
    for i in 0..n {
        let payload = i.to_string();
        p.send(
            BaseRecord::<(), _>::to(TOPIC)
                .payload(&payload)
                .partition(0),
        )
        .map_err(|(e, _)| e)
        .unwrap();
    }
    let mut trouble = Some(trouble);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        p.poll(Duration::from_millis(5));
        let delivered = p.context().delivered.load(Ordering::Relaxed);
        let failed = p.context().failed.lock().unwrap().len();
        if delivered >= n / 4 {
            if let Some(t) = trouble.take() {
                t();
            }
        }
        if delivered + failed == n {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {delivered} of {n} delivered, {failed} failed, after 60 s"
        );
    }
    p.flush(Duration::from_secs(10)).unwrap();
    let failed = p.context().failed.lock().unwrap();
    assert!(
        failed.is_empty(),
        "{what}: {} failed deliveries, the first: {:?}",
        failed.len(),
        &failed[..failed.len().min(3)]
    );
    Run {
        delivered: p.context().delivered.load(Ordering::Relaxed),
        most_in_flight: p.context().most_in_flight.load(Ordering::Relaxed),
    }
}

/// Reads partition 0 of `TOPIC` to its end; asserts that it holds `0..n`
/// in order, without a repeat.
fn assert_all_once_in_order(brokers: &str, n: usize, what: &str) {
    let consumer = reader(brokers, TOPIC);
    let (_, high) = consumer
        .fetch_watermarks(TOPIC, 0, Duration::from_secs(10))
        .unwrap();
    let mut got = Vec::with_capacity(n);
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < high as usize {
        assert!(
            Instant::now() < deadline,
            "{what}: {} of {high} read",
            got.len()
        );
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let text = std::str::from_utf8(m.payload().unwrap()).unwrap();
                got.push((m.offset(), text.parse::<usize>().unwrap()));
            }
            None => {}
            Some(Err(e)) => panic!("consuming: {e}"),
        }
    }
    let mut seen = vec![0u32; n];
    for &(_, i) in &got {
        assert!(i < n, "{i} was never produced");
        seen[i] += 1;
    }
    let missing = seen.iter().filter(|&&c| c == 0).count();
    let repeated = seen.iter().filter(|&&c| c > 1).count();
    let first_repeat: Vec<_> = seen
        .iter()
        .position(|&c| c > 1)
        .map(|i| got.iter().filter(|&&(_, j)| j == i).collect())
        .unwrap_or_default();
    assert_eq!(
        (missing, repeated),
        (0, 0),
        "{what}: of {n} messages, {missing} missing and {repeated} stored more than once \
         (the first at (offset, number) {first_repeat:?})"
    );
    let misplaced = got.iter().enumerate().find(|&(at, &(_, i))| at != i);
    assert_eq!(misplaced, None, "{what}: (offset, number) out of order");
}

#[test]
fn a_partition_keeps_several_requests_in_flight() {
    // every response takes 100 ms, so a backlog fills the window
    let cluster = cluster(Duration::from_millis(100));
    let brokers = cluster.bootstrap_servers();
    let run = produce("backlog", &brokers, 20_000, &[], || {});
    assert_eq!(run.delivered, 20_000);
    // librdkafka as published: 1 (it counts messages against the limit of
    // five requests); the broker keeps a window of five batches
    assert!(
        (3..=5).contains(&run.most_in_flight),
        "most produce requests in flight at once: {}",
        run.most_in_flight
    );
    assert_all_once_in_order(&brokers, 20_000, "backlog");
}

#[test]
fn produce_errors_while_five_requests_are_out_lose_and_repeat_nothing() {
    use RDKafkaRespErr::*;
    // each error fails one request; the ones behind it, already sent,
    // come back out of sequence, and the producer drains the partition,
    // bumps its epoch and sends them again in order. (An out-of-sequence
    // answer to the first request in flight is not among them: it says
    // the broker lost what it had acknowledged, and librdkafka fails those
    // messages, however many requests are out.)
    for error in [
        RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
        RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
        RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
        RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
        RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR,
    ] {
        let cluster = cluster(Duration::from_millis(20));
        let brokers = cluster.bootstrap_servers();
        let run = produce(&format!("{error:?}"), &brokers, 30_000, &[], || {
            cluster.request_errors(rdkafka::types::RDKafkaApiKey::Produce, &[error, error]);
        });
        assert_eq!(run.delivered, 30_000, "{error:?}");
        assert!(run.most_in_flight >= 3, "{error:?}: {}", run.most_in_flight);
        assert_all_once_in_order(&brokers, 30_000, &format!("{error:?}"));
    }
}

#[test]
fn a_leader_change_while_five_requests_are_out_loses_and_repeats_nothing() {
    let cluster = cluster(Duration::from_millis(20));
    let brokers = cluster.bootstrap_servers();
    let run = produce("leader change", &brokers, 30_000, &[], || {
        cluster.partition_leader(TOPIC, 0, Some(2)).unwrap();
    });
    assert_eq!(run.delivered, 30_000);
    assert!(run.most_in_flight >= 3, "{}", run.most_in_flight);
    assert_all_once_in_order(&brokers, 30_000, "leader change");
}

#[test]
fn the_leader_going_down_while_five_requests_are_out_loses_and_repeats_nothing() {
    let cluster = cluster(Duration::from_millis(20));
    let brokers = cluster.bootstrap_servers();
    let run = produce("leader down", &brokers, 30_000, &[], || {
        cluster.broker_down(1).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        cluster.broker_up(1).unwrap();
    });
    assert_eq!(run.delivered, 30_000);
    assert!(run.most_in_flight >= 3, "{}", run.most_in_flight);
    assert_all_once_in_order(&brokers, 30_000, "leader down");
}
