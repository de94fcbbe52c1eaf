//! Requests that may wait run off the request threads.
//!
//! fuser serves the kernel with a few threads (`threads`), each handling
//! one request at a time; a handler that blocks stops that thread from
//! reading the next request. So a request whose work has to wait (for
//! room, for its descriptor, for acknowledgements) is a future: the request
//! thread polls it once, and if it is not done, hands it to a task on the
//! runtime, which replies when it is (fuser's replies may be sent from any
//! thread). A write that goes through at once costs no task.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio::time::Instant;

use super::fs::Shared;

impl Shared {
    /// Runs `work` and passes its result to `done`: on this thread if it
    /// finishes without waiting, otherwise in a task. `holds` is what the
    /// work keeps outside the memory budget while it waits (0: nothing;
    /// such requests are bounded by the descriptors they refer to); when
    /// waiting requests already hold their bound, this thread waits for
    /// room until `deadline`, and `done` gets `no_room` if none came.
    pub(super) fn run<O: Send + 'static>(
        self: &Arc<Self>,
        work: impl Future<Output = O> + Send + 'static,
        holds: usize,
        deadline: Instant,
        no_room: O,
        done: impl FnOnce(O) + Send + 'static,
    ) {
        let runtime = self.pipeline.runtime();
        let mut work = Box::pin(work);
        let polled = {
            // timers and the like need the runtime at hand
            let _in_runtime = runtime.enter();
            // the task polls it again with a real waker (tokio's futures
            // keep what they got meanwhile, so nothing is missed)
            work.as_mut().poll(&mut Context::from_waker(Waker::noop()))
        };
        if let Poll::Ready(out) = polled {
            return done(out);
        }
        let room = match holds {
            0 => None,
            n => match self.waiting.try_reserve(n) {
                Some(p) => Some(p),
                None => {
                    let wait =
                        async { tokio::time::timeout_at(deadline, self.waiting.reserve(n)).await };
                    match runtime.block_on(wait) {
                        Ok(p) => Some(p),
                        Err(_) => {
                            drop(work);
                            return done(no_room);
                        }
                    }
                }
            },
        };
        runtime.spawn(async move {
            let out = work.await;
            drop(room);
            done(out)
        });
    }
}
