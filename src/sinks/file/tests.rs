use std::sync::mpsc;

use bytes::Bytes;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, EventTime, Records};
use crate::metrics::Registry;
use crate::sinks::settle::Settler;
use crate::sinks::verdict::RetryConfig;

fn lines(tag: &str, text: &'static str) -> Batch {
    Batch::new(
        tag.into(),
        Records::Lines {
            data: Bytes::from_static(text.as_bytes()),
            time: EventTime::new(1, 0),
        },
        text.matches('\n').count(),
    )
}

fn deliver(batch: Batch) -> Delivery {
    Delivery::standalone(batch)
}

fn sink(config_toml: &str) -> (FileSink, Registry) {
    let config: FileSinkConfig = toml::from_str(config_toml).unwrap();
    let registry = Registry::new();
    let s = FileSink::new("f", config, SinkMetrics::new(&registry, "f"), &registry).unwrap();
    (s, registry)
}

#[test]
fn appends_across_restarts_and_acks_after_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/unified.log");
    let cfg = format!("path = {:?}", path.display().to_string());
    let (mut s, _) = sink(&cfg);
    let (tx, rx) = mpsc::channel();
    s.take(deliver(
        lines("a", "one\ntwo\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap())),
    ));
    assert!(
        rx.try_recv().is_err(),
        "not acknowledged before it is written"
    );
    s.flush();
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Accepted));
    drop(s);
    let (mut s, registry) = sink(&cfg);
    s.take(deliver(lines("b", "three\n")));
    s.finish();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nthree\n");
    assert_eq!(registry.value("logferry_sink_records_total", &[]), 1);
}

#[test]
fn a_line_torn_by_a_kill_is_cut_before_the_next_record() {
    // a kill -9 cut the last write short: "thr" of a record never
    // acknowledged, which comes again after the restart
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.log");
    std::fs::write(&path, "one\ntwo\nthr").unwrap();
    let (mut s, _) = sink(&format!("path = {:?}", path.display().to_string()));
    s.take(deliver(lines("b", "three\nfour\n")));
    s.finish();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "one\ntwo\nthree\nfour\n"
    );
}

#[test]
fn only_a_torn_last_line_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let cut = |content: &[u8]| {
        let path = dir.path().join("f");
        std::fs::write(&path, content).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let n = output::cut_torn_line(&f, content.len() as u64).unwrap();
        (n, std::fs::read(&path).unwrap())
    };
    assert_eq!(cut(b"a\nb\n"), (0, b"a\nb\n".to_vec()));
    assert_eq!(cut(b"a\nb"), (1, b"a\n".to_vec()));
    // no newline at all: not a file of lines this sink wrote
    assert_eq!(cut(b"no newline"), (0, b"no newline".to_vec()));
    // the newline more than one read (64 KiB) back
    let mut long = b"first\n".to_vec();
    long.extend(std::iter::repeat_n(b'x', 200_000));
    assert_eq!(cut(&long), (200_000, b"first\n".to_vec()));
    // none in the last MiB: left alone
    let mut huge = b"first\n".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 1 << 20));
    assert_eq!(cut(&huge).0, 0);
}

#[test]
fn a_msgpack_file_is_never_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.msgpack");
    std::fs::write(&path, b"\x92\xa1a\n\xa1").unwrap();
    let (mut s, _) = sink(&format!(
        "path = {:?}\nformat = \"msgpack\"",
        path.display().to_string()
    ));
    s.take(deliver(lines("b", "x\n")));
    s.finish();
    assert!(std::fs::read(&path)
        .unwrap()
        .starts_with(b"\x92\xa1a\n\xa1"));
}

#[test]
fn tag_paths_split_records_per_tag() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("path = \"{}/${{tag}}.log\"", dir.path().display());
    let (mut s, _) = sink(&cfg);
    s.take(deliver(lines("app.a", "a1\n")));
    s.take(deliver(lines("app.b", "b1\n")));
    s.take(deliver(lines("app.a", "a2\n")));
    s.flush();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("app.a.log")).unwrap(),
        "a1\na2\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("app.b.log")).unwrap(),
        "b1\n"
    );
}

