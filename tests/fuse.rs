//! The FUSE source, black-box: real mounts (root and /dev/fuse needed; the
//! tests say so and skip without them), ordinary tools writing into them,
//! and a receiver that unifies three senders into one file.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{raise_nofile, read_lines, vm_bytes, wait_for_lines, wait_until, Logferry};

/// True if this machine can mount FUSE filesystems; otherwise says why the
/// test is skipped.
fn can_mount(test: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let dev = Path::new("/dev/fuse").exists();
    if !root || !dev {
        common::skipped(&format!(
            "{test}: FUSE tests need root and /dev/fuse (root: {root}, /dev/fuse: {dev})"
        ));
        return false;
    }
    true
}

/// Mount points listed in /proc/self/mountinfo (field 5, `\040` for space).
fn mounted(path: &Path) -> bool {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = path.to_string_lossy().replace(' ', "\\040");
    text.lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// Lazily unmounts `path` if a failing test left it mounted, so one
/// failure does not leave stale mounts behind on the machine.
struct MountCleanup(PathBuf);

impl Drop for MountCleanup {
    fn drop(&mut self) {
        if mounted(&self.0) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Starts a sender whose mount is `{dir}/mnt`, with `sink` as its sink.
fn sender(source_extra: &str, sink: &str) -> (Logferry, PathBuf, MountCleanup) {
    let mut lf = Logferry::start(&format!(
        "[sources.fs]\ntype = \"fuse\"\nmountpoint = \"{{dir}}/mnt\"\n{source_extra}\n\n{sink}"
    ));
    lf.wait_for_log("fuse source mounted", Duration::from_secs(20));
    let mnt = lf.path("mnt");
    assert!(mounted(&mnt), "{} is not mounted", mnt.display());
    let guard = MountCleanup(mnt.clone());
    (lf, mnt, guard)
}

fn forward_sink(to: std::net::SocketAddr) -> String {
    format!(
        "[sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{to}\" }}]\nrequire_ack = true\nreconnect_min = \"50ms\"\nreconnect_max = \"200ms\"\n"
    )
}

const FILE_SINK: &str = "[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/out.log\"\nformat = { type = \"template\", template = \"{file} {message}\" }\n";

/// `n` lines of exactly `size` bytes before the newline: the sender,
/// the kind, a number, then padding.
fn numbered_lines(sender: usize, kind: char, size: usize, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * (size + 1));
    for i in 0..n {
        let head = format!("{sender}{kind}{i:08}");
        out.extend_from_slice(head.as_bytes());
        out.resize(out.len() + size - head.len(), b'x');
        out.push(b'\n');
    }
    out
}

#[test]
fn three_senders_ship_every_line_to_one_unified_file() {
    if !can_mount("three_senders_ship_every_line_to_one_unified_file") {
        return;
    }
    let mut rx = Logferry::start(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.unified]\ntype = \"file\"\nmatch = \"**\"\npath = \"{dir}/unified.log\"\nformat = { type = \"template\", template = \"{time} {host} {file} {message}\" }\n",
    );
    let addr = rx.forward_addr("in");
    // (kind, line size, lines): 10 B, 1 KiB and 4 KiB records
    let files = [('a', 10, 20_000), ('b', 1024, 2_000), ('c', 4096, 500)];
    let mut senders = Vec::new();
    for s in 0..3 {
        senders.push(sender("", &forward_sink(addr)));
        let (_, mnt, _) = senders.last().unwrap();
        let src = tempfile::NamedTempFile::new().unwrap();
        for (kind, size, n) in files {
            std::fs::write(src.path(), numbered_lines(s, kind, size, n)).unwrap();
            // an ordinary tool writes into the mount
            let dest = mnt.join(format!("{kind}.log"));
            let ok = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "cat '{}' > '{}'",
                    src.path().display(),
                    dest.display()
                ))
                .status()
                .unwrap();
            assert!(ok.success(), "cat into the mount failed");
        }
    }
    let per_sender: usize = files.iter().map(|f| f.2).sum();
    let total = 3 * per_sender;
    let path = rx.path("unified.log");
    let lines = wait_for_lines(&path, total, Duration::from_secs(120));
    assert_eq!(lines.len(), total, "every line arrives, none twice");
    let mut seen: HashMap<(char, char), Vec<usize>> = HashMap::new();
    for line in &lines {
        // {time} {host} {file} {message}
        let parts: Vec<&str> = line.splitn(4, ' ').collect();
        assert_eq!(parts.len(), 4, "{line:.80}");
        let (file, msg) = (parts[2], parts[3]);
        let mut c = msg.chars();
        let (s, kind) = (c.next().unwrap(), c.next().unwrap());
        let (_, size, _) = files.iter().find(|f| f.0 == kind).unwrap();
        assert_eq!(msg.len(), *size, "intact: {msg:.40}");
        assert_eq!(file, format!("{kind}.log"));
        assert!(msg[10..].bytes().all(|b| b == b'x'), "intact: {msg:.40}");
        seen.entry((s, kind))
            .or_default()
            .push(msg[2..10].parse().unwrap());
    }
    for s in ['0', '1', '2'] {
        for (kind, _, n) in files {
            let mut got = seen.remove(&(s, kind)).unwrap_or_default();
            got.sort_unstable();
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "sender {s}, {kind}.log");
        }
    }
    for (mut lf, mnt, _guard) in senders {
        assert!(lf.stop().success(), "{}", lf.log_text());
        assert!(
            !mounted(&mnt),
            "{} still mounted after SIGTERM",
            mnt.display()
        );
        assert_eq!(
            lf.final_counter("logferry_source_records_total{component=\"fs\"}"),
            per_sender as u64
        );
    }
    rx.stop();
}

