//! A scripted HTTP/1.1 server for the request-based sinks: it keeps every
//! request (headers and body bytes) and answers each as a script says,
//! for answers a real server rarely gives (a 503 with `Retry-After`, a
//! 400, a partial success).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One request as it was received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When it was read whole.
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body, gunzipped when its `content-encoding` says gzip.
    pub fn decoded_body(&self) -> Vec<u8> {
        if self.header("content-encoding") != Some("gzip") {
            return self.body.clone();
        }
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&self.body[..])
            .read_to_end(&mut out)
            .expect("a gzip body");
        out
    }
}

/// The answer to a request.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn new(status: u16, content_type: &'static str, body: Vec<u8>) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            content_type,
            body,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// The requests a scripted server has read, shared by its connections.
#[derive(Clone, Default)]
pub struct Received(Arc<Mutex<Vec<Request>>>);

impl Received {
    /// Keeps `req`; returns its number (from 0, over every connection).
    pub fn keep(&self, req: Request) -> usize {
        let mut all = self.0.lock().unwrap();
        all.push(req);
        all.len() - 1
    }

    /// Every request so far, in the order they were read.
    pub fn all(&self) -> Vec<Request> {
        self.0.lock().unwrap().clone()
    }
}

/// The server; it stops taking connections when dropped.
pub struct Scripted {
    pub addr: SocketAddr,
    requests: Received,
    stop: Arc<AtomicBool>,
}

type Script = dyn Fn(usize, &Request) -> Answer + Send + Sync;

impl Scripted {
    /// Answers the `k`th request (from 0, over every connection) with
    /// `script(k, request)`.
    pub fn start(script: impl Fn(usize, &Request) -> Answer + Send + Sync + 'static) -> Scripted {
        Self::start_on(0, script)
    }

    /// Like [`Scripted::start`], on 127.0.0.1:`port` (0: any free port).
    pub fn start_on(
        port: u16,
        script: impl Fn(usize, &Request) -> Answer + Send + Sync + 'static,
    ) -> Scripted {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Received::default();
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::new(script);
        let (reqs, halt) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if halt.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (reqs, script) = (reqs.clone(), script.clone());
                std::thread::spawn(move || serve(conn, &reqs, &*script));
            }
        });
        Scripted {
            addr,
            requests,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in the order they were read.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.all()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(conn: TcpStream, requests: &Received, script: &Script) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; length];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let req = Request {
            method,
            path,
            headers,
            body,
            at: Instant::now(),
        };
        let k = requests.keep(req.clone());
        let a = script(k, &req);
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\n",
            a.status,
            a.content_type,
            a.body.len()
        );
        for (k, v) in &a.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&a.body).is_err() {
            return;
        }
    }
}
