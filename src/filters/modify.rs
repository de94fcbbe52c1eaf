//! `type = "modify"`: keeps, removes, renames, copies and sets top-level
//! fields, nests fields in a map and lifts a map's fields up
//! (Fluent Bit's `modify` and `nest` filters, Fluentd's
//! `record_transformer`).
//!
//! ```toml
//! [filters.enrich]
//! type = "modify"
//! match = "app.**"
//! remove = ["password"]
//! rename = { msg = "message" }
//! set = { host = "${hostname}", service = "${tag[1]}" }
//! ```
//!
//! A record it changes is written again as a msgpack map (a line becomes
//! `{"message": LINE, …}`); a record it does not change keeps its bytes,
//! and a batch none of whose records changed is passed on as it came.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::field::{write_map, Field};
use super::records::rewrite;
use super::value::ValueTemplate;
use crate::event::Batch;

mod nest;

use crate::metrics::{Counter, Registry};
use crate::protocol::msgpack::write;
use crate::router::{Filter, TagPattern};
pub use nest::{LiftConfig, NestConfig};

/// The keys of a modify filter's table. They apply in this order:
/// `lift`, `keep_only`, `remove`, `rename`, `copy`, `set`,
/// `set_if_missing`, `nest`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModifyConfig {
    /// Move the fields of a map up to the top level (first, so the other
    /// changes see them).
    pub lift: Option<LiftConfig>,
    /// Delete every field but these (when given).
    pub keep_only: Option<Vec<String>>,
    /// Fields to delete.
    #[serde(default)]
    pub remove: Vec<String>,
    /// `{ OLD = "NEW" }`: fields to rename; a field already named `NEW`
    /// is replaced.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// `{ FROM = "TO" }`: fields to copy; a field already named `TO` is
    /// replaced.
    #[serde(default)]
    pub copy: BTreeMap<String, String>,
    /// `{ FIELD = "VALUE" }`: fields to set (added, or replaced), as
    /// strings; `${tag}`, `${tag[N]}` and `${hostname}` are filled in.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    /// Like `set`, only for records that do not have the field.
    #[serde(default)]
    pub set_if_missing: BTreeMap<String, String>,
    /// Move top-level fields into a map under one key (last, so it can
    /// nest fields the other changes set).
    pub nest: Option<NestConfig>,
}

impl ModifyConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.keep_only.is_none()
            && self.remove.is_empty()
            && self.rename.is_empty()
            && self.copy.is_empty()
            && self.set.is_empty()
            && self.set_if_missing.is_empty()
            && self.nest.is_none()
            && self.lift.is_none()
        {
            return Err(
                "a modify filter needs `keep_only`, `remove`, `rename`, `copy`, `set`, `set_if_missing`, `nest` or `lift`"
                    .into(),
            );
        }
        if let Some(n) = &self.nest {
            n.validate()?;
        }
        if let Some(l) = &self.lift {
            l.validate()?;
        }
        templates(&self.set, "set")?;
        templates(&self.set_if_missing, "set_if_missing")?;
        Ok(())
    }
}

fn templates(
    table: &BTreeMap<String, String>,
    key: &str,
) -> Result<Vec<(Vec<u8>, ValueTemplate)>, String> {
    table
        .iter()
        .map(|(field, value)| {
            let v = ValueTemplate::parse(value).map_err(|e| format!("{key}.{field}: {e}"))?;
            Ok((field.as_bytes().to_vec(), v))
        })
        .collect()
}

/// A running modify filter.
pub struct ModifyFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    keep_only: Option<Vec<Vec<u8>>>,
    remove: Vec<Vec<u8>>,
    rename: Vec<(Vec<u8>, Vec<u8>)>,
    copy: Vec<(Vec<u8>, Vec<u8>)>,
    set: Vec<(Vec<u8>, ValueTemplate)>,
    set_if_missing: Vec<(Vec<u8>, ValueTemplate)>,
    /// Fields to move into a map, applied last.
    nest: Option<NestConfig>,
    /// A map whose fields move up, applied first.
    lift: Option<LiftConfig>,
    /// Filled in for `${hostname}`, read once.
    hostname: String,
    /// Records that reached the filter.
    records: Counter,
}

