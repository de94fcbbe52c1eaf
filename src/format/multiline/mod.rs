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
//! A chain (`parser = ["cri", "java"]`) is two joiners: the runtime's
//! puts each line back together and hands the whole ones to a joiner of
//! line rules, one record per stream, whose record is written in the
//! runtime's format again. Positions, deadlines and held bytes are the
//! lower of (or the sum over) both.
//!
//! Every record ends in one of the ways of [`Ending`], and is counted by
//! it (`logferry_multiline_records_total{ended_by=…}`): a record cut by
//! `max_lines` or `max_bytes` is a trace longer than the bounds allow.

mod config;
mod partial;
pub mod rules;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use config::{preset_or_table, MultilineConfig, Preset, Presets};
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
#[derive(Clone)]
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
    /// Records being joined: one per stream (line rules: one at most, of
    /// the empty stream; CRI and docker: `stdout`, `stderr`).
    held: Vec<Held>,
    /// After `max_lines`/`max_bytes` cut a record: its stream and the
    /// state it was in, so that the rest of the trace is joined into the
    /// next record rather than tried as new starts.
    resume: Option<(Vec<u8>, usize)>,
    /// Chained rules (`parser = ["cri", "java"]`): the joiner of line
    /// rules that takes this one's whole runtime lines.
    then: Option<Box<Joiner>>,
    /// This joiner takes whole runtime lines from another (the second of a
    /// chain): a record it sends is made of whole lines however it ended,
    /// so it is never marked as cut (`F`, a final newline).
    whole_lines: bool,
}

impl Joiner {
    pub fn new(rules: Arc<Rules>, limits: Limits) -> Joiner {
        let (rules, then) = match &*rules {
            Rules::Chain(first, lines) => {
                let mut then = Joiner::new(Arc::clone(lines), limits);
                then.whole_lines = true;
                (Arc::clone(first), Some(Box::new(then)))
            }
            _ => (rules, None),
        };
        Joiner {
            rules,
            limits,
            held: Vec::new(),
            resume: None,
            then,
            whole_lines: false,
        }
    }

    /// Takes one line (without its newline) that came from `pos`; puts the
    /// records it completes in `out`.
    pub fn push(&mut self, line: &[u8], pos: u64, now: Instant, out: &mut Vec<Joined>) {
        let rules = Arc::clone(&self.rules);
        match &*rules {
            Rules::Lines(m) => self.push_line(m, b"", partial::Head::None, line, pos, now, out),
            Rules::Cri(re) => partial::push_cri(self, re, line, pos, now, out),
            Rules::Docker => partial::push_docker(self, line, pos, now, out),
            // `new` takes a chain apart: its first rules are never a chain
            Rules::Chain(..) => out.push(Joined {
                message: line.to_vec(),
                lines: 1,
                first: pos,
                ending: Ending::Rule,
            }),
        }
    }

    /// Takes a whole runtime line put back together by the first joiner
    /// of a chain: the `text` of `stream`, whose record keeps `head`.
    fn push_whole(
        &mut self,
        stream: &[u8],
        head: partial::Head,
        text: &[u8],
        pos: u64,
        now: Instant,
        out: &mut Vec<Joined>,
    ) {
        // docker's `log` ends in the newline that made it whole
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        let rules = Arc::clone(&self.rules);
        match &*rules {
            Rules::Lines(m) => self.push_line(m, stream, head, text, pos, now, out),
            // a chain's second rules are line rules (checked by `compile`)
            _ => out.push(Joined {
                message: partial::finish(head, stream.to_vec(), text.to_vec(), true),
                lines: 1,
                first: pos,
                ending: Ending::Rule,
            }),
        }
    }

