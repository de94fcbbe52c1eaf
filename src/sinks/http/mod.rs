//! `type = "http"`: records in batches to an HTTP endpoint, acknowledged
//! to their sources only once the endpoint answered 2xx.
//!
//! - `config.rs`: the settings (those every request-based sink shares too);
//! - `encode.rs`: records → body (NDJSON, JSON, msgpack, text), compression;
//! - `gather.rs`: batches → requests (linger, size, concurrency), the stop.
//!
//! Each answer is a verdict: 2xx (and `delivered_statuses`) delivered;
//! `retry_statuses` (408, 429, 5xx) retried after the backoff or the
//! server's `Retry-After`; any other answer rejected for good, set aside
//! with its status and the first bytes of its body (dead-lettered, or
//! dropped and counted); a connection that fails, a TLS handshake that is
//! refused or an answer that does not come within `request_timeout` is
//! retried. Settlement is the shared [`Settler`]'s.

pub mod config;
pub mod encode;
pub mod gather;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request};
use http_body_util::Full;

use self::config::{HttpSinkConfig, StatusPattern};
use self::encode::Encoder;
use self::gather::{Deliver, Gathering};
use super::settle::{Settled, Settler};
use super::verdict::{Rejection, RetryConfig, Verdict};
use crate::buffer::{Delivery, QueueReceiver};
use crate::http_client::{self, Answer, Client, SendError};
use crate::metrics::{Counter, Gauge, Histogram, Registry};
use crate::telemetry::{RateLimitedLog, WARN_INTERVAL};
use crate::warn_limited;

pub use config::RequestConfig;

/// Longest start of an answer kept for the log and a rejection.
const ANSWER_SHOWN: usize = 200;

/// Requests to one endpoint, counted: what the `http` and `opensearch`
/// sinks share.
pub struct Requests {
    name: String,
    client: Client,
    /// Sent with every request: configured headers, auth, content type.
    headers: HeaderMap,
    registry: Registry,
    errors_log: RateLimitedLog,
    /// Whether the last exchange got an answer.
    healthy: AtomicBool,
    /// Set to 1 or 0 with `healthy`, when the sink has this one endpoint.
    connected: Option<Gauge>,
    latency: Histogram,
}

impl Requests {
    /// `headers`: those of every request, besides `auth`'s. `connected`:
    /// the sink's gauge of connected servers, when this is its only
    /// endpoint (a sink with several counts [`Requests::is_healthy`]).
    pub fn new(
        name: &str,
        base: http::Uri,
        c: &RequestConfig,
        mut headers: HeaderMap,
        registry: &Registry,
        connected: Option<Gauge>,
    ) -> Result<Requests, String> {
        if let Some(auth) = &c.auth {
            let value = HeaderValue::from_str(&auth.header()?)
                .map_err(|_| "auth: the credentials are not a valid header value".to_string())?;
            headers.insert(http::header::AUTHORIZATION, value);
        }
        let l = &[("component", name)];
        // ready until a request fails: nothing is known to be wrong
        if let Some(c) = &connected {
            c.set(1);
        }
        Ok(Requests {
            name: name.to_string(),
            client: Client::new(c.client(base))?,
            headers,
            registry: registry.clone(),
            errors_log: RateLimitedLog::new(WARN_INTERVAL),
            healthy: AtomicBool::new(true),
            connected,
            latency: registry.histogram(
                "logferry_sink_http_request_seconds",
                "Time from sending a request to its whole answer (a bulk request for opensearch).",
                l,
            ),
        })
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether the last exchange (a request or a probe) got an answer.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    fn set_healthy(&self, up: bool) {
        self.healthy.store(up, Ordering::Relaxed);
        if let Some(c) = &self.connected {
            c.set(u64::from(up));
        }
    }

    /// One exchange, counted by answer code or error kind.
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        body: Bytes,
    ) -> Result<Answer, SendError> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = path_and_query
            .parse()
            .unwrap_or_else(|_| "/".parse().expect("/"));
        *request.headers_mut() = self.headers.clone();
        let started = Instant::now();
        let answer = self.client.send(request).await;
        match &answer {
            Ok(a) => {
                self.latency.observe(started.elapsed().as_secs_f64());
                self.set_healthy(true);
                self.registry
                    .counter(
                        "logferry_sink_http_requests_total",
                        "Requests answered, by status code.",
                        &[("component", &self.name), ("code", a.status.as_str())],
                    )
                    .inc();
            }
            Err(e) => {
                self.set_healthy(false);
                self.registry
                    .counter(
                        "logferry_sink_http_errors_total",
                        "Requests that got no answer, by kind: connect, tls, timeout, broken.",
                        &[("component", &self.name), ("kind", e.kind())],
                    )
                    .inc();
                warn_limited!(self.errors_log, e.kind(), sink = %self.name,
                    endpoint = %self.client.base(), error = %e, "request failed; retrying");
            }
        }
        answer
    }
}

