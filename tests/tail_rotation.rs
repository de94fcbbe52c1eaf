//! The tail source against the fastest rotation, kill -9 at the worst
//! moment, renames while it is down, and files it has never seen: numbered
//! lines, counted at the end.

mod common;

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tail::*;
use common::*;

/// Exactly `app.log` (rotated names do not match), from the head, with a
/// checkpoint, into `out.log`.
fn config(dir: &Path, extra: &str) -> String {
    format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/app.log\"]\ntag = \"app\"\nread_from_head = true\ncheckpoint_dir = \"{d}/state\"\n{extra}\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/out.log\"\nformat = \"raw\"\n",
        d = dir.display()
    )
}

/// An empty `logs/app.log` in a new directory, followed (with `config`'s
/// defaults) by a logferry that has started following it.
fn following_an_empty_file() -> (tempfile::TempDir, PathBuf, Logferry) {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    std::fs::write(&live, b"").unwrap();
    let mut lf = Logferry::start(&config(dir.path(), ""));
    lf.wait_for_log("following file", Duration::from_secs(20));
    (dir, live, lf)
}

/// Writes numbered lines `w-N` to `live` as fast as it can, and every
/// `every` renames it to `live.R` and starts a new one, `rotations` times.
/// `rotated` counts rotations done (for a test that acts mid-way).
fn rotating_writer(
    live: PathBuf,
    every: Duration,
    rotations: usize,
    rotated: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&live)
            .unwrap();
        let mut n = 0;
        let mut since = Instant::now();
        let mut round = 0;
        loop {
            let mut buf = String::with_capacity(4096);
            for _ in 0..50 {
                buf.push_str(&format!("w-{n}\n"));
                n += 1;
            }
            file.write_all(buf.as_bytes()).unwrap();
            if since.elapsed() >= every {
                if round == rotations {
                    return n;
                }
                std::fs::rename(&live, live.with_extension(format!("log.{round}"))).unwrap();
                file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&live)
                    .unwrap();
                round += 1;
                rotated.store(round, Ordering::SeqCst);
                since = Instant::now();
            }
        }
    })
}

/// How often each `w-N` line, 0 ≤ N < n, is in `out`; panics on a line
/// that is not one of them.
fn counts(out: &Path, n: usize) -> Vec<u32> {
    let mut seen = vec![0u32; n];
    for l in read_lines(out) {
        let i: usize = l
            .strip_prefix("w-")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {l:?}"));
        seen[i] += 1;
    }
    seen
}

/// Waits until every `w-N` line is in `out` at least once.
fn wait_for_all(out: &Path, n: usize, timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let seen = counts(out, n);
        let missing = seen.iter().filter(|c| **c == 0).count();
        if missing == 0 {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {n} lines never arrived"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn rotation_every_few_ms_delivers_every_line_exactly_once() {
    let (dir, live, mut lf) = following_an_empty_file();
    let n = rotating_writer(live, Duration::from_millis(3), 30, Default::default())
        .join()
        .unwrap();
    let out = dir.path().join("out.log");
    let seen = wait_for_all(&out, n, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let seen = counts(&out, n)
        .iter()
        .zip(seen)
        .map(|(a, _)| *a)
        .collect::<Vec<_>>();
    let twice = seen.iter().filter(|c| **c > 1).count();
    assert_eq!(twice, 0, "{twice} of {n} lines arrived more than once");
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_tail_rotations_total{component=\"tail\"}"),
        30
    );
    eprintln!("{n} lines over 30 rotations 3 ms apart, each exactly once");
}

#[test]
fn fast_rotation_with_kill_9_and_restart_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    std::fs::write(&live, b"").unwrap();
    let cfg = config(dir.path(), "");
    let mut lf = Logferry::start(&cfg);
    lf.wait_for_log("following file", Duration::from_secs(20));
    let rotated = Arc::new(AtomicUsize::new(0));
    let writer = rotating_writer(live, Duration::from_millis(5), 60, rotated.clone());
    // kill -9 mid-way; rotations go on while it is down
    while rotated.load(Ordering::SeqCst) < 20 {
        std::thread::sleep(Duration::from_millis(1));
    }
    lf.kill();
    std::thread::sleep(Duration::from_millis(30));
    let mut again = Logferry::start(&cfg);
    let n = writer.join().unwrap();
    let seen = wait_for_all(&dir.path().join("out.log"), n, Duration::from_secs(60));
    assert!(again.stop().success());
    let twice = seen.iter().filter(|c| **c > 1).count();
    eprintln!("{n} lines, kill -9 after 20 of 60 rotations: none missing, {twice} resent");
}