#[test]
fn rotates_once_a_file_reaches_rotate_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.log");
    let cfg = format!("path = {:?}\nrotate_bytes = 10", path.display().to_string());
    let (mut s, _) = sink(&cfg);
    for _ in 0..3 {
        s.take(deliver(lines("t", "12345\n")));
        s.flush();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // 6 + 6 bytes reach the limit of 10: rotated; the third write starts anew
    assert_eq!(names.len(), 2, "{names:?}");
    let total: String = names
        .iter()
        .map(|n| std::fs::read_to_string(dir.path().join(n)).unwrap())
        .collect();
    assert_eq!(total, "12345\n".repeat(3));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "12345\n");
}

fn settled_sink(
    config_toml: &str,
    retry: RetryConfig,
    dead_letter: Option<&Path>,
) -> (FileSink, Registry) {
    let config: FileSinkConfig = toml::from_str(config_toml).unwrap();
    let registry = Registry::new();
    let m = SinkMetrics::new(&registry, "f");
    let dl = dead_letter.map(|p| crate::sinks::settle::DeadLetter::open(p).unwrap());
    let settler = Settler::new("f", &registry, m.clone(), retry, dl);
    let s = FileSink::new("f", config, m, &registry)
        .unwrap()
        .settled_by(settler);
    (s, registry)
}

/// A sink writing to /dev/full, which accepts opens and fails every write
/// with ENOSPC, retrying 1 ms apart up to 2 attempts; `None` (said on
/// stderr) on a system without it.
fn full_disk_sink() -> Option<(FileSink, Registry)> {
    if !Path::new("/dev/full").exists() {
        eprintln!("no /dev/full on this system");
        return None;
    }
    let retry = RetryConfig {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(1),
        jitter: 0.0,
        max_attempts: 2,
    };
    Some(settled_sink("path = \"/dev/full\"", retry, None))
}

#[test]
fn a_full_disk_is_retried_then_rejected_after_max_attempts() {
    let Some((mut s, registry)) = full_disk_sink() else {
        return;
    };
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    s.take(deliver(
        lines("t", "lost\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap())),
    ));
    s.flush();
    assert!(rx.try_recv().is_err(), "ENOSPC is retried, not settled");
    assert!(s.retry_at().is_some());
    assert_eq!(
        registry.value("logferry_sink_retried_records_total", &[]),
        1
    );
    // a batch that comes meanwhile waits behind it
    s.take(deliver(
        lines("t", "next\n").with_ack(AckHandle::new(move |o| tx2.send(o).unwrap())),
    ));
    assert!(rx.try_recv().is_err());
    std::thread::sleep(Duration::from_millis(5));
    s.flush();
    assert_eq!(
        rx.try_iter().collect::<Vec<_>>(),
        vec![AckOutcome::Rejected; 2],
        "the second failed attempt uses up max_attempts = 2"
    );
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        2
    );
    assert_eq!(
        registry.value(
            "logferry_sink_rejections_total",
            &[("kind", "retries_exhausted")]
        ),
        2
    );
    assert!(s.retry_at().is_none());
}

#[test]
fn a_full_disk_retries_until_the_stop_then_rejects() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let (mut s, registry) = settled_sink("path = \"/dev/full\"", RetryConfig::default(), None);
    let (tx, rx) = mpsc::channel();
    s.take(deliver(
        lines("t", "lost\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap())),
    ));
    s.flush();
    assert!(rx.try_recv().is_err(), "retried forever by default");
    s.finish();
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        1
    );
}

#[test]
fn a_directory_at_the_path_is_rejected_into_the_dead_letter_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    let dl = dir.path().join("dead.msgpack");
    let cfg = format!("path = \"{}/${{tag}}\"", dir.path().display());
    let (mut s, registry) = settled_sink(&cfg, RetryConfig::default(), Some(&dl));
    let (tx, rx) = mpsc::channel();
    s.take(deliver(
        lines("taken", "a\nb\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap())),
    ));
    s.flush();
    assert!(
        matches!(rx.try_recv(), Ok(AckOutcome::Refused(r)) if r.dead_lettered),
        "kept in the dead-letter file"
    );
    assert_eq!(
        registry.value(
            "logferry_sink_rejections_total",
            &[("kind", "is_a_directory")]
        ),
        2
    );
    assert_eq!(
        registry.value("logferry_sink_dead_letter_records_total", &[]),
        2
    );
    let data = bytes::Bytes::from(std::fs::read(&dl).unwrap());
    let f = crate::protocol::forward::decode_frame(data, &Default::default()).unwrap();
    assert_eq!((f.tag.as_str(), f.count), ("taken", 2));
    // other tags are written as usual
    s.take(deliver(lines("ok", "c\n")));
    s.flush();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ok")).unwrap(),
        "c\n"
    );
}

