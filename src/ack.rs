//! Delivery tracking from sinks back to the source of a batch.
//!
//! A source that cares (a forward connection that must answer `{"ack": …}`,
//! a tail source that advances a checkpoint) creates an [`AckHandle`] with a
//! callback. The router clones the handle into every copy of the batch it
//! hands to a sink. Each sink drops its copy once the records are durably
//! accepted (written to the file, delivered downstream, or later: written to
//! a disk buffer), or calls [`AckHandle::reject`] first if it could not keep
//! them. When the last copy is gone the callback runs exactly once with the
//! verdict: [`AckOutcome::Accepted`] only if no sink rejected, and
//! [`AckOutcome::Refused`] when a sink set records aside for good (a
//! record the destination can never take: dead-lettered, or dropped and
//! logged), so the source moves past them instead of sending them again.
//!
//! Tying the verdict to `Drop` means a batch that is lost on any path (a
//! panicking sink, a queue torn down at shutdown) can never be acknowledged
//! by accident: whoever drops it without accepting must reject, and the
//! queue does that on every path where a batch is discarded. So does the
//! router for batches on their way from a filter to the queues (records a
//! multiline filter flushes, waiting for a full queue or a stop's bounded
//! hand-over): a batch dropped there without a verdict is rejected, never
//! accepted (`router::transit`).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the source learns about a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckOutcome {
    /// Every sink the batch was routed to has accepted it.
    Accepted,
    /// At least one sink dropped or failed it; the sender should resend.
    Rejected,
    /// Every sink is done with the batch, but some of its records could
    /// never be taken by a destination: they were set aside (see the
    /// [`Refusal`]). Sending them again cannot help; the source moves on.
    Refused(Arc<Refusal>),
}

impl AckOutcome {
    /// The sinks are done with the batch (kept, or set aside for good):
    /// the source moves past it. False only for [`AckOutcome::Rejected`].
    pub fn is_done(&self) -> bool {
        !matches!(self, AckOutcome::Rejected)
    }
}

/// The `kind` of a refusal for a record's size (an HTTP client is answered
/// 413 for it, 422 for any other kind).
pub const TOO_LARGE: &str = "message_too_large";

/// Records of a batch that a sink's destination can never take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The sink that set them aside.
    pub sink: Arc<str>,
    /// Why, as a stable low-cardinality name (`message_too_large`, …).
    pub kind: &'static str,
    /// What happened and what to do about it.
    pub message: String,
    /// How many of the batch's records were set aside.
    pub records: usize,
    /// The first bytes of the first of them, as text, to find it by.
    pub first: String,
    /// Kept in the sink's dead-letter file (else dropped, logged, counted).
    pub dead_lettered: bool,
}

impl Refusal {
    /// The records were refused for their size.
    pub fn too_large(&self) -> bool {
        self.kind == TOO_LARGE
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sink {} can never take {} record(s) ({}: {}); {}; the first begins {:?}",
            self.sink,
            self.records,
            self.kind,
            self.message,
            if self.dead_lettered {
                "kept in its dead-letter file"
            } else {
                "dropped"
            },
            self.first
        )
    }
}

/// What the handles of one acknowledgement share, its callback `C` inline:
/// an acknowledgement is one allocation, made by the source and freed by
/// whichever holder (often a sink's thread) lets go last.
struct AckInner<C: ?Sized + Fire> {
    rejected: AtomicBool,
    /// A client waits for this acknowledgement ([`AckHandle::mark_waited_on`]).
    waited_on: AtomicBool,
    /// The refusals of every sink, if records were set aside (rare: kept
    /// out of line, so that the acknowledgement of every batch stays small).
    refused: Mutex<Option<Box<Refused>>>,
    callback: C,
}

/// An acknowledgement's callback, run once, when its last handle goes.
trait Fire: Send + Sync {
    fn fire(&mut self, outcome: AckOutcome);
}

/// A callback not run yet (the mutex makes it shareable; it is only ever
/// taken through `&mut`, without locking).
struct Once<F>(Mutex<Option<F>>);

impl<F: FnOnce(AckOutcome) + Send> Fire for Once<F> {
    fn fire(&mut self, outcome: AckOutcome) {
        let f = self.0.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(f) = f {
            f(outcome);
        }
    }
}

/// The refusals of a batch's records by its sinks.
#[derive(Default)]
struct Refused {
    /// The first, which the outcome describes.
    first: Option<Refusal>,
    /// Records refused, by sink.
    by_sink: Vec<(Arc<str>, usize)>,
}

impl Refused {
    /// The first refusal, counting the records of the sink that refused most.
    fn outcome(self) -> Option<Refusal> {
        let most = self.by_sink.iter().map(|(_, n)| *n).max()?;
        self.first.map(|r| Refusal { records: most, ..r })
    }
}

