//! Files a source keeps across restarts (a tail checkpoint, a journal
//! cursor), replaced whole so that a crash at any moment leaves either the
//! old or the new content, never a torn one.

use std::io::Write;
use std::path::Path;

/// Atomically replaces `dir/name` with `bytes`: written to `name.tmp`,
/// fsynced, renamed over `name`, and the directory fsynced (created first
/// if missing).
pub fn replace(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{name}.tmp"));
    {
        // closed before the directory is opened: one spare descriptor is
        // enough for the whole write
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("state");
        replace(&sub, "x.cursor", b"one").unwrap();
        replace(&sub, "x.cursor", b"two").unwrap();
        assert_eq!(std::fs::read(sub.join("x.cursor")).unwrap(), b"two");
        assert!(!sub.join("x.cursor.tmp").exists());
    }
}
