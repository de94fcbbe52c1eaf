//! The HTTP source over real HTTP/1.1 on loopback: every content type
//! delivers each record once, answers wait for the sinks, bad requests are
//! refused with the right status, counted, and do not disturb anyone else.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::*;
use logferry::protocol::msgpack::write;

/// An answer: status, headers (lower-case names), body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive HTTP/1.1 client speaking raw bytes.
struct Client<S = TcpStream> {
    reader: BufReader<S>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Client {
            reader: BufReader::new(s),
        }
    }
}

impl<S: Read + Write> Client<S> {
    fn send(&mut self, method: &str, path: &str, content_type: Option<&str>, body: &[u8]) {
        let ct = content_type.map(|ct| ("Content-Type", ct));
        self.send_headers(method, path, ct.as_slice(), body);
    }

    fn send_headers(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        req.push_str("\r\n");
        let s = self.reader.get_mut();
        s.write_all(req.as_bytes()).unwrap();
        // a server may answer (413) and close before reading the body
        let _ = s.write_all(body);
    }

    fn reply(&mut self) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a status line");
        assert!(line.starts_with("HTTP/1.1 "), "status line {line:?}");
        let status = line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').unwrap();
            headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).unwrap();
        Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    fn post(&mut self, path: &str, content_type: Option<&str>, body: &[u8]) -> Reply {
        self.send("POST", path, content_type, body);
        self.reply()
    }

    /// A POST with `Content-Encoding: encoding` (and a content type).
    fn post_encoded(
        &mut self,
        path: &str,
        content_type: Option<&str>,
        encoding: &str,
        body: &[u8],
    ) -> Reply {
        let mut headers = vec![("Content-Encoding", encoding)];
        headers.extend(content_type.map(|ct| ("Content-Type", ct)));
        self.send_headers("POST", path, &headers, body);
        self.reply()
    }

    /// True once the server has closed the connection.
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.reader.read(&mut b), Ok(0) | Err(_))
    }
}

/// The text of `GET /metrics` on the API address.
fn metrics(api: SocketAddr) -> String {
    let mut m = TcpStream::connect(api).unwrap();
    m.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    m.read_to_string(&mut text).unwrap();
    text
}

fn metric(text: &str, name_and_labels: &str) -> u64 {
    metric_value(text, name_and_labels) as u64
}

fn msgpack_map(out: &mut Vec<u8>, message: &str) {
    write::map_len(out, 1);
    write::str(out, b"message");
    write::str(out, message.as_bytes());
}

fn percent_encode(b: &[u8]) -> String {
    b.iter().map(|c| format!("%{c:02X}")).collect()
}