/// Writes `w-0` … `w-{N-1}` to `live` one line per `write()`, about 500 a
/// second, and every `every` lines calls `rotate` between two writes
/// (with the writer's file, which it may replace); then waits until every
/// line is in `out.log` and a little longer, and returns how often each
/// arrived.
fn write_rotating_at_an_everyday_rate(
    dir: &Path,
    live: &Path,
    every: usize,
    rotate: impl FnMut(usize, &mut std::fs::File),
) -> Vec<u32> {
    write_rotating(dir, live, N, Duration::from_millis(2), every, rotate)
}

/// As [`write_rotating_at_an_everyday_rate`], `n` lines with `pause`
/// after each.
fn write_rotating(
    dir: &Path,
    live: &Path,
    n: usize,
    pause: Duration,
    every: usize,
    mut rotate: impl FnMut(usize, &mut std::fs::File),
) -> Vec<u32> {
    let mut file = OpenOptions::new().append(true).open(live).unwrap();
    for i in 0..n {
        if i > 0 && i % every == 0 {
            rotate(i / every, &mut file);
        }
        file.write_all(format!("w-{i}\n").as_bytes()).unwrap();
        std::thread::sleep(pause);
    }
    let out = dir.join("out.log");
    wait_for_all(&out, n, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1500));
    counts(&out, n)
}

/// Lines [`write_rotating_at_an_everyday_rate`] writes.
const N: usize = 2400;

/// copytruncate at an everyday rate, with the defaults: every 400 lines
/// (0.8 s) the file is copied to `app.log.R` and truncated, while the reader lets lines
/// gather (its `linger`). The lines it had not read when the file was
/// truncated are in the copy only; the writer makes the copy and the
/// truncation between two of its writes, so no line is in neither, and
/// every line must arrive exactly once.
#[test]
fn copytruncate_while_lines_gather_loses_and_repeats_nothing() {
    let (dir, live, mut lf) = following_an_empty_file();
    const EVERY: usize = 400;
    let seen = write_rotating_at_an_everyday_rate(dir.path(), &live, EVERY, |r, file| {
        std::fs::copy(&live, live.with_extension(format!("log.{r}"))).unwrap();
        file.set_len(0).unwrap();
    });
    let twice: Vec<usize> = (0..N).filter(|&i| seen[i] > 1).collect();
    assert!(twice.is_empty(), "lines arrived more than once: {twice:?}");
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_tail_truncations_total{component=\"tail\"}"),
        (N / EVERY - 1) as u64
    );
}

/// logrotate's `copytruncate` with `compress` and no `delaycompress`, with
/// logferry's defaults: the file is copied to `app.log.1` and truncated,
/// and the copy is compressed to `app.log.1.gz` and removed at once, five
/// times while a writer writes ~200 lines/s, one line per `write()`. The
/// lines logferry had not read when the file was truncated are only in
/// the copy, which is gone (compressed) within a millisecond, well inside
/// one `linger`. The steps are taken between two writes, so that no line
/// is in neither file (copytruncate's own loss), and every line must
/// arrive exactly once.
#[test]
fn copytruncate_with_compress_at_once_loses_and_repeats_nothing() {
    copytruncate_with_compress_five_times(|live, r| {
        for older in (1..r).rev() {
            let gz = |i: usize| live.with_extension(format!("log.{i}.gz"));
            std::fs::rename(gz(older), gz(older + 1)).unwrap();
        }
        let copy = live.with_extension("log.1");
        std::fs::copy(live, &copy).unwrap();
        truncate(live);
        let gz = std::fs::File::create(live.with_extension("log.1.gz")).unwrap();
        let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
        enc.write_all(&std::fs::read(&copy).unwrap()).unwrap();
        enc.finish().unwrap();
        std::fs::remove_file(&copy).unwrap();
    });
}

