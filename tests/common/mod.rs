//! Helpers for black-box tests: start the built `logferry` binary with a
//! config, learn its bound addresses from its log, stop it with a signal,
//! and read what it wrote.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod import;
pub mod kafka;
pub mod kube;
pub mod opensearch;
pub mod otelcol;
pub mod peers;
pub mod rsyslog;
pub mod s3;
pub mod s3_proxy;
pub mod scripted;
pub mod scripted_grpc;
pub mod server;
pub mod tail;
pub mod victorialogs;

pub const BIN: &str = env!("CARGO_BIN_EXE_logferry");

/// A forward source `in` on a free port, and every record as a raw line in
/// `{dir}/unified.log`.
pub const FORWARD_TO_FILE: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.unified]
type = "file"
match = "**"
path = "{dir}/unified.log"
"#;

/// A running logferry process.
pub struct Logferry {
    child: Option<Child>,
    log: Arc<Mutex<Vec<String>>>,
    /// The thread reading the log; done once the process has exited and
    /// its last line is in `log`.
    reader: Option<std::thread::JoinHandle<()>>,
    pub dir: tempfile::TempDir,
}

impl Logferry {
    /// Starts `logferry run` with `config`, where `{dir}` is replaced by a
    /// fresh temporary directory.
    pub fn start(config: &str) -> Logferry {
        Self::start_with_env(config, [])
    }