#[test]
fn template_format_writes_one_line_per_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.log");
    let cfg = format!(
        "path = {:?}\nformat = {{ type = \"template\", template = \"{{tag}} {{message}}\" }}",
        path.display().to_string()
    );
    let (mut s, _) = sink(&cfg);
    s.take(deliver(lines("x", "a\nb\n")));
    s.finish();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "x a\nx b\n");
}

#[test]
fn large_raw_records_are_written_in_order_without_copying() {
    use crate::protocol::msgpack::write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    let mut entries = Vec::new();
    let mut want = String::new();
    for i in 0..1500 {
        write::array_len(&mut entries, 2);
        write::uint(&mut entries, 1);
        write::map_len(&mut entries, 1);
        if i == 700 {
            // no message field: formatted as JSON, in its place
            write::str(&mut entries, b"n");
            write::uint(&mut entries, 7);
            want.push_str("{\"n\":7}\n");
        } else {
            let msg = format!("{i:04}{}", "y".repeat(2000));
            write::str(&mut entries, b"message");
            write::str(&mut entries, msg.as_bytes());
            want.push_str(&msg);
            want.push('\n');
        }
    }
    s.take(deliver(Batch::new(
        "t".into(),
        Records::Entries(entries.into()),
        1500,
    )));
    s.flush();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
    assert_eq!(
        registry.value("logferry_sink_bytes_total", &[]),
        want.len() as u64
    );
}

/// Lines `line-<i>` for `range`, as a tail source hands them over.
fn numbered_lines(range: std::ops::Range<usize>) -> (Batch, String) {
    let n = range.len();
    let text: String = range.map(|i| format!("line-{i}\n")).collect();
    let batch = Batch::new(
        "t".into(),
        Records::Lines {
            data: Bytes::from(text.clone()),
            time: EventTime::new(1, 0),
        },
        n,
    );
    (batch, text)
}

#[test]
fn large_blocks_of_lines_are_written_in_order_between_gathered_small_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lines.log");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    let mut want = String::new();
    // small, large (written straight from the batch), small, large, small
    for range in [
        0..3,
        3..20_003,
        20_003..20_005,
        20_005..40_005,
        40_005..40_006,
    ] {
        let (batch, text) = numbered_lines(range);
        want.push_str(&text);
        s.take(deliver(batch));
    }
    assert!(want.len() > 2 * ZERO_COPY_MIN_LINES);
    s.flush();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), want);
    assert_eq!(
        registry.value("logferry_sink_bytes_total", &[]),
        want.len() as u64
    );
}

#[test]
fn a_full_disk_rejects_a_round_holding_a_large_block_of_lines() {
    let Some((mut s, registry)) = full_disk_sink() else {
        return;
    };
    // gathered, then written straight from the batch (buffer and block in
    // one writev, the round's only write)
    let (small, _) = numbered_lines(0..5);
    let (large, text) = numbered_lines(5..20_005);
    assert!(text.len() >= ZERO_COPY_MIN_LINES);
    let mut outcomes = Vec::new();
    for batch in [small, large] {
        let (d, rx) = acked(batch);
        s.take(d);
        outcomes.push(rx);
    }
    s.flush();
    assert!(
        outcomes.iter().all(|rx| rx.try_recv().is_err()),
        "ENOSPC is retried, not settled"
    );
    assert_eq!(
        registry.value("logferry_sink_retried_records_total", &[]),
        20_005
    );
    std::thread::sleep(Duration::from_millis(5));
    s.flush();
    for rx in &outcomes {
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    }
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        20_005
    );
    assert_eq!(registry.value("logferry_sink_records_total", &[]), 0);
    assert!(s.retry_at().is_none());
}

#[test]
fn a_large_block_of_lines_written_into_a_renamed_file_is_written_again_at_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.log");
    let moved = dir.path().join("out.log.1");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    let (first, first_text) = numbered_lines(0..20_000);
    s.take(deliver(first));
    s.flush();
    // the next round is written while the file is still at the path...
    let (small, small_text) = numbered_lines(20_000..20_002);
    let (large, large_text) = numbered_lines(20_002..40_002);
    let (d1, rx1) = acked(small);
    let (d2, rx2) = acked(large);
    s.take(d1);
    s.take(d2);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().len(),
        first_text.len() + small_text.len() + large_text.len(),
        "the large block is written during take"
    );
    // ...and renamed away before it is acknowledged
    std::fs::rename(&path, &moved).unwrap();
    s.flush();
    assert_eq!(rx1.try_recv(), Ok(AckOutcome::Accepted));
    assert_eq!(rx2.try_recv(), Ok(AckOutcome::Accepted));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        small_text + &large_text,
        "the whole round, in order, at the path"
    );
    assert!(std::fs::read_to_string(&moved)
        .unwrap()
        .starts_with(&first_text));
    assert_eq!(
        registry.value("logferry_file_reopened_total", &[("reason", "missing")]),
        1
    );
}

