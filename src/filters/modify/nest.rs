//! `nest` and `lift` (Fluent Bit's `nest` filter): moving top-level
//! fields into a map under one key, and a map's fields up to the top.

use std::borrow::Cow;

use serde::Deserialize;

use crate::filters::field::{map_fields, write_map, Field};

/// `nest = { fields = ["kube_*"], under = "kubernetes" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NestConfig {
    /// The fields to move: names in which `*` stands for any characters
    /// (Fluent Bit's `Wildcard`, one entry per pattern).
    pub fields: Vec<String>,
    /// The key of the map they move into (Fluent Bit's `Nest_under`); a
    /// field of that name already there is replaced.
    pub under: String,
    /// Taken off the front of each moved field's name where it starts
    /// with it (Fluent Bit's `Remove_prefix`).
    #[serde(default)]
    pub remove_prefix: String,
}

/// `lift = { from = "kubernetes", add_prefix = "kube_" }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiftConfig {
    /// The field holding the map whose fields move up (Fluent Bit's
    /// `Nested_under`); a record where it is missing or not a map is
    /// left as it is.
    pub from: String,
    /// Put in front of each lifted field's name (Fluent Bit's
    /// `Add_prefix`). A lifted field replaces a top-level one of the same
    /// name.
    #[serde(default)]
    pub add_prefix: String,
}

impl NestConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.fields.is_empty() || self.fields.iter().any(|f| f.is_empty()) {
            return Err(
                "nest.fields: give the names (or `*` patterns) of the fields to move".into(),
            );
        }
        if self.under.is_empty() {
            return Err("nest.under: the key of the new map is empty".into());
        }
        Ok(())
    }
}

impl LiftConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.from.is_empty() {
            return Err("lift.from: the key of the map to lift is empty".into());
        }
        Ok(())
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any bytes.
fn matches(pattern: &[u8], name: &[u8]) -> bool {
    let mut parts = pattern.split(|c| *c == b'*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&[u8]> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // no `*`: the whole name
        return rest.is_empty();
    };
    for part in middle.iter().filter(|p| !p.is_empty()) {
        match rest.windows(part.len()).position(|w| w == *part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Moves the fields `config` names into a map under `config.under`;
/// false (and nothing changed) when no field matches.
pub(super) fn nest(config: &NestConfig, fields: &mut Vec<Field<'_>>) -> bool {
    let wanted = |k: &[u8]| config.fields.iter().any(|p| matches(p.as_bytes(), k));
    if !fields.iter().any(|(k, _)| wanted(k)) {
        return false;
    }
    let mut moved: Vec<Field<'_>> = Vec::new();
    let mut i = 0;
    while i < fields.len() {
        if !wanted(&fields[i].0) {
            i += 1;
            continue;
        }
        let (k, v) = fields.remove(i);
        let key = match k.strip_prefix(config.remove_prefix.as_bytes()) {
            Some(short) if !config.remove_prefix.is_empty() && !short.is_empty() => {
                Cow::Owned(short.to_vec())
            }
            _ => k,
        };
        // two names that become one after the prefix: the later one stays
        moved.retain(|(m, _)| m.as_ref() != key.as_ref());
        moved.push((key, v));
    }
    let mut map = Vec::new();
    write_map(&mut map, &moved);
    let under = config.under.as_bytes();
    fields.retain(|(k, _)| k.as_ref() != under);
    fields.push((Cow::Owned(under.to_vec()), Cow::Owned(map)));
    true
}

/// Moves the fields of the map at `config.from` up to the top; false (and
/// nothing changed) when there is no such map (or its keys are not all
/// strings).
pub(super) fn lift(config: &LiftConfig, fields: &mut Vec<Field<'_>>) -> bool {
    let from = config.from.as_bytes();
    let Some(i) = fields.iter().position(|(k, _)| k.as_ref() == from) else {
        return false;
    };
    let value = fields[i].1.clone().into_owned();
    let Some(inner) = map_fields(&value) else {
        return false;
    };
    let lifted: Vec<(Vec<u8>, Vec<u8>)> = inner
        .into_iter()
        .map(|(k, v)| {
            let mut key = config.add_prefix.as_bytes().to_vec();
            key.extend_from_slice(&k);
            (key, v.into_owned())
        })
        .collect();
    fields.remove(i);
    for (k, v) in lifted {
        fields.retain(|(f, _)| f.as_ref() != k.as_slice());
        fields.push((Cow::Owned(k), Cow::Owned(v)));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards() {
        for (p, n, want) in [
            ("a", "a", true),
            ("a", "ab", false),
            ("kube_*", "kube_pod", true),
            ("kube_*", "kube_", true),
            ("kube_*", "kub", false),
            ("*_id", "trace_id", true),
            ("*_id", "trace_idx", false),
            ("*", "", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "acb", false),
            ("a**c", "abc", true),
            ("*ab*", "xaby", true),
            ("a*a", "a", false),
        ] {
            assert_eq!(matches(p.as_bytes(), n.as_bytes()), want, "{p} {n}");
        }
    }
}