    /// [`Logferry::start`] with `env` added to the process's environment.
    pub fn start_with_env<'a>(
        config: &str,
        env: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Logferry {
        let dir = tempfile::tempdir().unwrap();
        let config = config.replace("{dir}", &dir.path().display().to_string());
        let path = dir.path().join("logferry.toml");
        std::fs::write(&path, config).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["run", "--config"]).arg(&path).envs(env);
        Self::spawn(&mut cmd, dir)
    }

    /// Starts a prepared command (for runs without `--config`).
    pub fn spawn(cmd: &mut Command, dir: tempfile::TempDir) -> Logferry {
        // LOGFERRY_TEST_LOG, when set, is the processes' LOGFERRY_LOG
        // (`info,librdkafka=debug` for librdkafka's `debug` contexts);
        // LOGFERRY_TEST_ECHO=1 echoes their logs
        let level = std::env::var("LOGFERRY_TEST_LOG").unwrap_or_else(|_| "info".into());
        let mut child = cmd
            .env("LOGFERRY_LOG", level)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start logferry");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var_os("LOGFERRY_TEST_ECHO").is_some() {
                    eprintln!("[logferry] {line}");
                }
                sink.lock().unwrap().push(line);
            }
        });
        Logferry {
            child: Some(child),
            log,
            reader: Some(reader),
            dir,
        }
    }

    /// The process id, for signals and /proc.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Waits for a log line containing `needle` and returns it.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(l) = self.log.lock().unwrap().iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "logferry exited ({status}) before logging {needle:?}:\n{}",
                    self.log_text()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no log line {needle:?} within {timeout:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The address a listener logged as `address=…` in a line containing `what`.
    pub fn address(&mut self, what: &str) -> SocketAddr {
        let line = self.wait_for_log(what, Duration::from_secs(20));
        let addr = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("address="))
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        addr.parse().unwrap()
    }

    /// The address of the forward source named `name`.
    pub fn forward_addr(&mut self, name: &str) -> SocketAddr {
        self.address(&format!("forward source listening source={name} "))
    }

    /// The address of the http source named `name`.
    pub fn http_addr(&mut self, name: &str) -> SocketAddr {
        self.address(&format!("http source listening source={name} "))
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Rewrites the running configuration file (`{dir}` as in [`Logferry::start`]),
    /// for a reload.
    pub fn rewrite_config(&self, text: &str) {
        let text = text.replace("{dir}", &self.dir.path().display().to_string());
        std::fs::write(self.path("logferry.toml"), text).unwrap();
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn stop(&mut self) -> ExitStatus {
        let child = self.child.as_mut().unwrap();
        // SAFETY: kill(2) on the pid of a child we own.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        self.wait(Duration::from_secs(60))
    }

    /// Sends `sig` (e.g. `libc::SIGTERM`) without waiting.
    pub fn signal(&self, sig: i32) {
        let child = self.child.as_ref().unwrap();
        // SAFETY: kill(2) on the pid of a child we own.
        unsafe { libc::kill(child.id() as i32, sig) };
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.read_to_end();
    }

    /// After the exit: waits (bounded) until the log reader has every line.
    fn read_to_end(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        if let Some(reader) = self.reader.take() {
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }

    /// SIGTERM while a sink waits on a destination that never answers:
    /// the stop must end within the sink's `drain_timeout` (a few seconds
    /// here), not wait out its `request_timeout`, and log why it gave up.
    pub fn stop_within_drain_timeout(&mut self) -> ExitStatus {
        let asked = Instant::now();
        self.signal(libc::SIGTERM);
        let status = self.wait(Duration::from_secs(40));
        // generous: the point is that a 60 s request_timeout is not waited out
        assert!(
            asked.elapsed() < Duration::from_secs(20),
            "stopped after {:?}",
            asked.elapsed()
        );
        let log = self.log_text();
        assert!(log.contains("drain_timeout"), "{log}");
        status
    }

    /// Waits for the process to exit by itself.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut().unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.read_to_end();
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "logferry did not exit within {timeout:?}:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The value of a counter in the summary logged at shutdown.
    pub fn final_counter(&self, name_and_labels: &str) -> u64 {
        let text = self.log_text();
        let summary = text
            .lines()
            .rev()
            .find(|l| l.contains(" stopped "))
            .unwrap_or_else(|| panic!("no shutdown summary in the log:\n{text}"));
        summary
            .split_whitespace()
            .map(|w| w.trim_start_matches("counters="))
            .find_map(|w| w.strip_prefix(&format!("{name_and_labels}=")))
            .map(|v| v.parse().unwrap())
            .unwrap_or(0)
    }
}

/// An address nothing listens on, held for as long as the returned
/// socket lives (bound, not listening): connections to it are refused, and
/// meanwhile no other test's server can take the port, nor a connection
/// its own local port (which would connect it to itself).
pub fn refused_address() -> (socket2::Socket, std::net::SocketAddr) {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    (s, addr)
}

/// A port nothing listens on now (bound on loopback, then released).
///
/// The port comes from below the kernel's ephemeral range, so that no
/// outgoing connection of a test running beside this one can be given it
/// between now and the moment a late server binds it; a port bound at 0
/// could be (and was).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    // test binaries run one after another; their threads share NEXT
    const FIRST: u32 = 10_000;
    let span = low.saturating_sub(FIRST).max(1);
    let start = std::process::id().wrapping_mul(7_919);
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + start.wrapping_add(n.wrapping_mul(131)) % span;
        if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    panic!("no free port below the ephemeral range {low}");
}

impl Drop for Logferry {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The complete lines of a file (empty if it does not exist yet): a last
/// line without its newline is still being written, and is left out as
/// `wc -l` leaves it out.
pub fn read_lines(path: &Path) -> Vec<String> {
    match std::fs::read(path) {
        Ok(mut b) => {
            let complete = b.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1);
            b.truncate(complete);
            String::from_utf8_lossy(&b)
                .lines()
                .map(str::to_string)
                .collect()
        }
        Err(_) => Vec::new(),
    }
}

/// Every record of a file sink's `json` output in `path`: (tag, record).
pub fn json_records(path: &Path) -> Vec<(String, serde_json::Value)> {
    read_lines(path)
        .iter()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (
                v["tag"].as_str().unwrap_or_default().to_string(),
                v["record"].clone(),
            )
        })
        .collect()
}

/// Waits until `path` holds at least `n` lines; returns them.
pub fn wait_for_lines(path: &Path, n: usize, timeout: Duration) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let lines = read_lines(path);
        if lines.len() >= n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {} lines, expected {n}",
            path.display(),
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes all of `bytes` to a new connection and keeps it open.
pub fn send(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(bytes).unwrap();
    s
}

