//! The `[api]` endpoint, served by hyper (the HTTP stack of the HTTP
//! source):
//!
//! - `GET /metrics`: every metric, OpenMetrics text (`prometheus-client`);
//! - `GET /health`: 200 while the process runs;
//! - `GET /ready`: 200 when every sink is connected or buffering on disk
//!   within its limit, else 503; the body says why, per sink (JSON);
//! - `GET /config`: the running configuration (TOML), secrets as `"***"`;
//! - `POST /reload`: reloads the configuration file (200 with a summary,
//!   or 422 with every reason it was refused);
//! - `GET /tap?component=NAME`: the records passing a component, live
//!   ([`tap`]).
//!
//! Routes live in [`route`]: one `match` to extend. Who may use which
//! route (a token, refusing what a web page of another site could send):
//! [`access`], checked before any route runs.

pub mod access;
pub mod reload;
pub mod tap;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::buffer::{BufferKind, QueueGauge};
use crate::component::Shutdown;
use crate::metrics::{Registry, CONNECTED_METRIC};
use crate::net::AcceptErrors;

/// How long a client may take to send a request's headers (and how long
/// an idle keep-alive connection stays open).
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest a connection may live: the API answers small requests, but a
/// `POST /reload` waits for the replaced sinks to drain (at most their
/// `drain_timeout`, 30 s by default, plus the replaced sources' stop), and
/// its answer must not be cut off.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(120);

/// The `[api]` table: the HTTP endpoint serving `/metrics`, `/health`,
/// `/ready`, `/config` and `POST /reload`. Who may use it: `crate::api::access`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// `host:port` to listen on.
    pub address: String,
    /// A file whose content (trimmed) is the token `POST /reload` and
    /// `GET /config` require; read at start.
    #[serde(default)]
    pub token_file: Option<std::path::PathBuf>,
    /// An environment variable holding that token; read at start.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The token itself, for `token = "${VAR}"`; `/config` shows `"***"`.
    #[serde(default)]
    pub token: Option<crate::config::Secret>,
    /// Host names (besides the address's own, `localhost` and loopback
    /// and local IP addresses) that requests may name in `Host`: the names
    /// clients reach the API by. Any other is refused, so that a web page
    /// whose name was pointed at this address (DNS rebinding) reads
    /// nothing. `"*"` accepts any.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Connections served at once; past it a connection gets 503 and is
    /// closed.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Taps (`GET /tap`, `logferry tap`) attached at once; past it 503.
    #[serde(default = "default_max_taps")]
    pub max_taps: usize,
}

const fn default_max_connections() -> usize {
    64
}

const fn default_max_taps() -> usize {
    8
}

impl ApiConfig {
    pub fn validate(&self) -> Result<(), String> {
        crate::config::listen_address(&self.address)?;
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.max_taps >= self.max_connections {
            return Err(format!(
                "max_taps ({}) must be below max_connections ({}): a tap holds a connection, and /metrics, /ready and the rest need one too",
                self.max_taps, self.max_connections
            ));
        }
        access::check_allowed_hosts(&self.allowed_hosts)?;
        access::resolve_token(self).map(drop)
    }
}

/// What one sink's readiness is read from.
#[derive(Clone)]
pub struct SinkProbe {
    pub name: String,
    pub buffer: BufferKind,
    pub max_bytes: usize,
    pub queue: QueueGauge,
}

/// Everything the routes read.
pub struct ApiState {
    pub metrics: Registry,
    /// One per running sink (a reload changes them).
    pub sinks: Arc<std::sync::Mutex<Vec<SinkProbe>>>,
    /// `GET /config`, already masked (a reload replaces it).
    pub config: Arc<std::sync::Mutex<String>>,
    /// Where `POST /reload` asks the running pipeline to reload.
    pub reload: Option<reload::ReloadHandle>,
    /// What `GET /tap` attaches to.
    pub taps: Option<crate::router::tap::Taps>,
    /// What the records a tap holds for its reader are charged to.
    pub memory: crate::memory::MemoryBudget,
}

