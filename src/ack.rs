//! Delivery tracking from sinks back to the source of a batch.
//!
//! A source that cares (a forward connection that must answer `{"ack": …}`,
//! a tail source that advances a checkpoint) creates an [`AckHandle`] with a
//! callback. The router clones the handle into every copy of the batch it
//! hands to a sink. Each sink drops its copy once the records are durably
//! accepted (written to the file, delivered downstream, or later: written to
//! a disk buffer), or calls [`AckHandle::reject`] first if it could not keep
//! them. When the last copy is gone the callback runs exactly once with the
//! verdict: [`AckOutcome::Accepted`] only if no sink rejected.
//!
//! Tying the verdict to `Drop` means a batch that is lost on any path (a
//! panicking sink, a queue torn down at shutdown) can never be acknowledged
//! by accident: whoever drops it without accepting must reject, and the
//! queue does that on every path where a batch is discarded.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the source learns about a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// Every sink the batch was routed to has accepted it.
    Accepted,
    /// At least one sink dropped or failed it; the sender should resend.
    Rejected,
}

type Callback = Box<dyn FnOnce(AckOutcome) + Send>;

struct AckInner {
    rejected: AtomicBool,
    callback: Mutex<Option<Callback>>,
}

impl Drop for AckInner {
    fn drop(&mut self) {
        let cb = self.callback.get_mut().ok().and_then(Option::take);
        if let Some(cb) = cb {
            let outcome = if self.rejected.load(Ordering::Acquire) {
                AckOutcome::Rejected
            } else {
                AckOutcome::Accepted
            };
            cb(outcome);
        }
    }
}

/// A shared acknowledgement; see the module docs.
#[derive(Clone, Default)]
pub struct AckHandle(Option<Arc<AckInner>>);

impl fmt::Debug for AckHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("AckHandle(none)"),
            Some(i) => write!(
                f,
                "AckHandle(rejected={})",
                i.rejected.load(Ordering::Relaxed)
            ),
        }
    }
}

impl AckHandle {
    /// A handle nobody waits on.
    pub fn none() -> Self {
        AckHandle(None)
    }

    /// A handle whose `callback` runs once every clone is dropped.
    pub fn new(callback: impl FnOnce(AckOutcome) + Send + 'static) -> Self {
        AckHandle(Some(Arc::new(AckInner {
            rejected: AtomicBool::new(false),
            callback: Mutex::new(Some(Box::new(callback))),
        })))
    }

    /// Marks the batch as not accepted by this holder. The verdict is
    /// delivered when the last clone is dropped.
    pub fn reject(&self) {
        if let Some(i) = &self.0 {
            i.rejected.store(true, Ordering::Release);
        }
    }

    /// True if some source is waiting on this handle.
    pub fn is_tracked(&self) -> bool {
        self.0.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn fires_once_after_every_clone_is_dropped() {
        let (tx, rx) = mpsc::channel();
        let h = AckHandle::new(move |o| tx.send(o).unwrap());
        let a = h.clone();
        let b = h.clone();
        drop(h);
        drop(a);
        assert!(rx.try_recv().is_err(), "one sink still holds the batch");
        drop(b);
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Accepted));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn one_rejection_rejects_the_batch() {
        let (tx, rx) = mpsc::channel();
        let h = AckHandle::new(move |o| tx.send(o).unwrap());
        let other = h.clone();
        other.reject();
        drop(other);
        drop(h);
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    }
}
