use std::sync::mpsc;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::EventTime;
use crate::protocol::forward::{decode_frame, Limits};

fn delivery(tag: &str, text: &'static str, acks: &mpsc::Sender<AckOutcome>) -> Delivery {
    let tx = acks.clone();
    Delivery::standalone(
        Batch::new(
            tag.into(),
            Records::Lines {
                data: Bytes::from_static(text.as_bytes()),
                time: EventTime::new(1_700_000_000, 0),
            },
            text.matches('\n').count(),
        )
        .with_ack(AckHandle::new(move |o| tx.send(o).unwrap())),
    )
}

fn settler(retry: RetryConfig, dead_letter: Option<&Path>) -> (Settler, Registry) {
    let registry = Registry::new();
    let dl = dead_letter.map(|p| DeadLetter::open(p).unwrap());
    let s = Settler::new("s", &registry, SinkMetrics::new(&registry, "s"), retry, dl);
    (s, registry)
}

fn rejection() -> Verdict {
    Verdict::Rejected {
        reason: Rejection {
            kind: "test",
            message: "refused".into(),
        },
    }
}

/// Every frame of a dead-letter file: (tag, records as decoded entries).
fn frames(path: &Path) -> Vec<(String, usize, Bytes)> {
    let data = Bytes::from(std::fs::read(path).unwrap());
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let end = crate::protocol::msgpack::skip(&data, pos).unwrap();
        let f = decode_frame(data.slice(pos..end), &Limits::default()).unwrap();
        out.push((f.tag, f.count, f.entries));
        pos = end;
    }
    out
}

#[test]
fn delivered_accepts_and_counts() {
    let (s, registry) = settler(RetryConfig::default(), None);
    let (tx, rx) = mpsc::channel();
    let r = s.settle(
        vec![delivery("a", "1\n2\n", &tx), delivery("a", "3\n", &tx)],
        0,
        Verdict::Delivered,
    );
    assert!(matches!(r, Settled::Accepted));
    assert_eq!(
        rx.try_iter().collect::<Vec<_>>(),
        vec![AckOutcome::Accepted; 2]
    );
    assert_eq!(registry.value("logferry_sink_records_total", &[]), 3);
}

#[test]
fn retry_hands_the_records_back_until_max_attempts_then_rejects() {
    let retry = RetryConfig {
        max_attempts: 2,
        ..RetryConfig::default()
    };
    let (s, registry) = settler(retry, None);
    let (tx, rx) = mpsc::channel();
    let v = s.retry_verdict(1);
    let Verdict::Retry { after } = v else {
        panic!("{v:?}")
    };
    assert!(after >= Duration::from_millis(80) && after <= Duration::from_millis(120));
    let items = match s.settle(vec![delivery("a", "x\n", &tx)], 1, v) {
        Settled::Retry { items, after: a } => {
            assert_eq!(a, after);
            items
        }
        r => panic!("{r:?}"),
    };
    assert!(rx.try_recv().is_err(), "a retried batch is not settled yet");
    assert_eq!(
        registry.value("logferry_sink_retried_records_total", &[]),
        1
    );
    // the second failed attempt uses up max_attempts = 2
    let r = s.settle(items, 2, s.retry_verdict(2));
    assert!(
        matches!(
            r,
            Settled::Rejected {
                dead_lettered: false
            }
        ),
        "{r:?}"
    );
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        1
    );
    assert_eq!(
        registry.value(
            "logferry_sink_rejections_total",
            &[("kind", "retries_exhausted")]
        ),
        1
    );
}

