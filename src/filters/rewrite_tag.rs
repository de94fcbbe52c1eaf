//! `type = "rewrite_tag"`: gives records a new tag by a regex on a field
//! (Fluent Bit's `rewrite_tag`, Fluentd's `rewrite_tag_filter`). The
//! records go on under their new tag from the next filter, and the sinks
//! match it; no record meets a filter twice, so no loop is possible.
//!
//! ```toml
//! [filters.by_level]
//! type = "rewrite_tag"
//! match = "app.**"
//! rules = [{ field = "level", regex = "^(error|fatal)$", tag = "alert.$1" }]
//! ```

mod captures;

use regex::bytes::Regex;
use serde::Deserialize;

use super::field::FieldPath;
use super::records::retag;
use super::value::ValueTemplate;
use crate::event::{Batch, RecordRef};
use crate::metrics::{Counter, Registry};
use crate::router::{Filter, TagPattern};

/// The keys of a rewrite_tag filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteTagConfig {
    /// Tried in order; the first whose regex matches gives the new tag.
    pub rules: Vec<RewriteRuleConfig>,
    /// Also send the record on under its old tag (a copy); default false:
    /// the record goes on under the new tag only.
    #[serde(default)]
    pub keep: bool,
}

/// One rule of a rewrite_tag filter.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteRuleConfig {
    /// The field whose value is matched (`level`, or `$a['b']` nested).
    pub field: String,
    /// The regex it must match.
    pub regex: String,
    /// The new tag: text with `$1`…`$9` (the regex's captures), `${tag}`,
    /// `${tag[N]}` and `${hostname}`.
    pub tag: String,
}

impl RewriteTagConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rules.is_empty() {
            return Err("a rewrite_tag filter needs `rules`".into());
        }
        rules(&self.rules).map(|_| ())
    }
}

/// A compiled rule.
struct Rule {
    field: FieldPath,
    regex: Regex,
    tag: ValueTemplate,
}

fn rules(config: &[RewriteRuleConfig]) -> Result<Vec<Rule>, String> {
    config
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let at = |e: String| format!("rules[{i}]: {e}");
            let regex = Regex::new(&r.regex).map_err(|e| at(e.to_string()))?;
            let tag = ValueTemplate::parse_with_captures(&r.tag).map_err(at)?;
            check_tag(&r.tag, &tag, &r.regex, &regex).map_err(at)?;
            Ok(Rule {
                field: FieldPath::parse(&r.field).map_err(at)?,
                regex,
                tag,
            })
        })
        .collect()
}

/// A rule's `tag` names only captures its regex has, and can never be
/// empty.
fn check_tag(text: &str, tag: &ValueTemplate, pattern: &str, regex: &Regex) -> Result<(), String> {
    let groups = regex.captures_len() - 1;
    if let Some(n) = tag.captures().find(|n| *n > groups) {
        return Err(format!(
            "tag {text:?} uses ${n}, but the regex {pattern:?} has {groups} capture group(s)"
        ));
    }
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .ok();
    let may_be_empty = |n| hir.as_ref().is_some_and(|h| captures::may_be_empty(h, n));
    if text.is_empty() || tag.may_be_empty(may_be_empty) {
        return Err(format!(
            "tag {text:?} can be empty (a capture of {pattern:?} that can match nothing, or a `${{tag[N]}}` past a tag's last part): add text, e.g. \"alert.$1\", or make the capture match at least one character"
        ));
    }
    Ok(())
}

/// A running rewrite_tag filter.
pub struct RewriteTagFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    rules: Vec<Rule>,
    keep: bool,
    /// Filled in for `${hostname}`, read once.
    hostname: String,
    /// Records that reached the filter.
    records: Counter,
    /// Records it gave a new tag.
    retagged: Counter,
}

impl RewriteTagFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &RewriteTagConfig,
        metrics: &Registry,
    ) -> Result<RewriteTagFilter, String> {
        Ok(RewriteTagFilter {
            name: name.to_string(),
            pattern,
            rules: rules(&config.rules)?,
            keep: config.keep,
            hostname: crate::format::hostname(),
            records: super::records_counter(metrics, name, "rewrite_tag"),
            retagged: metrics.counter(
                "logferry_filter_retagged_records_total",
                "Records a rewrite_tag filter gave a new tag.",
                &[("component", name), ("component_type", "rewrite_tag")],
            ),
        })
    }

    /// The new tag of `record` (of tag `tag`), if a rule matches.
    fn new_tag(&self, tag: &str, record: RecordRef<'_>) -> Option<String> {
        self.rules.iter().find_map(|rule| {
            let value = rule.field.lookup(record)?;
            value
                .with_text(|text| {
                    let caps = rule.regex.captures(text)?;
                    let caps: Vec<Option<&[u8]>> =
                        caps.iter().map(|c| c.map(|m| m.as_bytes())).collect();
                    Some(rule.tag.render_with(tag, &self.hostname, &caps))
                })
                .flatten()
                // `validate` refuses a rule that can give no tag; a tag
                // is never made empty here whatever it missed
                .filter(|t| !t.is_empty())
        })
    }
}

impl Filter for RewriteTagFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        self.records.add(batch.count as u64);
        let tag = batch.tag.clone();
        let moved = retag(batch, self.keep, |r| self.new_tag(&tag, r), out);
        self.retagged.add(moved as u64);
    }
}

#[cfg(test)]
mod tests;
