//! `type = "splunk_hec"`: records to a Splunk HTTP Event Collector.
//!
//! - `config.rs`: the settings;
//! - `encode.rs`: records → events (or raw lines); answers → outcomes;
//! - `ack.rs`: indexer acknowledgement (channel, `ackId`s, polling).
//!
//! Batches are gathered into requests as by the `http` sink (several
//! events back to back in one body, gzip as an option). Each answer is
//! read by its status and HEC code:
//! - 2xx: delivered; with `acknowledgements = true`, only once the
//!   answer's `ackId` is acknowledged by the indexers (else the events are
//!   sent again after `ack_timeout`);
//! - 401/403 (codes 1–4: token disabled, missing or invalid): the token is
//!   wrong, not the events. The sink is not ready (`/ready` 503,
//!   `logferry_splunk_hec_token_refused` 1), the refusal is counted and
//!   logged, and the request is sent again after the backoff, for as long
//!   as it takes: nothing is acknowledged, dead-lettered or dropped, and
//!   `retry.max_attempts` does not count these attempts;
//! - 503 (code 9, server busy), other 5xx, 408, 429 and no answer: sent
//!   again after the backoff (or `Retry-After`), as `retry` says;
//! - 400 (code 6 invalid data format, 7 incorrect index, …) and any other
//!   answer: the request's events are set aside with the status and HEC's
//!   text: dead-lettered, or dropped and counted.

pub mod ack;
pub mod config;
pub mod encode;

use std::cell::RefCell;
use std::rc::Rc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};

use self::ack::{AckWait, IndexerAcks};
use self::config::{EndpointTarget, SplunkHecSettings};
use self::encode::{HecAnswer, Metadata, Outcome};
use super::http::config::{Compression, StatusPattern};
use super::http::gather::{self, Deliver, Gathering};
use super::http::{retry_wait, shown, Requests};
use super::settle::{Settled, Settler, WAITED_RETRY_MAX};
use super::verdict::Verdict;
use crate::buffer::{Delivery, QueueReceiver};
use crate::metrics::{Counter, Gauge, Registry};
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

pub use config::SplunkHecSinkConfig;

/// The `splunk_hec` sink.
pub struct SplunkHecSink {
    name: String,
    requests: Requests,
    /// The endpoint's path and the target's (event or raw).
    path: String,
    /// The sink's channel (`X-Splunk-Request-Channel`).
    channel: String,
    target: EndpointTarget,
    compression: Compression,
    metadata: RefCell<Metadata>,
    /// Pending `ackId`s, with `acknowledgements = true`.
    acks: Option<IndexerAcks>,
    retried: Vec<StatusPattern>,
    gathering: Gathering,
    settler: Settler,
    metrics: Metrics,
    /// The token refusals logged, at most one a [`WARN_INTERVAL`].
    refusals_log: RateLimitedLog,
}

struct Metrics {
    /// 1 while the last exchange got an answer that took the token.
    connected: Gauge,
    /// 1 while the collector refuses the token (`/ready` says so).
    token_refused: Gauge,
    token_refusals: Counter,
    /// Answers 2xx without an `ackId` although acknowledgement is on.
    no_ack_id: Counter,
    missing_fields: Counter,
    bad_records: Counter,
}

impl Metrics {
    fn new(r: &Registry, name: &str) -> Metrics {
        let l = &[("component", name)];
        Metrics {
            connected: r.gauge(
                crate::metrics::CONNECTED_METRIC,
                "Servers a sink is connected to now (0: it cannot deliver).",
                l,
            ),
            token_refused: r.gauge(
                "logferry_splunk_hec_token_refused",
                "1 while the collector refuses the splunk_hec sink's token (401/403).",
                l,
            ),
            token_refusals: r.counter(
                "logferry_splunk_hec_token_refusals_total",
                "Requests the collector refused for the token (401/403, HEC codes 1-4); sent again.",
                l,
            ),
            no_ack_id: r.counter(
                "logferry_splunk_hec_ack_ids_missing_total",
                "Answers without an ackId although acknowledgements = true (taken as indexed).",
                l,
            ),
            missing_fields: r.counter(
                "logferry_splunk_hec_metadata_fields_missing_total",
                "Records whose index, sourcetype, source or host names a field they lack (`_` stood in).",
                l,
            ),
            bad_records: r.counter(
                "logferry_sink_http_bad_records_total",
                "Records a request-based sink could not read (rejected to their source).",
                l,
            ),
        }
    }
}