#[test]
fn renames_truncation_and_removal_behave_as_documented() {
    if !can_mount("renames_truncation_and_removal_behave_as_documented") {
        return;
    }
    let (mut lf, mnt, _guard) = sender("mirror_dir = \"{dir}/mirror\"", FILE_SINK);
    let sh = |script: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(&mnt)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    sh("echo a1 > x.log && mv x.log y.log && echo a2 >> y.log");
    sh("mkdir -p d/e && mv y.log d/e/z.log && echo a3 >> d/e/z.log");
    // the mirror makes reads return what was written
    assert_eq!(sh("cat d/e/z.log"), "a1\na2\na3\n");
    // truncation: the file reads as empty again; shipped lines stay shipped
    sh(": > d/e/z.log");
    assert_eq!(sh("stat -c %s d/e/z.log"), "0\n");
    assert_eq!(
        std::fs::metadata(lf.path("mirror/d/e/z.log"))
            .unwrap()
            .len(),
        0
    );
    sh("echo a4 >> d/e/z.log");
    assert_eq!(sh("cat d/e/z.log"), "a4\n");
    sh("mv d renamed && echo a5 >> renamed/e/z.log");
    // a last line without newline is shipped when the file is closed
    sh("printf 'no-newline' > p.log");
    // a file removed while open keeps its last path for what is written
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(mnt.join("open.log"))
        .unwrap();
    f.write_all(b"before\n").unwrap();
    std::fs::remove_file(mnt.join("open.log")).unwrap();
    f.write_all(b"after\n").unwrap();
    drop(f);
    sh("rm renamed/e/z.log p.log && rmdir renamed/e renamed");
    assert_eq!(sh("ls -A"), "", "removed names are gone");
    assert!(
        !lf.path("mirror/renamed").exists(),
        "the mirror follows removals"
    );
    let want = [
        "x.log a1",
        "y.log a2",
        "d/e/z.log a3",
        "d/e/z.log a4",
        "renamed/e/z.log a5",
        "p.log no-newline",
        "open.log before",
        "open.log after",
    ];
    let lines = wait_for_lines(&lf.path("out.log"), want.len(), Duration::from_secs(20));
    assert_eq!(lines, want);
    assert!(lf.stop().success());
    assert!(!mounted(&mnt));
}

#[test]
fn without_a_mirror_reads_are_empty_and_sizes_count_what_was_written() {
    if !can_mount("without_a_mirror_reads_are_empty_and_sizes_count_what_was_written") {
        return;
    }
    let (mut lf, mnt, _guard) = sender("tag_prefix = \"t.\"", FILE_SINK);
    std::fs::write(mnt.join("a.log"), b"one\ntwo\n").unwrap();
    assert_eq!(std::fs::read(mnt.join("a.log")).unwrap(), b"");
    assert_eq!(std::fs::metadata(mnt.join("a.log")).unwrap().len(), 8);
    let lines = wait_for_lines(&lf.path("out.log"), 2, Duration::from_secs(20));
    assert_eq!(lines, ["a.log one", "a.log two"]);
    assert!(lf.stop().success());
    assert!(!mounted(&mnt));
}

