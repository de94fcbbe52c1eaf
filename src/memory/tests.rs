use std::time::Duration;

use super::*;

const KIB: usize = 1024;

fn budget(limit: usize) -> (MemoryBudget, Registry) {
    let r = Registry::new();
    (MemoryBudget::new(limit, &r), r)
}

/// Polls `f` once: `Some` if it finished without waiting.
async fn now<F: std::future::Future>(f: F) -> Option<F::Output> {
    tokio::time::timeout(Duration::from_millis(50), f)
        .await
        .ok()
}

#[tokio::test]
async fn acquire_and_release_keep_the_count() {
    let (b, r) = budget(100 * KIB);
    let a = b.try_acquire(60 * KIB).expect("room");
    assert_eq!(b.used(), 60 * KIB);
    assert!(b.try_acquire(50 * KIB).is_none(), "over the budget");
    let c = b.acquire(0, 40 * KIB, "t").await;
    assert_eq!(b.used(), 100 * KIB);
    assert_eq!(r.value("logferry_memory_used_bytes", &[]), 100 * KIB as u64);
    assert_eq!(
        r.value("logferry_memory_budget_bytes", &[]),
        100 * KIB as u64
    );
    drop(a);
    drop(c);
    assert_eq!(b.used(), 0);
    assert_eq!(r.value("logferry_memory_used_bytes", &[]), 0);
    assert!(r
        .render()
        .contains("# TYPE logferry_memory_used_bytes gauge"));
    assert!(b.try_acquire(100 * KIB).is_some(), "everything came back");
}

#[tokio::test]
async fn split_merge_and_shrink_return_exactly_what_was_charged() {
    let (b, _) = budget(100 * KIB);
    let mut held = b.try_acquire(30 * KIB).unwrap();
    held.merge(b.try_acquire(20 * KIB).unwrap());
    assert_eq!(held.bytes(), 50 * KIB);
    let frame = held.split(10 * KIB);
    assert_eq!((held.bytes(), frame.bytes()), (40 * KIB, 10 * KIB));
    held.shrink_to(15 * KIB);
    assert_eq!(b.used(), 25 * KIB);
    let shared = frame.shared();
    let copy = shared.clone();
    drop(shared);
    assert_eq!(b.used(), 25 * KIB, "one copy still holds the frame");
    drop(copy);
    assert_eq!(b.used(), 15 * KIB);
    drop(held);
    assert_eq!(b.used(), 0);
    assert!(b.try_acquire(100 * KIB).is_some(), "every permit came back");
}

#[tokio::test]
async fn a_waiter_is_woken_when_bytes_come_back() {
    let (b, r) = budget(100 * KIB);
    let first = b.try_acquire(90 * KIB).unwrap();
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.acquire(0, 50 * KIB, "t").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiter.is_finished(),
        "no room yet: the source does not read"
    );
    assert_eq!(r.value("logferry_memory_waits_total", &[]), 1);
    drop(first);
    let got = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(got.bytes(), 50 * KIB);
    assert_eq!(b.used(), 50 * KIB);
}

#[tokio::test]
async fn a_request_larger_than_the_budget_goes_alone() {
    let (b, _) = budget(100 * KIB);
    let small = b.try_acquire(10 * KIB).unwrap();
    let b2 = b.clone();
    let big = tokio::spawn(async move { b2.acquire(0, 300 * KIB, "t").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!big.is_finished(), "waits until nothing else is charged");
    // FIFO: a small request queued behind the big one does not overtake it
    let b3 = b.clone();
    let behind = tokio::spawn(async move { b3.acquire(0, KIB, "t").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!behind.is_finished());
    drop(small);
    let big = tokio::time::timeout(Duration::from_secs(5), big)
        .await
        .expect("the big request makes progress")
        .unwrap();
    assert_eq!(b.used(), 300 * KIB, "alone, over the budget");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !behind.is_finished(),
        "the budget is over-used until the big one is done"
    );
    drop(big);
    let behind = tokio::time::timeout(Duration::from_secs(5), behind)
        .await
        .expect("then the rest")
        .unwrap();
    assert_eq!(behind.bytes(), KIB);
}

/// Two readers each hold half a frame and need the other half: without the
/// overdraft they would wait on each other for ever.
#[tokio::test]
async fn readers_holding_partial_frames_never_wait_on_each_other_for_ever() {
    let (b, r) = budget(100 * KIB);
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let held = b.try_acquire(50 * KIB).unwrap();
        let b = b.clone();
        tasks.push(tokio::spawn(async move {
            let more = b.acquire(held.bytes(), 50 * KIB, "t").await;
            // the frame is complete: it is written and both go
            drop(more);
            drop(held);
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .expect("no deadlock")
            .unwrap();
    }
    assert_eq!(b.used(), 0);
    assert_eq!(
        r.value("logferry_memory_overdrafts_total", &[]),
        1,
        "one went over, the other then fit"
    );
    assert!(b.try_acquire(100 * KIB).is_some(), "every permit came back");
}

/// A reader holding part of a frame does not go over the budget while
/// bytes that will come back (a batch in a queue) are in use.
#[tokio::test]
async fn no_overdraft_while_a_batch_can_still_return_bytes() {
    let (b, r) = budget(100 * KIB);
    let queued = b.try_acquire(60 * KIB).unwrap();
    let held = b.try_acquire(40 * KIB).unwrap();
    let b2 = b.clone();
    let reader = tokio::spawn(async move { b2.acquire(held.bytes(), 50 * KIB, "t").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!reader.is_finished(), "waits for the queued batch");
    drop(queued);
    let more = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(more.bytes(), 50 * KIB);
    assert_eq!(r.value("logferry_memory_overdrafts_total", &[]), 0);
    assert!(b.used() <= 100 * KIB);
}

#[tokio::test]
async fn a_cancelled_waiter_leaves_nothing_behind() {
    let (b, _) = budget(100 * KIB);
    let held = b.try_acquire(100 * KIB).unwrap();
    let queued = b.clone();
    assert!(now(b.acquire(0, 10 * KIB, "t")).await.is_none());
    assert!(
        now(queued.acquire(held.bytes(), 10 * KIB, "t"))
            .await
            .is_some(),
        "alone and stuck: goes over"
    );
    drop(held);
    assert_eq!(b.used(), 0);
    assert!(b.try_acquire(100 * KIB).is_some());
}

/// One connection holds part of a frame and waits for its client, who is
/// blocked writing to another connection that waits for budget: the
/// waiter goes over the budget instead of both waiting for ever.
#[tokio::test]
async fn a_partial_frame_waiting_for_its_client_does_not_block_the_budget_for_ever() {
    let (b, r) = budget(100 * KIB);
    let partial = b.try_acquire(100 * KIB).unwrap();
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { b2.acquire(0, 16 * KIB, "t").await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiter.is_finished(),
        "the partial frame's reader is not waiting yet"
    );
    let idle = b.waiting_on_input(partial.bytes());
    let got = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("no deadlock")
        .unwrap();
    assert_eq!(got.bytes(), 16 * KIB);
    assert_eq!(r.value("logferry_memory_overdrafts_total", &[]), 1);
    drop(idle);
    drop((got, partial));
    assert_eq!(b.used(), 0);
    assert!(b.try_acquire(100 * KIB).is_some());
}
