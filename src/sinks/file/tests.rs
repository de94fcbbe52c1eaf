use std::sync::mpsc;

use bytes::Bytes;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{Batch, EventTime, Records};
use crate::metrics::Registry;

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
    let s = FileSink::new("f", config, SinkMetrics::new(&registry, "f")).unwrap();
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

#[test]
fn a_full_disk_rejects_the_batch_and_says_so() {
    // /dev/full accepts opens and fails every write with ENOSPC
    if !Path::new("/dev/full").exists() {
        eprintln!("no /dev/full on this system");
        return;
    }
    let (mut s, registry) = sink("path = \"/dev/full\"");
    let (tx, rx) = mpsc::channel();
    s.take(deliver(
        lines("t", "lost\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap())),
    ));
    s.flush();
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    assert_eq!(registry.value("logferry_sink_errors_total", &[]), 1);
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        1
    );
    // the sink keeps working for the next batch (which fails the same way)
    s.take(deliver(lines("t", "again\n")));
    s.flush();
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        2
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
