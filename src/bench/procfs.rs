//! CPU and memory of a process, read from /proc (Linux); and whether the
//! machine hands freed memory back to its host, read from /sys.

use std::sync::Arc;
use std::time::Duration;

/// A sample of one process's resource use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcSample {
    /// CPU time in user mode.
    pub user: Duration,
    /// CPU time in kernel mode.
    pub system: Duration,
    /// Resident set size now, in bytes.
    pub rss: u64,
    /// Peak resident set size so far (VmHWM), in bytes.
    pub peak_rss: u64,
    /// Time on a CPU of each live thread, in nanoseconds, by thread id
    /// (sorted): `user` and `system` count in clock ticks (10 ms), too
    /// coarse for a process using 0.1 % of a core over a few seconds.
    pub threads: Arc<[(u32, u64)]>,
}

impl ProcSample {
    /// CPU time since the process started, in clock ticks.
    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }

    /// CPU time since `before`, to the nanosecond where the threads allow.
    pub fn cpu_since(&self, before: &ProcSample) -> Duration {
        precise_cpu(before, self).unwrap_or_else(|| self.cpu().saturating_sub(before.cpu()))
    }

    /// CPU time since a sample taken shortly `before`, to the nanosecond
    /// even when a thread has exited in between: that thread counts
    /// nothing of its last slice (at most the time between the samples),
    /// where [`ProcSample::cpu_since`] would fall back to 10 ms ticks.
    /// Summed over a run's frequent samples, it keeps a process at 0.05 %
    /// of a core measurable while its threads come and go.
    pub fn cpu_since_recent(&self, before: &ProcSample) -> Duration {
        thread_cpu(before, self, true).unwrap_or_else(|| self.cpu().saturating_sub(before.cpu()))
    }
}

/// Samples process `pid`; `None` once it has exited (a zombie included).
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name may hold spaces and parentheses: fields start after the last ')'
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // after the name: state(0) ppid(1) … utime(11) stime(12)
    // a zombie has exited: only its parent has not collected it yet
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
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
        threads: thread_times(pid),
    })
}

/// Each live thread's time on a CPU (`/proc/PID/task/TID/schedstat`, in
/// nanoseconds), sorted by thread id; empty where the kernel does not say.
fn thread_times(pid: u32) -> Arc<[(u32, u64)]> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Arc::new([]);
    };
    let mut times: Vec<(u32, u64)> = dir
        .filter_map(|e| {
            let tid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
            Some((tid, stat.split_whitespace().next()?.parse().ok()?))
        })
        .collect();
    times.sort_unstable();
    times.into()
}

/// CPU time between two samples from the threads' nanosecond counts, or
/// `None` when a thread of `before` has exited since (its last slice is
/// no longer readable; the tick counts then serve).
fn precise_cpu(before: &ProcSample, after: &ProcSample) -> Option<Duration> {
    thread_cpu(before, after, false)
}

/// [`precise_cpu`], or with `skip_exited` a thread of `before` that has
/// exited since counts nothing of its last slice.
fn thread_cpu(before: &ProcSample, after: &ProcSample, skip_exited: bool) -> Option<Duration> {
    if before.threads.is_empty() || after.threads.is_empty() {
        return None;
    }
    let mut ns = 0u64;
    let mut later = after.threads.iter().peekable();
    for &(tid, was) in before.threads.iter() {
        // threads started since count whole
        while let Some(&&(t, now)) = later.peek() {
            if t >= tid {
                break;
            }
            ns += now;
            later.next();
        }
        match later.peek() {
            Some(&&(t, now)) if t == tid => {
                ns += now.saturating_sub(was);
                later.next();
            }
            _ if skip_exited => {}
            _ => return None,
        }
    }
    ns += later.map(|&(_, now)| now).sum::<u64>();
    Some(Duration::from_nanos(ns))
}

/// The page order from which this guest reports freed memory to its host
/// (virtio-balloon free page reporting), when it does. A page freed a
/// couple of seconds before is then faulted in from the host again when
/// it is next used, so writing files costs more for a program that runs
/// after others deleted theirs, or runs slower. `None` on bare metal, with
/// a balloon that does not report, or with reporting paused (an order
/// above the largest page order).
pub fn free_page_reporting() -> Option<u32> {
    let order =
        std::fs::read_to_string("/sys/module/page_reporting/parameters/page_reporting_order")
            .ok()?;
    let devices = std::fs::read_dir("/sys/bus/virtio/devices").ok()?;
    let devices: Vec<(String, String)> = devices
        .flatten()
        .filter_map(|d| {
            let read = |f: &str| std::fs::read_to_string(d.path().join(f)).ok();
            Some((read("device")?, read("features")?))
        })
        .collect();
    reporting_order(&order, &devices)
}

