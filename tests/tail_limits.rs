//! The tail source at its limits: more files than descriptors, what is
//! buffered at shutdown, and files that look alike.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::tail::*;
use common::*;

fn config(dir: &Path, extra: &str) -> String {
    format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/*.log\"]\ntag = \"app\"\nread_from_head = true\n{extra}\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/out.log\"\nformat = \"raw\"\n",
        d = dir.display()
    )
}

/// Starts logferry with both open-file limits set to `nofile`.
fn start_limited(config: &str, nofile: u64) -> Logferry {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logferry.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--config"]).arg(&path);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the
    // child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: nofile,
                rlim_max: nofile,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Logferry::spawn(&mut cmd, dir)
}

/// 5,000 files and a limit of 1,024 descriptors: every line arrives, files
/// written again later are read again, the checkpoint holds every file at
/// its end, and the shutdown summary stays short.
#[test]
fn five_thousand_files_under_a_1024_descriptor_limit() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let files = 5_000;
    let per_file = 40;
    for f in 0..files {
        append(
            &logs.join(format!("f{f}.log")),
            numbered(&format!("f{f}"), 0..per_file).as_bytes(),
        );
    }
    let cfg = config(
        dir.path(),
        &format!("checkpoint_dir = \"{}/state\"", dir.path().display()),
    );
    let mut lf = start_limited(&cfg, 1024);
    let out = dir.path().join("out.log");
    wait_for_lines(&out, files * per_file, Duration::from_secs(120));
    // files that gave their descriptor back are read again when written
    for f in (0..files).step_by(25) {
        append(
            &logs.join(format!("f{f}.log")),
            numbered(&format!("f{f}"), per_file..per_file + 1).as_bytes(),
        );
    }
    let total = files * per_file + files / 25;
    let lines = wait_for_lines(&out, total, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    assert!(lf.stop().success());
    let lines_now = read_lines(&out);
    assert_eq!(lines_now.len(), total, "no line twice");
    assert_eq!(distinct(lines.into_iter()).len(), total);
    assert!(!lf.log_text().contains("Too many open files"));
    assert_eq!(
        lf.final_counter("logferry_tail_open_errors_total{component=\"tail\"}"),
        0
    );
    // the checkpoint knows every file, at its end
    let checkpoint = std::fs::read_to_string(dir.path().join("state/tail.checkpoint")).unwrap();
    let mut at_end = 0;
    for line in checkpoint.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.splitn(8, ' ').collect();
        let size = std::fs::metadata(fields[7]).unwrap().len();
        assert_eq!(fields[5].parse::<u64>().unwrap(), size, "{line}");
        at_end += 1;
    }
    assert_eq!(at_end, files);
    let summary = lf
        .log_text()
        .lines()
        .filter(|l| l.contains("stopped") && l.contains("counters"))
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(summary < 4096, "the shutdown summary is {summary} bytes");
}

/// Without a checkpoint, a partial last line and a pending multiline
/// record are handed over at shutdown, not dropped.
#[test]
fn what_is_buffered_is_sent_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    append(&logs.join("a.log"), b"2026 first\n  more of first\n");
    append(&logs.join("b.log"), b"2026 whole\n2026 no newline yet");
    let cfg = config(
        dir.path(),
        "partial_line_timeout = \"1h\"\n[sources.tail.multiline]\nstart_pattern = '^2026 '\ntimeout = \"1h\"",
    );
    let mut lf = Logferry::start(&cfg);
    let out = dir.path().join("out.log");
    lf.wait_for_log("following file", Duration::from_secs(20));
    // both files read; every record still waits for a line that may follow
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(read_lines(&out).len(), 0);
    assert!(lf.stop().success());
    let mut got = read_lines(&out);
    got.sort();
    assert_eq!(
        got,
        [
            "  more of first",
            "2026 first",
            "2026 no newline yet",
            "2026 whole"
        ]
    );
}

/// A file removed while logferry is down and replaced by a new file that
/// starts with the same banner (and, as filesystems do, often gets the
/// same inode): the new file is read from its start, not from the old
/// file's offset.
#[test]
fn a_new_file_with_the_same_banner_is_not_taken_for_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let banner = format!("{}\n", "=".repeat(300));
    let cfg = config(
        dir.path(),
        &format!("checkpoint_dir = \"{}/state\"", dir.path().display()),
    );
    append(
        &live,
        format!("{banner}{}", numbered("old", 0..100)).as_bytes(),
    );
    let mut lf = Logferry::start(&cfg);
    let out = dir.path().join("out.log");
    wait_for_lines(&out, 101, Duration::from_secs(20));
    assert!(lf.stop().success());
    use std::os::unix::fs::MetadataExt;
    let old_ino = std::fs::metadata(&live).unwrap().ino();
    std::fs::remove_file(&live).unwrap();
    append(
        &live,
        format!("{banner}{}", numbered("new", 0..200)).as_bytes(),
    );
    let reused = std::fs::metadata(&live).unwrap().ino() == old_ino;
    let mut lf = Logferry::start(&cfg);
    let lines = wait_for_lines(&out, 101 + 201, Duration::from_secs(20));
    assert!(lf.stop().success());
    assert_exactly(&lines, "new", 200);
    eprintln!("inode reused: {reused}");
}
