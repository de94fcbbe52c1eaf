//! Label selectors, as `kubectl -l` writes them: `app=web`, `tier!=cache`,
//! `env in (prod,staging)`, `env notin (dev)`, `canary`, `!debug`, joined
//! by commas (all must hold).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A label selector; the empty one matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    text: String,
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Missing(String),
}

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut terms = Vec::new();
        for part in split_terms(text)? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            terms.push(term(part).map_err(|e| format!("label selector {text:?}: {e}"))?);
        }
        Ok(Selector {
            text: text.to_string(),
            terms,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `labels` satisfy every term.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.terms.iter().all(|t| match t {
            Term::Equals(k, v) => labels.get(k) == Some(v),
            Term::NotEquals(k, v) => labels.get(k) != Some(v),
            Term::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Term::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Term::Exists(k) => labels.contains_key(k),
            Term::Missing(k) => !labels.contains_key(k),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("label selector {text:?}: unmatched `)`"))?
            }
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("label selector {text:?}: unmatched `(`"));
    }
    out.push(&text[start..]);
    Ok(out)
}

fn term(part: &str) -> Result<Term, String> {
    let key = |k: &str| -> Result<String, String> {
        let k = k.trim();
        if k.is_empty() || k.contains(char::is_whitespace) {
            return Err(format!("{part:?}: not a label key"));
        }
        Ok(k.to_string())
    };
    if let Some(k) = part.strip_prefix('!') {
        return Ok(Term::Missing(key(k)?));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(Term::NotEquals(key(k)?, v.trim().to_string()));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(Term::Equals(key(k)?, v.trim().to_string()));
    }
    if let Some(open) = part.find('(') {
        let (head, rest) = part.split_at(open);
        let values = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| format!("{part:?}: a set is `(a,b)`"))?;
        let values: Vec<String> = values
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        let mut words = head.split_whitespace();
        let (k, op) = (words.next(), words.next());
        return match (k, op, words.next()) {
            (Some(k), Some("in"), None) => Ok(Term::In(key(k)?, values)),
            (Some(k), Some("notin"), None) => Ok(Term::NotIn(key(k)?, values)),
            _ => Err(format!(
                "{part:?}: expected `key in (…)` or `key notin (…)`"
            )),
        };
    }
    Ok(Term::Exists(key(part)?))
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Selector {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Selector, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Selector;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a label selector such as \"app=web,tier!=cache\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Selector, E> {
                Selector::parse(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_kind_of_term() {
        let s = Selector::parse("app=web, tier!=cache,env in (prod, staging),!debug,team").unwrap();
        let ok = labels(&[("app", "web"), ("env", "prod"), ("team", "a")]);
        assert!(s.matches(&ok));
        let mut l = ok.clone();
        l.insert("debug".into(), "1".into());
        assert!(!s.matches(&l));
        let mut l = ok.clone();
        l.insert("env".into(), "dev".into());
        assert!(!s.matches(&l));
        let mut l = ok.clone();
        l.insert("tier".into(), "cache".into());
        assert!(!s.matches(&l));
        let mut l = ok;
        l.remove("team");
        assert!(!s.matches(&l));
        let s = Selector::parse("env notin (dev)").unwrap();
        assert!(s.matches(&labels(&[])));
        assert!(!s.matches(&labels(&[("env", "dev")])));
        assert!(Selector::parse("").unwrap().matches(&labels(&[])));
    }

    #[test]
    fn malformed_selectors_are_refused() {
        for bad in ["env in (a", "env in a)", "a b", "env on (a)", "=x"] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }
}
