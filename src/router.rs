//! Tag patterns and the fan-out of batches to sink queues.
//!
//! Patterns follow Fluentd's `<match>` semantics:
//! - `*` matches one tag part (`a.*` matches `a.b`, not `a` or `a.b.c`);
//!   inside a part it matches any characters but `.` (`a.b*` matches `a.bc`);
//! - `**` matches zero or more parts (`a.**` matches `a`, `a.b`, `a.b.c`;
//!   `**.z` matches `z` and `x.y.z`);
//! - `{x,y}` matches either alternative, each itself a pattern;
//! - several patterns separated by spaces match if any does.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;

use crate::buffer::{QueueSender, SendError};
use crate::event::{Batch, Tag};
use crate::metrics::Counter;

/// A compiled `match` expression.
///
/// ```
/// use logferry::router::TagPattern;
///
/// let p = TagPattern::new("app.** {db,cache}.*").unwrap();
/// assert!(p.matches("app"));
/// assert!(p.matches("app.web.access"));
/// assert!(p.matches("db.slow"));
/// assert!(!p.matches("db"));
/// assert!(!p.matches("other.x"));
/// ```
#[derive(Debug, Clone)]
pub struct TagPattern {
    source: String,
    regex: Regex,
}

impl TagPattern {
    pub fn new(expr: &str) -> Result<Self, String> {
        let parts: Vec<&str> = expr.split_whitespace().collect();
        if parts.is_empty() {
            return Err("empty match pattern".into());
        }
        let alternatives: Vec<String> = parts
            .iter()
            .map(|p| glob_to_regex(p))
            .collect::<Result<_, _>>()?;
        let re = format!("^(?:{})$", alternatives.join("|"));
        let regex = Regex::new(&re).map_err(|e| format!("pattern {expr:?}: {e}"))?;
        Ok(TagPattern {
            source: expr.to_string(),
            regex,
        })
    }

    pub fn matches(&self, tag: &str) -> bool {
        self.regex.is_match(tag)
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

/// Translates one glob (no spaces) into a regex body.
fn glob_to_regex(glob: &str) -> Result<String, String> {
    let b = glob.as_bytes();
    // a stack of alternative lists for nested `{…}`
    let mut out = vec![String::new()];
    let mut alts: Vec<Vec<String>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let cur = out.last_mut().expect("stack never empty");
        if rest.starts_with(b".**") {
            cur.push_str(r"(?:\..*)?");
            i += 3;
        } else if rest.starts_with(b"**.") && (cur.is_empty() || cur.ends_with('(')) {
            cur.push_str(r"(?:.*\.)?");
            i += 3;
        } else if rest.starts_with(b"**") {
            cur.push_str(".*");
            i += 2;
        } else {
            match b[i] {
                b'*' => cur.push_str(r"[^.]*"),
                b'{' => {
                    alts.push(Vec::new());
                    out.push(String::new());
                }
                b',' if !alts.is_empty() => {
                    let done = out.pop().expect("pushed at '{'");
                    alts.last_mut().expect("checked").push(done);
                    out.push(String::new());
                }
                b'}' if !alts.is_empty() => {
                    let done = out.pop().expect("pushed at '{'");
                    let mut list = alts.pop().expect("checked");
                    list.push(done);
                    let joined = format!("(?:{})", list.join("|"));
                    out.last_mut().expect("outer level").push_str(&joined);
                }
                c => {
                    let ch = glob[i..].chars().next().unwrap_or(c as char);
                    cur.push_str(&regex::escape(ch.encode_utf8(&mut [0; 4])));
                    i += ch.len_utf8();
                    continue;
                }
            }
            i += 1;
        }
    }
    if !alts.is_empty() {
        return Err(format!("pattern {glob:?}: '{{' without matching '}}'"));
    }
    Ok(out.pop().unwrap_or_default())
}

/// One route: a pattern and the queue of the sink that wants it.
#[derive(Clone)]
pub struct Route {
    pub sink: Arc<str>,
    pub pattern: TagPattern,
    pub queue: QueueSender,
}

/// Hands batches to every sink whose pattern matches their tag. Each source
/// owns a clone; the per-tag route cache is local to it, so routing takes
/// no lock.
#[derive(Clone)]
pub struct Router {
    routes: Arc<[Route]>,
    cache: HashMap<Tag, Arc<[usize]>>,
    /// Batches whose tag matched no sink.
    unrouted: Counter,
}

/// Most distinct tags a router remembers; past it the cache starts over
/// (tags come from outside, so the cache must not grow without bound).
const MAX_CACHED_TAGS: usize = 4096;

impl Router {
    pub fn new(routes: Vec<Route>, unrouted: Counter) -> Self {
        Router {
            routes: routes.into(),
            cache: HashMap::new(),
            unrouted,
        }
    }

