//! Partial lines of container runtimes, put back together.
//!
//! A runtime cuts a long line (16 KiB with Docker, by default) into parts:
//! - CRI (containerd, CRI-O) writes `<time> <stream> P <text>` for each
//!   part but the last, and `<time> <stream> F <text>` for the last. The
//!   joined record is one CRI line, `<first part's time> <stream> F <all
//!   the text>`, which a `parser` filter with `format = "cri"` reads as if
//!   the runtime had never cut it.
//! - Docker's json-file driver writes `{"log":"<text>","stream":…,
//!   "time":…}`; the `log` of the last part ends in `\n`. The joined record
//!   is the first part's object with `log` holding all the text.
//!
//! Parts of stdout and stderr interleave: each stream is joined apart. A
//! line that is not in the runtime's format is a record alone and leaves
//! the held parts as they are. A record cut short (by a bound or because
//! its input ended) keeps the `P` mark (CRI) or its `log` without the final
//! newline (docker), so it can be told from a whole one.

use std::time::Instant;

use regex::bytes::Regex;
use serde_json::{Map, Value};

use super::{Ending, Held, Joined, Joiner};

/// What a record of parts keeps of its first part.
pub(super) enum Head {
    /// Line rules: nothing.
    None,
    /// CRI: the first part's time.
    Cri { time: Vec<u8> },
    /// Docker: the first part's object (its `log` is replaced in place).
    Docker(Map<String, Value>),
}

/// The text of a record sent; `whole`: not cut short (its rules ended
/// it, or it is made of whole lines).
pub(super) fn finish(head: Head, stream: Vec<u8>, mut text: Vec<u8>, whole: bool) -> Vec<u8> {
    match head {
        Head::None => text,
        Head::Cri { time } => {
            let mut out = Vec::with_capacity(time.len() + stream.len() + text.len() + 4);
            out.extend_from_slice(&time);
            out.push(b' ');
            out.extend_from_slice(&stream);
            out.extend_from_slice(if whole { b" F " } else { b" P " });
            out.extend_from_slice(&text);
            out
        }
        Head::Docker(mut obj) => {
            // the lines of a chain's record were taken without it
            if whole && !text.ends_with(b"\n") {
                text.push(b'\n');
            }
            let log = String::from_utf8_lossy(&text).into_owned();
            obj.insert("log".into(), Value::String(log));
            serde_json::to_vec(&Value::Object(obj)).unwrap_or(text)
        }
    }
}

/// A line alone, as it came.
fn alone(line: &[u8], pos: u64, out: &mut Vec<Joined>) {
    out.push(Joined {
        message: line.to_vec(),
        lines: 1,
        first: pos,
        ending: Ending::Rule,
    });
}

/// Adds one part (`text`, of `stream`) to the held record of its stream,
/// or starts one with `head`; `last`: the part ends its line.
#[allow(clippy::too_many_arguments)]
fn add_part(
    j: &mut Joiner,
    line: &[u8],
    stream: &[u8],
    text: &[u8],
    last: bool,
    head: impl FnOnce() -> Head,
    pos: u64,
    now: Instant,
    out: &mut Vec<Joined>,
) {
    let mut i = j.held.iter().position(|h| h.stream == stream);
    if let Some(k) = i {
        if j.held[k].text.len() + text.len() > j.limits.max_bytes {
            j.emit(k, Ending::MaxBytes, out);
            i = None;
        }
    }
    let k = match i {
        Some(k) => {
            let h = &mut j.held[k];
            h.text.extend_from_slice(text);
            h.lines += 1;
            h.updated = now;
            k
        }
        // a whole line with nothing held: on to a chain's line rules, or
        // as it came, not rewritten
        None if last => {
            return match j.then.as_mut() {
                Some(then) => then.push_whole(stream, head(), text, pos, now, out),
                None => alone(line, pos, out),
            };
        }
        None => {
            j.held.push(Held {
                stream: stream.to_vec(),
                state: 0,
                text: text.to_vec(),
                lines: 1,
                first: pos,
                updated: now,
                head: head(),
            });
            j.held.len() - 1
        }
    };
    if last {
        j.emit(k, Ending::Rule, out);
    } else if j.held[k].lines >= j.limits.max_lines {
        j.emit(k, Ending::MaxLines, out);
    }
}

/// One CRI line.
pub(super) fn push_cri(
    j: &mut Joiner,
    re: &Regex,
    line: &[u8],
    pos: u64,
    now: Instant,
    out: &mut Vec<Joined>,
) {
    let Some(c) = re.captures(line) else {
        return alone(line, pos, out);
    };
    let (time, stream, flag) = (&c[1], &c[2], &c[3]);
    let text = c.get(4).map_or(&b""[..], |m| m.as_bytes());
    let head = || Head::Cri {
        time: time.to_vec(),
    };
    add_part(j, line, stream, text, flag == b"F", head, pos, now, out);
}

/// One docker json-file line.
pub(super) fn push_docker(
    j: &mut Joiner,
    line: &[u8],
    pos: u64,
    now: Instant,
    out: &mut Vec<Joined>,
) {
    let Ok(obj) = serde_json::from_slice::<Map<String, Value>>(line) else {
        return alone(line, pos, out);
    };
    let Some(Value::String(log)) = obj.get("log") else {
        return alone(line, pos, out);
    };
    let log = log.clone();
    let stream = match obj.get("stream") {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        _ => Vec::new(),
    };
    let last = log.ends_with('\n');
    let head = move || Head::Docker(obj);
    add_part(j, line, &stream, log.as_bytes(), last, head, pos, now, out);
}
