//! The kubelet's container-log layout, written as the container runtime
//! writes it and rotated as the kubelet rotates it:
//!
//! - `<root>/pods/<namespace>_<pod>_<uid>/<container>/0.log`: CRI lines,
//!   `2026-12-06T05:12:07.123456789Z stdout F <text>`, what the
//!   `kubernetes` source reads (`pods_root`);
//! - `<root>/containers/<pod>_<namespace>_<container>-<id>.log`: a symlink
//!   to that `0.log`, as the kubelet makes for agents that tail
//!   `/var/log/containers` (Fluent Bit's `tail`);
//! - at `rotate_bytes`, [`rotate_keeping`] in the kubelet's order.
//!
//! Every line's text is numbered ([`line_text`], read back by
//! [`parse_line`]), so the receiving end counts each one.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::bench::output::open;

/// How often the writer writes what is due: each pod's lines are spread
/// over the second and written in batches this far apart, as a busy
/// container's runtime writes them.
pub const TICK: Duration = Duration::from_millis(10);

/// The kubelet's default `containerLogMaxFiles`: the live file and four
/// rotated ones.
pub const MAX_FILES: usize = 5;

/// Bytes of every line's text (after the CRI prefix).
pub const TEXT_BYTES: usize = 100;

/// The kubelet's rotated-file timestamp (Go's `20060102-150405`).
const KUBELET_TIME: &str = "%Y%m%d-%H%M%S";

/// One container whose log is written.
#[derive(Debug, Clone)]
pub struct Container {
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    pub name: String,
    /// The runtime's id (64 hex digits): the symlink's name ends with it.
    pub id: String,
}

/// The layout under one root, with a live log per container.
pub struct Kubelet {
    /// `<root>/pods`: the kubernetes source's `pods_root`.
    pub pods_root: PathBuf,
    /// `<root>/containers`: what Fluent Bit's `tail` reads.
    pub containers_root: PathBuf,
    logs: Vec<LiveLog>,
    /// The size at which a live log is rotated.
    rotate_bytes: u64,
    /// How often sizes are checked (the kubelet's
    /// `containerLogMonitorInterval`): a log is rotated at a check once it
    /// has reached its size, so a rotated file stays plain, for readers to
    /// finish, until the check after.
    check_every: Duration,
}

/// A container's live `0.log`.
struct LiveLog {
    /// `…/<container>/0.log`.
    path: PathBuf,
    file: File,
    /// Bytes in the live file.
    size: u64,
    /// The size at which the live file is rotated next: the first time a
    /// share of `rotate_bytes` in proportion to the container's place, as
    /// a node in its steady state has live logs at every size; after
    /// that, `rotate_bytes`.
    rotate_at: u64,
    /// Lines written so far.
    written: u64,
}

/// What a writer did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Written {
    /// Lines written in all.
    pub lines: u64,
    /// From the first write to the last.
    pub seconds: f64,
    /// Rotations done.
    pub rotations: u64,
}

impl Kubelet {
    /// Creates the layout under `root` with an empty live log and its
    /// symlink for every container.
    pub fn create(
        root: &Path,
        containers: &[Container],
        rotate_bytes: u64,
        check_every: Duration,
    ) -> Result<Kubelet, String> {
        if rotate_bytes == 0 || check_every.is_zero() {
            return Err("--rotate-bytes and --rotate-check must be positive".into());
        }
        let fail = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
        let pods_root = root.join("pods");
        let containers_root = root.join("containers");
        std::fs::create_dir_all(&containers_root).map_err(|e| fail(&containers_root, e))?;
        let n = containers.len() as u64;
        let mut logs = Vec::with_capacity(containers.len());
        for (i, c) in containers.iter().enumerate() {
            let dir = pods_root
                .join(format!("{}_{}_{}", c.namespace, c.pod, c.uid))
                .join(&c.name);
            std::fs::create_dir_all(&dir).map_err(|e| fail(&dir, e))?;
            let path = dir.join("0.log");
            let file = open(&path)?;
            let link =
                containers_root.join(format!("{}_{}_{}-{}.log", c.pod, c.namespace, c.name, c.id));
            std::os::unix::fs::symlink(&path, &link).map_err(|e| fail(&link, e))?;
            logs.push(LiveLog {
                path,
                file,
                size: 0,
                rotate_at: (rotate_bytes * (i as u64 + 1) / n).max(1),
                written: 0,
            });
        }
        Ok(Kubelet {
            pods_root,
            containers_root,
            logs,
            rotate_bytes,
            check_every,
        })
    }

