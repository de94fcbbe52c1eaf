//! What reaches a receiver of a deliver scenario: the lines of its output
//! file, counted as they appear, and the end-to-end latency of each line
//! that carries a write-time stamp (`stamp.rs`).
//!
//! A thread per receiver follows the one file its receiver writes (in a
//! directory of its own; the file is found by listing the directory, so a
//! system that names its file itself, as Fluentd's `out_file` does, is
//! followed too). It sleeps in poll(2) on an inotify watch of that
//! directory, so it wakes as soon as the receiver writes, and at the
//! latest every [`POLL`] when no event comes.
//!
//! A line is *seen* when the read(2) that returns its last byte returns:
//! the system clock is read once right after each read, and every line
//! completed by that read is seen at that time. Latency = seen − stamp,
//! kept in microseconds. Its bias: the time between the receiver's
//! write(2) and this thread's read (a thread wake-up: tens of
//! microseconds on an idle core, up to a few milliseconds when every core
//! is busy; at most [`POLL`] if an inotify event were missed), plus the
//! writer's own bias (its lines are stamped just before their write(2)).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::bench::stamp;

/// The longest the follower sleeps without an inotify event.
pub const POLL: Duration = Duration::from_millis(10);

/// Bytes read at a time.
const READ_SIZE: usize = 1 << 20;

