//! Batches between a filter and the sink queues, which nobody has given a
//! verdict yet. A sink queue settles what it takes ([`crate::buffer`]'s
//! `Delivery`), and a filter settles what it drops (as filtered); in
//! between, the router holds batches in lists: the filters' work, what is
//! left to send, and what a timer flushed for a sink that is not ready.
//! Dropped there (a stop's bounded hand-over giving up, a timer aborted by
//! a reload, a send error ending a loop), a batch is rejected, so its
//! sources send it again: an acknowledgement fires as accepted only once a
//! holder that settles it has taken the batch.

use std::collections::VecDeque;

use crate::event::Batch;

/// One batch on its way; rejected if dropped before [`Unsettled::take`].
pub struct Unsettled(Option<Batch>);

impl Unsettled {
    pub fn new(batch: Batch) -> Self {
        Unsettled(Some(batch))
    }

    /// The batch, for a holder that settles it.
    pub fn take(mut self) -> Option<Batch> {
        self.0.take()
    }
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.ack.reject();
        }
    }
}

/// The router's lists while it filters and sends: each batch still in
/// them when they are dropped is rejected.
#[derive(Default)]
pub(super) struct InTransit {
    /// (the index of the next filter to consider, a batch), popped from
    /// the end.
    pub(super) work: Vec<(usize, Batch)>,
    /// Batches past every filter, to be sent in this order.
    pub(super) done: VecDeque<Batch>,
}

impl Drop for InTransit {
    fn drop(&mut self) {
        for (_, b) in &self.work {
            b.ack.reject();
        }
        for b in &self.done {
            b.ack.reject();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::{AckHandle, AckOutcome};
    use crate::event::{EventTime, Records};
    use std::sync::mpsc;

    fn batch(tx: &mpsc::Sender<AckOutcome>) -> Batch {
        let tx = tx.clone();
        Batch::new(
            "t".into(),
            Records::Lines {
                data: bytes::Bytes::from_static(b"x\n"),
                time: EventTime::default(),
            },
            1,
        )
        .with_ack(AckHandle::new(move |o| tx.send(o).unwrap()))
    }

    #[test]
    fn a_batch_dropped_without_a_verdict_is_rejected() {
        let (tx, rx) = mpsc::channel();
        drop(Unsettled::new(batch(&tx)));
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Rejected));
        // taken by a holder that settles it: that holder's verdict counts
        drop(Unsettled::new(batch(&tx)).take());
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Accepted));

        let mut t = InTransit::default();
        t.work.push((0, batch(&tx)));
        t.done.push_back(batch(&tx));
        t.done.push_back(batch(&tx));
        drop(t.done.pop_front());
        assert_eq!(rx.try_recv(), Ok(AckOutcome::Accepted), "taken out");
        drop(t);
        assert_eq!(
            rx.try_iter().collect::<Vec<_>>(),
            [AckOutcome::Rejected, AckOutcome::Rejected]
        );
    }
}