#[test]
fn retry_waits_grow_with_jitter_and_stay_capped() {
    let retry = RetryConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_millis(1000),
        jitter: 0.2,
        max_attempts: 0,
    };
    let (s, _) = settler(retry, None);
    for attempt in 1..20 {
        let Verdict::Retry { after } = s.retry_verdict(attempt) else {
            panic!()
        };
        let base = crate::backoff::backoff(retry.initial, retry.max, attempt);
        assert!(after <= retry.max, "{attempt}: {after:?}");
        assert!(after >= base.mul_f64(0.8), "{attempt}: {after:?}");
        assert!(after <= base.mul_f64(1.2), "{attempt}: {after:?}");
    }
    // forever: attempt 1000 still retries
    let (tx, _rx) = mpsc::channel();
    let r = s.settle(vec![delivery("a", "x\n", &tx)], 1000, s.retry_verdict(1000));
    assert!(matches!(r, Settled::Retry { .. }));
}

#[test]
fn rejected_without_dead_letter_is_dropped_and_counted_and_the_source_moves_on() {
    let (s, registry) = settler(RetryConfig::default(), None);
    let (tx, rx) = mpsc::channel();
    let r = s.settle(vec![delivery("a", "x\ny\n", &tx)], 1, rejection());
    assert!(matches!(
        r,
        Settled::Rejected {
            dead_lettered: false
        }
    ));
    match rx.try_recv() {
        Ok(AckOutcome::Refused(r)) => {
            assert_eq!((r.records, r.dead_lettered, r.kind), (2, false, "test"));
            assert!(r.first.contains('x'), "{r:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        registry.value("logferry_sink_dropped_records_total", &[]),
        2
    );
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        0
    );
    assert_eq!(
        registry.value("logferry_sink_rejections_total", &[("kind", "test")]),
        2
    );
}

#[test]
fn rejected_with_dead_letter_keeps_the_records_as_forward_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dl/rejected.msgpack");
    let (s, registry) = settler(RetryConfig::default(), Some(&path));
    let (tx, rx) = mpsc::channel();
    let mut entries = Vec::new();
    write_message_entry(&mut entries, 5, 0, b"from-forward");
    let tx2 = tx.clone();
    let forward = Delivery::standalone(
        Batch::new(
            "fw".into(),
            Records::Entries(Bytes::from(entries.clone())),
            1,
        )
        .with_ack(AckHandle::new(move |o| tx2.send(o).unwrap())),
    );
    let r = s.settle(
        vec![delivery("tail", "l1\nl2\n", &tx), forward],
        1,
        rejection(),
    );
    assert!(matches!(
        r,
        Settled::Rejected {
            dead_lettered: true
        }
    ));
    let outcomes: Vec<AckOutcome> = rx.try_iter().collect();
    assert_eq!(outcomes.len(), 2);
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, AckOutcome::Refused(r) if r.dead_lettered)),
        "{outcomes:?}"
    );
    assert_eq!(
        registry.value("logferry_sink_dead_letter_records_total", &[]),
        3
    );
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        0
    );
    let got = frames(&path);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].0.as_str(), got[0].1), ("tail", 2));
    let mut want = Vec::new();
    write_message_entry(&mut want, 1_700_000_000, 0, b"l1");
    write_message_entry(&mut want, 1_700_000_000, 0, b"l2");
    assert_eq!(
        got[0].2.as_ref(),
        &want[..],
        "lines become {{\"message\": line}}"
    );
    assert_eq!((got[1].0.as_str(), got[1].1), ("fw", 1));
    assert_eq!(
        got[1].2.as_ref(),
        &entries[..],
        "entries are kept as they came"
    );
}

