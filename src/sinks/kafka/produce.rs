//! Hands messages to librdkafka through topic handles, and serves its
//! delivery reports.
//!
//! The `rdkafka` crate's `send` names the topic of every message: it
//! allocates a C string for the name, and librdkafka then looks the topic
//! up by name under its client-wide lock and takes and drops a reference
//! to it, once per message. Here a handle is made once per topic
//! (`rd_kafka_topic_new`) and each message is given to
//! `rd_kafka_produceva` with that handle, with the same properties
//! (key and headers copied by librdkafka, event time as the timestamp,
//! the batch's delivery opaque). Written against the C API
//! because the crate has no way to pass a handle; the forward → Kafka
//! benchmark in docs/BENCHMARKS.md shows the difference.
//!
//! Delivery reports are served on the thread that produces (as `kcat`
//! does), not on a polling thread of their own: librdkafka counts every
//! message under one client-wide lock when it is made and again when it
//! is destroyed after its report, and frees it where the report is
//! served, so one thread for both keeps that lock and the allocator's
//! memory on one core. The client's queue signals an eventfd when it gets
//! an event, and the sink's thread awaits that fd ([`Producer::events`]).
//! A message's opaque points at its batch's [`Pending`] without owning a
//! reference; the reports of a batch arrive together, so a batch's count
//! is taken down once per run of its messages.

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rdkafka::bindings as rd;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders, OwnedMessage, Timestamp};
use rdkafka::producer::{
    BaseProducer, DeliveryResult, Producer as _, ProducerContext, PurgeConfig,
};
use rdkafka::util::IntoOpaque;
use tokio::sync::Notify;

/// Most topic handles kept at once; past it the cache starts over, so
/// topics rendered from `${tag}` cannot grow it without bound.
const MAX_TOPICS: usize = 1024;

/// Headers a message can carry without an allocation (`tag_header` and
/// `time_header`).
const INLINE_HEADERS: usize = 2;

/// What librdkafka writes to the events fd: one eventfd increment.
static ONE: u64 = 1;

/// One message as librdkafka gets it.
pub struct Outgoing<'a> {
    pub payload: &'a [u8],
    /// Whether the payload stays where it is until the message's delivery
    /// report is served (it is borrowed from a batch that is held that
    /// long), so librdkafka can take it without a copy; see
    /// [`Producer::send`].
    pub kept: bool,
    /// Whether a client waits for this message: it, and what its partition
    /// queued before it, is sent without waiting for `linger.ms` once
    /// [`Producer::expedite`] is called.
    pub expedite: bool,
    pub key: Option<&'a [u8]>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// Header names and values.
    pub headers: &'a [(&'a CStr, &'a [u8])],
}

/// A librdkafka topic handle, made once per topic. It belongs to the
/// client of the [`Producer`] that made it: whoever holds one also holds
/// that producer (declared before the handle, so the handle goes first),
/// since the sink replaces its producer after a fatal error.
pub struct Topic {
    ptr: *mut rd::rd_kafka_topic_t,
}

impl Topic {
    /// The topic's name.
    pub fn name(&self) -> String {
        // SAFETY: a live handle; librdkafka returns its own NUL-terminated
        // copy of the name, valid as long as the handle
        unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(self.ptr)) }
            .to_string_lossy()
            .into_owned()
    }
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

/// A message whose delivery report failed, kept to be produced again.
pub struct Failed {
    pub error: KafkaError,
    pub message: OwnedMessage,
}

/// The messages of one batch that librdkafka holds.
///
/// Messages do not own a reference each: while the count is above zero it
/// holds one reference for all of them, taken when it leaves zero and
/// given back when it returns there, so a `Pending` outlives its last
/// report however the batch's watcher ends.
pub struct Pending {
    /// Messages handed to librdkafka and not reported yet, plus one while
    /// a batch is being produced (so the count cannot reach zero half-way).
    outstanding: AtomicUsize,
    /// Messages whose delivery failed, since the watcher last looked.
    failed: Mutex<Vec<Failed>>,
    /// Woken when `outstanding` reaches zero.
    done: Notify,
}

