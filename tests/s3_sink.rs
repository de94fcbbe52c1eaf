//! The `s3` sink against a real S3 server: s3s-fs 0.14.1 (SigV4 checked,
//! multipart uploads, objects kept as files under DIR/bucket/key).
//!
//! s3s-fs is the one scripts/s3.sh builds (scripts/test-deps.sh fetches
//! it); each test runs a server of its own on a temporary directory.
//! Some put a proxy (common/s3_proxy.rs) between the sink and the server:
//! to check what the sink signs, and to reach virtual-hosted names.

mod common;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::s3_proxy::{payload_hash, sigv4_problems, S3Proxy, Seen};
use common::{api_get, metric_value, wait_until, Logferry};

const ACCESS_KEY: &str = "logferry";
const SECRET_KEY: &str = "logferry-secret";
const BUCKET: &str = "logs";

/// The s3s-fs that scripts/s3.sh builds (`fetch`: at once if it is
/// there already), run here directly so each test has a server of its own.
fn s3s_fs_binary() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        common::s3::s3_sh("fetch", dir.path());
        let bin = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/target/s3s-fs/bin/s3s-fs"
        ));
        assert!(
            bin.exists(),
            "scripts/s3.sh fetch left no {}",
            bin.display()
        );
        bin
    })
    .clone()
}

/// A running s3s-fs on a loopback port, serving `dir`.
struct S3Server {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    /// `--domain`: `s3.test:PORT` takes `logs.s3.test:PORT` as bucket `logs`.
    domain: Option<String>,
}

impl S3Server {
    fn start() -> S3Server {
        Self::start_with_domain(None)
    }

    /// With `domain` (`s3.test`), requests to `BUCKET.DOMAIN:PORT`
    /// (virtual-hosted) are understood too; those to 127.0.0.1 stay
    /// path-style.
    fn start_with_domain(domain: Option<&str>) -> S3Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(BUCKET)).unwrap();
        let port = common::free_port();
        let mut s = S3Server {
            child: None,
            port,
            dir,
            domain: domain.map(|d| format!("{d}:{port}")),
        };
        s.restart();
        s
    }

    /// Starts it (again) on the same port and directory.
    fn restart(&mut self) {
        let child = Command::new(s3s_fs_binary())
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
            .args(self.domain.iter().flat_map(|d| ["--domain", d]))
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start s3s-fs");
        self.child = Some(child);
        let port = self.port;
        wait_until("s3s-fs listens", Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr())
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Every object of the bucket: key → body (decompressed).
    fn objects(&self) -> BTreeMap<String, Vec<u8>> {
        let root = self.dir.path().join(BUCKET);
        let mut out = BTreeMap::new();
        let mut dirs = vec![root.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                    continue;
                }
                let key = p.strip_prefix(&root).unwrap().display().to_string();
                out.insert(key, decompress(&p));
            }
        }
        out
    }

    /// Files of multipart uploads not completed nor aborted.
    fn unfinished_uploads(&self) -> Vec<String> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with(".upload-") || n.starts_with(".upload_id-"))
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn decompress(p: &Path) -> Vec<u8> {
    let raw = std::fs::read(p).unwrap();
    if p.to_string_lossy().ends_with(".zst") {
        return zstd::stream::decode_all(&raw[..]).unwrap();
    }
    if p.to_string_lossy().ends_with(".gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        out
    } else {
        raw
    }
}

/// How often each number is in `objects` (text lines, the number first).
fn counts(objects: &BTreeMap<String, Vec<u8>>) -> BTreeMap<u64, usize> {
    let mut c = BTreeMap::new();
    for body in objects.values() {
        for line in std::str::from_utf8(body).unwrap().lines() {
            let n: u64 = line.trim().parse().unwrap_or_else(|_| panic!("{line:?}"));
            *c.entry(n).or_insert(0) += 1;
        }
    }
    c
}

fn missing(c: &BTreeMap<u64, usize>, n: u64) -> Vec<u64> {
    (0..n).filter(|i| !c.contains_key(i)).take(10).collect()
}

/// Asserts that `objects` hold the numbers 0..`n`, each once.
fn assert_each_once(objects: &BTreeMap<String, Vec<u8>>, n: u64) {
    let c = counts(objects);
    assert_eq!(missing(&c, n), Vec::<u64>::new(), "records missing");
    let twice: Vec<_> = c.iter().filter(|(_, &k)| k > 1).take(10).collect();
    assert!(twice.is_empty(), "stored more than once: {twice:?}");
    assert_eq!(c.len() as u64, n, "numbers past {n}");
}

/// The s3 sink `out` sending to `endpoint`, path-style, the access key id
/// set, text lines, with `extra` settings.
fn s3_sink(endpoint: &str, extra: &str) -> String {
    s3_sink_to(
        endpoint,
        &format!("force_path_style = true\naccess_key_id = \"{ACCESS_KEY}\"\n{extra}"),
    )
}

/// The s3 sink `out` sending to `endpoint`, text lines, with `extra`
/// settings (addressing and credentials among them).
fn s3_sink_to(endpoint: &str, extra: &str) -> String {
    format!(
        r#"
[sinks.out]
type = "s3"
match = "**"
bucket = "{BUCKET}"
endpoint = "{endpoint}"
encoding = "text"
retry = {{ initial = "100ms", max = "500ms" }}
{extra}

[api]
address = "127.0.0.1:0"
"#
    )
}

