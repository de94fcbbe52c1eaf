//! Requests to reopen every file sink's outputs (SIGHUP, SIGUSR1).
//!
//! A signal is addressed to the whole process, so the request is a
//! process-wide generation number: each file sink remembers the last one it
//! acted on and reopens its files at its next flush or tick (within a
//! second) once the number has moved. Reading it costs one atomic load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The signal of the latest request, for the log.
static SIGNAL: Mutex<&str> = Mutex::new("SIGHUP");

/// Asks every file sink of this process to reopen its outputs, on
/// `signal` (`"SIGHUP"`, `"SIGUSR1"`).
pub fn request_reopen(signal: &'static str) {
    *SIGNAL.lock().unwrap_or_else(|e| e.into_inner()) = signal;
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// The signal of the latest request.
pub(super) fn signal() -> &'static str {
    *SIGNAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The current request number (to start from).
pub(super) fn current() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// True (once per request) if a reopen was requested since `seen`.
pub(super) fn requested_since(seen: &mut u64) -> bool {
    let now = current();
    if now == *seen {
        return false;
    }
    *seen = now;
    true
}
