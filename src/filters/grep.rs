//! `type = "grep"`: keeps or drops records by regexes on their fields
//! (Fluent Bit's `grep` filter, Fluentd's `filter_grep`).
//!
//! ```toml
//! [filters.errors_only]
//! type = "grep"
//! match = "app.**"
//! include = { level = "^(error|fatal)$" }
//! exclude = { path = "^/health" }
//! ```

use std::collections::BTreeMap;

use regex::bytes::Regex;
use serde::Deserialize;

use super::field::FieldPath;
use super::records::retain;
use crate::event::{Batch, RecordRef};
use crate::metrics::{Counter, Registry};
use crate::router::{Filter, TagPattern};

/// The keys of a grep filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrepConfig {
    /// Keep a record only if these fields match their regexes
    /// (`{ FIELD = "REGEX" }`); a missing field does not match. A field is
    /// a top-level key, or `$a['b']` for a key in a nested map.
    #[serde(default)]
    pub include: BTreeMap<String, String>,
    /// Drop a record if these fields match their regexes; a missing field
    /// does not match.
    #[serde(default)]
    pub exclude: BTreeMap<String, String>,
    /// How several rules combine: unset (every `include` must match, and
    /// any `exclude` that matches drops, as Fluent Bit's default), `"and"`
    /// (the record is kept, or with `exclude` dropped, when every rule
    /// matches) or `"or"` (when any does). With `op`, use either `include`
    /// or `exclude`, not both.
    #[serde(default)]
    pub op: Option<Op>,
}

/// How the rules of a grep filter combine.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    And,
    Or,
}

impl GrepConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.include.is_empty() && self.exclude.is_empty() {
            return Err("a grep filter needs `include` or `exclude` rules".into());
        }
        if self.op.is_some() && !self.include.is_empty() && !self.exclude.is_empty() {
            return Err(
                "with `op`, give either `include` or `exclude` rules, not both (use two grep filters)"
                    .into(),
            );
        }
        rules(&self.include, "include")?;
        rules(&self.exclude, "exclude")?;
        Ok(())
    }
}

/// One compiled rule: a field and the regex its value must match.
struct Rule {
    field: FieldPath,
    regex: Regex,
}

impl Rule {
    fn matches(&self, record: RecordRef<'_>) -> bool {
        self.field
            .lookup(record)
            .and_then(|v| v.with_text(|text| self.regex.is_match(text)))
            .unwrap_or(false)
    }
}

fn rules(table: &BTreeMap<String, String>, key: &str) -> Result<Vec<Rule>, String> {
    table
        .iter()
        .map(|(field, regex)| {
            Ok(Rule {
                field: FieldPath::parse(field).map_err(|e| format!("{key}: {e}"))?,
                regex: Regex::new(regex).map_err(|e| format!("{key}.{field}: {e}"))?,
            })
        })
        .collect()
}

/// A running grep filter.
pub struct GrepFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    include: Vec<Rule>,
    exclude: Vec<Rule>,
    op: Option<Op>,
    /// Records that reached the filter.
    records: Counter,
    /// Records it dropped (settled as filtered).
    dropped: Counter,
}

impl GrepFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &GrepConfig,
        metrics: &Registry,
    ) -> Result<GrepFilter, String> {
        Ok(GrepFilter {
            name: name.to_string(),
            pattern,
            include: rules(&config.include, "include")?,
            exclude: rules(&config.exclude, "exclude")?,
            op: config.op,
            records: super::records_counter(metrics, name, "grep"),
            dropped: super::dropped_counter(metrics, name, "grep"),
        })
    }

    /// Whether `record` goes on.
    fn keeps(&self, record: RecordRef<'_>) -> bool {
        let all = |rules: &[Rule]| rules.iter().all(|r| r.matches(record));
        let any = |rules: &[Rule]| rules.iter().any(|r| r.matches(record));
        match self.op {
            None => all(&self.include) && !any(&self.exclude),
            Some(Op::And) if self.exclude.is_empty() => all(&self.include),
            Some(Op::And) => !all(&self.exclude),
            Some(Op::Or) if self.exclude.is_empty() => any(&self.include),
            Some(Op::Or) => !any(&self.exclude),
        }
    }
}

impl Filter for GrepFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        out.extend(self.filter(batch));
    }
}

impl GrepFilter {
    /// The batch with the filter applied; `None` when no record is left.
    pub fn filter(&self, batch: Batch) -> Option<Batch> {
        let before = batch.count;
        self.records.add(before as u64);
        let out = retain(batch, |r| self.keeps(r));
        let after = out.as_ref().map_or(0, |b| b.count);
        self.dropped.add(before.saturating_sub(after) as u64);
        out
    }
}

#[cfg(test)]
mod tests;
