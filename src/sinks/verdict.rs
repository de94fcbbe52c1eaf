//! How one attempt to hand records to a destination ended.
//!
//! Every flush of a sink ends in exactly one [`Verdict`], so the decision
//! to retry or to give up is taken from a type, never from an error string.
//! [`io_verdict`] turns an I/O error into one by its kind and errno;
//! [`RetryConfig`] holds the backoff every sink shares. What is then done
//! with the records (accept, retry, dead-letter, reject) is decided in one
//! place: [`super::settle`].

use std::io;
use std::time::Duration;

use serde::Deserialize;

use crate::backoff::backoff_with_jitter;
use crate::config::units;

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

/// The `retry` table of a sink: how long to wait between attempts and when
/// to give up.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Wait before the first retry; doubles with each failed attempt.
    #[serde(default = "default_initial", deserialize_with = "units::duration")]
    pub initial: Duration,
    /// Longest wait between two attempts.
    #[serde(default = "default_max", deserialize_with = "units::duration")]
    pub max: Duration,
    /// Each wait is spread by up to ± this fraction of it (0 to 1).
    #[serde(default = "default_jitter")]
    pub jitter: f64,
    /// Failed attempts after which records are rejected (dead-lettered if
    /// `dead_letter` is set). 0: retry forever.
    #[serde(default)]
    pub max_attempts: u32,
}

const fn default_initial() -> Duration {
    Duration::from_millis(100)
}

const fn default_max() -> Duration {
    Duration::from_secs(30)
}

const fn default_jitter() -> f64 {
    0.2
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            initial: default_initial(),
            max: default_max(),
            jitter: default_jitter(),
            max_attempts: 0,
        }
    }
}

impl RetryConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.initial.is_zero() || self.max < self.initial {
            return Err("retry.initial must be above 0 and at most retry.max".into());
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err("retry.jitter must be from 0 to 1 (a fraction of each wait)".into());
        }
        Ok(())
    }

    /// The wait after the `attempt`th failed attempt (from 1).
    pub fn after(&self, attempt: u32) -> Duration {
        backoff_with_jitter(self.initial, self.max, attempt, self.jitter)
    }

    /// Whether `attempt` failed attempts use up the allowance.
    pub fn exhausted(&self, attempt: u32) -> bool {
        self.max_attempts > 0 && attempt >= self.max_attempts
    }
}

/// The verdict for an I/O error, by its errno or kind, never its text:
/// a shortage that can pass (a full disk, a quota, an I/O error, too many
/// open files) is retried after `retry`; an error that stays until someone
/// changes the system or the configuration (permissions, a read-only file
/// system, a directory where a file should be, a bad descriptor, data that
/// cannot be written) rejects the records.
pub fn io_verdict(e: &io::Error, retry: Duration) -> Verdict {
    let rejected = |kind: &'static str, hint: &str| Verdict::Rejected {
        reason: Rejection {
            kind,
            message: format!("{e}: {hint}"),
        },
    };
    match e.raw_os_error() {
        Some(
            libc::ENOSPC
            | libc::EDQUOT
            | libc::EIO
            | libc::EMFILE
            | libc::ENFILE
            | libc::ENOMEM
            | libc::EAGAIN
            | libc::EINTR
            | libc::ENOENT
            | libc::EBUSY
            | libc::ETIMEDOUT
            | libc::ENOBUFS
            | libc::ESTALE,
        ) => Verdict::Retry { after: retry },
        Some(libc::EACCES | libc::EPERM) => {
            rejected("permission_denied", "give logferry's user write access")
        }
        Some(libc::EROFS) => rejected("read_only", "the file system is mounted read-only"),
        Some(libc::EISDIR) => rejected("is_a_directory", "the path must name a file"),
        Some(libc::ENOTDIR | libc::EEXIST) => rejected(
            "not_a_directory",
            "a file is where the path needs a directory",
        ),
        Some(libc::EBADF | libc::EINVAL) => {
            rejected("bad_descriptor", "the output cannot be written")
        }
        Some(libc::EFBIG) => rejected("file_too_large", "set rotate_bytes below the limit"),
        Some(libc::EPIPE) => rejected("closed", "nothing reads the output any more"),
        Some(libc::ENAMETOOLONG) => rejected("name_too_long", "use a shorter path"),
        Some(_) => Verdict::Retry { after: retry },
        None => match e.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput => rejected(
                "invalid_data",
                "these records cannot be written as they are",
            ),
            io::ErrorKind::BrokenPipe => rejected("closed", "nothing reads the output any more"),
            io::ErrorKind::PermissionDenied => {
                rejected("permission_denied", "give logferry's user write access")
            }
            _ => Verdict::Retry { after: retry },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_classified_by_errno_not_text() {
        let retry = Duration::from_millis(7);
        for errno in [libc::ENOSPC, libc::EDQUOT, libc::EIO, libc::EMFILE] {
            let e = io::Error::from_raw_os_error(errno);
            assert_eq!(
                io_verdict(&e, retry),
                Verdict::Retry { after: retry },
                "{e}"
            );
        }
        for (errno, kind) in [
            (libc::EBADF, "bad_descriptor"),
            (libc::EISDIR, "is_a_directory"),
            (libc::EACCES, "permission_denied"),
            (libc::EROFS, "read_only"),
            (libc::EPIPE, "closed"),
        ] {
            let e = io::Error::from_raw_os_error(errno);
            match io_verdict(&e, retry) {
                Verdict::Rejected { reason } => assert_eq!(reason.kind, kind),
                v => panic!("{e}: {v:?}"),
            }
        }
        // the text does not matter, the kind does
        let e = io::Error::new(io::ErrorKind::InvalidData, "no space left on device");
        assert!(matches!(io_verdict(&e, retry), Verdict::Rejected { .. }));
        let e = io::Error::other("permission denied");
        assert_eq!(io_verdict(&e, retry), Verdict::Retry { after: retry });
    }

    #[test]
    fn retry_settings_give_up_only_when_limited() {
        let forever = RetryConfig::default();
        assert!(!forever.exhausted(u32::MAX));
        let two = RetryConfig {
            max_attempts: 2,
            ..RetryConfig::default()
        };
        assert!(!two.exhausted(1));
        assert!(two.exhausted(2));
        let bad = RetryConfig {
            jitter: 1.5,
            ..RetryConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("jitter"));
    }
}
