//! Letting go of start-up code. Reading the configuration, the command
//! line and starting every component runs code that a running pipeline
//! never runs again, and the kernel maps each page of it (with its
//! neighbours: a fault maps up to 64 KiB around it) into the process for
//! good: about two thirds of the resident code of an agent that tails one
//! file. Once the pipeline has run for a while, [`unmap_idle_code`] drops
//! the process's mappings of its code and read-only data; what it still
//! runs is mapped again from the page cache at the next use (a minor
//! fault), so only the code in use stays resident.
//!
//! Only pages that are exactly the file's are dropped: mappings that are
//! read-only and private, backed by a file, and hold no page of their own
//! (a relocated `RELRO` page, a debugger's or uprobe's breakpoint), so
//! what is mapped again is byte for byte what was there.

use std::io;
use std::time::Duration;

/// How long after a start (or a reload) its code is let go of: the
/// components' threads are past their own start-up by then.
const AFTER_START: Duration = Duration::from_secs(2);

/// [`unmap_idle_code`] a little after now ([`AFTER_START`]), off the
/// runtime's worker threads; logs what was dropped (debug). Called from
/// within a runtime.
pub fn release_soon() {
    tokio::spawn(unmap_after(AFTER_START));
}

async fn unmap_after(after: Duration) {
    tokio::time::sleep(after).await;
    match tokio::task::spawn_blocking(unmap_idle_code).await {
        Ok(Ok(u)) => tracing::debug!(
            mappings = u.mappings,
            resident_bytes = u.resident_bytes,
            "start-up code unmapped; the code in use is mapped again as it runs"
        ),
        Ok(Err(e)) => tracing::debug!(error = %e, "cannot read this process's mappings"),
        Err(_) => {}
    }
}

/// What [`unmap_idle_code`] dropped.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unmapped {
    /// Mappings dropped.
    pub mappings: usize,
    /// Their resident bytes before.
    pub resident_bytes: u64,
}

/// One mapping of `/proc/self/smaps`, as far as this module needs it.
#[derive(Debug, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    /// Read-only, private, backed by a file.
    file_read_only: bool,
    resident_kib: u64,
    /// Pages of the process's own (copy-on-write copies).
    anonymous_kib: u64,
}

/// Drops the mappings of read-only file pages (code and constant data of
/// the program and its libraries) that hold no page of the process's own.
pub fn unmap_idle_code() -> io::Result<Unmapped> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    let mut done = Unmapped::default();
    for m in parse_smaps(&smaps)
        .into_iter()
        .filter(|m| m.file_read_only && m.anonymous_kib == 0 && m.resident_kib > 0)
    {
        // SAFETY: the range is one whole mapping of this process, read-only
        // and private to it, with no page of its own: MADV_DONTNEED only
        // unmaps its pages, and the next access maps the file's same bytes
        // again. Nothing is freed that anything points into.
        let r = unsafe {
            libc::madvise(
                m.start as *mut libc::c_void,
                m.end - m.start,
                libc::MADV_DONTNEED,
            )
        };
        if r == 0 {
            done.mappings += 1;
            done.resident_bytes += m.resident_kib * 1024;
        }
    }
    Ok(done)
}

/// The mappings of an smaps text; a line it does not know is skipped.
fn parse_smaps(text: &str) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((start, end)) = first.split_once('-').and_then(|(a, b)| {
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        }) {
            let perms = fields.next().unwrap_or("");
            // offset, device, inode, then the path (absent for anonymous)
            let inode = fields.nth(2).unwrap_or("0");
            let path = fields.next().unwrap_or("");
            out.push(Mapping {
                start,
                end,
                file_read_only: perms.len() == 4
                    && !perms.contains('w')
                    && perms.ends_with('p')
                    && perms.starts_with('r')
                    && inode != "0"
                    && path.starts_with('/'),
                resident_kib: 0,
                // until smaps says: taken as having pages of its own
                anonymous_kib: u64::MAX,
            });
            continue;
        }
        let Some(m) = out.last_mut() else { continue };
        let kib = || fields.clone().next().and_then(|v| v.parse::<u64>().ok());
        match first {
            "Rss:" => m.resident_kib = kib().unwrap_or(0),
            "Anonymous:" => m.anonymous_kib = kib().unwrap_or(u64::MAX),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d0c0000000-55d0c0835000 r--p 00000000 fe:01 1234 /usr/bin/logferry
Size:               8404 kB
Rss:                1652 kB
Anonymous:             0 kB
55d0c0835000-55d0c1eb9000 r-xp 00835000 fe:01 1234 /usr/bin/logferry
Size:              23056 kB
Rss:                8560 kB
Anonymous:             0 kB
55d0c20ad000-55d0c21a0000 r--p 020ad000 fe:01 1234 /usr/bin/logferry
Size:                972 kB
Rss:                 972 kB
Anonymous:           972 kB
55d0c21a0000-55d0c21a2000 rw-p 021a0000 fe:01 1234 /usr/bin/logferry
Rss:                   8 kB
Anonymous:             8 kB
55d0c3000000-55d0c3100000 rw-p 00000000 00:00 0 [heap]
Rss:                1024 kB
Anonymous:          1024 kB
7f0000000000-7f0000001000 r--p 00000000 00:00 0
Rss:                   4 kB
Anonymous:             0 kB
7f0000100000-7f0000200000 r-xp 00000000 fe:01 99 /usr/lib/libc.so.6
Rss:                 900 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
Rss:                   8 kB
Anonymous:             0 kB
";

    #[test]
    fn only_read_only_file_mappings_without_pages_of_their_own_are_dropped() {
        let kept: Vec<(usize, u64)> = parse_smaps(SMAPS)
            .into_iter()
            .filter(|m| m.file_read_only && m.anonymous_kib == 0)
            .map(|m| (m.start, m.resident_kib))
            .collect();
        // the program's constants and code; not its relocated RELRO
        // pages, its data, the heap, an anonymous read-only page, a
        // mapping whose own pages are not reported, nor the vdso
        assert_eq!(kept, vec![(0x55d0c0000000, 1652), (0x55d0c0835000, 8560)]);
    }

    #[test]
    fn dropping_the_code_of_this_process_leaves_it_running() {
        let before = unmap_idle_code().expect("smaps is readable");
        assert!(before.mappings > 0, "{before:?}");
        // the code that runs now is mapped again on the way
        let again = parse_smaps(&std::fs::read_to_string("/proc/self/smaps").unwrap());
        assert!(again.iter().any(|m| m.file_read_only && m.resident_kib > 0));
    }
}
