//! A real OpenTelemetry Collector for black-box tests (scripts/otelcol.sh):
//! it receives OTLP logs over HTTP and gRPC and writes them as OTLP-JSON
//! lines to a file, which `records` reads back. Tests fail, never skip,
//! when it cannot start: go and the Go module proxy build it (also done by
//! scripts/test-deps.sh), curl checks that it answers.
//!
//! The shared collector (`Collector::shared()`) is started once per test
//! binary on first use and left running for the next binary;
//! scripts/test.sh stops it. Tests on it never stop or clear it: each
//! sends under a `service.name` of its own (`unique_service`) and reads
//! back `records_of(service)`. A test that kills or restarts a collector,
//! or clears its file, takes one of its own (`Collector::private`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared collector's state dir (scripts/otelcol.sh's default).
fn shared_dir() -> PathBuf {
    repo().join("target/otelcol")
}

/// Runs `scripts/otelcol.sh <cmd>` with its state in `dir` and returns
/// what it printed.
pub fn otelcol_sh(cmd: &str, dir: &Path) -> String {
    otelcol_sh_with(cmd, dir, &Setup::default())
}

/// How a private collector is set up beyond the script's config.
#[derive(Debug, Clone, Default)]
struct Setup {
    /// Each export written to the file before it is answered
    /// (OTELCOL_WRITE_THROUGH).
    write_through: bool,
    /// A config file merged over the others (OTELCOL_OVERLAY).
    overlay: Option<PathBuf>,
}

