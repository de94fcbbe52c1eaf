//! `type = "parser"`: parses a field (by default `message`) into fields
//! (Fluent Bit's `parser` filter, Fluentd's `filter_parser`).
//!
//! ```toml
//! [filters.access]
//! type = "parser"
//! match = "nginx.**"
//! format = "nginx"
//! reserve_data = true
//! ```

use serde::Deserialize;

use super::field::{write_map, Field};
use super::records::rewrite;
use crate::event::Batch;
use crate::metrics::{Counter, Registry};
use crate::protocol::msgpack::{Reader, Value};
use crate::router::{Filter, TagPattern};

mod formats;

pub use formats::Format;
use formats::Parser;

/// The keys of a parser filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParserConfig {
    /// The top-level field to parse.
    #[serde(default = "default_key")]
    pub key: String,
    /// How to parse it: `json`, `logfmt`, `regex`, or a built-in regex
    /// (`apache`, `apache2`, `apache_error`, `nginx`).
    pub format: Format,
    /// With `format = "regex"`: the regex; its named captures become
    /// fields (as strings).
    pub regex: Option<String>,
    /// Keep the record's other fields beside the parsed ones (a parsed
    /// field replaces one of the same name). Default false: the record is
    /// the parsed fields only, as in Fluent Bit.
    #[serde(default)]
    pub reserve_data: bool,
    /// Keep the parsed field itself too. Default false.
    #[serde(default)]
    pub preserve_key: bool,
}

fn default_key() -> String {
    "message".into()
}

impl ParserConfig {
    pub fn validate(&self) -> Result<(), String> {
        Parser::new(self.format, self.regex.as_deref()).map(|_| ())
    }
}

/// A running parser filter.
pub struct ParserFilter {
    /// `[filters.NAME]`.
    name: String,
    /// Which tags it applies to.
    pattern: TagPattern,
    key: Vec<u8>,
    parser: Parser,
    reserve_data: bool,
    preserve_key: bool,
    /// Records that reached the filter.
    records: Counter,
    /// Records whose field did not parse (or was missing, or not text):
    /// passed on unchanged.
    failed: Counter,
}

impl ParserFilter {
    pub fn new(
        name: &str,
        pattern: TagPattern,
        config: &ParserConfig,
        metrics: &Registry,
    ) -> Result<ParserFilter, String> {
        Ok(ParserFilter {
            name: name.to_string(),
            pattern,
            key: config.key.as_bytes().to_vec(),
            parser: Parser::new(config.format, config.regex.as_deref())?,
            reserve_data: config.reserve_data,
            preserve_key: config.preserve_key,
            records: super::records_counter(metrics, name, "parser"),
            failed: metrics.counter(
                "logferry_filter_parse_failed_records_total",
                "Records whose field a parser filter could not parse (missing, not text, or not in the format); they go on unchanged.",
                &[("component", name), ("component_type", "parser")],
            ),
        })
    }

    /// Writes the record's new map into `out`; false if the field does not
    /// parse (nothing written).
    fn parse(&self, fields: Vec<Field<'_>>, out: &mut Vec<u8>) -> bool {
        let Some(i) = fields.iter().position(|(k, _)| k.as_ref() == self.key) else {
            self.failed.inc();
            return false;
        };
        let text = match Reader::new(&fields[i].1).read() {
            Ok(Value::Str(t) | Value::Bin(t)) => t,
            _ => {
                self.failed.inc();
                return false;
            }
        };
        let mut parsed = Vec::new();
        let Some(n) = self.parser.parse(text, &mut parsed) else {
            self.failed.inc();
            return false;
        };
        let mut pairs = match super::field::map_fields(&parsed) {
            Some(p) if p.len() == n => p,
            _ => {
                self.failed.inc();
                return false;
            }
        };
        let taken = |k: &[u8], pairs: &[Field<'_>]| pairs.iter().any(|(p, _)| p.as_ref() == k);
        let mut result: Vec<Field<'_>> = Vec::with_capacity(fields.len() + n);
        for (j, (k, v)) in fields.iter().enumerate() {
            let keep = if j == i {
                self.preserve_key
            } else {
                self.reserve_data
            };
            if keep && !taken(k, &pairs) {
                result.push((k.clone(), v.clone()));
            }
        }
        result.append(&mut pairs);
        write_map(out, &result);
        true
    }
}

impl Filter for ParserFilter {
    fn name(&self) -> &str {
        &self.name
    }

    fn pattern(&self) -> &TagPattern {
        &self.pattern
    }

    fn apply(&self, batch: Batch, out: &mut Vec<Batch>) {
        out.push(self.filter(batch));
    }
}

impl ParserFilter {
    /// The batch with every record's field parsed where it parses.
    pub fn filter(&self, batch: Batch) -> Batch {
        self.records.add(batch.count as u64);
        rewrite(batch, |fields, out| self.parse(fields, out))
    }
}

#[cfg(test)]
mod tests;
