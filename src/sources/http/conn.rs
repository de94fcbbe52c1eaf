//! One HTTP connection: hyper serves HTTP/1.1 with keep-alive, or HTTP/2
//! (several requests at once, each a stream); this file bounds the
//! connection (idle time, header and body size, streams) and turns each
//! request into one routed batch and one answer.
//!
//! A request is answered once its records are settled: with `ack =
//! "sinks"`, after every sink accepted them; with `ack = "received"`, once
//! they are queued. Routing waits while a sink queue is full, and while it
//! waits the connection reads nothing more, so backpressure reaches the
//! client; past `request_timeout` the client is told to retry (503 with
//! `Retry-After`).
//!
//! The `otlp` source is served here too (`Settings::otlp`): its requests
//! are `POST /v1/logs` with an OTLP `ExportLogsServiceRequest` (one batch
//! per tag its resources render), answered with an
//! `ExportLogsServiceResponse`; records a sink set aside for good are
//! reported in its `partial_success` instead of a 422. Its gRPC listener
//! (`Settings::grpc`) serves `LogsService/Export` over HTTP/2 only: the
//! body is one gRPC message, the answer a framed message and a
//! `grpc-status` trailer, an error a trailers-only answer (`answer`).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ACCEPT_ENCODING, ALLOW, CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH,
    CONTENT_TYPE, RETRY_AFTER,
};
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;

use super::answer::{self, Answer};
use super::decode::{self, BodyKind};
use super::encoding::{self, ContentEncoding, InflateError};
use super::{AckMode, HttpMetrics, HttpSourceConfig};
use crate::ack::{AckHandle, AckOutcome};
use crate::component::Shutdown;
use crate::event::{Batch, EventTime, Records, Tag};
use crate::memory::MemoryCharge;
use crate::net::{accept_tls, Activity, Stream};
use crate::protocol::otlp;
use crate::router::Router;
use crate::wake::Inline;

/// What `Retry-After` (and an OTLP answer's `RetryInfo`) tells a client
/// that should send again.
const RETRY_AFTER_SECS: &str = "1";
const RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// hyper's default read buffer; raised when `max_header_bytes` is larger.
const DEFAULT_BUF_BYTES: usize = 8192 + 4096 * 100;

/// HTTP/2 flow control: the bytes of a request body a client may send
/// before the request reads them, and of all bodies of one connection.
/// They bound what a connection holds that the memory budget has not
/// been charged for yet.
const H2_STREAM_WINDOW: u32 = 256 * 1024;
const H2_CONNECTION_WINDOW: u32 = 1024 * 1024;

/// At shutdown, how much longer than `request_timeout` a connection may
/// take to finish the request it is serving and send the answer.
const SHUTDOWN_SLACK: Duration = Duration::from_secs(1);

/// Settings shared by every connection of one source: the HTTP protocol
/// of the shared listener (see `super`).
pub struct Settings {
    /// The source's table.
    pub config: HttpSourceConfig,
    /// The handshake of the `tls` table, if there is one.
    pub tls: Option<TlsAcceptor>,
    /// Charged with each request's records until every sink settled them.
    pub memory: crate::memory::MemoryBudget,
    /// The source's counters.
    pub metrics: Arc<super::HttpMetrics>,
    /// Serve OTLP/HTTP (the `otlp` source) with this `tag` template,
    /// instead of `POST /<tag>`.
    pub otlp: Option<otlp::TagTemplate>,
    /// With `otlp`: serve OTLP/gRPC (HTTP/2 only) instead of OTLP/HTTP.
    pub grpc: bool,
}

pub(super) struct Connection {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub settings: Arc<Settings>,
    pub metrics: Arc<HttpMetrics>,
    pub router: Router,
    pub shutdown: Shutdown,
    /// Marks the TLS handshake idle (see `crate::net::accept_tls`).
    pub activity: Arc<Activity>,
}

impl Connection {
    pub async fn serve(self) {
        let Connection {
            stream,
            peer,
            settings,
            metrics,
            router,
            mut shutdown,
            activity,
        } = self;
        let _ = stream.set_nodelay(true);
        let config = &settings.config;
        let tls = settings.tls.as_ref();
        let stream = match accept_tls(stream, tls, config.idle_timeout, &activity).await {
            Ok(stream) => stream,
            Err(e) => return metrics.error(peer, "tls", &e.to_string()),
        };
        let busy = Arc::new(Busy::new());
        let held = Arc::new(std::sync::Mutex::new(MemoryCharge::none()));
        let probe = settings.tls.is_none();
        let mut io = Watched::new(stream, config.idle_timeout, busy.clone()).charging(
            settings.memory.clone(),
            metrics.source.clone(),
            held.clone(),
            probe,
        );
        let handler = Arc::new(Handler {
            settings: settings.clone(),
            metrics: metrics.clone(),
            router: tokio::sync::Mutex::new(Some(router)),
            shutdown: shutdown.clone(),
            peer,
            busy,
            held,
            deadline: RequestDeadline::new(Instant::now() + config.request_timeout),
            waiting: AtomicUsize::new(0),
            last_tag: std::sync::Mutex::new(None),
        });
        let service = {
            let handler = handler.clone();
            service_fn(move |req| {
                let handler = handler.clone();
                async move { Ok::<_, Infallible>(handler.handle(req).await) }
            })
        };
        let h2 = if config.http2 {
            let h2 = tokio::select! {
                h2 = io.starts_with_h2_preface() => h2,
                _ = shutdown.wait() => return,
            };
            match h2 {
                Ok(true) => {
                    // each stream's body is charged as its request reads it
                    // (see `read_body`); what the connection holds before
                    // that is bounded by HTTP/2 flow control
                    io.charge = None;
                    drop(std::mem::take(&mut *lock(&handler.held)));
                    true
                }
                Ok(false) => false,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return metrics.error(
                        peer,
                        "idle_timeout",
                        &format!("connection idle too long: {e}"),
                    )
                }
                Err(e) => return metrics.error(peer, "io", &e.to_string()),
            }
        } else {
            false
        };
        if settings.grpc && !h2 {
            let reason = "gRPC is served over HTTP/2 only (prior knowledge, or ALPN h2 with TLS)";
            return metrics.error(peer, "not_http2", reason);
        }
        let io = TokioIo::new(io);
        let result = if h2 {
            let conn = http2::Builder::new(TokioExecutor::new())
                .max_concurrent_streams(config.max_streams)
                .initial_stream_window_size(H2_STREAM_WINDOW)
                .initial_connection_window_size(H2_CONNECTION_WINDOW)
                .max_header_list_size(u32::try_from(config.max_header_bytes).unwrap_or(u32::MAX))
                .serve_connection(io, service);
            drive(conn, &handler, &mut shutdown, config.request_timeout).await
        } else {
            let conn = http1::Builder::new()
                .keep_alive(true)
                // `Watched` bounds the time from the end of one request to
                // the end of the next one's headers with the connection's
                // one idle timer: hyper's own header timer is allocated,
                // registered and cancelled for every request
                .header_read_timeout(None)
                .max_header_size(config.max_header_bytes)
                .max_buf_size(config.max_header_bytes.max(DEFAULT_BUF_BYTES))
                .serve_connection(io, service);
            // hyper's connection wakes itself for each request's body
            Inline::new(drive(conn, &handler, &mut shutdown, config.request_timeout)).await
        };
        if let Err(e) = result {
            let (kind, reason) = classify(&e);
            metrics.error(peer, kind, &reason);
        }
    }
}

