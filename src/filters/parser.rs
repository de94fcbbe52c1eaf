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
//!
//! A record whose field does not parse (missing, not text, not in the
//! format) goes on unchanged and is counted
//! (`logferry_filter_parse_failed_records_total`); with `failed_tag` it
//! goes on under that tag instead (Fluentd's
//! `emit_invalid_record_to_error`, which sends it to `@ERROR`).

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Deserialize;

use super::field::{write_map, Field};
use super::records::{retag, rewrite_timed, Change};
use super::value::ValueTemplate;
use crate::event::{Batch, EventTime};
use crate::metrics::{Counter, Registry};
use crate::protocol::msgpack::{Reader, Value};
use crate::protocol::syslog::Clock;
use crate::router::{Filter, TagPattern};
use crate::telemetry::RateLimitedLog;

mod access_log;
mod csv;
mod formats;
mod syslog;
mod time;
mod types;

use formats::Parser;
pub use formats::{Format, APACHE2};
use time::TimeFormat;
pub use types::FieldType;
use types::Types;

/// The keys of a parser filter's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParserConfig {
    /// The top-level field to parse.
    #[serde(default = "default_key")]
    pub key: String,
    /// How to parse it: `json`, `logfmt`, `regex`, a built-in regex
    /// (`apache`, `apache2`, `apache_error`, `nginx`), a container log
    /// line (`cri`, `docker`; these set the record time from `time`), a
    /// syslog message (`syslog`: RFC 5424 or 3164, told apart by the
    /// message; `syslog_rfc3164`, `syslog_rfc5424`: one of them; these
    /// set the record time from the message's timestamp), or `csv`.
    pub format: Format,
    /// With `format = "regex"`: the regex; its named captures become
    /// fields (as strings).
    pub regex: Option<String>,
    /// With `format = "csv"`: the names of the values, in order. A line
    /// with another number of values does not parse.
    pub columns: Option<Vec<String>>,
    /// `{ FIELD = "int" | "float" | "bool" }`: parsed text values written
    /// as numbers or booleans. A value that does not convert stays text
    /// and is counted (`logferry_filter_type_failed_fields_total`); the
    /// record is still parsed.
    #[serde(default)]
    pub types: BTreeMap<String, FieldType>,
    /// The tag a record whose field does not parse goes on with (it is
    /// still unchanged and counted); `${tag}`, `${tag[N]}` and
    /// `${hostname}` are filled in. Default: it keeps its tag.
    pub failed_tag: Option<String>,
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
    /// `"%d/%b/%Y:%H:%M:%S %z"`, with Fluent Bit's additions: `%L` is the
    /// fraction of a second, `%z` takes `Z`, and a format without a year
    /// reads the current one. Without a zone (`%z`) the time is UTC.
    pub time_format: Option<String>,
    /// Keep the `time_key` field among the fields too. Default false, but
    /// true for `cri` and `docker`, as Fluent Bit's presets (`Time_Keep On`).
    pub time_keep: Option<bool>,
}

fn default_key() -> String {
    "message".into()
}

impl ParserConfig {
    pub fn validate(&self) -> Result<(), String> {
        let has_time_key = self.time_key.is_some() || self.format.default_time().is_some();
        if !has_time_key && (self.time_format.is_some() || self.time_keep.is_some()) {
            return Err("`time_format` and `time_keep` go with `time_key`".into());
        }
        if let Some(f) = &self.time_format {
            TimeFormat::new(f)?;
        }
        if let Some(t) = &self.failed_tag {
            failed_tag(t)?;
        }
        Parser::new(self.format, self.regex.as_deref(), self.columns.as_deref()).map(|_| ())
    }
}