/// A forward sink to a port nobody listens on, with a tiny queue: the
/// pipeline is full after a few writes.
fn dead_end_sink() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    format!(
        "{}drain_timeout = \"1s\"\n\n[sinks.out.buffer]\nmax_bytes = \"64KiB\"\n",
        forward_sink(port)
    )
}

#[test]
fn a_full_pipeline_blocks_writes_then_fails_them_with_eio() {
    if !can_mount("a_full_pipeline_blocks_writes_then_fails_them_with_eio") {
        return;
    }
    let (mut lf, mnt, _guard) = sender("write_timeout = \"1s\"", &dead_end_sink());
    let out = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "count=200"])
        .arg(format!("of={}", mnt.join("x.log").display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "dd must fail: {err}");
    assert!(err.contains("Input/output error"), "{err}");
    assert!(lf.stop().success());
    assert!(!mounted(&mnt));
    assert!(
        lf.final_counter("logferry_fuse_write_errors_total{component=\"fs\",reason=\"timeout\"}")
            >= 1,
        "{}",
        lf.log_text()
    );
    assert!(lf
        .log_text()
        .contains("write into the mount failed with EIO"));
}

#[test]
fn sigterm_during_a_blocked_write_leaves_nothing_mounted() {
    if !can_mount("sigterm_during_a_blocked_write_leaves_nothing_mounted") {
        return;
    }
    let (mut lf, mnt, _guard) = sender("write_timeout = \"5m\"", &dead_end_sink());
    // one writer stuck in write(), another holding a file open
    let mut writer = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "count=200"])
        .arg(format!("of={}", mnt.join("x.log").display()))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 3>>'{}'; exec sleep 60",
            mnt.join("held.log").display()
        ))
        .spawn()
        .unwrap();
    wait_until(
        "the holder opened its file",
        Duration::from_secs(10),
        || mnt.join("held.log").exists(),
    );
    // the queue holds 64KiB; dd wants to write 12.5MiB
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        writer.try_wait().unwrap().is_none(),
        "the writer is blocked in write()"
    );
    lf.signal(libc::SIGTERM);
    let status = lf.wait(Duration::from_secs(30));
    assert!(status.success(), "{}", lf.log_text());
    assert!(!mounted(&mnt), "still mounted:\n{}", lf.log_text());
    // the blocked writer was told
    let w = writer.wait_with_output().unwrap();
    assert!(!w.status.success());
    assert!(String::from_utf8_lossy(&w.stderr).contains("Input/output error"));
    assert!(
        lf.final_counter("logferry_fuse_write_errors_total{component=\"fs\",reason=\"shutdown\"}")
            >= 1
    );
    assert_eq!(
        lf.final_counter("logferry_fuse_lazy_unmounts_total{component=\"fs\"}"),
        1
    );
    let _ = holder.kill();
    let _ = holder.wait();
}

#[test]
fn a_stale_mount_is_detected_and_cleaned_at_start() {
    if !can_mount("a_stale_mount_is_detected_and_cleaned_at_start") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let _guard = MountCleanup(mnt.clone());
    let config = format!(
        "[sources.fs]\ntype = \"fuse\"\nmountpoint = \"{}\"\n\n{FILE_SINK}",
        mnt.display()
    );
    let mut first = Logferry::start(&config);
    first.wait_for_log("fuse source mounted", Duration::from_secs(20));
    first.kill(); // no unmount: the mount goes stale
    let err = std::fs::metadata(&mnt).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTCONN), "stale: {err}");
    assert!(mounted(&mnt));
    let mut second = Logferry::start(&config);
    second.wait_for_log("fuse source mounted", Duration::from_secs(20));
    assert!(second.log_text().contains("stale mount found"));
    std::fs::write(mnt.join("a.log"), b"works\n").unwrap();
    let lines = wait_for_lines(&second.path("out.log"), 1, Duration::from_secs(20));
    assert_eq!(lines, ["a.log works"]);
    assert!(second.stop().success());
    assert!(!mounted(&mnt), "{}", second.log_text());
    assert_eq!(
        second.final_counter("logferry_fuse_stale_mounts_cleaned_total{component=\"fs\"}"),
        1
    );
    assert!(read_lines(&first.path("out.log")).is_empty());
}