#[test]
fn a_frame_torn_by_a_kill_is_cut_before_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rejected.msgpack");
    let (tx, _rx) = mpsc::channel();
    let (s, _) = settler(RetryConfig::default(), Some(&path));
    s.settle(vec![delivery("one", "a\n", &tx)], 1, rejection());
    drop(s);
    let whole = std::fs::read(&path).unwrap();
    // a kill -9 cut the next append short: half a frame, never acknowledged
    let mut torn = whole.clone();
    torn.extend_from_slice(&whole[..whole.len() / 2]);
    std::fs::write(&path, &torn).unwrap();
    let (s, _) = settler(RetryConfig::default(), Some(&path));
    s.settle(vec![delivery("two", "b\nc\n", &tx)], 1, rejection());
    let got: Vec<_> = frames(&path).into_iter().map(|f| (f.0, f.1)).collect();
    assert_eq!(got, vec![("one".to_string(), 1), ("two".to_string(), 2)]);
    // a file that is not msgpack is left as it is
    let other = dir.path().join("other");
    std::fs::write(&other, b"\xc1 not msgpack").unwrap();
    drop(DeadLetter::open(&other).unwrap());
    assert_eq!(std::fs::read(&other).unwrap(), b"\xc1 not msgpack");
}

#[test]
fn a_dead_letter_write_that_fails_rejects_to_the_source() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let (s, registry) = settler(RetryConfig::default(), Some(Path::new("/dev/full")));
    let (tx, rx) = mpsc::channel();
    let r = s.settle(vec![delivery("a", "x\n", &tx)], 1, rejection());
    assert!(matches!(
        r,
        Settled::Rejected {
            dead_lettered: false
        }
    ));
    assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    assert_eq!(
        registry.value("logferry_sink_dead_letter_errors_total", &[]),
        1
    );
    assert_eq!(
        registry.value("logferry_sink_rejected_records_total", &[]),
        1
    );
}

#[test]
fn line_entry_overhead_bounds_every_line_length() {
    use crate::event::{EventTime, Records};
    for len in [0, 1, 31, 32, 255, 256, 65_535, 65_536, 200_000] {
        let mut data = vec![b'x'; len];
        data.push(b'\n');
        let data = bytes::Bytes::from(data);
        let b = Batch::new(
            "t".into(),
            Records::Lines {
                data: data.clone(),
                time: EventTime::new(1, 2),
            },
            1,
        );
        let encoded = batch_entries(&b).len();
        assert!(
            encoded <= data.len() + LINE_ENTRY_OVERHEAD,
            "a {len}-byte line takes {} bytes more than its data",
            encoded - data.len()
        );
    }
}

#[test]
fn a_record_refused_alone_is_set_aside_and_the_others_count_once() {
    let aside = |text: &'static [u8]| super::SetAside {
        reason: super::Rejection {
            kind: "message_too_large",
            message: "over message.max.bytes".into(),
        },
        time: crate::event::EventTime { secs: 5, nanos: 0 },
        payload: Bytes::from_static(text),
        entry: None,
    };
    // without a dead-letter file: dropped, logged, counted
    let (s, registry) = settler(RetryConfig::default(), None);
    let (tx, rx) = mpsc::channel();
    s.settle_partly(delivery("a", "1\n2\n3\n", &tx), vec![aside(b"big-2")]);
    match rx.try_recv() {
        Ok(AckOutcome::Refused(r)) => {
            assert_eq!((r.records, r.dead_lettered), (1, false));
            assert_eq!(r.first, "big-2");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(registry.value("logferry_sink_records_total", &[]), 2);
    assert_eq!(
        registry.value("logferry_sink_dropped_records_total", &[]),
        1
    );
    assert_eq!(
        registry.value(
            "logferry_sink_rejections_total",
            &[("kind", "message_too_large")]
        ),
        1
    );
    // with one: only the refused record is in it
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dl.msgpack");
    let (s, registry) = settler(RetryConfig::default(), Some(&path));
    let (tx, rx) = mpsc::channel();
    s.settle_partly(delivery("a", "1\n2\n3\n", &tx), vec![aside(b"big-2")]);
    assert!(matches!(rx.try_recv(), Ok(AckOutcome::Refused(r)) if r.dead_lettered));
    assert_eq!(
        registry.value("logferry_sink_dead_letter_records_total", &[]),
        1
    );
    let got = frames(&path);
    assert_eq!((got.len(), got[0].0.as_str(), got[0].1), (1, "a", 1));
}