    /// Writes `rate` lines a second to every container's log for
    /// `seconds` (container `i` of `n` writes its line `k` at
    /// `(k + i/n) / rate` s, in batches every [`TICK`]; a writer that
    /// falls behind catches up in larger batches), rotating the logs that
    /// have reached their size at every check.
    /// `progress` holds the lines written so far; `stop` ends early.
    pub fn write(
        &mut self,
        rate: u32,
        seconds: u64,
        progress: &AtomicU64,
        stop: &AtomicBool,
    ) -> Result<Written, String> {
        let per_log = u64::from(rate) * seconds;
        let n = self.logs.len().max(1) as f64;
        let start = Instant::now();
        let mut buf = Vec::with_capacity(64 * 1024);
        let mut rotations = 0;
        let mut total = 0;
        let mut next = start;
        let mut check = start + self.check_every;
        loop {
            let t = start.elapsed().as_secs_f64();
            let stamp = chrono::Utc::now()
                .format("%Y-%m-%dT%H:%M:%S%.9fZ")
                .to_string();
            let mut done = true;
            for (i, log) in self.logs.iter_mut().enumerate() {
                let due = (t * f64::from(rate) - i as f64 / n).floor() + 1.0;
                let due = (due.max(0.0) as u64).min(per_log);
                if due < per_log {
                    done = false;
                }
                if due <= log.written {
                    continue;
                }
                buf.clear();
                for k in log.written..due {
                    buf.extend_from_slice(stamp.as_bytes());
                    buf.extend_from_slice(b" stdout F ");
                    buf.extend_from_slice(line_text(i, k).as_bytes());
                    buf.push(b'\n');
                }
                log.file
                    .write_all(&buf)
                    .map_err(|e| format!("write {}: {e}", log.path.display()))?;
                log.size += buf.len() as u64;
                total += due - log.written;
                log.written = due;
            }
            if Instant::now() >= check {
                check += self.check_every;
                for log in self.logs.iter_mut().filter(|l| l.size >= l.rotate_at) {
                    rotate_keeping(&log.path, MAX_FILES)
                        .map_err(|e| format!("rotate {}: {e}", log.path.display()))?;
                    log.file = open(&log.path)?;
                    log.size = 0;
                    log.rotate_at = self.rotate_bytes;
                    rotations += 1;
                }
            }
            progress.store(total, Ordering::Relaxed);
            if done || stop.load(Ordering::Relaxed) {
                break;
            }
            next += TICK;
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            } else {
                next = now;
            }
        }
        Ok(Written {
            lines: total,
            seconds: start.elapsed().as_secs_f64(),
            rotations,
        })
    }
}

/// The text of line `n` of container `i`: [`TEXT_BYTES`] bytes, numbered.
pub fn line_text(i: usize, n: u64) -> String {
    const FILLER: &str = "order accepted, stock reserved, payment pending, nothing to report ";
    let mut text = format!("bench pod {i:05} line {n:09} ");
    let pad = TEXT_BYTES.saturating_sub(text.len());
    text.extend(FILLER.chars().cycle().take(pad));
    text
}

/// The container index and line number of a [`line_text`].
pub fn parse_line(text: &[u8]) -> Option<(usize, u64)> {
    let rest = text.strip_prefix(b"bench pod ")?;
    let mut words = rest.split(|b| *b == b' ');
    let pod = std::str::from_utf8(words.next()?).ok()?.parse().ok()?;
    if words.next()? != b"line" {
        return None;
    }
    let n = std::str::from_utf8(words.next()?).ok()?.parse().ok()?;
    Some((pod, n))
}

