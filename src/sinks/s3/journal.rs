//! The journal of multipart uploads in progress, so that a crash never
//! leaves one behind for good: at the next start every upload it lists is
//! aborted (its records were never acknowledged: their sources, or the
//! disk buffer, send them again).
//!
//! An upload abandoned after a failed attempt whose abort failed too (the
//! store was down) stays listed, marked `abandoned`: it is aborted as soon
//! as the store answers again, in the same run. Its records went into the
//! next attempt, so if a start finds it still listed, it says so rather
//! than that they come again.
//!
//! ## File format
//!
//! `<state_dir>/s3-<sink name>.uploads`: one JSON object per line,
//! `{"key": "<object key>", "upload_id": "<S3 UploadId>"}`, one line per
//! upload started and not yet completed or aborted; `"abandoned": true`
//! is added once an attempt failed and the upload is only to be aborted. The whole file is
//! rewritten (a temporary file, fsynced, renamed over it) whenever an
//! upload starts or ends, so it is never half written.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One multipart upload started and not yet ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    /// The object's key.
    pub key: String,
    /// S3's id of the upload.
    pub upload_id: String,
    /// An attempt that failed left it: its records went into the next
    /// attempt, and it is only to be aborted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandoned: bool,
}

/// The journal file and what it lists.
#[derive(Debug)]
pub struct Journal {
    /// The file; `None`: no `state_dir`, nothing kept.
    path: Option<PathBuf>,
    /// Uploads started and not yet ended.
    started: Vec<Started>,
}

impl Journal {
    /// Opens the journal of sink `name` in `dir` (created if needed); the
    /// uploads a previous run left are in [`Journal::left`].
    pub fn open(dir: Option<&Path>, name: &str) -> io::Result<Journal> {
        let Some(dir) = dir else {
            return Ok(Journal {
                path: None,
                started: Vec::new(),
            });
        };
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("s3-{name}.uploads"));
        let started = match std::fs::read_to_string(&path) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                // a line that cannot be read names no upload we could abort
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(Journal {
            path: Some(path),
            started,
        })
    }

    /// The uploads listed now.
    pub fn left(&self) -> &[Started] {
        &self.started
    }

    /// Notes an upload started; on disk before this returns.
    pub fn add(&mut self, s: Started) -> io::Result<()> {
        self.started.push(s);
        self.write()
    }

    /// Notes that a failed attempt left `upload_id`, to be aborted.
    pub fn abandon(&mut self, upload_id: &str) -> io::Result<()> {
        for s in self.started.iter_mut().filter(|s| s.upload_id == upload_id) {
            s.abandoned = true;
        }
        self.write()
    }

    /// The uploads abandoned by failed attempts, still to be aborted.
    pub fn abandoned(&self) -> Vec<Started> {
        self.started
            .iter()
            .filter(|s| s.abandoned)
            .cloned()
            .collect()
    }

    /// Notes an upload completed or aborted.
    pub fn remove(&mut self, upload_id: &str) -> io::Result<()> {
        self.started.retain(|s| s.upload_id != upload_id);
        self.write()
    }

    fn write(&self) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut text = String::new();
        for s in &self.started {
            text.push_str(&serde_json::to_string(s).map_err(io::Error::other)?);
            text.push('\n');
        }
        let tmp = path.with_extension("uploads.tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(id: &str) -> Started {
        Started {
            key: format!("k/{id}"),
            upload_id: id.into(),
            abandoned: false,
        }
    }

    #[test]
    fn uploads_left_by_a_run_are_read_at_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(Some(dir.path()), "s3").unwrap();
        assert!(j.left().is_empty());
        j.add(started("a")).unwrap();
        j.add(started("b")).unwrap();
        j.remove("a").unwrap();
        // a crash here: the next run sees `b` only
        drop(j);
        let mut j = Journal::open(Some(dir.path()), "s3").unwrap();
        assert_eq!(j.left(), &[started("b")]);
        j.remove("b").unwrap();
        let j = Journal::open(Some(dir.path()), "s3").unwrap();
        assert!(j.left().is_empty());
        // another sink has its own journal
        let j = Journal::open(Some(dir.path()), "other").unwrap();
        assert!(j.left().is_empty());
    }

    #[test]
    fn abandoned_uploads_are_marked_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(Some(dir.path()), "s3").unwrap();
        j.add(started("a")).unwrap();
        j.add(started("b")).unwrap();
        j.abandon("a").unwrap();
        let text = std::fs::read_to_string(dir.path().join("s3-s3.uploads")).unwrap();
        assert_eq!(
            text,
            "{\"key\":\"k/a\",\"upload_id\":\"a\",\"abandoned\":true}\n{\"key\":\"k/b\",\"upload_id\":\"b\"}\n"
        );
        let j = Journal::open(Some(dir.path()), "s3").unwrap();
        assert_eq!(j.abandoned().len(), 1);
        assert!(j.left()[0].abandoned && !j.left()[1].abandoned);
    }

    #[test]
    fn without_a_state_dir_nothing_is_kept() {
        let mut j = Journal::open(None, "s3").unwrap();
        j.add(started("a")).unwrap();
        assert_eq!(j.left().len(), 1);
    }
}
