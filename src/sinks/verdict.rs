//! How one attempt to hand records to a destination ended.
//!
//! Every flush of a sink ends in exactly one [`Verdict`], so the decision
//! to retry or to give up is taken from a type, never from an error string.

use std::time::Duration;

/// The outcome of one attempt to deliver records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The destination has the records.
    Delivered,
    /// The destination may take the records later: try again after `after`.
    Retry { after: Duration },
    /// The destination will never take these records as they are; trying
    /// again cannot help. They are counted and not acknowledged.
    Rejected { reason: Rejection },
}

/// Why records were rejected: a short stable `kind` (a metric label) and a
/// message for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Stable, low-cardinality name, used as the `kind` label of counters.
    pub kind: &'static str,
    /// What happened and what to do about it, for the log.
    pub message: String,
}

/// Exponential backoff between `first` and `max`, doubling per attempt
/// (attempt 1 waits `first`).
pub fn backoff(first: Duration, max: Duration, attempt: u32) -> Duration {
    let factor = 1u32 << attempt.saturating_sub(1).min(16);
    first.saturating_mul(factor).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let s = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        assert_eq!(backoff(s, max, 1), s);
        assert_eq!(backoff(s, max, 2), Duration::from_millis(200));
        assert_eq!(backoff(s, max, 4), Duration::from_millis(800));
        assert_eq!(backoff(s, max, 5), max);
        assert_eq!(backoff(s, max, 1000), max);
    }
}