impl<C: ?Sized + Fire> Drop for AckInner<C> {
    fn drop(&mut self) {
        let refused = self.refused.get_mut().unwrap_or_else(|e| e.into_inner());
        let refused = refused.take().and_then(|r| r.outcome());
        let outcome = match (self.rejected.load(Ordering::Acquire), refused) {
            (true, _) => AckOutcome::Rejected,
            (false, Some(r)) => AckOutcome::Refused(Arc::new(r)),
            (false, None) => AckOutcome::Accepted,
        };
        self.callback.fire(outcome);
    }
}

/// A shared acknowledgement; see the module docs.
#[derive(Clone, Default)]
pub struct AckHandle(Option<Arc<AckInner<dyn Fire>>>);

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
        let inner: Arc<AckInner<dyn Fire>> = Arc::new(AckInner {
            rejected: AtomicBool::new(false),
            waited_on: AtomicBool::new(false),
            refused: Mutex::new(None),
            callback: Once(Mutex::new(Some(callback))),
        });
        AckHandle(Some(inner))
    }

    /// Marks the batch as not accepted by this holder. The verdict is
    /// delivered when the last clone is dropped.
    pub fn reject(&self) {
        if let Some(i) = &self.0 {
            i.rejected.store(true, Ordering::Release);
        }
    }

    /// Marks records of the batch as set aside for good by one sink; the
    /// outcome is [`AckOutcome::Refused`] unless another holder rejects.
    ///
    /// The outcome describes the first refusal, with the number of records
    /// refused: a sink's refusals of one batch are of different records
    /// (they add up); another sink's may be of the same ones, so the count
    /// is the largest of any sink (at least that many were not kept).
    pub fn refuse(&self, refusal: Refusal) {
        if let Some(i) = &self.0 {
            let mut slot = i.refused.lock().unwrap_or_else(|e| e.into_inner());
            let refused = slot.get_or_insert_with(Box::default);
            match refused.by_sink.iter_mut().find(|(s, _)| *s == refusal.sink) {
                Some((_, n)) => *n += refusal.records,
                None => refused
                    .by_sink
                    .push((refusal.sink.clone(), refusal.records)),
            }
            refused.first.get_or_insert(refusal);
        }
    }

    /// True if some source is waiting on this handle.
    pub fn is_tracked(&self) -> bool {
        self.0.is_some()
    }

    /// Marks that a client is waiting for this acknowledgement right now
    /// (an HTTP request answered after the sinks, a forward chunk with an
    /// ack), so sinks send its batch without lingering. Every clone sees
    /// it; a handle that tracks nothing stays waited on by nobody.
    pub fn mark_waited_on(&self) {
        if let Some(i) = &self.0 {
            // the batch reaches its sinks through channels, which order
            // this store before their loads
            i.waited_on.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a client waits for this acknowledgement.
    pub fn is_waited_on(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|i| i.waited_on.load(Ordering::Relaxed))
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

    fn refusal(sink: &str) -> Refusal {
        Refusal {
            sink: sink.into(),
            kind: "message_too_large",
            message: "over 1000000 bytes".into(),
            records: 1,
            first: "x".into(),
            dead_lettered: false,
        }
    }

    #[test]
    fn a_refusal_settles_the_batch_unless_another_sink_rejects() {
        let (tx, rx) = mpsc::channel();
        let h = AckHandle::new(move |o| tx.send(o).unwrap());
        let other = h.clone();
        h.refuse(refusal("kafka"));
        drop(h);
        drop(other);
        let got = rx.try_recv().unwrap();
        assert!(got.is_done());
        assert!(
            matches!(&got, AckOutcome::Refused(r) if &*r.sink == "kafka"),
            "{got:?}"
        );

        let (tx, rx) = mpsc::channel();
        let h = AckHandle::new(move |o| tx.send(o).unwrap());
        let other = h.clone();
        h.refuse(refusal("kafka"));
        other.reject();
        drop((h, other));
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
    }

    #[test]
    fn refused_records_add_up_by_sink_and_the_most_any_sink_refused_is_told() {
        let (tx, rx) = mpsc::channel();
        let h = AckHandle::new(move |o| tx.send(o).unwrap());
        // the opensearch sink refuses three records of the batch, one by one
        for _ in 0..3 {
            h.refuse(refusal("opensearch"));
        }
        // the kafka sink two (perhaps the same ones)
        h.refuse(Refusal {
            records: 2,
            ..refusal("kafka")
        });
        drop(h);
        match rx.try_recv().unwrap() {
            AckOutcome::Refused(r) => {
                assert_eq!(&*r.sink, "opensearch", "the first refusal is described");
                assert_eq!(r.records, 3);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_a_record_too_large_for_its_destination_is_refused_for_its_size() {
        assert!(refusal("kafka").too_large());
        // a file over the file system's limit is not the record's size
        let file = Refusal {
            kind: "file_too_large",
            ..refusal("file")
        };
        assert!(!file.too_large());
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