/// An HTTP/1.1 or HTTP/2 connection of hyper's.
trait Served: Future<Output = Result<(), hyper::Error>> {
    /// Reads no new request; the ones being served finish.
    fn graceful_shutdown(self: Pin<&mut Self>);
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<I, S, B> Served for http1::Connection<I, S>
where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: hyper::body::Body + 'static,
    B::Error: Into<BoxError>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http1::Connection::graceful_shutdown(self)
    }
}

impl<I, S, E, B> Served for http2::Connection<I, S, E>
where
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: hyper::body::Body + 'static,
    B::Error: Into<BoxError>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        http2::Connection::graceful_shutdown(self)
    }
}

/// Serves `conn` until it ends or, after the stop signal, until the
/// requests it is serving are answered (at most `request_timeout` and a
/// little more).
async fn drive(
    conn: impl Served,
    handler: &Handler,
    shutdown: &mut Shutdown,
    request_timeout: Duration,
) -> Result<(), hyper::Error> {
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => r,
        _ = shutdown.wait() => {
            conn.as_mut().graceful_shutdown();
            handler.release_router_if_idle();
            let bound = request_timeout + SHUTDOWN_SLACK;
            match tokio::time::timeout(bound, conn.as_mut()).await {
                Ok(r) => r,
                Err(_) => {
                    handler.metrics.error(handler.peer, "shutdown_timeout",
                        &format!("request not finished {bound:?} after the stop signal; connection closed"));
                    Ok(())
                }
            }
        }
    }
}

/// The error kind and message of a connection hyper ended with an error.
fn classify(e: &hyper::Error) -> (&'static str, String) {
    let timed_out = {
        let mut source = std::error::Error::source(e);
        let mut found = false;
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                found |= io.kind() == std::io::ErrorKind::TimedOut;
            }
            source = s.source();
        }
        found
    };
    if e.is_timeout() || timed_out {
        ("idle_timeout", format!("connection idle too long: {e}"))
    } else if e.is_parse_too_large() {
        (
            "header_too_large",
            format!("request headers larger than max_header_bytes: {e}"),
        )
    } else if e.is_parse() || e.is_parse_status() {
        ("bad_request", format!("not a valid HTTP request: {e}"))
    } else if e.is_incomplete_message() {
        ("truncated", format!("client closed inside a request: {e}"))
    } else {
        ("io", e.to_string())
    }
}

/// Serves the requests of one connection (one at a time with HTTP/1.1,
/// several at once with HTTP/2).
struct Handler {
    settings: Arc<Settings>,
    metrics: Arc<HttpMetrics>,
    /// Taken at shutdown, so the sink queues can close while answers still
    /// wait for acks.
    router: tokio::sync::Mutex<Option<Router>>,
    shutdown: Shutdown,
    peer: SocketAddr,
    /// Requests being served: the connection is not idle meanwhile.
    busy: Arc<Busy>,
    /// The memory budget's charge for what the connection has read and no
    /// request body has taken yet.
    held: Arc<std::sync::Mutex<MemoryCharge>>,
    /// The `request_timeout` of every HTTP/1.1 request.
    deadline: RequestDeadline,
    /// Requests routed and waiting for the sinks' verdict.
    waiting: AtomicUsize,
    /// The last request's path and its tag: clients post to one path, and
    /// the tag is then shared instead of built again.
    last_tag: std::sync::Mutex<Option<(Box<str>, Tag)>>,
}

/// A request answered with an error.
struct Refusal {
    status: StatusCode,
    /// The `kind` label of `logferry_http_errors_total`.
    kind: &'static str,
    message: String,
    /// Tell the client to send again (`Retry-After`).
    retry: bool,
    /// Close the connection after the answer (the body was not read whole).
    close: bool,
}