/// Uncompressed objects of 6 MiB (about 700,000 lines of 9 bytes), each
/// stored as a multipart upload of two parts (5 MiB and the rest), closed
/// at the latest `age` after their first record; signed with the right
/// secret.
fn six_mib_objects(age: &str) -> String {
    format!(
        "secret_access_key = \"{SECRET_KEY}\"\ncompression = \"none\"\nkey = \"${{tag}}/{{unique}}.log\"\nmax_object_bytes = \"6MiB\"\nmultipart_part_bytes = \"5MiB\"\nmax_object_age = \"{age}\""
    )
}

/// `lf` once it has exited, as it should, by itself (its sources all
/// finished and every record stored).
fn run_to_end(mut lf: Logferry) -> Logferry {
    let status = lf.wait(Duration::from_secs(120));
    assert!(status.success(), "{}", lf.log_text());
    lf
}

fn metrics(lf: &mut Logferry) -> String {
    let api = lf.address("api listening");
    let r = api_get(api, "/metrics");
    r.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or(r)
}

#[test]
fn numbered_records_land_in_objects_each_once() {
    let server = S3Server::start();
    const N: u64 = 100_000;
    let config = format!(
        "{}{}",
        generated_as("app.web", N, 500),
        s3_sink(
            &server.endpoint(),
            &format!(
                "secret_access_key = \"{SECRET_KEY}\"\nmax_object_bytes = \"100KiB\"\nmax_object_age = \"1s\""
            )
        )
    );
    let lf = run_to_end(Logferry::start(&config));
    let objects = server.objects();
    assert_each_once(&objects, N);
    // 9 bytes a line: 900 kB in objects of 100 KiB at most
    assert!(objects.len() >= 8, "{} objects", objects.len());
    let hour = chrono::Utc::now().format("%Y/%m/%d/").to_string();
    for key in objects.keys() {
        assert!(key.starts_with(&format!("app.web/{hour}")), "{key}");
        assert!(key.ends_with(".log.gz"), "{key}");
    }
    assert_eq!(
        lf.final_counter("logferry_sink_records_total{component=\"out\"}"),
        N
    );
}

#[test]
fn large_objects_go_up_in_parts() {
    let server = S3Server::start();
    const N: u64 = 700_000;
    // 9 bytes a line, uncompressed: one object of 6 MiB in two parts of 5
    let config = format!(
        "{}{}",
        generated(N),
        s3_sink(
            &server.endpoint(),
            &format!(
                "{}\nbuffer = {{ max_bytes = \"64MiB\" }}",
                six_mib_objects("2s"),
            )
        )
    );
    let lf = run_to_end(Logferry::start(&config));
    assert_each_once(&server.objects(), N);
    assert!(
        lf.final_counter("logferry_sink_s3_multipart_uploads_total{component=\"out\"}") >= 1,
        "{}",
        lf.log_text()
    );
    assert!(server.unfinished_uploads().is_empty());
}

/// A file of `n` numbered lines, tailed with a checkpoint: what was not
/// acknowledged is read again after a restart.
fn tailed(n: u64, dir: &Path) -> String {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!("{i:08}\n"));
    }
    std::fs::write(dir.join("in.log"), text).unwrap();
    format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{}/in.log"]
tag = "app"
read_from_head = true
checkpoint_dir = "{}/checkpoints"
checkpoint_interval = "10ms"
"#,
        dir.display(),
        dir.display()
    )
}