/// The same with the real logrotate (skipped where it is not installed).
#[test]
fn logrotate_copytruncate_with_compress_loses_and_repeats_nothing() {
    let Some(bin) = [
        "/usr/sbin/logrotate",
        "/usr/bin/logrotate",
        "/sbin/logrotate",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists()) else {
        common::skipped(
            "logrotate is not installed (apt-get install logrotate; scripts/test-deps.sh does)",
        );
        return;
    };
    copytruncate_with_compress_five_times(|live, _| {
        let dir = live.parent().unwrap().parent().unwrap();
        let conf = dir.join("logrotate.conf");
        std::fs::write(
            &conf,
            format!(
                "{} {{\n    copytruncate\n    compress\n    rotate 10\n    missingok\n}}\n",
                live.display()
            ),
        )
        .unwrap();
        let done = std::process::Command::new(bin)
            .arg("-f")
            .arg("-s")
            .arg(dir.join("logrotate.state"))
            .arg(&conf)
            .output()
            .unwrap();
        assert!(done.status.success(), "logrotate: {done:?}");
    });
}

/// 2,040 lines at ~200 lines/s into a followed `app.log`, with `rotate`
/// (given the file's path and the rotation's number) called every 340
/// lines, between two writes, five times: a copytruncate leaving
/// `app.log.1.gz` and no `app.log.1`. Every line arrives exactly once, and
/// nothing is counted as missed.
fn copytruncate_with_compress_five_times(mut rotate: impl FnMut(&Path, usize)) {
    let (dir, live, mut lf) = following_an_empty_file();
    const LINES: usize = 2040;
    const EVERY: usize = 340;
    let seen = write_rotating(
        dir.path(),
        &live,
        LINES,
        Duration::from_millis(5),
        EVERY,
        |r, _| rotate(&live, r),
    );
    let logs = live.parent().unwrap();
    assert!(logs.join("app.log.5.gz").exists() && !logs.join("app.log.1").exists());
    let lost: Vec<usize> = (0..LINES).filter(|&i| seen[i] == 0).collect();
    assert!(lost.is_empty(), "{} lines lost: {lost:?}", lost.len());
    let twice: Vec<usize> = (0..LINES).filter(|&i| seen[i] > 1).collect();
    assert!(twice.is_empty(), "lines arrived more than once: {twice:?}");
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_tail_truncations_total{component=\"tail\"}"),
        (LINES / EVERY - 1) as u64
    );
    assert_eq!(
        lf.final_counter("logferry_tail_missed_bytes_total{component=\"tail\"}"),
        0
    );
}

/// Rename rotation at an everyday rate every 100 lines (0.2 s, several
/// files in one `linger`), the rotated file deleted at once (logrotate's
/// `rotate 0`; a container removed as it exits), while the reader lets
/// lines gather: each new file is opened as it is created, so what it held
/// is read through that descriptor after it is gone, and every line
/// arrives exactly once.
#[test]
fn a_rotated_file_deleted_at_once_while_lines_gather_loses_nothing() {
    let (dir, live, mut lf) = following_an_empty_file();
    let seen = write_rotating_at_an_everyday_rate(dir.path(), &live, 100, |r, file| {
        let rotated = live.with_extension(format!("log.{r}"));
        std::fs::rename(&live, &rotated).unwrap();
        std::fs::remove_file(&rotated).unwrap();
        *file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&live)
            .unwrap();
    });
    let twice: Vec<usize> = (0..N).filter(|&i| seen[i] > 1).collect();
    assert!(twice.is_empty(), "lines arrived more than once: {twice:?}");
    assert!(lf.stop().success());
}

/// Whether process `pid` holds a descriptor of `path`.
fn holds(pid: u32, path: &Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == path))
}

