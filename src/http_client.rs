//! The HTTP client of the request-based sinks (`http`, `opensearch`,
//! `otlp`) and of the Kubernetes API watch: one origin (`scheme://host:port`), keep-alive connections
//! reused from an idle pool (HTTP/1.1) or one multiplexed connection
//! (HTTP/2: by ALPN over TLS, with prior knowledge in plain text), TLS
//! with the settings every client shares, and every wait bounded: the
//! connect by `connect_timeout`, the whole exchange by `request_timeout`,
//! the answer by `max_response_bytes`. An answer's trailers are kept (an
//! OTLP/gRPC answer's status is in them). A streamed answer
//! ([`Client::send_streaming`], a Kubernetes watch) has its head bounded
//! by `request_timeout` and then each chunk of its body by an idle
//! timeout, for as long as the server keeps sending.
//!
//! hyper's connection-level client is used directly: the sinks need only
//! one origin each, and their own pool keeps a connection whose answer was
//! not read to its end (too large, timed out) out of reuse.

use std::sync::Mutex;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::tls::ClientTlsConfig;

/// `http_version`: which HTTP the sink speaks.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum HttpVersion {
    /// Over TLS, HTTP/2 when the server offers it (ALPN), else HTTP/1.1;
    /// in plain text, HTTP/1.1.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only; in plain text "prior knowledge" (h2c).
    Http2,
}

/// Where and how the client connects.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `http` or `https` base of every request (path and query are the
    /// request's).
    pub base: Uri,
    pub version: HttpVersion,
    /// TLS settings; required by an `https` base (defaults apply when unset).
    pub tls: Option<ClientTlsConfig>,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// Most bytes of an answer's body read; past them the connection is
    /// closed and [`Answer::complete`] is false.
    pub max_response_bytes: usize,
}

/// An answer, its body read up to `max_response_bytes`.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// False when the body was longer than `max_response_bytes` (`body`
    /// holds its start, and its trailers were not read).
    pub complete: bool,
    /// The trailers after the body (HTTP/2, or chunked HTTP/1.1); empty
    /// when there were none.
    pub trailers: HeaderMap,
}

/// Why an exchange did not give an answer. Every one is worth a retry:
/// the destination may be back, reachable or faster later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// TCP connect failed or timed out.
    Connect(String),
    /// The TLS handshake failed (a wrong name, an unknown CA…).
    Tls(String),
    /// No whole answer within `request_timeout`.
    Timeout(Duration),
    /// The connection broke during the exchange.
    Broken(String),
    /// A streamed answer's next chunk did not come within its idle
    /// timeout.
    Idle(Duration),
}

impl SendError {
    /// A short stable name, the `kind` label of the error counter.
    pub fn kind(&self) -> &'static str {
        match self {
            SendError::Connect(_) => "connect",
            SendError::Tls(_) => "tls",
            SendError::Timeout(_) => "timeout",
            SendError::Broken(_) => "broken",
            SendError::Idle(_) => "idle",
        }
    }
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Connect(e) => write!(f, "cannot connect: {e}"),
            SendError::Tls(e) => write!(f, "TLS handshake failed: {e}"),
            SendError::Timeout(t) => {
                write!(f, "no answer within request_timeout ({t:?})")
            }
            SendError::Broken(e) => write!(f, "connection broken: {e}"),
            SendError::Idle(t) => write!(f, "nothing more of the answer within {t:?}"),
        }
    }
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

type Body = Full<Bytes>;

/// A connection ready for a request.
enum Conn {
    H1(http1::SendRequest<Body>),
    H2(http2::SendRequest<Body>),
}

/// Connections to one origin.
pub struct Client {
    config: ClientConfig,
    /// `host:port` to connect to.
    address: String,
    /// The `Host` header of HTTP/1.1 requests.
    host: HeaderValue,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    /// Idle HTTP/1.1 connections, most recently used last.
    idle: Mutex<Vec<http1::SendRequest<Body>>>,
    /// The HTTP/2 connection, shared by every request.
    h2: Mutex<Option<http2::SendRequest<Body>>>,
}

/// Most idle HTTP/1.1 connections kept; more are closed when they fall idle.
const MAX_IDLE: usize = 32;

