//! A real Apache Kafka broker for black-box tests (scripts/kafka.sh) and a
//! real consumer (kcat) to read topics back. Tests fail, never skip, when
//! the broker or kcat is missing: scripts/test-deps.sh installs them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `scripts/kafka.sh <cmd>` with its state in `dir` (None: the shared
/// broker in target/kafka) and returns what it printed.
pub fn kafka_sh(cmd: &str, dir: Option<&Path>) -> String {
    kafka_sh_with(cmd, dir, &[])
}

/// `kafka_sh` with extra environment variables (e.g. `KAFKA_SSL_DIR`).
pub fn kafka_sh_with(cmd: &str, dir: Option<&Path>, env: &[(&str, &Path)]) -> String {
    let mut c = Command::new(repo().join("scripts/kafka.sh"));
    c.arg(cmd).envs(env.iter().copied());
    if let Some(d) = dir {
        c.env("LOGFERRY_KAFKA_DIR", d).env("KAFKA_HEAP", "-Xmx512m");
    }
    let out = c.output().expect("run scripts/kafka.sh");
    assert!(
        out.status.success(),
        "scripts/kafka.sh {cmd} failed; the Kafka tests need java 17+, mvn and Maven Central \
         (see scripts/test-deps.sh):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The shared broker, started on first use (and left running for the next
/// test binary; scripts/test.sh stops it).
pub fn shared_broker() -> &'static str {
    static ADDR: OnceLock<String> = OnceLock::new();
    ADDR.get_or_init(|| kafka_sh("start", None))
}

/// A broker of one test's own, which it may stop and start.
pub struct OwnBroker {
    pub dir: tempfile::TempDir,
    pub addr: String,
    /// One own broker at a time: two formatting and starting at once on
    /// two cores fail to start.
    _one: std::sync::MutexGuard<'static, ()>,
}

impl OwnBroker {
    pub fn start() -> OwnBroker {
        Self::start_with(&[])
    }
    /// Started with extra environment variables for scripts/kafka.sh.
    pub fn start_with(env: &[(&str, &Path)]) -> OwnBroker {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let addr = kafka_sh_with("start", Some(dir.path()), env);
        OwnBroker {
            dir,
            addr,
            _one: one,
        }
    }
    pub fn stop(&self) {
        kafka_sh("stop", Some(self.dir.path()));
    }
    pub fn restart(&self) {
        assert_eq!(kafka_sh("start", Some(self.dir.path())), self.addr);
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/kafka.sh"))
            .arg("stop")
            .env("LOGFERRY_KAFKA_DIR", self.dir.path())
            .status();
    }
}

/// One consumed message.
#[derive(Debug)]
pub struct Consumed {
    pub key: Option<String>,
    pub payload: String,
    pub headers: BTreeMap<String, String>,
    /// The message's timestamp (ms): its producer's, or the time the
    /// broker appended it on a topic with `LogAppendTime`.
    pub timestamp: i64,
}

/// Whether the broker's metadata lists `topic` (kcat -L).
pub fn topic_exists(broker: &str, topic: &str) -> bool {
    let out = Command::new("kcat")
        .args(["-L", "-b", broker, "-J"])
        .output()
        .expect("kcat must be installed (apt-get install kcat; scripts/test-deps.sh does)");
    assert!(
        out.status.success(),
        "kcat -L: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kcat -L -J prints JSON");
    v["topics"]
        .as_array()
        .is_some_and(|ts| ts.iter().any(|t| t["topic"] == topic))
}

/// Reads the whole topic with kcat until it holds at least `n` messages.
pub fn consume(broker: &str, topic: &str, n: usize, timeout: Duration) -> Vec<Consumed> {
    let deadline = Instant::now() + timeout;
    loop {
        let out = Command::new("kcat")
            .args([
                "-C",
                "-b",
                broker,
                "-t",
                topic,
                "-o",
                "beginning",
                "-e",
                "-q",
                "-J",
            ])
            .output()
            .expect("kcat must be installed (apt-get install kcat; scripts/test-deps.sh does)");
        let got: Vec<Consumed> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let mut headers = BTreeMap::new();
                if let Some(h) = v["headers"].as_array() {
                    for kv in h.chunks(2) {
                        headers.insert(
                            kv[0].as_str().unwrap().to_string(),
                            kv[1].as_str().unwrap_or("").to_string(),
                        );
                    }
                }
                Consumed {
                    key: v["key"].as_str().map(str::to_string),
                    payload: v["payload"].as_str().unwrap_or("").to_string(),
                    headers,
                    timestamp: v["ts"].as_i64().unwrap_or(0),
                }
            })
            .collect();
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
