//! Names made from records: the Kafka sink's `topic`, the opensearch
//! sink's `index`. `${tag}`, `${tag[N]}` and strftime sequences as in the
//! file sink's `path`, and `${record.FIELD}`, the value of a record's
//! top-level field, so one sink can spread records by their content
//! (`logs-${record.service}`).

use std::borrow::Cow;

use chrono::{DateTime, Local, TimeZone};

use crate::event::RecordRef;
use crate::format::json;
use crate::protocol::msgpack::Value;
use crate::sinks::file::path::PathTemplate;

/// The text of a scalar field (a string as it is, a number or bool as
/// JSON); `None` for nil, arrays and maps.
pub fn scalar_text(value: Value<'_>) -> Option<Cow<'_, [u8]>> {
    match value {
        Value::Str(s) | Value::Bin(s) => Some(Cow::Borrowed(s)),
        Value::Nil | Value::Array(_) | Value::Map(_) => None,
        other => {
            let mut buf = Vec::new();
            json::write_scalar(&mut buf, other);
            Some(Cow::Owned(buf))
        }
    }
}

/// What a record without the field (or with a map, an array or nil there)
/// puts in its name, as a missing tag part does in a file path.
pub const MISSING_FIELD: &str = "_";

/// A parsed name template.
#[derive(Debug, Clone)]
pub struct NameTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    /// Text with `${tag}`, `${tag[N]}` and strftime sequences.
    Path(PathTemplate),
    /// `${record.NAME}`: a record field.
    Field(Vec<u8>),
}

/// The topic of the records of one batch: its tag and time rendered, its
/// record fields still to fill in.
pub struct BatchName<'t> {
    parts: Vec<Rendered<'t>>,
}

enum Rendered<'t> {
    Text(String),
    Field(&'t [u8]),
}

impl NameTemplate {
    /// Parses `topic`, the value of the setting `key`.
    pub fn parse(key: &'static str, topic: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = topic;
        while let Some(i) = rest.find("${") {
            let after = &rest[i + 2..];
            let close = after
                .find('}')
                .ok_or_else(|| format!("{key} {topic:?}: `${{` needs a closing `}}`"))?;
            let name = &after[..close];
            text.push_str(&rest[..i]);
            rest = &after[close + 1..];
            if name == "tag" || name.starts_with("tag[") {
                // the path template's own placeholder
                text.push_str(&format!("${{{name}}}"));
                continue;
            }
            let Some(field) = name.strip_prefix("record.").filter(|f| !f.is_empty()) else {
                return Err(format!(
                    "{key} {topic:?}: unknown placeholder `${{{name}}}` (use ${{tag}}, ${{tag[N]}} or ${{record.FIELD}})"
                ));
            };
            if !text.is_empty() {
                parts.push(Part::Path(path(key, topic, &std::mem::take(&mut text))?));
            }
            parts.push(Part::Field(field.as_bytes().to_vec()));
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(Part::Path(path(key, topic, &text)?));
        }
        if parts.is_empty() {
            return Err(format!("{key} must not be empty"));
        }
        Ok(NameTemplate { parts })
    }

    /// The one topic of every record, if neither tag, time nor fields
    /// change it.
    pub fn fixed(&self) -> Option<String> {
        match &self.parts[..] {
            [Part::Path(p)] if p.is_static() => Some(p.render("", &Local::now()).0),
            _ => None,
        }
    }

    /// Renders the tag and time of a batch.
    pub fn for_batch<Tz: TimeZone>(&self, tag: &str, now: &DateTime<Tz>) -> BatchName<'_>
    where
        Tz::Offset: std::fmt::Display,
    {
        let parts = self
            .parts
            .iter()
            .map(|p| match p {
                Part::Path(p) => Rendered::Text(p.render(tag, now).0),
                Part::Field(name) => Rendered::Field(name),
            })
            .collect();
        BatchName { parts }
    }
}

