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
        // `s`: `.` matches any character, `\n` included; a tag is text
        // from outside, and no character may change what a pattern means
        let re = format!("^(?s:{})$", alternatives.join("|"));
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
        } else if rest.starts_with(b"**.") && cur.is_empty() {
            // `**.` opening a pattern or an alternative: zero or more parts
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
    fn any_character_in_a_tag_matches_like_any_other() {
        // tags come from outside: control characters, NUL, non-ASCII and
        // very long tags follow the same rules as letters
        let long = "x".repeat(100_000);
        let odd_parts = [
            "\n", "\r", "\r\n", "\0", "\t", " ", "\u{7f}", "é", "\u{2028}", "a\nb", &long,
        ];
        for odd in odd_parts {
            let show = format!("{odd:?}");
            let show = &show[..show.len().min(40)];
            assert!(m("**", odd), "** vs {show}");
            assert!(m("**", &format!("a.{odd}.b")), "** vs a.{show}.b");
            assert!(m("*", odd), "* vs {show}");
            assert!(!m("*", &format!("{odd}.b")), "* vs {show}.b");
            assert!(m("a.*", &format!("a.{odd}")), "a.* vs a.{show}");
            assert!(!m("a.*", &format!("a.{odd}.c")), "a.* vs a.{show}.c");
            assert!(m("a.**", &format!("a.{odd}")), "a.** vs a.{show}");
            assert!(m("a.**", &format!("a.{odd}.c.d")), "a.** vs a.{show}.c.d");
            assert!(!m("a.**", &format!("b.{odd}")), "a.** vs b.{show}");
            assert!(m("**.b", &format!("{odd}.b")), "**.b vs {show}.b");
            assert!(m("**.b", &format!("x.{odd}.b")), "**.b vs x.{show}.b");
            assert!(!m("**.b", &format!("{odd}b")), "**.b vs {show}b");
            assert!(m("a.**.z", &format!("a.{odd}.z")), "a.**.z vs a.{show}.z");
            assert!(m("{a,b}.*", &format!("b.{odd}")), "{{a,b}}.* vs b.{show}");
            assert!(
                m("a.{b,c}.**", &format!("a.c.{odd}")),
                "a.{{b,c}}.** vs a.c.{show}"
            );
            assert!(m("a*", &format!("a{odd}")), "a* vs a{show}");
            assert!(!m("a", &format!("a{odd}")), "a vs a{show}");
            assert!(!m("a.b", &format!("a.b{odd}")), "a.b vs a.b{show}");
        }
        // NUL is an ordinary character in a pattern too (whitespace is not:
        // it separates alternatives)
        assert!(m("a\0b", "a\0b"));
        assert!(!m("a\0b", "a\nb"));
        assert!(m(&format!("a.{long}"), &format!("a.{long}")));
        // empty parts
        for tag in ["", ".", "..", "a..b", ".a", "a.", "a..", "..a.."] {
            assert!(m("**", tag), "** vs {tag:?}");
        }
        assert!(m("a.**", "a."));
        assert!(m("a.**", "a..b"));
        assert!(m("a.*", "a."));
        assert!(!m("a.*", "a.."));
        assert!(m("**.b", ".b"));
        assert!(m("**.b", "..b"));
    }

    #[test]
    fn a_pattern_means_the_same_whatever_its_literal_characters() {
        // `**.` after a literal character is the same rule for every character
        for c in ["x", "(", "[", "$", "\\", "\0"] {
            let p = format!("{c}**.z");
            assert!(m(&p, &format!("{c}.z")), "{p}");
            assert!(m(&p, &format!("{c}y.z")), "{p}");
            assert!(!m(&p, &format!("{c}z")), "{p}");
        }
        assert_eq!(m("(**.z", "(z"), m("x**.z", "xz"));
    }

    #[test]
    fn unbalanced_braces_are_an_error() {
        assert!(TagPattern::new("{a,b").is_err());
        assert!(TagPattern::new("   ").is_err());
    }
}
