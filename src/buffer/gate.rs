//! What lets a sink that gathers a request sleep through the batches
//! handed to it meanwhile. A sink waiting for its queue is woken by every
//! batch; one that lingers for more (a request of a slow flow) needs to
//! be woken only when its request must go: a batch whose client waits for
//! the acknowledgement, enough records or bytes to fill the request, a
//! queue past half full, or the queue's end. Every other batch stays queued, and the
//! sink takes it at its linger's end with no thread woken for it.

use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Shared by a memory queue's senders and its receiver.
#[derive(Debug, Default)]
pub struct Gate {
    /// Set while the receiver gathers; senders ring only then.
    gathering: AtomicBool,
    /// Records and bytes that complete the receiver's request.
    want_records: AtomicUsize,
    want_bytes: AtomicUsize,
    /// Records and bytes sent since the receiver began to gather.
    came_records: AtomicUsize,
    came_bytes: AtomicUsize,
    bell: Notify,
}

impl Gate {
    /// The receiver gathers from now on, until [`Gate::disarm`]: it is
    /// woken once `records` or `bytes` more have come, or by
    /// [`Gate::ring`]. The receiver looks at its queue again after this:
    /// a batch sent just before did not ring.
    pub fn arm(&self, records: usize, bytes: usize) {
        self.want_records.store(records.max(1), Ordering::Relaxed);
        self.want_bytes.store(bytes.max(1), Ordering::Relaxed);
        self.came_records.store(0, Ordering::Relaxed);
        self.came_bytes.store(0, Ordering::Relaxed);
        self.gathering.store(true, Ordering::SeqCst);
        // pairs with the fence in `sent`: the receiver's next look at the
        // queue sees a batch sent before, or that sender sees this flag
        fence(Ordering::SeqCst);
    }

    pub fn disarm(&self) {
        self.gathering.store(false, Ordering::SeqCst);
    }

    /// A batch of `records` and `bytes` was queued; `now`: the receiver
    /// must take it now (its client waits for the acknowledgement, or the
    /// queue is filling up).
    pub fn sent(&self, records: usize, bytes: usize, now: bool) {
        fence(Ordering::SeqCst);
        if !self.gathering.load(Ordering::SeqCst) {
            return;
        }
        let r = self.came_records.fetch_add(records, Ordering::Relaxed) + records;
        let b = self.came_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if now
            || r >= self.want_records.load(Ordering::Relaxed)
            || b >= self.want_bytes.load(Ordering::Relaxed)
        {
            self.ring();
        }
    }

    /// Wakes a gathering receiver now (a full queue, its end); a receiver
    /// not waiting yet finds the ring when it waits.
    pub fn ring(&self) {
        if self.gathering.load(Ordering::SeqCst) {
            self.bell.notify_one();
        }
    }

    /// Resolves at the next ring (or one that came since the last wait).
    pub fn rung(&self) -> tokio::sync::futures::Notified<'_> {
        self.bell.notified()
    }
}

/// A sender's hold on the gate. Declared after the sender's end of the
/// channel, it is dropped after it and rings: a receiver gathering finds
/// the queue's end (its last sender gone) at once, not at its deadline.
#[derive(Debug, Clone)]
pub struct SenderGate(pub Arc<Gate>);

impl std::ops::Deref for SenderGate {
    type Target = Gate;

    fn deref(&self) -> &Gate {
        &self.0
    }
}

impl Drop for SenderGate {
    fn drop(&mut self) {
        self.0.ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_rings_for_a_waited_batch_a_full_request_or_a_ring_only_while_armed() {
        let g = Gate::default();
        let rung = |g: &Gate| {
            let waker = futures_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            let mut f = std::pin::pin!(g.rung());
            f.as_mut().poll(&mut cx).is_ready()
        };
        use std::future::Future;
        // not armed: nothing rings
        g.sent(10, 1000, true);
        g.ring();
        assert!(!rung(&g));
        g.arm(5, 1000);
        g.sent(2, 100, false);
        g.sent(2, 100, false);
        assert!(!rung(&g), "4 of 5 records");
        g.sent(1, 100, false);
        assert!(rung(&g), "the fifth completes the request");
        g.arm(100, 300);
        g.sent(1, 200, false);
        assert!(!rung(&g));
        g.sent(1, 100, false);
        assert!(rung(&g), "300 bytes complete it");
        g.arm(100, 10_000);
        g.sent(1, 10, true);
        assert!(rung(&g), "a waited batch goes at once");
        g.arm(100, 10_000);
        g.ring();
        assert!(rung(&g));
        g.disarm();
        g.sent(1000, 100_000, true);
        assert!(!rung(&g), "disarmed");
    }

    fn futures_waker() -> std::task::Waker {
        struct Nothing;
        impl std::task::Wake for Nothing {
            fn wake(self: std::sync::Arc<Self>) {}
        }
        std::task::Waker::from(std::sync::Arc::new(Nothing))
    }
}
