//! A scripted OTLP/gRPC server (HTTP/2 with prior knowledge, hyper's) for
//! the gRPC answers a real collector rarely gives: UNAVAILABLE with a
//! `RetryInfo`, INVALID_ARGUMENT. It keeps every call as a
//! [`Request`] and answers each as a script says: OK as a framed message
//! with `grpc-status` in the trailers, an error trailers-only (its status
//! in the headers), as gRPC servers answer.

use std::convert::Infallible;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::scripted::{Received, Request};

/// The answer to a call.
#[derive(Debug, Clone)]
pub enum GrpcAnswer {
    /// OK: `message` (an encoded `ExportLogsServiceResponse`), framed,
    /// then `grpc-status: 0` in the trailers.
    Ok(Vec<u8>),
    /// An error, trailers-only: `grpc-status` `code`, `grpc-message` (plain
    /// ASCII here) and, when not empty, `details` (an encoded
    /// `google.rpc.Status`) in `grpc-status-details-bin`.
    Error {
        code: u16,
        message: String,
        details: Vec<u8>,
    },
}

/// The server; it stops when dropped.
pub struct ScriptedGrpc {
    pub addr: SocketAddr,
    requests: Received,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

type Script = dyn Fn(usize, &Request) -> GrpcAnswer + Send + Sync;

impl ScriptedGrpc {
    /// Answers the `k`th call (from 0, over every connection) with
    /// `script(k, request)`.
    pub fn start(
        script: impl Fn(usize, &Request) -> GrpcAnswer + Send + Sync + 'static,
    ) -> ScriptedGrpc {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Received::default();
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let script: Arc<Script> = Arc::new(script);
        let reqs = requests.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let tcp = tokio::select! {
                        _ = &mut stopped => return,
                        accepted = listener.accept() => match accepted {
                            Ok((tcp, _)) => tcp,
                            Err(_) => continue,
                        },
                    };
                    let (reqs, script) = (reqs.clone(), script.clone());
                    let service = hyper::service::service_fn(move |req| {
                        let (reqs, script) = (reqs.clone(), script.clone());
                        async move { Ok::<_, Infallible>(call(req, &reqs, &*script).await) }
                    });
                    tokio::spawn(
                        hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(tcp), service),
                    );
                }
            });
        });
        ScriptedGrpc {
            addr,
            requests,
            stop: Some(stop),
        }
    }

    /// The `endpoint` of an `otlp` sink with `protocol = "grpc"`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every call so far, in the order they were read.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.all()
    }
}

impl Drop for ScriptedGrpc {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

type Answer = Response<BoxBody<Bytes, Infallible>>;

async fn call(
    req: hyper::Request<hyper::body::Incoming>,
    requests: &Received,
    script: &Script,
) -> Answer {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let req = Request {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.to_vec(),
        at: Instant::now(),
    };
    let k = requests.keep(req.clone());
    let mut r = match script(k, &req) {
        GrpcAnswer::Ok(message) => {
            let mut framed = vec![0];
            framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
            framed.extend_from_slice(&message);
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().unwrap());
            Response::new(
                Full::new(Bytes::from(framed))
                    .with_trailers(async move { Some(Ok(trailers)) })
                    .boxed(),
            )
        }
        GrpcAnswer::Error {
            code,
            message,
            details,
        } => {
            let mut r = Response::new(Full::new(Bytes::new()).boxed());
            let h = r.headers_mut();
            h.insert("grpc-status", code.into());
            h.insert("grpc-message", message.parse().unwrap());
            if !details.is_empty() {
                let bin = base64::engine::general_purpose::STANDARD_NO_PAD.encode(details);
                h.insert("grpc-status-details-bin", bin.parse().unwrap());
            }
            r
        }
    };
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert("content-type", "application/grpc".parse().unwrap());
    r
}

/// The one message of a call's body: its 5-byte prefix checked and
/// removed, gunzipped when its flag says compressed (which the call's
/// `grpc-encoding` must then name).
pub fn message(req: &Request) -> Vec<u8> {
    let (prefix, message) = req.body.split_at(5);
    let announced = u32::from_be_bytes(prefix[1..5].try_into().unwrap()) as usize;
    assert_eq!(announced, message.len(), "one whole message");
    match prefix[0] {
        0 => message.to_vec(),
        1 => {
            assert_eq!(req.header("grpc-encoding"), Some("gzip"));
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(message)
                .read_to_end(&mut out)
                .expect("a gzip message");
            out
        }
        flag => panic!("message flag {flag}"),
    }
}
