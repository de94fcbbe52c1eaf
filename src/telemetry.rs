//! Rate-limited warnings: a bad peer can cause one warning per frame or
//! per connection, and a flood of them would bury everything else in the
//! log (and fill the disk it goes to). The counters next to each warning
//! still count every occurrence; the log says it once, then at most once
//! per interval per kind, with how many were not logged in between.
//!
//! ```
//! use logferry::telemetry::RateLimitedLog;
//!
//! let log = RateLimitedLog::new(std::time::Duration::from_secs(10));
//! assert_eq!(log.allow("invalid_frame"), Some(0)); // the first one is logged
//! assert_eq!(log.allow("invalid_frame"), None); // the next ones, not yet
//! assert_eq!(log.allow("tls"), Some(0)); // another kind has its own budget
//! ```

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How often one kind of warning from one component is logged at most.
pub const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// The warnings of one component, rate-limited per kind.
#[derive(Debug)]
pub struct RateLimitedLog {
    interval: Duration,
    kinds: Mutex<HashMap<&'static str, Slot>>,
}

#[derive(Debug)]
struct Slot {
    /// When the last warning of this kind was logged.
    logged_at: Instant,
    /// Warnings of this kind not logged since then.
    suppressed: u64,
}

impl Default for RateLimitedLog {
    fn default() -> Self {
        RateLimitedLog::new(WARN_INTERVAL)
    }
}

impl RateLimitedLog {
    pub fn new(interval: Duration) -> Self {
        RateLimitedLog {
            interval,
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a warning of `kind` may be logged now. `Some(n)`: log it,
    /// saying that `n` were suppressed since the last one; `None`: skip it
    /// (it is counted towards the next one).
    pub fn allow(&self, kind: &'static str) -> Option<u64> {
        let now = Instant::now();
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        match kinds.get_mut(kind) {
            None => {
                kinds.insert(
                    kind,
                    Slot {
                        logged_at: now,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
            Some(slot) if now.duration_since(slot.logged_at) >= self.interval => {
                slot.logged_at = now;
                Some(std::mem::take(&mut slot.suppressed))
            }
            Some(slot) => {
                slot.suppressed += 1;
                None
            }
        }
    }
}

/// Logs a warning through `$log` (a [`RateLimitedLog`]) under `$kind`,
/// adding `suppressed = N` (warnings of that kind not logged since the
/// previous one). Takes the fields and message of `tracing::warn!`.
#[macro_export]
macro_rules! warn_limited {
    ($log:expr, $kind:expr, $($rest:tt)+) => {
        if let Some(suppressed) = $log.allow($kind) {
            tracing::warn!(suppressed, $($rest)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn first_through_then_one_per_interval_with_the_count() {
        let log = RateLimitedLog::new(Duration::from_secs(10));
        assert_eq!(log.allow("a"), Some(0));
        for _ in 0..1000 {
            assert_eq!(log.allow("a"), None);
        }
        assert_eq!(log.allow("b"), Some(0), "kinds are independent");
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(log.allow("a"), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(log.allow("a"), Some(1001), "the suppressed ones are told");
        assert_eq!(log.allow("a"), None);
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(log.allow("a"), Some(1));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(log.allow("a"), Some(0));
    }
}