/// A text part of `topic` as a path template, its errors naming the setting.
fn path(key: &str, topic: &str, text: &str) -> Result<PathTemplate, String> {
    PathTemplate::parse(text).map_err(|e| format!("{key} {topic:?}: {e}"))
}

impl BatchName<'_> {
    /// The topic of every record of the batch, if it has no record field.
    pub fn whole(&self) -> Option<&str> {
        match &self.parts[..] {
            [Rendered::Text(t)] => Some(t),
            _ => None,
        }
    }

    /// The topic of `record`, and whether a field it names was missing.
    pub fn render(&self, record: RecordRef<'_>) -> (String, bool) {
        let mut out = String::new();
        let mut missing = false;
        for p in &self.parts {
            match p {
                Rendered::Text(t) => out.push_str(t),
                Rendered::Field(name) => match record.field(name).and_then(scalar_text) {
                    Some(v) => out.push_str(&String::from_utf8_lossy(&v)),
                    None => {
                        out.push_str(MISSING_FIELD);
                        missing = true;
                    }
                },
            }
        }
        (out, missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;
    use chrono::TimeZone;

    fn record(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut m = Vec::new();
        write::map_len(&mut m, fields.len());
        for (k, v) in fields {
            write::str(&mut m, k.as_bytes());
            write::str(&mut m, v.as_bytes());
        }
        m
    }

    #[test]
    fn fields_tags_and_dates_make_the_topic() {
        let now = Local.with_ymd_and_hms(2026, 11, 22, 1, 2, 3).unwrap();
        let t = NameTemplate::parse("topic", "logs-${record.service}-${tag[1]}-%Y").unwrap();
        assert_eq!(t.fixed(), None);
        let b = t.for_batch("app.web", &now);
        assert_eq!(b.whole(), None);
        let rec = record(&[("service", "billing")]);
        assert_eq!(
            b.render(RecordRef::Map(&rec)),
            ("logs-billing-web-2026".to_string(), false)
        );
        // missing, or not a scalar: `_`, and said
        let rec = record(&[("other", "x")]);
        assert_eq!(
            b.render(RecordRef::Map(&rec)),
            ("logs-_-web-2026".to_string(), true)
        );
        let mut nested = Vec::new();
        write::map_len(&mut nested, 1);
        write::str(&mut nested, b"service");
        write::map_len(&mut nested, 0);
        assert!(b.render(RecordRef::Map(&nested)).1);
        // numbers as JSON text; a text line has only `message`
        let mut n = Vec::new();
        write::map_len(&mut n, 1);
        write::str(&mut n, b"service");
        write::uint(&mut n, 7);
        assert_eq!(b.render(RecordRef::Map(&n)).0, "logs-7-web-2026");
        let t = NameTemplate::parse("topic", "by-${record.message}").unwrap();
        let b = t.for_batch("x", &now);
        assert_eq!(b.render(RecordRef::Line(b"hello")).0, "by-hello");
    }

    #[test]
    fn without_fields_a_batch_has_one_topic() {
        let now = Local::now();
        let t = NameTemplate::parse("topic", "logs.${tag}").unwrap();
        assert_eq!(t.fixed(), None);
        assert_eq!(t.for_batch("a.b", &now).whole(), Some("logs.a.b"));
        let t = NameTemplate::parse("topic", "logs").unwrap();
        assert_eq!(t.fixed().as_deref(), Some("logs"));
        let t = NameTemplate::parse("topic", "${record.service}").unwrap();
        assert_eq!(t.fixed(), None);
    }

    #[test]
    fn bad_templates_are_named() {
        for (topic, says) in [
            ("", "must not be empty"),
            ("logs-${record.service", "closing"),
            ("logs-${}", "unknown placeholder"),
            ("logs-${service}", "${record.FIELD}"),
            ("logs-${record.}", "unknown placeholder"),
            ("logs-${tag[x]}", "needs a number N"),
        ] {
            let e = NameTemplate::parse("topic", topic).unwrap_err();
            assert!(e.contains(says), "{topic}: {e}");
        }
    }
}