#[test]
fn fsync_and_close_return_once_the_receiver_has_the_lines() {
    if !can_mount("fsync_and_close_return_once_the_receiver_has_the_lines") {
        return;
    }
    let mut rx = Logferry::start(common::FORWARD_TO_FILE);
    let addr = rx.forward_addr("in");
    let (mut lf, mnt, _guard) = sender("ack_on_close = true", &forward_sink(addr));
    let unified = rx.path("unified.log");
    // fsync: every line written before it is in the receiver's file
    let mut f = std::fs::File::create(mnt.join("a.log")).unwrap();
    for i in 0..100 {
        writeln!(f, "line {i}").unwrap();
    }
    f.sync_all().unwrap();
    assert_eq!(
        read_lines(&unified).len(),
        100,
        "fsync returned before the acks"
    );
    // close with ack_on_close: the last line too, newline or not
    f.write_all(b"last without newline").unwrap();
    drop(f);
    let lines = read_lines(&unified);
    assert_eq!(lines.len(), 101, "close returned before the acks");
    assert_eq!(lines[100], "last without newline");
    // an ordinary tool: the shell's redirection closes the file
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo from-shell >> '{}'",
            mnt.join("b.log").display()
        ))
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(
        read_lines(&unified).last().map(String::as_str),
        Some("from-shell")
    );
    assert!(lf.stop().success());
    rx.stop();
}

#[test]
fn fsync_fails_with_eio_when_the_receiver_never_acknowledges() {
    if !can_mount("fsync_fails_with_eio_when_the_receiver_never_acknowledges") {
        return;
    }
    let (mut lf, mnt, _guard) = sender("write_timeout = \"1s\"", &dead_end_sink());
    let mut f = std::fs::File::create(mnt.join("a.log")).unwrap();
    writeln!(f, "queued, never delivered").unwrap();
    let err = f.sync_all().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    drop(f);
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_fuse_sync_errors_total{component=\"fs\"}"),
        1
    );
}

#[test]
fn a_second_sigterm_while_last_lines_wait_for_room_leaves_nothing_mounted() {
    if !can_mount("a_second_sigterm_while_last_lines_wait_for_room_leaves_nothing_mounted") {
        return;
    }
    let (mut lf, mnt, _guard) = sender("write_timeout = \"1s\"", &dead_end_sink());
    // fill the pipeline (dd fails with EIO once it is full) ...
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "count=20"])
        .arg(format!("of={}", mnt.join("fill.log").display()))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    // ... and hold an unfinished last line in an open file
    let held = mnt.join("held.log");
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec 3>>'{}'; printf unfinished >&3; exec sleep 60",
            held.display()
        ))
        .spawn()
        .unwrap();
    wait_until("the holder wrote", Duration::from_secs(10), || {
        std::fs::metadata(&held).is_ok_and(|m| m.len() == 10)
    });
    lf.signal(libc::SIGTERM);
    lf.wait_for_log("shutting down", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    // the unfinished line now waits for room; a second signal exits at once
    lf.signal(libc::SIGTERM);
    let _ = lf.wait(Duration::from_secs(30));
    assert!(!mounted(&mnt), "left mounted:\n{}", lf.log_text());
    let _ = holder.kill();
    let _ = holder.wait();
}

const MIB: u64 = 1024 * 1024;

/// A metric from the API's `/metrics`.
fn metric(api: std::net::SocketAddr, name_and_labels: &str) -> f64 {
    common::metric_value(&common::api_get(api, "/metrics"), name_and_labels)
}

/// One page of a page-aligned buffer: a MiB written from it reaches
/// logferry as one request (an unaligned one spans one page more than the
/// kernel puts in a request, and is cut in two).
#[repr(C, align(4096))]
struct Page([u8; 4096]);

/// What the FUSE source's peak RSS may exceed `[limits] memory` by: the
/// process at rest (about 25 MiB for a debug build), the waiting writes'
/// bytes (at most 16 MiB), the request threads' buffers (one write each)
/// and the bookkeeping of 2,000 descriptors. docs/operations.md states the
/// same figure.
const FUSE_OVERHEAD: u64 = 48 * MIB;