/// [`free_page_reporting`] from the texts of `page_reporting_order` and
/// each virtio device's `device` and `features` files.
fn reporting_order(order: &str, devices: &[(String, String)]) -> Option<u32> {
    // the balloon's device id, and its feature bit for free page reporting
    const BALLOON: &str = "0x0005";
    const F_REPORTING: usize = 5;
    // MAX_PAGE_ORDER of x86-64 and of arm64 with 4 KiB pages
    const LARGEST_ORDER: u32 = 10;
    let order: u32 = order.trim().parse().ok()?;
    let reports = devices.iter().any(|(device, features)| {
        device.trim() == BALLOON && features.as_bytes().get(F_REPORTING) == Some(&b'1')
    });
    (reports && order <= LARGEST_ORDER).then_some(order)
}

/// The command name of process `pid` (`/proc/PID/comm`).
pub fn name(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end().to_string())
}

/// Processes whose command name is `name` (this process excluded).
pub fn pids_named(name: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != me && self::name(pid).as_deref() == Some(name))
        .collect();
    pids.sort_unstable();
    pids
}

/// What a process used between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// CPU time over wall time, in percent of one core (from the threads'
    /// nanosecond counts where they allow).
    pub cpu_percent: f64,
    /// User-mode CPU time in the interval, in milliseconds.
    pub user_ms: u64,
    /// Kernel-mode CPU time in the interval, in milliseconds.
    pub sys_ms: u64,
    /// Resident set size at the end of the interval, in bytes.
    pub rss: u64,
}

impl Interval {
    pub fn between(before: &ProcSample, after: &ProcSample, wall: Duration) -> Interval {
        let user = after.user.saturating_sub(before.user);
        let sys = after.system.saturating_sub(before.system);
        let cpu = after.cpu_since(before);
        let secs = wall.as_secs_f64();
        Interval {
            cpu_percent: if secs > 0.0 {
                cpu.as_secs_f64() / secs * 100.0
            } else {
                0.0
            },
            user_ms: user.as_millis() as u64,
            sys_ms: sys.as_millis() as u64,
            rss: after.rss,
        }
    }
}

/// One watched process from its first sample on: the figures of its
/// summary (average and peak memory, average CPU).
#[derive(Debug, Clone)]
pub struct Watch {
    /// Command name when the watch started.
    pub name: String,
    pub pid: u32,
    /// When the first sample was taken.
    started: std::time::Instant,
    first: ProcSample,
    last: ProcSample,
    /// When `last` was taken.
    last_at: std::time::Instant,
    /// Sum and count of the RSS samples, for the average.
    rss_sum: u128,
    samples: u64,
    /// Highest RSS seen in a sample.
    peak_rss: u64,
}

impl Watch {
    /// Starts watching `pid`; `None` if it does not exist.
    pub fn start(pid: u32) -> Option<Watch> {
        let first = sample(pid)?;
        let now = std::time::Instant::now();
        Some(Watch {
            name: name(pid).unwrap_or_else(|| "?".into()),
            pid,
            started: now,
            rss_sum: first.rss as u128,
            samples: 1,
            peak_rss: first.rss,
            last: first.clone(),
            first,
            last_at: now,
        })
    }

    /// Samples again: what the process used since the previous sample, or
    /// `None` once it has exited.
    pub fn sample(&mut self) -> Option<Interval> {
        let s = sample(self.pid)?;
        let now = std::time::Instant::now();
        let i = Interval::between(&self.last, &s, now - self.last_at);
        self.rss_sum += s.rss as u128;
        self.samples += 1;
        self.peak_rss = self.peak_rss.max(s.rss);
        self.last = s;
        self.last_at = now;
        Some(i)
    }

    /// Time from the first to the latest sample.
    pub fn elapsed(&self) -> Duration {
        self.last_at - self.started
    }

    pub fn average_rss(&self) -> u64 {
        (self.rss_sum / self.samples as u128) as u64
    }

    pub fn peak_rss(&self) -> u64 {
        self.peak_rss
    }

    /// CPU time from the first to the latest sample over that wall time,
    /// in percent of one core.
    pub fn average_cpu_percent(&self) -> f64 {
        Interval::between(&self.first, &self.last, self.elapsed()).cpu_percent
    }
}

/// A CPU share for people: `12.3 %`, and below one percent `0.04 %` (the
/// share of an idle agent is what a reader compares there).
pub fn human_percent(cpu: f64) -> String {
    if cpu < 1.0 {
        format!("{cpu:.2} %")
    } else {
        format!("{cpu:.1} %")
    }
}