impl SplunkHecSink {
    pub fn new(
        name: &str,
        c: SplunkHecSinkConfig,
        settler: Settler,
        registry: &Registry,
    ) -> Result<SplunkHecSink, String> {
        c.validate()?;
        let (s, r) = (&c.sink, &c.request);
        let base: http::Uri = s
            .endpoint
            .parse()
            .map_err(|e| format!("endpoint: {}: {e}", s.endpoint))?;
        let prefix = base.path().trim_end_matches('/').to_string();
        let channel = ack::new_channel();
        let headers = headers(s, &channel)?;
        let requests = Requests::new(name, base, r, headers, registry, None)?;
        let metrics = Metrics::new(registry, name);
        // ready until an exchange fails: nothing is known to be wrong
        metrics.connected.set(1);
        let acks = s.acknowledgements.then(|| {
            IndexerAcks::new(
                format!("{prefix}/services/collector/ack?channel={channel}"),
                s.ack_poll_interval,
                s.ack_timeout,
                registry,
                name,
            )
        });
        Ok(SplunkHecSink {
            name: name.to_string(),
            requests,
            path: format!("{prefix}{}", s.endpoint_target.path()),
            channel,
            target: s.endpoint_target,
            compression: s.compression,
            metadata: RefCell::new(Metadata::new(s)?),
            acks,
            retried: s.retry_statuses.clone(),
            gathering: Gathering {
                max_records: r.batch_records,
                max_bytes: r.batch_bytes,
                linger: r.linger,
                concurrency: r.concurrency,
                drain_timeout: r.drain_timeout,
            },
            settler,
            metrics,
            refusals_log: RateLimitedLog::new(WARN_INTERVAL),
        })
    }

    /// Runs until the queue is closed and the requests in flight are done.
    pub async fn run(self, rx: QueueReceiver) {
        let g = self.gathering;
        let sink = Rc::new(self);
        let poll = {
            let sink = Rc::clone(&sink);
            async move {
                match &sink.acks {
                    Some(acks) => acks.poll(&sink.requests).await,
                    None => std::future::pending().await,
                }
            }
        };
        tokio::select! {
            _ = gather::run(sink, g, rx) => {}
            _ = poll => {}
        }
    }

    /// The body and path of `batches`; a batch whose records cannot be
    /// read is rejected alone.
    fn encode(&self, batches: Vec<Delivery>) -> (Bytes, String, Vec<Delivery>) {
        let mut metadata = self.metadata.borrow_mut();
        let missing_before = metadata.missing_fields;
        let bytes: usize = batches.iter().map(|d| d.batch().byte_len()).sum();
        let mut out = Vec::with_capacity(bytes * 2);
        let mut kept = Vec::with_capacity(batches.len());
        let mut path = self.path.clone();
        for d in batches {
            let mark = out.len();
            let written = match self.target {
                EndpointTarget::Event => metadata.events(d.batch(), &mut out),
                EndpointTarget::Raw => encode::raw_lines(d.batch(), &mut out).map(|first| {
                    if kept.is_empty() {
                        path = format!(
                            "{}?channel={}{}",
                            self.path,
                            self.channel,
                            metadata.raw_query(d.batch(), first.unwrap_or_default())
                        );
                    }
                }),
            };
            match written {
                Ok(()) => kept.push(d),
                Err(e) => {
                    out.truncate(mark);
                    self.metrics.bad_records.add(d.batch().count as u64);
                    tracing::error!(sink = %self.name, error = %e, "cannot read a batch's records; rejected");
                    d.reject();
                }
            }
        }
        self.metrics
            .missing_fields
            .add(metadata.missing_fields - missing_before);
        let body = crate::sinks::http::encode::compress(self.compression, out);
        (Bytes::from(body), path, kept)
    }

    /// The collector refused the token: not ready until it takes it.
    fn token_refused(&self, why: &str) {
        self.metrics.token_refusals.inc();
        self.metrics.token_refused.set(1);
        self.metrics.connected.set(0);
        warn_limited!(self.refusals_log, "token", sink = %self.name, answer = %why,
            "the collector refuses the HEC token (check `token`); nothing is acknowledged, sending again");
    }

