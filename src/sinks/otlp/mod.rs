//! `type = "otlp"`: records exported as OpenTelemetry logs, acknowledged
//! to their sources only once the receiver took them. `protocol` says how:
//! - `http` (the default): OTLP/HTTP, protobuf, `POST {endpoint}/v1/logs`;
//! - `grpc`: OTLP/gRPC, a unary `LogsService/Export` call over HTTP/2 to
//!   `endpoint` (h2c with prior knowledge for `http://`, TLS with ALPN
//!   `h2` for `https://`), answered by a `grpc-status`.
//!
//! Both are the same request-based sink (gathering, concurrency, retries,
//! settling and the client are the `http` sink's); they differ in the
//! body's framing and the reading of the answer.
//!
//! - `config.rs`: the settings (with the shared request settings);
//! - `encode.rs`: records → log records grouped by resource;
//! - `grpc.rs`: a gRPC call's headers and body, and its answer's status.
//!
//! Each answer is a verdict, as the OTLP specification asks of a client:
//! - 2xx, or gRPC `OK`: delivered. Its `ExportLogsServiceResponse` may
//!   hold a `partial_success` with `rejected_log_records`: the receiver
//!   dropped those for good and a client must not send them again. It
//!   does not say which, so the request counts as delivered; the number
//!   is counted in `logferry_otlp_sink_rejected_records_total` and the
//!   receiver's `error_message` logged.
//! - over HTTP, `retry_statuses` (429, 502, 503, 504): sent again, after
//!   the receiver's `Retry-After` (at most `retry.max`) or the backoff.
//! - over gRPC, `UNAVAILABLE`, `CANCELLED`, `DEADLINE_EXCEEDED`,
//!   `ABORTED`, `OUT_OF_RANGE`, `DATA_LOSS`, and `RESOURCE_EXHAUSTED` when
//!   its status carries a `RetryInfo`: sent again after the `RetryInfo`'s
//!   delay (at most `retry.max`) or the backoff.
//! - any other answer: rejected, set aside with the status and the
//!   message of the `google.rpc.Status` in its body (HTTP) or of
//!   `grpc-message` (gRPC) (dead-lettered, or dropped and counted).
//! - no answer (a connection refused or broken, a TLS handshake failing,
//!   no answer within `request_timeout`): sent again after the backoff.

pub mod config;
pub mod encode;
pub mod grpc;

use std::rc::Rc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
use prost::Message as _;

use self::config::Protocol;
use self::encode::{Grouped, LogEncoder};
use self::grpc::Reply;
use super::http::config::{Compression, StatusPattern};
use super::http::gather::{self, Deliver, Gathering};
use super::http::{failed_verdict, send_until_settled, shown, Requests};
use super::settle::Settler;
use super::verdict::Verdict;
use crate::buffer::{Delivery, QueueReceiver};
use crate::event::EventTime;
use crate::http_client::Answer;
use crate::metrics::{Counter, Registry};
use crate::protocol::otlp::grpc::status::name as grpc_status_name;
use crate::protocol::otlp::status::Status;
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

pub use config::OtlpSinkConfig;

/// The `otlp` sink.
pub struct OtlpSink {
    name: String,
    protocol: Protocol,
    requests: Requests,
    /// `/v1/logs` under the endpoint's path, or gRPC's `Export` method.
    path: String,
    encoder: LogEncoder,
    compression: Compression,
    retried: Vec<StatusPattern>,
    /// Most bytes of a gRPC answer's message once uncompressed.
    max_response_bytes: usize,
    /// For the count of gRPC answers by status.
    registry: Registry,
    gathering: Gathering,
    settler: Settler,
    metrics: Metrics,
    /// Partial successes and unreadable answers, logged at most so often.
    answers_log: RateLimitedLog,
}

struct Metrics {
    /// Records a receiver answered 2xx but reported as rejected
    /// (`partial_success`).
    rejected: Counter,
    /// Successful answers (2xx, gRPC OK) without a readable
    /// `ExportLogsServiceResponse`.
    unreadable: Counter,
    /// Records that could not be read (rejected to their source).
    bad_records: Counter,
}

