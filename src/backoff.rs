//! Waits between attempts, shared by the sinks' retries and the disk
//! buffer's waits for room or data.

use std::time::Duration;

/// Exponential backoff between `first` and `max`, doubling per attempt
/// (attempt 1 waits `first`).
pub fn backoff(first: Duration, max: Duration, attempt: u32) -> Duration {
    let factor = 1u32 << attempt.saturating_sub(1).min(16);
    first.saturating_mul(factor).min(max)
}

/// [`backoff`] spread by ±`jitter` (a fraction, 0 to 1), then capped at
/// `max` again, so that sinks retrying together do not arrive in step.
pub fn backoff_with_jitter(first: Duration, max: Duration, attempt: u32, jitter: f64) -> Duration {
    let base = backoff(first, max, attempt);
    let jitter = jitter.clamp(0.0, 1.0);
    if jitter == 0.0 {
        return base;
    }
    // uniform in [-1, 1]
    let r = crate::protocol::forward::handshake::random_bytes(4);
    let unit = f64::from(u32::from_le_bytes([r[0], r[1], r[2], r[3]])) / f64::from(u32::MAX);
    base.mul_f64(1.0 + jitter * (unit * 2.0 - 1.0)).min(max)
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

    #[test]
    fn jitter_stays_within_its_fraction_and_the_cap() {
        let s = Duration::from_millis(1000);
        let max = Duration::from_secs(4);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let d = backoff_with_jitter(s, max, 2, 0.2);
            assert!(
                d >= Duration::from_millis(1600) && d <= Duration::from_millis(2400),
                "{d:?}"
            );
            seen.insert(d);
            let capped = backoff_with_jitter(s, max, 10, 0.5);
            assert!(
                capped <= max && capped >= Duration::from_secs(2),
                "{capped:?}"
            );
        }
        assert!(seen.len() > 10, "jitter must vary the wait: {seen:?}");
        assert_eq!(backoff_with_jitter(s, max, 1, 0.0), s);
    }
}
