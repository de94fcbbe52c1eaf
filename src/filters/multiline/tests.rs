use std::sync::mpsc;

use bytes::Bytes;

use super::*;
use crate::ack::{AckHandle, AckOutcome};

fn filter(toml: &str) -> MultilineFilter {
    let config: MultilineFilterConfig = toml::from_str(toml).unwrap();
    config.validate().unwrap();
    let pattern = TagPattern::new("**").unwrap();
    MultilineFilter::new("m", pattern, &config, &Registry::new()).unwrap()
}

/// A batch of lines whose acknowledgement outcome goes to `tx` as `n`.
fn lines(text: &'static str, n: u32, tx: &mpsc::Sender<(u32, AckOutcome)>) -> Batch {
    let tx = tx.clone();
    let records = Records::Lines {
        data: Bytes::from_static(text.as_bytes()),
        time: EventTime::new(n, 0),
    };
    Batch::new("t".into(), records, text.lines().count())
        .with_ack(AckHandle::new(move |o| drop(tx.send((n, o)))))
}

/// `[time, {pod: …, message: …}]` entries.
fn entries(records: &[(&str, &str)]) -> Batch {
    let mut out = Vec::new();
    for (i, (pod, message)) in records.iter().enumerate() {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, i as u32 + 1, 0);
        write::map_len(&mut out, 2);
        write::str(&mut out, b"pod");
        write::str(&mut out, pod.as_bytes());
        write::str(&mut out, b"message");
        write::str(&mut out, message.as_bytes());
    }
    Batch::new("t".into(), Records::Entries(out.into()), records.len())
}

/// Each record of `batch` as (time, json).
fn records(batch: &Batch) -> Vec<(u32, serde_json::Value)> {
    let mut out = Vec::new();
    batch
        .for_each_record(|t, r| {
            let json = match r {
                crate::event::RecordRef::Map(m) => {
                    let mut text = Vec::new();
                    crate::format::json::write_value(
                        &mut text,
                        &mut crate::protocol::msgpack::Reader::new(m),
                    )
                    .unwrap();
                    serde_json::from_slice(&text).unwrap()
                }
                crate::event::RecordRef::Line(l) => {
                    serde_json::json!({ "message": String::from_utf8_lossy(l) })
                }
            };
            out.push((t.secs, json));
        })
        .unwrap();
    out
}

