//! How far the journal has been read *and acknowledged by every sink*:
//! the batches handed over, in journal order, and the cursor of the last
//! entry of the longest run of acknowledged batches at the front. That
//! cursor is what the cursor file keeps, so a restart (even after kill -9)
//! resends at most what was not yet acknowledged and skips nothing.
//!
//! A batch a sink did not keep (rejected) sends the reader back to the
//! first entry not acknowledged: everything from there is read and handed
//! over again (at least once). Batches handed over before the rewind are
//! forgotten; their late verdicts are ignored (a new generation).
//!
//! ## The cursor file
//!
//! `CHECKPOINT_DIR/SOURCE_NAME.cursor`, UTF-8 text:
//!
//! ```text
//! # logferry journald cursor v1
//! s=…;i=…;b=…;m=…;t=…;x=…
//! ```
//!
//! The second line is sd-journal's cursor of the last acknowledged entry.
//! The file is replaced whole (`sources::durable`).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::ack::AckOutcome;

const HEADER: &str = "# logferry journald cursor v1";

/// One batch handed over (or several, one per tag, read together).
#[derive(Debug)]
struct InFlight {
    seq: u64,
    /// Cursor of its first entry: where a rewind starts reading again.
    first: String,
    /// Cursor of its last entry: acknowledged once the batch is.
    last: String,
    /// Batches of it (one per tag) still without a verdict.
    remaining: usize,
    /// Not all of it was handed over (a stop gave it up): it is never
    /// acknowledged, and nothing after it is.
    abandoned: bool,
}

/// What a verdict changed.
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    /// Nothing to do yet (an earlier batch still waits, or a stale verdict).
    Waiting,
    /// The acknowledged cursor moved on.
    Advanced,
    /// A batch was not kept: the reader goes back to this cursor.
    Rewind(String),
}

/// The batches in flight and the acknowledged cursor.
#[derive(Debug, Default)]
pub struct Progress {
    generation: u64,
    next_seq: u64,
    in_flight: VecDeque<InFlight>,
    /// Cursor of the last entry acknowledged in order.
    acked: Option<String>,
    /// `acked` moved since the cursor file was written.
    pub dirty: bool,
    /// Where the reader is to read again from, with the generation it
    /// reads under from then on.
    rewind: Option<(String, u64)>,
}

