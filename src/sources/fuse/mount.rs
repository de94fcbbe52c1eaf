//! Preparing the mountpoint and leaving it clean: stale mounts of a killed
//! process are found and detached at start, and unmounting falls back to
//! detaching when a process still has a file open in the mount (so the
//! mount never outlives logferry in the mount table).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What was found on the mountpoint at start.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// An ordinary directory (created if it was missing).
    Directory,
    /// A stale mount ("Transport endpoint is not connected"), now detached.
    StaleMountCleaned,
}

/// Makes `path` ready to mount on; returns what was there.
pub fn prepare(path: &Path) -> Result<Found, String> {
    let mut found = Found::Directory;
    // several stale mounts may be stacked on one directory
    for _ in 0..16 {
        match std::fs::metadata(path) {
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => {
                umount(path, libc::MNT_DETACH).map_err(|e| {
                    format!(
                        "mountpoint {} holds a stale mount (its process died without unmounting) that cannot be removed: {e}; run `umount -l {}` as root",
                        path.display(),
                        path.display()
                    )
                })?;
                found = Found::StaleMountCleaned;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir_all(path).map_err(|e| {
                    format!("cannot create mountpoint {}: {e}", path.display())
                })?;
                return Ok(found);
            }
            Err(e) => return Err(format!("mountpoint {}: {e}", path.display())),
            Ok(m) if !m.is_dir() => {
                return Err(format!(
                    "mountpoint {} is not a directory",
                    path.display()
                ))
            }
            Ok(_) if is_mount_point(path) => {
                return Err(format!(
                    "mountpoint {} is already a mount point (another logferry running? if not, `umount {}` first)",
                    path.display(),
                    path.display()
                ))
            }
            Ok(_) => return Ok(found),
        }
    }
    Err(format!(
        "mountpoint {}: stale mounts keep coming back",
        path.display()
    ))
}

/// How an unmount went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmounted {
    Clean,
    /// Busy (a file open in it): detached from the mount table; the kernel
    /// ends it once the last descriptor is closed or logferry exits.
    Detached,
    NotMounted,
}

/// Detaches the mount on `path` from the mount table (`umount -l`).
pub fn detach(path: &Path) -> io::Result<()> {
    umount(path, libc::MNT_DETACH)
}

fn umount(path: &Path, flags: i32) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    // SAFETY: a valid NUL-terminated path; umount2 does not keep it.
    if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// True if `path` is listed as a mount point in /proc/self/mountinfo.
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(path) = std::fs::canonicalize(path) else {
        return false;
    };
    mount_points().contains(&path)
}

/// Mount points of this process's namespace.
pub fn mount_points() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape(p)))
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape(r"/mnt/a\040b"), "/mnt/a b");
        assert_eq!(unescape(r"/x\134y"), r"/x\y");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"/end\"), r"/end\");
    }

    #[test]
    fn root_is_a_mount_point_and_a_fresh_directory_is_not() {
        assert!(is_mount_point(Path::new("/")));
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("new/mnt");
        assert_eq!(prepare(&m), Ok(Found::Directory));
        assert!(m.is_dir(), "created");
        assert!(!is_mount_point(&m));
        let f = d.path().join("file");
        std::fs::write(&f, b"x").unwrap();
        assert!(prepare(&f).unwrap_err().contains("not a directory"));
    }
}