impl ModifyFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &ModifyConfig,
        metrics: &Registry,
    ) -> Result<ModifyFilter, String> {
        Ok(ModifyFilter {
            name: name.to_string(),
            pattern,
            keep_only: config
                .keep_only
                .as_ref()
                .map(|k| k.iter().map(|f| f.as_bytes().to_vec()).collect()),
            copy: config
                .copy
                .iter()
                .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
                .collect(),
            remove: config
                .remove
                .iter()
                .map(|f| f.as_bytes().to_vec())
                .collect(),
            rename: config
                .rename
                .iter()
                .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
                .collect(),
            set: templates(&config.set, "set")?,
            set_if_missing: templates(&config.set_if_missing, "set_if_missing")?,
            nest: config.nest.clone(),
            lift: config.lift.clone(),
            hostname: crate::format::hostname(),
            records: super::records_counter(metrics, name, "modify"),
        })
    }

    /// The record's fields after the changes, or `None` if none applies.
    fn change<'a>(
        &'a self,
        mut fields: Vec<Field<'a>>,
        values: &'a [(Vec<u8>, Vec<u8>)],
        if_missing: &'a [(Vec<u8>, Vec<u8>)],
    ) -> Option<Vec<Field<'a>>> {
        let lifted = self
            .lift
            .as_ref()
            .is_some_and(|l| nest::lift(l, &mut fields));
        let before = fields.len();
        if let Some(keep) = &self.keep_only {
            fields.retain(|(k, _)| keep.iter().any(|f| f.as_slice() == k.as_ref()));
        }
        fields.retain(|(k, _)| !self.remove.iter().any(|r| r.as_slice() == k.as_ref()));
        let mut changed = lifted || fields.len() != before;
        for (old, new) in &self.rename {
            if let Some(i) = fields
                .iter()
                .position(|(k, _)| k.as_ref() == old.as_slice())
            {
                fields.retain(|(k, _)| k.as_ref() != new.as_slice());
                let i = fields
                    .iter()
                    .position(|(k, _)| k.as_ref() == old.as_slice())
                    .unwrap_or(i);
                fields[i].0 = new.as_slice().into();
                changed = true;
            }
        }
        for (from, to) in &self.copy {
            if let Some(i) = fields
                .iter()
                .position(|(k, _)| k.as_ref() == from.as_slice())
            {
                let value = fields[i].1.clone();
                fields.retain(|(k, _)| k.as_ref() != to.as_slice());
                fields.push((to.as_slice().into(), value));
                changed = true;
            }
        }
        for (key, value) in values {
            fields.retain(|(k, _)| k.as_ref() != key.as_slice());
            fields.push((key.as_slice().into(), value.as_slice().into()));
            changed = true;
        }
        for (key, value) in if_missing {
            if !fields.iter().any(|(k, _)| k.as_ref() == key.as_slice()) {
                fields.push((key.as_slice().into(), value.as_slice().into()));
                changed = true;
            }
        }
        if let Some(n) = &self.nest {
            changed |= nest::nest(n, &mut fields);
        }
        changed.then_some(fields)
    }
}

fn encoded(values: &[(Vec<u8>, ValueTemplate)], tag: &str, host: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    values
        .iter()
        .map(|(k, t)| {
            let mut v = Vec::new();
            write::str(&mut v, t.render(tag, host).as_bytes());
            (k.clone(), v)
        })
        .collect()
}

impl Filter for ModifyFilter {
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

impl ModifyFilter {
    /// The batch with the filter applied; `None` when no record is left.
    pub fn filter(&self, batch: Batch) -> Option<Batch> {
        self.records.add(batch.count as u64);
        // the values depend on the tag only: rendered once per batch
        let values = encoded(&self.set, &batch.tag, &self.hostname);
        let if_missing = encoded(&self.set_if_missing, &batch.tag, &self.hostname);
        Some(rewrite(batch, |fields, out| {
            match self.change(fields, &values, &if_missing) {
                Some(changed) => {
                    write_map(out, &changed);
                    true
                }
                None => false,
            }
        }))
    }
}

#[cfg(test)]
mod tests;