#[test]
fn unfinished_lines_stay_in_the_memory_budget_while_other_writers_keep_shipping() {
    if !can_mount("unfinished_lines_stay_in_the_memory_budget_while_other_writers_keep_shipping") {
        return;
    }
    raise_nofile();
    const FILES: usize = 2000;
    const BLOCKERS: usize = 12;
    const BUDGET: u64 = 64 * MIB;
    let timeout = Duration::from_millis(200);
    let (mut lf, mnt, _guard) = sender(
        "write_timeout = \"200ms\"",
        &format!("{FILE_SINK}\n[limits]\nmemory = \"64MiB\"\n\n[api]\naddress = \"127.0.0.1:0\"\n"),
    );
    let api = lf.address("api listening");
    // a writer of numbered complete lines, one write each, all along
    let stop = Arc::new(AtomicBool::new(false));
    let shipper = {
        let (path, stop) = (mnt.join("ship.log"), stop.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::File::create(path).unwrap();
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                f.write_all(format!("ship-{n:06}\n").as_bytes())
                    .unwrap_or_else(|e| panic!("write of line {n} failed: {e}"));
                n += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            n
        })
    };
    // 2,000 descriptors, each written a MiB without a newline
    let mut files: Vec<std::fs::File> = (0..FILES)
        .map(|i| std::fs::File::create(mnt.join(format!("held-{i:04}.log"))).unwrap())
        .collect();
    let pages: Arc<Vec<Page>> = Arc::new((0..256).map(|_| Page([b'x'; 4096])).collect());
    let per_thread = FILES.div_ceil(BLOCKERS);
    let mut chunks = Vec::new();
    while !files.is_empty() {
        let rest = files.split_off(files.len().saturating_sub(per_thread));
        chunks.push(rest);
    }
    let blockers: Vec<_> = chunks
        .into_iter()
        .map(|mut files| {
            let pages = pages.clone();
            std::thread::spawn(move || {
                // SAFETY: 256 contiguous 4 KiB pages are one MiB of bytes.
                let mib = unsafe {
                    std::slice::from_raw_parts(pages.as_ptr().cast::<u8>(), MIB as usize)
                };
                let (mut ok, mut eio, mut shortest_eio) = (0, 0, Duration::MAX);
                for f in &mut files {
                    let start = Instant::now();
                    match f.write(mib) {
                        Ok(n) => {
                            assert_eq!(n, mib.len(), "one request, whole");
                            ok += 1;
                        }
                        Err(e) => {
                            assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
                            eio += 1;
                            shortest_eio = shortest_eio.min(start.elapsed());
                        }
                    }
                }
                (files, ok, eio, shortest_eio)
            })
        })
        .collect();
    let mut held = Vec::new();
    let (mut ok, mut eio, mut shortest_eio) = (0, 0, Duration::MAX);
    for b in blockers {
        let (files, o, e, s) = b.join().unwrap();
        held.extend(files);
        (ok, eio, shortest_eio) = (ok + o, eio + e, shortest_eio.min(s));
    }
    // what the descriptors hold is in the budget, at most half of it
    let lines = metric(api, "logferry_fuse_unfinished_line_bytes{component=\"fs\"}") as u64;
    let used = metric(api, "logferry_memory_used_bytes") as u64;
    let peak = vm_bytes(lf.pid(), "VmHWM");
    eprintln!(
        "{ok} unfinished lines kept, {eio} writes failed (the shortest after {shortest_eio:?}); \
         {} MiB of lines, {} MiB of the budget used; peak RSS {} MiB",
        lines / MIB,
        used / MIB,
        peak / MIB
    );
    assert_eq!(ok + eio, FILES);
    assert!(
        (16..=32).contains(&ok),
        "half the budget is for unfinished lines: {ok} MiB"
    );
    assert_eq!(lines, ok as u64 * MIB);
    assert!(used >= lines, "lines are charged: {used} < {lines}");
    assert!(
        shortest_eio >= timeout,
        "a write waits write_timeout before EIO"
    );
    assert!(
        peak <= BUDGET + FUSE_OVERHEAD,
        "peak RSS {} MiB is above the budget (64 MiB) + {} MiB",
        peak / MIB,
        FUSE_OVERHEAD / MIB
    );
    // the other writer shipped meanwhile, not only once the others ended
    let shipped_meanwhile = read_lines(&lf.path("out.log")).len();
    stop.store(true, Ordering::Relaxed);
    let shipped = shipper.join().unwrap();
    assert!(
        shipped_meanwhile > 100 && shipped_meanwhile * 2 > shipped,
        "{shipped_meanwhile} of {shipped} lines had arrived while the others waited"
    );
    // closing ships the kept lines; everything arrives, once
    drop(held);
    let out = wait_for_lines(&lf.path("out.log"), shipped + ok, Duration::from_secs(60));
    assert_eq!(out.len(), shipped + ok);
    let mut numbers: Vec<usize> = out
        .iter()
        .filter_map(|l| l.strip_prefix("ship.log ship-")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..shipped).collect::<Vec<_>>());
    let long = out
        .iter()
        .filter(|l| l.starts_with("held-") && l.len() == "held-0000.log ".len() + MIB as usize)
        .count();
    assert_eq!(long, ok, "each kept line arrives whole at its close");
    wait_until("the lines are let go", Duration::from_secs(10), || {
        metric(api, "logferry_fuse_unfinished_line_bytes{component=\"fs\"}") == 0.0
    });
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_fuse_write_errors_total{component=\"fs\",reason=\"memory\"}"),
        eio as u64,
        "{}",
        lf.log_text()
    );
}