impl Refusal {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            status,
            kind,
            message: message.into(),
            retry: false,
            close: false,
        }
    }

    fn retry(mut self) -> Self {
        self.retry = true;
        self
    }

    fn close(mut self) -> Self {
        self.close = true;
        self
    }

    /// The HTTP answer: the message as text, or to an OTLP/HTTP export a
    /// `google.rpc.Status` in the request's format (`otlp`), as OTLP asks.
    fn response(&self, otlp: Option<otlp::Format>) -> Response<Answer> {
        let mut r = match otlp {
            Some(format) => {
                let status = otlp::status::status(
                    answer::grpc_code(self.status, self.kind == UNSUPPORTED_ENCODING),
                    &self.message,
                    self.retry.then_some(RETRY_DELAY),
                );
                let mut r = Response::new(Answer::full(otlp::status::http_body(format, &status)));
                *r.status_mut() = self.status;
                r.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(format.content_type()),
                );
                r
            }
            None => text(self.status, format!("{}\n", self.message)),
        };
        if self.retry {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        if self.close {
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
        }
        if self.kind == UNSUPPORTED_ENCODING {
            // RFC 9110 15.5.16: the codings that would have been read
            r.headers_mut().insert(
                ACCEPT_ENCODING,
                HeaderValue::from_static(encoding::SUPPORTED),
            );
        }
        r
    }

    /// The gRPC answer: trailers-only, HTTP 200 with `grpc-status`.
    fn grpc_response(&self) -> Response<Answer> {
        let unsupported = self.kind == UNSUPPORTED_ENCODING;
        let code = answer::grpc_code(self.status, unsupported);
        answer::grpc_error(code, &self.message, self.retry.then_some(RETRY_DELAY))
    }
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Answer> {
    let mut r = Response::new(Answer::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Whether a request is being served, and since when none is.
struct Busy {
    /// Requests being served.
    requests: AtomicUsize,
    /// What `idle_since` counts from.
    base: Instant,
    /// When the last request was done (or the connection opened), in
    /// nanoseconds after `base`.
    idle_since: AtomicU64,
}

impl Busy {
    fn new() -> Self {
        Busy {
            requests: AtomicUsize::new(0),
            base: Instant::now(),
            idle_since: AtomicU64::new(0),
        }
    }

    /// Counts a request until the guard is dropped.
    fn enter(&self) -> BusyGuard<'_> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        BusyGuard(self)
    }

    fn is_busy(&self) -> bool {
        self.count() > 0
    }

    fn count(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    fn idle_since(&self) -> Instant {
        self.base + Duration::from_nanos(self.idle_since.load(Ordering::Relaxed))
    }
}

/// Ends a request's count when it is done, however it ends.
struct BusyGuard<'a>(&'a Busy);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        if self.0.requests.fetch_sub(1, Ordering::Relaxed) == 1 {
            let since = Instant::now().saturating_duration_since(self.0.base);
            let nanos = u64::try_from(since.as_nanos()).unwrap_or(u64::MAX);
            self.0.idle_since.store(nanos, Ordering::Relaxed);
        }
    }
}

/// Counts one in an `AtomicUsize` until dropped, however the holder ends.
struct Counted<'a>(&'a AtomicUsize);

impl<'a> Counted<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Counted(count)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request outlived `request_timeout`.
struct PastDeadline;

/// When a request must be done, and whether it is the only one its
/// connection serves (HTTP/1.1), so it can use the connection's one timer;
/// an HTTP/2 request, one of several at once, has a timer of its own.
#[derive(Clone, Copy)]
struct Due {
    at: Instant,
    alone: bool,
}

/// One timer for the `request_timeout` of every request on a connection.
/// Its deadline is never later than the current request's, and it moves
/// only when it fires early: at most once per `request_timeout`, instead
/// of a timer registered and cancelled in the runtime for every request.
struct RequestDeadline {
    sleep: std::sync::Mutex<Pin<Box<Sleep>>>,
}

impl RequestDeadline {
    /// `first` is no later than the first request's deadline.
    fn new(first: Instant) -> Self {
        RequestDeadline {
            sleep: std::sync::Mutex::new(Box::pin(tokio::time::sleep_until(first))),
        }
    }

    /// Ready once `deadline` has passed; otherwise this task is woken no
    /// later than then.
    fn poll_passed(&self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        let mut sleep = self.sleep.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if sleep.deadline() >= deadline {
                return Poll::Ready(());
            }
            sleep.as_mut().reset(deadline);
        }
    }

    /// Runs `fut` until `due` (like `tokio::time::timeout_at`): on this
    /// timer if the request is alone on its connection.
    async fn run<F: Future>(&self, due: Due, fut: F) -> Result<F::Output, PastDeadline> {
        if !due.alone {
            return tokio::time::timeout_at(due.at, fut)
                .await
                .map_err(|_| PastDeadline);
        }
        let deadline = due.at;
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(Ok(v));
            }
            self.poll_passed(cx, deadline).map(|()| Err(PastDeadline))
        })
        .await
    }
}

/// What a request's line and headers ask for.
enum Asked {
    Health,
    Records(AskedRecords),
}

/// A `POST /<tag>` (or an OTLP export): the tag, how its body is
/// encoded, and its `time` query parameter.
struct AskedRecords {
    /// Empty for OTLP: its tags come from the resources in the body.
    tag: Tag,
    kind: Body,
    /// The body's `Content-Encoding`, decoded before `kind` is read.
    encoding: ContentEncoding,
    time: Option<EventTime>,
}

/// What a body holds.
#[derive(Clone, Copy)]
enum Body {
    /// Records as the HTTP source reads them.
    Http(BodyKind),
    /// An OTLP `ExportLogsServiceRequest`.
    Otlp(otlp::Format),
}

/// The `kind` label of a refused `Content-Encoding` (415).
const UNSUPPORTED_ENCODING: &str = "unsupported_encoding";

