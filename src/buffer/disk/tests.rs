use std::path::Path;
use std::sync::mpsc as std_mpsc;

use bytes::Bytes;

use std::os::unix::fs::FileExt;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::buffer::{open as open_queue, BufferKind, Delivery, QueueReceiver, QueueSender};
use crate::event::EventTime;
use crate::event::Records;

fn config(dir: &Path, max_bytes: usize, segment_bytes: usize) -> BufferConfig {
    BufferConfig {
        kind: BufferKind::Disk,
        max_bytes,
        dir: Some(dir.to_path_buf()),
        segment_bytes,
        ..BufferConfig::default()
    }
}

fn numbered(n: usize) -> Batch {
    Batch::new(
        "t".into(),
        Records::Lines {
            data: Bytes::from(format!("{n:06}\n")),
            time: EventTime::new(1_700_000_000, 0),
        },
        1,
    )
}

fn number(d: &Delivery) -> usize {
    std::str::from_utf8(d.batch().records.bytes())
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn open(dir: &Path, max: usize, seg: usize, m: &Registry) -> (QueueSender, QueueReceiver) {
    open_queue("s", config(dir, max, seg), m).unwrap()
}

fn shared(tx: &QueueSender) -> Arc<Shared> {
    match &tx.kind {
        crate::buffer::SenderKind::Disk { shared, .. } => shared.clone(),
        _ => panic!("not a disk buffer"),
    }
}

/// Sends `n` numbered batches and waits for each acknowledgement.
async fn send_acked(tx: &QueueSender, range: std::ops::Range<usize>) {
    for i in range {
        let (otx, orx) = std_mpsc::channel();
        tx.send(numbered(i).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())))
            .await
            .unwrap();
        assert_eq!(
            orx.try_recv(),
            Ok(AckOutcome::Accepted),
            "batch {i} is on disk"
        );
    }
}

#[tokio::test]
async fn written_batches_are_acknowledged_and_read_in_order_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1, &m);
    send_acked(&tx, 0..3000).await;
    assert!(segment::list(dir.path()).unwrap().len() > 2, "rolled");
    for i in 0..3000 {
        let d = rx.recv().await.unwrap();
        assert_eq!(number(&d), i);
        d.accept();
    }
    drop(tx);
    assert!(rx.recv().await.is_none());
    assert_eq!(
        segment::list(dir.path()).unwrap().len(),
        1,
        "delivered segments are deleted, the active one stays"
    );
    assert_eq!(tx_gauge_records(&m), 3000);
}

fn tx_gauge_records(m: &Registry) -> u64 {
    m.value(
        "logferry_buffer_disk_written_records_total",
        &[("component", "s")],
    )
}

#[tokio::test]
async fn a_restart_replays_only_what_was_not_delivered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (tx, mut rx) = open(dir.path(), 1 << 20, 1, &Registry::new());
        send_acked(&tx, 0..1000).await;
        // accept 0..600 out of order, leave 600 in flight
        let mut held = Vec::new();
        for _ in 0..601 {
            held.push(rx.recv().await.unwrap());
        }
        let in_flight = held.remove(600);
        for d in held.into_iter().rev() {
            d.accept();
        }
        // as a kill -9 leaves it: never settled, the directory let go
        shared(&tx).unlock_dir();
        std::mem::forget(in_flight);
    }
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1, &m);
    let gauge = tx.gauge();
    assert_eq!(gauge.held_records(), 400);
    drop(tx);
    let mut got = Vec::new();
    while let Some(d) = rx.recv().await {
        got.push(number(&d));
        d.accept();
    }
    let want: Vec<usize> = (600..1000).collect();
    assert_eq!(got, want);
    assert_eq!(
        m.value(
            "logferry_buffer_disk_replayed_records_total",
            &[("component", "s")]
        ),
        400
    );
    assert_eq!(gauge.held_records(), 0);
}

#[tokio::test]
async fn a_rejected_delivery_comes_again_after_a_backoff() {
    tokio::time::pause();
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    send_acked(&tx, 0..2).await;
    rx.recv().await.unwrap().reject();
    drop(rx.recv().await.unwrap()); // dropped unsettled: rejected too
    assert!(rx.try_recv().is_none(), "not before the backoff");
    let again = rx.recv().await.unwrap();
    assert_eq!(number(&again), 0);
    again.accept();
    let again = rx.recv().await.unwrap();
    assert_eq!(number(&again), 1);
    again.accept();
    assert_eq!(
        m.value(
            "logferry_buffer_disk_retried_records_total",
            &[("component", "s")]
        ),
        2
    );
    assert_eq!(tx.gauge().held_records(), 0);
}