/// Kills `lf` while a multipart upload is under way: one the journal at
/// `journal` lists, begun and not completed (s3s-fs forgets
/// the upload's id first when it completes one). So that the server is
/// not completing it as the kill lands, logferry is stopped (SIGSTOP)
/// first and the server given a second to answer what it was sent; then
/// the upload is checked again, and logferry killed, or let go on. Polls
/// `tries` times; whether it killed.
fn kill_mid_upload(lf: &mut Logferry, server: &S3Server, journal: &Path, tries: usize) -> bool {
    let mid_way = || upload_mid_way(server, journal);
    let pid = lf.pid() as i32;
    let signal = |sig: i32| {
        // SAFETY: kill(2) on the pid of a child the test owns.
        unsafe { libc::kill(pid, sig) };
    };
    for _ in 0..tries {
        if mid_way() {
            signal(libc::SIGSTOP);
            std::thread::sleep(Duration::from_secs(1));
            if mid_way() {
                lf.kill();
                return true;
            }
            signal(libc::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// Whether the journal at `journal` lists an upload that `server` has
/// begun and not completed (s3s-fs forgets the upload's id first when it
/// completes one), with or without a part stored yet: either way the
/// store holds an unfinished upload that someone must abort. Waiting for
/// a stored part as well left only the few milliseconds of the last
/// part's transfer to catch, which a loaded machine's polling missed.
fn upload_mid_way(server: &S3Server, journal: &Path) -> bool {
    let listed = std::fs::read_to_string(journal).unwrap_or_default();
    let files = server.unfinished_uploads();
    listed
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|u| {
            let id = u["upload_id"].as_str().unwrap_or_default();
            files.contains(&format!(".upload-{id}.json"))
        })
}

/// `n` numbered lines tailed from `work` into objects of 6 MiB, each in
/// two parts (9 bytes a line, uncompressed), with the multipart journal
/// in `work/state`.
fn tailed_into_multipart_objects(server: &S3Server, n: u64, work: &Path) -> String {
    format!(
        "{}{}",
        tailed(n, work),
        s3_sink(
            &server.endpoint(),
            &format!(
                "{}\nstate_dir = \"{}/state\"\nbuffer = {{ max_bytes = \"64MiB\" }}",
                six_mib_objects("1s"),
                work.display()
            )
        )
    )
}

#[test]
fn killed_mid_upload_loses_nothing_and_leaves_no_upload() {
    let server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    const N: u64 = 2_000_000;
    let config = tailed_into_multipart_objects(&server, N, work.path());
    let mut lf = Logferry::start(&config);
    wait_until("an object stored", Duration::from_secs(60), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_s3_objects_total{component=\"out\"}",
        ) >= 1.0
    });
    let journal_path = work.path().join("state/s3-out.uploads");
    let killed_with_upload = kill_mid_upload(&mut lf, &server, &journal_path, 20_000);
    if !killed_with_upload {
        lf.kill();
    }
    let left_before = server.unfinished_uploads();
    let journal =
        std::fs::read_to_string(work.path().join("state/s3-out.uploads")).unwrap_or_default();
    // the same config and checkpoints again
    let config_path = lf.dir.path().join("logferry.toml");
    let text = std::fs::read_to_string(&config_path).unwrap();
    let mut again = Logferry::start(&text);
    wait_until("every record stored", Duration::from_secs(120), || {
        missing(&counts(&server.objects()), N).is_empty()
    });
    if !left_before.is_empty() {
        assert!(
            !journal.is_empty(),
            "an upload was unfinished, the journal empty"
        );
        again.wait_for_log("aborted a multipart upload", Duration::from_secs(10));
    }
    let c = counts(&server.objects());
    eprintln!(
        "{} records stored twice",
        c.values().filter(|&&k| k > 1).count()
    );
    wait_until("no unfinished upload", Duration::from_secs(10), || {
        server.unfinished_uploads().is_empty()
    });
    assert!(
        killed_with_upload,
        "never saw an upload in progress to kill"
    );
    again.stop();
}

#[test]
fn a_server_stopped_mid_run_loses_nothing() {
    let mut server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    const N: u64 = 300_000;
    let config = format!(
        "{}{}",
        tailed(N, work.path()),
        s3_sink(
            &server.endpoint(),
            &format!("secret_access_key = \"{SECRET_KEY}\"\nmax_object_bytes = \"256KiB\"\nmax_object_age = \"1s\"")
        )
    );
    let mut lf = Logferry::start(&config);
    wait_until("an object stored", Duration::from_secs(60), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_s3_objects_total{component=\"out\"}",
        ) >= 1.0
    });
    server.stop();
    wait_until("a failed upload", Duration::from_secs(30), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_s3_errors_total{component=\"out\",kind=\"request\"}",
        ) >= 1.0
    });
    std::thread::sleep(Duration::from_secs(1));
    server.restart();
    wait_until("every record stored", Duration::from_secs(120), || {
        missing(&counts(&server.objects()), N).is_empty()
    });
    let c = counts(&server.objects());
    assert_eq!(c.len() as u64, N);
    lf.stop();
}

/// A store that takes the upload and never answers: a stop does not wait
/// out `request_timeout` but ends within `drain_timeout`, says so, and
/// exits non-zero (the generator's records were not stored, and nobody
/// else can be told).
#[test]
fn a_stop_while_the_store_never_answers_ends_within_drain_timeout() {
    let server = common::scripted::Scripted::start(|_, _| {
        std::thread::sleep(Duration::from_secs(120));
        common::scripted::Answer::new(200, "application/xml", Vec::new())
    });
    let config = format!(
        r#"
[sources.gen]
type = "generator"
tag = "app"
count = 1000
size = 8
{}"#,
        s3_sink(
            &server.url(),
            &format!(
                "secret_access_key = \"{SECRET_KEY}\"\nmax_object_age = \"200ms\"\n\
                 request_timeout = \"60s\"\ndrain_timeout = \"1s\""
            )
        )
    );
    let mut lf = Logferry::start(&config);
    wait_until("an upload sent", Duration::from_secs(30), || {
        !server.requests().is_empty()
    });
    let status = lf.stop_within_drain_timeout();
    assert!(
        !status.success(),
        "records undelivered, yet exit 0:\n{}",
        lf.log_text()
    );
}

#[test]
fn a_wrong_secret_is_counted_not_ready_and_retried() {
    let server = S3Server::start();
    let config = format!(
        r#"
[sources.gen]
type = "generator"
tag = "app"
rate = 200
size = 8
{}"#,
        s3_sink(
            &server.endpoint(),
            "secret_access_key = \"wrong\"\nmax_object_age = \"200ms\"\nmax_object_bytes = \"1KiB\"\ndrain_timeout = \"1s\""
        )
    );
    let mut lf = Logferry::start(&config);
    let api = lf.address("api listening");
    wait_until("auth errors counted", Duration::from_secs(30), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_s3_errors_total{component=\"out\",kind=\"auth\"}",
        ) >= 2.0
    });
    let m = metrics(&mut lf);
    assert!(metric_value(&m, "logferry_sink_retried_records_total{component=\"out\"}") >= 1.0);
    assert_eq!(
        metric_value(&m, "logferry_sink_records_total{component=\"out\"}"),
        0.0
    );
    let ready = api_get(api, "/ready");
    assert!(ready.starts_with("HTTP/1.1 503"), "{ready}");
    assert!(server.objects().is_empty());
    lf.stop();
}