impl Client {
    pub fn new(config: ClientConfig) -> Result<Client, String> {
        Client::build(config, None)
    }

    /// A client whose TLS settings the caller built (a kubeconfig holds its
    /// certificates inline, not in files); ALPN is set here by `version`,
    /// and `config.tls` gives only the `server_name` to verify.
    pub fn with_rustls(config: ClientConfig, tls: rustls::ClientConfig) -> Result<Client, String> {
        Client::build(config, Some(tls))
    }

    fn build(config: ClientConfig, custom: Option<rustls::ClientConfig>) -> Result<Client, String> {
        let https = match config.base.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(format!("{}: the scheme must be http or https", config.base)),
        };
        let authority = config
            .base
            .authority()
            .ok_or_else(|| format!("{}: no host", config.base))?;
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let address = format!("{}:{port}", authority.host());
        let host = HeaderValue::from_str(authority.as_str()).map_err(|e| e.to_string())?;
        let tls = if https {
            let tls = config.tls.clone().unwrap_or_default();
            let alpn: &[&[u8]] = match config.version {
                HttpVersion::Auto => &[b"h2", b"http/1.1"],
                HttpVersion::Http1 => &[b"http/1.1"],
                HttpVersion::Http2 => &[b"h2"],
            };
            let connector = match custom {
                Some(mut custom) => {
                    custom.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
                    TlsConnector::from(std::sync::Arc::new(custom))
                }
                None => tls.connector_with_alpn(alpn)?,
            };
            Some((connector, tls.server_name(&address)?))
        } else {
            if config.tls.is_some() || custom.is_some() {
                return Err(format!(
                    "{}: `tls` is set but the scheme is http; use https",
                    config.base
                ));
            }
            None
        };
        Ok(Client {
            config,
            address,
            host,
            tls,
            idle: Mutex::new(Vec::new()),
            h2: Mutex::new(None),
        })
    }

    pub fn base(&self) -> &Uri {
        &self.config.base
    }

    /// Sends `request` (its URI holds only path and query) and reads the
    /// answer, all within `request_timeout`.
    pub async fn send(&self, request: Request<Body>) -> Result<Answer, SendError> {
        let limit = self.config.request_timeout;
        match tokio::time::timeout(limit, self.exchange(request)).await {
            Ok(r) => r,
            // the connection in use is dropped with the exchange: closed
            Err(_) => Err(SendError::Timeout(limit)),
        }
    }

    /// Sends `request` (its URI holds only path and query) and returns the
    /// answer's head within `request_timeout`; the caller reads its body
    /// chunk by chunk, each within `idle_timeout`. The connection serves
    /// this answer alone and closes once the body is read or dropped.
    pub async fn send_streaming(
        &self,
        request: Request<Body>,
        idle_timeout: Duration,
    ) -> Result<Streaming, SendError> {
        let limit = self.config.request_timeout;
        let (response, _) = tokio::time::timeout(limit, self.head(request))
            .await
            .map_err(|_| SendError::Timeout(limit))??;
        let (parts, body) = response.into_parts();
        Ok(Streaming {
            status: parts.status,
            headers: parts.headers,
            body: BodyStream { body, idle_timeout },
        })
    }

    async fn exchange(&self, request: Request<Body>) -> Result<Answer, SendError> {
        let (response, h1) = self.head(request).await?;
        self.read_answer(response, h1).await
    }

    /// The answer's head, and the HTTP/1.1 connection it came on.
    async fn head(
        &self,
        request: Request<Body>,
    ) -> Result<(Response<Incoming>, Option<http1::SendRequest<Body>>), SendError> {
        let (conn, reused) = self.connection().await?;
        // a kept-alive connection the server closed just as it was reused
        // (servers close idle connections, some after every answer without
        // saying so) fails before any answer: the request is sent once
        // more on a new connection, not counted as a failure
        let again = reused.then(|| copy(&request));
        match (self.head_on(conn, request).await, again) {
            (Ok(head), _) => Ok(head),
            (Err(_), Some(again)) => {
                let conn = self.connect().await?;
                self.head_on(conn, again).await
            }
            (Err(e), None) => Err(e),
        }
    }

    /// Sends `request` on `conn` and waits for the answer's head.
    async fn head_on(
        &self,
        conn: Conn,
        mut request: Request<Body>,
    ) -> Result<(Response<Incoming>, Option<http1::SendRequest<Body>>), SendError> {
        let path = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .to_string();
        match conn {
            Conn::H1(mut sender) => {
                *request.uri_mut() = path
                    .parse()
                    .map_err(|e| SendError::Broken(format!("{e}")))?;
                request
                    .headers_mut()
                    .insert(http::header::HOST, self.host.clone());
                let r = sender.send_request(request).await.map_err(broken)?;
                Ok((r, Some(sender)))
            }
            Conn::H2(mut sender) => {
                let scheme = if self.tls.is_some() { "https" } else { "http" };
                *request.uri_mut() =
                    format!("{scheme}://{}{path}", self.host.to_str().unwrap_or(""))
                        .parse()
                        .map_err(|e| SendError::Broken(format!("{e}")))?;
                let r = sender.send_request(request).await.map_err(broken)?;
                Ok((r, None))
            }
        }
    }

    /// Reads the body of `response` up to `max_response_bytes`; a whole
    /// answer gives its HTTP/1.1 connection back to the pool.
    async fn read_answer(
        &self,
        response: Response<Incoming>,
        h1: Option<http1::SendRequest<Body>>,
    ) -> Result<Answer, SendError> {
        let (parts, mut body) = response.into_parts();
        let max = self.config.max_response_bytes;
        let mut read = BytesMut::new();
        let mut complete = true;
        let mut trailers = HeaderMap::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(broken)?;
            let data = match frame.into_data() {
                Ok(data) => data,
                Err(frame) => {
                    if let Ok(t) = frame.into_trailers() {
                        trailers.extend(t);
                    }
                    continue;
                }
            };
            if read.len() + data.len() > max {
                read.extend_from_slice(&data[..max - read.len()]);
                complete = false;
                break;
            }
            read.extend_from_slice(&data);
        }
        if complete {
            if let Some(sender) = h1 {
                self.put_back(sender);
            }
        }
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body: read.freeze(),
            complete,
            trailers,
        })
    }

    /// An idle connection, the HTTP/2 one, or a new one; true when it is
    /// an HTTP/1.1 connection used before.
    async fn connection(&self) -> Result<(Conn, bool), SendError> {
        if let Some(h2) = self.lock_h2().as_ref().filter(|s| !s.is_closed()) {
            return Ok((Conn::H2(h2.clone()), false));
        }
        loop {
            let Some(mut sender) = self.lock_idle().pop() else {
                break;
            };
            // a connection the server closed while idle is dropped here
            if !sender.is_closed() && sender.ready().await.is_ok() {
                return Ok((Conn::H1(sender), true));
            }
        }
        Ok((self.connect().await?, false))
    }

    async fn connect(&self) -> Result<Conn, SendError> {
        let tcp = tokio::time::timeout(
            self.config.connect_timeout,
            TcpStream::connect(&self.address),
        )
        .await
        .map_err(|_| {
            SendError::Connect(format!(
                "{}: no connection within connect_timeout ({:?})",
                self.address, self.config.connect_timeout
            ))
        })?
        .map_err(|e| SendError::Connect(format!("{}: {e}", self.address)))?;
        let _ = tcp.set_nodelay(true);
        let (io, h2): (Box<dyn Io>, bool) = match &self.tls {
            None => (Box::new(tcp), self.config.version == HttpVersion::Http2),
            Some((connector, name)) => {
                let tls = tokio::time::timeout(
                    self.config.connect_timeout,
                    connector.connect(name.clone(), tcp),
                )
                .await
                .map_err(|_| SendError::Tls("no handshake within connect_timeout".into()))?
                .map_err(|e| SendError::Tls(crate::tls::explain_io(&e)))?;
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                (Box::new(tls), h2)
            }
        };
        let io = TokioIo::new(io);
        if h2 {
            let (sender, conn) = http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(broken)?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            *self.lock_h2() = Some(sender.clone());
            Ok(Conn::H2(sender))
        } else {
            let (sender, conn) = http1::handshake(io).await.map_err(broken)?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Conn::H1(sender))
        }
    }

    fn put_back(&self, sender: http1::SendRequest<Body>) {
        let mut idle = self.lock_idle();
        if idle.len() < MAX_IDLE && !sender.is_closed() {
            idle.push(sender);
        }
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<http1::SendRequest<Body>>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_h2(&self) -> std::sync::MutexGuard<'_, Option<http2::SendRequest<Body>>> {
        self.h2.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An answer whose body the caller reads as it comes
/// ([`Client::send_streaming`]).
#[derive(Debug)]
pub struct Streaming {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Read by the caller, chunk by chunk.
    pub body: BodyStream,
}

/// The body of a [`Streaming`] answer.
#[derive(Debug)]
pub struct BodyStream {
    body: Incoming,
    /// Longest wait for the next chunk: a server that went away without
    /// closing the connection is noticed after it.
    idle_timeout: Duration,
}

impl BodyStream {
    /// The next chunk of the body, `Ok(None)` at its end; trailers are
    /// skipped.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, SendError> {
        loop {
            let frame = match tokio::time::timeout(self.idle_timeout, self.body.frame()).await {
                Err(_) => return Err(SendError::Idle(self.idle_timeout)),
                Ok(None) => return Ok(None),
                Ok(Some(frame)) => frame.map_err(broken)?,
            };
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// The same request again (its body is shared, not copied).
fn copy(request: &Request<Body>) -> Request<Body> {
    let mut again = Request::new(request.body().clone());
    *again.method_mut() = request.method().clone();
    *again.uri_mut() = request.uri().clone();
    *again.version_mut() = request.version();
    *again.headers_mut() = request.headers().clone();
    again
}

fn broken(e: hyper::Error) -> SendError {
    use std::error::Error as _;
    let mut text = e.to_string();
    if let Some(cause) = e.source() {
        text = format!("{text}: {cause}");
    }
    SendError::Broken(text)
}

/// `text` percent-encoded for a query value.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The wait a `Retry-After` header asks for (seconds, or an HTTP date).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(http::header::RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert(
            http::header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(http::header::RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[tokio::test]
    async fn a_streamed_answer_is_read_chunk_by_chunk_and_a_silent_server_times_out() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (go_on, mut wait) = tokio::sync::mpsc::channel::<()>(1);
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 1024];
            let _ = s.read(&mut head).await.unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\na\n\r\n")
                .await
                .unwrap();
            // the second chunk only once the first was read; then silence
            wait.recv().await;
            s.write_all(b"2\r\nb\n\r\n").await.unwrap();
            wait.recv().await;
        });
        let client = Client::new(ClientConfig {
            base: format!("http://127.0.0.1:{port}").parse().unwrap(),
            version: HttpVersion::Http1,
            tls: None,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            max_response_bytes: 1,
        })
        .unwrap();
        let request = Request::get("/watch").body(Body::default()).unwrap();
        let mut answer = client
            .send_streaming(request, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(
            answer.body.chunk().await.unwrap().as_deref(),
            Some(&b"a\n"[..])
        );
        go_on.send(()).await.unwrap();
        assert_eq!(
            answer.body.chunk().await.unwrap().as_deref(),
            Some(&b"b\n"[..])
        );
        assert_eq!(
            answer.body.chunk().await,
            Err(SendError::Idle(Duration::from_secs(2)))
        );
        drop(go_on);
    }

    #[test]
    fn a_base_without_http_scheme_or_with_tls_on_http_is_refused() {
        let config = |base: &str, tls: Option<ClientTlsConfig>| ClientConfig {
            base: base.parse().unwrap(),
            version: HttpVersion::Auto,
            tls,
            connect_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(1),
            max_response_bytes: 1024,
        };
        assert!(Client::new(config("ftp://x:1/", None)).is_err());
        assert!(Client::new(config("http://x:1/", Some(Default::default()))).is_err());
        let c = Client::new(config("http://example.com/a", None)).unwrap();
        assert_eq!(c.address, "example.com:80");
    }
}
