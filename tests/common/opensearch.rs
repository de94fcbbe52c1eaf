//! A real OpenSearch 2.19 node for black-box tests (scripts/opensearch.sh)
//! and small blocking helpers to set it up and read it back, through
//! `curl`. Tests fail, never skip, when the node cannot start: java 17+,
//! mvn and curl are what it needs (scripts/test-deps.sh).
//!
//! The shared node (`OpenSearch::shared()`) is started once per test
//! binary on first use and left running for the next binary;
//! scripts/test.sh stops it. Tests on it never stop it and use indices of
//! their own (`unique_index`). A test that kills or restarts a node takes
//! one of its own (`OpenSearch::private`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `scripts/opensearch.sh <cmd>` with its state in `dir` (None: the
/// shared node in target/opensearch) and returns what it printed.
pub fn opensearch_sh(cmd: &str, dir: Option<&Path>) -> String {
    let mut c = Command::new(repo().join("scripts/opensearch.sh"));
    c.arg(cmd);
    if let Some(d) = dir {
        c.env("LOGFERRY_OPENSEARCH_DIR", d);
    }
    let out = c.output().expect("run scripts/opensearch.sh");
    assert!(
        out.status.success(),
        "scripts/opensearch.sh {cmd} failed; the OpenSearch tests need java 17+, mvn and \
         Maven Central (see scripts/test-deps.sh):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// One answer: its HTTP status and its body as JSON (`Value::Null` for an
/// empty body, a string for a body that is not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A node own to one test: stopped when dropped.
struct Private {
    dir: PathBuf,
}

/// One private node at a time in a test binary: each takes half a
/// gigabyte, and two starting at once on two cores are slow to get green.
/// (A flag, not a `MutexGuard`: the node type must be `Sync` for the
/// shared one's static.)
static PRIVATE_BUSY: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

fn take_private_slot() {
    let (m, cv) = &PRIVATE_BUSY;
    let mut busy = m.lock().unwrap_or_else(|e| e.into_inner());
    while *busy {
        busy = cv.wait(busy).unwrap_or_else(|e| e.into_inner());
    }
    *busy = true;
}

fn give_private_slot() {
    let (m, cv) = &PRIVATE_BUSY;
    *m.lock().unwrap_or_else(|e| e.into_inner()) = false;
    cv.notify_one();
}

/// An OpenSearch node: the shared one, or a private one.
pub struct OpenSearch {
    url: String,
    private: Option<Private>,
}

impl OpenSearch {
    /// The shared node, started on first use (and left running for the
    /// next test binary; scripts/test.sh stops it).
    pub fn shared() -> &'static OpenSearch {
        static NODE: OnceLock<OpenSearch> = OnceLock::new();
        NODE.get_or_init(|| OpenSearch {
            url: opensearch_sh("start", None),
            private: None,
        })
    }

    /// A node of this test's own, its state in `dir` (which should be a
    /// fresh temporary dir): it may be killed and restarted, and is
    /// stopped when dropped.
    pub fn private(dir: &Path) -> OpenSearch {
        take_private_slot();
        // the node's Drop gives the slot back, even if the start fails
        let mut os = OpenSearch {
            url: String::new(),
            private: Some(Private {
                dir: dir.to_path_buf(),
            }),
        };
        os.url = opensearch_sh("start", Some(dir));
        os
    }

    /// The base URL, `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn private_dir(&self) -> &Path {
        &self
            .private
            .as_ref()
            .expect("only a private node may be killed or restarted")
            .dir
    }

    /// The node's process id (private nodes only).
    pub fn pid(&self) -> u32 {
        super::server::state_pid(self.private_dir())
    }

    /// SIGKILLs a private node, as a crash would, and waits until it is
    /// gone. Its data stays for `restart`.
    pub fn kill(&self) {
        super::server::kill_and_wait(self.pid(), "node");
    }

    /// Starts a private node again (after `kill` or a stop) on the same
    /// URL, with the same indices, and waits until it is yellow or green.
    pub fn restart(&self) {
        let url = opensearch_sh("start", Some(self.private_dir()));
        assert_eq!(url, self.url, "a restarted node keeps its port");
    }

    /// Whether the node answers HTTP at all.
    pub fn is_up(&self) -> bool {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "--max-time", "2", &self.url])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    }

    /// Sends one request with `curl`; `path` starts with `/`. Panics only
    /// when curl cannot reach the node at all.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&[u8]>,
    ) -> Answer {
        let url = format!("{}{}", self.url, path);
        let mut c = Command::new("curl");
        c.args([
            "-sS",
            "--max-time",
            "120",
            "-X",
            method,
            "-w",
            "\n%{http_code}",
        ]);
        if body.is_some() {
            c.args(["-H", &format!("content-type: {content_type}")])
                .args(["--data-binary", "@-"]);
        }
        c.arg(&url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("curl must be installed");
        let mut stdin = child.stdin.take().unwrap();
        let body = body.map(<[u8]>::to_vec);
        // written from a thread: curl may answer before reading it all
        let writer = std::thread::spawn(move || {
            if let Some(b) = body {
                let _ = stdin.write_all(&b);
            }
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(
            out.status.success(),
            "curl {method} {url} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        let status = code.trim().parse().unwrap_or(0);
        let body = if body.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_string()))
        };
        Answer { status, body }
    }

    /// `request`, asserting a 2xx answer; returns its body.
    fn must(&self, method: &str, path: &str, content_type: &str, body: Option<&[u8]>) -> Value {
        let a = self.request(method, path, content_type, body);
        assert!(a.ok(), "{method} {path}: {} {}", a.status, a.body);
        a.body
    }

    /// PUT a JSON body (an index with its mapping, an index template, ...);
    /// asserts a 2xx answer and returns its body.
    pub fn put_json(&self, path: &str, body: &Value) -> Value {
        let b = serde_json::to_vec(body).unwrap();
        self.must("PUT", path, "application/json", Some(&b))
    }

    /// GET, asserting a 2xx answer; returns its body.
    pub fn get_json(&self, path: &str) -> Value {
        self.must("GET", path, "application/json", None)
    }

    /// POST an NDJSON body (a `_bulk`), asserting a 2xx answer; returns its
    /// body, whose `errors` and `items` say what each line became.
    pub fn post_ndjson(&self, path: &str, body: &str) -> Value {
        self.must("POST", path, "application/x-ndjson", Some(body.as_bytes()))
    }

    /// Makes every document indexed so far in `index` (a name, pattern or
    /// data stream) searchable.
    pub fn refresh(&self, index: &str) {
        self.must("POST", &format!("/{index}/_refresh"), "", None);
    }

    /// The number of documents in `index` (a name, pattern or data
    /// stream), after a refresh.
    pub fn count(&self, index: &str) -> u64 {
        self.refresh(index);
        let v = self.get_json(&format!("/{index}/_count"));
        v["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("no count in {v}"))
    }

    /// Every document's `_source` in `index` (a name, pattern or data
    /// stream), after a refresh, through a scroll: any number of them.
    pub fn search_all(&self, index: &str) -> Vec<Value> {
        self.refresh(index);
        let page = serde_json::json!({"size": 10000, "sort": ["_doc"]});
        let mut v = self.must(
            "POST",
            &format!("/{index}/_search?scroll=1m"),
            "application/json",
            Some(&serde_json::to_vec(&page).unwrap()),
        );
        let mut all = Vec::new();
        loop {
            let hits = v["hits"]["hits"].as_array().cloned().unwrap_or_default();
            let id = v["_scroll_id"].as_str().map(str::to_string);
            if hits.is_empty() {
                if let Some(id) = id {
                    let b = serde_json::to_vec(&serde_json::json!({ "scroll_id": id })).unwrap();
                    self.request("DELETE", "/_search/scroll", "application/json", Some(&b));
                }
                return all;
            }
            all.extend(hits.into_iter().map(|h| h["_source"].clone()));
            let id = id.unwrap_or_else(|| panic!("no _scroll_id in a search answer"));
            let next = serde_json::json!({"scroll": "1m", "scroll_id": id});
            v = self.must(
                "POST",
                "/_search/scroll",
                "application/json",
                Some(&serde_json::to_vec(&next).unwrap()),
            );
        }
    }

    /// Deletes the indices matching `pattern` (none matching is fine).
    pub fn delete_index(&self, pattern: &str) {
        self.must(
            "DELETE",
            &format!("/{pattern}?ignore_unavailable=true"),
            "",
            None,
        );
    }

    /// Deletes the data streams matching `pattern` and their backing
    /// indices (none matching is fine).
    pub fn delete_data_stream(&self, pattern: &str) {
        let a = self.request("DELETE", &format!("/_data_stream/{pattern}"), "", None);
        assert!(
            a.ok() || a.status == 404,
            "DELETE /_data_stream/{pattern}: {} {}",
            a.status,
            a.body
        );
    }
}

impl Drop for OpenSearch {
    fn drop(&mut self) {
        if let Some(p) = &self.private {
            let _ = Command::new(repo().join("scripts/opensearch.sh"))
                .arg("stop")
                .env("LOGFERRY_OPENSEARCH_DIR", &p.dir)
                .status();
            give_private_slot();
        }
    }
}

/// An index name no other test (in this run or an earlier one on the same
/// shared node) uses: `prefix` in lower case (index names must be), then
/// this process, a counter and the time.
pub fn unique_index(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("{}-{}-{n}-{t}", prefix.to_lowercase(), std::process::id())
}