#[test]
fn with_a_disk_buffer_a_kill_mid_upload_loses_nothing() {
    let server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    const N: u64 = 3_000_000;
    let sink = |source: &str| {
        format!(
            "{source}{}",
            s3_sink(
                &server.endpoint(),
                &format!(
                    "{}\nstate_dir = \"{w}/state\"\nbuffer = {{ type = \"disk\", dir = \"{w}/buffer\", max_bytes = \"256MiB\" }}",
                    six_mib_objects("1s"),
                    w = work.path().display()
                )
            )
        )
    };
    // the generator's records are accepted once on disk: it finishes
    // long before the uploads do
    let mut lf = Logferry::start(&sink(&format!(
        "[sources.gen]\ntype = \"generator\"\ntag = \"gen\"\ncount = {N}\nsize = 8\nbatch_records = 1000\n"
    )));
    lf.wait_for_log("generator finished", Duration::from_secs(60));
    let journal_path = work.path().join("state/s3-out.uploads");
    assert!(
        kill_mid_upload(&mut lf, &server, &journal_path, 20_000),
        "never saw an upload in progress to kill"
    );
    // no source with records now: what comes is what the disk kept
    let mut again = Logferry::start(&sink(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n",
    ));
    wait_until("every record stored", Duration::from_secs(120), || {
        missing(&counts(&server.objects()), N).is_empty()
    });
    again.wait_for_log("aborted a multipart upload", Duration::from_secs(10));
    wait_until("no unfinished upload", Duration::from_secs(10), || {
        server.unfinished_uploads().is_empty()
    });
    again.stop();
}

/// On a disk buffer the sink takes what is written there while an object
/// is open when the object is due (or a MiB has come), not each batch as
/// it is written: lines sent one at a time still go out while the process
/// runs, in objects closed by their age, each once.
#[test]
fn with_a_disk_buffer_a_trickle_goes_out_in_objects_closed_by_age() {
    use std::io::Write as _;
    let server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    const N: u64 = 150;
    let mut lf = Logferry::start(&format!(
        "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n{}",
        s3_sink(
            &server.endpoint(),
            &format!(
                "secret_access_key = \"{SECRET_KEY}\"\nmax_object_age = \"1s\"\nbuffer = {{ type = \"disk\", dir = \"{}\" }}",
                work.path().display()
            )
        )
    ));
    let mut s =
        std::net::TcpStream::connect(lf.address("tcp source listening source=in ")).unwrap();
    // 3 s of lines, one write each (each written to the buffer at once)
    for i in 0..N {
        writeln!(s, "{i}").unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_until("every line stored", Duration::from_secs(20), || {
        missing(&counts(&server.objects()), N).is_empty()
    });
    let objects = server.objects();
    assert_each_once(&objects, N);
    // each closed a second after its first line
    assert!(
        (2..=8).contains(&objects.len()),
        "{} objects for 3 s of lines",
        objects.len()
    );
    lf.stop();
}

/// What the sink gathers on a disk buffer (the batches of an object not
/// yet due) is on disk, not yet stored: a kill -9 meanwhile loses none of
/// it, and the restart stores each line once.
#[test]
fn with_a_disk_buffer_a_kill_9_while_the_sink_gathers_loses_nothing() {
    use std::io::Write as _;
    let server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    const N: u64 = 100;
    let config = |age: &str| {
        format!(
            "[sources.in]\ntype = \"tcp\"\naddress = \"127.0.0.1:0\"\n{}",
            s3_sink(
                &server.endpoint(),
                &format!(
                    "secret_access_key = \"{SECRET_KEY}\"\nmax_object_age = \"{age}\"\nbuffer = {{ type = \"disk\", dir = \"{}\" }}",
                    work.path().display()
                )
            )
        )
    };
    let mut lf = Logferry::start(&config("1h"));
    let api = lf.address("api listening");
    let mut s =
        std::net::TcpStream::connect(lf.address("tcp source listening source=in ")).unwrap();
    for i in 0..N {
        writeln!(s, "{i}").unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    wait_until("every line on disk", Duration::from_secs(10), || {
        let m = api_get(api, "/metrics");
        metric_value(
            &m,
            "logferry_buffer_disk_written_records_total{component=\"out\"}",
        ) >= N as f64
    });
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        server.objects().is_empty(),
        "stored before the object was due"
    );
    lf.kill();
    drop(s);
    let mut lf = Logferry::start(&config("1s"));
    wait_until("every line stored", Duration::from_secs(20), || {
        missing(&counts(&server.objects()), N).is_empty()
    });
    assert_each_once(&server.objects(), N);
    lf.stop();
}

#[test]
fn ndjson_objects_in_zstd_hold_every_record_with_its_time_and_tag() {
    let server = S3Server::start();
    const N: u64 = 20_000;
    let config = format!(
        "{}{}",
        generated_as("app.api", N, 500),
        s3_sink(
            &server.endpoint(),
            &format!(
                "secret_access_key = \"{SECRET_KEY}\"\nkey = \"archive/${{tag[1]}}/%Y/{{unique}}.ndjson.zst\"\ncompression = \"zstd\"\ntag_key = \"tag\"\ntime_format = \"rfc3339\"\nmax_object_bytes = \"200KiB\"\nmax_object_age = \"1s\""
            )
        )
    )
    // the helper's text encoding, swapped for the default
    .replace("encoding = \"text\"\n", "");
    run_to_end(Logferry::start(&config));
    let objects = server.objects();
    assert!(objects.len() >= 2, "{} objects", objects.len());
    let mut c = BTreeMap::new();
    for (key, body) in &objects {
        assert!(
            key.starts_with("archive/api/") && key.ends_with(".ndjson.zst"),
            "{key}"
        );
        for line in std::str::from_utf8(body).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["tag"], "app.api");
            assert!(v["time"].as_str().unwrap().ends_with('Z'), "{line}");
            let n: u64 = v["message"].as_str().unwrap().trim().parse().unwrap();
            *c.entry(n).or_insert(0usize) += 1;
        }
    }
    assert_eq!(missing(&c, N), Vec::<u64>::new());
    assert!(c.values().all(|&k| k == 1));
}