#[test]
fn open_files_and_inodes_are_limited_with_enfile_and_enospc() {
    if !can_mount("open_files_and_inodes_are_limited_with_enfile_and_enospc") {
        return;
    }
    let (mut lf, mnt, _guard) = sender(
        "max_open_files = 10\nmax_inodes = 20",
        &format!("{FILE_SINK}\n[api]\naddress = \"127.0.0.1:0\"\n"),
    );
    let api = lf.address("api listening");
    // ten descriptors: the eleventh open fails, on a new or an old file
    let mut open: Vec<std::fs::File> = (0..10)
        .map(|i| std::fs::File::create(mnt.join(format!("f{i}.log"))).unwrap())
        .collect();
    let err = std::fs::File::create(mnt.join("f10.log")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENFILE), "{err}");
    assert!(!mnt.join("f10.log").exists(), "nothing left behind");
    let err = std::fs::OpenOptions::new()
        .append(true)
        .open(mnt.join("f0.log"))
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENFILE), "{err}");
    assert_eq!(
        metric(api, "logferry_fuse_open_files{component=\"fs\"}"),
        10.0
    );
    // the descriptors work; closing one makes room
    for (i, f) in open.iter_mut().enumerate() {
        writeln!(f, "line {i}").unwrap();
    }
    open.pop();
    wait_until("a descriptor is free", Duration::from_secs(10), || {
        std::fs::OpenOptions::new()
            .append(true)
            .open(mnt.join("f0.log"))
            .is_ok()
    });
    drop(open);
    // 20 inodes: the root, the ten files, nine more
    for i in 10..19 {
        std::fs::File::create(mnt.join(format!("f{i}.log"))).unwrap();
    }
    let err = std::fs::File::create(mnt.join("f19.log")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    let err = std::fs::create_dir(mnt.join("d")).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    assert_eq!(metric(api, "logferry_fuse_inodes{component=\"fs\"}"), 20.0);
    // statfs tells the truth: the inodes, and the budget as the room
    let out = Command::new("stat")
        .args(["-f", "-c", "%c %d %S %b"])
        .arg(&mnt)
        .output()
        .unwrap();
    let stat = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u64> = stat
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!((v[0], v[1]), (20, 0), "inodes total and free: {stat}");
    assert_eq!(v[2] * v[3], 256 * MIB, "size is the default budget: {stat}");
    // removing a file (the kernel lets go of it) makes room again
    std::fs::remove_file(mnt.join("f18.log")).unwrap();
    wait_until("an inode is free", Duration::from_secs(10), || {
        std::fs::File::create(mnt.join("f19.log")).is_ok()
    });
    // an ls lists every file, in several replies if need be
    let listed = std::fs::read_dir(&mnt).unwrap().count();
    assert_eq!(listed, 19);
    let lines = wait_for_lines(&lf.path("out.log"), 10, Duration::from_secs(20));
    assert_eq!(lines.len(), 10);
    assert!(lf.stop().success());
    assert!(
        lf.final_counter("logferry_fuse_refused_total{component=\"fs\",limit=\"open_files\"}") >= 2
    );
    assert!(
        lf.final_counter("logferry_fuse_refused_total{component=\"fs\",limit=\"inodes\"}") >= 2
    );
}