/// A file closed as idle (`close_idle_after = "1s"`), then written to and
/// removed while the reader lets lines gather (another file was just read):
/// the write opens it again at once, and the lines written after it was
/// closed arrive all the same. The rest of the settings are the defaults.
#[test]
fn a_file_closed_as_idle_written_and_removed_while_lines_gather_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let (a, b) = (logs.join("a.log"), logs.join("b.log"));
    append(&a, numbered("w", 0..5).as_bytes());
    let cfg = config(dir.path(), "close_idle_after = \"1s\"").replace("logs/app.log", "logs/*.log");
    let mut lf = Logferry::start(&cfg);
    let out = dir.path().join("out.log");
    wait_for_all(&out, 5, Duration::from_secs(20));
    let pid = lf.pid();
    wait_until("a.log closed as idle", Duration::from_secs(20), || {
        !holds(pid, &a)
    });
    // another file read: the reader lets lines gather for its linger
    append(&b, b"b-0\n");
    wait_for_lines(&out, 6, Duration::from_secs(20));
    // the first write, then the rest and the removal, all within the
    // linger; the pause after the first write is the reader's to react
    // (no reader can have lines written and removed before it is woken)
    let mut file = OpenOptions::new().append(true).open(&a).unwrap();
    for i in 5..15 {
        file.write_all(format!("w-{i}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(if i == 5 { 300 } else { 10 }));
    }
    drop(file);
    std::fs::remove_file(&a).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let missing = loop {
        let lines = read_lines(&out);
        let missing: Vec<usize> = (0..15)
            .filter(|i| !lines.contains(&format!("w-{i}")))
            .collect();
        if missing.is_empty() || Instant::now() > deadline {
            break missing;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(lf.stop().success());
    assert!(
        missing.is_empty(),
        "lines lost: {missing:?}\n{}",
        lf.log_text()
    );
    let lines = read_lines(&out);
    assert_eq!(lines.len(), 16, "a line arrived twice: {lines:?}");
    assert_eq!(
        lf.final_counter("logferry_tail_lost_files_total{component=\"tail\"}"),
        0
    );
}

/// While logferry is down, the followed file gets more lines and is
/// renamed away, and a new file takes its name: every line arrives, once.
#[test]
fn restart_after_renames_and_appends_while_down() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let cfg = config(dir.path(), "");
    let out = dir.path().join("out.log");
    append(&live, numbered("w", 0..100_000).as_bytes());
    let mut lf = Logferry::start(&cfg);
    wait_for_all(&out, 100_000, Duration::from_secs(30));
    assert!(lf.stop().success());
    append(&live, numbered("w", 100_000..150_000).as_bytes());
    std::fs::rename(&live, logs.join("app.log.1")).unwrap();
    append(&live, numbered("w", 150_000..200_000).as_bytes());
    let mut lf = Logferry::start(&cfg);
    let seen = wait_for_all(&out, 200_000, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    assert!(lf.stop().success());
    assert!(seen.iter().all(|c| *c == 1), "a line arrived twice");
    assert_eq!(counts(&out, 200_000).iter().sum::<u32>(), 200_000);
    assert_eq!(
        lf.final_counter("logferry_tail_renamed_files_found_total{component=\"tail\"}"),
        1
    );
}

/// A file that appears while logferry is stopped (not in the checkpoint)
/// is new: read from its first line, whatever `read_from_head` says.
#[test]
fn a_file_created_while_stopped_is_read_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let cfg = config(dir.path(), "").replace("read_from_head = true", "read_from_head = false");
    std::fs::write(&live, b"old-before-first-start\n").unwrap();
    let mut lf = Logferry::start(&cfg);
    lf.wait_for_log("following file", Duration::from_secs(20));
    append(&live, numbered("w", 0..5).as_bytes());
    let out = dir.path().join("out.log");
    wait_for_lines(&out, 5, Duration::from_secs(20));
    assert!(lf.stop().success());
    std::fs::rename(&live, logs.join("app.log.1")).unwrap();
    append(&live, numbered("w", 5..15).as_bytes());
    let mut lf = Logferry::start(&cfg);
    let seen = wait_for_all(&out, 15, Duration::from_secs(20));
    assert!(lf.stop().success());
    assert!(seen.iter().all(|c| *c == 1));
    assert!(!read_lines(&out).iter().any(|l| l.starts_with("old")));
}

/// A checkpointed file removed while logferry was down: logged and counted
/// with what it left unread.
#[test]
fn a_file_removed_while_down_is_counted_as_lost() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let cfg = config(dir.path(), "");
    append(&live, numbered("w", 0..10).as_bytes());
    let mut lf = Logferry::start(&cfg);
    wait_for_all(&dir.path().join("out.log"), 10, Duration::from_secs(20));
    assert!(lf.stop().success());
    std::fs::rename(&live, dir.path().join("elsewhere.log")).unwrap();
    let mut lf = Logferry::start(&cfg);
    lf.wait_for_log("a checkpointed file is gone", Duration::from_secs(20));
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_tail_lost_files_total{component=\"tail\"}"),
        1
    );
}

