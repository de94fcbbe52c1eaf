//! `type = "opensearch"` (or `"elasticsearch"`): records indexed through
//! the `_bulk` API of OpenSearch or Elasticsearch 7/8.
//!
//! - `config.rs`: the settings;
//! - `bulk.rs`: records → action and document lines; answers → items.
//!
//! A bulk request is answered item by item, and a 200 may hold items that
//! failed. Every item of every answer is read:
//! - stored (2xx; with `create`, a 409 conflict on an id that is there:
//!   the record was sent before) counts as delivered, once;
//! - 429, 5xx and a node's rejected execution are sent again, alone, in
//!   the next attempt after the backoff;
//! - anything else (a mapping conflict, a document the node cannot read,
//!   an index name it refuses) is set aside alone, with the node's error
//!   type and reason: dead-lettered, or dropped and counted.
//!
//! A bulk answered as a whole with 408, 429 or 5xx, or not answered at
//! all, is sent again as a whole; any other whole answer sets its
//! documents aside with the status and the answer's first bytes. A batch
//! is acknowledged to its source once each of its documents is stored or
//! set aside. When `retry.max_attempts` runs out with documents still
//! failing, those are dead-lettered (kind `retries_exhausted`) if
//! `dead_letter` is set, else their batches are given back to their
//! sources, which send them again; the documents of those batches that
//! were stored are remembered ([`GivenBack`]) and skipped when they come
//! again, so only the ones not stored are sent again, never a stored one
//! twice (counted as `logferry_opensearch_items_total{result=
//! "stored_before"}`).
//!
//! Requests go to the `endpoints` in turn, skipping those whose last
//! request got no answer; a probe (`GET /`) asks those again every
//! `health_interval`, and `/ready` counts the nodes that answer.

pub mod bulk;
pub mod config;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};

use self::bulk::{BulkEncoder, Doc, ItemResult};
use super::http::config::{Compression, StatusPattern};
use super::http::gather::{self, Deliver, Gathering};
use super::http::{rejection, retry_wait, shown, Requests};
use super::settle::given_back::GivenBack;
use super::settle::{entry_at, SetAside, Settler, WAITED_RETRY_MAX};
use super::verdict::Rejection;
use crate::buffer::{Delivery, QueueReceiver};
use crate::http_client::{percent_encode, Answer};
use crate::metrics::{Counter, Gauge, Registry};

pub use config::OpenSearchSinkConfig;

/// Bytes of a bulk answer allowed per document of a full batch, at
/// least: an error item with its reason and cause takes 300 to 600.
pub const ANSWER_BYTES_PER_DOC: usize = 2048;

/// The `opensearch` sink.
pub struct OpenSearchSink {
    name: String,
    /// One per endpoint.
    nodes: Vec<Requests>,
    /// The endpoint the next request tries first.
    next: Cell<usize>,
    /// `/_bulk` under each endpoint's path, with the query.
    bulk_path: Vec<String>,
    /// `/` under each endpoint's path: the health probe.
    probe_path: Vec<String>,
    encoder: RefCell<BulkEncoder>,
    action: config::Action,
    compression: Compression,
    retried_statuses: Vec<StatusPattern>,
    health_interval: std::time::Duration,
    gathering: Gathering,
    settler: Settler,
    metrics: Metrics,
    /// Documents stored (or set aside) of batches given back to their
    /// sources: skipped once when they come again.
    given_back: RefCell<GivenBack>,
}

struct Metrics {
    registry: Registry,
    name: String,
    /// Nodes whose last exchange got an answer (`/ready`).
    connected: Gauge,
    indexed: Counter,
    /// Documents of a batch sent again that were stored before it was
    /// given back: not sent again.
    stored_before: Counter,
    retried: Counter,
    rejected: Counter,
    missing_fields: Counter,
    /// Records without their `id_key` field, indexed with an id the node
    /// chose (so a resend of them may be indexed twice).
    missing_ids: Counter,
    bad_records: Counter,
}