impl Handler {
    async fn handle(&self, req: Request<Incoming>) -> Response<Answer> {
        let busy = self.busy.enter();
        let due = Due {
            at: Instant::now() + self.settings.config.request_timeout,
            alone: req.version() < Version::HTTP_2,
        };
        let (parts, body) = req.into_parts();
        let head = head_bytes(&parts);
        let asked = self.asked(&parts);
        // an OTLP/HTTP error is a Status in the request's format
        let otlp_answer = match self.settings.otlp {
            Some(_) if !self.settings.grpc => Some(
                otlp::Format::from_content_type(
                    parts.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes),
                )
                .unwrap_or(otlp::Format::Protobuf),
            ),
            _ => None,
        };
        // the head's URI and header values are slices of hyper's read
        // buffer: held while the records wait for the sinks, they would keep
        // a buffer of 8 KiB or more alive for every request waiting
        drop(parts);
        let mut body = Some(body);
        let served = match asked {
            Ok(Asked::Health) => Ok(text(StatusCode::OK, "ok\n")),
            Ok(Asked::Records(records)) => self.serve(records, &mut body, due).await,
            Err(refusal) => Err(refusal),
        };
        // the answer, and the HTTP status it is counted under
        let (response, status) = match served {
            Ok(r) => {
                let status = r.status();
                (r, status)
            }
            Err(mut refusal) => {
                self.metrics
                    .error(self.peer, refusal.kind, &refusal.message);
                // a refused request's body is read and dropped, so the
                // connection can serve the next request
                if let (Some(body), false) = (body, refusal.close) {
                    let limit = self.settings.config.max_body_bytes;
                    let drained = self.deadline.run(due, Limited::new(body, limit).collect());
                    refusal.close = !matches!(drained.await, Ok(Ok(_)));
                }
                let response = if self.settings.grpc {
                    refusal.grpc_response()
                } else {
                    refusal.response(otlp_answer)
                };
                (response, refusal.status)
            }
        };
        // the request line and headers go back to the budget (what hyper
        // read of a next request stays charged)
        drop(lock(&self.held).split(head));
        self.metrics.response(status.as_u16());
        drop(busy);
        if self.shutdown.is_triggered() {
            // this request may have been the last one yet to be routed
            self.release_router_if_idle();
        }
        response
    }

    /// At shutdown: lets go of the router unless a request has yet to
    /// be routed (it lets go of the router once routed). Requests routed
    /// and waiting for the sinks need it no more: the sinks' queues close
    /// once every router is gone, and the sinks then settle the records
    /// within their `drain_timeout`, instead of the requests waiting out
    /// their `request_timeout`.
    fn release_router_if_idle(&self) {
        if self.busy.count() > self.waiting.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(mut router) = self.router.try_lock() {
            router.take();
        }
    }

    /// The tag a path names: `/app/access` is `app.access`.
    fn tag(&self, path: &str) -> Tag {
        let mut last = lock_tag(&self.last_tag);
        if let Some((p, tag)) = last.as_ref() {
            if **p == *path {
                return tag.clone();
            }
        }
        let tag: Tag = path.trim_matches('/').replace('/', ".").into();
        *last = Some((path.into(), tag.clone()));
        tag
    }

    /// What a request's line and headers ask for, or why it is refused
    /// before its body is read.
    fn asked(&self, req: &hyper::http::request::Parts) -> Result<Asked, Refusal> {
        let config = &self.settings.config;
        let path = req.uri.path();
        if path == "/health" && matches!(req.method, Method::GET | Method::HEAD) {
            return Ok(Asked::Health);
        }
        if req.method != Method::POST {
            return Err(Refusal::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method",
                format!(
                    "{} is not served: send records with POST /<tag>",
                    req.method
                ),
            ));
        }
        let (tag, kind) = match self.settings.otlp {
            Some(_) if self.settings.grpc => (Tag::from(""), Body::Otlp(grpc_format(req)?)),
            Some(_) => (Tag::from(""), Body::Otlp(otlp_format(req)?)),
            None => self.asked_http(req)?,
        };
        // gRPC names the coding of its compressed messages in `grpc-encoding`
        let coding = if self.settings.grpc {
            GRPC_ENCODING
        } else {
            CONTENT_ENCODING
        };
        let codings: Vec<&[u8]> = req
            .headers
            .get_all(coding)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        let encoding = ContentEncoding::from_headers(&codings).map_err(|e| {
            Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                UNSUPPORTED_ENCODING,
                e.to_string(),
            )
        })?;
        let time = query_time(req.uri.query())?;
        let announced = req
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if announced.is_some_and(|n| n > config.max_body_bytes as u64) {
            return Err(self.too_large());
        }
        Ok(Asked::Records(AskedRecords {
            tag,
            kind,
            encoding,
            time,
        }))
    }

    /// The tag and body kind of a `POST /<tag>`.
    fn asked_http(&self, req: &hyper::http::request::Parts) -> Result<(Tag, Body), Refusal> {
        let tag = self.tag(req.uri.path());
        if tag.is_empty() {
            return Err(Refusal::new(
                StatusCode::NOT_FOUND,
                "no_tag",
                "the path names the tag: POST /<tag> (for example POST /app.access)",
            ));
        }
        let kind = BodyKind::from_content_type(
            req.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes),
        )
        .ok_or_else(|| {
            Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_type",
                format!(
                    "Content-Type {:?} is not read here: use application/json, application/msgpack, \
                     application/x-ndjson, text/plain or application/x-www-form-urlencoded",
                    req.headers
                        .get(CONTENT_TYPE)
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                        .unwrap_or_default()
                ),
            )
        })?;
        Ok((tag, Body::Http(kind)))
    }

    fn too_large(&self) -> Refusal {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!(
                "body larger than max_body_bytes ({}): send fewer records per request",
                self.settings.config.max_body_bytes
            ),
        )
        .close()
    }

    /// Reads, decodes and routes the records of a request its head
    /// asked to post, and answers once the sinks have them.
    async fn serve(
        &self,
        AskedRecords {
            tag,
            kind,
            encoding,
            time,
        }: AskedRecords,
        body: &mut Option<Incoming>,
        due: Due,
    ) -> Result<Response<Answer>, Refusal> {
        let config = &self.settings.config;
        let Some(incoming) = body.take() else {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "body_read",
                "no body",
            ));
        };
        let body = self.read_body(incoming, config.max_body_bytes, due);
        let (body, charge) = match self.deadline.run(due, body).await {
            Ok(Ok(read)) => read,
            Ok(Err(BodyError::TooLarge)) => return Err(self.too_large()),
            Ok(Err(BodyError::Read(e))) => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "body_read",
                    format!("cannot read the body: {e}"),
                )
                .close())
            }
            Err(_) => {
                return Err(Refusal::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body_timeout",
                    format!(
                        "body not received within request_timeout ({:?})",
                        config.request_timeout
                    ),
                )
                .close())
            }
        };
        // the body was read whole: a refusal here keeps the connection
        let (body, encoding) = match kind {
            Body::Otlp(otlp::Format::Grpc) => {
                let message = otlp::grpc::unframe(&body).map_err(|e| {
                    Refusal::new(StatusCode::BAD_REQUEST, "malformed", e.to_string())
                })?;
                // an uncompressed message ignores `grpc-encoding`
                let encoding = match message.compressed {
                    true => encoding,
                    false => ContentEncoding::Identity,
                };
                (message.bytes, encoding)
            }
            _ => (body, encoding),
        };
        let inflated = encoding::inflate(
            encoding,
            body,
            charge,
            config.max_body_bytes,
            &self.settings.memory,
            &self.metrics.source,
        );
        let (body, charge) = match self.deadline.run(due, inflated).await {
            Ok(Ok(inflated)) => inflated,
            Ok(Err(e @ InflateError::TooLarge { .. })) => {
                return Err(Refusal::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "decoded_too_large",
                    e.to_string(),
                ))
            }
            Ok(Err(e @ InflateError::Corrupt { .. })) => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "corrupt_encoding",
                    e.to_string(),
                ))
            }
            // waited for memory budget to decode into
            Err(_) => {
                return Err(Refusal::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "backpressure",
                    format!(
                    "no memory to decode the body within request_timeout ({:?}): send again later",
                    config.request_timeout
                ),
                )
                .retry())
            }
        };
        let bytes = body.len();
        let malformed = |e: String| Refusal::new(StatusCode::BAD_REQUEST, "malformed", e);
        // a plain HTTP request is one batch: no list is allocated for it
        let (one, many, format): (Option<(Tag, Records, usize)>, Vec<_>, _) = match kind {
            Body::Http(kind) => {
                let decoded = decode::decode(kind, body, time, EventTime::now())
                    .map_err(|e| malformed(e.to_string()))?;
                (
                    Some((tag, decoded.records, decoded.count)),
                    Vec::new(),
                    None,
                )
            }
            Body::Otlp(format) => {
                let template = self
                    .settings
                    .otlp
                    .as_ref()
                    .expect("an otlp source's request");
                let limit = self.settings.memory.limit();
                let decoded = otlp::decode_apart(format, body, template, EventTime::now(), limit);
                let tagged = decoded.await.map_err(|e| match e {
                    otlp::DecodeError::TooLarge(_) => Refusal::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "decoded_too_large",
                        e.to_string(),
                    ),
                    otlp::DecodeError::TooManyTags(_) => Refusal::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "too_many_tags",
                        e.to_string(),
                    ),
                    otlp::DecodeError::Stopped => Refusal::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "shutting_down",
                        e.to_string(),
                    )
                    .retry(),
                    e => malformed(e.to_string()),
                })?;
                let batches = tagged.into_iter().map(|t| (t.tag, t.records, t.count));
                (None, batches.collect(), Some(format))
            }
        };
        let count: usize = one.iter().chain(&many).map(|(_, _, n)| n).sum();
        if count == 0 {
            return Ok(accepted(format, None));
        }
        self.metrics.records.add(count as u64);
        self.metrics.bytes.add(bytes as u64);
        let (ack, verdict) = match config.ack {
            AckMode::Received => (AckHandle::none(), None),
            AckMode::Sinks => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let ack = AckHandle::new(move |outcome| {
                    let _ = tx.send(outcome);
                });
                (ack, Some(rx))
            }
        };
        // an OTLP request may hold several tags: one batch each, sharing
        // the request's acknowledgement (answered once all are settled)
        let (mut charge, last) = (charge, usize::from(one.is_some()) + many.len() - 1);
        for (i, (tag, records, count)) in one.into_iter().chain(many).enumerate() {
            let mut batch = Batch::new(tag, records, count).with_ack(ack.clone());
            if verdict.is_some() {
                // the answer waits for the sinks: they send it without lingering
                batch = batch.waited_on();
            }
            let part = if i == last {
                std::mem::take(&mut charge)
            } else {
                charge.split(batch.byte_len().min(charge.bytes()))
            };
            self.route(batch, part, due).await?;
            // an OTLP request may hold thousands of tags: let the other
            // connections of this runtime thread have a turn now and then
            if i % 64 == 63 {
                tokio::task::yield_now().await;
            }
        }
        drop(ack);
        let Some(verdict) = verdict else {
            return Ok(accepted(format, None));
        };
        let waiting = Counted::enter(&self.waiting);
        if self.shutdown.is_triggered() {
            self.release_router_if_idle();
        }
        let verdict = self.deadline.run(due, verdict).await;
        drop(waiting);
        match verdict {
            Ok(Ok(AckOutcome::Accepted)) => Ok(accepted(format, None)),
            // OTLP says so in the answer's partial_success
            Ok(Ok(AckOutcome::Refused(r))) if format.is_some() => {
                let message = r.to_string();
                self.metrics.error(self.peer, "refused", &message);
                Ok(accepted(format, Some((r.records, message))))
            }
            // resending cannot help: say which record and why, not 503
            Ok(Ok(AckOutcome::Refused(r))) => Err(Refusal::new(
                if r.too_large() {
                    StatusCode::PAYLOAD_TOO_LARGE
                } else {
                    StatusCode::UNPROCESSABLE_ENTITY
                },
                "refused",
                format!("{r}; the request's other records were kept: do not send them again"),
            )),
            Ok(Ok(AckOutcome::Rejected)) | Ok(Err(_)) => Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "rejected",
                "a sink could not keep the records: send them again",
            )
            .retry()),
            Err(_) => Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ack_timeout",
                format!(
                    "the sinks did not accept the records within request_timeout ({:?}): send them again",
                    config.request_timeout
                ),
            )
            .retry()),
        }
    }

    /// Reads a request body of at most `limit` bytes, charging each piece
    /// to the memory budget before asking hyper for the next one: with the
    /// budget used up, the connection (HTTP/1.1) or the stream (HTTP/2,
    /// by flow control) stops reading and the client is slowed down.
    /// Returns the body and its charge.
    async fn read_body(
        &self,
        mut body: Incoming,
        limit: usize,
        due: Due,
    ) -> Result<(Bytes, MemoryCharge), BodyError> {
        // a one-line request's body is one piece: no list for it
        let mut first: Option<Bytes> = None;
        let mut more: Vec<Bytes> = Vec::new();
        let mut len = 0;
        let mut charge = MemoryCharge::none();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(BodyError::Read)?.into_data() else {
                continue; // trailers
            };
            len += data.len();
            if len > limit {
                return Err(BodyError::TooLarge);
            }
            if !due.alone {
                // HTTP/2: the connection's reads are not charged (streams
                // share them), each stream's pieces are
                let piece = self
                    .settings
                    .memory
                    .acquire(charge.bytes(), data.len(), &self.metrics.source)
                    .await;
                charge.merge(piece);
            }
            if first.is_none() {
                first = Some(data);
            } else {
                more.push(data);
            }
        }
        // HTTP/1.1: the pieces were charged when they were read, and stayed
        // with the connection's bytes while it read the rest (so that a
        // connection waiting for budget counts them as held): take that
        // charge along
        charge.merge(lock(&self.held).split(len - charge.bytes()));
        if charge.bytes() < len {
            let more = self
                .settings
                .memory
                .acquire(charge.bytes(), len - charge.bytes(), &self.metrics.source)
                .await;
            charge.merge(more);
        }
        // copied out whole, also when it came in one piece: a piece is a
        // slice of hyper's read buffer, and records kept as that slice
        // would pin the whole buffer (far more than they are charged for)
        // until every sink is done with them
        let mut whole = BytesMut::with_capacity(len);
        for p in first.iter().chain(&more) {
            whole.extend_from_slice(p);
        }
        let body = whole.freeze();
        Ok((body, charge))
    }

    /// Routes the batch, waiting at most until `due` for room in the
    /// sink queues. At shutdown a batch that does not fit at once is
    /// refused (the client sends it again to whoever serves next).
    async fn route(&self, batch: Batch, mut charge: MemoryCharge, due: Due) -> Result<(), Refusal> {
        let stopping = || {
            Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "logferry is shutting down: send again later",
            )
            .retry()
        };
        let mut router = self.router.lock().await;
        let Some(r) = router.as_mut() else {
            return Err(stopping());
        };
        let mut shutdown = self.shutdown.clone();
        // the body's charge becomes the records' (decoding may have grown
        // them: the rest waits for budget like for queue room)
        let charged = async {
            let need = batch.byte_len();
            if need > charge.bytes() {
                let more = self
                    .settings
                    .memory
                    .acquire(charge.bytes(), need - charge.bytes(), &self.metrics.source)
                    .await;
                charge.merge(more);
            } else {
                charge.shrink_to(need);
            }
            r.route(batch.with_memory(charge)).await
        };
        let routed = tokio::select! {
            biased;
            routed = self.deadline.run(due, charged) => routed,
            _ = shutdown.wait() => return Err(stopping()),
        };
        if self.shutdown.is_triggered() {
            router.take();
        }
        match routed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sink_stopped",
                format!("{e}: send again later"),
            )
            .retry()),
            Err(_) => Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "backpressure",
                format!(
                    "the sink queues stayed full for request_timeout ({:?}): send again later",
                    self.settings.config.request_timeout
                ),
            )
            .retry()),
        }
    }
}