/// A damaged checkpoint (a line that is not UTF-8, a line of garbage)
/// costs only its damaged lines: the source starts, logs and counts them,
/// and the file whose line is intact resumes where it was.
#[test]
fn a_damaged_checkpoint_line_costs_only_that_line() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let cfg = config(dir.path(), "");
    append(&live, numbered("w", 0..10).as_bytes());
    let mut lf = Logferry::start(&cfg);
    let out = dir.path().join("out.log");
    wait_for_all(&out, 10, Duration::from_secs(20));
    assert!(lf.stop().success());
    let checkpoint = dir.path().join("state/tail.checkpoint");
    let mut bytes = std::fs::read(&checkpoint).unwrap();
    bytes.extend_from_slice(b"1 2 0 12 00000000000000ff 10 10 /var/log/\xff\xfe.log\ngarbage\n");
    std::fs::write(&checkpoint, bytes).unwrap();
    append(&live, numbered("w", 10..20).as_bytes());
    let mut lf = Logferry::start(&cfg);
    lf.wait_for_log(
        "ignoring a malformed checkpoint line",
        Duration::from_secs(20),
    );
    wait_for_all(&out, 20, Duration::from_secs(20));
    assert!(lf.stop().success());
    let seen = counts(&out, 20);
    assert!(seen.iter().all(|c| *c == 1), "lines resent: {seen:?}");
    assert_eq!(
        lf.final_counter("logferry_tail_checkpoint_malformed_lines_total{component=\"tail\"}"),
        2
    );
}

/// Chunks acknowledged: when, and their lines.
type Acked = Arc<std::sync::Mutex<Vec<(Instant, Vec<String>)>>>;

/// Pieces of a forward-protocol receiver that acknowledges slowly: one
/// chunk per `pace`, remembering the lines of every chunk it acknowledged.
struct SlowReceiver {
    addr: std::net::SocketAddr,
    acked: Acked,
    stop: Arc<AtomicBool>,
}

impl SlowReceiver {
    fn start(pace: Duration) -> SlowReceiver {
        use logferry::protocol::forward::{ack_response, next_frame, Limits, Scan};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let acked: Acked = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (log, done) = (acked.clone(), stop.clone());
        std::thread::spawn(move || {
            listener.set_nonblocking(true).unwrap();
            while !done.load(Ordering::SeqCst) {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                conn.set_nonblocking(false).unwrap();
                conn.set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut buf = bytes::BytesMut::new();
                let mut scan = Scan::default();
                let mut chunk = [0u8; 65536];
                'conn: while !done.load(Ordering::SeqCst) {
                    match std::io::Read::read(&mut conn, &mut chunk) {
                        Ok(0) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        Err(e)
                            if e.kind() == std::io::ErrorKind::WouldBlock
                                || e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                    while let Ok(Some(frame)) = next_frame(&mut buf, &Limits::default(), &mut scan)
                    {
                        std::thread::sleep(pace);
                        if done.load(Ordering::SeqCst) {
                            break 'conn;
                        }
                        let lines = messages(&frame.entries);
                        if let Some(id) = frame.options.chunk {
                            if conn.write_all(&ack_response(&id)).is_err() {
                                break 'conn;
                            }
                        }
                        log.lock().unwrap().push((Instant::now(), lines));
                    }
                }
            }
        });
        SlowReceiver { addr, acked, stop }
    }
}