/// ndjson objects with the defaults carry each record's time as whole
/// milliseconds since the epoch, an integer, within the run.
#[test]
fn ndjson_objects_with_defaults_write_the_time_in_whole_milliseconds() {
    let server = S3Server::start();
    const N: u64 = 2_000;
    let config = format!(
        "{}{}",
        generated_as("app.api", N, 100),
        s3_sink(
            &server.endpoint(),
            &format!("secret_access_key = \"{SECRET_KEY}\"\nmax_object_age = \"1s\"")
        )
    )
    .replace("encoding = \"text\"\n", "");
    let ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let start = ms();
    run_to_end(Logferry::start(&config));
    let end = ms();
    let objects = server.objects();
    let mut c = BTreeMap::new();
    for (key, body) in &objects {
        assert!(key.ends_with(".log.gz"), "{key}");
        for line in std::str::from_utf8(body).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let t = v["time"].as_u64().unwrap_or_else(|| panic!("{line}"));
            assert!((start..=end).contains(&t), "{t} not in {start}..={end}");
            let n: u64 = v["message"].as_str().unwrap().trim().parse().unwrap();
            *c.entry(n).or_insert(0usize) += 1;
        }
    }
    assert_eq!(missing(&c, N), Vec::<u64>::new());
    assert!(c.values().all(|&k| k == 1));
}

#[test]
fn objects_refused_until_retries_run_out_go_to_the_dead_letter_file() {
    let server = S3Server::start();
    const N: u64 = 1000;
    let config = format!(
        r#"
[sources.gen]
type = "generator"
tag = "app"
count = {N}
size = 8
{}"#,
        s3_sink(
            &server.endpoint(),
            "secret_access_key = \"wrong\"\nmax_object_age = \"200ms\"\ndead_letter = \"{dir}/dead.msgpack\""
        )
        .replace(
            "retry = { initial = \"100ms\", max = \"500ms\" }",
            "retry = { initial = \"50ms\", max = \"100ms\", max_attempts = 3 }"
        )
    );
    let mut lf = Logferry::start(&config);
    let status = lf.wait(Duration::from_secs(60));
    assert!(status.success(), "{}", lf.log_text());
    assert!(server.objects().is_empty());
    assert_eq!(
        lf.final_counter("logferry_sink_dead_letter_records_total{component=\"out\"}"),
        N
    );
    assert!(
        lf.final_counter("logferry_sink_s3_errors_total{component=\"out\",kind=\"auth\"}") >= 3
    );
    let dead = std::fs::metadata(lf.dir.path().join("dead.msgpack")).unwrap();
    assert!(dead.len() > N * 9);
}

/// `n` numbered records from a generator, tag `app`, in batches of 1000.
fn generated(n: u64) -> String {
    generated_as("app", n, 1000)
}

/// A generator source of `n` numbered 8-byte lines tagged `tag`, in
/// batches of `batch` records.
fn generated_as(tag: &str, n: u64, batch: usize) -> String {
    format!(
        "[sources.gen]\ntype = \"generator\"\ntag = \"{tag}\"\ncount = {n}\nsize = 8\nbatch_records = {batch}\n"
    )
}

/// What kinds of problem [`sigv4_problems`] finds in `r`.
fn problem_kinds(r: &Seen) -> Vec<String> {
    sigv4_problems(r, SECRET_KEY)
        .iter()
        .map(|p| p.split(':').next().unwrap().to_string())
        .collect()
}

