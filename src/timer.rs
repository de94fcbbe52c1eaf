//! A wake-up at one exact time, from a timerfd.
//!
//! tokio's timer wheel keeps a deadline more than 64 ms away in a coarser
//! level and wakes its thread at that level's slot boundary to move it
//! down, then again at the deadline: a reader sleeping out a 100 ms or 1 s
//! `linger`, or a request sink gathering for its own, would wake twice per
//! linger, and at everyday rates the wake-ups are what they cost. A
//! timerfd armed for the deadline wakes its thread once. Where no timerfd
//! can be had, and in unit tests (which may pause tokio's clock), tokio's
//! sleep serves.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Sleeps until `at`, or for ever when there is no such time: a branch
/// of a `select!` that only some turns of a loop arm.
pub async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One waiter's wake-up; arming it again replaces the time it was armed
/// for.
pub struct Deadline {
    /// The timer's registration with the runtime; `None`: tokio's sleep.
    /// Dropped before `fd` (field order).
    waiting: Option<AsyncFd<RawFd>>,
    /// The timer.
    fd: Option<OwnedFd>,
}

impl Deadline {
    /// A timer of the runtime this is called in: a timerfd, or in unit
    /// tests tokio's own timer, whose clock they may pause.
    pub fn new() -> Deadline {
        if cfg!(test) {
            Deadline::runtime()
        } else {
            Deadline::timerfd()
        }
    }

    /// [`Deadline::new`] for a loop that sleeps on it only if `used`;
    /// otherwise tokio's timer, which holds no descriptor.
    pub fn new_if(used: bool) -> Deadline {
        if used {
            Deadline::new()
        } else {
            Deadline::runtime()
        }
    }

    /// tokio's timer.
    pub fn runtime() -> Deadline {
        Deadline {
            waiting: None,
            fd: None,
        }
    }

    /// A timerfd of the runtime this is called in (tokio's timer if the
    /// kernel refuses one).
    pub fn timerfd() -> Deadline {
        // SAFETY: plain system call; the descriptor is owned below
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Deadline::runtime();
        }
        // SAFETY: `raw` is a descriptor just opened and owned by no one else
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: `fd` stays open while the registration lives: `waiting`
        // is dropped first
        let waiting =
            unsafe { AsyncFd::register_with_interest(fd.as_raw_fd(), Interest::READABLE) }.ok();
        Deadline {
            waiting,
            fd: Some(fd),
        }
    }

    /// Resolves at `until` (at once if it has passed).
    pub async fn sleep_until(&mut self, until: Instant) {
        if self.fd.is_none() {
            return tokio::time::sleep_until(until.into()).await;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let armed = self.fd.as_ref().is_some_and(|fd| arm(fd, left));
        let Some(fd) = self.waiting.as_ref().filter(|_| armed) else {
            return tokio::time::sleep_until(until.into()).await;
        };
        loop {
            let Ok(mut guard) = fd.readable().await else {
                return tokio::time::sleep_until(until.into()).await;
            };
            let mut ticks = [0u8; 8];
            // a readiness left from an expiry replaced by arming again
            // reads nothing (EAGAIN) and is cleared by `try_io`
            match guard.try_io(|fd| {
                // SAFETY: reads 8 bytes into a buffer of 8
                let n = unsafe { libc::read(*fd.get_ref(), ticks.as_mut_ptr().cast(), 8) };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(())
                }
            }) {
                Ok(Ok(())) => {
                    // the one expiry is read: the timer is not readable
                    // again until it is armed and expires, so the next
                    // sleep waits without a read to be told so
                    guard.clear_ready();
                    return;
                }
                Ok(Err(_)) if Instant::now() >= until => return,
                Ok(Err(_)) | Err(_) => continue,
            }
        }
    }
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new()
    }
}

/// Arms `fd` to expire once, `left` from now (which also clears an expiry
/// not read yet); false if the kernel refused.
fn arm(fd: &OwnedFd, left: Duration) -> bool {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            // at least a nanosecond: all zeros would disarm it
            tv_nsec: left.subsec_nanos().max(1) as libc::c_long,
        },
    };
    // SAFETY: valid descriptor and pointers for the call's duration
    unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn it_wakes_at_its_time_and_arming_again_replaces_it() {
        let mut d = Deadline::timerfd();
        assert!(d.waiting.is_some(), "a timerfd on Linux");
        let start = Instant::now();
        d.sleep_until(start + Duration::from_millis(30)).await;
        let slept = start.elapsed();
        assert!(slept >= Duration::from_millis(30), "{slept:?}");

        // armed, then given up for something else: the next arming
        // replaces it, and the stale expiry does not end the next sleep
        let armed = d.sleep_until(Instant::now() + Duration::from_millis(10));
        let _ = tokio::time::timeout(Duration::from_millis(1), armed).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let start = Instant::now();
        d.sleep_until(start + Duration::from_millis(40)).await;
        let slept = start.elapsed();
        assert!(slept >= Duration::from_millis(40), "{slept:?}");

        // a time passed: at once
        // sleeps one after another: each waits its whole time, none hangs
        for _ in 0..5 {
            let start = Instant::now();
            let sleep = d.sleep_until(start + Duration::from_millis(15));
            tokio::time::timeout(Duration::from_secs(10), sleep)
                .await
                .expect("the timer woke the sleeper");
            assert!(start.elapsed() >= Duration::from_millis(15));
        }

        let start = Instant::now();
        d.sleep_until(start - Duration::from_millis(5)).await;
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
