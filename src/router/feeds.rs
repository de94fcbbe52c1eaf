//! What filters flush on their own (multiline's flush timeout, the stop)
//! goes to each sink through a feed of its own: one small task per sink
//! that hands the batches to that sink's queue in order. A sink whose
//! queue is full (its destination down) holds up only what is bound for
//! it; held records for every other sink go out at their deadline.
//!
//! The timer that flushes never waits for a queue: it puts each batch in
//! the feeds of the sinks its tag matches and goes on. What a feed still
//! has when it is dropped or aborted is rejected ([`Unsettled`]), so its
//! sources send it again.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc;

use super::transit::Unsettled;
use super::RouteTable;
use crate::buffer::QueueSender;
use crate::event::Batch;

/// The feeds of one route table's sinks, started as batches come for them.
#[derive(Default)]
pub struct SinkFeeds {
    /// The route table generation the feeds send to: a reload's new
    /// routes get new feeds, and the old ones end once they are empty
    /// (their queues were closed or handed over by the reload).
    generation: u64,
    /// By route index in that table.
    feeds: HashMap<usize, Feed>,
}

/// One sink's feed.
struct Feed {
    tx: mpsc::UnboundedSender<Unsettled>,
    task: tokio::task::JoinHandle<()>,
}

impl Feed {
    fn start(queue: QueueSender) -> Feed {
        let (tx, mut rx) = mpsc::unbounded_channel::<Unsettled>();
        let task = tokio::spawn(async move {
            while let Some(next) = rx.recv().await {
                if let Some(batch) = next.take() {
                    // an error is a queue closed (a reload or the stop):
                    // the queue rejected the batch
                    let _ = queue.send(batch).await;
                }
            }
        });
        Feed { tx, task }
    }
}

impl SinkFeeds {
    /// Lets go of the feeds of an older route table.
    pub(super) fn follow(&mut self, table: &RouteTable) {
        if table.generation != self.generation {
            self.feeds.clear();
            self.generation = table.generation;
        }
    }

    /// Puts `batch` in the feeds of routes `targets` of `table` (one copy
    /// each, sharing the acknowledgement).
    pub(super) fn push(&mut self, table: &RouteTable, targets: &[usize], batch: Batch) {
        self.follow(table);
        let Some((&last, rest)) = targets.split_last() else {
            return;
        };
        for &i in rest {
            self.feed(table, i, batch.clone());
        }
        self.feed(table, last, batch);
    }

    fn feed(&mut self, table: &RouteTable, route: usize, batch: Batch) {
        let Some(r) = table.routes.get(route) else {
            batch.ack.reject();
            return;
        };
        let feed = self
            .feeds
            .entry(route)
            .or_insert_with(|| Feed::start(r.queue.clone()));
        // a feed whose task has ended gives the batch back: rejected as it drops
        let _ = feed.tx.send(Unsettled::new(batch));
    }

    /// Waits for every feed to hand over what it was given, for at most
    /// `bound`; true if they did. Past it, what they still hold (and the
    /// batch each is trying to queue) is rejected.
    pub async fn finish(self, bound: Duration) -> bool {
        let tasks: Vec<_> = self
            .feeds
            .into_values()
            .map(|f| {
                drop(f.tx);
                f.task
            })
            .collect();
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        let all = async {
            for t in tasks {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(bound, all).await.is_ok() {
            return true;
        }
        for a in aborts {
            a.abort();
        }
        false
    }
}