/// Every request the sink sends is signed (SigV4) over its body, each
/// part of a multipart upload too: checked by a proxy between the sink
/// and s3s-fs, which would store the same objects sent as
/// `UNSIGNED-PAYLOAD`.
#[test]
fn every_request_is_signed_over_its_body() {
    let server = S3Server::start();
    let proxy = S3Proxy::start(server.addr(), false);
    const N: u64 = 720_000;
    // 9 bytes a line, uncompressed: an object of 6 MiB in two parts (of 5
    // and 1), then the rest in one PUT
    let config = format!(
        "{}{}",
        generated(N),
        s3_sink(
            &proxy.url(),
            &format!(
                "{}\nbuffer = {{ max_bytes = \"64MiB\" }}",
                six_mib_objects("30s"),
            )
        )
    );
    run_to_end(Logferry::start(&config));
    assert_each_once(&server.objects(), N);

    let seen = proxy.seen();
    let parts = seen.iter().filter(|r| r.is_part()).count();
    let single = seen.iter().filter(|r| r.is_put() && !r.is_part()).count();
    assert!(
        parts >= 2 && single >= 1,
        "{parts} parts, {single} single PUTs"
    );
    let problems: Vec<String> = seen
        .iter()
        .flat_map(|r| {
            sigv4_problems(r, SECRET_KEY)
                .into_iter()
                .map(move |p| format!("{} {}: {p}", r.method, r.target))
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");

    // the check fails where it must, on a part as sent: one byte of the
    // body changed; the declared hash changed to match; no hash signed
    let part = seen.iter().find(|r| r.is_part()).unwrap();
    let mut changed = part.clone();
    let mut body = changed.body.to_vec();
    body[0] ^= 0x01;
    changed.body = body.into();
    assert_eq!(problem_kinds(&changed), ["payload"]);
    let forged_hash = payload_hash(&changed.body);
    changed.set_header("x-amz-content-sha256", &forged_hash);
    assert_eq!(problem_kinds(&changed), ["signature"]);
    let mut unsigned = part.clone();
    unsigned.set_header("x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    assert_eq!(problem_kinds(&unsigned), ["payload", "signature"]);
}

/// The check on the way: with one byte of every `PUT` body changed by the
/// proxy (a single PUT and the parts of an upload), every such request is
/// reported, and s3s-fs refuses them all (500, where S3 answers 400
/// `XAmzContentSHA256Mismatch`), so nothing is stored. s3s-fs would take
/// any body under `UNSIGNED-PAYLOAD`, though: that it stores what the sink
/// sends does not show that the sink signs it; the check above does.
#[test]
fn a_body_changed_on_the_way_is_reported_and_refused() {
    // a small object (one PUT), then a large one (parts of an upload; the
    // first refused ends it, and the sink stores one object at a time);
    // objects close by size or at the stop, never by age
    for (n, multipart) in [(1000, false), (720_000, true)] {
        let server = S3Server::start();
        let proxy = S3Proxy::start(server.addr(), true);
        let config = format!(
            "{}{}",
            generated(n),
            s3_sink(
                &proxy.url(),
                &format!(
                    "{}\nbuffer = {{ max_bytes = \"64MiB\" }}\ndrain_timeout = \"1s\"",
                    six_mib_objects("30s"),
                )
            )
        );
        let mut lf = Logferry::start(&config);
        let status = lf.wait(Duration::from_secs(60));
        assert!(!status.success(), "{}", lf.log_text());
        let seen = proxy.seen();
        let puts: Vec<&Seen> = seen.iter().filter(|r| r.is_put()).collect();
        assert!(!puts.is_empty());
        for r in &puts {
            assert_eq!(r.is_part(), multipart, "{}", r.target);
            assert_eq!(problem_kinds(r), ["payload"], "{}", r.target);
            assert_eq!(r.status, 500, "{}", r.target);
        }
        // (an upload the stop cut short may be left: no state_dir here)
        assert!(server.objects().is_empty());
    }
}

/// `force_path_style = false` (the default): requests go to
/// `logs.s3.test:PORT/key` through a proxy, since the name resolves
/// nowhere (the proxy takes every request to s3s-fs, started with
/// `--domain s3.test:PORT`): the `proxy_url` setting, then `HTTP_PROXY`
/// in the environment. The keys come from the environment.
#[test]
fn virtual_hosted_requests_through_a_proxy_store_every_record_once() {
    for setting in [true, false] {
        let server = S3Server::start_with_domain(Some("s3.test"));
        let proxy = S3Proxy::start(server.addr(), false);
        let proxy_url = proxy.url();
        let mut env = vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ];
        let mut extra = "max_object_bytes = \"100KiB\"\nmax_object_age = \"1s\"".to_string();
        if setting {
            extra.push_str(&format!("\nproxy_url = \"{proxy_url}\""));
        } else {
            env.push(("HTTP_PROXY", &proxy_url));
        }
        const N: u64 = 50_000;
        let endpoint = format!("http://s3.test:{}", server.port);
        let config = format!("{}{}", generated(N), s3_sink_to(&endpoint, &extra));
        run_to_end(Logferry::start_with_env(&config, env));
        let objects = server.objects();
        assert_each_once(&objects, N);
        assert!(objects.len() >= 2, "{} objects", objects.len());

        let host = format!("{BUCKET}.s3.test:{}", server.port);
        let seen = proxy.seen();
        assert!(seen.iter().filter(|r| r.is_put()).count() >= 2);
        for r in &seen {
            let what = format!("{} {}", r.method, r.target);
            assert_eq!(r.header("host"), Some(host.as_str()), "{what}");
            assert!(!r.target.starts_with(&format!("/{BUCKET}/")), "{what}");
            assert_eq!(sigv4_problems(r, SECRET_KEY), Vec::<String>::new());
        }
    }
}

/// The keys from the shared credentials file of the AWS CLI and SDKs when
/// none are configured or in the environment: `~/.aws/credentials`'
/// `default` profile, the profile `AWS_PROFILE` names, and the file and
/// profile of the `credentials_file` and `profile` settings. A profile
/// with the wrong secret is refused by the server (the file's keys are
/// what signs); a profile the settings name and the file lacks stops the
/// start, saying so.
#[test]
fn keys_come_from_the_shared_credentials_file_and_its_profiles() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".aws")).unwrap();
    let file = home.path().join(".aws/credentials");
    let keys = format!("aws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n");
    std::fs::write(
        &file,
        format!(
            "[default]\n{keys}\n# a secret the server refuses\n[wrong]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = not-the-secret\n\n[archive]\n{keys}"
        ),
    )
    .unwrap();
    let home_dir = home.path().display().to_string();
    let file_path = file.display().to_string();
    let extra = "force_path_style = true\nmax_object_bytes = \"100KiB\"\nmax_object_age = \"1s\"";
    const N: u64 = 20_000;
    let cases: [(&str, Vec<(&str, &str)>); 3] = [
        ("", vec![("HOME", &home_dir)]),
        ("", vec![("HOME", &home_dir), ("AWS_PROFILE", "archive")]),
        (
            &format!("credentials_file = {file_path:?}\nprofile = \"archive\"\n"),
            vec![("HOME", "/nonexistent")],
        ),
    ];
    for (settings, env) in cases {
        let server = S3Server::start();
        let config = format!(
            "{}{}",
            generated(N),
            s3_sink_to(&server.endpoint(), &format!("{settings}{extra}"))
        );
        run_to_end(Logferry::start_with_env(&config, env.clone()));
        assert_each_once(&server.objects(), N);
        eprintln!("{settings:?} {env:?}: every record stored");
    }

    let server = S3Server::start();
    let config = format!(
        "{}{}",
        generated(N),
        s3_sink_to(
            &server.endpoint(),
            &format!("{extra}\ndrain_timeout = \"1s\"")
        )
    );
    let mut lf = Logferry::start_with_env(
        &config,
        [("HOME", home_dir.as_str()), ("AWS_PROFILE", "wrong")],
    );
    wait_until("auth errors counted", Duration::from_secs(30), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_s3_errors_total{component=\"out\",kind=\"auth\"}",
        ) >= 1.0
    });
    assert!(server.objects().is_empty());
    lf.stop();

    let config = format!(
        "{}{}",
        generated(N),
        s3_sink_to(
            &server.endpoint(),
            &format!("credentials_file = {file_path:?}\nprofile = \"missing\"\n{extra}")
        )
    );
    let mut lf = Logferry::start(&config);
    assert!(!lf.wait(Duration::from_secs(30)).success());
    let log = lf.log_text();
    assert!(log.contains("no profile [missing]"), "{log}");
}