/// Rotates the live log `live` (`<dir>/<restart>.log`) as the kubelet's
/// container log manager does when it reaches `containerLogMaxSize`
/// (pkg/kubelet/logs/container_log_manager.go, `rotateLog`), in its order:
///
/// 1. of the rotated files `<restart>.log.*`, a `.tmp` left by a failed
///    compression, or a plain file whose `.gz` exists, is removed;
/// 2. the oldest are removed (by name, which sorts by time) until at most
///    `max_files - 2` are left (the live file and the one about to be
///    rotated make `max_files`);
/// 3. each plain rotated file left (the one the previous rotation renamed)
///    is gzipped into `<name>.tmp`, which is renamed to `<name>.gz`, and
///    the plain one removed;
/// 4. `<restart>.log` is renamed to `<restart>.log.<YYYYMMDD-HHMMSS>`
///    (local time), left uncompressed so that a reader can finish it; the
///    runtime then reopens a new `<restart>.log` (the caller's next open).
///
/// The kubelet checks sizes every 10 s, so two rotations never share a
/// second's timestamp; a faster caller gets the timestamp moved past the
/// newest rotated file's when it would not sort after it.
pub fn rotate_keeping(live: &Path, max_files: usize) -> std::io::Result<()> {
    let dir = live.parent().unwrap_or(Path::new("."));
    let name = live
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other("the live log has no UTF-8 name"))?;
    let base = format!("{name}.");
    let rotated = || -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in std::fs::read_dir(dir)? {
            if let Ok(n) = e?.file_name().into_string() {
                if n.starts_with(&base) {
                    names.push(n);
                }
            }
        }
        names.sort();
        Ok(names)
    };
    // 1. unused: temporaries, and plain files already compressed
    let all = rotated()?;
    for n in &all {
        if n.ends_with(".tmp") || all.contains(&format!("{n}.gz")) {
            std::fs::remove_file(dir.join(n))?;
        }
    }
    // 2. at most max_files - 2 rotated files, the oldest go first
    let mut kept = rotated()?;
    let excess = kept.len().saturating_sub(max_files.saturating_sub(2));
    for n in kept.drain(..excess) {
        std::fs::remove_file(dir.join(n))?;
    }
    // 3. compress what the previous rotation left plain
    for n in kept.iter().filter(|n| !n.ends_with(".gz")) {
        let plain = dir.join(n);
        let tmp = dir.join(format!("{n}.tmp"));
        let data = std::fs::read(&plain)?;
        let mut gz =
            flate2::write::GzEncoder::new(File::create(&tmp)?, flate2::Compression::default());
        gz.write_all(&data)?;
        gz.finish()?.sync_all()?;
        std::fs::rename(&tmp, dir.join(format!("{n}.gz")))?;
        std::fs::remove_file(&plain)?;
    }
    // 4. rename the live file; the runtime reopens a new one
    let mut at = chrono::Local::now().naive_local();
    let newest = kept.iter().filter_map(|n| rotated_time(n, &base)).max();
    if let Some(newest) = newest {
        if at.format(KUBELET_TIME).to_string() <= newest.format(KUBELET_TIME).to_string() {
            at = newest + chrono::Duration::seconds(1);
        }
    }
    std::fs::rename(live, dir.join(format!("{base}{}", at.format(KUBELET_TIME))))
}

/// The time in a rotated file's name `<base><YYYYMMDD-HHMMSS>[.gz]`.
fn rotated_time(name: &str, base: &str) -> Option<chrono::NaiveDateTime> {
    let ts = name.strip_prefix(base)?;
    let ts = ts.strip_suffix(".gz").unwrap_or(ts);
    chrono::NaiveDateTime::parse_from_str(ts, KUBELET_TIME).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_and_of_one_size() {
        for (i, n) in [(0, 0), (109, 59_999), (4_999, 123_456_789)] {
            let t = line_text(i, n);
            assert_eq!(t.len(), TEXT_BYTES, "{t}");
            assert_eq!(parse_line(t.as_bytes()), Some((i, n)), "{t}");
        }
        assert_eq!(parse_line(b"bench pod x line 1 "), None);
        assert_eq!(parse_line(b"something else"), None);
    }

    #[test]
    fn rotation_keeps_five_files_and_gzips_all_but_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("0.log");
        for round in 0..7 {
            std::fs::write(&live, format!("round {round}\n")).unwrap();
            rotate_keeping(&live, MAX_FILES).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        // the live file is reopened by the writer, not here
        assert_eq!(names.len(), MAX_FILES - 1, "{names:?}");
        assert_eq!(names.iter().filter(|n| n.ends_with(".gz")).count(), 3);
        let newest = names.iter().find(|n| !n.ends_with(".gz")).unwrap();
        assert_eq!(
            names.last().map(|n| n.trim_end_matches(".gz")),
            Some(newest.as_str())
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(newest)).unwrap(),
            "round 6\n"
        );
    }

    #[test]
    fn the_writer_writes_every_line_spread_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let containers: Vec<Container> = (0..3)
            .map(|i| Container {
                namespace: "ns".into(),
                pod: format!("p{i}"),
                uid: format!("u{i}"),
                name: "app".into(),
                id: format!("{i:064x}"),
            })
            .collect();
        let mut k =
            Kubelet::create(dir.path(), &containers, 2_000, Duration::from_millis(300)).unwrap();
        let progress = AtomicU64::new(0);
        let w = k.write(50, 1, &progress, &AtomicBool::new(false)).unwrap();
        assert_eq!(w.lines, 150);
        assert_eq!(progress.load(Ordering::Relaxed), 150);
        // 50 lines of about 140 B a second, checked three times: each log
        // is past its size at two checks at least
        assert!(w.rotations >= 6, "{w:?}");
        let link = dir
            .path()
            .join(format!("containers/p1_ns_app-{:064x}.log", 1));
        assert_eq!(
            std::fs::canonicalize(&link).unwrap(),
            std::fs::canonicalize(dir.path().join("pods/ns_p1_u1/app/0.log")).unwrap()
        );
    }
}
