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

use std::sync::Mutex;

use serde::Deserialize;

use super::field::{write_map, Field};
use super::records::{rewrite_timed, Change};
use crate::event::{Batch, EventTime};
use crate::metrics::{Counter, Registry};
use crate::protocol::msgpack::{Reader, Value};
use crate::router::{Filter, TagPattern};

mod formats;

use formats::Parser;
pub use formats::{Format, APACHE2};

/// The keys of a parser filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParserConfig {
    /// The top-level field to parse.
    #[serde(default = "default_key")]
    pub key: String,
    /// How to parse it: `json`, `logfmt`, `regex`, a built-in regex
    /// (`apache`, `apache2`, `apache_error`, `nginx`), or a container log
    /// line (`cri`, `docker`; these set the record time from `time`).
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
    /// A parsed field that holds the record's time: a string read with
    /// `time_format`, or a number of seconds since the epoch.
    pub time_key: Option<String>,
    /// How `time_key` is written, in strptime notation (chrono's), e.g.
    /// `"%d/%b/%Y:%H:%M:%S %z"`; without a zone (`%z`) the time is UTC.
    pub time_format: Option<String>,
    /// Keep the `time_key` field among the fields too. Default false.
    #[serde(default)]
    pub time_keep: bool,
}

fn default_key() -> String {
    "message".into()
}

impl ParserConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.time_key.is_none() && (self.time_format.is_some() || self.time_keep) {
            return Err("`time_format` and `time_keep` go with `time_key`".into());
        }
        if let Some(f) = &self.time_format {
            // chrono reports a bad directive only when parsing: try one
            let bad = chrono::format::StrftimeItems::new(f)
                .any(|i| matches!(i, chrono::format::Item::Error));
            if bad {
                return Err(format!("time_format {f:?}: not a strptime format"));
            }
        }
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
    time_key: Option<Vec<u8>>,
    time_format: Option<String>,
    time_keep: bool,
    /// The last time text read and what it stood for: the lines of a log
    /// mostly share their second with the line before, and reading a date
    /// costs far more than comparing a few bytes.
    last_time: Mutex<(Vec<u8>, Option<EventTime>)>,
    /// Records that reached the filter.
    records: Counter,
    /// Records whose field did not parse (or was missing, or not text):
    /// passed on unchanged.
    failed: Counter,
    /// Parsed records whose `time_key` was missing or not a time: they
    /// keep the time they had.
    bad_time: Counter,
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
            time_key: config
                .time_key
                .as_deref()
                .or(config.format.default_time().map(|(k, _)| k))
                .map(|k| k.as_bytes().to_vec()),
            time_format: match (&config.time_key, config.format.default_time()) {
                (None, Some((_, f))) => Some(f.to_string()),
                _ => config.time_format.clone(),
            },
            time_keep: config.time_keep,
            last_time: Mutex::new((Vec::new(), None)),
            records: super::records_counter(metrics, name, "parser"),
            failed: metrics.counter(
                "logferry_filter_parse_failed_records_total",
                "Records whose field a parser filter could not parse (missing, not text, or not in the format); they go on unchanged.",
                &[("component", name), ("component_type", "parser")],
            ),
            bad_time: metrics.counter(
                "logferry_filter_bad_time_records_total",
                "Records a parser filter parsed whose time_key was missing or not a time in time_format; they keep the time they had.",
                &[("component", name), ("component_type", "parser")],
            ),
        })
    }

    /// Writes the record's new map into `out`, or nothing if the field
    /// does not parse.
    fn parse(&self, fields: Vec<Field<'_>>, out: &mut Vec<u8>) -> Change {
        let Some(i) = fields.iter().position(|(k, _)| k.as_ref() == self.key) else {
            self.failed.inc();
            return Change::Kept;
        };
        let text = match Reader::new(&fields[i].1).read() {
            Ok(Value::Str(t) | Value::Bin(t)) => t,
            _ => {
                self.failed.inc();
                return Change::Kept;
            }
        };
        let mut parsed = Vec::new();
        let Some(n) = self.parser.parse(text, &mut parsed) else {
            self.failed.inc();
            return Change::Kept;
        };
        let mut pairs = match super::field::map_fields(&parsed) {
            Some(p) if p.len() == n => p,
            _ => {
                self.failed.inc();
                return Change::Kept;
            }
        };
        let mut time = None;
        if let Some(key) = &self.time_key {
            let at = pairs.iter().position(|(k, _)| k.as_ref() == key.as_slice());
            time = at.and_then(|j| self.time_of(&pairs[j].1));
            match (time, at) {
                (None, _) => self.bad_time.inc(),
                (Some(_), Some(j)) if !self.time_keep => {
                    pairs.remove(j);
                }
                _ => {}
            }
        }
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
        match time {
            Some(t) => Change::ChangedAt(t),
            None => Change::Changed,
        }
    }

    /// The time an encoded value stands for: a string in `time_format`,
    /// or a number of seconds since the epoch.
    fn time_of(&self, encoded: &[u8]) -> Option<EventTime> {
        let (secs, nanos) = match Reader::new(encoded).read().ok()? {
            Value::Str(t) | Value::Bin(t) => {
                let mut last = self.last_time.lock().unwrap_or_else(|e| e.into_inner());
                if !last.0.is_empty() && last.0 == t {
                    return last.1;
                }
                let time = self.read_time(t);
                last.0.clear();
                last.0.extend_from_slice(t);
                last.1 = time;
                return time;
            }
            Value::UInt(u) => (i64::try_from(u).ok()?, 0),
            Value::Int(i) => (i, 0),
            Value::Float(f) if f.is_finite() && f >= 0.0 => (
                f.trunc() as i64,
                ((f.fract() * 1e9) as u32).min(999_999_999),
            ),
            _ => return None,
        };
        Some(EventTime::new(u32::try_from(secs).ok()?, nanos))
    }

    /// The time `t` stands for in `time_format`.
    fn read_time(&self, t: &[u8]) -> Option<EventTime> {
        let text = std::str::from_utf8(t).ok()?;
        let format = self.time_format.as_deref()?;
        let at = chrono::DateTime::parse_from_str(text, format)
            .map(|t| t.to_utc())
            .or_else(|_| chrono::NaiveDateTime::parse_from_str(text, format).map(|t| t.and_utc()))
            .ok()?;
        Some(EventTime::new(
            u32::try_from(at.timestamp()).ok()?,
            at.timestamp_subsec_nanos(),
        ))
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
        rewrite_timed(batch, |fields, out| self.parse(fields, out))
    }
}

#[cfg(test)]
mod tests;