/// Binds the endpoint; the returned future serves it until shutdown. The
/// token is read now (a changed token file takes a restart).
pub async fn start(
    config: &ApiConfig,
    state: ApiState,
    mut shutdown: Shutdown,
) -> Result<impl std::future::Future<Output = ()>, String> {
    let address = &config.address;
    let token = access::resolve_token(config).map_err(|e| format!("[api]: {e}"))?;
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("api: cannot listen on {address}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(address = %local, token = token.is_some(),
        "api listening (GET /metrics, /health, /ready, /config, /tap; POST /reload)");
    if let Some(warning) = access::open_to_network(config) {
        crate::telemetry::startup_warning(&state.metrics, "api_without_token", "api", &warning);
    }
    let access = Arc::new(access::Access::new(
        token.as_ref(),
        address,
        &config.allowed_hosts,
        &state.metrics,
    ));
    let accept_errors = AcceptErrors::new(&state.metrics, "api");
    let state = Arc::new(state);
    let max_taps = config.max_taps;
    let connections = Arc::new(Semaphore::new(config.max_connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    Ok(async move {
        loop {
            tokio::select! {
                _ = shutdown.wait() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let Ok(held) = connections.clone().try_acquire_owned() else {
                            access.refused_connection(access::Refusal::TooManyConnections, peer);
                            // past a few refusals at once, closed unanswered
                            if let Ok(r) = refusing.clone().try_acquire_owned() {
                                tokio::spawn(refuse(stream, r));
                            }
                            continue;
                        };
                        let state = state.clone();
                        let access = access.clone();
                        // the API's own origin is the address this
                        // connection came in on (with 0.0.0.0, the one
                        // the client chose)
                        let Ok(local) = stream.local_addr() else { continue };
                        tokio::spawn(async move {
                            let _held = held;
                            let _ = stream.set_nodelay(true);
                            // a tap streams for as long as its client
                            // reads: no time limit for that connection
                            let streaming = Arc::new(AtomicBool::new(false));
                            let tapping = streaming.clone();
                            let service = service_fn(move |req: Request<Incoming>| {
                                let state = state.clone();
                                let access = access.clone();
                                let tapping = tapping.clone();
                                async move {
                                    let (method, path) = (req.method().clone(), req.uri().path().to_string());
                                    let answer = match access.check(&method, &path, req.headers(), local) {
                                        Ok(()) if method == Method::GET && path == "/tap" => {
                                            match tap::answer(&state, max_taps, req.uri().query()) {
                                                Ok(answer) => {
                                                    tapping.store(true, Ordering::Relaxed);
                                                    answer
                                                }
                                                Err(why) => {
                                                    access.refused(why, &method, &path, peer);
                                                    refusal(why).map(BodyExt::boxed)
                                                }
                                            }
                                        }
                                        Ok(()) => route(&state, req).await.map(BodyExt::boxed),
                                        Err(why) => {
                                            access.refused(why, &method, &path, peer);
                                            refusal(why).map(BodyExt::boxed)
                                        }
                                    };
                                    Ok::<_, Infallible>(answer)
                                }
                            });
                            // one request per connection, as scrapers and
                            // `logferry top` expect: the answer says close
                            let conn = http1::Builder::new()
                                .keep_alive(false)
                                .timer(TokioTimer::new())
                                .header_read_timeout(HEADER_TIMEOUT)
                                .max_buf_size(8 * 1024)
                                .serve_connection(TokioIo::new(stream), service);
                            tokio::pin!(conn);
                            let timed_out = tokio::time::timeout(CONNECTION_TIMEOUT, conn.as_mut()).await.is_err();
                            if timed_out && streaming.load(Ordering::Relaxed) {
                                let _ = conn.await;
                            }
                        });
                    }
                    // a pending connection keeps the listener readable:
                    // without a pause, EMFILE would spin this loop
                    Err(e) => accept_errors.handle(&e).await,
                }
            }
        }
    })
}

/// Connections past `max_connections` being answered 503 at once; past
/// it they are closed unanswered.
const MAX_REFUSING: usize = 16;