impl Metrics {
    fn new(r: &Registry, name: &str) -> Metrics {
        let l = &[("component", name)];
        let items = |result: &str| {
            r.counter(
                "logferry_opensearch_items_total",
                "Documents of bulk answers, by result: indexed, retried (sent again), rejected (set aside).",
                &[("component", name), ("result", result)],
            )
        };
        Metrics {
            registry: r.clone(),
            name: name.to_string(),
            connected: r.gauge(
                crate::metrics::CONNECTED_METRIC,
                "Servers a sink is connected to now (0: it cannot deliver).",
                l,
            ),
            indexed: items("indexed"),
            stored_before: items("stored_before"),
            retried: items("retried"),
            rejected: items("rejected"),
            missing_fields: r.counter(
                "logferry_opensearch_index_fields_missing_total",
                "Records whose index names a field they lack (`_` stood in).",
                l,
            ),
            missing_ids: r.counter(
                "logferry_opensearch_id_missing_total",
                "Records without their id_key field, indexed with an id the node chose.",
                l,
            ),
            bad_records: r.counter(
                "logferry_sink_http_bad_records_total",
                "Records a request-based sink could not read (rejected to their source).",
                l,
            ),
        }
    }

    /// A document set aside, by the node's error type.
    fn refused(&self, kind: &str) {
        self.rejected.inc();
        self.registry
            .counter(
                "logferry_opensearch_item_errors_total",
                "Documents the node refused for good, by its error type.",
                &[("component", &self.name), ("type", kind)],
            )
            .inc();
    }
}

/// The documents of one request still to be stored, and those set aside.
struct Pending {
    batches: Vec<Delivery>,
    /// Action and document lines of every document.
    lines: Bytes,
    /// Documents not yet stored nor set aside.
    docs: Vec<Doc>,
    /// Documents at first.
    total: usize,
    /// Most documents sent in one bulk: all, until an answer could not be
    /// read.
    window: usize,
    /// Per batch, its documents set aside.
    aside: Vec<Vec<SetAside>>,
    /// Per batch, the record number and key of each of its documents.
    keys: Vec<Vec<(usize, u128)>>,
}

impl OpenSearchSink {
    pub fn new(
        name: &str,
        c: OpenSearchSinkConfig,
        settler: Settler,
        registry: &Registry,
    ) -> Result<OpenSearchSink, String> {
        c.validate()?;
        let (s, r) = (&c.sink, &c.request);
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        if s.compression == Compression::Gzip {
            headers.insert(
                http::header::CONTENT_ENCODING,
                HeaderValue::from_static("gzip"),
            );
        }
        let mut query = "filter_path=errors,items.*.status,items.*.error".to_string();
        if let Some(p) = &s.pipeline {
            query.push_str("&pipeline=");
            query.push_str(&percent_encode(p));
        }
        // A bulk answer grows with its documents: every refused one gets
        // its error (type, reason, cause), a few hundred bytes. An answer
        // cut short cannot be read item by item, so its bulk would be sent
        // again and again; the limit therefore never stays below what a
        // full batch of refusals needs.
        let mut request = c.request.clone();
        request.max_response_bytes = request
            .max_response_bytes
            .max(request.batch_records.saturating_mul(ANSWER_BYTES_PER_DOC));
        let (mut nodes, mut bulk_path, mut probe_path) = (Vec::new(), Vec::new(), Vec::new());
        for e in &s.endpoints {
            let base: http::Uri = e.parse().map_err(|err| format!("endpoints: {e}: {err}"))?;
            let prefix = base.path().trim_end_matches('/').to_string();
            bulk_path.push(format!("{prefix}/_bulk?{query}"));
            probe_path.push(format!("{prefix}/"));
            nodes.push(Requests::new(
                name,
                base,
                &request,
                headers.clone(),
                registry,
                None,
            )?);
        }
        let metrics = Metrics::new(registry, name);
        metrics.connected.set(nodes.len() as u64);
        Ok(OpenSearchSink {
            name: name.to_string(),
            nodes,
            next: Cell::new(0),
            bulk_path,
            probe_path,
            encoder: RefCell::new(
                BulkEncoder::new(s)?
                    .keyed(settler.retry().max_attempts > 0 && !settler.has_dead_letter()),
            ),
            action: s.action,
            compression: s.compression,
            retried_statuses: s.retry_statuses.clone(),
            health_interval: s.health_interval,
            gathering: Gathering {
                max_records: r.batch_records,
                max_bytes: r.batch_bytes,
                linger: r.linger,
                concurrency: r.concurrency,
                drain_timeout: r.drain_timeout,
            },
            settler,
            metrics,
            given_back: RefCell::new(GivenBack::default()),
        })
    }