/// Following one receiver's output file; stops when dropped.
pub struct Arrivals {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What the follower thread and the scenario share.
struct Shared {
    /// Complete lines read so far.
    lines: AtomicU64,
    /// Latencies (µs) of the stamped lines read since the last
    /// [`Arrivals::take_latencies`].
    latencies: Mutex<Vec<u32>>,
    /// Why the follower stopped early (the directory holds more than one
    /// file, a read failed).
    error: Mutex<Option<String>>,
    stop: AtomicBool,
}

impl Arrivals {
    /// Follows the one file that appears in `dir` (which must exist).
    pub fn follow(dir: &Path) -> Result<Arrivals, String> {
        let watch = DirWatch::new(dir).map_err(|e| format!("inotify on {}: {e}", dir.display()))?;
        let shared = Arc::new(Shared {
            lines: AtomicU64::new(0),
            latencies: Mutex::new(Vec::new()),
            error: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let (s, dir) = (shared.clone(), dir.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("bench-arrivals".into())
            .spawn(move || {
                if let Err(e) = follow(&dir, &watch, &s) {
                    *s.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                }
            })
            .map_err(|e| format!("cannot start a follower thread: {e}"))?;
        Ok(Arrivals {
            shared,
            thread: Some(thread),
        })
    }

    /// Lines arrived so far.
    pub fn lines(&self) -> u64 {
        self.shared.lines.load(Ordering::Acquire)
    }

    /// The latencies (µs) of the stamped lines arrived since the last call.
    pub fn take_latencies(&self) -> Vec<u32> {
        std::mem::take(
            &mut *self
                .shared
                .latencies
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Why the follower stopped, if it did.
    pub fn error(&self) -> Option<String> {
        self.shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Arrivals {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The follower thread: waits for changes, reads what was appended.
fn follow(dir: &Path, watch: &DirWatch, shared: &Shared) -> Result<(), String> {
    let mut file: Option<File> = None;
    let mut buf = vec![0u8; READ_SIZE];
    let mut lines = Lines::default();
    while !shared.stop.load(Ordering::Acquire) {
        watch.wait(POLL);
        if file.is_none() {
            file = match the_file(dir)? {
                Some(p) => Some(File::open(&p).map_err(|e| format!("{}: {e}", p.display()))?),
                None => continue,
            };
        }
        let Some(f) = file.as_mut() else { continue };
        loop {
            let n = f
                .read(&mut buf)
                .map_err(|e| format!("reading {}: {e}", dir.display()))?;
            if n == 0 {
                break;
            }
            let seen = stamp::now_nanos();
            let mut latencies = Vec::new();
            let complete = lines.add(&buf[..n], seen, &mut latencies);
            if !latencies.is_empty() {
                shared
                    .latencies
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&latencies);
            }
            // counted after the latencies are in: a step that sees the
            // count complete also has every latency
            shared.lines.fetch_add(complete, Ordering::Release);
        }
    }
    Ok(())
}

/// The one regular file in `dir`, if there is one yet.
fn the_file(dir: &Path) -> Result<Option<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    match files.len() {
        0 => Ok(None),
        1 => Ok(files.pop()),
        _ => {
            files.sort();
            Err(format!(
                "the receiver wrote {} files instead of one: {files:?}",
                files.len()
            ))
        }
    }
}

/// Splits what is read into lines, across reads.
#[derive(Default)]
struct Lines {
    /// The start of a line whose end has not been read yet.
    partial: Vec<u8>,
}

impl Lines {
    /// Takes `bytes` read at `seen` (ns since the epoch); pushes the
    /// latency (µs) of every stamped line they complete; returns the
    /// number of lines they complete.
    fn add(&mut self, mut bytes: &[u8], seen: u64, latencies: &mut Vec<u32>) -> u64 {
        let mut complete = 0;
        let mut line = |l: &[u8]| {
            complete += 1;
            if let Some(t) = stamp::find(l) {
                let micros = seen.saturating_sub(t) / 1000;
                latencies.push(micros.min(u64::from(u32::MAX)) as u32);
            }
        };
        if !self.partial.is_empty() {
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                self.partial.extend_from_slice(bytes);
                return 0;
            };
            self.partial.extend_from_slice(&bytes[..end]);
            line(&self.partial);
            self.partial.clear();
            bytes = &bytes[end + 1..];
        }
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', bytes) {
            line(&bytes[start..end]);
            start = end + 1;
        }
        self.partial.extend_from_slice(&bytes[start..]);
        complete
    }
}

/// An inotify watch of one directory, waited on with a timeout.
struct DirWatch {
    fd: OwnedFd,
}

impl DirWatch {
    fn new(dir: &Path) -> std::io::Result<DirWatch> {
        // SAFETY: inotify_init1 takes flags only and returns a descriptor
        // or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        let mask = libc::IN_CREATE | libc::IN_MODIFY | libc::IN_MOVED_TO | libc::IN_ONLYDIR;
        // SAFETY: a valid descriptor and C string.
        if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), mask) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(DirWatch { fd })
    }

    /// Returns when something changed in the directory or after
    /// `timeout`, the events read and dropped (the file is read to its end
    /// whatever they say).
    fn wait(&self, timeout: Duration) {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, timeout.as_millis() as libc::c_int) };
        let mut buf = [0u8; 4096];
        // SAFETY: reads into our buffer, within its length; the
        // descriptor is non-blocking, so this ends at -1 (EAGAIN).
        while unsafe { libc::read(p.fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stamp::Stamp;
    use std::io::Write;
    use std::time::Instant;

    #[test]
    fn lines_are_counted_across_reads_and_stamped_ones_timed() {
        let mut l = Lines::default();
        let mut lat = Vec::new();
        let t = 1_764_201_600_000_000_000u64;
        let line = |n: u64| {
            let mut v = Vec::new();
            stamp::numbered_line(&mut v, format!("{n:012}").as_bytes(), 40, &Stamp::at(t + n));
            v
        };
        let mut all = line(0);
        all.extend_from_slice(b"no stamp here\n");
        all.extend_from_slice(&line(2_000_000));
        // the second stamped line is split over two reads, mid-stamp
        let cut = all.len() - 20;
        assert_eq!(l.add(&all[..cut], t + 5_000_000, &mut lat), 2);
        assert_eq!(lat, [5000]);
        assert_eq!(l.add(&all[cut..cut + 1], t + 6_000_000, &mut lat), 0);
        assert_eq!(l.add(&all[cut + 1..], t + 7_000_000, &mut lat), 1);
        // seen at 7 ms, written at 2 ms
        assert_eq!(lat, [5000, 5000]);
        // a stamp from the future (another clock) counts as 0
        assert_eq!(l.add(&line(9_000_000), t, &mut lat), 1);
        assert_eq!(lat[2], 0);
    }

    #[test]
    fn the_file_that_appears_is_followed_and_its_lines_timed() {
        let dir = tempfile::tempdir().unwrap();
        let a = Arrivals::follow(dir.path()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(a.lines(), 0);
        // a system that names its file itself
        let mut f = File::create(dir.path().join("out.20261126.log")).unwrap();
        for round in 0..5u64 {
            let mut batch = Vec::new();
            let s = Stamp::now();
            for i in 0..100 {
                stamp::numbered_line(&mut batch, format!("{round}{i:011}").as_bytes(), 60, &s);
            }
            // a line cut in two writes
            f.write_all(&batch[..150]).unwrap();
            f.write_all(&batch[150..]).unwrap();
            std::thread::sleep(Duration::from_millis(5));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while a.lines() < 500 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(a.lines(), 500);
        let lat = a.take_latencies();
        assert_eq!(lat.len(), 500);
        // written just now: well under the deadline's 10 s
        assert!(lat.iter().all(|&us| us < 10_000_000), "{lat:?}");
        assert!(a.take_latencies().is_empty());
        assert!(a.error().is_none());
        // once found, the file is followed whatever else appears
        File::create(dir.path().join("other.log")).unwrap();
        f.write_all(b"x\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while a.lines() < 501 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(a.lines(), 501);
        assert!(a.error().is_none());
    }

    #[test]
    fn two_files_at_once_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.log"), "1\n").unwrap();
        std::fs::write(dir.path().join("b.log"), "2\n").unwrap();
        let a = Arrivals::follow(dir.path()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while a.error().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = a.error().unwrap();
        assert!(e.contains("wrote 2 files instead of one"), "{e}");
    }
}
