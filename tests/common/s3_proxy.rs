//! An HTTP/1.1 proxy between the `s3` sink and an S3 server that keeps
//! every request it forwards, so a test can check what the sink sent, and
//! a SigV4 checker for those requests.
//!
//! It takes requests both as a reverse proxy (the sink's `endpoint` is
//! the proxy) and as a forward proxy (the sink's `proxy_url`: the request
//! target is `http://bucket.domain:port/key`), and sends each, in origin
//! form with its headers (`Host` too) unchanged, to the one server it
//! stands before: no name is ever resolved, so `logs.s3.test` reaches
//! s3s-fs without an /etc/hosts entry.
//!
//! s3s-fs refuses a body that does not hash to its `x-amz-content-sha256`
//! but takes any body sent as `UNSIGNED-PAYLOAD`, so what it stores does
//! not show that the sink signed it; [`sigv4_problems`] does: the body's
//! SHA-256 against `x-amz-content-sha256`, that header (and `host`) among
//! the signed ones, and the signature itself, recomputed from the request
//! with the secret.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};

/// One request as the proxy forwarded it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// The request target in origin form (`/key?query`), as signed.
    pub target: String,
    /// Names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body sent on to the server (changed, with `change_put_bodies`).
    pub body: Bytes,
    /// The server's answer; 0 if it gave none.
    pub status: u16,
}

impl Seen {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Replaces header `name` (lower case), as a forger would.
    pub fn set_header(&mut self, name: &str, value: &str) {
        self.headers.retain(|(n, _)| n != name);
        self.headers.push((name.to_string(), value.to_string()));
    }

    /// A single `PutObject` or an `UploadPart`.
    pub fn is_put(&self) -> bool {
        self.method == "PUT"
    }

    /// An `UploadPart` (`?partNumber=…&uploadId=…`).
    pub fn is_part(&self) -> bool {
        self.is_put() && self.target.contains("partNumber=")
    }
}

/// A running proxy; stops when dropped.
pub struct S3Proxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl S3Proxy {
    /// A proxy on a free loopback port for the server at `server`. With
    /// `change_put_bodies`, one byte in the middle of every `PUT` body is
    /// flipped on the way and the headers are left as signed.
    pub fn start(server: SocketAddr, change_put_bodies: bool) -> S3Proxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let kept = seen.clone();
        runtime.spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let kept = kept.clone();
                let relay = hyper::service::service_fn(move |req| {
                    relay(req, server, change_put_bodies, kept.clone())
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(conn), relay),
                );
            }
        });
        S3Proxy {
            addr,
            seen,
            runtime: Some(runtime),
        }
    }

    /// `http://127.0.0.1:PORT`: an `endpoint` or a `proxy_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request forwarded so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for S3Proxy {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

async fn relay(
    req: Request<Incoming>,
    server: SocketAddr,
    change_put_bodies: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
) -> Result<Response<Full<Bytes>>, Failure> {
    let (parts, body) = req.into_parts();
    let mut body = body.collect().await?.to_bytes();
    if change_put_bodies && parts.method == Method::PUT && !body.is_empty() {
        let mut changed = body.to_vec();
        let at = changed.len() / 2;
        changed[at] ^= 0x01;
        body = changed.into();
    }
    let target = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    let mut out = Request::builder().method(parts.method.clone()).uri(&target);
    for (name, value) in &parts.headers {
        if !name.as_str().starts_with("proxy-") {
            out = out.header(name, value);
        }
    }
    let answer = forward(out.body(Full::new(body.clone()))?, server).await;
    seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        target,
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect(),
        body,
        status: answer
            .as_ref()
            .map_or(0, |(parts, _)| parts.status.as_u16()),
    });
    let (mut parts, body) = answer?;
    // the body goes back whole, with a length of its own
    parts.headers.remove(hyper::header::TRANSFER_ENCODING);
    parts.headers.remove(hyper::header::CONNECTION);
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// Sends `req` to `server` on a connection of its own; the whole answer.
async fn forward(
    req: Request<Full<Bytes>>,
    server: SocketAddr,
) -> Result<(hyper::http::response::Parts, Bytes), Failure> {
    let conn = tokio::net::TcpStream::connect(server).await?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(conn)).await?;
    tokio::spawn(conn);
    let (parts, body) = send.send_request(req).await?.into_parts();
    Ok((parts, body.collect().await?.to_bytes()))
}

/// What is wrong with `r` as a SigV4-signed S3 request made with `secret`:
/// nothing (empty) if its body hashes to `x-amz-content-sha256`, that
/// header and `host` are signed, and its signature is the one `secret`
/// gives. Each problem starts with `payload`, `signed headers` or
/// `signature`.
pub fn sigv4_problems(r: &Seen, secret: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let declared = r.header("x-amz-content-sha256").unwrap_or("");
    let body_hash = payload_hash(&r.body);
    if declared != body_hash {
        problems.push(format!(
            "payload: x-amz-content-sha256 {declared:?}, the body's SHA-256 {body_hash}"
        ));
    }
    let Some(auth) = r
        .header("authorization")
        .and_then(|a| a.strip_prefix("AWS4-HMAC-SHA256 "))
    else {
        problems.push("signature: no AWS4-HMAC-SHA256 authorization".into());
        return problems;
    };
    let field = |name: &str| {
        auth.split(',')
            .filter_map(|f| f.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map_or("", |(_, v)| v)
    };
    let signed: Vec<&str> = field("SignedHeaders").split(';').collect();
    for must in ["host", "x-amz-content-sha256", "x-amz-date"] {
        if !signed.contains(&must) {
            problems.push(format!("signed headers: {must} is not among {signed:?}"));
        }
    }
    // Credential=KEY/DATE/REGION/SERVICE/aws4_request
    let scope = field("Credential")
        .split_once('/')
        .map_or("", |(_, scope)| scope);
    let s: Vec<&str> = scope.split('/').collect();
    if s.len() != 4 {
        problems.push(format!("signature: credential scope {scope:?}"));
        return problems;
    }
    let date = r.header("x-amz-date").unwrap_or("");
    let canonical_headers: String = signed
        .iter()
        .map(|name| {
            let value = r.header(name).unwrap_or("");
            let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("{name}:{value}\n")
        })
        .collect();
    let (path, query) = r.target.split_once('?').unwrap_or((&r.target, ""));
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some(_) => p.to_string(),
            None => format!("{p}="),
        })
        .collect();
    pairs.sort();
    let canonical_request = format!(
        "{}\n{path}\n{}\n{canonical_headers}\n{}\n{declared}",
        r.method,
        pairs.join("&"),
        signed.join(";")
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let mut key = format!("AWS4{secret}").into_bytes();
    for part in &s {
        key = hmac(&key, part.as_bytes());
    }
    let expected = hex(&hmac(&key, string_to_sign.as_bytes()));
    if field("Signature") != expected {
        problems.push(format!(
            "signature: {:?}, recomputed {expected}",
            field("Signature")
        ));
    }
    problems
}

/// What `x-amz-content-sha256` says for a signed `body`: its SHA-256 in hex.
pub fn payload_hash(body: &[u8]) -> String {
    hex(&Sha256::digest(body))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
