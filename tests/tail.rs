//! The tail source against real files: rotation, truncation, crashes,
//! globs, awkward lines and multiline records.

mod common;

use std::fs::OpenOptions;
use std::path::Path;
use std::time::Duration;

use common::tail::*;
use common::*;

fn config(dir: &Path, extra_source: &str, format: &str) -> String {
    format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/*.log\"]\ntag = \"app.*\"\nread_from_head = true\nrefresh_interval = \"100ms\"\npoll_interval = \"50ms\"\ncheckpoint_dir = \"{d}/state\"\n{extra_source}\n\n[sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/out.log\"\nformat = {format}\n",
        d = dir.display()
    )
}

#[test]
fn follows_appends_and_new_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    append(&dir.path().join("logs/a.log"), b"a-0\na-1\n");
    let mut lf = Logferry::start(&config(dir.path(), "per_file_metrics = true", "\"raw\""));
    let out = dir.path().join("out.log");
    wait_for_lines(&out, 2, Duration::from_secs(20));
    append(&dir.path().join("logs/a.log"), b"a-2\n");
    append(&dir.path().join("logs/b.log"), b"b-0\n");
    let lines = wait_for_lines(&out, 4, Duration::from_secs(20));
    assert_exactly(&lines, "a", 3);
    assert_exactly(&lines, "b", 1);
    assert!(lf.stop().success());
    let a = dir.path().join("logs/a.log").display().to_string();
    assert_eq!(
        lf.final_counter(&format!(
            "logferry_tail_file_lines_total{{component=\"tail\",path=\"{a}\"}}"
        )),
        3
    );
    assert_eq!(
        lf.final_counter(&format!(
            "logferry_tail_file_bytes_read_total{{component=\"tail\",path=\"{a}\"}}"
        )),
        12
    );
}

#[test]
fn rename_rotation_under_load_delivers_every_line_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    std::fs::write(&live, b"").unwrap();
    let mut lf = Logferry::start(&config(dir.path(), "", "\"raw\""));
    lf.wait_for_log("following file", Duration::from_secs(20));
    // a writer appends numbered lines without pause; every 250 ms the file
    // is renamed away and a new one started, 20 times
    let (stop, writer) = spawn_writer(&live, "r", Default::default(), |w| {
        if w.since.elapsed() >= Duration::from_millis(250) && w.round < 20 {
            std::fs::rename(
                &w.live,
                w.live.with_file_name(format!("rotated.{}", w.round)),
            )
            .unwrap();
            w.file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&w.live)
                .unwrap();
            w.round += 1;
            w.since = std::time::Instant::now();
        }
    });
    while std::fs::read_dir(&logs).unwrap().count() < 21 {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let n = writer.join().unwrap();
    let lines = wait_for_lines(&dir.path().join("out.log"), n, Duration::from_secs(60));
    assert_eq!(lines.len(), n, "exactly once");
    let mut last: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut seen = vec![false; n];
    for l in &lines {
        let mut parts = l[2..].split('-');
        let round: usize = parts.next().unwrap().parse().unwrap();
        let i: usize = parts.next().unwrap().parse().unwrap();
        assert!(!seen[i], "line {i} twice");
        seen[i] = true;
        if let Some(prev) = last.insert(round, i) {
            assert!(prev < i, "file {round}: {i} after {prev}");
        }
    }
    assert!(lf.stop().success());
    assert!(lf.final_counter("logferry_tail_rotations_total{component=\"tail\"}") >= 20);
}

#[test]
fn copytruncate_restarts_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let mut lf = Logferry::start(&config(dir.path(), "", "\"raw\""));
    let out = dir.path().join("out.log");
    let mut n = 0;
    for _ in 0..5 {
        append(&live, numbered("c", n..n + 1000).as_bytes());
        n += 1000;
        // copytruncate once everything written so far has been read: the
        // copy window is empty, so nothing may be missing
        wait_for_lines(&out, n, Duration::from_secs(20));
        std::fs::copy(&live, dir.path().join("copy")).unwrap();
        truncate(&live);
    }
    append(&live, b"c-5000\n");
    let lines = wait_for_lines(&out, n + 1, Duration::from_secs(20));
    assert_exactly(&lines, "c", n + 1);
    assert!(lf.stop().success());
    assert!(lf.final_counter("logferry_tail_truncations_total{component=\"tail\"}") >= 4);
}

#[test]
fn kill_9_and_restart_resends_at_most_the_unacknowledged_window() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let total = 400_000;
    let text = numbered("k", 0..total);
    let cfg = config(dir.path(), "read_bytes = \"16KiB\"", "\"raw\"");
    let mut lf = Logferry::start(&cfg);
    append(&live, &text.as_bytes()[..text.len() / 2]);
    wait_for_lines(&dir.path().join("out.log"), 50_000, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1200)); // at least one checkpoint written
    lf.kill();
    append(&live, &text.as_bytes()[text.len() / 2..]);
    let mut again = Logferry::start(&cfg);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let lines = read_lines(&dir.path().join("out.log"));
        let counts = distinct(lines.iter().cloned());
        if counts.len() >= total {
            let duplicates = lines.len() - counts.len();
            assert!(
                duplicates < 200_000,
                "{duplicates} duplicates: more than the unacknowledged window"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {total} distinct lines",
            counts.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(again.stop().success());
    assert_exactly(
        &distinct(read_lines(&dir.path().join("out.log")))
            .into_keys()
            .collect::<Vec<_>>(),
        "k",
        total,
    );
}

#[test]
fn globs_pick_up_created_and_recreated_files() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let mut lf = Logferry::start(&config(dir.path(), "exclude = [\"*/skip.log\"]", "\"raw\""));
    let out = dir.path().join("out.log");
    append(&logs.join("x.log"), b"x-0\n");
    append(&logs.join("skip.log"), b"skip-0\n");
    wait_for_lines(&out, 1, Duration::from_secs(20));
    std::fs::remove_file(logs.join("x.log")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    append(&logs.join("x.log"), b"x-1\n");
    append(&logs.join("y.log"), b"y-0\n");
    let lines = wait_for_lines(&out, 3, Duration::from_secs(20));
    assert_exactly(&lines, "x", 2);
    assert_exactly(&lines, "y", 1);
    assert!(!lines.iter().any(|l| l.starts_with("skip")));
    assert!(lf.stop().success());
}