#[cfg(test)]
thread_local! {
    /// `Pending`s made on this thread and not dropped yet: a test checks
    /// that none is left behind (its shared reference never given back).
    pub static LIVE_PENDINGS: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

impl Default for Pending {
    fn default() -> Self {
        #[cfg(test)]
        LIVE_PENDINGS.with(|n| n.set(n.get() + 1));
        Pending {
            outstanding: AtomicUsize::new(0),
            failed: Mutex::default(),
            done: Notify::new(),
        }
    }
}

#[cfg(test)]
impl Drop for Pending {
    fn drop(&mut self) {
        LIVE_PENDINGS.with(|n| n.set(n.get() - 1));
    }
}

impl Pending {
    /// Counts `n` more messages as outstanding.
    pub fn add(self: &Arc<Self>, n: usize) {
        if n > 0 && self.outstanding.fetch_add(n, Ordering::AcqRel) == 0 {
            // the outstanding messages' shared reference
            std::mem::forget(Arc::clone(self));
        }
    }

    /// `n` outstanding messages are settled here (never handed over, or
    /// the batch's producing is over).
    pub fn report(self: &Arc<Self>, n: usize) {
        // SAFETY: `self` is a live Pending with at least `n` outstanding
        // (the caller's own reference keeps it alive past the call)
        unsafe { Pending::report_ptr(Arc::as_ptr(self), n) }
    }

    /// `n` outstanding messages of `p` are reported.
    ///
    /// # Safety
    /// `p` points at a live `Pending` (from `Arc::as_ptr`) with at least
    /// `n` outstanding messages; if they are its last, `p` may be freed
    /// when this returns.
    unsafe fn report_ptr(p: *const Pending, n: usize) {
        let this = &*p;
        if n > 0 && this.outstanding.fetch_sub(n, Ordering::AcqRel) == n {
            this.done.notify_one();
            // the shared reference `add` took when the count left zero
            Arc::decrement_strong_count(p);
        }
    }

    /// A failed message of `p`, to be produced again by its watcher.
    ///
    /// # Safety
    /// `p` points at a live `Pending` and `m` at a message librdkafka
    /// reports.
    unsafe fn fail(p: *const Pending, error: KafkaError, m: *const rd::rd_kafka_message_t) {
        let failed = Failed {
            error,
            message: owned(m),
        };
        (*p).failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(failed);
    }

    /// A message librdkafka did not take because the client has a fatal
    /// error: kept as failed, to be produced again by the batch's watcher
    /// (through the producer that replaces this one). The caller settles
    /// its count ([`Pending::report`]).
    pub fn fail_unsent(&self, error: KafkaError, message: OwnedMessage) {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Failed { error, message });
    }

    /// Waits until every message handed over has its report.
    pub async fn all_reported(&self) {
        while self.outstanding.load(Ordering::Acquire) != 0 {
            self.done.notified().await;
        }
    }

    /// The failed messages since the last call.
    pub fn take_failed(&self) -> Vec<Failed> {
        std::mem::take(&mut *self.failed.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A message's delivery opaque: its batch's [`Pending`], not owned (see
/// there). Reports served by the crate's own polling (`flush`, and the
/// purge when the producer is dropped) come to the context as this, which
/// hands them to [`Reported::settle`].
pub struct Reported(*const Pending);

// SAFETY: a plain pointer to a `Pending`, which is Send and Sync.
unsafe impl Send for Reported {}
unsafe impl Sync for Reported {}

impl IntoOpaque for Reported {
    fn into_ptr(self) -> *mut c_void {
        self.0 as *mut c_void
    }

    unsafe fn from_ptr(p: *mut c_void) -> Self {
        Reported(p as *const Pending)
    }
}

impl Reported {
    /// Takes one message's report.
    pub fn settle(self, result: &DeliveryResult<'_>) {
        // SAFETY: the message is outstanding, so its Pending is alive
        unsafe {
            if let Err((error, m)) = result {
                Pending::fail(self.0, error.clone(), m.ptr());
            }
            Pending::report_ptr(self.0, 1);
        }
    }
}

/// A copy of a message librdkafka holds.
///
/// # Safety
/// `m` points at a message of a delivery report being served on this
/// thread (its error field is written and restored).
unsafe fn owned(m: *const rd::rd_kafka_message_t) -> OwnedMessage {
    // librdkafka gives no timestamp for a message with an error, and a
    // message produced again must keep its event time: the error is set
    // aside for the call (the report is this thread's alone until served)
    let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    let writable = m as *mut rd::rd_kafka_message_t;
    let err = (*m).err;
    (*writable).err = rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR;
    let ms = rd::rd_kafka_message_timestamp(writable, &mut kind);
    (*writable).err = err;
    let timestamp = match kind {
        rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_CREATE_TIME => Timestamp::CreateTime(ms),
        rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME => {
            Timestamp::LogAppendTime(ms)
        }
        _ => Timestamp::NotAvailable,
    };
    let m = &*m;
    let bytes = |p: *const c_void, len: usize| {
        (!p.is_null()).then(|| std::slice::from_raw_parts(p as *const u8, len).to_vec())
    };
    let topic = CStr::from_ptr(rd::rd_kafka_topic_name(m.rkt))
        .to_string_lossy()
        .into_owned();
    let mut native: *mut rd::rd_kafka_headers_t = std::ptr::null_mut();
    let headers = (rd::rd_kafka_message_headers(m, &mut native)
        == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR)
        .then(|| {
            let mut out = OwnedHeaders::new();
            let mut i = 0;
            loop {
                let (mut name, mut value, mut size) = (std::ptr::null(), std::ptr::null(), 0);
                if rd::rd_kafka_header_get_all(native, i, &mut name, &mut value, &mut size)
                    != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
                {
                    break out;
                }
                let key = CStr::from_ptr(name).to_string_lossy();
                let value = bytes(value, size);
                out = out.insert(Header {
                    key: &key,
                    value: value.as_deref(),
                });
                i += 1;
            }
        });
    OwnedMessage::new(
        bytes(m.payload, m.len),
        bytes(m.key, m.key_len),
        topic,
        timestamp,
        m.partition,
        m.offset,
        headers,
    )
}

/// A librdkafka producer, the eventfd its queue of reports signals, and
/// the topic handles made for it.
pub struct Producer<C: ProducerContext<DeliveryOpaque = Reported> + 'static> {
    /// Declared before `client`: every handle is destroyed before the
    /// client it belongs to.
    topics: Mutex<HashMap<String, Arc<Topic>>>,
    /// Topic handles made so far (a counter for tests).
    made: AtomicUsize,
    /// The client's main queue: delivery reports, errors, statistics.
    queue: Queue,
    /// Written by librdkafka when `queue` gets an event while empty.
    events: OwnedFd,
    client: BaseProducer<C>,
    /// Declared after `client`: the bytes of batches given up while
    /// librdkafka may still hold messages that point into them (kept
    /// payloads, [`Producer::retain`]), freed once the client is destroyed.
    retained: Mutex<Vec<bytes::Bytes>>,
}

/// A reference to a client's main queue.
struct Queue(*mut rd::rd_kafka_queue_t);

// SAFETY: librdkafka's queues may be used from any thread.
unsafe impl Send for Queue {}
unsafe impl Sync for Queue {}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: our reference from rd_kafka_queue_get_main; the fd is no
        // longer written once the event trigger is off.
        unsafe {
            rd::rd_kafka_queue_io_event_enable(self.0, -1, std::ptr::null(), 0);
            rd::rd_kafka_queue_destroy(self.0);
        }
    }
}

impl<C: ProducerContext<DeliveryOpaque = Reported> + 'static> Producer<C> {
    pub fn new(client: BaseProducer<C>) -> Result<Self, String> {
        // SAFETY: eventfd(2) with flags only; the fd is owned below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "cannot make the Kafka sink's eventfd: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: a new fd nobody else owns.
        let events = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a live client; `ONE` is static, and the fd outlives the
        // trigger (`Queue` is dropped before `events`).
        let queue = unsafe {
            let q = rd::rd_kafka_queue_get_main(client.client().native_ptr());
            rd::rd_kafka_queue_io_event_enable(
                q,
                events.as_raw_fd(),
                &ONE as *const u64 as *const c_void,
                std::mem::size_of::<u64>(),
            );
            Queue(q)
        };
        Ok(Producer {
            topics: Mutex::new(HashMap::new()),
            made: AtomicUsize::new(0),
            queue,
            events,
            client,
            retained: Mutex::new(Vec::new()),
        })
    }

    /// The fd that becomes readable when the client's queue gets an event
    /// while empty: await it, [`Producer::clear_events`], then
    /// [`Producer::serve_reports`].
    pub fn events(&self) -> RawFd {
        self.events.as_raw_fd()
    }

    /// Resets the events fd.
    pub fn clear_events(&self) {
        let mut n = 0u64;
        // SAFETY: an 8-byte read into `n` from our eventfd (non-blocking:
        // EAGAIN when already reset).
        let _ = unsafe {
            libc::read(
                self.events.as_raw_fd(),
                &mut n as *mut u64 as *mut c_void,
                std::mem::size_of::<u64>(),
            )
        };
    }

    /// Serves every delivery report, error, statistics and log event
    /// waiting on the client's queue, without blocking.
    pub fn serve_reports(&self) {
        loop {
            // SAFETY: a live queue; the event is destroyed after use.
            let event = unsafe { rd::rd_kafka_queue_poll(self.queue.0, 0) };
            if event.is_null() {
                return;
            }
            let context = self.client.context();
            // SAFETY: a live event of this client's main queue.
            unsafe {
                match rd::rd_kafka_event_type(event) {
                    rd::RD_KAFKA_EVENT_DR => settle_reports(event),
                    rd::RD_KAFKA_EVENT_STATS => {
                        let json = CStr::from_ptr(rd::rd_kafka_event_stats(event));
                        context.stats_raw(json.to_bytes());
                    }
                    rd::RD_KAFKA_EVENT_ERROR => {
                        let error = KafkaError::Global(rd::rd_kafka_event_error(event).into());
                        let reason = CStr::from_ptr(rd::rd_kafka_event_error_string(event));
                        context.error(error, reason.to_string_lossy().trim());
                    }
                    rd::RD_KAFKA_EVENT_LOG => {
                        let mut fac = std::ptr::null();
                        let mut text = std::ptr::null();
                        let mut level = 0;
                        if rd::rd_kafka_event_log(event, &mut fac, &mut text, &mut level) == 0 {
                            context.log(
                                log_level(level),
                                &CStr::from_ptr(fac).to_string_lossy(),
                                &CStr::from_ptr(text).to_string_lossy(),
                            );
                        }
                    }
                    _ => {}
                }
                rd::rd_kafka_event_destroy(event);
            }
        }
    }

    pub fn client(&self) -> &BaseProducer<C> {
        &self.client
    }

    /// Sends the messages handed over with [`Outgoing::expedite`] so far
    /// without waiting for `linger.ms`, for a batch whose client waits for
    /// its acknowledgement: it wakes only the brokers that lead their
    /// partitions, at most once until they have served it, and other
    /// partitions' messages linger as usual.
    /// `rd_kafka_producer_expedite` is this project's change to librdkafka
    /// (vendor/rdkafka-sys/PATCHES.md): `flush` would do it only while it
    /// blocks, and a linger of 0 for every message sends small requests.
    pub fn expedite(&self) {
        // SAFETY: a live producer client
        unsafe { rd::rd_kafka_producer_expedite(self.client.client().native_ptr()) }
    }

    /// librdkafka's fatal error on this client, with its reason, if it has
    /// one: every produce call then fails, and the client must be replaced.
    pub fn fatal_error(&self) -> Option<(RDKafkaErrorCode, String)> {
        self.client.client().fatal_error()
    }

    /// Messages librdkafka holds, and events not served yet.
    pub fn outstanding(&self) -> i32 {
        self.client.in_flight_count()
    }

    /// Fails every message librdkafka holds, queued or in flight: their
    /// reports come at the next [`Producer::serve_reports`].
    pub fn purge(&self) {
        self.client
            .purge(PurgeConfig::default().queue().inflight().non_blocking());
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

    /// Keeps `bytes` until the client is destroyed: a batch given up before
    /// all of its reports came may have kept payloads in librdkafka's
    /// queues ([`Producer::send`]).
    pub fn retain(&self, bytes: bytes::Bytes) {
        self.retained
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(bytes);
    }

    /// Hands `m` to librdkafka, which copies its key and headers, and its
    /// payload unless it is `kept`: librdkafka then reads the payload where
    /// it lies when it builds the produce request (and again for a retry),
    /// until the message's report is served, which saves a copy and an
    /// allocation's worth of memory per message. The message's report goes
    /// to `pending`, which must count it already ([`Pending::add`]); if
    /// librdkafka does not take it, the caller settles that count.
    ///
    /// # Safety
    ///
    /// If `m.kept`, the payload's bytes must stay valid and unchanged until
    /// the message's delivery report is served, or, for a batch given up
    /// before that, be passed to [`Producer::retain`].
    pub unsafe fn send(
        &self,
        topic: &Topic,
        m: &Outgoing<'_>,
        pending: &Arc<Pending>,
    ) -> Result<(), KafkaError> {
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
        let opaque_ptr = Reported(Arc::as_ptr(pending)).into_ptr();
        vus[0] = vu(
            V::RD_KAFKA_VTYPE_RKT,
            rd::rd_kafka_vu_s__bindgen_ty_1 { rkt: topic.ptr },
        );
        vus[1] = vu(
            V::RD_KAFKA_VTYPE_MSGFLAGS,
            rd::rd_kafka_vu_s__bindgen_ty_1 {
                i: if m.kept { 0 } else { rd::RD_KAFKA_MSG_F_COPY }
                    | if m.expedite {
                        rd::RD_KAFKA_MSG_F_EXPEDITE
                    } else {
                        0
                    },
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
        // that outlives the call (librdkafka copies key and headers into
        // the message, and the payload unless `kept`, which the caller
        // keeps until the report).
        let error = unsafe {
            rd::rd_kafka_produceva(self.client.client().native_ptr(), vus.as_ptr(), vus.len())
        };
        if error.is_null() {
            return Ok(());
        }
        // SAFETY: a non-NULL error is ours to read and destroy.
        let (code, fatal) = unsafe {
            let code = rd::rd_kafka_error_code(error);
            let fatal = rd::rd_kafka_error_is_fatal(error) != 0;
            rd::rd_kafka_error_destroy(error);
            (code, fatal)
        };
        if fatal {
            // the error carries the code of the original failure; what
            // matters here is that this client can produce no more
            return Err(KafkaError::MessageProduction(RDKafkaErrorCode::Fatal));
        }
        Err(KafkaError::MessageProduction(code.into()))
    }
}

/// librdkafka's syslog level as the `rdkafka` crate's.
fn log_level(level: c_int) -> RDKafkaLogLevel {
    match level {
        ..=0 => RDKafkaLogLevel::Emerg,
        1 => RDKafkaLogLevel::Alert,
        2 => RDKafkaLogLevel::Critical,
        3 => RDKafkaLogLevel::Error,
        4 => RDKafkaLogLevel::Warning,
        5 => RDKafkaLogLevel::Notice,
        6 => RDKafkaLogLevel::Info,
        _ => RDKafkaLogLevel::Debug,
    }
}

/// Settles the delivery reports of `event`.
///
/// # Safety
/// `event` is a live delivery-report event.
unsafe fn settle_reports(event: *mut rd::rd_kafka_event_t) {
    let mut run: (*const Pending, usize) = (std::ptr::null(), 0);
    loop {
        let m = rd::rd_kafka_event_message_next(event);
        if m.is_null() {
            break;
        }
        let p = (*m)._private as *const Pending;
        if (*m).err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            Pending::fail(p, KafkaError::MessageProduction((*m).err.into()), m);
        }
        if p != run.0 {
            if run.1 > 0 {
                Pending::report_ptr(run.0, run.1);
            }
            run = (p, 0);
        }
        run.1 += 1;
    }
    if run.1 > 0 {
        Pending::report_ptr(run.0, run.1);
    }
}

fn vu(vtype: rd::rd_kafka_vtype_t, u: rd::rd_kafka_vu_s__bindgen_ty_1) -> rd::rd_kafka_vu_t {
    rd::rd_kafka_vu_t { vtype, u }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::{DeliveryResult, Headers, Message};
    use rdkafka::mocking::MockCluster;
    use rdkafka::{ClientConfig, ClientContext, Offset, TopicPartitionList};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    /// Settles delivery reports served by the crate's own polling
    /// (`flush`), failing on an error.
    struct Count;
    impl ClientContext for Count {}
    impl ProducerContext for Count {
        type DeliveryOpaque = Reported;
        fn delivery(&self, r: &DeliveryResult<'_>, p: Reported) {
            assert!(r.is_ok(), "{r:?}");
            p.settle(r);
        }
    }

    /// A consumer of partition 0 of `topic`, from its start.
    pub(in crate::sinks::kafka) fn reader(brokers: &str, topic: &str) -> BaseConsumer {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("group.id", "produce-test")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Beginning)
            .unwrap();
        consumer.assign(&tpl).unwrap();
        consumer
    }

    #[test]
    fn messages_keep_key_timestamp_and_headers_and_each_topic_gets_one_handle() {
        let cluster = MockCluster::new(1).unwrap();
        let brokers = cluster.bootstrap_servers();
        for t in ["a", "b"] {
            cluster.create_topic(t, 1, 1).unwrap();
        }
        let client: BaseProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("linger.ms", "0")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client).unwrap();
        let pending = Arc::new(Pending::default());
        pending.add(100);
        let (tag, time) = (c"tag", c"time");
        for i in 0..100 {
            let topic = producer.topic(if i % 2 == 0 { "a" } else { "b" }).unwrap();
            let payload = format!("record {i}");
            let key = format!("key {i}");
            let headers = [(tag, &b"app.web"[..]), (time, payload.as_bytes())];
            let m = Outgoing {
                payload: payload.as_bytes(),
                kept: false,
                expedite: false,
                key: (i % 3 != 0).then_some(key.as_bytes()),
                timestamp: 1_700_000_000_000 + i,
                headers: &headers[..(i % 3) as usize],
            };
            // SAFETY: nothing kept
            unsafe { producer.send(&topic, &m, &pending) }.unwrap();
        }
        assert_eq!(producer.topics_made(), 2, "one handle per topic");
        producer.client().flush(Duration::from_secs(10)).unwrap();
        assert_eq!(pending.outstanding.load(Ordering::SeqCst), 0);
        assert_eq!(
            Arc::strong_count(&pending),
            1,
            "the messages' reference is given back"
        );
        // what landed in topic "b": the odd messages, in order
        let consumer = reader(&brokers, "b");
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

    /// Records where each delivered message's payload lies, and what it
    /// holds.
    #[derive(Default)]
    struct Payloads(Mutex<Vec<(usize, Vec<u8>)>>);
    impl ClientContext for Payloads {}
    impl ProducerContext for Payloads {
        type DeliveryOpaque = Reported;
        fn delivery(&self, r: &DeliveryResult<'_>, p: Reported) {
            let m = r.as_ref().expect("delivered");
            let payload = m.payload().unwrap_or_default();
            self.0
                .lock()
                .unwrap()
                .push((payload.as_ptr() as usize, payload.to_vec()));
            p.settle(r);
        }
    }

    #[test]
    fn kept_payloads_are_not_copied_and_arrive_whole() {
        let cluster = MockCluster::new(1).unwrap();
        let brokers = cluster.bootstrap_servers();
        cluster.create_topic("k", 1, 1).unwrap();
        let client: BaseProducer<Payloads> = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("linger.ms", "0")
            .create_with_context(Payloads::default())
            .unwrap();
        let producer = Producer::new(client).unwrap();
        let topic = producer.topic("k").unwrap();
        // one buffer, as a batch's records are: message i is "record i"
        let text: String = (0..20).map(|i| format!("record {i:02}")).collect();
        let batch = bytes::Bytes::from(text);
        let slice = |i: usize| &batch[i * 9..(i + 1) * 9];
        let pending = Arc::new(Pending::default());
        pending.add(20);
        for i in 0..20 {
            let m = Outgoing {
                payload: slice(i),
                kept: i % 2 == 0,
                expedite: false,
                key: None,
                timestamp: 1_700_000_000_000,
                headers: &[],
            };
            // SAFETY: `batch` outlives the flush below, which serves every
            // report
            unsafe { producer.send(&topic, &m, &pending) }.unwrap();
        }
        producer.client().flush(Duration::from_secs(10)).unwrap();
        assert_eq!(pending.outstanding.load(Ordering::SeqCst), 0);
        let reports = producer.client().context().0.lock().unwrap().clone();
        assert_eq!(reports.len(), 20);
        for (i, (at, payload)) in reports.iter().enumerate() {
            assert_eq!(payload.as_slice(), slice(i), "message {i}");
            let ours = slice(i).as_ptr() as usize;
            if i % 2 == 0 {
                assert_eq!(*at, ours, "kept message {i} points into the batch");
            } else {
                assert_ne!(*at, ours, "message {i} is librdkafka's copy");
            }
        }
        // and the broker holds them, in order
        let consumer = reader(&brokers, "k");
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut got = Vec::new();
        while got.len() < 20 && Instant::now() < deadline {
            if let Some(m) = consumer.poll(Duration::from_millis(200)) {
                got.push(m.unwrap().payload().unwrap_or_default().to_vec());
            }
        }
        let want: Vec<Vec<u8>> = (0..20).map(|i| slice(i).to_vec()).collect();
        assert_eq!(got, want);
    }

    /// CPU time so far of this process's threads named `name`.
    fn threads_cpu(name: &str) -> Duration {
        let mut ticks = 0u64;
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
            // after "(comm)": state is field 3, utime and stime 14 and 15
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map_or("", |(_, rest)| rest)
                .split_whitespace()
                .collect();
            ticks += fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        }
        // SAFETY: sysconf reads a constant
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        Duration::from_millis(ticks * 1000 / hz)
    }

    #[test]
    fn the_broker_thread_sleeps_while_its_request_is_in_flight() {
        // broker 3 leads the partition, so the client's thread for it is
        // "rdk:broker3", a name no other test of this binary gives one
        let cluster = MockCluster::new(3).unwrap();
        cluster.create_topic("slow", 1, 1).unwrap();
        cluster.partition_leader("slow", 0, Some(3)).unwrap();
        // every produce request stays in flight for 300 ms
        cluster
            .broker_round_trip_time(3, Duration::from_millis(300))
            .unwrap();
        let client: BaseProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", cluster.bootstrap_servers())
            .set("enable.idempotence", "true")
            .set("linger.ms", "5")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client).unwrap();
        let topic = producer.topic("slow").unwrap();
        let pending = Arc::new(Pending::default());
        let send = |n: usize| {
            pending.add(n);
            for _ in 0..n {
                let m = Outgoing {
                    payload: b"record",
                    kept: false,
                    expedite: false,
                    key: None,
                    timestamp: 1_700_000_000_000,
                    headers: &[],
                };
                // SAFETY: nothing kept
                unsafe { producer.send(&topic, &m, &pending) }.unwrap();
            }
        };
        // a steady trickle: whenever a request is out, messages older
        // than linger.ms wait behind it
        send(10);
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(700) {
            std::thread::sleep(Duration::from_millis(10));
            send(10);
            producer.serve_reports();
        }
        let (before, start) = (threads_cpu("rdk:broker3"), Instant::now());
        while start.elapsed() < Duration::from_millis(1500) {
            std::thread::sleep(Duration::from_millis(10));
            send(10);
            producer.serve_reports();
        }
        let spent = threads_cpu("rdk:broker3") - before;
        // librdkafka 2.12.1 as published spent 540 ms here, busy-polling;
        // with the fix in vendor/rdkafka-sys, less than a clock tick
        assert!(
            spent < Duration::from_millis(150),
            "the broker thread spent {spent:?} of CPU in 1.5 s of waiting for responses"
        );
        producer.client().flush(Duration::from_secs(10)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&pending) > 1 && Instant::now() < deadline {
            producer.serve_reports();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(Arc::strong_count(&pending), 1, "every message reported");
    }

    #[test]
    fn retained_bytes_are_freed_only_after_the_client() {
        struct Owner(Arc<std::sync::atomic::AtomicBool>, Vec<u8>);
        impl AsRef<[u8]> for Owner {
            fn as_ref(&self) -> &[u8] {
                &self.1
            }
        }
        impl Drop for Owner {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let freed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let bytes = bytes::Bytes::from_owner(Owner(Arc::clone(&freed), b"records".to_vec()));
        let client: BaseProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:1")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client).unwrap();
        producer.retain(bytes);
        assert!(!freed.load(Ordering::SeqCst), "held while the client lives");
        drop(producer);
        assert!(freed.load(Ordering::SeqCst), "freed with the producer");
    }

    #[test]
    fn reports_from_the_queue_settle_each_batch_and_keep_copies_of_failed_messages() {
        // no broker: every message fails once message.timeout.ms passes
        let client: BaseProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:1")
            .set("message.timeout.ms", "300")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client).unwrap();
        let topic = producer.topic("t").unwrap();
        let (a, b) = (Arc::new(Pending::default()), Arc::new(Pending::default()));
        a.add(3);
        b.add(2);
        for i in 0..5i64 {
            let payload = format!("record {i}");
            let headers = [(c"tag", &b"app.web"[..])];
            let m = Outgoing {
                payload: payload.as_bytes(),
                kept: false,
                expedite: false,
                key: Some(b"k"),
                timestamp: 1_700_000_000_000 + i,
                headers: &headers,
            };
            // interleaved, so one event holds runs of both batches;
            // SAFETY: nothing kept
            unsafe { producer.send(&topic, &m, if i % 2 == 0 { &a } else { &b }) }.unwrap();
        }
        let outstanding = |p: &Pending| p.outstanding.load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(20);
        while (outstanding(&a) > 0 || outstanding(&b) > 0) && Instant::now() < deadline {
            let mut fd = libc::pollfd {
                fd: producer.events(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, ours
            unsafe { libc::poll(&mut fd, 1, 100) };
            producer.clear_events();
            producer.serve_reports();
        }
        assert_eq!((outstanding(&a), outstanding(&b)), (0, 0));
        assert_eq!(
            Arc::strong_count(&a),
            1,
            "the messages' reference is given back"
        );
        assert_eq!(Arc::strong_count(&b), 1);
        let failed = a.take_failed();
        assert_eq!(failed.len(), 3);
        assert_eq!(b.take_failed().len(), 2);
        for (f, i) in failed.iter().zip([0, 2, 4]) {
            assert_eq!(
                f.error.rdkafka_error_code(),
                Some(RDKafkaErrorCode::MessageTimedOut)
            );
            let m = &f.message;
            assert_eq!(m.payload(), Some(format!("record {i}").as_bytes()));
            assert_eq!(m.key(), Some(&b"k"[..]));
            assert_eq!(m.topic(), "t");
            assert_eq!(m.timestamp().to_millis(), Some(1_700_000_000_000 + i));
            let h = m.headers().unwrap().get(0);
            assert_eq!((h.key, h.value), ("tag", Some(&b"app.web"[..])));
        }
    }

    #[test]
    fn a_topic_name_librdkafka_cannot_take_is_an_invalid_topic() {
        let client: BaseProducer<Count> = ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:1")
            .create_with_context(Count)
            .unwrap();
        let producer = Producer::new(client).unwrap();
        let e = producer.topic("a\0b").err().unwrap();
        assert_eq!(e.rdkafka_error_code(), Some(RDKafkaErrorCode::InvalidTopic));
    }
}