fn frames_file(dir: &Path) -> PathBuf {
    dir.join(segment::file_name(segment::list(dir).unwrap()[0]))
}

#[tokio::test]
async fn a_torn_tail_is_quarantined_and_the_rest_delivered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (tx, _rx) = open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
        send_acked(&tx, 0..10).await;
    }
    let path = frames_file(dir.path());
    let len = fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    drop(tx);
    let mut got = Vec::new();
    while let Some(d) = rx.recv().await {
        got.push(number(&d));
        d.accept();
    }
    assert_eq!(got, (0..9).collect::<Vec<_>>());
    let l = &[("component", "s")];
    assert_eq!(m.value("logferry_buffer_quarantined_frames_total", l), 1);
    let q = m.value("logferry_buffer_quarantined_bytes_total", l);
    let frame_len = format::encode(&numbered(9), EventTime::default())
        .unwrap()
        .len() as u64;
    assert_eq!(q, frame_len - 5);
    let quarantined = dir.path().join("quarantine");
    let files: Vec<_> = fs::read_dir(&quarantined).unwrap().collect();
    assert_eq!(files.len(), 1);
    assert!(
        inspect::check(dir.path()).unwrap().is_empty(),
        "rewritten clean"
    );
}

#[tokio::test]
async fn a_corrupt_frame_in_the_middle_does_not_stop_the_frames_after_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (tx, _rx) = open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
        send_acked(&tx, 0..10).await;
    }
    let path = frames_file(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    let frame_len = format::encode(&numbered(0), EventTime::default())
        .unwrap()
        .len();
    let fourth = SEGMENT_HEADER + 4 * frame_len;
    bytes[fourth + frame_len - 2] ^= 0x55;
    fs::write(&path, &bytes).unwrap();
    let damage = inspect::check(dir.path()).unwrap();
    assert_eq!(damage.len(), 1);
    assert_eq!(damage[0].damage.range.start, fourth);
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    drop(tx);
    let mut got = Vec::new();
    while let Some(d) = rx.recv().await {
        got.push(number(&d));
        d.accept();
    }
    assert_eq!(got, [0, 1, 2, 3, 5, 6, 7, 8, 9]);
    let l = &[("component", "s")];
    assert_eq!(
        m.value("logferry_buffer_quarantined_bytes_total", l),
        frame_len as u64
    );
    let q = fs::read(dir.path().join("quarantine").join(format!(
        "{}.damaged",
        path.file_name().unwrap().to_str().unwrap()
    )))
    .unwrap();
    assert_eq!(q, bytes[fourth..fourth + frame_len]);
}

#[tokio::test]
async fn a_full_disk_holds_the_sender_back_until_space_returns() {
    tokio::time::pause();
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    send_acked(&tx, 0..1).await;
    let disk = shared(&tx);
    let before = disk.disk_bytes();
    disk.set_full(true);
    let (otx, orx) = std_mpsc::channel();
    let sending = tokio::spawn({
        let tx = tx.clone();
        async move {
            tx.send(numbered(1).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())))
                .await
        }
    });
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !sending.is_finished(),
        "the send waits while the disk is full"
    );
    assert!(orx.try_recv().is_err(), "and is not acknowledged");
    let errors = m.value(
        "logferry_buffer_disk_write_errors_total",
        &[("component", "s")],
    );
    assert!(
        errors >= 3,
        "retried with a backoff, each counted: {errors}"
    );
    assert_eq!(disk.disk_bytes(), before);
    let seg = frames_file(dir.path());
    assert_eq!(
        fs::metadata(&seg).unwrap().len(),
        before,
        "no partial frame is left in the segment"
    );
    disk.set_full(false);
    sending.await.unwrap().unwrap();
    assert_eq!(orx.try_recv(), Ok(AckOutcome::Accepted));
    for i in 0..2 {
        let d = rx.recv().await.unwrap();
        assert_eq!(number(&d), i);
        d.accept();
    }
}