/// The `message` of each `[time, {"message": line}]` entry.
fn messages(entries: &[u8]) -> Vec<String> {
    use logferry::protocol::msgpack::Reader;
    let mut r = Reader::new(entries);
    let mut out = Vec::new();
    while !r.is_empty() {
        r.read_array_len().unwrap();
        r.skip().unwrap();
        let fields = r.read_map_len().unwrap();
        for _ in 0..fields {
            let key = r.read_bytes().unwrap().to_vec();
            if key == b"message" {
                out.push(String::from_utf8(r.read_bytes().unwrap().to_vec()).unwrap());
            } else {
                r.skip().unwrap();
            }
        }
    }
    out
}

/// A sink that acknowledges a few batches a second and kill -9: the
/// restart resends about one checkpoint interval of acknowledged lines
/// (plus what was in flight), even though the source spent the whole run
/// waiting on a full queue.
#[test]
fn slow_sink_and_kill_9_resend_at_most_a_checkpoint_interval() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    // 100-byte lines, 40 to a 4 KiB block
    let line = |i: usize| format!("w-{i:<97}\n").replace(' ', ".");
    let text: String = (0..20_000).map(line).collect();
    append(&live, text.as_bytes());
    let receiver = SlowReceiver::start(Duration::from_millis(50));
    let cfg = format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/app.log\"]\ntag = \"app\"\nread_from_head = true\nread_bytes = \"4KiB\"\ncheckpoint_dir = \"{d}/state\"\n\n[sinks.slow]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{a}\" }}]\nrequire_ack = true\nbatch_records = 20\nflush_interval = \"10ms\"\nbuffer = {{ max_bytes = \"16KiB\" }}\n",
        d = dir.path().display(),
        a = receiver.addr
    );
    let mut lf = Logferry::start(&cfg);
    std::thread::sleep(Duration::from_millis(3500));
    lf.kill();
    receiver.stop.store(true, Ordering::SeqCst);
    let killed_at = Instant::now();
    let acked = receiver.acked.lock().unwrap().clone();
    let delivered: std::collections::HashSet<String> =
        acked.iter().flat_map(|(_, l)| l.iter().cloned()).collect();
    let last_second = acked
        .iter()
        .filter(|(at, _)| killed_at.duration_since(*at) <= Duration::from_millis(1500))
        .map(|(_, l)| l.len())
        .sum::<usize>();
    assert!(
        delivered.len() > 200,
        "the receiver acknowledged {} lines",
        delivered.len()
    );
    // the rest goes to a file
    let file_cfg = format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/app.log\"]\ntag = \"app\"\nread_from_head = true\ncheckpoint_dir = \"{d}/state\"\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/out.log\"\nformat = \"raw\"\n",
        d = dir.path().display()
    );
    let mut again = Logferry::start(&file_cfg);
    let out = dir.path().join("out.log");
    let lines = wait_for_lines(&out, 20_000 - delivered.len(), Duration::from_secs(30));
    assert!(again.stop().success());
    let resent = lines.iter().filter(|l| delivered.contains(*l)).count();
    let mut all: HashMap<String, usize> = HashMap::new();
    for l in lines.iter().chain(delivered.iter()) {
        *all.entry(l.clone()).or_default() += 1;
    }
    assert_eq!(all.len(), 20_000, "every line delivered");
    eprintln!(
        "{} lines acknowledged before kill -9 ({last_second} in its last 1.5 s); {resent} sent again",
        delivered.len()
    );
    assert!(
        resent <= last_second + 200,
        "{resent} lines sent again; about one checkpoint interval ({last_second}) expected"
    );
}
