//! Hands messages to librdkafka through topic handles.
//!
//! The `rdkafka` crate's `send` names the topic of every message: it
//! allocates a C string for the name, and librdkafka then looks the topic
//! up by name under its client-wide lock and takes and drops a reference
//! to it, once per message. Here a handle is made once per topic
//! (`rd_kafka_topic_new`) and each message is given to
//! `rd_kafka_produceva` with that handle, with the same properties
//! (payload and key copied by librdkafka, event time as the timestamp,
//! headers, the batch's delivery opaque). Written against the C API
//! because the crate has no way to pass a handle; the forward → Kafka
//! benchmark in docs/BENCHMARKS.md shows the difference.

use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex};

use rdkafka::bindings as rd;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{Producer as _, ProducerContext, ThreadedProducer};

/// Most topic handles kept at once; past it the cache starts over, so
/// topics rendered from `${tag}` cannot grow it without bound.
const MAX_TOPICS: usize = 1024;

/// Headers a message can carry without an allocation (`tag_header` and
/// `time_header`).
const INLINE_HEADERS: usize = 2;

/// One message as librdkafka gets it.
pub struct Outgoing<'a> {
    pub payload: &'a [u8],
    pub key: Option<&'a [u8]>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Header names and values.
    pub headers: &'a [(&'a CStr, &'a [u8])],
}

/// A librdkafka topic handle, made once per topic.
pub struct Topic {
    ptr: *mut rd::rd_kafka_topic_t,
}

// SAFETY: librdkafka's topic handles may be used from any thread; the
// handle is only destroyed on drop, once.
unsafe impl Send for Topic {}
unsafe impl Sync for Topic {}

impl Drop for Topic {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from rd_kafka_topic_new and is destroyed once;
        // `Producer` drops its topics before its client.
        unsafe { rd::rd_kafka_topic_destroy(self.ptr) }
    }
}

/// A `ThreadedProducer` (whose thread serves the delivery reports) and the
/// topic handles made for it.
pub struct Producer<C: ProducerContext + 'static> {
    /// Declared before `client`: every handle is destroyed before the
    /// client it belongs to.
    topics: Mutex<HashMap<String, Arc<Topic>>>,
    /// Topic handles made so far (a counter for tests).
    made: std::sync::atomic::AtomicUsize,
    client: ThreadedProducer<C>,
}

