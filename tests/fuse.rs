//! The FUSE source, black-box: real mounts (root and /dev/fuse needed; the
//! tests say so and skip without them), ordinary tools writing into them,
//! and a receiver that unifies three senders into one file.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{read_lines, wait_for_lines, wait_until, Logferry};

/// True if this machine can mount FUSE filesystems; otherwise says why the
/// test is skipped.
fn can_mount(test: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let dev = Path::new("/dev/fuse").exists();
    if !root || !dev {
        eprintln!(
            "SKIPPED {test}: FUSE tests need root and /dev/fuse (root: {root}, /dev/fuse: {dev})"
        );
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
            "exec 3>>'{}'; sleep 60",
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
            "exec 3>>'{}'; printf unfinished >&3; sleep 60",
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
