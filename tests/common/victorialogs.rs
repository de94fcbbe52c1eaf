//! A real VictoriaLogs server for black-box tests (scripts/victorialogs.sh):
//! it takes Loki's push API and Splunk HEC, and `query` reads back what it
//! stored with LogsQL. Tests fail, never skip, when it cannot start: go and
//! the Go module proxy build it (also done by scripts/test-deps.sh), curl
//! checks that it answers.
//!
//! The shared server (`VictoriaLogs::shared()`) is started once per test
//! binary on first use and left running for the next binary;
//! scripts/test.sh stops it. Tests on it never stop or clear it: each sends
//! under a stream label of its own (`unique_name`) and queries by it. A
//! test that stops or restarts a server takes one of its own
//! (`VictoriaLogs::private`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `scripts/victorialogs.sh <cmd>` with its state in `dir` and returns
/// what it printed.
pub fn victorialogs_sh(cmd: &str, dir: &Path) -> String {
    let out = Command::new(repo().join("scripts/victorialogs.sh"))
        .arg(cmd)
        .env("LOGFERRY_VICTORIALOGS_DIR", dir)
        .output()
        .expect("run scripts/victorialogs.sh");
    assert!(
        out.status.success(),
        "scripts/victorialogs.sh {cmd} failed; the loki and splunk_hec tests need go and the \
         Go module proxy (see scripts/test-deps.sh):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A VictoriaLogs server: the shared one, or a private one (stopped when
/// dropped).
pub struct VictoriaLogs {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    url: String,
    /// Its state dir, for the script's stop and restart.
    dir: PathBuf,
    /// Whether this test may stop it (and must, when done).
    private: bool,
}

impl VictoriaLogs {
    /// The shared server, started on first use (and left running for the
    /// next test binary; scripts/test.sh stops it).
    pub fn shared() -> &'static VictoriaLogs {
        static V: OnceLock<VictoriaLogs> = OnceLock::new();
        V.get_or_init(|| {
            let dir = repo().join("target/victorialogs");
            VictoriaLogs {
                url: victorialogs_sh("start", &dir),
                dir,
                private: false,
            }
        })
    }

    /// A server of this test's own, its state in `dir` (which should be a
    /// fresh temporary dir): it may be stopped and restarted, and is
    /// stopped when dropped.
    pub fn private(dir: &Path) -> VictoriaLogs {
        VictoriaLogs {
            url: victorialogs_sh("start", dir),
            dir: dir.to_path_buf(),
            private: true,
        }
    }

    /// The base URL, `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where Loki's push API is served (what a loki sink's `endpoint` is).
    pub fn loki_push_url(&self) -> String {
        format!("{}/insert/loki/api/v1/push", self.url)
    }

    /// Where Splunk HEC's event endpoint is served.
    pub fn hec_event_url(&self) -> String {
        format!("{}/services/collector/event", self.url)
    }

    /// Stops a private server (SIGTERM: it flushes what it took first).
    pub fn stop(&self) {
        assert!(self.private, "only a private server may be stopped");
        victorialogs_sh("stop", &self.dir);
    }

    /// Starts a private server again on the same URL, with its data.
    pub fn restart(&self) {
        assert!(self.private, "only a private server may be restarted");
        let url = victorialogs_sh("start", &self.dir);
        assert_eq!(url, self.url, "a restarted server keeps its port");
    }

    /// Whether the server answers `/health`.
    pub fn is_up(&self) -> bool {
        exchange(&self.url, "/health", None).is_ok_and(|(s, b)| s == 200 && b.trim() == "OK")
    }

    /// Every row the LogsQL `query` finds, one JSON object each (`_msg`,
    /// `_time`, `_stream`, and a field per label and structured metadata
    /// key), in no particular order. Rows become searchable about a
    /// second after their push: see [`VictoriaLogs::wait_rows`].
    pub fn query(&self, query: &str) -> Vec<Value> {
        let body = format!("query={}&limit=0", form_encode(query));
        let (status, text) = exchange(
            &self.url,
            "/select/logsql/query",
            Some(("application/x-www-form-urlencoded", body.as_bytes())),
        )
        .unwrap_or_else(|e| panic!("LogsQL query {query:?} to {}: {e}", self.url));
        assert_eq!(status, 200, "LogsQL query {query:?}: {text}");
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("a query answer line that is not JSON ({e}): {l}"))
            })
            .collect()
    }

    /// The number of rows the LogsQL `query` finds (`query | stats count()`).
    pub fn count(&self, query: &str) -> u64 {
        let rows = self.query(&format!("{query} | stats count() c"));
        rows.first()
            .and_then(|r| r["c"].as_str())
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    /// Waits until `query` finds at least `n` rows and returns them all
    /// (more than `n` is the caller's to judge). Once `n` is reached it
    /// waits a moment more and counts again, so rows still arriving (a
    /// duplicate, say) are in the answer too.
    pub fn wait_rows(&self, query: &str, n: u64, timeout: Duration) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.count(query);
            if got >= n {
                std::thread::sleep(Duration::from_millis(1500));
                return self.query(query);
            }
            assert!(
                Instant::now() < deadline,
                "{got} rows for {query:?} in VictoriaLogs after {timeout:?}, want {n}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for VictoriaLogs {
    fn drop(&mut self) {
        if self.private {
            let _ = Command::new(repo().join("scripts/victorialogs.sh"))
                .arg("stop")
                .env("LOGFERRY_VICTORIALOGS_DIR", &self.dir)
                .status();
        }
    }
}

/// `s` as an `application/x-www-form-urlencoded` value.
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// One HTTP/1.0 request to `base` + `path` (1.0: the answer comes whole,
/// never chunked, and the connection closes after it); the status and
/// the body as text.
fn exchange(base: &str, path: &str, body: Option<(&str, &[u8])>) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let hostport = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(hostport)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = match body {
        Some((content_type, b)) => format!(
            "POST {path} HTTP/1.0\r\nHost: {hostport}\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\n\r\n",
            b.len()
        )
        .into_bytes(),
        None => format!("GET {path} HTTP/1.0\r\nHost: {hostport}\r\n\r\n").into_bytes(),
    };
    if let Some((_, b)) = body {
        head.extend_from_slice(b);
    }
    s.write_all(&head)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no HTTP status in {answer:?}")))?;
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_string()))
}

/// A name no other test (in this run or an earlier one on the same shared
/// server) uses, for a stream label to query by: `prefix`, this process,
/// a counter and the time; only letters, digits and `_`, so it needs no
/// quoting in LogsQL.
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("{prefix}_{}_{n}_{t}", std::process::id())
}
