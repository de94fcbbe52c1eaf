//! A future polled again at once when it wakes itself.
//!
//! tokio treats a task woken while it runs as a task that yields: it goes
//! to the back of its worker's queue, and a sleeping worker is woken to
//! steal it. hyper's HTTP/1.1 connection wakes itself on every request
//! with a body (its body channel wakes the connection's reader when the
//! request's handler takes a chunk, and both run in the one task), so at
//! everyday rates every request cost the other worker's thread a wake-up
//! for nothing. [`Inline`] polls its future again in the same turn
//! instead, a bounded number of times and only while the task has coop
//! budget left; a wake-up from anywhere else reaches the task as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Polls in one turn at most this many times before it yields as tokio
/// would (hyper's connection loops 16 times for pipelined requests).
const REPOLLS: usize = 16;

/// `F`, polled again in the same turn when it woke itself while polled.
pub struct Inline<F> {
    inner: Pin<Box<F>>,
    shared: Arc<Shared>,
    /// `shared` as a waker, made once.
    waker: Waker,
}

struct Shared {
    /// Set while `inner` is polled.
    polling: AtomicBool,
    /// A wake-up came while `inner` was polled.
    woken: AtomicBool,
    /// The task's own waker, for wake-ups that come between polls.
    task: Mutex<Option<Waker>>,
}

impl<F: Future> Inline<F> {
    pub fn new(inner: F) -> Self {
        let shared = Arc::new(Shared {
            polling: AtomicBool::new(false),
            woken: AtomicBool::new(false),
            task: Mutex::new(None),
        });
        Inline {
            inner: Box::pin(inner),
            waker: Waker::from(shared.clone()),
            shared,
        }
    }
}

impl<F: Future> Future for Inline<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        {
            let mut task = this.shared.task.lock().unwrap_or_else(|e| e.into_inner());
            if !task.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        let mut inner_cx = Context::from_waker(&this.waker);
        for _ in 0..REPOLLS {
            this.shared.woken.store(false, SeqCst);
            this.shared.polling.store(true, SeqCst);
            let polled = this.inner.as_mut().poll(&mut inner_cx);
            this.shared.polling.store(false, SeqCst);
            if polled.is_ready() {
                return polled;
            }
            // a wake-up that found `polling` set left it to this check
            if !this.shared.woken.load(SeqCst) {
                return Poll::Pending;
            }
            // out of budget, a resource wakes the task only to yield
            if !tokio::task::coop::has_budget_remaining() {
                break;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.polling.load(SeqCst) {
            self.woken.store(true, SeqCst);
            // still polling: the poll sees `woken` once it ends
            if self.polling.load(SeqCst) {
                return;
            }
        }
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = task.as_ref() {
            w.wake_by_ref();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Wakes itself on its first `n` polls, then is ready.
    struct WakesItself {
        left: usize,
        polls: Arc<AtomicUsize>,
    }

    impl Future for WakesItself {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, SeqCst);
            if self.left == 0 {
                return Poll::Ready(());
            }
            self.left -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// Counts the wake-ups the task's own waker receives.
    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_again_without_waking_the_task() {
        let polls = Arc::new(AtomicUsize::new(0));
        let mut f = Inline::new(WakesItself {
            left: 3,
            polls: polls.clone(),
        });
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut f).poll(&mut cx).is_ready());
        assert_eq!(polls.load(SeqCst), 4);
        assert_eq!(count.0.load(SeqCst), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_after_a_bound() {
        let polls = Arc::new(AtomicUsize::new(0));
        let mut f = Inline::new(WakesItself {
            left: usize::MAX,
            polls: polls.clone(),
        });
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut f).poll(&mut cx).is_pending());
        assert_eq!(polls.load(SeqCst), REPOLLS);
        // the task is woken to poll again later, as tokio's yield would
        assert_eq!(count.0.load(SeqCst), 1);
    }

    #[tokio::test]
    async fn a_wake_up_from_elsewhere_reaches_the_task() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let waiting = tokio::spawn(Inline::new(rx));
        tokio::task::yield_now().await;
        std::thread::spawn(move || tx.send(7))
            .join()
            .unwrap()
            .unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), 7);
    }
}