/// The 200 answer: empty, or for OTLP an `ExportLogsServiceResponse`
/// (with `partial_success` for records refused for good).
fn accepted(format: Option<otlp::Format>, refused: Option<(usize, String)>) -> Response<Answer> {
    let Some(format) = format else {
        return text(StatusCode::OK, "");
    };
    let body = otlp::response(format, refused);
    if format == otlp::Format::Grpc {
        return answer::grpc_ok(body);
    }
    let mut r = Response::new(Answer::full(body));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    r
}

/// The format of an OTLP/HTTP export, from its path and `Content-Type`.
fn otlp_format(req: &hyper::http::request::Parts) -> Result<otlp::Format, Refusal> {
    if req.uri.path() != otlp::HTTP_PATH {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("OTLP logs are posted to {}", otlp::HTTP_PATH),
        ));
    }
    let ct = req.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes);
    otlp::Format::from_content_type(ct).ok_or_else(|| {
        Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_type",
            format!(
                "Content-Type {:?} is not OTLP/HTTP: use application/x-protobuf or application/json",
                String::from_utf8_lossy(ct.unwrap_or_default())
            ),
        )
    })
}

/// The header naming the coding of a gRPC request's compressed message.
const GRPC_ENCODING: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("grpc-encoding");

/// An OTLP/gRPC export, from its path and `Content-Type`.
fn grpc_format(req: &hyper::http::request::Parts) -> Result<otlp::Format, Refusal> {
    if req.uri.path() != otlp::grpc::EXPORT_PATH {
        return Err(Refusal::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("only {} is served here", otlp::grpc::EXPORT_PATH),
        ));
    }
    let ct = req.headers.get(CONTENT_TYPE).map(HeaderValue::as_bytes);
    if !otlp::grpc::is_grpc_content_type(ct) {
        return Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_type",
            format!(
                "Content-Type {:?} is not gRPC: use application/grpc",
                String::from_utf8_lossy(ct.unwrap_or_default())
            ),
        ));
    }
    Ok(otlp::Format::Grpc)
}