    /// What one answer (or none) means for the request's events: `None`
    /// when the token was refused (sent again, not counted as an attempt).
    async fn judge(
        &self,
        answer: Result<crate::http_client::Answer, crate::http_client::SendError>,
        attempt: u32,
    ) -> Option<Verdict> {
        let a = match answer {
            Ok(a) => a,
            Err(_) => {
                self.metrics.connected.set(0);
                return Some(self.settler.retry_verdict(attempt));
            }
        };
        let status = a.status.as_u16();
        let retried = self.retried.iter().any(|p| p.matches(status));
        let outcome = encode::outcome(status, &HecAnswer::read(&a.body), retried, &shown(&a));
        if !matches!(outcome, Outcome::TokenRefused(_)) {
            self.metrics.token_refused.set(0);
            self.metrics.connected.set(1);
        }
        Some(match outcome {
            Outcome::TokenRefused(why) => {
                self.token_refused(&why);
                return None;
            }
            Outcome::Taken { ack_id } => match (&self.acks, ack_id) {
                (Some(acks), Some(id)) => match acks.wait(id).await {
                    AckWait::Indexed => Verdict::Delivered,
                    AckWait::TimedOut => {
                        tracing::warn!(sink = %self.name, ack_id = id,
                            "the events were not acknowledged by the indexers within ack_timeout; sending them again");
                        self.settler.retry_verdict(attempt)
                    }
                },
                (Some(_), None) => {
                    self.metrics.no_ack_id.inc();
                    warn_limited!(self.refusals_log, "no_ack_id", sink = %self.name,
                        "the collector answered without an ackId: the token has no indexer acknowledgement; taken as indexed");
                    Verdict::Delivered
                }
                (None, _) => Verdict::Delivered,
            },
            Outcome::Retry => Verdict::Retry {
                after: retry_wait(&self.settler, &a, attempt),
            },
            Outcome::Refused(reason) => Verdict::Rejected { reason },
        })
    }
}

/// The headers of every request: content type and encoding, the token,
/// the channel.
fn headers(s: &SplunkHecSettings, channel: &str) -> Result<HeaderMap, String> {
    let mut h = HeaderMap::new();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(match s.endpoint_target {
            EndpointTarget::Event => "application/json",
            EndpointTarget::Raw => "text/plain",
        }),
    );
    if s.compression == Compression::Gzip {
        h.insert(
            http::header::CONTENT_ENCODING,
            HeaderValue::from_static("gzip"),
        );
    }
    let mut auth = HeaderValue::from_str(&format!("Splunk {}", s.token()?.expose()))
        .map_err(|_| "token: not a valid header value".to_string())?;
    auth.set_sensitive(true);
    h.insert(http::header::AUTHORIZATION, auth);
    h.insert(
        "x-splunk-request-channel",
        HeaderValue::from_str(channel).map_err(|e| format!("channel: {e}"))?,
    );
    Ok(h)
}

impl Deliver for SplunkHecSink {
    async fn deliver(self: Rc<Self>, batches: Vec<Delivery>) {
        let (body, path, mut batches) = self.encode(batches);
        let Some(first) = batches.first() else {
            return;
        };
        // the body is a copy of the records: it counts in the memory budget
        let _charge = first.batch().memory.charge_apart(body.len());
        // failed attempts so far, and token refusals (not attempts)
        let (mut attempt, mut refusals) = (0, 0);
        loop {
            let answer = self.requests.send(Method::POST, &path, body.clone()).await;
            let Some(verdict) = self.judge(answer, attempt + 1).await else {
                refusals += 1;
                self.settler.failed();
                let wait = self.settler.retry().after(refusals);
                // a client waiting for these records hears again soon
                let wait = if batches.iter().any(|d| d.batch().is_waited_on()) {
                    wait.min(WAITED_RETRY_MAX)
                } else {
                    wait
                };
                tokio::time::sleep(wait).await;
                continue;
            };
            attempt += 1;
            if verdict == Verdict::Delivered {
                self.settler.metrics().bytes.add(body.len() as u64);
            }
            match self.settler.settle(batches, attempt, verdict) {
                Settled::Retry { after, items } => {
                    batches = items;
                    tokio::time::sleep(after).await;
                }
                Settled::Accepted | Settled::Rejected { .. } => return,
            }
        }
    }

    fn joins(&self, first: &crate::event::Batch, next: &crate::event::Batch) -> bool {
        // a raw request has one set of metadata, made from its tag
        self.target == EndpointTarget::Event
            || !self.metadata.borrow().names_tag()
            || first.tag == next.tag
    }

    fn name(&self) -> &str {
        &self.name
    }
}
