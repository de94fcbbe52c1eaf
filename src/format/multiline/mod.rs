//! Multiline records: the lines of a stack trace joined into one record,
//! and container runtimes' partial lines put back together.
//!
//! [`Joiner`] is pure (no I/O, no clock of its own): it takes lines, each
//! with the position it came from and the time it arrived, and gives back
//! the records they complete. The tail source feeds it one file's lines,
//! and the `multiline` filter one stream's messages. Both ask it for
//! [`Joiner::held_from`], the position of the oldest line it still holds,
//! so that nothing behind that point is acknowledged before it is handed
//! on, and for [`Joiner::deadline`], when its oldest held record is due to
//! be sent whatever comes next.
//!
//! - `config.rs`: the `multiline` keys (preset or custom rules, bounds);
//! - `rules.rs`: the rule sets (Java, Python, Go, Ruby, custom);
//! - `partial.rs`: CRI and docker json-file partial lines.
//!
//! Every record ends in one of the ways of [`Ending`], and is counted by
//! it (`logferry_multiline_records_total{ended_by=…}`): a record cut by
//! `max_lines` or `max_bytes` is a trace longer than the bounds allow.

mod config;
mod partial;
pub mod rules;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use config::{preset_or_table, MultilineConfig, Preset};
use rules::{Rules, START};

use crate::metrics::{Counter, Registry};

/// What ends a record whatever its rules say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most lines in one record.
    pub max_lines: usize,
    /// Most bytes in one record (a single longer line is kept whole).
    pub max_bytes: usize,
    /// A record no line was added to for this long is sent.
    pub flush_timeout: Duration,
}

/// Why a record was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Its rules ended it: the next line did not continue it, or it
    /// reached its last line (Python's exception line, CRI's `F` part).
    Rule,
    /// It reached `max_lines`.
    MaxLines,
    /// The next line would have passed `max_bytes`.
    MaxBytes,
    /// No line came for `flush_timeout`.
    FlushTimeout,
    /// Its input ended: shutdown, rotation, truncation, removal.
    Flush,
    /// The `multiline` filter held `max_streams` streams and a new one
    /// came: the stream that waited longest for a line was sent as it was.
    MaxStreams,
}

impl Ending {
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::Rule => "rule",
            Ending::MaxLines => "max_lines",
            Ending::MaxBytes => "max_bytes",
            Ending::FlushTimeout => "flush_timeout",
            Ending::Flush => "flush",
            Ending::MaxStreams => "max_streams",
        }
    }
}

/// A record put together from one or more lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    /// The record's text: the lines with `\n` between them, a CRI line
    /// with the parts' text joined, or a docker json-file line with the
    /// `log` values joined.
    pub message: Vec<u8>,
    /// How many lines went into it.
    pub lines: usize,
    /// Position of its first line.
    pub first: u64,
    /// Why it was sent.
    pub ending: Ending,
}

/// Records joined, by how they ended, for one component.
pub struct Counters([Counter; 6]);

impl Counters {
    pub fn new(metrics: &Registry, component: &str) -> Counters {
        let c = |e: Ending| {
            metrics.counter(
                "logferry_multiline_records_total",
                "Multiline records sent, by what ended them (max_lines or max_bytes: a record cut short).",
                &[("component", component), ("ended_by", e.as_str())],
            )
        };
        Counters([
            c(Ending::Rule),
            c(Ending::MaxLines),
            c(Ending::MaxBytes),
            c(Ending::FlushTimeout),
            c(Ending::Flush),
            c(Ending::MaxStreams),
        ])
    }

    pub fn count(&self, j: &Joined) {
        let i = match j.ending {
            Ending::Rule => 0,
            Ending::MaxLines => 1,
            Ending::MaxBytes => 2,
            Ending::FlushTimeout => 3,
            Ending::Flush => 4,
            Ending::MaxStreams => 5,
        };
        self.0[i].inc();
    }
}

/// A record being joined.
struct Held {
    /// Which stream it belongs to (CRI and docker: `stdout`/`stderr`;
    /// line rules: empty).
    stream: Vec<u8>,
    /// Its state in the rules' machine (line rules only).
    state: usize,
    /// Its text so far (line rules: lines with `\n` between; CRI and
    /// docker: the parts' text).
    text: Vec<u8>,
    /// Lines in it so far.
    lines: usize,
    /// Position of its first line.
    first: u64,
    /// When a line was last added.
    updated: Instant,
    /// What a CRI or docker record keeps of its first line.
    head: partial::Head,
}