#[tokio::test]
async fn max_bytes_blocks_until_frames_are_delivered() {
    tokio::time::pause();
    let dir = tempfile::tempdir().unwrap();
    let frame_len = format::encode(&numbered(0), EventTime::default())
        .unwrap()
        .len();
    // room for the header and a handful of frames
    let max = SEGMENT_HEADER + 4 * frame_len;
    let (tx, mut rx) = open(dir.path(), max, 1 << 20, &Registry::new());
    send_acked(&tx, 0..4).await;
    let sending = tokio::spawn({
        let tx = tx.clone();
        async move { tx.send(numbered(4)).await }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!sending.is_finished(), "blocked by max_bytes");
    for i in 0..4 {
        let d = rx.recv().await.unwrap();
        assert_eq!(number(&d), i);
        d.accept();
    }
    sending.await.unwrap().unwrap();
    assert_eq!(number(&rx.recv().await.unwrap()), 4);
}

#[tokio::test]
async fn drop_newest_counts_and_rejects_when_full() {
    let dir = tempfile::tempdir().unwrap();
    let frame_len = format::encode(&numbered(0), EventTime::default())
        .unwrap()
        .len();
    let mut c = config(dir.path(), SEGMENT_HEADER + frame_len, 1 << 20);
    c.when_full = WhenFull::DropNewest;
    let m = Registry::new();
    let (tx, _rx) = open_queue("s", c, &m).unwrap();
    send_acked(&tx, 0..1).await;
    let (otx, orx) = std_mpsc::channel();
    tx.send(numbered(1).with_ack(AckHandle::new(move |o| otx.send(o).unwrap())))
        .await
        .unwrap();
    assert_eq!(orx.try_recv(), Ok(AckOutcome::Rejected));
    assert_eq!(m.value("logferry_buffer_dropped_records_total", &[]), 1);
}

#[tokio::test]
async fn undelivered_records_at_a_stop_are_counted_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    {
        let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
        send_acked(&tx, 0..5).await;
        drop(tx);
        rx.recv().await.unwrap().accept();
        drop(rx.recv().await.unwrap()); // the sink gave up at drain_timeout
    }
    assert_eq!(
        m.value(
            "logferry_buffer_disk_kept_records_total",
            &[("component", "s")]
        ),
        4
    );
    let (_tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
    assert_eq!(number(&rx.recv().await.unwrap()), 1);
}

/// What is kept is counted when the sink is done, though a router still
/// holds a sender: the final counters, read right after, include it.
#[tokio::test]
async fn what_is_kept_is_counted_when_the_sink_is_done_whoever_holds_a_sender() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    send_acked(&tx, 0..3).await;
    tx.close();
    let end = rx.end();
    rx.recv().await.unwrap().accept();
    drop(rx.recv().await.unwrap()); // the sink gave up at drain_timeout
    drop(rx);
    let kept = || {
        m.value(
            "logferry_buffer_disk_kept_records_total",
            &[("component", "s")],
        )
    };
    assert_eq!(kept(), 0, "nothing is counted while the sink may still run");
    end.sink_done();
    assert_eq!(kept(), 2);
    drop(tx);
    assert_eq!(kept(), 2, "counted once");
}

#[tokio::test]
async fn one_directory_serves_one_buffer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
    let err = open_queue("s", config(dir.path(), 1 << 20, 1 << 20), &Registry::new())
        .err()
        .unwrap();
    assert!(err.contains("in use by another sink"), "{err}");
    drop(first);
    open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
}

#[tokio::test]
async fn fsync_always_acknowledges_once_synced() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), 1 << 20, 1 << 20);
    c.fsync = Fsync::Always;
    let (tx, mut rx) = open_queue("s", c, &Registry::new()).unwrap();
    send_acked(&tx, 0..3).await;
    for i in 0..3 {
        let d = rx.recv().await.unwrap();
        assert_eq!(number(&d), i);
        d.accept();
    }
}

#[tokio::test]
async fn damage_in_the_cursor_segment_keeps_the_undelivered_frames() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
        send_acked(&tx, 0..6).await;
        for _ in 0..2 {
            rx.recv().await.unwrap().accept();
        }
    }
    // damage frame 4, after the cursor (which is at frame 2)
    let path = frames_file(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    let flen = format::encode(&numbered(0), EventTime::default())
        .unwrap()
        .len();
    bytes[SEGMENT_HEADER + 4 * flen + flen - 1] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &Registry::new());
    drop(tx);
    let mut got = Vec::new();
    while let Some(d) = rx.recv().await {
        got.push(number(&d));
        d.accept();
    }
    assert_eq!(got, [2, 3, 5]);
}

