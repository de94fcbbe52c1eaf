//! `type = "loki"`: records pushed to Grafana Loki's push API
//! (`/loki/api/v1/push`), or any server that takes it (VictoriaLogs).
//!
//! - `config.rs`: the settings;
//! - `encode.rs`: records → entries of labelled streams → push bodies
//!   (protobuf + snappy, or JSON, gzip as an option).
//!
//! A push is answered as a whole. 2xx: its entries are delivered. 408,
//! 429, 5xx (`retry_statuses`) or no answer: sent again after the
//! backoff or the server's `Retry-After`. 400 (an entry "too old", "out of
//! order", a line too long…) or 413: Loki refuses the whole push for one
//! bad entry, so the push is sent again in halves, and those halves in
//! halves, down to single entries; every entry of a half the server takes
//! is delivered, and a single entry still refused is set aside alone (to
//! `dead_letter`, or dropped and counted) with the server's answer. Any
//! other answer (401, 403, 404…) sets its push's entries aside. A batch is
//! acknowledged to its source once each of its entries is delivered or
//! set aside. When `retry.max_attempts` runs out, the entries still
//! unsent are dead-lettered (kind `retries_exhausted`) if `dead_letter`
//! is set, else their batches go back to their sources, which send them
//! again whole; the entries of those batches that were delivered (or set
//! aside) are remembered ([`GivenBack`], by stream and line) and skipped
//! when they come again, so a delivered entry is not pushed twice
//! (counted as `logferry_loki_entries_total{result="delivered_before"}`).

pub mod config;
pub mod encode;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};

use self::encode::{Encoded, LokiEncoder};
use super::http::config::StatusPattern;
use super::http::gather::{self, Deliver, Gathering};
use super::http::{rejection, retry_wait, shown, Requests};
use super::settle::given_back::GivenBack;
use super::settle::{entry_at, SetAside, Settler, WAITED_RETRY_MAX};
use super::verdict::Rejection;
use crate::buffer::{Delivery, QueueReceiver};
use crate::metrics::{Counter, Registry};
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

pub use config::LokiSinkConfig;

/// The `loki` sink.
pub struct LokiSink {
    name: String,
    requests: Requests,
    /// The push API's path under the endpoint.
    path: String,
    encoder: RefCell<LokiEncoder>,
    retried: Vec<StatusPattern>,
    gathering: Gathering,
    settler: Settler,
    metrics: Metrics,
    /// Split pushes, rate-limited: a stream of refused entries would
    /// otherwise log every half.
    split_log: RateLimitedLog,
    /// The room of requests done (up to one per request in flight), for
    /// the next ones: fresh room of a few MiB per request costs more in
    /// page faults than writing the entries.
    spare: RefCell<Vec<Encoded>>,
    /// Entries delivered (or set aside) of batches given back to their
    /// sources: skipped once when they come again.
    given_back: RefCell<GivenBack>,
}

struct Metrics {
    /// Entries the server took.
    delivered: Counter,
    /// Entries refused alone (set aside).
    refused: Counter,
    /// Entries of a batch sent again that were delivered before it was
    /// given back: not pushed again.
    delivered_before: Counter,
    /// Pushes answered 400 or 413 and sent again in halves.
    splits: Counter,
    /// Records never encoded (unreadable frames).
    bad_records: Counter,
}

impl Metrics {
    fn new(r: &Registry, name: &str) -> Metrics {
        let entries = |result: &str| {
            r.counter(
                "logferry_loki_entries_total",
                "Entries of pushes, by result: delivered, refused (set aside alone after the push was split), delivered_before (of a batch sent again, delivered before it was given back: not pushed again).",
                &[("component", name), ("result", result)],
            )
        };
        Metrics {
            delivered: entries("delivered"),
            refused: entries("refused"),
            delivered_before: entries("delivered_before"),
            splits: r.counter(
                "logferry_loki_split_pushes_total",
                "Pushes refused with 400 or 413 and sent again in halves, to find the entries refused.",
                &[("component", name)],
            ),
            bad_records: r.counter(
                "logferry_sink_http_bad_records_total",
                "Records a request-based sink could not read (rejected to their source).",
                &[("component", name)],
            ),
        }
    }
}

/// The entries of one request still to be delivered, and those set aside.
struct Pending {
    batches: Vec<Delivery>,
    enc: Encoded,
    /// Groups of entries (indices into `enc.entries`) still to push, each
    /// one push; the first is next.
    todo: VecDeque<Vec<usize>>,
    /// Per batch, its entries set aside.
    aside: Vec<Vec<SetAside>>,
}

