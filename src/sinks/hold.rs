//! A stand-in for a sink that cannot run: a reload whose new configuration
//! of a sink fails to start, and whose previous one no longer starts
//! either, leaves this in its place.

use tokio::sync::oneshot;

use super::StopSink;
use crate::buffer::QueueReceiver;

/// Holds every delivery of `rx` unsettled, so that records routed to a sink
/// that cannot run are neither lost nor acknowledged: its queue fills,
/// backpressure stops the sources that feed it, and the next reload hands
/// what it holds to the sink that replaces it (a stop rejects it to the
/// sources, which send it again after a restart). Resolves `done` once
/// stopped or once the queue has closed.
pub fn spawn_holding(mut rx: QueueReceiver) -> (oneshot::Receiver<()>, StopSink) {
    let (done_tx, done_rx) = oneshot::channel();
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut held = Vec::new();
        // a dropped `StopSink` stops nothing
        let mut stoppable = true;
        loop {
            tokio::select! {
                biased;
                stop = &mut stop_rx, if stoppable => match stop {
                    Ok(()) => break,
                    Err(_) => stoppable = false,
                },
                next = rx.recv() => match next {
                    Some(d) => held.push(d),
                    None => break,
                },
            }
        }
        // dropped unsettled: handed to a replacement, or rejected
        drop(held);
        drop(rx);
        let _ = done_tx.send(());
    });
    (done_rx, StopSink(stop_tx))
}
