//! A real S3-compatible server for black-box tests (scripts/s3.sh, s3s-fs)
//! and helpers to set it up and read it back without an S3 client: s3s-fs
//! keeps bucket B as the directory `data/B` and object K as the file
//! `data/B/K` (written aside and renamed, so a file there is a whole
//! object), and its uploads in progress as dot files in `data/`. Tests
//! fail, never skip, when it cannot start: cargo and the Rust package registry build it
//! (also done by scripts/test-deps.sh), curl checks that it answers.
//!
//! The shared server (`S3::shared()`) is started once per test binary on
//! first use and left running for the next binary; scripts/test.sh stops
//! it. Tests on it never stop it and use buckets of their own
//! (`unique_bucket`). A test that kills or restarts a server takes one of
//! its own (`S3::private`).
//!
//! Every request must be signed with `ACCESS_KEY` / `SECRET_KEY` (any
//! region); `S3::env()` gives them as the AWS variables a client reads.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The access key every test server takes (scripts/s3.sh's default).
pub const ACCESS_KEY: &str = "logferry";
/// The secret key every test server takes (scripts/s3.sh's default).
pub const SECRET_KEY: &str = "logferry-secret";
/// The region tests sign for: s3s-fs takes any.
pub const REGION: &str = "us-east-1";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `scripts/s3.sh <cmd>` with its state in `dir`, the test keys whatever
/// the caller's environment says.
fn command(cmd: &str, dir: &Path) -> Command {
    let mut c = Command::new(repo().join("scripts/s3.sh"));
    c.arg(cmd)
        .env("LOGFERRY_S3_DIR", dir)
        .env("S3_ACCESS_KEY", ACCESS_KEY)
        .env("S3_SECRET_KEY", SECRET_KEY);
    c
}