/// A reload that changes the sink's key while records come: the old sink
/// stores the objects it holds before the new one takes the queue, so
/// every number is stored once, under the old key or the new.
#[test]
fn a_reload_changing_the_key_stores_every_record_once() {
    let server = S3Server::start();
    const N: u64 = 20_000;
    let config = |prefix: &str| {
        format!(
            "[sources.gen]\ntype = \"generator\"\ntag = \"app\"\ncount = {N}\nrate = 5000\nsize = 8\nbatch_records = 100\n{}",
            s3_sink(
                &server.endpoint(),
                &format!(
                    "secret_access_key = \"{SECRET_KEY}\"\nkey = \"{prefix}/${{tag}}/{{unique}}.log.gz\"\nmax_object_bytes = \"20KiB\"\nmax_object_age = \"1s\""
                )
            )
        )
    };
    let mut lf = Logferry::start(&config("before"));
    let api = lf.address("api listening");
    wait_until("a first object", Duration::from_secs(30), || {
        !server.objects().is_empty()
    });
    lf.rewrite_config(&config("after"));
    let answer = common::api_post(api, "/reload");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let lf = run_to_end(lf);
    let objects = server.objects();
    assert_each_once(&objects, N);
    for prefix in ["before/app/", "after/app/"] {
        assert!(
            objects.keys().any(|k| k.starts_with(prefix)),
            "no object under {prefix}: {:?}\n{}",
            objects.keys().collect::<Vec<_>>(),
            lf.log_text()
        );
    }
}

/// A wrong secret is found by the check at start (a signed HEAD on the
/// bucket), not by the first upload `max_object_age` later: `/ready`
/// says not ready, and why, right after the start; the right secret is
/// ready at once.
#[test]
fn a_wrong_secret_is_not_ready_right_after_the_start() {
    let server = S3Server::start();
    let config = |secret: &str| {
        format!(
            "[sources.gen]\ntype = \"generator\"\ntag = \"app\"\nrate = 10\nsize = 8\n{}",
            s3_sink(
                &server.endpoint(),
                &format!("secret_access_key = \"{secret}\"\ndrain_timeout = \"1s\"")
            )
        )
    };
    let mut wrong = Logferry::start(&config("wrong"));
    let api = wrong.address("api listening");
    // not ready from the start; once the check has its answer (well
    // before any upload: max_object_age is 60 s), the reason says why
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = common::wait_ready(api, "503", Duration::from_secs(10));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let reason = v["sinks"]["out"]["reason"].as_str().unwrap_or_default();
        if reason.contains("credentials") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the reason names the credentials: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(server.objects().is_empty());
    wrong.wait_for_log("refused the credentials", Duration::from_secs(5));
    wrong.stop();
    let mut right = Logferry::start(&config(SECRET_KEY));
    let api = right.address("api listening");
    common::wait_ready(api, "200", Duration::from_secs(10));
    right.stop();
}

/// One `text/plain` POST of `body` to `path` on a connection of its own:
/// its status, or `None` when no answer came.
fn post_text(addr: SocketAddr, path: &str, body: &str) -> Option<u16> {
    use std::io::Write as _;
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(120))).ok()?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_whitespace().nth(1)?.parse().ok()
}