/// The `time` query parameter, if any.
fn query_time(query: Option<&str>) -> Result<Option<EventTime>, Refusal> {
    let bad =
        |e: decode::DecodeError| Refusal::new(StatusCode::BAD_REQUEST, "malformed", e.to_string());
    for pair in query.unwrap_or("").split('&') {
        if let Some(value) = pair.strip_prefix("time=") {
            let value = decode::percent_decode(value.as_bytes()).map_err(bad)?;
            return decode::parse_time(&value).map(Some).map_err(bad);
        }
    }
    Ok(None)
}

/// The bytes of a request's line and headers as a client sends them.
fn head_bytes(parts: &hyper::http::request::Parts) -> usize {
    let uri = &parts.uri;
    // as `uri.to_string().len()`, without building the string
    let target = match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) => {
            scheme.len() + "://".len() + authority.as_str().len() + uri.path().len()
        }
        _ => uri.path().len(),
    } + uri.query().map_or(0, |q| q.len() + 1);
    let line = parts.method.as_str().len() + target + " HTTP/1.1\r\n".len() + 1;
    let headers: usize = parts
        .headers
        .iter()
        .map(|(k, v)| k.as_str().len() + ": \r\n".len() + v.len())
        .sum();
    line + headers + "\r\n".len()
}

/// Why a request body could not be read whole.
enum BodyError {
    TooLarge,
    Read(hyper::Error),
}