#[test]
fn awkward_lines_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let long = "L".repeat(3000);
    let mut input = Vec::new();
    input.extend_from_slice(b"crlf\r\n\n");
    input.extend_from_slice(b"bad \xff\xfe utf8\n");
    input.extend_from_slice(long.as_bytes());
    input.extend_from_slice(b"\nlast without newline");
    append(&logs.join("w.log"), &input);
    let mut lf = Logferry::start(&config(
        dir.path(),
        "max_line_bytes = 1000\npartial_line_timeout = \"300ms\"",
        "\"raw\"",
    ));
    let out = dir.path().join("out.log");
    let lines = wait_for_lines(&out, 7, Duration::from_secs(20));
    let raw = std::fs::read(&out).unwrap();
    let mut want = Vec::new();
    want.extend_from_slice(b"crlf\n\nbad \xff\xfe utf8\n");
    for _ in 0..3 {
        want.extend_from_slice(&[b'L'; 1000]);
        want.push(b'\n');
    }
    want.extend_from_slice(b"last without newline\n");
    assert_eq!(
        raw, want,
        "raw output is the input, byte for byte, split at 1000"
    );
    assert_eq!(lines.len(), 7);
    assert!(lf.stop().success());
    assert_eq!(
        lf.final_counter("logferry_tail_long_lines_total{component=\"tail\"}"),
        1
    );

    // the same file as JSON: every line valid JSON, invalid UTF-8 replaced
    let mut lf = Logferry::start(
        &config(dir.path(), "max_line_bytes = 1000", "\"json\"")
            .replace("out.log", "out.json")
            .replace("/state", "/state2"),
    );
    let json = wait_for_lines(&dir.path().join("out.json"), 6, Duration::from_secs(20));
    for l in &json {
        let v: serde_json::Value = serde_json::from_str(l).expect("valid JSON");
        assert_eq!(
            v["tag"].as_str().unwrap(),
            format!(
                "app.{}",
                logs.join("w.log")
                    .display()
                    .to_string()
                    .trim_start_matches('/')
                    .replace('/', ".")
            )
        );
    }
    assert!(json.iter().any(|l| l.contains("bad \u{fffd}\u{fffd} utf8")));
    assert!(lf.stop().success());
}