/// The bodies of one request of `n` records named `{prefix}-{i}`, per type.
fn body(
    kind: &str,
    prefix: &str,
    range: std::ops::Range<usize>,
) -> (Option<&'static str>, Vec<u8>) {
    let names: Vec<String> = range.map(|i| format!("{prefix}-{i}")).collect();
    let json = || {
        let items: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"message":"{n}","time":1700000000.25}}"#))
            .collect();
        format!("[{}]", items.join(","))
    };
    let msgpack = || {
        let mut m = Vec::new();
        write::array_len(&mut m, names.len());
        for n in &names {
            msgpack_map(&mut m, n);
        }
        m
    };
    match kind {
        "json" => (Some("application/json"), json().into_bytes()),
        "ndjson" => {
            let lines: Vec<String> = names
                .iter()
                .map(|n| format!(r#"{{"message":"{n}"}}"#))
                .collect();
            (Some("application/x-ndjson"), lines.join("\n").into_bytes())
        }
        "msgpack" => (Some("application/msgpack"), msgpack()),
        "text" => (
            Some("text/plain"),
            names
                .iter()
                .map(|n| format!("{n}\n"))
                .collect::<String>()
                .into_bytes(),
        ),
        "form-json" => (
            Some("application/x-www-form-urlencoded"),
            format!("json={}", percent_encode(json().as_bytes())).into_bytes(),
        ),
        "form-msgpack" => (
            None,
            format!("msgpack={}", percent_encode(&msgpack())).into_bytes(),
        ),
        _ => unreachable!(),
    }
}

const KINDS: [&str; 6] = [
    "json",
    "ndjson",
    "msgpack",
    "text",
    "form-json",
    "form-msgpack",
];

#[test]
fn every_content_type_delivers_each_record_once_on_one_connection() {
    let mut lf = Logferry::start(&http_to_file(""));
    let addr = lf.http_addr("in");
    let out = lf.path("unified.log");
    let mut c = Client::connect(addr);
    const PER_REQUEST: usize = 50;
    const REQUESTS: usize = 10;
    for kind in KINDS {
        for r in 0..REQUESTS {
            let range = r * PER_REQUEST..(r + 1) * PER_REQUEST;
            let (ct, b) = body(kind, kind, range.clone());
            let reply = c.post("/app/web", ct, &b);
            assert_eq!(reply.status, 200, "{kind}: {reply:?}");
            // answered only once the file sink has written them
            let lines = read_lines(&out);
            for i in range {
                let want = format!("{kind}-{i}");
                assert!(
                    lines.contains(&want),
                    "{want} not in the file when 200 came"
                );
            }
        }
    }
    c.send("GET", "/app/web", None, b"");
    assert_eq!(c.reply().status, 405, "records come by POST");
    c.send("GET", "/health", None, b"");
    assert_eq!(c.reply().status, 200);
    lf.stop();
    let lines = read_lines(&out);
    for kind in KINDS {
        assert_exactly(&lines, kind, PER_REQUEST * REQUESTS);
    }
    assert_eq!(lines.len(), KINDS.len() * PER_REQUEST * REQUESTS);
    assert_eq!(
        lf.final_counter("logferry_http_connections_total{component=\"in\"}"),
        1
    );
    assert_eq!(
        lf.final_counter("logferry_http_requests_total{component=\"in\",code=\"200\"}"),
        (KINDS.len() * REQUESTS + 1) as u64
    );
    assert_eq!(
        lf.final_counter("logferry_source_records_total{component=\"in\"}"),
        (KINDS.len() * PER_REQUEST * REQUESTS) as u64
    );
}

#[test]
fn tag_from_the_path_and_time_from_the_query_or_the_record() {
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[sinks.unified]
type = "file"
match = "app.web"
path = "{dir}/unified.log"
format = "json"
"#,
    );
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    let r = c.post(
        "/app/web",
        Some("application/json"),
        br#"{"message":"a","time":1700000000.5}"#,
    );
    assert_eq!(r.status, 200);
    let r = c.post(
        "/app/web?time=1600000000",
        Some("application/json"),
        br#"{"message":"b","time":5}"#,
    );
    assert_eq!(r.status, 200);
    // another tag: routed nowhere here
    assert_eq!(c.post("/other", Some("text/plain"), b"c\n").status, 200);
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    assert_eq!(lines.len(), 2, "{lines:?}");
    let a: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let b: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(a["tag"], "app.web");
    assert_eq!(a["time"], "2023-11-14T22:13:20.500000000Z");
    assert_eq!(
        a["record"],
        serde_json::json!({"message": "a"}),
        "time leaves the record"
    );
    assert_eq!(b["time"], "2020-09-13T12:26:40.000000000Z");
    assert_eq!(b["record"], serde_json::json!({"message": "b", "time": 5}));
}