/// Runs `scripts/s3.sh <cmd>` with its state in `dir` and returns what it
/// printed.
pub fn s3_sh(cmd: &str, dir: &Path) -> String {
    let out = command(cmd, dir).output().expect("run scripts/s3.sh");
    assert!(
        out.status.success(),
        "scripts/s3.sh {cmd} failed; the S3 tests need cargo and the Rust package registry to build s3s-fs \
         (see scripts/test-deps.sh):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// An S3 server: the shared one, or a private one (stopped when dropped).
pub struct S3 {
    endpoint: String,
    dir: PathBuf,
    private: bool,
}

impl S3 {
    /// The shared server, started on first use (and left running for the
    /// next test binary; scripts/test.sh stops it).
    pub fn shared() -> &'static S3 {
        static S: OnceLock<S3> = OnceLock::new();
        S.get_or_init(|| {
            let dir = repo().join("target/s3");
            S3 {
                endpoint: s3_sh("start", &dir),
                dir,
                private: false,
            }
        })
    }

    /// A server of this test's own, its state in `dir` (which should be a
    /// fresh temporary dir): it may be killed and restarted, and is
    /// stopped when dropped.
    pub fn private(dir: &Path) -> S3 {
        let mut s = S3 {
            endpoint: String::new(),
            dir: dir.to_path_buf(),
            private: true,
        };
        s.endpoint = s3_sh("start", dir);
        s
    }

    /// The endpoint URL, `http://127.0.0.1:PORT`, without a trailing slash
    /// (path-style: buckets are its first path segment).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The AWS variables that make a client sign with the test keys, for
    /// `Command::envs` (logferry's s3 sink, boto3).
    pub fn env() -> [(&'static str, &'static str); 3] {
        [
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
            ("AWS_REGION", REGION),
        ]
    }

    /// The server's root: bucket B is the directory `data/B`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Creates `bucket` (as s3s-fs's CreateBucket does: its directory);
    /// one that exists is fine.
    pub fn create_bucket(&self, bucket: &str) {
        let p = self.data_dir().join(bucket);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
    }

    /// The keys of every object in `bucket` that start with `prefix`,
    /// sorted. Only whole objects: s3s-fs writes each aside and renames it
    /// into the bucket, and keeps multipart parts outside it.
    pub fn list(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let root = self.data_dir().join(bucket);
        let mut keys = Vec::new();
        walk(&root, &root, &mut keys);
        keys.retain(|k| k.starts_with(prefix));
        keys.sort();
        keys
    }

    /// The bytes of object `key` in `bucket`.
    pub fn get(&self, bucket: &str, key: &str) -> Vec<u8> {
        let p = self.data_dir().join(bucket).join(key);
        std::fs::read(&p).unwrap_or_else(|e| panic!("read object {bucket}/{key}: {e}"))
    }

    /// How many multipart uploads into `bucket` were created and neither
    /// completed nor aborted. s3s-fs has no ListMultipartUploads; it keeps
    /// each upload in progress as `data/.bucket-<base64url(bucket)>.object-
    /// <base64url(key)>.upload-<id>.metadata.json`, removed on complete and
    /// on abort.
    pub fn incomplete_uploads(&self, bucket: &str) -> usize {
        let prefix = format!(".bucket-{}.object-", base64url(bucket.as_bytes()));
        let dir = self.data_dir();
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .filter_map(Result::ok)
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with(&prefix) && n.contains(".upload-") && n.ends_with(".metadata.json")
            })
            .count()
    }

    /// Runs tests/interop/python/s3_client.py (boto3) against this server
    /// with `args` after the endpoint, signing with `secret`.
    pub fn boto(&self, secret: &str, args: &[&str]) -> Output {
        let python = repo().join("target/interop/venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/test-deps.sh",
            python.display()
        );
        Command::new(python)
            .arg(repo().join("tests/interop/python/s3_client.py"))
            .arg(&self.endpoint)
            .args(args)
            .envs(S3::env())
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .output()
            .expect("run s3_client.py")
    }

    fn must_be_private(&self, what: &str) {
        assert!(self.private, "only a private server may be {what}");
    }

    /// The server's process id (private servers only).
    pub fn pid(&self) -> u32 {
        self.must_be_private("signalled");
        super::server::state_pid(&self.dir)
    }

    /// SIGKILLs a private server, as a crash would, and waits until it is
    /// gone. Its objects stay for `restart`.
    pub fn kill(&self) {
        super::server::kill_and_wait(self.pid(), "s3s-fs");
    }

    /// Starts a private server again (after `kill` or a stop) on the same
    /// endpoint with the same objects.
    pub fn restart(&self) {
        self.must_be_private("restarted");
        let endpoint = s3_sh("start", &self.dir);
        assert_eq!(endpoint, self.endpoint, "a restarted server keeps its port");
    }

    /// Stops a private server.
    pub fn stop(&self) {
        self.must_be_private("stopped");
        s3_sh("stop", &self.dir);
    }

    /// Whether the server answers HTTP at all (an unsigned request is
    /// refused, which is an answer).
    pub fn is_up(&self) -> bool {
        let hostport = self.endpoint.trim_start_matches("http://");
        std::net::TcpStream::connect(hostport).is_ok()
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        if self.private {
            let _ = command("stop", &self.dir).status();
        }
    }
}

/// Adds the key of every file under `dir` (relative to `root`, `/`
/// between segments) to `keys`.
fn walk(root: &Path, dir: &Path, keys: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("read {}: {e}", dir.display()),
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, keys);
        } else {
            let rel = p.strip_prefix(root).unwrap();
            let segs: Vec<_> = rel.iter().map(|s| s.to_string_lossy()).collect();
            keys.push(segs.join("/"));
        }
    }
}

/// URL-safe base64 without padding, as s3s-fs names its metadata files.
fn base64url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut s = String::new();
    for c in bytes.chunks(3) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=c.len() {
            s.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    s
}

/// A bucket name no other test (in this run or an earlier one on the
/// shared server) uses, valid for S3 (lower case, digits, dashes, at most
/// 63 characters): `prefix`, this process, a counter and the time.
pub fn unique_bucket(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let b = format!("{}-{}-{n}-{t}", prefix.to_lowercase(), std::process::id());
    assert!(b.len() <= 63, "bucket name too long: {b}");
    b
}
