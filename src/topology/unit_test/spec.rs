//! The `[[tests]]` tables of a configuration file, as `logferry test`
//! reads them.
//!
//! ```toml
//! [[tests]]
//! name = "errors are kept"
//!
//! [[tests.inputs]]
//! source = "app"                 # or filter = "NAME": after that filter
//! tag = "app.web"                # the source's own tag by default
//! lines = ["level=error boom"]   # or records = [{ level = "error" }]
//!
//! [[tests.outputs]]
//! sink = "out"                   # or filter = "NAME": what leaves it
//! records = [{ message = "level=error boom" }]
//! conditions = [{ field = "message", matches = "^level=" }]
//! count = 1
//! ```

use serde::Deserialize;

use crate::event::EventTime;
use crate::protocol::msgpack::write;

/// One `[[tests]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// Shown in the report.
    pub name: String,
    /// What is fed, in order.
    pub inputs: Vec<InputSpec>,
    /// What must come out.
    pub outputs: Vec<OutputSpec>,
    /// Where the test is in the file, for messages (not a key).
    #[serde(skip)]
    pub place: Option<super::TestPlace>,
}

/// One `[[tests.inputs]]` table: records fed at a source, or after a
/// filter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// The source the records come from: they go through every filter.
    #[serde(default)]
    pub source: Option<String>,
    /// The filter after which the records go on (from the next one).
    #[serde(default)]
    pub filter: Option<String>,
    /// The records' tag; by default a source's own `tag`. Needed for a
    /// source whose tags come from clients, and after a filter.
    #[serde(default)]
    pub tag: Option<String>,
    /// Lines of text, as a tailed file or a TCP source gives them: each
    /// is the record `{"message": LINE}`.
    #[serde(default)]
    pub lines: Option<Vec<String>>,
    /// Records given as tables, as a forward or JSON HTTP client sends
    /// them.
    #[serde(default)]
    pub records: Option<Vec<toml::Table>>,
}

/// One `[[tests.outputs]]` table: what reaches a sink, or leaves a filter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// The sink whose received records are checked.
    #[serde(default)]
    pub sink: Option<String>,
    /// The filter whose output is checked.
    #[serde(default)]
    pub filter: Option<String>,
    /// Exactly these records, in this order, each with exactly these
    /// fields (no more, no fewer).
    #[serde(default)]
    pub records: Option<Vec<toml::Table>>,
    /// Conditions every record that arrives must meet.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Exactly this many records (`0`: nothing arrives).
    #[serde(default)]
    pub count: Option<usize>,
}

/// A condition on one field of a record.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The field: `level`, or `$a['b']` for a key in a nested map.
    pub field: String,
    /// The field has this value (type included: `"200"` is not `200`).
    #[serde(default)]
    pub equals: Option<toml::Value>,
    /// The field's text (a number or boolean as it prints) matches this
    /// regex.
    #[serde(default)]
    pub matches: Option<String>,
    /// The field is there (`true`) or not (`false`).
    #[serde(default)]
    pub exists: Option<bool>,
}

/// Where an input goes in, or an output is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Point {
    Source(String),
    Filter(String),
    Sink(String),
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Point::Source(n) => write!(f, "source {n}"),
            Point::Filter(n) => write!(f, "filter {n}"),
            Point::Sink(n) => write!(f, "sink {n}"),
        }
    }
}

impl InputSpec {
    /// Where the records go in.
    pub fn point(&self) -> Result<Point, String> {
        match (&self.source, &self.filter) {
            (Some(s), None) => Ok(Point::Source(s.clone())),
            (None, Some(f)) => Ok(Point::Filter(f.clone())),
            _ => Err("an input needs `source` or `filter` (one of them)".into()),
        }
    }
}