#[tokio::test]
async fn damage_found_while_running_is_quarantined_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    let gauge = tx.gauge();
    send_acked(&tx, 0..5).await;
    let flen = format::encode(&numbered(0), EventTime::default())
        .unwrap()
        .len();
    let f = OpenOptions::new()
        .write(true)
        .open(frames_file(dir.path()))
        .unwrap();
    f.write_all_at(b"\xff", (SEGMENT_HEADER + 2 * flen + flen - 1) as u64)
        .unwrap();
    // a reader that has fallen behind reads the disk, not the fresh frames
    shared(&tx).forget_fresh();
    drop(tx);
    let mut got = Vec::new();
    while let Some(d) = rx.recv().await {
        got.push(number(&d));
        d.accept();
    }
    assert_eq!(got, [0, 1, 3, 4]);
    assert_eq!(gauge.held_bytes(), 0, "skipped bytes are not held");
    let l = &[("component", "s")];
    assert_eq!(m.value("logferry_buffer_quarantined_frames_total", l), 1);
    assert_eq!(
        m.value("logferry_buffer_quarantined_bytes_total", l),
        flen as u64
    );
}

#[tokio::test]
async fn a_sink_that_keeps_up_takes_fresh_frames_from_memory_and_a_restart_reads_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    {
        let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
        send_acked(&tx, 0..3).await;
        // the disk copy of frame 1 is damaged after it was written: the
        // sink still gets it intact, from memory
        let flen = format::encode(&numbered(0), EventTime::default())
            .unwrap()
            .len();
        let f = OpenOptions::new()
            .write(true)
            .open(frames_file(dir.path()))
            .unwrap();
        f.write_all_at(b"\xff", (SEGMENT_HEADER + flen + flen - 1) as u64)
            .unwrap();
        let d = rx.recv().await.unwrap();
        assert_eq!(number(&d), 0);
        d.accept();
        let d = rx.recv().await.unwrap();
        assert_eq!(number(&d), 1);
        drop(d); // not accepted: it stays for the next start
        shared(&tx).unlock_dir();
    }
    // after a restart only the disk is there: the damaged frame is
    // quarantined, frame 2 still comes
    let (_tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    let d = rx.recv().await.unwrap();
    assert_eq!(number(&d), 2);
}

#[tokio::test]
async fn records_on_disk_give_their_memory_budget_back_while_the_sink_cannot_deliver() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    let budget = crate::memory::MemoryBudget::new(1 << 20, &m);
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    for i in 0..100 {
        let (otx, orx) = std_mpsc::channel();
        let charge = budget.try_acquire(1000).unwrap();
        let batch = numbered(i)
            .with_memory(charge)
            .with_ack(AckHandle::new(move |o| otx.send(o).unwrap()));
        tx.send(batch).await.unwrap();
        assert_eq!(orx.try_recv(), Ok(AckOutcome::Accepted));
    }
    assert_eq!(budget.used(), 0, "acknowledged: on disk, not in the budget");
    // the sink takes some from the in-memory cache and cannot deliver them
    for _ in 0..10 {
        rx.recv().await.unwrap().reject();
    }
    assert_eq!(budget.used(), 0, "nor while the sink retries them");
    // the sink recovers: the rest, then the retried ones after a backoff
    let mut got = Vec::new();
    while got.len() < 100 {
        let d = rx.recv().await.unwrap();
        got.push(number(&d));
        d.accept();
    }
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<_>>(), "every record, once");
}

#[tokio::test]
async fn fsync_always_syncs_the_directory_when_segments_come_and_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), 1 << 20, 1);
    c.fsync = Fsync::Always;
    let (tx, mut rx) = open_queue("s", c, &Registry::new()).unwrap();
    let opened = shared(&tx).dir_syncs();
    assert_eq!(opened, 1, "at open, after recovery");
    // every new segment's name is synced before its first frame is acked
    send_acked(&tx, 0..300).await;
    let segments = segment::list(dir.path()).unwrap().len() as u64;
    assert!(segments > 2, "rolled");
    assert_eq!(shared(&tx).dir_syncs(), opened + segments);
    // delivered segments go, and the next acknowledgement syncs that
    for _ in 0..300 {
        rx.recv().await.unwrap().accept();
    }
    assert_eq!(segment::list(dir.path()).unwrap().len(), 1);
    send_acked(&tx, 300..301).await;
    assert_eq!(shared(&tx).dir_syncs(), opened + segments + 1);
    // without `always`, nothing of the kind
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = open(dir.path(), 1 << 20, 1, &Registry::new());
    send_acked(&tx, 0..300).await;
    assert_eq!(shared(&tx).dir_syncs(), 0);
}