/// Joins lines into records by one rule set, within [`Limits`].
pub struct Joiner {
    /// What starts and continues a record.
    rules: Arc<Rules>,
    /// What ends one whatever the rules say.
    limits: Limits,
    /// Records being joined: at most one with line rules, one per stream
    /// for CRI and docker.
    held: Vec<Held>,
    /// After `max_lines`/`max_bytes` cut a record: the state it was in, so
    /// that the rest of the trace is joined into the next record rather
    /// than tried as new starts.
    resume: Option<usize>,
}

impl Joiner {
    pub fn new(rules: Arc<Rules>, limits: Limits) -> Joiner {
        Joiner {
            rules,
            limits,
            held: Vec::new(),
            resume: None,
        }
    }

    /// Takes one line (without its newline) that came from `pos`; puts the
    /// records it completes in `out`.
    pub fn push(&mut self, line: &[u8], pos: u64, now: Instant, out: &mut Vec<Joined>) {
        let rules = Arc::clone(&self.rules);
        match &*rules {
            Rules::Lines(m) => self.push_line(m, line, pos, now, out),
            Rules::Cri(re) => partial::push_cri(self, re, line, pos, now, out),
            Rules::Docker => partial::push_docker(self, line, pos, now, out),
        }
    }

    fn push_line(
        &mut self,
        m: &rules::Machine,
        line: &[u8],
        pos: u64,
        now: Instant,
        out: &mut Vec<Joined>,
    ) {
        if let Some(h) = self.held.first_mut() {
            if let Some(to) = m.step(h.state, line) {
                if h.text.len() + 1 + line.len() > self.limits.max_bytes {
                    self.emit(0, Ending::MaxBytes, out);
                    self.begin(line, pos, now, to, out);
                    return;
                }
                h.text.push(b'\n');
                h.text.extend_from_slice(line);
                h.lines += 1;
                h.updated = now;
                h.state = to;
                if to == START {
                    self.emit(0, Ending::Rule, out);
                } else if h.lines >= self.limits.max_lines {
                    self.emit(0, Ending::MaxLines, out);
                    self.resume = Some(to);
                }
                return;
            }
            self.emit(0, Ending::Rule, out);
        }
        let resumed = self.resume.take().and_then(|s| m.step(s, line));
        match resumed.or_else(|| m.step(START, line)) {
            Some(to) => self.begin(line, pos, now, to, out),
            None => out.push(Joined {
                message: line.to_vec(),
                lines: 1,
                first: pos,
                ending: Ending::Rule,
            }),
        }
    }

    /// Starts a record with `line`, in state `to`.
    fn begin(&mut self, line: &[u8], pos: u64, now: Instant, to: usize, out: &mut Vec<Joined>) {
        self.held.push(Held {
            stream: Vec::new(),
            state: to,
            text: line.to_vec(),
            lines: 1,
            first: pos,
            updated: now,
            head: partial::Head::None,
        });
        if to == START {
            let last = self.held.len() - 1;
            self.emit(last, Ending::Rule, out);
        } else if self.limits.max_lines <= 1 {
            let last = self.held.len() - 1;
            self.emit(last, Ending::MaxLines, out);
            self.resume = Some(to);
        }
    }

    /// Sends held record `i`.
    fn emit(&mut self, i: usize, ending: Ending, out: &mut Vec<Joined>) {
        let h = self.held.remove(i);
        out.push(Joined {
            message: partial::finish(h.head, h.stream, h.text, ending),
            lines: h.lines,
            first: h.first,
            ending,
        });
    }

    /// Sends the records no line was added to for `flush_timeout`.
    pub fn flush_idle(&mut self, now: Instant, out: &mut Vec<Joined>) {
        let timeout = self.limits.flush_timeout;
        while let Some(i) = self
            .held
            .iter()
            .position(|h| now.saturating_duration_since(h.updated) >= timeout)
        {
            self.emit(i, Ending::FlushTimeout, out);
        }
    }

    /// Sends every held record (the input has ended).
    pub fn flush_all(&mut self, out: &mut Vec<Joined>) {
        self.flush_all_for(Ending::Flush, out);
    }

    /// Sends every held record as it is, counted as ended by `ending`.
    pub fn flush_all_for(&mut self, ending: Ending, out: &mut Vec<Joined>) {
        while !self.held.is_empty() {
            self.emit(0, ending, out);
        }
        self.resume = None;
    }

    /// Position of the first line of the oldest held record: everything
    /// before it is in records already given back.
    pub fn held_from(&self) -> Option<u64> {
        self.held.iter().map(|h| h.first).min()
    }

    /// When [`Joiner::flush_idle`] next has something to send.
    pub fn deadline(&self) -> Option<Instant> {
        self.held
            .iter()
            .map(|h| h.updated + self.limits.flush_timeout)
            .min()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Bytes of text held (what the memory budget is charged for).
    pub fn held_bytes(&self) -> usize {
        self.held.iter().map(|h| h.text.len()).sum()
    }
}

#[cfg(test)]
mod tests;