impl OutputSpec {
    /// Where the records are read.
    pub fn point(&self) -> Result<Point, String> {
        match (&self.sink, &self.filter) {
            (Some(s), None) => Ok(Point::Sink(s.clone())),
            (None, Some(f)) => Ok(Point::Filter(f.clone())),
            _ => Err("an output needs `sink` or `filter` (one of them)".into()),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.point()?;
        if self.records.is_none() && self.conditions.is_empty() && self.count.is_none() {
            return Err(
                "an output needs `records`, `conditions` or `count` (count = 0: nothing arrives)"
                    .into(),
            );
        }
        if let (Some(r), Some(n)) = (&self.records, self.count) {
            if r.len() != n {
                return Err(format!(
                    "`records` lists {} records but `count` is {n}",
                    r.len()
                ));
            }
        }
        for c in &self.conditions {
            let tests = [c.equals.is_some(), c.matches.is_some(), c.exists.is_some()];
            if tests.iter().filter(|t| **t).count() != 1 {
                return Err(format!(
                    "condition on {:?}: give one of `equals`, `matches`, `exists`",
                    c.field
                ));
            }
        }
        Ok(())
    }
}

impl TestSpec {
    pub fn validate(&self) -> Result<(), String> {
        if self.inputs.is_empty() {
            return Err("no `inputs`: add a [[tests.inputs]] table".into());
        }
        if self.outputs.is_empty() {
            return Err("no `outputs`: add a [[tests.outputs]] table".into());
        }
        for i in &self.inputs {
            i.point()?;
            match (&i.lines, &i.records) {
                (Some(lines), None) => {
                    if lines.iter().any(|l| l.contains('\n')) {
                        return Err(
                            "a line of `lines` may not hold a newline (give two lines)".into()
                        );
                    }
                }
                (None, Some(_)) => {}
                _ => return Err("an input needs `lines` or `records` (one of them)".into()),
            }
        }
        for o in &self.outputs {
            o.validate()?;
        }
        Ok(())
    }
}

/// `[time, map]` entries for `records` (a forward payload).
pub fn entries(records: &[toml::Table], time: EventTime) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, time.secs, time.nanos);
        table(&mut out, r);
    }
    out
}

fn table(out: &mut Vec<u8>, t: &toml::Table) {
    write::map_len(out, t.len());
    for (k, v) in t {
        write::str(out, k.as_bytes());
        value(out, v);
    }
}

/// A TOML value as msgpack: strings, integers, floats, booleans, arrays
/// and tables as such, a date-time as its text.
fn value(out: &mut Vec<u8>, v: &toml::Value) {
    match v {
        toml::Value::String(s) => write::str(out, s.as_bytes()),
        toml::Value::Integer(i) if *i >= 0 => write::uint(out, *i as u64),
        toml::Value::Integer(i) => {
            out.push(0xd3);
            out.extend_from_slice(&i.to_be_bytes());
        }
        toml::Value::Float(f) => {
            out.push(0xcb);
            out.extend_from_slice(&f.to_be_bytes());
        }
        toml::Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        toml::Value::Datetime(d) => write::str(out, d.to_string().as_bytes()),
        toml::Value::Array(a) => {
            write::array_len(out, a.len());
            for item in a {
                value(out, item);
            }
        }
        toml::Value::Table(t) => table(out, t),
    }
}

/// A TOML value as the JSON value a record's field would be.
pub fn json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => serde_json::Value::from(s.as_str()),
        toml::Value::Integer(i) => serde_json::Value::from(*i),
        toml::Value::Float(f) => serde_json::Value::from(*f),
        toml::Value::Boolean(b) => serde_json::Value::from(*b),
        toml::Value::Datetime(d) => serde_json::Value::from(d.to_string()),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(json).collect()),
        toml::Value::Table(t) => json_table(t),
    }
}

/// A TOML table as a JSON object.
pub fn json_table(t: &toml::Table) -> serde_json::Value {
    serde_json::Value::Object(t.iter().map(|(k, v)| (k.clone(), json(v))).collect())
}