/// [`otelcol_sh`], a collector it starts set up as `setup` says.
fn otelcol_sh_with(cmd: &str, dir: &Path, setup: &Setup) -> String {
    let out = Command::new(repo().join("scripts/otelcol.sh"))
        .arg(cmd)
        .env("LOGFERRY_OTELCOL_DIR", dir)
        .env(
            "OTELCOL_WRITE_THROUGH",
            if setup.write_through { "1" } else { "0" },
        )
        .env(
            "OTELCOL_OVERLAY",
            setup.overlay.as_deref().unwrap_or(Path::new("")),
        )
        .output()
        .expect("run scripts/otelcol.sh");
    assert!(
        out.status.success(),
        "scripts/otelcol.sh {cmd} failed; the OTLP tests need go and the Go module proxy \
         (see scripts/test-deps.sh):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The two addresses `scripts/otelcol.sh start` prints, `http=URL` and
/// `grpc=HOST:PORT`, one a line.
fn parse_addresses(printed: &str) -> (String, String) {
    let mut http = None;
    let mut grpc = None;
    for line in printed.lines() {
        if let Some(u) = line.strip_prefix("http=") {
            http = Some(u.to_string());
        } else if let Some(a) = line.strip_prefix("grpc=") {
            grpc = Some(a.to_string());
        }
    }
    match (http, grpc) {
        (Some(h), Some(g)) => (h, g),
        _ => panic!("scripts/otelcol.sh start printed no http= and grpc= lines: {printed:?}"),
    }
}

/// An OpenTelemetry Collector: the shared one, or a private one (stopped
/// when dropped).
pub struct Collector {
    http: String,
    grpc: String,
    dir: PathBuf,
    private: bool,
    /// A private collector's setup, for its restarts.
    setup: Setup,
    /// Whether its gRPC receiver speaks TLS.
    grpc_tls: bool,
}

impl Collector {
    /// The shared collector, started on first use (and left running for
    /// the next test binary; scripts/test.sh stops it).
    pub fn shared() -> &'static Collector {
        static C: OnceLock<Collector> = OnceLock::new();
        C.get_or_init(|| {
            let dir = shared_dir();
            let (http, grpc) = parse_addresses(&otelcol_sh("start", &dir));
            Collector {
                http,
                grpc,
                dir,
                private: false,
                setup: Setup::default(),
                grpc_tls: false,
            }
        })
    }

    /// A collector of this test's own, its state in `dir` (which should
    /// be a fresh temporary dir): it may be killed, restarted and
    /// cleared, and is stopped when dropped.
    pub fn private(dir: &Path) -> Collector {
        Self::start_private(dir, Setup::default())
    }

    /// A private collector whose file exporter writes each export to the
    /// file before the receiver answers it (OTELCOL_WRITE_THROUGH, see
    /// scripts/otelcol/write-through.yaml): killed with SIGKILL, it keeps
    /// every record it acknowledged, as a collector with a durable
    /// exporter would. Its restarts write through too.
    pub fn private_write_through(dir: &Path) -> Collector {
        let setup = Setup {
            write_through: true,
            ..Setup::default()
        };
        Self::start_private(dir, setup)
    }

    /// A private collector whose gRPC receiver speaks TLS only, with the
    /// certificate `cert` and its key `key` (PEM files); its `grpc_url`
    /// is `https://`.
    pub fn private_grpc_tls(dir: &Path, cert: &Path, key: &Path) -> Collector {
        let overlay = dir.join("grpc-tls.yaml");
        let yaml = format!(
            "receivers:\n  otlp:\n    protocols:\n      grpc:\n        tls:\n          \
             cert_file: {}\n          key_file: {}\n",
            cert.display(),
            key.display()
        );
        std::fs::write(&overlay, yaml).unwrap();
        let setup = Setup {
            overlay: Some(overlay),
            ..Setup::default()
        };
        let mut c = Self::start_private(dir, setup);
        c.grpc_tls = true;
        c
    }

    fn start_private(dir: &Path, setup: Setup) -> Collector {
        let (http, grpc) = parse_addresses(&otelcol_sh_with("start", dir, &setup));
        Collector {
            http,
            grpc,
            dir: dir.to_path_buf(),
            private: true,
            setup,
            grpc_tls: false,
        }
    }

    /// The OTLP/HTTP base URL, `http://127.0.0.1:PORT`, without a trailing
    /// slash: logs go to `{http_url}/v1/logs`.
    pub fn http_url(&self) -> &str {
        &self.http
    }

    /// The OTLP/gRPC address, `127.0.0.1:PORT` (plaintext, but for
    /// [`Collector::private_grpc_tls`]).
    pub fn grpc_addr(&self) -> &str {
        &self.grpc
    }

    /// The OTLP/gRPC base URL: `http://127.0.0.1:PORT` (plaintext,
    /// h2c), or `https://` for [`Collector::private_grpc_tls`].
    pub fn grpc_url(&self) -> String {
        let scheme = if self.grpc_tls { "https" } else { "http" };
        format!("{scheme}://{}", self.grpc)
    }

    /// The file the collector writes: one OTLP-JSON export request a line.
    pub fn out_path(&self) -> PathBuf {
        self.dir.join("out.jsonl")
    }

    fn must_be_private(&self, what: &str) {
        assert!(self.private, "only a private collector may be {what}");
    }

    /// The collector's process id (private collectors only).
    pub fn pid(&self) -> u32 {
        self.must_be_private("signalled");
        super::server::state_pid(&self.dir)
    }

    /// SIGKILLs a private collector, as a crash would, and waits until it
    /// is gone. What it had not yet flushed to its file (up to 100 ms of
    /// exports, unless it writes through) is lost with it, as with a real
    /// one. A line the kill cut short (an export written in two or more
    /// write(2)s, the last not done: never answered, so its sender sends
    /// it again) is cut off the file, as a writer's recovery would, so
    /// that the restarted collector's lines start on lines of their own.
    pub fn kill(&self) {
        super::server::kill_and_wait(self.pid(), "collector");
        let p = self.out_path();
        let Ok(text) = std::fs::read(&p) else {
            return;
        };
        let whole = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < text.len() {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .and_then(|f| f.set_len(whole as u64))
                .unwrap_or_else(|e| panic!("cut {} back to its last line: {e}", p.display()));
        }
    }

    /// Starts a private collector again (after `kill` or a stop) on the
    /// same addresses; it appends to the same file.
    pub fn restart(&self) {
        self.must_be_private("restarted");
        let (http, grpc) = parse_addresses(&otelcol_sh_with("start", &self.dir, &self.setup));
        assert_eq!(
            (http.as_str(), grpc.as_str()),
            (self.http.as_str(), self.grpc.as_str()),
            "a restarted collector keeps its ports"
        );
    }

    /// Stops a private collector (SIGTERM: it flushes its file first).
    pub fn stop(&self) {
        self.must_be_private("stopped");
        otelcol_sh("stop", &self.dir);
    }

    /// Whether the OTLP/HTTP receiver answers an (empty) export.
    pub fn is_up(&self) -> bool {
        post(&self.http, "/v1/logs", "application/json", b"{}").is_ok_and(|(s, _)| s == 200)
    }

    /// Empties the file (private collectors only: the shared one's file is
    /// every test's). The collector appends, so what it exports next
    /// starts the file afresh.
    pub fn clear(&self) {
        self.must_be_private("cleared");
        let p = self.out_path();
        if p.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&p)
                .unwrap_or_else(|e| panic!("truncate {}: {e}", p.display()));
        }
    }

    /// Every log record in the file so far, flattened (see `flatten`). A
    /// last line not yet ended (the exporter flushes every 100 ms, or a
    /// write-through one is between its writes) is left for the next call.
    pub fn records(&self) -> Vec<Value> {
        let p = self.out_path();
        let text = match std::fs::read(&p) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => panic!("read {}: {e}", p.display()),
        };
        let mut all = Vec::new();
        let complete = match text.iter().rposition(|&b| b == b'\n') {
            Some(end) => &text[..=end],
            None => return all,
        };
        for line in complete.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).unwrap_or_else(|e| {
                panic!(
                    "{}: a line that is not JSON ({e}): {}",
                    p.display(),
                    String::from_utf8_lossy(line)
                )
            });
            flatten(&v, &mut all);
        }
        all
    }

    /// The records whose resource has `service.name` = `service`.
    pub fn records_of(&self, service: &str) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter(|r| r["resource"]["service.name"] == service)
            .collect()
    }

    /// Waits until at least `n` records of `service` are in the file and
    /// returns them all (more than `n` is the caller's to judge).
    pub fn wait_records_of(&self, service: &str, n: usize, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.records_of(service);
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "{} records of service {service} in {} after {timeout:?}, want {n}",
                got.len(),
                self.out_path().display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if self.private {
            let _ = Command::new(repo().join("scripts/otelcol.sh"))
                .arg("stop")
                .env("LOGFERRY_OTELCOL_DIR", &self.dir)
                .status();
        }
    }
}