    fn targets(&mut self, tag: &Tag) -> Arc<[usize]> {
        if let Some(t) = self.cache.get(tag) {
            return t.clone();
        }
        let t: Arc<[usize]> = self
            .routes
            .iter()
            .enumerate()
            .filter(|(_, r)| r.pattern.matches(tag))
            .map(|(i, _)| i)
            .collect();
        if self.cache.len() >= MAX_CACHED_TAGS {
            self.cache.clear();
        }
        self.cache.insert(tag.clone(), t.clone());
        t
    }

    /// Routes `batch` to every matching sink queue. Waits while a queue with
    /// `when_full = "block"` is full: this is how backpressure reaches the
    /// source. A batch that matches no sink is counted and acknowledged (no
    /// resend could ever deliver it).
    pub async fn route(&mut self, batch: Batch) -> Result<(), SendError> {
        let targets = self.targets(&batch.tag);
        match targets.len() {
            0 => {
                self.unrouted.add(batch.count as u64);
                tracing::debug!(tag = %batch.tag, "no sink matches the tag; records dropped");
                Ok(())
            }
            1 => self.routes[targets[0]].queue.send(batch).await,
            _ => {
                for &i in &targets[..targets.len() - 1] {
                    self.routes[i].queue.send(batch.clone()).await?;
                }
                self.routes[targets[targets.len() - 1]]
                    .queue
                    .send(batch)
                    .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, tag: &str) -> bool {
        TagPattern::new(p).unwrap().matches(tag)
    }

    #[test]
    fn fluentd_documented_semantics() {
        // from Fluentd's "Config File Syntax: How do the match patterns work?"
        assert!(m("a.*", "a.b"));
        assert!(!m("a.*", "a"));
        assert!(!m("a.*", "a.b.c"));
        assert!(m("a.**", "a"));
        assert!(m("a.**", "a.b"));
        assert!(m("a.**", "a.b.c"));
        assert!(m("{a,b}", "a"));
        assert!(m("{a,b}", "b"));
        assert!(!m("{a,b}", "c"));
        assert!(m("a.{b,c}.**", "a.b"));
        assert!(m("a.{b,c}.**", "a.c.d"));
        assert!(!m("a.{b,c}.**", "a.d"));
        assert!(m("a b", "a"));
        assert!(m("a b", "b"));
        assert!(!m("a b", "c"));
        assert!(m("a.* b.*", "b.x"));
    }

    #[test]
    fn wildcards_inside_parts_and_prefix_double_star() {
        assert!(m("a*", "a"));
        assert!(m("a*", "abc"));
        assert!(!m("a*", "a.b"));
        assert!(m("*a", "cba"));
        assert!(m("**.z", "z"));
        assert!(m("**.z", "x.y.z"));
        assert!(!m("**.z", "xz"));
        assert!(m("a.**.z", "a.z"));
        assert!(m("a.**.z", "a.b.c.z"));
        assert!(!m("a.**.z", "a.bz"));
        assert!(m("**", ""));
        assert!(m("**", "anything.at.all"));
        assert!(m("{a.**,b}", "a.x.y"));
    }

    #[test]
    fn literal_characters_are_not_regex() {
        assert!(m("a+b", "a+b"));
        assert!(!m("a+b", "aab"));
        assert!(!m("a.b", "aab"));
        assert!(m("app-1.(x)", "app-1.(x)"));
    }

    #[test]
    fn unbalanced_braces_are_an_error() {
        assert!(TagPattern::new("{a,b").is_err());
        assert!(TagPattern::new("   ").is_err());
    }
}
