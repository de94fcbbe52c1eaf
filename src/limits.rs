//! The process's open-file limit, raised to its maximum at start, and the
//! `[limits]` table. What a configuration may need is compared with them
//! in `crate::topology::limits`, so running out of descriptors is
//! announced at start rather than found under load.

use crate::config::units;

/// Descriptors kept aside for what the configuration does not count: the
/// runtimes' epoll and event descriptors, listeners, standard streams
/// (about 18 for a forward source, a file sink and the API), the API's
/// connections and checkpoints.
pub const RESERVED_DESCRIPTORS: u64 = 32;

/// The soft and hard `RLIMIT_NOFILE`.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux only
pub fn nofile() -> std::io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((lim.rlim_cur as u64, lim.rlim_max as u64))
}

/// Raises the soft open-file limit to the hard one (the soft default of
/// 1024 is far below what a busy forward source holds). Call once, early,
/// before any thread opens descriptors; log what it did with
/// [`Nofile::log`] once the stop signals are handled (the line tells a
/// supervisor the process has started).
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux only
pub fn raise_nofile() -> Nofile {
    let (soft, hard) = match nofile() {
        Ok(l) => l,
        Err(e) => return Nofile::Unknown(e),
    };
    if soft >= hard {
        return Nofile::Kept { soft, hard };
    }
    let lim = libc::rlimit {
        rlim_cur: hard as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == 0 {
        Nofile::Raised { was: soft, hard }
    } else {
        Nofile::NotRaised {
            soft,
            hard,
            error: std::io::Error::last_os_error(),
        }
    }
}

/// What [`raise_nofile`] found and did.
#[derive(Debug)]
pub enum Nofile {
    Unknown(std::io::Error),
    Kept {
        soft: u64,
        hard: u64,
    },
    Raised {
        was: u64,
        hard: u64,
    },
    NotRaised {
        soft: u64,
        hard: u64,
        error: std::io::Error,
    },
}

impl Nofile {
    pub fn log(&self) {
        match self {
            Nofile::Unknown(e) => tracing::warn!(error = %e, "cannot read the open-file limit"),
            Nofile::Kept { soft, hard } => tracing::info!(soft, hard, "open-file limit"),
            Nofile::Raised { was, hard } => tracing::info!(
                soft = hard,
                hard,
                was,
                "open-file limit raised to the hard limit"
            ),
            Nofile::NotRaised { soft, hard, error } => tracing::info!(soft, hard, error = %error,
                "open-file limit (could not raise it to the hard limit)"),
        }
    }
}

/// The `[limits]` table: limits of the whole process.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Memory budget shared by every connection's read buffer and every
    /// batch not yet settled by all its sinks (in memory queues or being
    /// written). When it is used up, sources stop reading until sinks
    /// catch up. Per-sink `buffer.max_bytes` still applies below it.
    #[serde(default = "default_memory", deserialize_with = "units::bytes")]
    pub memory: usize,
}

const fn default_memory() -> usize {
    crate::memory::DEFAULT_MEMORY_BYTES
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            memory: default_memory(),
        }
    }
}

impl LimitsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.memory < crate::memory::MIN_MEMORY_BYTES {
            return Err(format!(
                "memory = {} is below the least allowed, 1MiB; write e.g. memory = \"64MiB\"",
                self.memory
            ));
        }
        Ok(())
    }
}