    /// One line of `stream` by line rules.
    #[allow(clippy::too_many_arguments)]
    fn push_line(
        &mut self,
        m: &rules::Machine,
        stream: &[u8],
        head: partial::Head,
        line: &[u8],
        pos: u64,
        now: Instant,
        out: &mut Vec<Joined>,
    ) {
        if let Some(k) = self.held.iter().position(|h| h.stream == stream) {
            let h = &mut self.held[k];
            if let Some(to) = m.step(h.state, line) {
                if h.text.len() + 1 + line.len() > self.limits.max_bytes {
                    self.emit(k, Ending::MaxBytes, out);
                    self.begin(stream, head, line, pos, now, to, out);
                    return;
                }
                h.text.push(b'\n');
                h.text.extend_from_slice(line);
                h.lines += 1;
                h.updated = now;
                h.state = to;
                if to == START {
                    self.emit(k, Ending::Rule, out);
                } else if h.lines >= self.limits.max_lines {
                    self.emit(k, Ending::MaxLines, out);
                    self.resume = Some((stream.to_vec(), to));
                }
                return;
            }
            self.emit(k, Ending::Rule, out);
        }
        let resumed = match self.resume.take() {
            Some((s, state)) if s == stream => m.step(state, line),
            other => {
                self.resume = other;
                None
            }
        };
        match resumed.or_else(|| m.step(START, line)) {
            Some(to) => self.begin(stream, head, line, pos, now, to, out),
            None => out.push(Joined {
                message: partial::finish(head, stream.to_vec(), line.to_vec(), true),
                lines: 1,
                first: pos,
                ending: Ending::Rule,
            }),
        }
    }

    /// Starts a record of `stream` with `line`, in state `to`.
    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        stream: &[u8],
        head: partial::Head,
        line: &[u8],
        pos: u64,
        now: Instant,
        to: usize,
        out: &mut Vec<Joined>,
    ) {
        self.held.push(Held {
            stream: stream.to_vec(),
            state: to,
            text: line.to_vec(),
            lines: 1,
            first: pos,
            updated: now,
            head,
        });
        if to == START {
            let last = self.held.len() - 1;
            self.emit(last, Ending::Rule, out);
        } else if self.limits.max_lines <= 1 {
            let last = self.held.len() - 1;
            self.emit(last, Ending::MaxLines, out);
            self.resume = Some((stream.to_vec(), to));
        }
    }

    /// Sends held record `i` (in a chain: a whole runtime line goes on to
    /// the line rules; one cut short goes on alone, after what the line
    /// rules hold of its stream).
    fn emit(&mut self, i: usize, ending: Ending, out: &mut Vec<Joined>) {
        let h = self.held.remove(i);
        if let Some(then) = self.then.as_mut() {
            if ending == Ending::Rule {
                then.push_whole(&h.stream, h.head, &h.text, h.first, h.updated, out);
                return;
            }
            then.end_stream(&h.stream, ending, out);
        }
        let whole = self.whole_lines || ending == Ending::Rule;
        out.push(Joined {
            message: partial::finish(h.head, h.stream, h.text, whole),
            lines: h.lines,
            first: h.first,
            ending,
        });
    }

    /// Sends the record held for `stream`, if any: a line cut short of it
    /// comes next. It ends as that line did, when its input ended or went
    /// quiet; by its rules otherwise.
    fn end_stream(&mut self, stream: &[u8], ending: Ending, out: &mut Vec<Joined>) {
        let ending = match ending {
            Ending::Flush | Ending::FlushTimeout | Ending::MaxStreams => ending,
            _ => Ending::Rule,
        };
        if let Some(k) = self.held.iter().position(|h| h.stream == stream) {
            self.emit(k, ending, out);
        }
        if self.resume.as_ref().is_some_and(|(s, _)| s == stream) {
            self.resume = None;
        }
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
        if let Some(then) = self.then.as_mut() {
            then.flush_idle(now, out);
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
        if let Some(then) = self.then.as_mut() {
            then.flush_all_for(ending, out);
        }
    }

    /// Position of the first line of the oldest held record: everything
    /// before it is in records already given back.
    pub fn held_from(&self) -> Option<u64> {
        let then = self.then.as_ref().and_then(|t| t.held_from());
        self.held.iter().map(|h| h.first).chain(then).min()
    }

    /// When [`Joiner::flush_idle`] next has something to send.
    pub fn deadline(&self) -> Option<Instant> {
        let then = self.then.as_ref().and_then(|t| t.deadline());
        self.held
            .iter()
            .map(|h| h.updated + self.limits.flush_timeout)
            .chain(then)
            .min()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.then.as_ref().is_none_or(|t| t.is_empty())
    }

    /// Bytes of text held (what the memory budget is charged for).
    pub fn held_bytes(&self) -> usize {
        let then = self.then.as_ref().map_or(0, |t| t.held_bytes());
        self.held.iter().map(|h| h.text.len()).sum::<usize>() + then
    }
}

#[cfg(test)]
mod tests;