/// A stream that fails with `TimedOut` once it has neither read nor
/// written anything for `idle` while no request is being served: covers a
/// client that stalls inside a body or stops reading its answers. With
/// [`Watched::charging`], what it reads is charged to the memory budget
/// first.
struct Watched {
    io: Box<dyn Stream>,
    idle: Duration,
    /// Last successful read or write.
    last: Instant,
    timer: Pin<Box<Sleep>>,
    busy: Arc<Busy>,
    charge: Option<ReadCharge>,
    /// Bytes read ahead to tell HTTP/2 from HTTP/1.1, handed on first.
    ahead: Vec<u8>,
}

/// How an HTTP/2 client that knows the server speaks it opens the
/// connection (RFC 9113, 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Most bytes one read asks the memory budget for.
const READ_GRANT: usize = 64 * 1024;

/// Charges a connection's reads to the memory budget: hyper's read buffer
/// holds what was read until a request body takes it along (its pieces
/// move from `held` to the batch), so a connection holds no more than the
/// budget allows. Nothing is charged while no data is there to be read:
/// an idle keep-alive connection holds no budget.
struct ReadCharge {
    memory: crate::memory::MemoryBudget,
    source: Arc<str>,
    /// Bytes read and not yet taken by a request body: headers, body
    /// pieces hyper has not handed on.
    held: Arc<std::sync::Mutex<MemoryCharge>>,
    /// Waiting for budget before the next read.
    waiting: Option<Pin<Box<dyn Future<Output = MemoryCharge> + Send>>>,
    /// The stream reports readiness on an empty read (plain TCP: tokio
    /// answers it from the readiness it tracks, without a system call).
    probe: bool,
    /// The last read came back short: the socket is most likely drained,
    /// so the next read first asks whether data is there before asking
    /// the budget for a grant (a grant taken and given back costs a lock
    /// on the budget per request).
    drained: bool,
}

impl ReadCharge {
    /// Budget for the next read of at most `want` bytes, or `Pending`
    /// while the budget has none (this task is woken when it has).
    fn poll_grant(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<MemoryCharge> {
        if self.waiting.is_none() {
            if let Some(c) = self.memory.try_acquire(want) {
                return Poll::Ready(c);
            }
            let held = lock(&self.held).bytes();
            let (memory, source) = (self.memory.clone(), self.source.clone());
            self.waiting = Some(Box::pin(async move {
                memory.acquire(held, want, &source).await
            }));
        }
        let waiting = self.waiting.as_mut().expect("set above");
        let grant = std::task::ready!(waiting.as_mut().poll(cx));
        self.waiting = None;
        Poll::Ready(grant)
    }
}

fn lock_tag(
    last: &std::sync::Mutex<Option<(Box<str>, Tag)>>,
) -> std::sync::MutexGuard<'_, Option<(Box<str>, Tag)>> {
    last.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock(held: &std::sync::Mutex<MemoryCharge>) -> std::sync::MutexGuard<'_, MemoryCharge> {
    held.lock().unwrap_or_else(|e| e.into_inner())
}

impl Watched {
    fn new(io: Box<dyn Stream>, idle: Duration, busy: Arc<Busy>) -> Self {
        let now = Instant::now();
        Watched {
            io,
            idle,
            last: now,
            timer: Box::pin(tokio::time::sleep_until(now + idle)),
            busy,
            charge: None,
            ahead: Vec::new(),
        }
    }

    /// Whether the client starts with the HTTP/2 preface. Reads only as
    /// far as the bytes match it (an HTTP/1.1 request differs from its
    /// first byte or two); what was read is handed on by the next reads.
    async fn starts_with_h2_preface(&mut self) -> std::io::Result<bool> {
        let mut got = [0u8; H2_PREFACE.len()];
        let mut n = 0;
        while n < got.len() && got[..n] == H2_PREFACE[..n] {
            let read = self.read(&mut got[n..]).await?;
            if read == 0 {
                break;
            }
            n += read;
        }
        self.ahead.extend_from_slice(&got[..n]);
        Ok(n == H2_PREFACE.len() && got == *H2_PREFACE)
    }

    /// Charges every read to `memory` first; the bytes stay in `held`
    /// until a request body takes them.
    fn charging(
        mut self,
        memory: crate::memory::MemoryBudget,
        source: Arc<str>,
        held: Arc<std::sync::Mutex<MemoryCharge>>,
        probe: bool,
    ) -> Self {
        self.charge = Some(ReadCharge {
            memory,
            source,
            held,
            waiting: None,
            probe,
            drained: false,
        });
        self
    }

    /// On a pending read or write: whether the connection has been idle
    /// too long. Otherwise the timer is armed to wake this task when it
    /// would be.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            let now = Instant::now();
            let deadline = if self.busy.is_busy() {
                now + self.idle
            } else {
                // also bounds the time from the end of one request to the
                // end of the next one's headers (a client trickling its
                // headers byte by byte is still cut off)
                self.last.min(self.busy.idle_since()) + self.idle
            };
            if deadline <= now {
                return true;
            }
            self.timer.as_mut().reset(deadline);
        }
    }

    fn timed_out() -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no data sent or read within idle_timeout",
        )
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.ahead.is_empty() {
            let n = this.ahead.len().min(buf.remaining());
            buf.put_slice(&this.ahead[..n]);
            this.ahead.drain(..n);
            return Poll::Ready(Ok(()));
        }
        let Some(charge) = this.charge.as_mut() else {
            return match Pin::new(&mut this.io).poll_read(cx, buf) {
                Poll::Ready(r) => {
                    this.last = Instant::now();
                    Poll::Ready(r)
                }
                Poll::Pending if this.expired(cx) => Poll::Ready(Err(Self::timed_out())),
                Poll::Pending => Poll::Pending,
            };
        };
        if charge.drained && charge.probe && charge.waiting.is_none() {
            match Pin::new(&mut this.io).poll_read(cx, &mut ReadBuf::new(&mut [])) {
                Poll::Ready(Ok(())) => charge.drained = false,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return this.poll_read_pending(cx),
            }
        }
        // the client is sending, not idle, while its data waits for budget
        let mut grant = std::task::ready!(charge.poll_grant(cx, buf.remaining().min(READ_GRANT)));
        let mut part = buf.take(grant.bytes());
        match Pin::new(&mut this.io).poll_read(cx, &mut part) {
            Poll::Ready(r) => {
                let n = part.filled().len();
                charge.drained = n < grant.bytes();
                // SAFETY: the stream initialised and filled these `n` bytes
                // of `buf`'s unfilled part through `part`
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                grant.shrink_to(n);
                lock(&charge.held).merge(grant);
                this.last = Instant::now();
                Poll::Ready(r)
            }
            // the grant goes back: nothing is held while nothing arrives
            Poll::Pending => {
                drop(grant);
                this.poll_read_pending(cx)
            }
        }
    }
}