/// How long a refused connection's request is read (and thrown away)
/// before it is closed, so the client reads the answer rather than a
/// reset.
const REFUSE_READ: Duration = Duration::from_millis(500);

/// Answers a connection past `max_connections` with 503 and closes it.
async fn refuse(mut stream: tokio::net::TcpStream, _slot: tokio::sync::OwnedSemaphorePermit) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let why = access::Refusal::TooManyConnections;
    let body = why.message();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSE_READ, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// The API's routes. Paths ignore the query string.
pub async fn route(state: &ApiState, req: Request<Incoming>) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            state.metrics.render(),
        ),
        (&Method::GET, "/health") => reply(StatusCode::OK, "text/plain", "ok\n".into()),
        (&Method::GET, "/ready") => {
            let (ready, body) = readiness(state);
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            reply(status, "application/json", body)
        }
        (&Method::GET, "/config") => {
            let config = state
                .config
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            reply(StatusCode::OK, "application/toml", config)
        }
        // a reload waits for replaced sinks to drain (the connection's
        // time limit still applies to the answer)
        (&Method::POST, "/reload") => match &state.reload {
            Some(handle) => {
                let (code, body) = reload::http(handle).await;
                let status = StatusCode::from_u16(code).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
                reply(status, "text/plain", body)
            }
            None => reply(
                StatusCode::NOT_FOUND,
                "text/plain",
                "no reload here\n".into(),
            ),
        },
        (&Method::GET, _) => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
        _ => reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "method not allowed\n".into(),
        ),
    }
}

/// The answer to a refused request.
fn refusal(why: access::Refusal) -> Response<Full<Bytes>> {
    let mut r = reply(why.status(), "text/plain", why.message().into());
    if why.status() == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"logferry\""),
        );
    }
    if why.status() == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// Whether every sink is ready, and a JSON body with each sink's state.
fn readiness(state: &ApiState) -> (bool, String) {
    let mut all = true;
    let mut sinks = serde_json::Map::new();
    let probes = state
        .sinks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for s in &probes {
        let (ready, reason) = sink_readiness(&state.metrics, s);
        all &= ready;
        sinks.insert(
            s.name.clone(),
            serde_json::json!({ "ready": ready, "reason": reason }),
        );
    }
    let body = serde_json::json!({ "ready": all, "sinks": sinks });
    (all, format!("{body}\n"))
}