impl OtlpSink {
    pub fn new(
        name: &str,
        c: OtlpSinkConfig,
        settler: Settler,
        registry: &Registry,
    ) -> Result<OtlpSink, String> {
        c.validate()?;
        let (s, r) = (&c.sink, &c.requests());
        let base: http::Uri = s
            .endpoint
            .parse()
            .map_err(|e| format!("endpoint {:?}: {e}", s.endpoint))?;
        let mut headers = match s.protocol {
            Protocol::Http => http_headers(s.compression),
            Protocol::Grpc => grpc::headers(s.compression, r.request_timeout),
        };
        for (k, v) in &s.headers {
            let (k, v) = (
                HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("headers.{k}: {e}"))?,
                HeaderValue::from_str(v).map_err(|e| format!("headers: {e}"))?,
            );
            headers.insert(k, v);
        }
        let l = &[("component", name)];
        let connected = registry.gauge(
            crate::metrics::CONNECTED_METRIC,
            "Servers a sink is connected to now (0: it cannot deliver).",
            l,
        );
        // `/ready` reads it: set by each request, whether it got an answer
        let requests = Requests::new(name, base, r, headers, registry, Some(connected))?;
        Ok(OtlpSink {
            name: name.to_string(),
            protocol: s.protocol,
            requests,
            path: s.request_path(),
            encoder: LogEncoder::new(s),
            compression: s.compression,
            retried: s.retry_statuses.clone(),
            max_response_bytes: r.max_response_bytes,
            registry: registry.clone(),
            gathering: Gathering {
                max_records: r.batch_records,
                max_bytes: r.batch_bytes,
                linger: r.linger,
                concurrency: r.concurrency,
                drain_timeout: r.drain_timeout,
            },
            settler,
            metrics: Metrics {
                rejected: registry.counter(
                    "logferry_otlp_sink_rejected_records_total",
                    "Records an OTLP receiver took but reported rejected (partial_success); not sent again.",
                    l,
                ),
                unreadable: registry.counter(
                    "logferry_otlp_sink_unreadable_answers_total",
                    "Successful answers (2xx, gRPC OK) without a readable ExportLogsServiceResponse (counted delivered).",
                    l,
                ),
                bad_records: registry.counter(
                    "logferry_sink_http_bad_records_total",
                    "Records a request-based sink could not read (rejected to their source).",
                    l,
                ),
            },
            answers_log: RateLimitedLog::new(WARN_INTERVAL),
        })
    }

    /// Runs until the queue is closed and the requests in flight are done.
    pub async fn run(self, rx: QueueReceiver) {
        let g = self.gathering;
        gather::run(Rc::new(self), g, rx).await;
    }

    /// The body of `batches`; a batch whose records cannot be read is
    /// rejected alone.
    fn encode(&self, batches: Vec<Delivery>) -> (Bytes, Vec<Delivery>) {
        let now = EventTime::now();
        let observed = u64::from(now.secs) * 1_000_000_000 + u64::from(now.nanos);
        let mut grouped = Grouped::default();
        let mut kept = Vec::with_capacity(batches.len());
        for d in batches {
            match self.encoder.batch(d.batch(), observed, &mut grouped) {
                Ok(()) => kept.push(d),
                Err(e) => {
                    self.metrics.bad_records.add(d.batch().count as u64);
                    tracing::error!(sink = %self.name, error = %e, "cannot read a batch's records; rejected");
                    d.reject();
                }
            }
        }
        let body = self.encoder.request(grouped);
        let body = crate::sinks::http::encode::compress(self.compression, body);
        let body = match self.protocol {
            Protocol::Http => Bytes::from(body),
            Protocol::Grpc => grpc::body(&body, self.compression),
        };
        (body, kept)
    }

    /// The verdict for an answer to the `attempt`th try (from 1).
    fn judge(&self, answer: &Answer, attempt: u32) -> Verdict {
        match self.protocol {
            Protocol::Http => self.judge_http(answer, attempt),
            Protocol::Grpc => self.judge_grpc(answer, attempt),
        }
    }

    fn judge_http(&self, answer: &Answer, attempt: u32) -> Verdict {
        if answer.status.is_success() {
            self.read_success(answer, answer.complete.then_some(&answer.body[..]));
            return Verdict::Delivered;
        }
        failed_verdict(
            &self.settler,
            answer,
            attempt,
            &self.retried,
            error_message(answer),
        )
    }

    fn judge_grpc(&self, answer: &Answer, attempt: u32) -> Verdict {
        let reply = Reply::read(answer, self.max_response_bytes);
        self.registry
            .counter(
                "logferry_otlp_sink_grpc_answers_total",
                "gRPC calls answered, by grpc-status (its name).",
                &[
                    ("component", &self.name),
                    ("code", grpc_status_name(reply.code)),
                ],
            )
            .inc();
        let verdict = reply.verdict(self.settler.retry(), attempt);
        if verdict == Verdict::Delivered {
            self.read_success(answer, reply.response.as_deref());
        }
        verdict
    }

    /// Counts and logs the records a successful answer reports rejected;
    /// `message` is its `ExportLogsServiceResponse` (`None`: it could not
    /// be read whole).
    fn read_success(&self, answer: &Answer, message: Option<&[u8]>) {
        let response = match message.map(ExportLogsServiceResponse::decode) {
            Some(Ok(r)) => r,
            None | Some(Err(_)) => {
                self.metrics.unreadable.inc();
                warn_limited!(self.answers_log, "unreadable", sink = %self.name, status = %answer.status,
                    answer = %shown(answer), "cannot read the receiver's answer; its records count as delivered");
                return;
            }
        };
        let Some(partial) = response.partial_success else {
            return;
        };
        if partial.rejected_log_records > 0 {
            self.metrics
                .rejected
                .add(partial.rejected_log_records as u64);
            warn_limited!(self.answers_log, "partial_success", sink = %self.name,
                rejected = partial.rejected_log_records, error = %partial.error_message,
                "the receiver rejected records of a request (partial success); which is not said, so none is sent again");
        }
    }
}

/// The headers of every OTLP/HTTP request, besides `auth` and the
/// configured ones.
fn http_headers(compression: Compression) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-protobuf"),
    );
    if compression == Compression::Gzip {
        headers.insert(
            http::header::CONTENT_ENCODING,
            HeaderValue::from_static("gzip"),
        );
    }
    headers
}

/// The message of an error answer's `google.rpc.Status`, else its first
/// bytes as text.
fn error_message(answer: &Answer) -> String {
    match Status::decode(&answer.body[..]) {
        Ok(s) if answer.complete && !s.message.is_empty() => s.message,
        _ => shown(answer),
    }
}

impl Deliver for OtlpSink {
    async fn deliver(self: Rc<Self>, batches: Vec<Delivery>) {
        let (body, batches) = self.encode(batches);
        send_until_settled(
            &self.requests,
            &self.settler,
            (Method::POST, &self.path),
            body,
            batches,
            |answer, attempt| self.judge(answer, attempt),
        )
        .await;
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests;
