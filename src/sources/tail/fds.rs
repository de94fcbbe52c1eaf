//! Descriptors: how many the tail source may hold (by default), and spare
//! ones kept back so the checkpoint can always be written.

use std::fs::File;

/// Descriptors the tail source may hold for followed files when
/// `max_open_files` is not set: three quarters of the soft limit, at least
/// 16, leaving the rest to sockets, sinks and the checkpoint.
pub fn default_budget() -> usize {
    let (soft, _) = crate::limits::nofile().unwrap_or((1024, 1024));
    let soft = usize::try_from(soft).unwrap_or(usize::MAX);
    (soft / 4 * 3).max(16)
}

/// Descriptors held back (on /dev/null) and given up for a moment when a
/// file that must be written (the checkpoint) is opened, so that it finds
/// one even when everything else has taken the limit.
pub struct Reserve {
    spare: Vec<File>,
}

impl Reserve {
    pub fn new(n: usize) -> Reserve {
        Reserve {
            spare: (0..n)
                .filter_map(|_| File::open("/dev/null").ok())
                .collect(),
        }
    }

    /// Runs `f` with the spare descriptors free, then takes them back.
    pub fn with<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let n = self.spare.len().max(2);
        self.spare.clear();
        let out = f();
        self.spare = (0..n)
            .filter_map(|_| File::open("/dev/null").ok())
            .collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_leaves_room() {
        let (soft, _) = crate::limits::nofile().unwrap();
        let b = default_budget() as u64;
        assert!(b >= 16 && (b < soft || soft < 22));
        let mut r = Reserve::new(2);
        assert_eq!(r.with(|| 7), 7);
        assert_eq!(r.spare.len(), 2);
    }
}