/// A sink is ready when it is connected to a server, writes locally, or
/// keeps what it cannot deliver in a disk buffer that is not full. A
/// memory buffer does not count: what it holds is lost if the process
/// dies, so a disconnected sink with one is not ready.
fn sink_readiness(metrics: &Registry, s: &SinkProbe) -> (bool, String) {
    let Some(connected) = metrics.value_if_any(CONNECTED_METRIC, &[("component", &s.name)]) else {
        if metrics.component_type(&s.name) == Some("kafka") {
            return (
                true,
                "Kafka broker connections not tracked (statistics.interval.ms = 0)".into(),
            );
        }
        return (true, "writes locally".into());
    };
    if connected >= 1.0 {
        let what = match metrics.component_type(&s.name) {
            Some("kafka") => "Kafka broker(s)",
            _ => "server(s)",
        };
        return (true, format!("connected to {connected} {what}"));
    }
    let held = s.queue.held_bytes();
    let percent = if s.max_bytes == 0 {
        0.0
    } else {
        100.0 * held as f64 / s.max_bytes as f64
    };
    // what is down and where to look for why, in the sink's own terms
    let (down, why) = match metrics.component_type(&s.name) {
        Some("kafka") => (
            "no Kafka broker connected",
            "logferry_kafka_client_errors_total",
        ),
        Some("splunk_hec")
            if metrics
                .value_if_any(
                    "logferry_splunk_hec_token_refused",
                    &[("component", &s.name)],
                )
                .is_some_and(|v| v >= 1.0) =>
        {
            (
                "the collector refuses the HEC token (401/403)",
                "logferry_splunk_hec_token_refusals_total",
            )
        }
        Some("http" | "opensearch" | "otlp" | "splunk_hec" | "loki") => (
            "the last request got no answer",
            "logferry_sink_http_errors_total",
        ),
        Some("s3")
            if metrics
                .value_if_any(
                    "logferry_sink_s3_credentials_refused",
                    &[("component", &s.name)],
                )
                .is_some_and(|v| v >= 1.0) =>
        {
            (
                "the store refuses the credentials (a wrong key id or secret, or a missing grant)",
                "logferry_sink_s3_errors_total",
            )
        }
        Some("s3") => (
            "the bucket check at start or the last upload failed",
            "logferry_sink_s3_errors_total",
        ),
        _ => (
            "no server connected",
            "logferry_forward_sink_connection_errors_total",
        ),
    };
    match s.buffer {
        BufferKind::Disk if held < s.max_bytes => (
            true,
            format!("{down}; buffering on disk ({percent:.0}% of max_bytes)"),
        ),
        BufferKind::Disk => (false, format!("{down} and the disk buffer is full")),
        BufferKind::Memory => (
            false,
            format!(
                "{down} ({percent:.0}% of the memory buffer used); \
                 see {why} and the log for why"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::BufferConfig;

    fn probe(
        metrics: &Registry,
        name: &str,
        buffer: BufferConfig,
    ) -> (SinkProbe, crate::buffer::QueueReceiver) {
        let (kind, max_bytes) = (buffer.kind, buffer.max_bytes);
        let (tx, rx) = crate::buffer::open(name, buffer, metrics).unwrap();
        let p = SinkProbe {
            name: name.into(),
            buffer: kind,
            max_bytes,
            queue: tx.gauge(),
        };
        (p, rx)
    }

    #[test]
    fn a_sink_is_ready_connected_local_or_buffering_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let m = Registry::new();
        let (local, _r1) = probe(&m, "local", BufferConfig::default());
        let (mem, _r2) = probe(&m, "mem", BufferConfig::default());
        let disk_config = BufferConfig {
            kind: BufferKind::Disk,
            dir: Some(dir.path().join("disk")),
            max_bytes: 1 << 20,
            segment_bytes: 1 << 18,
            ..BufferConfig::default()
        };
        let (disk, _r3) = probe(&m, "disk", disk_config);
        let mem_up = m.gauge(CONNECTED_METRIC, "x", &[("component", "mem")]);
        m.gauge(CONNECTED_METRIC, "x", &[("component", "disk")]);

        assert_eq!(sink_readiness(&m, &local), (true, "writes locally".into()));
        let (ready, why) = sink_readiness(&m, &mem);
        assert!(!ready && why.starts_with("no server connected"), "{why}");
        let (ready, why) = sink_readiness(&m, &disk);
        assert!(ready && why.contains("buffering on disk"), "{why}");
        // a Kafka sink says so, and where to look
        m.register_component("kafka", "kafka");
        let (kafka, _r4) = probe(&m, "kafka", BufferConfig::default());
        let kafka_up = m.gauge(CONNECTED_METRIC, "x", &[("component", "kafka")]);
        let (ready, why) = sink_readiness(&m, &kafka);
        assert!(!ready, "{why}");
        assert!(
            why.starts_with("no Kafka broker connected")
                && why.contains("logferry_kafka_client_errors_total"),
            "{why}"
        );
        kafka_up.set(2);
        assert_eq!(
            sink_readiness(&m, &kafka),
            (true, "connected to 2 Kafka broker(s)".into())
        );
        mem_up.inc();
        assert_eq!(
            sink_readiness(&m, &mem),
            (true, "connected to 1 server(s)".into())
        );

        let state = ApiState {
            metrics: m.clone(),
            sinks: Arc::new(std::sync::Mutex::new(vec![local.clone(), mem.clone()])),
            config: Arc::default(),
            reload: None,
            taps: None,
            memory: crate::memory::MemoryBudget::unlimited(),
        };
        assert!(readiness(&state).0);
        mem_up.dec();
        let (all, body) = readiness(&state);
        assert!(!all);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["ready"], false);
        assert_eq!(v["sinks"]["local"]["ready"], true);
        assert_eq!(v["sinks"]["mem"]["ready"], false);
    }
}