impl LokiSink {
    pub fn new(
        name: &str,
        c: LokiSinkConfig,
        settler: Settler,
        registry: &Registry,
    ) -> Result<LokiSink, String> {
        c.validate()?;
        let (s, r) = (&c.sink, &c.request);
        let encoder = LokiEncoder::new(s)?;
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(encoder.content_type()),
        );
        if let Some(e) = encoder.content_encoding() {
            headers.insert(http::header::CONTENT_ENCODING, HeaderValue::from_static(e));
        }
        if let Some(t) = &s.tenant_id {
            headers.insert(
                HeaderName::from_static("x-scope-orgid"),
                HeaderValue::from_str(t).map_err(|_| "tenant_id: not a valid header value")?,
            );
        }
        let base: http::Uri = s
            .endpoint
            .parse()
            .map_err(|e| format!("endpoint {:?}: {e}", s.endpoint))?;
        let path = format!("{}{}", base.path().trim_end_matches('/'), s.path);
        let connected = registry.gauge(
            crate::metrics::CONNECTED_METRIC,
            "Servers a sink is connected to now (0: it cannot deliver).",
            &[("component", name)],
        );
        let requests = Requests::new(name, base, r, headers, registry, Some(connected))?;
        Ok(LokiSink {
            name: name.to_string(),
            requests,
            path,
            encoder: RefCell::new(encoder),
            retried: s.retry_statuses.clone(),
            gathering: Gathering {
                max_records: r.batch_records,
                max_bytes: r.batch_bytes,
                linger: r.linger,
                concurrency: r.concurrency,
                drain_timeout: r.drain_timeout,
            },
            settler,
            metrics: Metrics::new(registry, name),
            split_log: RateLimitedLog::new(WARN_INTERVAL),
            spare: RefCell::default(),
            given_back: RefCell::default(),
        })
    }

    /// Runs until the queue is closed and the requests in flight are done.
    pub async fn run(self, rx: QueueReceiver) {
        let g = self.gathering;
        gather::run(Rc::new(self), g, rx).await;
    }

    /// The entries of every record of `batches`; a batch whose records
    /// cannot be read is rejected alone.
    fn encode(&self, batches: Vec<Delivery>) -> Pending {
        let mut encoder = self.encoder.borrow_mut();
        let bytes: usize = batches.iter().map(|d| d.batch().byte_len()).sum();
        let mut p = Pending {
            batches: Vec::with_capacity(batches.len()),
            enc: self.spare.borrow_mut().pop().unwrap_or_default(),
            todo: VecDeque::new(),
            aside: Vec::new(),
        };
        let records: usize = batches.iter().map(|d| d.batch().count).sum();
        p.enc.buf.reserve(bytes * 2);
        p.enc.entries.reserve(records);
        for d in batches {
            let (mark, entries) = (p.enc.buf.len(), p.enc.entries.len());
            match encoder.batch(p.batches.len(), d.batch(), &mut p.enc) {
                Ok(()) => {
                    p.batches.push(d);
                    p.aside.push(Vec::new());
                }
                Err(e) => {
                    p.enc.buf.truncate(mark);
                    p.enc.entries.truncate(entries);
                    self.metrics.bad_records.add(d.batch().count as u64);
                    tracing::error!(sink = %self.name, error = %e, "cannot read a batch's records; rejected");
                    d.reject();
                }
            }
        }
        let mut given_back = self.given_back.borrow_mut();
        let todo: Vec<usize> = if given_back.is_empty() {
            (0..p.enc.entries.len()).collect()
        } else {
            // the entries delivered before their batch was given back
            let now = std::time::Instant::now();
            let todo: Vec<usize> = (0..p.enc.entries.len())
                .filter(|&i| !given_back.take(entry_key(&p.enc, i), now))
                .collect();
            self.metrics
                .delivered_before
                .add((p.enc.entries.len() - todo.len()) as u64);
            todo
        };
        if !todo.is_empty() {
            p.todo.push_back(todo);
        }
        p
    }

    /// Sets the entries of `group` aside for `reason`.
    fn set_aside(&self, p: &mut Pending, group: &[usize], reason: &Rejection) {
        for &i in group {
            let e = &p.enc.entries[i];
            let a = SetAside {
                reason: reason.clone(),
                time: e.time,
                payload: Bytes::copy_from_slice(&p.enc.buf[e.line.clone()]),
                entry: entry_at(p.batches[e.batch].batch(), e.record),
            };
            p.aside[e.batch].push(a);
        }
        self.metrics.refused.add(group.len() as u64);
    }

    /// Settles every batch: each of its entries is delivered or set aside.
    fn settle_done(&self, p: &mut Pending) {
        for (d, aside) in p.batches.drain(..).zip(p.aside.drain(..)) {
            self.settler.settle_partly(d, aside);
        }
    }

    /// Retries are used up with entries unsent: dead-lettered alone if
    /// there is a file, else their batches go back to their sources (the
    /// others are settled).
    fn give_up(&self, p: &mut Pending, attempt: u32) {
        let reason = Rejection {
            kind: "retries_exhausted",
            message: format!(
                "{attempt} attempts failed (retry.max_attempts = {}); the server's answers are logged above",
                self.settler.retry().max_attempts
            ),
        };
        let unsent: Vec<usize> = p.todo.drain(..).flatten().collect();
        if self.settler.has_dead_letter() {
            self.set_aside(p, &unsent, &reason);
            return self.settle_done(p);
        }
        let failing: BTreeSet<usize> = unsent.iter().map(|&i| p.enc.entries[i].batch).collect();
        // the entries of those batches done with are not pushed again
        let unsent: std::collections::HashSet<usize> = unsent.into_iter().collect();
        let now = std::time::Instant::now();
        let mut given_back = self.given_back.borrow_mut();
        for (i, e) in p.enc.entries.iter().enumerate() {
            if failing.contains(&e.batch) && !unsent.contains(&i) {
                given_back.remember(entry_key(&p.enc, i), now);
            }
        }
        drop(given_back);
        let (mut back, mut done) = (Vec::new(), Vec::new());
        for (i, (d, aside)) in p.batches.drain(..).zip(p.aside.drain(..)).enumerate() {
            if failing.contains(&i) {
                back.push(d);
            } else {
                done.push((d, aside));
            }
        }
        for (d, aside) in done {
            self.settler.settle_partly(d, aside);
        }
        self.settler.give_up(back, &reason);
    }

    /// Whether an answer with `status` may be about some entries only, so
    /// that halves of the push may be taken.
    fn splits(status: http::StatusCode) -> bool {
        matches!(status.as_u16(), 400 | 413)
    }
}