impl<C, T> Producer<C>
where
    C: ProducerContext<DeliveryOpaque = Arc<T>> + 'static,
    T: Send + Sync,
{
    pub fn new(client: ThreadedProducer<C>) -> Self {
        Producer {
            topics: Mutex::new(HashMap::new()),
            made: std::sync::atomic::AtomicUsize::new(0),
            client,
        }
    }

    pub fn client(&self) -> &ThreadedProducer<C> {
        &self.client
    }

    /// The handle of `name`, made on first use.
    pub fn topic(&self, name: &str) -> Result<Arc<Topic>, KafkaError> {
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = topics.get(name) {
            return Ok(Arc::clone(t));
        }
        let invalid = || KafkaError::MessageProduction(RDKafkaErrorCode::InvalidTopic);
        let cname = CString::new(name).map_err(|_| invalid())?;
        // SAFETY: a live client and a NUL-terminated name; a NULL conf
        // means the client's default topic settings, as `send` gets.
        let ptr = unsafe {
            rd::rd_kafka_topic_new(
                self.client.client().native_ptr(),
                cname.as_ptr(),
                std::ptr::null_mut(),
            )
        };
        if ptr.is_null() {
            return Err(invalid());
        }
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let topic = Arc::new(Topic { ptr });
        if topics.len() >= MAX_TOPICS {
            // messages in librdkafka's queues hold their own reference
            topics.clear();
        }
        topics.insert(name.to_string(), Arc::clone(&topic));
        Ok(topic)
    }

    /// Topic handles made so far.
    #[cfg(test)]
    pub fn topics_made(&self) -> usize {
        self.made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Hands `m` to librdkafka, which copies payload, key and headers;
    /// `opaque` comes back with the delivery report, or with the error if
    /// librdkafka did not take the message.
    #[allow(clippy::result_large_err)]
    pub fn send(
        &self,
        topic: &Topic,
        m: &Outgoing<'_>,
        opaque: Arc<T>,
    ) -> Result<(), (KafkaError, Arc<T>)> {
        use rd::rd_kafka_vtype_t as V;
        let end = vu(
            V::RD_KAFKA_VTYPE_END,
            rd::rd_kafka_vu_s__bindgen_ty_1 { i: 0 },
        );
        let mem = |b: &[u8]| rd::rd_kafka_vu_s__bindgen_ty_1 {
            mem: rd::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_1 {
                ptr: b.as_ptr() as *mut c_void,
                size: b.len(),
            },
        };
        let mut inline = [end; 6 + INLINE_HEADERS];
        let mut heap;
        let n = 5 + usize::from(m.key.is_some()) + m.headers.len();
        let vus: &mut [rd::rd_kafka_vu_t] = if n <= inline.len() {
            &mut inline[..n]
        } else {
            heap = vec![end; n];
            &mut heap
        };
        let opaque_ptr = Arc::into_raw(opaque) as *mut c_void;
        vus[0] = vu(
            V::RD_KAFKA_VTYPE_RKT,
            rd::rd_kafka_vu_s__bindgen_ty_1 { rkt: topic.ptr },
        );
        vus[1] = vu(
            V::RD_KAFKA_VTYPE_MSGFLAGS,
            rd::rd_kafka_vu_s__bindgen_ty_1 {
                i: rd::RD_KAFKA_MSG_F_COPY,
            },
        );
        vus[2] = vu(V::RD_KAFKA_VTYPE_VALUE, mem(m.payload));
        vus[3] = vu(
            V::RD_KAFKA_VTYPE_OPAQUE,
            rd::rd_kafka_vu_s__bindgen_ty_1 { ptr: opaque_ptr },
        );
        vus[4] = vu(
            V::RD_KAFKA_VTYPE_TIMESTAMP,
            rd::rd_kafka_vu_s__bindgen_ty_1 { i64_: m.timestamp },
        );
        let mut i = 5;
        if let Some(key) = m.key {
            vus[i] = vu(V::RD_KAFKA_VTYPE_KEY, mem(key));
            i += 1;
        }
        for (name, value) in m.headers {
            vus[i] = vu(
                V::RD_KAFKA_VTYPE_HEADER,
                rd::rd_kafka_vu_s__bindgen_ty_1 {
                    header: rd::rd_kafka_vu_s__bindgen_ty_1__bindgen_ty_2 {
                        name: name.as_ptr(),
                        val: value.as_ptr() as *const c_void,
                        size: value.len() as isize,
                    },
                },
            );
            i += 1;
        }
        // SAFETY: a live client, a handle of it, and `vus` pointing at data
        // that outlives the call (librdkafka copies it: RD_KAFKA_MSG_F_COPY,
        // headers copied into the message).
        let error = unsafe {
            rd::rd_kafka_produceva(self.client.client().native_ptr(), vus.as_ptr(), vus.len())
        };
        if error.is_null() {
            return Ok(());
        }
        // SAFETY: a non-NULL error is ours to read and destroy; the message
        // was not taken, so the opaque is still ours.
        let code = unsafe {
            let code = rd::rd_kafka_error_code(error);
            rd::rd_kafka_error_destroy(error);
            code
        };
        let opaque = unsafe { Arc::from_raw(opaque_ptr as *const T) };
        Err((KafkaError::MessageProduction(code.into()), opaque))
    }
}

fn vu(vtype: rd::rd_kafka_vtype_t, u: rd::rd_kafka_vu_s__bindgen_ty_1) -> rd::rd_kafka_vu_t {
    rd::rd_kafka_vu_t { vtype, u }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::{DeliveryResult, Headers, Message};
    use rdkafka::mocking::MockCluster;
    use rdkafka::{ClientConfig, ClientContext, Offset, TopicPartitionList};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Counts delivery reports, successful or not.
    struct Count;
    impl ClientContext for Count {}
    impl ProducerContext for Count {
        type DeliveryOpaque = Arc<AtomicUsize>;
        fn delivery(&self, r: &DeliveryResult<'_>, n: Arc<AtomicUsize>) {
            assert!(r.is_ok(), "{r:?}");
            n.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn messages_keep_key_timestamp_and_headers_and_each_topic_gets_one_handle() {
        let cluster = MockCluster::new(1).unwrap();
        let brokers = cluster.bootstrap_servers();
        for t in ["a", "b"] {
            cluster.create_topic(t, 1, 1).unwrap();
        }
        let client: ThreadedProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("linger.ms", "0")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client);
        let reports = Arc::new(AtomicUsize::new(0));
        let (tag, time) = (c"tag", c"time");
        for i in 0..100 {
            let topic = producer.topic(if i % 2 == 0 { "a" } else { "b" }).unwrap();
            let payload = format!("record {i}");
            let key = format!("key {i}");
            let headers = [(tag, &b"app.web"[..]), (time, payload.as_bytes())];
            let m = Outgoing {
                payload: payload.as_bytes(),
                key: (i % 3 != 0).then_some(key.as_bytes()),
                timestamp: 1_700_000_000_000 + i,
                headers: &headers[..(i % 3) as usize],
            };
            producer.send(&topic, &m, Arc::clone(&reports)).unwrap();
        }
        assert_eq!(producer.topics_made(), 2, "one handle per topic");
        producer.client().flush(Duration::from_secs(10)).unwrap();
        assert_eq!(reports.load(Ordering::SeqCst), 100);
        // what landed in topic "b": the odd messages, in order
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", "produce-test")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("b", 0, Offset::Beginning).unwrap();
        consumer.assign(&tpl).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while seen.len() < 50 && Instant::now() < deadline {
            let Some(m) = consumer.poll(Duration::from_millis(200)) else {
                continue;
            };
            let m = m.unwrap();
            let i = 2 * seen.len() as i64 + 1;
            assert_eq!(m.payload(), Some(format!("record {i}").as_bytes()));
            let key = format!("key {i}");
            assert_eq!(m.key(), (i % 3 != 0).then_some(key.as_bytes()));
            assert_eq!(m.timestamp().to_millis(), Some(1_700_000_000_000 + i));
            let headers: Vec<(String, Vec<u8>)> = m
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|h| (h.key.to_string(), h.value.unwrap().to_vec()))
                        .collect()
                })
                .unwrap_or_default();
            let want = [
                ("tag", "app.web".to_string()),
                ("time", format!("record {i}")),
            ];
            let want: Vec<(String, Vec<u8>)> = want[..(i % 3) as usize]
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone().into_bytes()))
                .collect();
            assert_eq!(headers, want, "message {i}");
            seen.push(i);
        }
        assert_eq!(seen.len(), 50);
    }

    #[test]
    fn a_topic_name_librdkafka_cannot_take_is_an_invalid_topic() {
        let client: ThreadedProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:1")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client);
        let e = producer.topic("a\0b").err().unwrap();
        assert_eq!(e.rdkafka_error_code(), Some(RDKafkaErrorCode::InvalidTopic));
    }
}