/// A batch of `n` raw records `<prefix>-<i>` padded past
/// `ZERO_COPY_MIN_RECORD`, so the sink writes them during `take`.
fn big_records(prefix: &str, range: std::ops::Range<usize>) -> Batch {
    let mut entries = Vec::new();
    let n = range.len();
    for i in range {
        crate::protocol::forward::write_message_entry(
            &mut entries,
            1,
            0,
            format!("{prefix}-{i} {}", "p".repeat(ZERO_COPY_MIN_RECORD)).as_bytes(),
        );
    }
    Batch::new("t".into(), Records::Entries(entries.into()), n)
}

/// The record numbers in a file, sorted.
fn numbers_in(path: &Path, prefix: &str) -> Vec<usize> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut n: Vec<usize> = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix(prefix)?
                .strip_prefix('-')?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    n.sort_unstable();
    n
}

fn acked(batch: Batch) -> (Delivery, mpsc::Receiver<AckOutcome>) {
    let (tx, rx) = mpsc::channel();
    (
        deliver(batch.with_ack(AckHandle::new(move |o| tx.send(o).unwrap()))),
        rx,
    )
}

#[test]
fn a_round_written_into_a_renamed_file_is_written_again_at_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.log");
    let moved = dir.path().join("out.log.1");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    s.take(deliver(big_records("r", 0..10)));
    s.flush();
    // the next round is written while the file is still at the path...
    let (d, rx) = acked(big_records("r", 10..20));
    s.take(d);
    assert_eq!(numbers_in(&path, "r"), (0..20).collect::<Vec<_>>());
    // ...and renamed away before it is acknowledged
    std::fs::rename(&path, &moved).unwrap();
    s.flush();
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Accepted));
    assert_eq!(numbers_in(&moved, "r"), (0..10).collect::<Vec<_>>());
    assert_eq!(numbers_in(&path, "r"), (10..20).collect::<Vec<_>>());
    assert_eq!(
        registry.value("logferry_file_reopened_total", &[("reason", "missing")]),
        1
    );
    // and later rounds go to the new file
    s.take(deliver(big_records("r", 20..30)));
    s.flush();
    assert_eq!(numbers_in(&path, "r"), (10..30).collect::<Vec<_>>());
    assert_eq!(registry.value("logferry_sink_records_total", &[]), 30);
}

#[test]
fn a_file_replaced_at_its_path_is_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.log");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    s.take(deliver(lines("t", "a-0\n")));
    s.flush();
    std::fs::rename(&path, dir.path().join("old")).unwrap();
    std::fs::write(&path, "").unwrap();
    s.take(deliver(lines("t", "a-1\n")));
    s.flush();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a-1\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old")).unwrap(),
        "a-0\n"
    );
    assert_eq!(
        registry.value("logferry_file_reopened_total", &[("reason", "replaced")]),
        1
    );
}

#[test]
fn a_removed_directory_is_created_again_for_the_round_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deep/out");
    let path = out.join("x.log");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    let (d, rx) = acked(big_records("d", 0..10));
    s.take(d);
    std::fs::remove_dir_all(dir.path().join("deep")).unwrap();
    s.flush();
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Accepted));
    assert_eq!(numbers_in(&path, "d"), (0..10).collect::<Vec<_>>());
    assert_eq!(
        registry.value("logferry_file_reopened_total", &[("reason", "missing")]),
        1
    );
}

#[test]
fn a_round_that_cannot_be_written_again_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/x.log");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    let (d, rx) = acked(lines("t", "lost\n"));
    s.take(d);
    // the directory becomes a file: nothing can be created at the path
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    std::fs::write(dir.path().join("out"), "").unwrap();
    s.flush();
    // set aside for good (dropped and logged): the source moves on
    assert!(matches!(rx.try_recv(), Ok(AckOutcome::Refused(_))));
    assert_eq!(
        registry.value(
            "logferry_file_errors_total",
            &[("op", "open"), ("kind", "not_a_directory")]
        ),
        1
    );
    assert_eq!(
        registry.value("logferry_sink_dropped_records_total", &[]),
        1
    );
}