/// Entry `i` of `enc` by its stream and line, not its time (a batch sent
/// again by an HTTP client or read again from a file has a new one): how
/// [`GivenBack`] knows it when it comes again.
fn entry_key(enc: &Encoded, i: usize) -> u128 {
    let e = &enc.entries[i];
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(enc.streams[e.stream].text.as_bytes());
    h.update(&[0]);
    h.update(&enc.buf[e.line.clone()]);
    h.digest128()
}

impl Deliver for LokiSink {
    async fn deliver(self: Rc<Self>, batches: Vec<Delivery>) {
        let mut p = self.encode(batches);
        // the entries are a copy of the records: they count in the memory
        // budget, as the records do, until the request is settled
        let _charge = p
            .batches
            .first()
            .map(|d| d.batch().memory.charge_apart(p.enc.buf.len()));
        // failed attempts in a row
        let mut attempt = 0;
        while let Some(group) = p.todo.pop_front() {
            let body = Bytes::from(self.encoder.borrow().body(&p.enc, &group));
            let answer = self
                .requests
                .send(Method::POST, &self.path, body.clone())
                .await;
            let wait = match answer {
                Err(_) => self.settler.retry().after(attempt + 1),
                Ok(a) if a.status.is_success() => {
                    self.settler.metrics().bytes.add(body.len() as u64);
                    self.metrics.delivered.add(group.len() as u64);
                    attempt = 0;
                    continue;
                }
                Ok(a) if self.retried.iter().any(|s| s.matches(a.status.as_u16())) => {
                    tracing::warn!(sink = %self.name, status = %a.status, answer = %shown(&a),
                        entries = group.len(), "the push was refused for now; sending it again");
                    retry_wait(&self.settler, &a, attempt + 1)
                }
                Ok(a) if Self::splits(a.status) && group.len() > 1 => {
                    self.metrics.splits.inc();
                    warn_limited!(self.split_log, "split", sink = %self.name, status = %a.status,
                        answer = %shown(&a), entries = group.len(),
                        "the push was refused; sending it again in halves to set aside only the entries refused");
                    let mut first = group;
                    let second = first.split_off(first.len() / 2);
                    p.todo.push_front(second);
                    p.todo.push_front(first);
                    continue;
                }
                Ok(a) => {
                    let reason = rejection(&a, shown(&a));
                    self.set_aside(&mut p, &group, &reason);
                    continue;
                }
            };
            attempt += 1;
            p.todo.push_front(group);
            if self.settler.retry().exhausted(attempt) {
                return self.give_up(&mut p, attempt);
            }
            self.settler.metrics().errors.inc();
            self.settler.failed();
            // a client waiting for these entries is answered in time
            let wait = if p.batches.iter().any(|d| d.batch().is_waited_on()) {
                wait.min(WAITED_RETRY_MAX)
            } else {
                wait
            };
            tokio::time::sleep(wait).await;
        }
        self.settle_done(&mut p);
        let mut spare = self.spare.borrow_mut();
        if spare.len() < self.gathering.concurrency {
            p.enc.clear();
            spare.push(p.enc);
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}