fn failed_tag(text: &str) -> Result<ValueTemplate, String> {
    if text.trim().is_empty() {
        return Err("failed_tag is empty".into());
    }
    ValueTemplate::parse(text).map_err(|e| format!("failed_tag: {e}"))
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
    /// The parsed field holding the record's time (`time_key`, or the
    /// format's own).
    time_key: Option<Vec<u8>>,
    /// How a `time_key` string is read.
    time_format: Option<TimeFormat>,
    /// Keep the `time_key` field among the fields.
    time_keep: bool,
    /// The last time text read and what it stood for: the lines of a log
    /// mostly share their second with the line before, and reading a date
    /// costs far more than comparing a few bytes.
    last_time: Mutex<(Vec<u8>, Option<EventTime>)>,
    /// Parsed values to write as numbers or booleans (`types`).
    types: Types,
    /// Where records that do not parse go (`failed_tag`).
    failed_tag: Option<ValueTemplate>,
    /// Filled in for `${hostname}` in `failed_tag`, read once.
    hostname: String,
    /// Records that reached the filter.
    records: Counter,
    /// Records whose field did not parse (or was missing, or not text):
    /// passed on unchanged.
    failed: Counter,
    /// Parsed records whose `time_key` was missing or not a time: they
    /// keep the time they had.
    bad_time: Counter,
    /// Warnings about those, rate-limited: a log whose every line has a
    /// time in another layout would otherwise log every line.
    bad_time_log: RateLimitedLog,
    /// Values `types` could not convert: they stay text.
    type_failed: Counter,
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
            parser: Parser::new(
                config.format,
                config.regex.as_deref(),
                config.columns.as_deref(),
            )?,
            reserve_data: config.reserve_data,
            preserve_key: config.preserve_key,
            time_key: config
                .time_key
                .as_deref()
                .or(config.format.default_time().map(|(k, _)| k))
                .map(|k| k.as_bytes().to_vec()),
            // a format's own time key is read in its own layout unless
            // told otherwise
            time_format: config
                .time_format
                .clone()
                .or_else(|| {
                    match (config.time_key.as_deref(), config.format.default_time()) {
                        (None, Some((_, f))) => Some(f.to_string()),
                        (Some(k), Some((own, f))) if k == own => Some(f.to_string()),
                        _ => None,
                    }
                })
                .map(|f| TimeFormat::new(&f))
                .transpose()?,
            time_keep: config
                .time_keep
                .unwrap_or(config.format.keeps_time()),
            last_time: Mutex::new((Vec::new(), None)),
            types: Types::new(&config.types),
            failed_tag: config.failed_tag.as_deref().map(failed_tag).transpose()?,
            hostname: crate::format::hostname(),
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
            bad_time_log: RateLimitedLog::default(),
            type_failed: metrics.counter(
                "logferry_filter_type_failed_fields_total",
                "Parsed values a parser filter's `types` could not convert (not an int, float or bool); they stay text.",
                &[("component", name), ("component_type", "parser")],
            ),
        })
    }

    /// Writes the record's new map into `out`, or nothing (returning
    /// `None`) if the field does not parse.
    fn parse(
        &self,
        fields: Vec<Field<'_>>,
        clock: &OnceCell<Clock>,
        out: &mut Vec<u8>,
    ) -> Option<Change> {
        let i = fields.iter().position(|(k, _)| k.as_ref() == self.key)?;
        let text = match Reader::new(&fields[i].1).read() {
            Ok(Value::Str(t) | Value::Bin(t)) => t,
            _ => return None,
        };
        // about what the parsed map takes: the text and its field names
        let mut parsed = Vec::with_capacity(text.len() + 128);
        let formats::Parsed {
            fields: n,
            time: format_time,
        } = self.parser.parse(text, clock, &mut parsed)?;
        let keeps_any = self.preserve_key || (self.reserve_data && fields.len() > 1);
        if !keeps_any && self.time_key.is_none() && self.types.is_empty() {
            // the parsed map is the new record as it is
            out.extend_from_slice(&parsed);
            return Some(match format_time {
                Some(t) => Change::ChangedAt(t),
                None => Change::Changed,
            });
        }
        if !keeps_any && self.types.is_empty() {
            if let Some(key) = &self.time_key {
                return self.parsed_with_time(key, &parsed, n, out);
            }
        }
        let mut pairs = super::field::map_fields(&parsed).filter(|p| p.len() == n)?;
        if !self.types.is_empty() {
            self.type_failed.add(self.types.apply(&mut pairs) as u64);
        }
        let mut time = format_time;
        if let Some(key) = &self.time_key {
            let at = pairs.iter().position(|(k, _)| k.as_ref() == key.as_slice());
            time = at.and_then(|j| self.time_of(&pairs[j].1));
            match (time, at) {
                (None, _) => self.bad_time(at.map(|j| &pairs[j].1[..])),
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
        Some(match time {
            Some(t) => Change::ChangedAt(t),
            None => Change::Changed,
        })
    }

    /// The `parsed` map of `n` pairs as the new record, its `key` field
    /// giving the record's time (and taken out unless `time_keep`): what
    /// [`Self::parse`] does with a record parsed whole, without decoding
    /// the map into fields and encoding it again.
    fn parsed_with_time(
        &self,
        key: &[u8],
        parsed: &[u8],
        n: usize,
        out: &mut Vec<u8>,
    ) -> Option<Change> {
        let mut r = Reader::new(parsed);
        if r.read_map_len().ok()? != n {
            return None;
        }
        let pairs_at = r.pos();
        // the time's pair: where it starts, where its value starts, its end
        let mut found = None;
        for _ in 0..n {
            let start = r.pos();
            let named = matches!(r.read().ok()?, Value::Str(k) | Value::Bin(k) if k == key);
            let value = r.pos();
            r.skip().ok()?;
            if named && found.is_none() {
                found = Some((start, value, r.pos()));
            }
        }
        let Some((start, value, end)) = found else {
            self.bad_time(None);
            out.extend_from_slice(parsed);
            return Some(Change::Changed);
        };
        let Some(time) = self.time_of(&parsed[value..end]) else {
            self.bad_time(Some(&parsed[value..end]));
            out.extend_from_slice(parsed);
            return Some(Change::Changed);
        };
        if self.time_keep {
            out.extend_from_slice(parsed);
        } else {
            crate::protocol::msgpack::write::map_len(out, n - 1);
            out.extend_from_slice(&parsed[pairs_at..start]);
            out.extend_from_slice(&parsed[end..]);
        }
        Some(Change::ChangedAt(time))
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
        self.time_format.as_ref()?.read(text, EventTime::now())
    }

    /// Counts a parsed record whose time did not read, and says so now
    /// and then: `value` is its encoded `time_key` value, `None` if the
    /// record has none.
    fn bad_time(&self, value: Option<&[u8]>) {
        self.bad_time.inc();
        let Some(suppressed) = self.bad_time_log.allow("bad_time") else {
            return;
        };
        let key = String::from_utf8_lossy(self.time_key.as_deref().unwrap_or_default());
        let format = self.time_format.as_ref().map_or("", TimeFormat::text);
        let text = match value.map(|v| Reader::new(v).read()) {
            None => "(no such field)".to_string(),
            Some(Ok(Value::Str(t) | Value::Bin(t))) => {
                // a bounded excerpt: the value comes from the record
                let end = t.len().min(120);
                String::from_utf8_lossy(&t[..end]).into_owned()
            }
            Some(_) => "(not a string or a number of seconds)".to_string(),
        };
        tracing::warn!(
            filter = %self.name,
            time_key = %key,
            time_format = %format,
            value = %text,
            suppressed,
            "parser: a record's time is not a time in time_format; it keeps the time it had"
        );
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
        let (batch, failed) = self.parse_batch(batch);
        let Some(tag) = self.failed_tag.as_ref().filter(|_| failed.contains(&true)) else {
            out.push(batch);
            return;
        };
        let tag = tag.render(&batch.tag, &self.hostname);
        let mut at = 0;
        retag(
            batch,
            false,
            |_| {
                let f = failed.get(at).copied().unwrap_or(false);
                at += 1;
                f.then(|| tag.clone())
            },
            out,
        );
    }
}

impl ParserFilter {
    /// The batch with every record's field parsed where it parses; the
    /// records that do not parse stay in it unchanged (`failed_tag` is
    /// [`Filter::apply`]'s).
    pub fn filter(&self, batch: Batch) -> Batch {
        self.parse_batch(batch).0
    }

    /// The batch parsed, and which of its records did not parse.
    fn parse_batch(&self, batch: Batch) -> (Batch, Vec<bool>) {
        self.records.add(batch.count as u64);
        // the year of an RFC 3164 timestamp and the zone: once per batch,
        // and only for syslog
        let clock = OnceCell::new();
        // true until the record parsed; a record `rewrite_timed` never
        // shows (a map with keys that are not text) has no field to parse
        let mut failed = vec![true; batch.count];
        let batch = rewrite_timed(batch, |at, fields, out| {
            let change = self.parse(fields, &clock, out);
            if change.is_some() {
                if let Some(f) = failed.get_mut(at) {
                    *f = false;
                }
            }
            change.unwrap_or(Change::Kept)
        });
        self.failed
            .add(failed.iter().filter(|f| **f).count() as u64);
        (batch, failed)
    }
}

#[cfg(test)]
mod tests;
