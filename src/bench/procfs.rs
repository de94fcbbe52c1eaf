//! CPU and memory of a process, read from /proc (Linux).

use std::time::Duration;

/// A sample of one process's resource use.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    /// CPU time in user mode.
    pub user: Duration,
    /// CPU time in kernel mode.
    pub system: Duration,
    /// Resident set size now, in bytes.
    pub rss: u64,
    /// Peak resident set size so far (VmHWM), in bytes.
    pub peak_rss: u64,
}

impl ProcSample {
    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }
}

/// Samples process `pid`; `None` once it has exited.
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name may hold spaces and parentheses: fields start after the last ')'
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // after the name: state(0) ppid(1) … utime(11) stime(12)
    let ticks = clock_ticks();
    let user = ticks_to_duration(fields.get(11)?.parse().ok()?, ticks);
    let system = ticks_to_duration(fields.get(12)?.parse().ok()?, ticks);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    Some(ProcSample {
        user,
        system,
        rss: kb("VmRSS:") * 1024,
        peak_rss: kb("VmHWM:") * 1024,
    })
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

fn ticks_to_duration(t: u64, per_sec: u64) -> Duration {
    Duration::from_secs_f64(t as f64 / per_sec as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process() {
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let s = sample(std::process::id()).expect("own /proc entry");
        assert!(s.rss > 0 && s.peak_rss >= s.rss);
        assert!(s.cpu() > Duration::ZERO);
        assert!(sample(u32::MAX).is_none());
    }
}
