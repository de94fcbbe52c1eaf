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

/// One counter per `kind` label of one error metric of one component:
/// what [`error_counted!`](crate::error_counted) and
/// [`warn_counted!`](crate::warn_counted) bump next to their log line.
#[derive(Clone)]
pub struct ErrorKinds {
    kinds: &'static [&'static str],
    /// One per kind, in the order of `kinds`.
    counters: Vec<crate::metrics::Counter>,
}

impl ErrorKinds {
    /// Registers `name{component, kind}` for every kind in `kinds`; the
    /// last kind also takes any kind not in the list.
    pub fn new(
        r: &crate::metrics::Registry,
        name: &'static str,
        help: &'static str,
        component: &str,
        kinds: &'static [&'static str],
    ) -> Self {
        ErrorKinds {
            kinds,
            counters: kinds
                .iter()
                .map(|kind| r.counter(name, help, &[("component", component), ("kind", kind)]))
                .collect(),
        }
    }

    /// Counts one error of `kind`.
    pub fn count(&self, kind: &str) {
        let i = self
            .kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(self.kinds.len().saturating_sub(1));
        if let Some(c) = self.counters.get(i) {
            c.inc();
        }
    }
}

/// Counts an error of `$kind` in `$errors` (an [`ErrorKinds`]) and logs it
/// at ERROR with `kind = $kind`: one place, so the log line and its
/// counter cannot drift apart. Takes the fields and message of
/// `tracing::error!`.
#[macro_export]
macro_rules! error_counted {
    ($errors:expr, $kind:expr, $($rest:tt)+) => {{
        let kind: &'static str = $kind;
        $errors.count(kind);
        tracing::error!(kind, $($rest)+);
    }};
}

/// [`error_counted!`] at WARN.
#[macro_export]
macro_rules! warn_counted {
    ($errors:expr, $kind:expr, $($rest:tt)+) => {{
        let kind: &'static str = $kind;
        $errors.count(kind);
        tracing::warn!(kind, $($rest)+);
    }};
}

/// A source task or sink thread that ended abnormally, or a source that
/// could not start: logged and counted in
/// `logferry_component_failures_total` together.
pub fn component_failed(metrics: &crate::metrics::Registry, component: &str, what: &str) {
    metrics
        .counter(
            "logferry_component_failures_total",
            "Sources or sinks that stopped working on their own (a panic, a source that could not start); see the log.",
            &[("component", component)],
        )
        .inc();
    tracing::error!(component, "{what}");
}

/// A problem found at start (or reload) that does not stop logferry:
/// logged and counted in `logferry_startup_warnings_total{kind}` together.
pub fn startup_warning(
    metrics: &crate::metrics::Registry,
    kind: &'static str,
    component: &str,
    what: &str,
) {
    metrics
        .counter(
            "logferry_startup_warnings_total",
            "Problems found at start that do not stop logferry, by kind (nofile, no_inotify, insecure_skip_verify, api_without_token).",
            &[("kind", kind)],
        )
        .inc();
    tracing::warn!(kind, component, "{what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_and_startup_warnings_are_counted() {
        let r = crate::metrics::Registry::new();
        component_failed(&r, "out", "sink thread ended abnormally");
        startup_warning(&r, "no_inotify", "in", "no inotify");
        let failures = r.value("logferry_component_failures_total", &[("component", "out")]);
        let warnings = r.value("logferry_startup_warnings_total", &[("kind", "no_inotify")]);
        assert_eq!((failures, warnings), (1, 1));
    }

    #[test]
    fn counted_errors_bump_their_kind() {
        let r = crate::metrics::Registry::new();
        let e = ErrorKinds::new(&r, "x_errors_total", "x", "c", &["read", "other"]);
        crate::error_counted!(e, "read", component = "c", "cannot read");
        crate::warn_counted!(e, "read", "cannot read again");
        e.count("no such kind");
        let v = |kind| r.value("x_errors_total", &[("component", "c"), ("kind", kind)]);
        assert_eq!((v("read"), v("other")), (2, 1));
    }

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