impl Progress {
    /// Starts from the cursor a previous run acknowledged.
    pub fn new(acked: Option<String>) -> Self {
        Progress {
            acked,
            ..Progress::default()
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Records a handed-over read of `batches` batches from entry `first`
    /// to `last`; `None` when it was read before a rewind (`generation`
    /// is stale) and must not be handed over.
    pub fn begin(
        &mut self,
        generation: u64,
        first: String,
        last: String,
        batches: usize,
    ) -> Option<u64> {
        if generation != self.generation {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight.push_back(InFlight {
            seq,
            first,
            last,
            remaining: batches,
            abandoned: false,
        });
        Some(seq)
    }

    /// A verdict on one batch of read `seq`.
    pub fn settle(&mut self, generation: u64, seq: u64, outcome: &AckOutcome) -> Settled {
        if generation != self.generation {
            return Settled::Waiting;
        }
        if !outcome.is_done() {
            // everything before the front is acknowledged: read again
            // from the front's first entry
            let Some(front) = self.in_flight.front() else {
                return Settled::Waiting;
            };
            let at = front.first.clone();
            self.generation += 1;
            self.in_flight.clear();
            self.rewind = Some((at.clone(), self.generation));
            return Settled::Rewind(at);
        }
        let Some(f) = self.get_mut(seq) else {
            return Settled::Waiting;
        };
        f.remaining = f.remaining.saturating_sub(1);
        let mut advanced = false;
        while self
            .in_flight
            .front()
            .is_some_and(|f| f.remaining == 0 && !f.abandoned)
        {
            let done = self.in_flight.pop_front().expect("checked just above");
            self.acked = Some(done.last);
            advanced = true;
        }
        if advanced {
            self.dirty = true;
            Settled::Advanced
        } else {
            Settled::Waiting
        }
    }

    /// The rewind the reader has not taken yet: the cursor to read from
    /// (that entry included) and the generation to read under.
    pub fn take_rewind(&mut self) -> Option<(String, u64)> {
        self.rewind.take()
    }

    /// Read `seq`, found by its place: the reads in flight have
    /// consecutive numbers (handed out in order, taken off the front, all
    /// dropped at a rewind).
    fn get_mut(&mut self, seq: u64) -> Option<&mut InFlight> {
        let front = self.in_flight.front()?.seq;
        let at = usize::try_from(seq.checked_sub(front)?).ok()?;
        self.in_flight.get_mut(at).filter(|f| f.seq == seq)
    }

    /// Whether a rewind waits for the reader.
    pub fn has_rewind(&self) -> bool {
        self.rewind.is_some()
    }

    /// Read `seq` was not handed over whole: it is read again after a
    /// restart.
    pub fn abandon(&mut self, seq: u64) {
        if let Some(f) = self.get_mut(seq) {
            f.abandoned = true;
        }
    }

    /// Reads whose verdicts can still move the cursor (those before an
    /// abandoned one).
    pub fn unsettled(&self) -> usize {
        self.in_flight.iter().take_while(|f| !f.abandoned).count()
    }

    pub fn acked(&self) -> Option<&str> {
        self.acked.as_deref()
    }
}

/// The cursor file of one source.
#[derive(Debug, Clone)]
pub struct CursorFile {
    dir: PathBuf,
    name: String,
}

impl CursorFile {
    pub fn new(dir: &Path, source: &str) -> Self {
        CursorFile {
            dir: dir.to_path_buf(),
            name: format!("{source}.cursor"),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// The saved cursor; `None` on a first start. A file that does not
    /// read is an error: starting over would read the journal again.
    pub fn load(&self) -> Result<Option<String>, String> {
        let path = self.path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let mut lines = text.lines();
        match (lines.next(), lines.next()) {
            (Some(HEADER), Some(cursor)) if !cursor.trim().is_empty() => {
                Ok(Some(cursor.trim().to_string()))
            }
            (Some(HEADER), None) => Ok(None),
            _ => Err(format!(
                "{} is not a logferry journald cursor file (remove it to read from read_from again)",
                path.display()
            )),
        }
    }

    pub fn save(&self, cursor: &str) -> std::io::Result<()> {
        let text = format!("{HEADER}\n{cursor}\n");
        crate::sources::durable::replace(&self.dir, &self.name, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ack::AckOutcome::{Accepted, Rejected};

    fn c(n: u32) -> String {
        format!("i={n}")
    }

    #[test]
    fn the_cursor_moves_only_past_acknowledged_reads_in_order() {
        let mut p = Progress::new(None);
        let a = p.begin(0, c(1), c(10), 1).unwrap();
        let b = p.begin(0, c(11), c(20), 2).unwrap();
        assert_eq!(p.settle(0, b, &Accepted), Settled::Waiting);
        assert_eq!(p.acked(), None, "the earlier read still waits");
        assert_eq!(p.settle(0, a, &Accepted), Settled::Advanced);
        assert_eq!(p.acked(), Some("i=10"), "b has one of its two batches left");
        assert_eq!(p.settle(0, b, &Accepted), Settled::Advanced);
        assert_eq!(p.acked(), Some("i=20"));
        assert_eq!(p.unsettled(), 0);
        assert!(p.dirty);
    }

    #[test]
    fn a_rejection_rewinds_to_the_first_unacknowledged_entry_and_forgets_the_rest() {
        let mut p = Progress::new(Some(c(0)));
        let a = p.begin(0, c(1), c(10), 1).unwrap();
        let b = p.begin(0, c(11), c(20), 1).unwrap();
        assert_eq!(p.settle(0, a, &Accepted), Settled::Advanced);
        assert_eq!(p.settle(0, b, &Rejected), Settled::Rewind(c(11)));
        assert_eq!(p.take_rewind(), Some((c(11), 1)));
        assert_eq!(p.take_rewind(), None);
        // a read made before the rewind is not handed over, late verdicts
        // are ignored
        assert_eq!(p.begin(0, c(21), c(30), 1), None);
        assert_eq!(p.settle(0, b, &Accepted), Settled::Waiting);
        assert_eq!(p.acked(), Some("i=10"));
        let again = p.begin(1, c(11), c(20), 1).unwrap();
        assert_eq!(p.settle(1, again, &Accepted), Settled::Advanced);
        assert_eq!(p.acked(), Some("i=20"));
    }

    #[test]
    fn an_abandoned_read_holds_the_cursor_before_it() {
        let mut p = Progress::new(None);
        let a = p.begin(0, c(1), c(10), 1).unwrap();
        let b = p.begin(0, c(11), c(20), 2).unwrap();
        let later = p.begin(0, c(21), c(30), 1).unwrap();
        p.abandon(b);
        assert_eq!(p.unsettled(), 1, "only a can still move the cursor");
        assert_eq!(p.settle(0, b, &Accepted), Settled::Waiting);
        assert_eq!(p.settle(0, later, &Accepted), Settled::Waiting);
        assert_eq!(p.settle(0, a, &Accepted), Settled::Advanced);
        assert_eq!(p.acked(), Some("i=10"));
        assert_eq!(p.unsettled(), 0);
    }

    #[test]
    fn refused_records_are_done_with() {
        let mut p = Progress::new(None);
        let a = p.begin(0, c(1), c(2), 1).unwrap();
        let refusal = crate::ack::Refusal {
            sink: "s".into(),
            kind: "k",
            message: String::new(),
            records: 1,
            first: String::new(),
            dead_lettered: true,
        };
        let outcome = AckOutcome::Refused(std::sync::Arc::new(refusal));
        assert_eq!(p.settle(0, a, &outcome), Settled::Advanced);
    }

    #[test]
    fn the_cursor_file_round_trips_and_a_foreign_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = CursorFile::new(dir.path(), "j");
        assert_eq!(f.load().unwrap(), None);
        f.save("s=ab;i=3").unwrap();
        assert_eq!(f.load().unwrap().as_deref(), Some("s=ab;i=3"));
        std::fs::write(f.path(), "hello\n").unwrap();
        assert!(f
            .load()
            .unwrap_err()
            .contains("not a logferry journald cursor"));
    }
}