/// The start of an answer's body as text, for the log and a rejection.
pub fn shown(answer: &Answer) -> String {
    let b = &answer.body[..answer.body.len().min(ANSWER_SHOWN)];
    let mut text = String::from_utf8_lossy(b).trim_end().to_string();
    if answer.body.len() > ANSWER_SHOWN || !answer.complete {
        text.push('…');
    }
    text
}

/// The `http` sink.
pub struct HttpSink {
    name: String,
    requests: Requests,
    /// The URI with `${tag}` in it, split there (`None`: a fixed URI).
    uri: UriTemplate,
    method: Method,
    encoder: RefCell<Encoder>,
    delivered: Vec<StatusPattern>,
    retried: Vec<StatusPattern>,
    gathering: Gathering,
    settler: Settler,
    /// Records never encoded (unreadable frames): never seen in practice.
    bad_records: Counter,
}

/// `uri` with `${tag}` in it: the pieces around each.
#[derive(Debug, Clone)]
struct UriTemplate {
    /// Scheme and authority.
    base: http::Uri,
    /// Path and query, split at each `${tag}`.
    pieces: Vec<String>,
}

impl UriTemplate {
    fn parse(uri: &str) -> Result<UriTemplate, String> {
        let probe: http::Uri = uri
            .replace("${tag}", "t")
            .parse()
            .map_err(|e| format!("uri {uri:?}: {e}"))?;
        let origin = format!(
            "{}://{}",
            probe.scheme_str().unwrap_or("http"),
            probe.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let rest = &uri[origin.len().min(uri.len())..];
        if origin.contains("${tag}") || !uri.starts_with(&origin) {
            return Err(format!(
                "uri {uri:?}: ${{tag}} may appear in the path and query only"
            ));
        }
        let rest = if rest.is_empty() { "/" } else { rest };
        Ok(UriTemplate {
            base: origin.parse().map_err(|e| format!("uri {uri:?}: {e}"))?,
            pieces: rest.split("${tag}").map(str::to_string).collect(),
        })
    }

    fn per_tag(&self) -> bool {
        self.pieces.len() > 1
    }

    fn path(&self, tag: &str) -> String {
        let mut out = self.pieces[0].clone();
        for p in &self.pieces[1..] {
            // a tag is dotted words; anything else is percent-encoded
            for b in tag.bytes() {
                if b.is_ascii_alphanumeric() || b"._-~".contains(&b) {
                    out.push(b as char);
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            out.push_str(p);
        }
        out
    }
}

impl HttpSink {
    pub fn new(
        name: &str,
        c: HttpSinkConfig,
        settler: Settler,
        registry: &Registry,
    ) -> Result<HttpSink, String> {
        c.validate()?;
        let (s, r) = (&c.sink, &c.request);
        let uri = UriTemplate::parse(&s.uri)?;
        let encoder = Encoder::new(s)?;
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static(encoder.content_type()),
        );
        if let Some(e) = encoder.content_encoding() {
            headers.insert(http::header::CONTENT_ENCODING, HeaderValue::from_static(e));
        }
        for (k, v) in &s.headers {
            let (k, v) = (
                HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("headers.{k}: {e}"))?,
                HeaderValue::from_str(v).map_err(|e| format!("headers: {e}"))?,
            );
            headers.insert(k, v);
        }
        let connected = registry.gauge(
            crate::metrics::CONNECTED_METRIC,
            "Servers a sink is connected to now (0: it cannot deliver).",
            &[("component", name)],
        );
        let requests = Requests::new(
            name,
            uri.base.clone(),
            r,
            headers,
            registry,
            Some(connected),
        )?;
        Ok(HttpSink {
            name: name.to_string(),
            requests,
            uri,
            method: match s.method {
                config::Method::Post => Method::POST,
                config::Method::Put => Method::PUT,
            },
            encoder: RefCell::new(encoder),
            delivered: s.delivered_statuses.clone(),
            retried: s.retry_statuses.clone(),
            gathering: Gathering {
                max_records: r.batch_records,
                max_bytes: r.batch_bytes,
                linger: r.linger,
                concurrency: r.concurrency,
                drain_timeout: r.drain_timeout,
            },
            settler,
            bad_records: registry.counter(
                "logferry_sink_http_bad_records_total",
                "Records a request-based sink could not read (rejected to their source).",
                &[("component", name)],
            ),
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
        let mut enc = self.encoder.borrow_mut();
        let records = batches.iter().map(|d| d.batch().count).sum();
        let bytes = batches.iter().map(|d| d.batch().byte_len()).sum::<usize>();
        let mut out = Vec::with_capacity(bytes + bytes / 2);
        enc.begin(&mut out, records);
        let mut kept = Vec::with_capacity(batches.len());
        for d in batches {
            let mark = out.len();
            match enc.batch(d.batch(), &mut out, kept.is_empty()) {
                Ok(()) => kept.push(d),
                Err(e) => {
                    out.truncate(mark);
                    self.bad_records.add(d.batch().count as u64);
                    tracing::error!(sink = %self.name, error = %e, "cannot read a batch's records; rejected");
                    d.reject();
                }
            }
        }
        let n: usize = kept.iter().map(|d| d.batch().count).sum();
        // only a msgpack body announces its count: a text body may start
        // with any byte (Latin-1 "Ü" is 0xdc, a msgpack array header)
        if n != records && enc.announces_count() {
            // the msgpack array announced more records than it got
            let mut fixed = Vec::with_capacity(out.len());
            crate::protocol::msgpack::write::array_len(&mut fixed, n);
            let header = match out[0] {
                0xdc => 3,
                0xdd => 5,
                _ => 1,
            };
            fixed.extend_from_slice(&out[header..]);
            out = fixed;
        }
        (Bytes::from(enc.finish(out)), kept)
    }

    /// The verdict for an answer to the `attempt`th try (from 1).
    fn judge(&self, answer: &Answer, attempt: u32) -> Verdict {
        let code = answer.status.as_u16();
        if answer.status.is_success() || self.delivered.iter().any(|p| p.matches(code)) {
            return Verdict::Delivered;
        }
        failed_verdict(&self.settler, answer, attempt, &self.retried, shown(answer))
    }
}

/// The verdict for an answer that does not deliver: a retry when its
/// status is one of `retried` (after its `Retry-After`, see
/// [`retry_wait`]), else a rejection naming the status and `message` (what
/// the answer says).
pub fn failed_verdict(
    settler: &Settler,
    answer: &Answer,
    attempt: u32,
    retried: &[StatusPattern],
    message: String,
) -> Verdict {
    if retried.iter().any(|p| p.matches(answer.status.as_u16())) {
        return Verdict::Retry {
            after: retry_wait(settler, answer, attempt),
        };
    }
    Verdict::Rejected {
        reason: rejection(answer, message),
    }
}

/// Why records an answer refuses are set aside: `http_4xx` (or
/// `http_status` for another class), the status and `message`.
pub fn rejection(answer: &Answer, message: String) -> Rejection {
    Rejection {
        kind: if answer.status.is_client_error() {
            "http_4xx"
        } else {
            "http_status"
        },
        message: format!("HTTP {}: {message}", answer.status),
    }
}

/// Sends `body`, the one request of `batches`, until they are settled:
/// an answer becomes a verdict through `judge` (given the attempt, from
/// 1), no answer a retry after the backoff. The body counts in the memory
/// budget meanwhile: it is a copy of the records.
pub async fn send_until_settled(
    requests: &Requests,
    settler: &Settler,
    (method, path): (Method, &str),
    body: Bytes,
    mut batches: Vec<Delivery>,
    judge: impl Fn(&Answer, u32) -> Verdict,
) {
    let Some(first) = batches.first() else {
        return;
    };
    let _charge = first.batch().memory.charge_apart(body.len());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let verdict = match requests.send(method.clone(), path, body.clone()).await {
            Ok(answer) => judge(&answer, attempt),
            Err(_) => settler.retry_verdict(attempt),
        };
        if verdict == Verdict::Delivered {
            settler.metrics().bytes.add(body.len() as u64);
        }
        match settler.settle(batches, attempt, verdict) {
            Settled::Retry { after, items } => {
                batches = items;
                tokio::time::sleep(after).await;
            }
            Settled::Accepted | Settled::Rejected { .. } => return,
        }
    }
}

/// How long to wait after an answer asking for a retry: its `Retry-After`
/// (at most `retry.max`), else the backoff of the `attempt`th failure.
pub fn retry_wait(settler: &Settler, answer: &Answer, attempt: u32) -> Duration {
    asked_wait(
        settler.retry(),
        http_client::retry_after(&answer.headers),
        attempt,
    )
}

/// The wait a receiver `asked` for (at most `retry.max`), else the
/// backoff of the `attempt`th failure.
pub fn asked_wait(retry: &RetryConfig, asked: Option<Duration>, attempt: u32) -> Duration {
    match asked {
        Some(asked) => asked.min(retry.max),
        None => retry.after(attempt),
    }
}

impl Deliver for HttpSink {
    async fn deliver(self: Rc<Self>, batches: Vec<Delivery>) {
        let (body, batches) = self.encode(batches);
        let Some(first) = batches.first() else {
            return;
        };
        let path = self.uri.path(&first.batch().tag);
        send_until_settled(
            &self.requests,
            &self.settler,
            (self.method.clone(), &path),
            body,
            batches,
            |answer, attempt| self.judge(answer, attempt),
        )
        .await;
    }

    fn joins(&self, first: &crate::event::Batch, next: &crate::event::Batch) -> bool {
        !self.uri.per_tag() || first.tag == next.tag
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_templates_put_the_tag_in_the_path_only() {
        let t = UriTemplate::parse("http://h:1/in/${tag}?x=${tag}").unwrap();
        assert!(t.per_tag());
        assert_eq!(t.base.to_string(), "http://h:1/");
        assert_eq!(t.path("app.web"), "/in/app.web?x=app.web");
        assert_eq!(t.path("a b/c"), "/in/a%20b%2Fc?x=a%20b%2Fc");
        let t = UriTemplate::parse("https://h").unwrap();
        assert!(!t.per_tag());
        assert_eq!(t.path("x"), "/");
        assert!(UriTemplate::parse("http://${tag}:1/").is_err());
    }
}