/// Adds every log record of one OTLP-JSON `{"resourceLogs": [...]}`
/// object to `out`, each as
/// `{"resource": {attr: value}, "scope": {"name", "version", "attributes"},
///   "record": <the logRecord as written>, "body": value,
///   "attributes": {attr: value}}`
/// where values are plain JSON (`plain`): a test compares
/// `r["attributes"]["n"] == 7`, not OTLP's `{"intValue": "7"}`.
pub fn flatten(request: &Value, out: &mut Vec<Value>) {
    for rl in request["resourceLogs"].as_array().into_iter().flatten() {
        let resource = attributes(&rl["resource"]["attributes"]);
        for sl in rl["scopeLogs"].as_array().into_iter().flatten() {
            let scope = serde_json::json!({
                "name": sl["scope"]["name"].as_str().unwrap_or(""),
                "version": sl["scope"]["version"].as_str().unwrap_or(""),
                "attributes": attributes(&sl["scope"]["attributes"]),
            });
            for rec in sl["logRecords"].as_array().into_iter().flatten() {
                out.push(serde_json::json!({
                    "resource": resource,
                    "scope": scope,
                    "body": plain(&rec["body"]),
                    "attributes": attributes(&rec["attributes"]),
                    "record": rec,
                }));
            }
        }
    }
}

/// OTLP-JSON attributes (`[{"key": k, "value": AnyValue}]`) as a map of
/// plain values; a missing list is an empty map.
pub fn attributes(list: &Value) -> Value {
    let mut m = Map::new();
    for kv in list.as_array().into_iter().flatten() {
        if let Some(k) = kv["key"].as_str() {
            m.insert(k.to_string(), plain(&kv["value"]));
        }
    }
    Value::Object(m)
}

/// An OTLP-JSON `AnyValue` as plain JSON: strings, booleans and doubles as
/// themselves, `intValue` (a string in OTLP-JSON) as a number, arrays and
/// kvlists as arrays and objects, bytes as their base64 string, an empty
/// or missing value as null.
pub fn plain(v: &Value) -> Value {
    if let Some(s) = v.get("stringValue") {
        return s.clone();
    }
    if let Some(b) = v.get("boolValue") {
        return b.clone();
    }
    if let Some(d) = v.get("doubleValue") {
        return d.clone();
    }
    if let Some(i) = v.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<i64>().map(Value::from).unwrap_or(i.clone()),
            other => other.clone(),
        };
    }
    if let Some(a) = v.get("arrayValue") {
        return Value::Array(
            a["values"]
                .as_array()
                .into_iter()
                .flatten()
                .map(plain)
                .collect(),
        );
    }
    if let Some(kv) = v.get("kvlistValue") {
        return attributes(&kv["values"]);
    }
    if let Some(b) = v.get("bytesValue") {
        return b.clone();
    }
    Value::Null
}

/// One HTTP/1.1 POST over a plain `TcpStream` to `base` (`http://host:port`)
/// + `path`; returns the status and the body as text.
pub fn post(
    base: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let hostport = base
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not an http:// URL: {base}"))
        .trim_end_matches('/');
    let mut s = TcpStream::connect(hostport)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {hostport}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no HTTP status in {answer:?}")))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// A `service.name` no other test (in this run or an earlier one on the
/// same shared collector) uses: `prefix`, this process, a counter and the
/// time.
pub fn unique_service(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("{prefix}-{}-{n}-{t}", std::process::id())
}