#[test]
fn bad_requests_are_refused_counted_and_the_rest_served() {
    let mut lf = Logferry::start(&http_to_file(
        "max_body_bytes = \"1KiB\"\nmax_header_bytes = \"8KiB\"\n[api]\naddress = \"127.0.0.1:0\"",
    ));
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    let r = c.post("/t", Some("application/json"), b"{\"message\":");
    assert_eq!(r.status, 400);
    assert!(r.body.contains("invalid JSON"), "{r:?}");
    let r = c.post("/t", Some("application/json"), b"[1,2]");
    assert_eq!(r.status, 400);
    assert!(r.body.contains("array of JSON objects"), "{r:?}");
    let r = c.post("/t?time=soon", Some("text/plain"), b"x\n");
    assert_eq!(r.status, 400);
    // the connection still serves after a malformed body
    assert_eq!(c.post("/t", Some("text/plain"), b"good-0\n").status, 200);
    let r = c.post("/", Some("text/plain"), b"x\n");
    assert_eq!(r.status, 404);
    assert_eq!(c.post("/t", Some("text/plain"), b"good-1\n").status, 200);

    let r = Client::connect(addr).post("/t", Some("image/png"), b"x");
    assert_eq!(r.status, 415);
    assert!(r.body.contains("application/json"), "{r:?}");

    let mut big = Client::connect(addr);
    let r = big.post("/t", Some("text/plain"), &vec![b'x'; 4096]);
    assert_eq!(r.status, 413);
    assert!(r.body.contains("max_body_bytes"), "{r:?}");
    // without Content-Length: the limit holds while reading
    let mut chunked = Client::connect(addr);
    let s = chunked.reader.get_mut();
    s.write_all(b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    for _ in 0..8 {
        let _ = s.write_all(b"200\r\n");
        let _ = s.write_all(&[b'y'; 0x200]);
        let _ = s.write_all(b"\r\n");
    }
    assert_eq!(chunked.reply().status, 413);

    let mut headers = Client::connect(addr);
    let long = format!(
        "POST /t HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "h".repeat(16 * 1024)
    );
    let _ = headers.reader.get_mut().write_all(long.as_bytes());
    assert_eq!(headers.reply().status, 431);

    let mut other = Client::connect(addr);
    assert_eq!(
        other.post("/t", Some("text/plain"), b"good-2\n").status,
        200
    );
    let mut raw = Client::connect(addr);
    raw.reader
        .get_mut()
        .write_all(b"NOT HTTP AT ALL\r\n\r\n")
        .unwrap();
    assert_eq!(raw.reply().status, 400);
    assert_eq!(
        other.post("/t", Some("text/plain"), b"good-3\n").status,
        200
    );

    // more kinds than the shutdown summary lists: read them from /metrics
    let text = metrics(lf.address("api listening"));
    let errors = |kind: &str| {
        metric(
            &text,
            &format!("logferry_http_errors_total{{component=\"in\",kind=\"{kind}\"}}"),
        )
    };
    assert_eq!(errors("malformed"), 3);
    assert_eq!(errors("no_tag"), 1);
    assert_eq!(errors("unsupported_type"), 1);
    assert_eq!(errors("too_large"), 2);
    assert_eq!(errors("bad_request"), 1);
    assert_eq!(errors("header_too_large"), 1);
    let code = |c: u16| {
        metric(
            &text,
            &format!("logferry_http_requests_total{{component=\"in\",code=\"{c}\"}}"),
        )
    };
    lf.stop();
    assert_exactly(&read_lines(&lf.path("unified.log")), "good", 4);
    assert_eq!(
        (code(200), code(400), code(404), code(413), code(415)),
        (4, 3, 1, 2, 1)
    );
}

#[test]
fn slow_and_stuck_clients_do_not_hold_up_others() {
    let mut lf = Logferry::start(&http_to_file(
        "idle_timeout = \"1s\"\nrequest_timeout = \"2s\"\nmax_body_bytes = \"64MiB\"",
    ));
    let addr = lf.http_addr("in");
    // announces a big body, sends a little, then stalls
    let mut slow = Client::connect(addr);
    slow.reader
        .get_mut()
        .write_all(b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 50000000\r\n\r\nslow-0\n")
        .unwrap();
    // pipelines many requests and never reads the answers
    let deaf = TcpStream::connect(addr).unwrap();
    let deaf_writer = {
        let mut deaf = deaf.try_clone().unwrap();
        std::thread::spawn(move || {
            let one = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n".repeat(1000);
            for _ in 0..1000 {
                if deaf.write_all(&one).is_err() {
                    break;
                }
            }
        })
    };
    // meanwhile a good client delivers everything
    let mut good = Client::connect(addr);
    for i in 0..200 {
        let r = good.post("/t", Some("text/plain"), format!("good-{i}\n").as_bytes());
        assert_eq!(r.status, 200);
    }
    // the slow client is told and cut off, the deaf one cut off
    let r = slow.reply();
    assert_eq!(r.status, 408, "{r:?}");
    assert!(slow.closed());
    deaf_writer.join().unwrap();
    drop(deaf);
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "good", 200);
    assert_eq!(lines.len(), 200, "nothing of the slow body was kept");
    let errors = |kind: &str| {
        lf.final_counter(&format!(
            "logferry_http_errors_total{{component=\"in\",kind=\"{kind}\"}}"
        ))
    };
    assert_eq!(errors("body_timeout"), 1);
    assert!(
        errors("idle_timeout") >= 1,
        "the deaf client was cut off:\n{}",
        lf.log_text()
    );
}

/// A connection is polled again in the same turn when it wakes itself
/// (`logferry::wake::Inline`); a wake-up from the socket or the sinks
/// must still reach it. Bodies split across writes, pipelined pairs and
/// answers that wait for the file, on several connections at once.
#[test]
fn keep_alive_clients_sending_bodies_in_pieces_and_pipelined_are_all_answered() {
    let mut lf = Logferry::start(&http_to_file(""));
    let addr = lf.http_addr("in");
    let clients: Vec<_> = (0..6)
        .map(|c| {
            std::thread::spawn(move || {
                let mut client = Client::connect(addr);
                for i in 0..150 {
                    let body = format!("c{c}-{i}\n");
                    if i % 3 == 2 {
                        // two requests in one write, then both answers
                        let next = format!("c{c}p-{}\n", i / 3);
                        let mut both = Vec::new();
                        for b in [&body, &next] {
                            both.extend_from_slice(
                                format!(
                                    "POST /piece HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{b}",
                                    b.len()
                                )
                                .as_bytes(),
                            );
                        }
                        client.reader.get_mut().write_all(&both).unwrap();
                        assert_eq!(client.reply().status, 200);
                        assert_eq!(client.reply().status, 200);
                        continue;
                    }
                    let head = format!(
                        "POST /piece HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let s = client.reader.get_mut();
                    s.write_all(head.as_bytes()).unwrap();
                    let (a, b) = body.as_bytes().split_at(2);
                    s.write_all(a).unwrap();
                    std::thread::sleep(Duration::from_millis(i % 2));
                    s.write_all(b).unwrap();
                    let r = client.reply();
                    assert_eq!(r.status, 200, "{r:?}");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    for c in 0..6 {
        assert_exactly(&lines, &format!("c{c}"), 150);
        assert_exactly(&lines, &format!("c{c}p"), 50);
    }
    assert_eq!(lines.len(), 6 * 200, "every record once");
}

#[test]
fn the_answer_waits_for_the_sinks_unless_ack_is_received() {
    let mut lf = Logferry::start(&unreachable_sink("1s", "", "max_attempts = 0"));
    let addr = lf.http_addr("in");
    let r = Client::connect(addr).post("/t", Some("text/plain"), b"never-kept\n");
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.body.contains("send them again"), "{r:?}");
    lf.stop();
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"ack_timeout\"}"),
        1
    );

    let mut lf = Logferry::start(&unreachable_sink(
        "1s",
        "ack = \"received\"",
        "max_attempts = 0",
    ));
    let addr = lf.http_addr("in");
    let r = Client::connect(addr).post("/t", Some("text/plain"), b"queued\n");
    assert_eq!(r.status, 200, "received: answered once queued");
    lf.stop();
}

#[test]
fn a_batch_a_sink_rejects_is_answered_with_retry() {
    // every write to /dev/full fails (ENOSPC, retried): with one attempt
    // allowed, the file sink rejects the batch
    let mut lf = Logferry::start(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[sinks.full]
type = "file"
match = "**"
path = "/dev/full"
retry = { max_attempts = 1 }
"#,
    );
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    let r = c.post("/t", Some("text/plain"), b"not-kept\n");
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.body.contains("send them again"), "{r:?}");
    lf.stop();
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"rejected\"}"),
        1
    );
}

#[test]
fn a_request_in_flight_at_stop_is_answered_and_the_process_exits() {
    let config = unreachable_sink("30s", "", "max_attempts = 0");
    let mut lf = Logferry::start(&format!("{config}\n[api]\naddress = \"127.0.0.1:0\"\n"));
    let addr = lf.http_addr("in");
    let api = lf.address("api listening");
    let mut c = Client::connect(addr);
    c.send("POST", "/t", Some("text/plain"), b"in-flight\n");
    // the batch is routed (the sink holds it) before the stop
    let received = "logferry_source_records_total{component=\"in\"}";
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if metric(&metrics(api), received) == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the request was never read"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopping = std::time::Instant::now();
    let status = lf.stop();
    let took = stopping.elapsed();
    assert!(status.success(), "{}", lf.log_text());
    let r = c.reply();
    assert_eq!(r.status, 503, "the sink gave the batch up at drain: {r:?}");
    assert!(c.closed());
    // the sink's drain_timeout (1 s) ended the wait, not the request's
    // request_timeout (30 s)
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"rejected\"}"),
        1
    );
    assert!(took < Duration::from_secs(20), "stopped after {took:?}");
}