#[test]
fn multiline_joins_a_java_stack_trace() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    append(
        &logs.join("java.log"),
        b"2026-11-22 INFO started\n2026-11-22 ERROR boom\njava.lang.IllegalStateException: bad\n\tat a.B.c(B.java:10)\n\tat a.B.main(B.java:3)\n2026-11-22 INFO after\n",
    );
    let mut lf = Logferry::start(&config(
        dir.path(),
        "[sources.tail.multiline]\nstart_pattern = '^\\d{4}-\\d{2}-\\d{2} '\ntimeout = \"200ms\"",
        "\"json\"",
    ));
    let lines = wait_for_lines(&dir.path().join("out.log"), 3, Duration::from_secs(20));
    let messages: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["record"]["message"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        messages,
        vec![
            "2026-11-22 INFO started".to_string(),
            "2026-11-22 ERROR boom\njava.lang.IllegalStateException: bad\n\tat a.B.c(B.java:10)\n\tat a.B.main(B.java:3)".to_string(),
            "2026-11-22 INFO after".to_string(),
        ]
    );
    assert!(lf.stop().success());
}

/// copytruncate while a writer keeps appending: lines written between
/// logferry's last read and the truncation are only in the copy. Exactly
/// that may be missing from the output: every line is in the output or in
/// a copy, and none is in the output twice.
#[test]
fn copytruncate_under_load_loses_only_what_only_the_copy_holds() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    std::fs::write(&live, b"").unwrap();
    let mut lf = Logferry::start(&config(dir.path(), "", "\"raw\""));
    lf.wait_for_log("following file", Duration::from_secs(20));
    // copy and truncate happen together, as one step: lines written between
    // them would be lost by copytruncate itself, whoever reads the file
    let gate = std::sync::Arc::new(std::sync::Mutex::new(()));
    let (stop, writer) = spawn_writer(&live, "t", gate.clone(), |_| {});
    for i in 0..5 {
        std::thread::sleep(Duration::from_millis(300));
        // what logrotate's copytruncate does: copy, then truncate in place,
        // with no write of the writer's between the two
        let _step = gate.lock().unwrap();
        std::fs::copy(&live, dir.path().join(format!("copy.{i}"))).unwrap();
        truncate(&live);
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let n = writer.join().unwrap();
    // everything after the last truncation is in the file: wait for its end
    let tail_line = format!("t-0-{}", n - 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !read_lines(&dir.path().join("out.log")).contains(&tail_line) {
        assert!(
            std::time::Instant::now() < deadline,
            "the last line never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(lf.stop().success());
    let out = read_lines(&dir.path().join("out.log"));
    let got = distinct(out.iter().cloned());
    assert_eq!(got.len(), out.len(), "no line twice");
    let mut in_copies = std::collections::HashSet::new();
    for i in 0..5 {
        in_copies.extend(read_lines(&dir.path().join(format!("copy.{i}"))));
    }
    let missing: Vec<String> = (0..n)
        .map(|i| format!("t-0-{i}"))
        .filter(|l| !got.contains_key(l))
        .collect();
    for l in &missing {
        assert!(
            in_copies.contains(l),
            "{l} is neither in the output nor in a copy: lost"
        );
    }
    eprintln!(
        "{} of {n} lines only in the copies (the copy windows)",
        missing.len()
    );
    // what logferry counts as missed is a lower bound of what is missing
    let missing_bytes: u64 = missing.iter().map(|l| l.len() as u64 + 1).sum();
    assert!(
        lf.final_counter("logferry_tail_missed_bytes_total{component=\"tail\"}") <= missing_bytes
    );
    // two truncations between two looks at the file are seen as one (a
    // loaded machine can stall the tail past the 300 ms between them)
    let seen = lf.final_counter("logferry_tail_truncations_total{component=\"tail\"}");
    assert!((1..=5).contains(&seen), "{seen} truncations seen of 5");
}

/// A sink that cannot write (a full disk) keeps the checkpoint where it
/// was: after the disk is fixed (here: a restart with a writable path),
/// every line arrives.
#[test]
fn a_full_disk_loses_nothing() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let text = numbered("d", 0..10_000);
    append(&logs.join("app.log"), text.as_bytes());
    let full = config(dir.path(), "", "\"raw\"").replace(
        &format!("\"{}/out.log\"", dir.path().display()),
        "\"/dev/full\"\nretry = { max_attempts = 1 }",
    );
    let mut lf = Logferry::start(&full);
    lf.wait_for_log("a sink did not keep a batch", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1500)); // a checkpoint interval passes
    assert!(lf.stop().success());
    assert!(lf.log_text().contains("write failed"));
    let mut lf = Logferry::start(&config(dir.path(), "", "\"raw\""));
    let lines = wait_for_lines(&dir.path().join("out.log"), 10_000, Duration::from_secs(20));
    assert_exactly(&lines, "d", 10_000);
    assert!(lf.stop().success());
}

/// logrotate-style names that still match the glob (app.log → old-N.log
/// with `*.log`): a released file found again under its new name goes on
/// from where it was, so nothing is read twice.
#[test]
fn rotated_names_matching_the_glob_are_not_read_twice() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let live = logs.join("app.log");
    let mut lf = Logferry::start(&config(dir.path(), "", "\"raw\""));
    let out = dir.path().join("out.log");
    let mut n = 0;
    for round in 0..3 {
        append(&live, numbered("g", n..n + 1000).as_bytes());
        n += 1000;
        wait_for_lines(&out, n, Duration::from_secs(20));
        std::fs::rename(&live, logs.join(format!("old-{round}.log"))).unwrap();
    }
    // past the 5 s after which quiet rotated files are released, and a rescan
    std::thread::sleep(Duration::from_millis(6500));
    append(&live, b"g-3000\n");
    let lines = wait_for_lines(&out, n + 1, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    assert_exactly(&read_lines(&out), "g", n + 1);
    assert_eq!(lines.len(), n + 1);
    assert!(lf.stop().success());
}

/// `path_key`: every record carries the path of the file it came from,
/// for plain lines and joined ones alike, across two files.
#[test]
fn path_key_gives_each_record_its_files_path() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let (a, b) = (logs.join("a.log"), logs.join("b.log"));
    let mut text = String::new();
    for n in 0..500 {
        text.push_str(&format!("a {n}\n"));
    }
    append(&a, text.as_bytes());
    append(
        &b,
        b"2026-12-06 ERROR boom\n\tat x.Y(Y.java:1)\n2026-12-06 INFO after\n",
    );
    let mut lf = Logferry::start(&format!(
        "{}\n[sources.joined]\ntype = \"tail\"\npaths = [\"{}\"]\ntag = \"joined\"\nread_from_head = true\npath_key = \"file\"\nmessage_key = \"log\"\n\
         [sources.joined.multiline]\nstart_pattern = '^\\d{{4}}-'\ntimeout = \"200ms\"\n",
        config(dir.path(), "path_key = \"file\"\nexclude = [\"*/b.log\"]", "\"ndjson\""),
        b.display()
    ));
    let lines = wait_for_lines(&dir.path().join("out.log"), 502, Duration::from_secs(30));
    let records: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let from = |path: &Path| {
        let p = path.display().to_string();
        records.iter().filter(move |r| r["file"] == p.as_str())
    };
    let plain: Vec<&serde_json::Value> = from(&a).collect();
    assert_eq!(plain.len(), 500);
    assert!(plain
        .iter()
        .all(|r| r["message"].as_str().unwrap().starts_with("a ")));
    let joined: Vec<&str> = from(&b).map(|r| r["log"].as_str().unwrap()).collect();
    assert_eq!(
        joined,
        [
            "2026-12-06 ERROR boom\n\tat x.Y(Y.java:1)",
            "2026-12-06 INFO after"
        ]
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
}

/// A file written one line per `write()`, ten a second: the reader lets
/// lines gather for its `linger` and wakes for its end (a timer of its
/// own), so every line arrives once, in batches of several lines, and none
/// waits much past the linger; after a pause the next lines come the same
/// way.
#[test]
fn lines_written_one_at_a_time_arrive_in_batches_within_the_linger() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    let file = dir.path().join("logs/app.log");
    std::fs::write(&file, b"").unwrap();
    let out = dir.path().join("out.log");
    let config = format!(
        "[sources.tail]\ntype = \"tail\"\npaths = [\"{d}/logs/*.log\"]\ntag = \"app\"\nread_from_head = true\nlinger = \"300ms\"\n\n\
         [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{d}/out.log\"\nformat = \"raw\"\n",
        d = dir.path().display()
    );
    let mut lf = Logferry::start(&config);
    lf.wait_for_log("following file", Duration::from_secs(20));
    let mut written = Vec::new();
    let mut seen: Vec<Option<std::time::Instant>> = Vec::new();
    let mut arrivals = std::collections::BTreeSet::new();
    let mut watch = |seen: &mut Vec<Option<std::time::Instant>>| {
        let now = std::time::Instant::now();
        let lines = read_lines(&out);
        for n in numbers(&lines, "l") {
            if n < seen.len() && seen[n].is_none() {
                seen[n] = Some(now);
                arrivals.insert(now);
            }
        }
    };
    let mut watch_for = |seen: &mut Vec<Option<std::time::Instant>>, span: Duration| {
        let end = std::time::Instant::now() + span;
        while std::time::Instant::now() < end {
            watch(seen);
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    for round in 0..2 {
        for _ in 0..30 {
            let n = written.len();
            append(&file, format!("l-{n}\n").as_bytes());
            written.push(std::time::Instant::now());
            seen.push(None);
            watch_for(&mut seen, Duration::from_millis(100));
        }
        if round == 0 {
            // a pause: the reader goes back to waiting for a write (the
            // round's last lines are still watched for as they arrive)
            watch_for(&mut seen, Duration::from_millis(1500));
        }
    }
    wait_until("every line", Duration::from_secs(20), || {
        watch(&mut seen);
        seen.iter().all(|s| s.is_some())
    });
    let lines = read_lines(&out);
    assert_exactly(&lines, "l", 60);
    let late: Vec<(usize, Duration)> = written
        .iter()
        .zip(&seen)
        .enumerate()
        .map(|(n, (w, s))| (n, s.unwrap().saturating_duration_since(*w)))
        .filter(|(_, d)| *d > Duration::from_millis(300 + 1200))
        .collect();
    assert!(
        late.is_empty(),
        "lines that waited long past the linger: {late:?}"
    );
    assert!(
        arrivals.len() <= 40,
        "60 lines came in {} reads: they did not gather",
        arrivals.len()
    );
    assert!(lf.stop().success());
}