/// `bytes` for people: `512 B`, `1.5 KiB`, `12.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
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
    fn free_page_reporting_needs_a_reporting_balloon_and_an_order_in_range() {
        let balloon = |features: &str| ("0x0005\n".to_string(), format!("{features}\n"));
        let net = ("0x0001\n".to_string(), "0000011000\n".to_string());
        let reporting = balloon("0110010100");
        let silent = balloon("0110000100");
        assert_eq!(
            reporting_order("9\n", &[net.clone(), reporting.clone()]),
            Some(9)
        );
        assert_eq!(reporting_order("9\n", &[net.clone(), silent]), None);
        assert_eq!(reporting_order("9\n", &[net]), None, "no balloon");
        assert_eq!(
            reporting_order("11\n", std::slice::from_ref(&reporting)),
            None,
            "paused"
        );
        assert_eq!(reporting_order("", &[reporting]), None);
    }

    fn with_threads(threads: &[(u32, u64)]) -> ProcSample {
        ProcSample {
            user: Duration::from_millis(100),
            system: Duration::from_millis(100),
            threads: threads.into(),
            ..Default::default()
        }
    }

    #[test]
    fn cpu_is_counted_to_the_nanosecond_from_each_threads_time() {
        let before = with_threads(&[(10, 1_000), (12, 5_000)]);
        // thread 11 and 13 started since, 12 used 300 ns more
        let after = with_threads(&[(10, 1_000), (11, 40), (12, 5_300), (13, 7)]);
        assert_eq!(after.cpu_since(&before), Duration::from_nanos(347));
        // thread 12 exited: its last slice is lost, the ticks serve
        let mut after = with_threads(&[(10, 1_500), (11, 40)]);
        after.user = Duration::from_millis(110);
        assert_eq!(after.cpu_since(&before), Duration::from_millis(10));
        let between = Interval::between(&before, &after, Duration::from_secs(1));
        assert!((between.cpu_percent - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_busy_thread_is_measured_below_a_tick() {
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() } as u32;
        let time = || {
            let threads = thread_times(std::process::id());
            threads
                .iter()
                .find(|t| t.0 == me)
                .expect("this thread is listed")
                .1
        };
        // this thread's own CPU clock: preempted by other tests, the spin
        // still runs for 3 ms of CPU
        let cpu = || {
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid clock id and a pointer to a timespec we own
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
            t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
        };
        let before = time();
        let started = cpu();
        while cpu() - started < 3_000_000 {
            std::hint::spin_loop();
        }
        let used = time() - before;
        assert!(used >= 2_000_000, "{used} ns");
    }

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

    #[test]
    fn an_exited_child_not_yet_reaped_is_not_sampled() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // until wait(), the exited child stays in /proc as a zombie
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
        {
            assert!(std::time::Instant::now() < deadline, "child did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(sample(pid).is_none());
        child.wait().unwrap();
    }

    #[test]
    fn a_watch_averages_memory_and_finds_this_process_by_name() {
        let mut w = Watch::start(std::process::id()).expect("own /proc entry");
        let i = w.sample().expect("still running");
        assert!(i.rss > 0 && w.average_rss() > 0 && w.peak_rss() >= w.average_rss());
        assert!(i.cpu_percent >= 0.0);
        assert!(Watch::start(u32::MAX).is_none());
        assert_eq!(name(std::process::id()).as_deref(), Some(w.name.as_str()));
        // pids_named skips the caller itself
        assert!(!pids_named(&w.name).contains(&std::process::id()));
    }

    #[test]
    fn interval_cpu_is_cpu_time_over_wall_time() {
        let a = ProcSample::default();
        let b = ProcSample {
            user: Duration::from_millis(300),
            system: Duration::from_millis(200),
            rss: 4096,
            peak_rss: 4096,
            ..Default::default()
        };
        let i = Interval::between(&a, &b, Duration::from_secs(1));
        assert_eq!((i.user_ms, i.sys_ms, i.rss), (300, 200, 4096));
        assert!((i.cpu_percent - 50.0).abs() < 1e-9);
    }

    #[test]
    fn a_thread_that_exited_costs_only_its_last_slice_between_recent_samples() {
        let at = |threads: &[(u32, u64)], ticks_ms: u64| ProcSample {
            user: Duration::from_millis(ticks_ms),
            threads: threads.into(),
            ..Default::default()
        };
        // thread 7 ran 4 ms and exited; 3 ran 2 ms more; 9 started and ran 1 ms
        let before = at(&[(3, 10_000_000), (7, 20_000_000)], 30);
        let after = at(&[(3, 12_000_000), (9, 1_000_000)], 40);
        assert_eq!(after.cpu_since_recent(&before), Duration::from_millis(3));
        // over a long interval the ticks serve instead
        assert_eq!(after.cpu_since(&before), Duration::from_millis(10));
    }

    #[test]
    fn bytes_read_as_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(12 * 1024 * 1024), "12.0 MiB");
    }
}