#[test]
fn tick_closes_a_removed_output_and_opens_the_unified_file_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/u.log");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    s.take(deliver(lines("t", "a\n")));
    s.flush();
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    s.tick();
    assert!(path.exists(), "the unified file is there again");
    assert_eq!(
        registry.value("logferry_file_reopened_total", &[("reason", "missing")]),
        1
    );
    s.take(deliver(lines("t", "b\n")));
    s.flush();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
}

#[test]
fn reopen_closes_every_file_and_opens_the_unified_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.log");
    let moved = dir.path().join("u.log.1");
    let (mut s, registry) = sink(&format!("path = {:?}", path.display().to_string()));
    s.take(deliver(lines("t", "a\n")));
    s.flush();
    // logrotate: rename, then SIGHUP
    std::fs::rename(&path, &moved).unwrap();
    s.reopen_all();
    assert!(path.exists());
    s.take(deliver(lines("t", "b\n")));
    s.flush();
    assert_eq!(std::fs::read_to_string(&moved).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "b\n");
    assert_eq!(
        registry.value("logferry_file_reopened_total", &[("reason", "signal")]),
        1
    );
}

#[test]
fn a_reopen_request_is_seen_once() {
    let mut seen = reopen::current();
    assert!(!reopen::requested_since(&mut seen));
    request_reopen("SIGUSR1");
    assert!(reopen::requested_since(&mut seen));
    assert_eq!(reopen::signal(), "SIGUSR1");
    assert!(!reopen::requested_since(&mut seen));
}

#[test]
fn open_and_write_errors_are_counted_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "").unwrap();
    let (mut s, registry) = sink(&format!("path = \"{}/${{tag}}.log\"", file.display()));
    s.take(deliver(lines("t", "x\n")));
    assert_eq!(
        registry.value(
            "logferry_file_errors_total",
            &[
                ("component", "f"),
                ("op", "open"),
                ("kind", "not_a_directory")
            ]
        ),
        1
    );
    if Path::new("/dev/full").exists() {
        let (mut s, registry) = sink("path = \"/dev/full\"");
        s.take(deliver(lines("t", "x\n")));
        s.flush();
        assert_eq!(
            registry.value(
                "logferry_file_errors_total",
                &[("op", "write"), ("kind", "no_space")]
            ),
            1
        );
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("running as root: permission checks do not apply");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o500)).unwrap();
    let (mut s, registry) = sink(&format!("path = \"{}/${{tag}}.log\"", locked.display()));
    s.take(deliver(lines("t", "x\n")));
    assert_eq!(
        registry.value(
            "logferry_file_errors_total",
            &[("op", "open"), ("kind", "permission_denied")]
        ),
        1
    );
}

#[test]
fn escaped_tags_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("path = \"{}/out/${{tag}}/x.log\"", dir.path().display());
    let (mut s, registry) = sink(&cfg);
    s.take(deliver(lines("..", "a\n")));
    s.take(deliver(lines("..", "b\n")));
    s.take(deliver(lines("fine", "c\n")));
    s.flush();
    assert_eq!(registry.value("logferry_file_escaped_paths_total", &[]), 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/%2E%2E/x.log")).unwrap(),
        "a\nb\n"
    );
    assert!(!dir.path().join("x.log").exists());
}

#[test]
fn fsync_syncs_the_directories_of_new_files_and_rotations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/out.log");
    let cfg = format!(
        "path = {:?}\nfsync = true\nrotate_bytes = 4",
        path.display().to_string()
    );
    let (mut s, _) = sink(&cfg);
    // the entries of a/, b/ and out.log: in the temp dir, a/ and b/
    assert_eq!(s.dirs_synced, 3);
    s.take(deliver(lines("t", "12345\n")));
    s.flush();
    // rotated: the rename and the new file, one fsync of b/
    assert_eq!(s.dirs_synced, 4);
    drop(s);
    // an existing file changes no directory
    let (s, _) = sink(&cfg);
    assert_eq!(s.dirs_synced, 0);
    let (s, _) = sink(&format!(
        "path = {:?}",
        dir.path().join("c/out.log").display().to_string()
    ));
    assert_eq!(s.dirs_synced, 0, "only with fsync");
}