    /// Runs until the queue is closed and the requests in flight are done.
    pub async fn run(self, rx: QueueReceiver) {
        let g = self.gathering;
        let sink = Rc::new(self);
        let probe = {
            let sink = Rc::clone(&sink);
            async move { sink.probe().await }
        };
        tokio::select! {
            _ = gather::run(sink, g, rx) => {}
            _ = probe => {}
        }
    }

    /// Asks the nodes whose last exchange failed again, every
    /// `health_interval`, so `/ready` and the choice of node follow them.
    async fn probe(&self) {
        loop {
            tokio::time::sleep(self.health_interval).await;
            for (i, node) in self.nodes.iter().enumerate() {
                if !node.is_healthy() {
                    let _ = node
                        .send(Method::GET, &self.probe_path[i], Bytes::new())
                        .await;
                }
            }
            self.count_connected();
        }
    }

    fn count_connected(&self) {
        let up = self.nodes.iter().filter(|n| n.is_healthy()).count();
        self.metrics.connected.set(up as u64);
    }

    /// The node for the next request: the next in turn that answered last
    /// time, or the next in turn if none did.
    fn pick(&self) -> usize {
        let n = self.nodes.len();
        let start = self.next.get();
        self.next.set((start + 1) % n);
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.nodes[i].is_healthy())
            .unwrap_or(start % n)
    }

    /// The lines of every record of `batches`; a batch whose records
    /// cannot be read is rejected alone.
    fn encode(&self, batches: Vec<Delivery>) -> Pending {
        let mut enc = self.encoder.borrow_mut();
        let bytes: usize = batches.iter().map(|d| d.batch().byte_len()).sum();
        let mut lines = Vec::with_capacity(bytes * 2);
        let mut p = Pending {
            batches: Vec::with_capacity(batches.len()),
            lines: Bytes::new(),
            docs: Vec::new(),
            total: 0,
            window: usize::MAX,
            aside: Vec::new(),
            keys: Vec::new(),
        };
        let (missing_before, ids_before) = (enc.missing_fields, enc.missing_ids);
        for d in batches {
            let (mark, docs) = (lines.len(), p.docs.len());
            match enc.batch(p.batches.len(), d.batch(), &mut lines, &mut p.docs) {
                Ok(()) => {
                    p.batches.push(d);
                    p.aside.push(Vec::new());
                }
                Err(e) => {
                    lines.truncate(mark);
                    p.docs.truncate(docs);
                    self.metrics.bad_records.add(d.batch().count as u64);
                    tracing::error!(sink = %self.name, error = %e, "cannot read a batch's records; rejected");
                    d.reject();
                }
            }
        }
        self.metrics
            .missing_fields
            .add(enc.missing_fields - missing_before);
        self.metrics.missing_ids.add(enc.missing_ids - ids_before);
        p.lines = Bytes::from(lines);
        p.total = p.docs.len();
        if enc.keyed {
            p.keys = vec![Vec::new(); p.batches.len()];
            for d in &p.docs {
                p.keys[d.batch].push((d.record, d.key));
            }
        }
        self.skip_stored_before(&mut p);
        p
    }

    /// Leaves out the documents stored before their batch was given back
    /// (see [`GivenBack`]).
    fn skip_stored_before(&self, p: &mut Pending) {
        let mut given_back = self.given_back.borrow_mut();
        if given_back.is_empty() {
            return;
        }
        let now = std::time::Instant::now();
        let before = p.docs.len();
        p.docs.retain(|d| !given_back.take(d.key, now));
        self.metrics
            .stored_before
            .add((before - p.docs.len()) as u64);
    }

    /// The body of the first `n` documents still pending (without a copy
    /// when they are all the documents of the request).
    fn body(&self, p: &Pending, n: usize) -> Bytes {
        let all = n == p.total && p.docs.len() == p.total;
        if all && self.compression == Compression::None {
            return p.lines.clone();
        }
        let body = if all {
            p.lines.to_vec()
        } else {
            let mut b = Vec::with_capacity(p.lines.len());
            for d in &p.docs[..n] {
                b.extend_from_slice(&p.lines[d.lines.clone()]);
            }
            b
        };
        Bytes::from(crate::sinks::http::encode::compress(self.compression, body))
    }

    /// Sets every pending document aside for `reason`.
    fn set_all_aside(&self, p: &mut Pending, reason: &Rejection) {
        for doc in std::mem::take(&mut p.docs) {
            self.metrics.refused(reason.kind);
            let a = self.aside(p, &doc, reason.clone());
            p.aside[doc.batch].push(a);
        }
    }

    fn aside(&self, p: &Pending, doc: &Doc, reason: Rejection) -> SetAside {
        let batch = p.batches[doc.batch].batch();
        let lines = &p.lines[doc.lines.clone()];
        // the document line, after the action line
        let document = lines
            .iter()
            .position(|c| *c == b'\n')
            .map_or(lines, |i| &lines[i + 1..]);
        SetAside {
            reason,
            time: doc.time,
            payload: Bytes::copy_from_slice(document.strip_suffix(b"\n").unwrap_or(document)),
            entry: entry_at(batch, doc.record),
        }
    }

    /// Settles every batch whose documents are all stored or set aside;
    /// keeps the others.
    fn settle_done(&self, p: &mut Pending) {
        if !p.docs.is_empty() {
            return;
        }
        for (d, aside) in p.batches.drain(..).zip(p.aside.drain(..)) {
            self.settler.settle_partly(d, aside);
        }
    }

    /// Retries are used up with documents still failing: dead-lettered
    /// alone if there is a file, else their batches go back to their
    /// sources (the others are settled).
    fn give_up(&self, p: &mut Pending, attempt: u32) {
        let reason = Rejection {
            kind: "retries_exhausted",
            message: format!(
                "{attempt} attempts failed (retry.max_attempts = {}); the node's errors are logged above",
                self.settler.retry().max_attempts
            ),
        };
        if self.settler.has_dead_letter() {
            self.set_all_aside(p, &reason);
            return self.settle_done(p);
        }
        let failing: std::collections::BTreeSet<usize> = p.docs.iter().map(|d| d.batch).collect();
        // the documents of those batches done with are not sent again
        let pending: std::collections::HashSet<(usize, usize)> =
            p.docs.iter().map(|d| (d.batch, d.record)).collect();
        let now = std::time::Instant::now();
        let mut given_back = self.given_back.borrow_mut();
        for &i in &failing {
            for &(record, key) in p.keys.get(i).map_or(&[][..], Vec::as_slice) {
                if !pending.contains(&(i, record)) {
                    given_back.remember(key, now);
                }
            }
        }
        drop(given_back);
        p.docs.clear();
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

    /// Reads the items of a 2xx answer to the first `sent` pending
    /// documents: stored ones are done, refused ones set aside, the rest
    /// stay pending; returns how many of them are to be sent again. An
    /// answer that cannot be read leaves them all pending.
    fn read_items(&self, p: &mut Pending, answer: &Answer, sent: usize) -> Result<usize, String> {
        if !answer.complete {
            return Err(format!(
                "the bulk answer is larger than max_response_bytes ({} bytes read)",
                answer.body.len()
            ));
        }
        let results = bulk::read_answer(&answer.body, sent, self.action)?;
        let mut docs = std::mem::take(&mut p.docs);
        let unsent = docs.split_off(sent);
        let mut still = Vec::with_capacity(unsent.len());
        for (doc, result) in docs.into_iter().zip(results) {
            match result {
                ItemResult::Stored => self.metrics.indexed.inc(),
                ItemResult::Retry => {
                    self.metrics.retried.inc();
                    still.push(doc);
                }
                ItemResult::Refused { kind, reason } => {
                    self.metrics.refused(&kind);
                    let message = format!("{kind}: {reason}");
                    let a = self.aside(
                        p,
                        &doc,
                        Rejection {
                            kind: "document_refused",
                            message,
                        },
                    );
                    p.aside[doc.batch].push(a);
                }
            }
        }
        let again = still.len();
        still.extend(unsent);
        p.docs = still;
        Ok(again)
    }
}

