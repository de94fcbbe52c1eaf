//! What a source built on the tail reader makes of each file.
//!
//! The tail source's own files take its `tag`, its `multiline` rules and
//! its `message_key`. A source that follows files of a known layout (the
//! kubernetes source: a container runtime's log files, one per container)
//! gives a [`Shape`] instead, and keeps everything else of the reader:
//! discovery, rotation, checkpoints, acknowledgements.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::Multiline;
use crate::format::multiline::Joined;

/// Tag, rules and records of each file, chosen by the source.
pub trait Shape: Send {
    /// Whether `path` is to wait before it is read (what its records need
    /// is a moment away): `Some(t)` to be asked again at `t` or at the
    /// next look after it, the file's lines left unread meanwhile. Only
    /// that file waits; the reader goes on with the others.
    fn hold(&mut self, _path: &Path) -> Option<Instant> {
        None
    }

    /// The tag of records read from `path`.
    fn tag(&mut self, path: &Path) -> String;

    /// The rules that join the lines of `path`, chosen at the first lines
    /// read from it (`first` is the first of them); `None` sends its lines
    /// one by one.
    fn multiline(&mut self, path: &Path, first: &[u8]) -> Option<Arc<Multiline>>;

    /// Writes the `joined` records of `path` into `out` as forward entries
    /// (`[time, record]`) and returns how many it wrote. A record left out
    /// (an excluded container's) is done with: its line is not read again.
    fn write(&mut self, path: &Path, joined: &[Joined], out: &mut Vec<u8>) -> usize;

    /// `path` is no longer followed: what was kept for it can go.
    fn forget(&mut self, _path: &Path) {}
}