fn messages(out: &[Batch]) -> Vec<String> {
    out.iter()
        .flat_map(records)
        .map(|(_, r)| r["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_trace_across_batches_keeps_both_batches_unsettled_until_it_is() {
    let f = filter("parser = 'java'");
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    f.apply(
        lines("head 1\njava.lang.Error: x\n\tat a(1)\n", 1, &tx),
        &mut out,
    );
    // every line is held: nothing goes on, and batch 1 is not settled
    assert!(out.is_empty());
    assert!(rx.try_recv().is_err());
    f.apply(lines("\tat b(2)\nplain 2\n", 2, &tx), &mut out);
    assert_eq!(
        messages(&out),
        ["head 1\njava.lang.Error: x\n\tat a(1)\n\tat b(2)"]
    );
    // the joined record takes its first line's time
    assert_eq!(records(&out[0])[0].0, 1);
    assert!(rx.try_recv().is_err());
    // the joined record is delivered: batch 1 settles; batch 2's last line
    // is still held
    drop(out);
    assert_eq!(rx.try_recv().unwrap(), (1, AckOutcome::Accepted));
    assert!(rx.try_recv().is_err());
    // the flush timeout sends it
    let due = f.deadline().expect("a record is held");
    let mut out = Vec::new();
    f.flush(due, false, &mut out);
    assert_eq!(messages(&out), ["plain 2"]);
    assert!(rx.try_recv().is_err());
    drop(out);
    assert_eq!(rx.try_recv().unwrap(), (2, AckOutcome::Accepted));
    assert!(f.deadline().is_none());
    assert!(f.streams().is_empty(), "an empty stream is forgotten");
}

#[test]
fn a_rejected_joined_record_rejects_every_batch_it_came_from() {
    let f = filter("parser = 'java'");
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    f.apply(lines("head 1\n\tat a(1)\n", 1, &tx), &mut out);
    f.apply(lines("\tat b(2)\n", 2, &tx), &mut out);
    assert!(out.is_empty());
    f.flush(Instant::now(), true, &mut out);
    assert_eq!(out.len(), 1);
    out[0].ack.reject();
    drop(out);
    let mut got: Vec<(u32, AckOutcome)> = rx.try_iter().collect();
    got.sort_by_key(|(n, _)| *n);
    assert_eq!(got, [(1, AckOutcome::Rejected), (2, AckOutcome::Rejected)]);
}

#[test]
fn held_records_of_a_filter_that_goes_away_are_rejected_not_accepted() {
    let f = filter("parser = 'python'");
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    f.apply(
        lines(
            "Traceback (most recent call last):\n  File \"a.py\", line 1\n",
            1,
            &tx,
        ),
        &mut out,
    );
    assert!(out.is_empty());
    drop(f);
    assert_eq!(rx.try_recv().unwrap(), (1, AckOutcome::Rejected));
}

#[test]
fn streams_are_joined_apart_and_keep_their_first_record_fields() {
    let f = filter("parser = 'java'\nstream_key = ['pod']");
    let mut out = Vec::new();
    f.apply(
        entries(&[
            ("a", "head a"),
            ("b", "head b"),
            ("a", "\tat a(1)"),
            ("b", "\tat b(1)"),
            ("a", "next a"),
            ("b", "next b"),
        ]),
        &mut out,
    );
    f.flush(Instant::now(), true, &mut out);
    let mut got: Vec<(u32, serde_json::Value)> = out.iter().flat_map(records).collect();
    got.sort_by_key(|(t, _)| *t);
    assert_eq!(
        got,
        [
            (
                1,
                serde_json::json!({"pod": "a", "message": "head a\n\tat a(1)"})
            ),
            (
                2,
                serde_json::json!({"pod": "b", "message": "head b\n\tat b(1)"})
            ),
            (5, serde_json::json!({"pod": "a", "message": "next a"})),
            (6, serde_json::json!({"pod": "b", "message": "next b"})),
        ]
    );
}

#[test]
fn records_without_the_key_pass_and_cri_parts_join() {
    let f = filter("parser = 'cri'");
    let mut out = Vec::new();
    let mut data = Vec::new();
    for (i, m) in [
        Some("2026-01-01T00:00:00Z stdout P one "),
        None,
        Some("2026-01-01T00:00:01Z stdout F two"),
    ]
    .iter()
    .enumerate()
    {
        write::array_len(&mut data, 2);
        write::event_time(&mut data, i as u32, 0);
        match m {
            Some(m) => {
                write::map_len(&mut data, 1);
                write::str(&mut data, b"message");
                write::str(&mut data, m.as_bytes());
            }
            None => {
                write::map_len(&mut data, 1);
                write::str(&mut data, b"other");
                write::uint(&mut data, 7);
            }
        }
    }
    f.apply(
        Batch::new("t".into(), Records::Entries(data.into()), 3),
        &mut out,
    );
    let got: Vec<serde_json::Value> = out.iter().flat_map(records).map(|(_, r)| r).collect();
    assert_eq!(
        got,
        [
            serde_json::json!({"other": 7}),
            serde_json::json!({"message": "2026-01-01T00:00:00Z stdout F one two"}),
        ]
    );
}

#[test]
fn config_errors() {
    let bad = |s: &str| {
        toml::from_str::<MultilineFilterConfig>(s)
            .map_err(|e| e.to_string())
            .and_then(|c| c.validate())
            .unwrap_err()
    };
    assert!(bad("").contains("parser"));
    assert!(bad("parser = 'java'\nstart = 'x'").contains("not both"));
    assert!(bad("parser = 'java'\nstream_key = ['$a[']").contains("stream_key"));
    assert!(bad("parser = 'java'\nmode = 'x'").contains("mode"));
}

/// `[time, {req: …, message: …}]` entries, one batch.
fn requests(records: &[(String, String)]) -> Batch {
    let mut out = Vec::new();
    for (req, message) in records {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, 1, 0);
        write::map_len(&mut out, 2);
        write::str(&mut out, b"req");
        write::str(&mut out, req.as_bytes());
        write::str(&mut out, b"message");
        write::str(&mut out, message.as_bytes());
    }
    Batch::new("t".into(), Records::Entries(out.into()), records.len())
}

#[test]
fn max_streams_sends_the_stream_that_waited_longest_and_loses_nothing() {
    let metrics = Registry::new();
    let config: MultilineFilterConfig =
        toml::from_str("parser = 'java'\nstream_key = ['req']\nmax_streams = 3").unwrap();
    let f = MultilineFilter::new("m", TagPattern::new("**").unwrap(), &config, &metrics).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    // 40 batches of 5 records over 50 request ids: each id gets a head
    // line, and a frame that continues it when the id comes again
    let mut sent = Vec::new();
    let mut n = 0;
    for b in 0..40u32 {
        let mut batch = Vec::new();
        for _ in 0..5 {
            let req = (n * 7) % 50;
            let line = if n % 2 == 0 {
                format!("record {n}")
            } else {
                format!("\tat record {n}")
            };
            sent.push(line.clone());
            batch.push((format!("r{req}"), line));
            n += 1;
        }
        let tx = tx.clone();
        let batch = requests(&batch).with_ack(AckHandle::new(move |o| drop(tx.send((b, o)))));
        f.apply(batch, &mut out);
        assert!(f.streams().len() <= 3, "streams bounded");
    }
    f.flush(Instant::now(), true, &mut out);
    assert!(f.streams().is_empty());
    // every record arrived once, whole lines, in some joined record
    let mut got: Vec<String> = messages(&out)
        .iter()
        .flat_map(|m| m.split('\n').map(str::to_string).collect::<Vec<_>>())
        .collect();
    got.sort();
    sent.sort();
    assert_eq!(got, sent);
    let evicted = metrics.value(
        "logferry_multiline_records_total",
        &[("component", "m"), ("ended_by", "max_streams")],
    );
    assert!(evicted > 0, "the bound was reached and counted");
    // every batch settles once the records are delivered
    drop(out);
    let mut settled: Vec<u32> = rx
        .try_iter()
        .map(|(b, o)| {
            assert_eq!(o, AckOutcome::Accepted);
            b
        })
        .collect();
    settled.sort();
    assert_eq!(settled, (0..40).collect::<Vec<_>>());
}

#[test]
fn held_lines_stay_charged_to_the_memory_budget_until_sent() {
    use crate::memory::MemoryBudget;
    let budget = MemoryBudget::new(1024 * 1024, &Registry::new());
    let f = filter("parser = 'java'\nstream_key = ['pod']");
    let charged = |b: Batch| {
        let n = b.byte_len();
        b.with_memory(budget.try_acquire(n).unwrap())
    };
    let frame = format!("\tat {}", "x".repeat(2000));
    let mut out = Vec::new();
    // every line held: the batch is dropped, its charge returned
    f.apply(
        charged(entries(&[("a", "head 1"), ("a", &frame), ("b", "head 2")])),
        &mut out,
    );
    assert!(out.is_empty());
    let held = budget.used();
    assert!(
        held >= 2 * frame.len(),
        "held text and records charged: {held}"
    );
    // a line ends pod a's record: it goes on, and only b's stays charged
    f.apply(charged(entries(&[("a", "next 1")])), &mut out);
    assert_eq!(messages(&out), [format!("head 1\n{frame}")]);
    drop(out);
    let after = budget.used();
    assert!(after < 1000, "what was sent is not charged twice: {after}");
    assert!(after > 0, "pod a's next line and pod b's head are held");
    let mut out = Vec::new();
    f.flush(Instant::now(), true, &mut out);
    assert_eq!(out.len(), 2);
    assert!(budget.used() > 0, "sent records stay charged until settled");
    drop(out);
    assert_eq!(budget.used(), 0);
}

#[test]
fn a_chain_joins_cri_parts_then_the_java_trace_per_pod() {
    let f = filter("parser = ['cri', 'java']\nstream_key = ['pod']");
    let mut out = Vec::new();
    f.apply(
        entries(&[
            ("a", "t1 stdout F ERROR failed"),
            ("b", "t2 stdout F INFO b"),
            ("a", "t3 stdout F java.lang.Error: x"),
            ("a", "t4 stdout P \tat a.B(B"),
            ("a", "t5 stdout F .java:1)"),
            ("a", "t6 stdout F INFO next"),
        ]),
        &mut out,
    );
    f.flush(Instant::now(), true, &mut out);
    let mut got: Vec<(u32, serde_json::Value)> = out.iter().flat_map(records).collect();
    got.sort_by_key(|(t, _)| *t);
    assert_eq!(
        got,
        [
            (
                1,
                serde_json::json!({"pod": "a", "message": "t1 stdout F ERROR failed\njava.lang.Error: x\n\tat a.B(B.java:1)"})
            ),
            (
                2,
                serde_json::json!({"pod": "b", "message": "t2 stdout F INFO b"})
            ),
            (
                6,
                serde_json::json!({"pod": "a", "message": "t6 stdout F INFO next"})
            ),
        ]
    );
}

#[test]
fn a_flush_sends_streams_in_the_order_their_lines_came() {
    let f = filter("parser = 'java'\nstream_key = ['req']");
    let sent: Vec<(String, String)> = (0..20)
        .map(|i| (format!("r{}", (i * 7) % 20), format!("record {i}")))
        .collect();
    let mut out = Vec::new();
    f.apply(requests(&sent), &mut out);
    assert!(out.is_empty(), "every line is held");
    f.flush(Instant::now(), true, &mut out);
    let want: Vec<String> = sent.into_iter().map(|(_, m)| m).collect();
    assert_eq!(messages(&out), want);
}

#[test]
fn max_streams_sends_the_evicted_record_under_its_own_tag_with_its_own_acks() {
    let f = filter("parser = 'java'\nmax_streams = 1");
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    let mut a = lines("ERROR a\n\tat a(A.java:1)\n", 1, &tx);
    a.tag = "app.a".into();
    f.apply(a, &mut out);
    assert!(out.is_empty(), "held");
    let mut b = lines("ERROR b\n", 2, &tx);
    b.tag = "app.b".into();
    f.apply(b, &mut out);
    // a's record goes on alone, under a's tag; b's line is held
    assert_eq!(out.len(), 1);
    assert_eq!(&*out[0].tag, "app.a");
    assert_eq!(messages(&out), ["ERROR a\n\tat a(A.java:1)"]);
    drop(out);
    assert_eq!(
        rx.try_iter().collect::<Vec<_>>(),
        [(1, AckOutcome::Accepted)]
    );
    let mut out = Vec::new();
    f.flush(Instant::now(), true, &mut out);
    assert_eq!(&*out[0].tag, "app.b");
    drop(out);
    assert_eq!(
        rx.try_iter().collect::<Vec<_>>(),
        [(2, AckOutcome::Accepted)]
    );
}

#[test]
fn a_waiting_client_is_answered_once_its_lines_are_held_unless_ack_is_sinks() {
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    let held = filter("parser = 'java'");
    held.apply(lines("ERROR a\n", 1, &tx).waited_on(), &mut out);
    assert!(out.is_empty());
    assert_eq!(
        rx.try_recv(),
        Ok((1, AckOutcome::Accepted)),
        "answered as held"
    );
    // a batch nobody waits for stays with its held line
    held.apply(lines("\tat a(A.java:1)\n", 2, &tx), &mut out);
    assert!(rx.try_recv().is_err());
    held.flush(Instant::now(), true, &mut out);
    assert_eq!(messages(&out), ["ERROR a\n\tat a(A.java:1)"]);
    drop(out);
    assert_eq!(rx.try_recv(), Ok((2, AckOutcome::Accepted)));

    let mut out = Vec::new();
    let sinks = filter("parser = 'java'\nack = 'sinks'");
    sinks.apply(lines("ERROR a\n", 3, &tx).waited_on(), &mut out);
    assert!(rx.try_recv().is_err(), "waits for the joined record");
    sinks.flush(Instant::now(), true, &mut out);
    drop(out);
    assert_eq!(rx.try_recv(), Ok((3, AckOutcome::Accepted)));
}

#[test]
fn a_retired_filter_holds_nothing_more_and_gives_up_what_it_held() {
    let f = filter("parser = 'java'");
    let (tx, rx) = mpsc::channel();
    let mut out = Vec::new();
    f.apply(lines("ERROR a\n", 1, &tx), &mut out);
    assert!(out.is_empty());
    f.retire();
    // a batch a router still routing on the replaced filters gives it
    f.apply(lines("\tat a(A.java:1)\n", 2, &tx), &mut out);
    assert_eq!(messages(&out), ["\tat a(A.java:1)"], "passed on as it came");
    f.flush(Instant::now(), true, &mut out);
    assert_eq!(messages(&out[1..]), ["ERROR a"]);
    assert!(f.streams().is_empty());
    drop(out);
    let mut settled: Vec<_> = rx.try_iter().collect();
    settled.sort_by_key(|(n, _)| *n);
    assert_eq!(
        settled,
        [(1, AckOutcome::Accepted), (2, AckOutcome::Accepted)]
    );
}