/// Writes `block` on a new connection to `addr` up to `times` times, on a
/// thread of its own; a write blocked for 2 s (the server stopped reading)
/// ends it. Returns how many blocks were written, and whether the writer
/// was blocked.
pub fn write_until_blocked(
    addr: SocketAddr,
    block: Vec<u8>,
    times: usize,
) -> std::thread::JoinHandle<(usize, bool)> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        for sent in 0..times {
            if s.write_all(&block).is_err() {
                return (sent, true);
            }
        }
        (times, false)
    })
}

/// Writes each of `lines` to `s` as its own write, `gap` apart.
pub fn write_lines_apart(
    s: &mut TcpStream,
    lines: impl IntoIterator<Item = String>,
    gap: Duration,
) {
    use std::io::Write;
    for line in lines {
        writeln!(s, "{line}").unwrap();
        std::thread::sleep(gap);
    }
}

/// What `f` returns, and every size `path` had while it ran, polled every
/// 2 ms and once more at its end: how many writes a sink made, one size
/// per write that came apart in time.
pub fn sizes_while<T>(path: std::path::PathBuf, f: impl FnOnce() -> T) -> (T, Vec<u64>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut sizes = Vec::new();
            let sample = |sizes: &mut Vec<u64>| {
                let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                if sizes.last() != Some(&size) {
                    sizes.push(size);
                }
            };
            while !stop.load(Ordering::Acquire) {
                sample(&mut sizes);
                std::thread::sleep(Duration::from_millis(2));
            }
            // the last write, should `f` have seen it first
            sample(&mut sizes);
            sizes
        })
    };
    let got = f();
    stop.store(true, Ordering::Release);
    (got, poller.join().unwrap())
}

/// Polls `f` every 20 ms until it holds; fails after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts the lines are exactly `prefix-0 … prefix-(n-1)` in some order.
pub fn assert_exactly(lines: &[String], prefix: &str, n: usize) {
    let mut got: Vec<usize> = lines
        .iter()
        .filter_map(|l| l.strip_prefix(prefix)?.strip_prefix('-')?.parse().ok())
        .collect();
    got.sort_unstable();
    let want: Vec<usize> = (0..n).collect();
    if got != want {
        let dup = got.windows(2).filter(|w| w[0] == w[1]).count();
        panic!(
            "{prefix}: expected exactly {n} distinct records, got {} ({} duplicates)",
            got.len(),
            dup
        );
    }
}

/// Certificates for TLS tests, written as PEM files into `dir`.
pub struct Pki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A server certificate that expired in 2001.
    pub expired_cert: PathBuf,
    pub expired_key: PathBuf,
    /// A CA that signed nothing here.
    pub other_ca: PathBuf,
}