#[test]
fn too_many_connections_are_closed_and_counted() {
    let mut lf = Logferry::start(&http_to_file("max_connections = 1"));
    let addr = lf.http_addr("in");
    let mut first = Client::connect(addr);
    assert_eq!(
        first.post("/t", Some("text/plain"), b"good-0\n").status,
        200
    );
    let mut second = Client::connect(addr);
    assert!(second.closed());
    assert_eq!(
        first.post("/t", Some("text/plain"), b"good-1\n").status,
        200
    );
    lf.stop();
    assert_exactly(&read_lines(&lf.path("unified.log")), "good", 2);
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"max_connections\"}"),
        1
    );
}

#[test]
fn https_with_the_forward_source_tls_settings() {
    use std::sync::Arc;
    let certs = tempfile::tempdir().unwrap();
    let pki = pki(certs.path());
    let mut lf = Logferry::start(&http_to_file(&format!(
        "tls = {{ cert_file = {:?}, key_file = {:?} }}",
        pki.server_cert, pki.server_key
    )));
    let addr = lf.http_addr("in");

    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(&pki.ca).unwrap();
    for cert in rustls_pemfile::certs(&mut &ca[..]) {
        roots.add(cert.unwrap()).unwrap();
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(tls), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut c = Client {
        reader: BufReader::new(rustls::StreamOwned::new(conn, tcp)),
    };
    for i in 0..3 {
        let r = c.post(
            "/secure",
            Some("text/plain"),
            format!("tls-{i}\n").as_bytes(),
        );
        assert_eq!(r.status, 200, "{r:?}");
    }
    // plain HTTP on the TLS port is refused and counted
    let mut plain = Client::connect(addr);
    plain.send("POST", "/t", Some("text/plain"), b"plain-0\n");
    let mut answer = Vec::new();
    let _ = plain.reader.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP"), "answered in plain text");
    lf.stop();
    assert_exactly(&read_lines(&lf.path("unified.log")), "tls", 3);
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"tls\"}"),
        1
    );
}