impl Watched {
    /// A charged read found no data.
    fn poll_read_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if let Some(charge) = &self.charge {
            if !self.busy.is_busy() {
                // between requests hyper holds at most the start of the
                // next request's head: an idle connection holds nothing
                drop(std::mem::take(&mut *lock(&charge.held)));
            }
        }
        if self.expired(cx) {
            Poll::Ready(Err(Self::timed_out()))
        } else {
            Poll::Pending
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(r) => {
                this.last = Instant::now();
                Poll::Ready(r)
            }
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(Self::timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => {
                this.last = Instant::now();
                Poll::Ready(r)
            }
            Poll::Pending if this.expired(cx) => Poll::Ready(Err(Self::timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_silent_client_times_out_unless_a_request_is_being_served() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let busy = Arc::new(Busy::new());
        let serving = busy.enter();
        let mut w = Watched::new(Box::new(ours), Duration::from_secs(1), busy.clone());
        let mut buf = [0u8; 8];
        // while a request is served (waiting for the sinks), silence is fine
        let waited = tokio::time::timeout(Duration::from_secs(5), w.read(&mut buf)).await;
        assert!(waited.is_err(), "timed out while busy: {waited:?}");
        drop(serving);
        theirs.write_all(b"hi").await.unwrap();
        assert_eq!(w.read(&mut buf).await.unwrap(), 2, "data resets the clock");
        let e = w.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_stops_reading_times_out() {
        let (ours, _theirs) = tokio::io::duplex(16);
        let busy = Arc::new(Busy::new());
        let mut w = Watched::new(Box::new(ours), Duration::from_secs(1), busy);
        let e = w.write_all(&[0u8; 64]).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_trickling_its_next_request_is_cut_off_after_idle_timeout() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let busy = Arc::new(Busy::new());
        drop(busy.enter()); // a request was just answered
        let mut w = Watched::new(Box::new(ours), Duration::from_secs(1), busy);
        let start = Instant::now();
        tokio::spawn(async move {
            for _ in 0..20 {
                if theirs.write_all(b"P").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        });
        let mut buf = [0u8; 8];
        let e = loop {
            match w.read(&mut buf).await {
                Ok(0) => panic!("the client finished before being cut off"),
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        let after = start.elapsed();
        assert!(
            after < Duration::from_millis(1500),
            "a byte now and then must not keep the connection open: cut after {after:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_request_deadline_fires_at_each_requests_own_deadline() {
        let timeout = Duration::from_secs(10);
        let d = RequestDeadline::new(Instant::now() + timeout);
        let due = |at| Due { at, alone: true };
        // a quick request moves nothing
        let quick = d.run(due(Instant::now() + timeout), async { 1 }).await;
        assert!(matches!(quick, Ok(1)));
        // a later request gets its whole request_timeout, not what was
        // left of the first one's
        tokio::time::sleep(Duration::from_secs(6)).await;
        let start = Instant::now();
        let slow = d
            .run(due(start + timeout), std::future::pending::<()>())
            .await;
        assert!(slow.is_err());
        assert_eq!(start.elapsed(), timeout);
        // and after it fired, the next request waits its own time again
        let start = Instant::now();
        let slow = d
            .run(due(start + timeout), std::future::pending::<()>())
            .await;
        assert!(slow.is_err());
        assert_eq!(start.elapsed(), timeout);
    }

    #[tokio::test(start_paused = true)]
    async fn http2_requests_at_once_each_end_at_their_own_deadline() {
        // streams of one connection, each in its own task: none may wait
        // past its deadline because another one polled the timer last
        let d = Arc::new(RequestDeadline::new(Instant::now()));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for secs in [3u64, 1, 2] {
            let d = d.clone();
            tasks.push(tokio::spawn(async move {
                let due = Due {
                    at: start + Duration::from_secs(secs),
                    alone: false,
                };
                let r = d.run(due, std::future::pending::<()>()).await;
                (secs, r.is_err(), start.elapsed())
            }));
            tokio::task::yield_now().await;
        }
        for t in tasks {
            let (secs, past, took) = tokio::time::timeout(Duration::from_secs(10), t)
                .await
                .expect("a request waited past its deadline")
                .unwrap();
            assert!(past);
            assert_eq!(took, Duration::from_secs(secs));
        }
    }

    #[tokio::test]
    async fn the_http2_preface_is_told_from_http1_and_every_byte_is_handed_on() {
        async fn look(sent: &[&[u8]]) -> (bool, Vec<u8>) {
            let (ours, mut theirs) = tokio::io::duplex(1024);
            let mut w = Watched::new(
                Box::new(ours),
                Duration::from_secs(5),
                Arc::new(Busy::new()),
            );
            for part in sent {
                theirs.write_all(part).await.unwrap();
            }
            drop(theirs);
            let h2 = w.starts_with_h2_preface().await.unwrap();
            let mut all = Vec::new();
            w.read_to_end(&mut all).await.unwrap();
            (h2, all)
        }
        let post: &[u8] = b"POST /app HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
        assert_eq!(look(&[post]).await, (false, post.to_vec()));
        // `PRI` alone, or a preface cut short, is not HTTP/2
        assert!(!look(&[b"PRI * HTTP/2.0\r\n"]).await.0);
        assert_eq!(look(&[b"PUT /x"]).await, (false, b"PUT /x".to_vec()));
        assert_eq!(look(&[]).await, (false, Vec::new()));
        let mut h2 = H2_PREFACE.to_vec();
        h2.extend_from_slice(b"\0\0\0\x04\0\0\0\0\0");
        assert_eq!(look(&[&h2[..5], &h2[5..]]).await, (true, h2.clone()));
    }
}