/// Every certificate has a subject name of its own: OpenSSL (librdkafka,
/// a Kafka broker's Java) takes one whose issuer name is its own subject
/// name for a self-signed one. The names are those scripts/kafka.sh wants
/// in KAFKA_SSL_DIR (ca.pem, server.pem, server.key).
pub fn pki(dir: &Path) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let named = |names: Vec<String>, cn: &str| {
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = named(vec![], "logferry test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf = |names: Vec<String>, cn: &str, expired: bool| {
        let key = KeyPair::generate().unwrap();
        let mut p = named(names, cn);
        if expired {
            p.not_before = rcgen::date_time_ymd(2000, 1, 1);
            p.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let cert = p.signed_by(&key, &ca, &ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let (server_cert, server_key) = leaf(names.clone(), "server", false);
    let (client_cert, client_key) = leaf(vec!["client".to_string()], "client", false);
    let (expired_cert, expired_key) = leaf(names, "expired server", true);
    let other_key = KeyPair::generate().unwrap();
    let mut other = named(vec![], "other test CA");
    other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let other = other.self_signed(&other_key).unwrap();
    let put = |name: &str, pem: &str| {
        let p = dir.join(name);
        std::fs::write(&p, pem).unwrap();
        p
    };
    Pki {
        ca: put("ca.pem", &ca.pem()),
        server_cert: put("server.pem", &server_cert),
        server_key: put("server.key", &server_key),
        client_cert: put("client.pem", &client_cert),
        client_key: put("client.key", &client_key),
        expired_cert: put("expired.pem", &expired_cert),
        expired_key: put("expired.key", &expired_key),
        other_ca: put("other-ca.pem", &other.pem()),
    }
}

/// A TLS connection (rustls) to `addr` as `localhost`, trusting `ca`,
/// presenting `client` (certificate, key) if given. With TLS 1.3 a server
/// that refuses the client certificate says so only at the first read.
pub fn tls_connect(
    addr: SocketAddr,
    ca: &Path,
    client: Option<(&Path, &Path)>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut std::fs::read(ca).unwrap().as_slice()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs = rustls_pemfile::certs(&mut std::fs::read(cert).unwrap().as_slice())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = rustls_pemfile::private_key(&mut std::fs::read(key).unwrap().as_slice())
                .unwrap()
                .unwrap();
            builder.with_client_auth_cert(certs, key).unwrap()
        }
    };
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// Lines of every file, counted per distinct line.
pub fn distinct(
    lines: impl IntoIterator<Item = String>,
) -> std::collections::HashMap<String, usize> {
    let mut m = std::collections::HashMap::new();
    for l in lines {
        *m.entry(l).or_insert(0) += 1;
    }
    m
}

/// Reads one forward-protocol `{"ack": id}` from `s`; `None` if none came
/// within `timeout`. Reads one byte at a time, so nothing past this ack is
/// taken from the socket.
pub fn read_ack(s: &mut TcpStream, timeout: Duration) -> Option<String> {
    ack_or_closed(s, timeout).unwrap_or_else(|e| panic!("connection {e} before the ack"))
}

/// Like [`read_ack`], but a closed or reset connection is `Err` instead of
/// a panic.
pub fn ack_or_closed(s: &mut TcpStream, timeout: Duration) -> Result<Option<String>, String> {
    use logferry::protocol::msgpack::{Reader, Value};
    use std::io::Read;
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        if let Ok(end) = logferry::protocol::msgpack::skip(&buf, 0) {
            let mut r = Reader::new(&buf[..end]);
            assert_eq!(r.read(), Ok(Value::Map(1)));
            assert_eq!(r.read(), Ok(Value::Str(b"ack")));
            let Ok(Value::Str(id)) = r.read() else {
                panic!("ack id must be a string")
            };
            return Ok(Some(String::from_utf8(id.to_vec()).unwrap()));
        }
        match s.read(&mut byte) {
            Ok(0) => return Err("closed".into()),
            Ok(_) => buf.push(byte[0]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The numbers of the lines `<prefix>-<n>` (trailing blanks ignored),
/// sorted, duplicates kept.
pub fn numbers(lines: &[String], prefix: &str) -> Vec<usize> {
    let mut got: Vec<usize> = lines
        .iter()
        .filter_map(|l| {
            l.trim_end()
                .strip_prefix(prefix)?
                .strip_prefix('-')?
                .parse()
                .ok()
        })
        .collect();
    got.sort_unstable();
    got
}

/// The value of `name{k="v",…}` in `/metrics` text, summed over the series
/// whose labels include every given one (others, such as
/// `component_type`, may be there too). 0 if none matches.
pub fn metric_value(text: &str, name_and_labels: &str) -> f64 {
    let (name, want) = match name_and_labels.split_once('{') {
        Some((n, l)) => (n, l.trim_end_matches('}')),
        None => (name_and_labels, ""),
    };
    let pairs = |labels: &str| -> Vec<String> {
        labels
            .split("\",")
            .filter(|p| !p.is_empty())
            .map(|p| p.trim_end_matches('"').to_string())
            .collect()
    };
    let want = pairs(want);
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.trim_end_matches('}')),
                None => (series, ""),
            };
            let have = pairs(labels);
            (n == name && want.iter().all(|w| have.contains(w)))
                .then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

/// `GET path` on logferry's API: the whole response, head and body.
pub fn api_get(api: SocketAddr, path: &str) -> String {
    use std::io::Read;
    let mut s = TcpStream::connect(api).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nhost: {api}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// `POST path` (no body) on logferry's API: the whole response.
pub fn api_post(api: SocketAddr, path: &str) -> String {
    use std::io::Read;
    let mut s = TcpStream::connect(api).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {api}\r\ncontent-length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text
}

/// `/ready` of the API at `api`: (status line, body).
pub fn ready(api: SocketAddr) -> (String, String) {
    let r = api_get(api, "/ready");
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// Waits until `/ready` answers `status`; returns its body.
pub fn wait_ready(api: SocketAddr, status: &str, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let (line, body) = ready(api);
        if line.contains(status) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "/ready still {line:?} after {timeout:?}, not {status}: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An `http` source `in` on a free port with `extra` settings, every record
/// as a raw line in `{dir}/unified.log`.
pub fn http_to_file(extra: &str) -> String {
    format!(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"
{extra}

[sinks.unified]
type = "file"
match = "**"
path = "{{dir}}/unified.log"
"#
    )
}

/// `match = "out"` goes to a forward server that never answers: nothing
/// is ever accepted there.
pub fn unreachable_sink(request_timeout: &str, extra_source: &str, extra_sink: &str) -> String {
    format!(
        r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"
request_timeout = "{request_timeout}"
{extra_source}
{}"#,
        dead_forward_sink("out", "**", extra_sink)
    )
}

/// `[sinks.NAME]`, a forward sink of the records `pattern` matches to a
/// port nobody listens on (it retries quickly, gives up 1 s into a stop),
/// with `extra` keys.
pub fn dead_forward_sink(name: &str, pattern: &str, extra: &str) -> String {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    format!(
        r#"
[sinks.{name}]
type = "forward"
match = "{pattern}"
servers = [{{ address = "127.0.0.1:{port}" }}]
reconnect_min = "50ms"
reconnect_max = "100ms"
drain_timeout = "1s"
{extra}
"#
    )
}

/// What a request got: its status and `Retry-After`, or the client's error.
pub type Answer = Result<(u16, Option<String>), String>;

/// Sends every `(path, content type, body)` at once as streams of one
/// HTTP/2 connection opened with prior knowledge (no TLS, no upgrade).
pub fn h2_posts(addr: SocketAddr, requests: Vec<(String, &'static str, Vec<u8>)>) -> Vec<Answer> {
    let requests = requests
        .into_iter()
        .map(|(path, ct, body)| (path, vec![("content-type", ct)], body))
        .collect();
    h2_posts_with_headers(addr, requests)
}

/// One request of [`h2_posts_with_headers`]: path, headers, body.
pub type H2Request = (String, Vec<(&'static str, &'static str)>, Vec<u8>);

/// [`h2_posts`] with the headers of each request given.
pub fn h2_posts_with_headers(addr: SocketAddr, requests: Vec<H2Request>) -> Vec<Answer> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (send, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tcp),
        )
        .await
        .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        // one request first: its answer comes after the server's settings,
        // so the client knows max_streams before it opens more (streams
        // past it sent earlier are refused, and a client sends them again)
        let mut first = send.clone();
        first.ready().await.map_err(|e| e.to_string())?;
        let health = hyper::Request::get("http://127.0.0.1/health")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let health = first
            .send_request(health)
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(health.status(), 200);
        let tasks: Vec<_> = requests
            .into_iter()
            .map(|(path, headers, body)| {
                let mut send = send.clone();
                let answer = async move {
                    let mut req = hyper::Request::post(format!("http://127.0.0.1{path}"));
                    for (name, value) in headers {
                        req = req.header(name, value);
                    }
                    let req = req
                        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                        .unwrap();
                    send.ready().await.map_err(|e| e.to_string())?;
                    let resp = send.send_request(req).await.map_err(|e| e.to_string())?;
                    let status = resp.status().as_u16();
                    let retry = resp
                        .headers()
                        .get("retry-after")
                        .map(|v| v.to_str().unwrap().to_string());
                    http_body_util::BodyExt::collect(resp.into_body())
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok((status, retry))
                };
                tokio::spawn(async move {
                    tokio::time::timeout(Duration::from_secs(120), answer)
                        .await
                        .unwrap_or_else(|_| Err("no answer within 120 s".into()))
                })
            })
            .collect();
        let mut answers = Vec::new();
        for t in tasks {
            answers.push(t.await.unwrap());
        }
        Ok::<_, String>(answers)
    })
    .unwrap_or_else(|e| vec![Err(e)])
}

/// The value the peers' build gave `var` (`ANCHOR_FLUENTBIT`,
/// `ANCHOR_FLUENTD_DIR`): from the environment, else from the env file
/// (`LOGFERRY_PEERS_ENV`, default /opt/peers/env).
pub fn peer_path(var: &str) -> Option<PathBuf> {
    let file = std::env::var("LOGFERRY_PEERS_ENV").unwrap_or_else(|_| "/opt/peers/env".into());
    let value = std::env::var(var).ok().or_else(|| {
        let text = std::fs::read_to_string(&file).ok()?;
        text.lines()
            .rev()
            .filter_map(|l| l.trim().strip_prefix("export ")?.split_once('='))
            .find(|(k, _)| *k == var)
            .map(|(_, v)| v.trim_matches('"').to_string())
    });
    value.map(PathBuf::from).filter(|p| p.exists())
}

/// Whether the peers' build names `var` (`ANCHOR_FLUENTBIT`,
/// `ANCHOR_FLUENTD_DIR`, `ANCHOR_VECTOR`), as the bench scenarios find it:
/// in the environment or in the env file. The peers come from no
/// package registry, so a machine without their build skips the tests
/// that run them, saying so (see [`skipped`]); LOGFERRY_REQUIRE_PEERS=1
/// makes a missing peer fail the test instead, for a run whose point is
/// the comparison.
pub fn peer_is_built(var: &str, peer: &str) -> bool {
    if peer_path(var).is_some() {
        return true;
    }
    let file = std::env::var("LOGFERRY_PEERS_ENV").unwrap_or_else(|_| "/opt/peers/env".into());
    let why = format!(
        "{peer} is not built: {file} names no {var}. Build it with the peers' build script \
         (shared/peers/build.sh: `MIRROR=<git mirrors> build.sh fluentbit fluentd`, about 5 \
         minutes; `build.sh vector`, about 20 more), which writes /opt/peers/env; or point \
         LOGFERRY_PEERS_ENV at another env file"
    );
    peer_unusable(&why);
    false
}

/// Says why a peer cannot run the calling test (not built, or built
/// without a component the test needs) and skips it (see [`skipped`]),
/// or, with LOGFERRY_REQUIRE_PEERS set, fails it.
pub fn peer_unusable(why: &str) {
    if std::env::var_os("LOGFERRY_REQUIRE_PEERS").is_some() {
        panic!("{why} (LOGFERRY_REQUIRE_PEERS is set)");
    }
    skipped(why);
}

/// Says that the calling test did not run, and why: on stderr at once
/// (past the test harness's capture, so it shows in a passing run) and as
/// a line of the suite's list of skipped tests,
/// `target/tmp/skipped-tests.log`, which scripts/test.sh prints when the
/// suite ends. Call it from the test's own thread, whose name is the
/// test's.
pub fn skipped(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("(unnamed test)");
    let line = format!("SKIPPED {}::{test}: {reason}\n", env!("CARGO_CRATE_NAME"));
    let _ = std::io::stderr().write_all(line.as_bytes());
    let log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.log");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        let _ = writeln!(
            std::io::stderr(),
            "cannot note the skip in {}: {e}",
            log.display()
        );
    }
}

/// A field of /proc/PID/status in bytes (`VmRSS`, `VmHWM`: peak RSS).
pub fn vm_bytes(pid: u32, field: &str) -> u64 {
    status_kib(pid, field).unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status")) * 1024
}

/// `field` of `/proc/PID/status` in KiB (`VmHWM`, `RssAnon`, …); `None` if
/// the process is gone (it may exit while it is sampled) or has no such
/// field.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Raises this process's open-file soft limit to its hard limit, for tests
/// that hold thousands of descriptors.
pub fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}