#[test]
fn https_with_client_certificates_refuses_clients_without_a_valid_one() {
    let certs = tempfile::tempdir().unwrap();
    let pki = pki(certs.path());
    let mut lf = Logferry::start(&http_to_file(&format!(
        "tls = {{ cert_file = {:?}, key_file = {:?}, ca_file = {:?}, verify_client = true }}",
        pki.server_cert, pki.server_key, pki.ca
    )));
    let addr = lf.http_addr("in");
    let client = Some((pki.client_cert.as_path(), pki.client_key.as_path()));
    let mut good = Client {
        reader: BufReader::new(tls_connect(addr, &pki.ca, client)),
    };
    let r = good.post("/secure", Some("text/plain"), b"tls-0\n");
    assert_eq!(r.status, 200, "{r:?}");

    // no certificate, then one the CA signed but that has expired
    let expired = Some((pki.expired_cert.as_path(), pki.expired_key.as_path()));
    for (i, cert) in [None, expired].into_iter().enumerate() {
        let mut s = tls_connect(addr, &pki.ca, cert);
        let _ = write!(
            s,
            "POST /refused HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nrefused-{i}\n"
        );
        let _ = s.flush();
        let mut answer = Vec::new();
        let read = s.read_to_end(&mut answer);
        assert!(
            read.is_err() || !answer.starts_with(b"HTTP"),
            "client {i} without a valid certificate was answered: {}",
            String::from_utf8_lossy(&answer)
        );
    }

    // the client with a certificate is still served
    let r = good.post("/secure", Some("text/plain"), b"tls-1\n");
    assert_eq!(r.status, 200, "{r:?}");
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "tls", 2);
    assert!(!lines.iter().any(|l| l.starts_with("refused")), "{lines:?}");
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"tls\"}"),
        2
    );
    assert!(lf.log_text().contains("TLS handshake failed"));
}

