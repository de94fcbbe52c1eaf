//! Rule sets: which line starts a record and which lines continue it.
//!
//! A rule set of lines is a small state machine, as Fluent Bit's multiline
//! parsers are: state 0 (`start_state`) has the rules a line must match to
//! begin a record, and every other state the rules a line must match to be
//! appended to it; each rule names the state the record is in after it.
//! Going back to the start state means the record is complete (Python's
//! final `XxxError: …` line). A line that no rule of the current state
//! takes ends the record being joined and is tried as the start of the
//! next one; a line no start rule takes is a record alone.
//!
//! The built-in sets follow Fluent Bit's `java`, `python`, `go` and `ruby`
//! parsers (themselves Google's exception detector's), with one change to
//! `java`: the log line above an exception (`2026-… ERROR request failed`)
//! is part of the record, as a Fluentd `format_firstline` user expects.

use std::sync::Arc;

use regex::bytes::Regex;

use super::config::Preset;

/// The state a record returns to when it is complete.
pub(super) const START: usize = 0;

/// One rule: lines that match `regex` (or do not, with `negate`) go on in
/// state `to`.
pub struct Rule {
    /// What a line must match.
    regex: Regex,
    /// The line must not match it instead (a custom `start` without
    /// `continue`: every other line continues).
    negate: bool,
    /// The state the record is in after the line.
    to: usize,
}

/// Rules of lines, by state; state 0 starts records.
pub struct Machine {
    /// The rules of each state, tried in order.
    states: Vec<Vec<Rule>>,
}

impl Machine {
    /// The state a line takes a record in `state` to, if a rule takes it.
    pub(super) fn step(&self, state: usize, line: &[u8]) -> Option<usize> {
        self.states
            .get(state)?
            .iter()
            .find(|r| r.regex.is_match(line) != r.negate)
            .map(|r| r.to)
    }
}

/// What a joiner does with lines.
pub enum Rules {
    /// Lines joined by a state machine, with `\n` between them.
    Lines(Machine),
    /// CRI lines: `P` parts joined up to their `F` part, per stream.
    Cri(Regex),
    /// Docker json-file lines: `log` values joined up to one that ends in
    /// a newline, per stream.
    Docker,
    /// A container runtime's partial lines put back together by the first
    /// (`Cri` or `Docker`), then the whole lines' text joined by the second
    /// (`Lines`), each stream apart: `parser = ["cri", "java"]`.
    Chain(Arc<Rules>, Arc<Rules>),
}

/// `(from states, regex, to state)`; `start_state` is the start (and, as a
/// `to`, the end).
type Spec<'a> = &'a [(&'a [&'a str], &'a str, &'a str)];

/// Builds a machine from named states. The regexes are ours (constants):
/// a bad one is a bug, caught by the tests of every preset.
fn machine(spec: Spec<'_>) -> Machine {
    let mut names = vec!["start_state"];
    for (from, _, to) in spec {
        for n in from.iter().chain(std::iter::once(to)) {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    let index = |n: &str| names.iter().position(|x| *x == n).unwrap_or(START);
    let mut states: Vec<Vec<Rule>> = names.iter().map(|_| Vec::new()).collect();
    for (from, regex, to) in spec {
        for f in *from {
            states[index(f)].push(Rule {
                regex: Regex::new(regex).expect("built-in multiline regexes compile"),
                negate: false,
                to: index(to),
            });
        }
    }
    Machine { states }
}

/// Java (and C#) frames and sections, after the exception line.
const JAVA_TRACE: &str = r"^[\t ]+(?:eval )?at |^[\t ]*(?:Caused by|Suppressed):|^[\t ]*\.\.\. \d+ (?:more|common frames omitted)|^[\t ]*nested exception is|^[\t ]+--- End of inner exception stack trace ---$|^--- End of stack trace from previous location";

impl Rules {
    pub fn preset(p: Preset) -> Rules {
        match p {
            Preset::Java => Rules::Lines(machine(&[
                // any line may be the log line above an exception
                (&["start_state"], r"", "java_head"),
                (
                    &["java_head"],
                    r"^[\t ]*(?:[\w$]+\.)+[\w$]*(?:Exception|Error|Throwable)(?::|$)",
                    "java_trace",
                ),
                (&["java_head", "java_trace"], JAVA_TRACE, "java_trace"),
            ])),
            Preset::Python => Rules::Lines(machine(&[
                (
                    &["start_state"],
                    r"^Traceback \(most recent call last\):$",
                    "python",
                ),
                (&["python"], r"^[\t ]+File ", "python_code"),
                (&["python_code"], r"[^\t ]", "python"),
                // the exception line ends the record
                (&["python"], r"^(?:[^\s.():]+\.)*[^\s.():]+:", "start_state"),
            ])),
            Preset::Go => Rules::Lines(machine(&[
                (&["start_state"], r"\bpanic: ", "go_after_panic"),
                (&["start_state"], r"http: panic serving", "go_goroutine"),
                (
                    &["go_after_panic", "go_after_signal", "go_frame_1"],
                    r"^$",
                    "go_goroutine",
                ),
                (&["go_after_panic"], r"^\[signal ", "go_after_signal"),
                (
                    &["go_goroutine"],
                    r"^goroutine \d+ \[[^\]]+\]:$",
                    "go_frame_1",
                ),
                (
                    &["go_frame_1"],
                    r"^(?:[^\s.:]+\.)*[^\s.():]+\(|^created by ",
                    "go_frame_2",
                ),
                (&["go_frame_2"], r"^\s", "go_frame_1"),
            ])),
            Preset::Ruby => Rules::Lines(machine(&[
                (&["start_state"], r"^.+:\d+:in\s+.*", "ruby"),
                (&["ruby"], r"^\s+from\s+.*:\d+:in\s+.*", "ruby"),
            ])),
            Preset::Cri => Rules::Cri(
                Regex::new(r"^(\S+) (stdout|stderr) ([PF])\S*(?: (.*))?$")
                    .expect("the CRI regex compiles"),
            ),
            Preset::Docker => Rules::Docker,
        }
    }

    /// A user's rule: `start` begins a record; lines matching `continue`
    /// (unset: not matching `start`) are appended.
    pub fn custom(start: &str, continue_: Option<&str>) -> Result<Rules, String> {
        let start_re = Regex::new(start).map_err(|e| format!("start: {e}"))?;
        let any = || Regex::new("").expect("the empty regex compiles");
        let (first, cont) = match continue_ {
            Some(c) => (
                start_re.clone(),
                Rule {
                    regex: Regex::new(c).map_err(|e| format!("continue: {e}"))?,
                    negate: false,
                    to: 1,
                },
            ),
            // every line belongs to some record: a first line that does
            // not match `start` (the file began mid-record) starts one too
            None => (
                any(),
                Rule {
                    regex: start_re,
                    negate: true,
                    to: 1,
                },
            ),
        };
        Ok(Rules::Lines(Machine {
            states: vec![
                vec![Rule {
                    regex: first,
                    negate: false,
                    to: 1,
                }],
                vec![cont],
            ],
        }))
    }
}