impl Deliver for OpenSearchSink {
    async fn deliver(self: Rc<Self>, batches: Vec<Delivery>) {
        let mut p = self.encode(batches);
        // the lines are a copy of the records: they count in the memory
        // budget, as they do, until the request is settled
        let _charge = p
            .batches
            .first()
            .map(|d| d.batch().memory.charge_apart(p.lines.len()));
        // failed attempts so far
        let mut attempt = 0;
        loop {
            if p.docs.is_empty() {
                return self.settle_done(&mut p);
            }
            let node = self.pick();
            let sent = p.docs.len().min(p.window);
            let body = self.body(&p, sent);
            let answer = self.nodes[node]
                .send(Method::POST, &self.bulk_path[node], body.clone())
                .await;
            self.count_connected();
            attempt += 1;
            let wait = match answer {
                Err(_) => self.settler.retry().after(attempt),
                Ok(a) if a.status.is_success() => match self.read_items(&mut p, &a, sent) {
                    Ok(again) => {
                        self.settler.metrics().bytes.add(body.len() as u64);
                        self.settle_done(&mut p);
                        if again == 0 {
                            // progress: the documents not sent yet go now
                            attempt -= 1;
                            continue;
                        }
                        self.settler.retry().after(attempt)
                    }
                    Err(e) => {
                        // the node has the bulk, but what became of each
                        // document is unknown: sent again in halves, whose
                        // answers are smaller, down to one document
                        p.window = (sent / 2).max(1);
                        tracing::warn!(sink = %self.name, error = %e, documents = sent,
                            "cannot read the bulk answer; sending its documents again, at most {} per bulk", p.window);
                        self.settler.retry().after(attempt)
                    }
                },
                Ok(a)
                    if self
                        .retried_statuses
                        .iter()
                        .any(|s| s.matches(a.status.as_u16())) =>
                {
                    tracing::warn!(sink = %self.name, status = %a.status, answer = %shown(&a),
                        "the bulk request was refused for now; sending it again");
                    retry_wait(&self.settler, &a, attempt)
                }
                Ok(a) => {
                    let reason = rejection(&a, shown(&a));
                    let rest = p.docs.split_off(sent);
                    self.set_all_aside(&mut p, &reason);
                    p.docs = rest;
                    self.settle_done(&mut p);
                    attempt -= 1;
                    continue;
                }
            };
            if p.docs.is_empty() {
                return self.settle_done(&mut p);
            }
            if self.settler.retry().exhausted(attempt) {
                return self.give_up(&mut p, attempt);
            }
            self.settler.metrics().errors.inc();
            self.settler.failed();
            // a client waiting for these documents is answered in time
            let wait = if p.batches.iter().any(|d| d.batch().is_waited_on()) {
                wait.min(WAITED_RETRY_MAX)
            } else {
                wait
            };
            tokio::time::sleep(wait).await;
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}