#[test]
fn a_client_trickling_its_headers_is_cut_off_after_idle_timeout() {
    let mut lf = Logferry::start(&http_to_file("idle_timeout = \"1s\""));
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    let r = c.post("/t", Some("text/plain"), b"first\n");
    assert_eq!(r.status, 200);
    // then the next request's head, a byte every 200 ms: never idle for
    // a second, but its headers are not done within one
    let start = std::time::Instant::now();
    let head = b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let mut cut = false;
    for b in head {
        if c.reader.get_mut().write_all(&[*b]).is_err() {
            cut = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        cut || c.closed(),
        "a connection trickling its headers stays open"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "cut off only after {:?}",
        start.elapsed()
    );
    // everyone else is still served
    let mut good = Client::connect(addr);
    assert_eq!(good.post("/t", Some("text/plain"), b"second\n").status, 200);
    lf.stop();
    assert_eq!(read_lines(&lf.path("unified.log")).len(), 2);
    assert!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"idle_timeout\"}") >= 1,
        "{}",
        lf.log_text()
    );
}

/// `data` compressed in `encoding`: `gzip`, `deflate` (zlib), `deflate-raw`
/// (sent as `deflate`, as some clients do) or `zstd`.
fn compress(encoding: &str, data: &[u8]) -> Vec<u8> {
    use flate2::{write, Compression};
    let level = Compression::fast();
    match encoding {
        "gzip" => {
            let mut e = write::GzEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate-raw" => {
            let mut e = write::DeflateEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "zstd" => zstd::bulk::compress(data, 1).unwrap(),
        _ => unreachable!(),
    }
}

/// A body that decodes to `members` times 4 MiB of zeros: gzip members or
/// zstd frames back to back (1 GiB from about 1 MB with 256).
fn bomb(encoding: &str, members: usize) -> Vec<u8> {
    let zeros = vec![0u8; 4 << 20];
    let one = match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&zeros).unwrap();
            e.finish().unwrap()
        }
        _ => compress(encoding, &zeros),
    };
    one.repeat(members)
}

#[test]
fn compressed_bodies_of_every_type_arrive_as_their_records() {
    let mut lf = Logferry::start(&http_to_file(""));
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    const ENCODINGS: [&str; 4] = ["gzip", "deflate", "deflate-raw", "zstd"];
    const PER_REQUEST: usize = 100;
    const REQUESTS: usize = 3;
    for encoding in ENCODINGS {
        for kind in KINDS {
            let prefix = format!("{encoding}.{kind}");
            for r in 0..REQUESTS {
                let (ct, plain) = body(kind, &prefix, r * PER_REQUEST..(r + 1) * PER_REQUEST);
                let sent = compress(encoding, &plain);
                let header = encoding.trim_end_matches("-raw");
                let reply = c.post_encoded("/app", ct, header, &sent);
                assert_eq!(reply.status, 200, "{prefix}: {reply:?}");
            }
        }
    }
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    for encoding in ENCODINGS {
        for kind in KINDS {
            assert_exactly(
                &lines,
                &format!("{encoding}.{kind}"),
                PER_REQUEST * REQUESTS,
            );
        }
    }
    assert_eq!(
        lines.len(),
        ENCODINGS.len() * KINDS.len() * PER_REQUEST * REQUESTS
    );
}