/// A batch a client waited for is acknowledged once it is on disk, so
/// what the sink reads back (from the in-memory cache, or from the disk
/// after a restart) is waited on by nobody: the sink may linger over it.
#[tokio::test]
async fn batches_read_back_from_a_disk_buffer_are_waited_on_by_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let m = Registry::new();
    {
        let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
        for i in 0..4 {
            let (otx, orx) = std_mpsc::channel();
            let batch = numbered(i)
                .with_ack(AckHandle::new(move |o| otx.send(o).unwrap()))
                .waited_on();
            tx.send(batch).await.unwrap();
            assert_eq!(orx.try_recv(), Ok(AckOutcome::Accepted), "on disk");
        }
        // the fresh frames come from memory
        for i in 0..2 {
            let d = rx.recv().await.unwrap();
            assert_eq!(number(&d), i);
            assert!(!d.batch().is_waited_on(), "batch {i} from the cache");
            d.accept();
        }
        shared(&tx).unlock_dir();
    }
    // after a restart, from the disk
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 20, &m);
    drop(tx);
    let mut got = Vec::new();
    while let Some(d) = rx.recv().await {
        assert!(
            !d.batch().is_waited_on(),
            "batch {} from the disk",
            number(&d)
        );
        got.push(number(&d));
        d.accept();
    }
    assert_eq!(got, vec![2, 3]);
}

/// A waker that counts its wakes.
struct Wakes(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_gathering_sink_is_woken_only_when_its_request_must_go_and_takes_the_rest_at_its_deadline(
) {
    use crate::buffer::Gathered;
    use crate::timer::Deadline;
    use std::future::Future;
    use std::task::Poll;
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = open(dir.path(), 1 << 20, 1 << 18, &Registry::new());
    let wakes = Arc::new(Wakes(Default::default()));
    let waker = std::task::Waker::from(wakes.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    let woken = || wakes.0.load(Ordering::SeqCst);
    let far = Instant::now() + Duration::from_secs(60);

    // 3 batches of a request that takes 4: written and acknowledged, no
    // wake-up; the fourth fills the request
    let mut timer = Deadline::new();
    let mut gather = Box::pin(rx.recv_until(&mut timer, far, 4, 1 << 20));
    assert!(gather.as_mut().poll(&mut cx).is_pending());
    send_acked(&tx, 0..3).await;
    assert_eq!(woken(), 0, "batches that do not fill the request");
    send_acked(&tx, 3..4).await;
    assert_eq!(woken(), 1);
    let Poll::Ready(Gathered::Batch(d)) = gather.as_mut().poll(&mut cx) else {
        panic!("the first batch")
    };
    assert_eq!(number(&d), 0);
    d.accept();
    drop(gather);
    let mut next = 1;
    while let Some(d) = rx.try_recv() {
        assert_eq!(number(&d), next);
        d.accept();
        next += 1;
    }
    assert_eq!(next, 4);

    // a batch that fills nothing is taken at the deadline, in order
    let soon = Instant::now() + Duration::from_millis(300);
    let mut timer = Deadline::new();
    let mut gather = Box::pin(rx.recv_until(&mut timer, soon, 100, 1 << 20));
    assert!(gather.as_mut().poll(&mut cx).is_pending());
    send_acked(&tx, 4..5).await;
    assert_eq!(woken(), 1, "no wake-up before the deadline");
    let Gathered::Batch(d) = gather.await else {
        panic!("the batch, at the deadline")
    };
    assert!(Instant::now() >= soon);
    assert_eq!(number(&d), 4);
    d.accept();

    // the senders' end wakes it at once
    let mut timer = Deadline::new();
    let mut gather = Box::pin(rx.recv_until(&mut timer, far, 100, 1 << 20));
    assert!(gather.as_mut().poll(&mut cx).is_pending());
    drop(tx);
    assert_eq!(woken(), 2, "closed");
    assert!(matches!(
        gather.as_mut().poll(&mut cx),
        Poll::Ready(Gathered::Closed)
    ));
}