/// HTTP clients posting into an s3 sink with its defaults (objects closed
/// 60 s after their first record at the latest, longer than the source's
/// `request_timeout` of 30 s): every request is answered 2xx well within
/// the timeout, since a batch whose client waits closes its object at
/// once, and every record is stored once (no client timed out and sent
/// its records again).
#[test]
fn http_clients_on_an_s3_sink_with_defaults_are_answered_in_time() {
    let server = S3Server::start();
    const CLIENTS: u64 = 4;
    const REQUESTS: u64 = 20;
    const PER: u64 = 100;
    let config = format!(
        "[sources.web]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n{}",
        s3_sink(
            &server.endpoint(),
            &format!("secret_access_key = \"{SECRET_KEY}\"")
        )
    );
    let mut lf = Logferry::start(&config);
    let addr = lf.http_addr("web");
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut slowest = Duration::ZERO;
                for r in 0..REQUESTS {
                    let from = (c * REQUESTS + r) * PER;
                    let body: String = (from..from + PER).map(|i| format!("{i}\n")).collect();
                    let at = std::time::Instant::now();
                    let status = post_text(addr, "/app", &body);
                    slowest = slowest.max(at.elapsed());
                    assert_eq!(status, Some(200), "client {c}, request {r}");
                }
                slowest
            })
        })
        .collect();
    let slowest = clients
        .into_iter()
        .map(|c| c.join().unwrap())
        .max()
        .unwrap();
    // 30 s is the source's request_timeout; a loaded machine is slow, but
    // not this slow
    assert!(
        slowest < Duration::from_secs(10),
        "a client waited {slowest:?}"
    );
    let n = CLIENTS * REQUESTS * PER;
    assert_each_once(&server.objects(), n);
    lf.stop();
}

/// The store goes down in the middle of a multipart upload and comes back:
/// the upload the failed attempt left is aborted once the store answers,
/// in the same run (none is left on the store), every record is stored,
/// and the next start does not say that records "come again".
#[test]
fn an_upload_cut_by_an_outage_is_aborted_when_the_store_returns() {
    let mut server = S3Server::start();
    let work = tempfile::tempdir().unwrap();
    const N: u64 = 2_000_000;
    let config = tailed_into_multipart_objects(&server, N, work.path());
    let mut lf = Logferry::start(&config);
    let journal = work.path().join("state/s3-out.uploads");
    // an upload begun and not completed: logferry is held
    // (SIGSTOP) while the server goes down under it
    let pid = lf.pid() as i32;
    let signal = |sig: i32| {
        // SAFETY: kill(2) on the pid of a child the test owns.
        unsafe { libc::kill(pid, sig) };
    };
    let mid_way = |server: &S3Server| upload_mid_way(server, &journal);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "never saw an upload in progress"
        );
        if mid_way(&server) {
            signal(libc::SIGSTOP);
            std::thread::sleep(Duration::from_millis(500));
            if mid_way(&server) {
                server.stop();
                signal(libc::SIGCONT);
                break;
            }
            signal(libc::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    wait_until("a failed upload", Duration::from_secs(60), || {
        metric_value(
            &metrics(&mut lf),
            "logferry_sink_s3_errors_total{component=\"out\",kind=\"request\"}",
        ) >= 1.0
    });
    std::thread::sleep(Duration::from_secs(2));
    server.restart();
    wait_until("every record stored", Duration::from_secs(180), || {
        missing(&counts(&server.objects()), N).is_empty()
    });
    wait_until(
        "no unfinished upload left in this run",
        Duration::from_secs(30),
        || server.unfinished_uploads().is_empty(),
    );
    lf.stop();
    // the same config and checkpoints again: nothing to abort, nothing
    // said to come again
    let text = std::fs::read_to_string(lf.dir.path().join("logferry.toml")).unwrap();
    let mut again = Logferry::start(&text);
    again.address("api listening");
    std::thread::sleep(Duration::from_secs(2));
    again.stop();
    let log = again.log_text();
    assert!(!log.contains("come again"), "{log}");
    assert!(server.unfinished_uploads().is_empty());
}

/// `validate` names an s3 sink whose one upload may take as long as the
/// waiting clients of an HTTP source allow (such an upload can only end
/// in their 503 and a resend); the defaults fit, and so does a disk
/// buffer, which answers the clients once their records are on disk.
#[test]
fn validate_warns_about_uploads_that_outlast_waiting_clients() {
    let validate = |sink_extra: &str| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let config = format!(
            "[sources.web]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n{}",
            s3_sink(
                "http://127.0.0.1:9",
                &format!("secret_access_key = \"{SECRET_KEY}\"\n{sink_extra}")
            )
        );
        std::fs::write(&path, config).unwrap();
        let out = Command::new(common::BIN)
            .args(["validate", "-c"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let slow = validate("request_timeout = \"30s\"");
    assert!(
        slow.contains("[sinks.out]") && slow.contains("[sources.web]") && slow.contains("503"),
        "{slow}"
    );
    let defaults = validate("");
    assert!(!defaults.contains("503"), "{defaults}");
    let disk = validate(
        "request_timeout = \"30s\"\nbuffer = { type = \"disk\", dir = \"/tmp/logferry-validate-s3\" }",
    );
    assert!(!disk.contains("503"), "{disk}");
}