#[test]
fn a_compression_bomb_is_refused_with_413_without_inflating_it() {
    let mut lf = Logferry::start(&http_to_file("max_body_bytes = \"8MiB\""));
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    // warm up: the first requests allocate what every request reuses
    for i in 0..3 {
        let plain = format!("warm-{i}\n").into_bytes();
        let r = c.post_encoded("/t", Some("text/plain"), "gzip", &compress("gzip", &plain));
        assert_eq!(r.status, 200, "{r:?}");
    }
    let before = vm_bytes(lf.pid(), "VmHWM");
    for (i, encoding) in ["gzip", "zstd"].into_iter().enumerate() {
        // 1 GiB of zeros as text lines' worth of body, in about a megabyte
        let sent = bomb(encoding, 256);
        assert!(sent.len() < 2 << 20, "{encoding}: {} bytes", sent.len());
        let r = c.post_encoded("/t", Some("text/plain"), encoding, &sent);
        assert_eq!(r.status, 413, "{encoding}: {r:?}");
        assert!(r.body.contains("max_body_bytes"), "{r:?}");
        // the body was read whole: the connection goes on
        let ok = c.post_encoded(
            "/t",
            Some("text/plain"),
            encoding,
            &compress(encoding, format!("after-{i}\n").as_bytes()),
        );
        assert_eq!(ok.status, 200, "{ok:?}");
    }
    let after = vm_bytes(lf.pid(), "VmHWM");
    assert!(
        after < before + (64 << 20),
        "peak RSS grew from {} MiB to {} MiB",
        before >> 20,
        after >> 20
    );
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "after", 2);
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"decoded_too_large\"}"),
        2
    );
    assert_eq!(
        lf.final_counter("logferry_http_requests_total{component=\"in\",code=\"413\"}"),
        2
    );
}

#[test]
fn unknown_and_corrupt_encodings_are_refused_and_the_connection_goes_on() {
    let mut lf = Logferry::start(&http_to_file(""));
    let addr = lf.http_addr("in");
    let mut c = Client::connect(addr);
    let lines = b"refused-0\nrefused-1\n";
    for (n, encoding) in ["br", "compress", "gzip, br", "gzip, gzip", "snappy"]
        .into_iter()
        .enumerate()
    {
        let r = c.post_encoded("/t", Some("text/plain"), encoding, lines);
        assert_eq!(r.status, 415, "{encoding}: {r:?}");
        assert!(r.body.contains("gzip, deflate, zstd"), "{r:?}");
        assert_eq!(r.header("accept-encoding"), Some("gzip, deflate, zstd"));
        let ok = c.post("/t", Some("text/plain"), format!("good-{n}\n").as_bytes());
        assert_eq!(ok.status, 200, "after {encoding}: {ok:?}");
    }
    // corrupt and truncated streams
    let plain: Vec<u8> = (0..1000)
        .flat_map(|i| format!("refused-{i}\n").into_bytes())
        .collect();
    let gz = compress("gzip", &plain);
    let zs = compress("zstd", &plain);
    let mut flipped = gz.clone();
    flipped[gz.len() / 2] ^= 0xff;
    let corrupt: [(&str, &[u8]); 5] = [
        ("gzip", b"not gzip at all\n"),
        ("gzip", &gz[..gz.len() - 10]),
        ("gzip", &flipped),
        ("zstd", &zs[..zs.len() / 2]),
        ("deflate", b"\xff\xff\xff\xff"),
    ];
    for (n, (encoding, sent)) in corrupt.into_iter().enumerate() {
        let r = c.post_encoded("/t", Some("text/plain"), encoding, sent);
        assert_eq!(r.status, 400, "{encoding} #{n}: {r:?}");
        assert!(
            r.body.contains(&format!("corrupt {encoding} body")),
            "{r:?}"
        );
        let ok = c.post_encoded(
            "/t",
            Some("text/plain"),
            "gzip",
            &compress("gzip", format!("good-{}\n", 5 + n).as_bytes()),
        );
        assert_eq!(ok.status, 200, "after corrupt {encoding}: {ok:?}");
    }
    // identity is a body as it is
    let r = c.post_encoded("/t", Some("text/plain"), "identity", b"good-10\n");
    assert_eq!(r.status, 200);
    lf.stop();
    let lines = read_lines(&lf.path("unified.log"));
    assert_exactly(&lines, "good", 11);
    assert_eq!(lines.len(), 11, "nothing refused was kept: {lines:?}");
    assert_eq!(
        lf.final_counter(
            "logferry_http_errors_total{component=\"in\",kind=\"unsupported_encoding\"}"
        ),
        5
    );
    assert_eq!(
        lf.final_counter("logferry_http_errors_total{component=\"in\",kind=\"corrupt_encoding\"}"),
        5
    );
    assert_eq!(
        lf.final_counter("logferry_http_connections_total{component=\"in\"}"),
        1
    );
}
