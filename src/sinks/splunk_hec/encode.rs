//! Records → HEC request bodies, and HEC answers → what became of them.
//!
//! `/services/collector/event` takes JSON events back to back, each
//! `{"time":…,"host":…,"source":…,"sourcetype":…,"index":…,"event":{record}}`
//! with the record's time in seconds (to the microsecond) and only the
//! metadata that is set. `/services/collector/raw` takes lines: each
//! record's `message` when it is a string, else the record as JSON; its
//! metadata, one per request, goes in the query.

use std::io::Write as _;

use chrono::{TimeZone, Utc};
use serde::Deserialize;

use super::config::SplunkHecSettings;
use crate::event::{Batch, EventTime};
use crate::format::{self, json};
use crate::http_client::percent_encode;
use crate::protocol::msgpack::{self, Value};
use crate::sinks::name::{BatchName, NameTemplate};
use crate::sinks::verdict::Rejection;

/// The metadata templates: index, sourcetype, source, host.
pub struct Metadata {
    /// By key, those that are set.
    templates: Vec<(&'static str, NameTemplate)>,
    /// Records whose metadata names a field they lack (`_` stood in).
    pub missing_fields: u64,
}

impl Metadata {
    pub fn new(c: &SplunkHecSettings) -> Result<Metadata, String> {
        let mut templates = Vec::new();
        for (key, t) in c.templates() {
            if let Some(t) = t {
                templates.push((key, NameTemplate::parse(key, t)?));
            }
        }
        Ok(Metadata {
            templates,
            missing_fields: 0,
        })
    }

    /// Whether two batches of different tags may share a raw request.
    pub fn names_tag(&self) -> bool {
        !self.templates.is_empty()
    }

    /// Appends one event per record of `batch` to `out`.
    pub fn events(&mut self, batch: &Batch, out: &mut Vec<u8>) -> msgpack::Result<()> {
        let templates = &self.templates;
        // the rendered tag and date, again for each new second
        let mut named: Option<(u32, Vec<(&'static str, BatchName<'_>)>)> = None;
        let mut missing = 0;
        batch.for_each_record(|time, rec| {
            out.extend_from_slice(b"{\"time\":");
            let _ = write!(
                out,
                "{}.{:06}",
                time.secs,
                time.nanos.min(999_999_999) / 1000
            );
            if !templates.is_empty() {
                if named.as_ref().is_none_or(|(secs, _)| *secs != time.secs) {
                    named = Some((time.secs, rendered(templates, &batch.tag, time)));
                }
                for (key, name) in named.iter().flat_map(|(_, n)| n) {
                    let (value, lacks) = name.render(rec);
                    missing += u64::from(lacks);
                    out.extend_from_slice(b",\"");
                    out.extend_from_slice(key.as_bytes());
                    out.extend_from_slice(b"\":");
                    json::write_str(out, value.as_bytes());
                }
            }
            out.extend_from_slice(b",\"event\":");
            format::write_record_json(rec, out);
            out.push(b'}');
        })?;
        self.missing_fields += missing;
        Ok(())
    }

    /// The query of a raw request for `batch` (its tag, its first
    /// record's time), after `?channel=…`.
    pub fn raw_query(&self, batch: &Batch, first: EventTime) -> String {
        let mut q = String::new();
        for (key, name) in rendered(&self.templates, &batch.tag, first) {
            let value = name.whole().unwrap_or("_");
            q.push('&');
            q.push_str(key);
            q.push('=');
            q.push_str(&percent_encode(value));
        }
        q
    }
}

fn rendered<'t>(
    templates: &'t [(&'static str, NameTemplate)],
    tag: &str,
    time: EventTime,
) -> Vec<(&'static str, BatchName<'t>)> {
    let at = Utc
        .timestamp_opt(i64::from(time.secs), 0)
        .single()
        .unwrap_or_default();
    templates
        .iter()
        .map(|(k, t)| (*k, t.for_batch(tag, &at)))
        .collect()
}

/// Appends one line per record of `batch` to `out` (the raw endpoint);
/// returns the time of its first record.
pub fn raw_lines(batch: &Batch, out: &mut Vec<u8>) -> msgpack::Result<Option<EventTime>> {
    let mut first = None;
    batch.for_each_record(|time, rec| {
        first.get_or_insert(time);
        match rec.field(b"message") {
            Some(Value::Str(m)) => out.extend_from_slice(m),
            _ => format::write_record_json(rec, out),
        }
        out.push(b'\n');
    })?;
    Ok(first)
}

/// The body of a HEC answer: `{"text":"Success","code":0,"ackId":3}`.
#[derive(Debug, Default, Deserialize)]
pub struct HecAnswer {
    #[serde(default)]
    pub text: String,
    pub code: Option<i64>,
    #[serde(rename = "ackId")]
    pub ack_id: Option<u64>,
}

impl HecAnswer {
    /// The answer in `body`; an empty one when it is not HEC's JSON.
    pub fn read(body: &[u8]) -> HecAnswer {
        serde_json::from_slice(body).unwrap_or_default()
    }
}

/// What a HEC answer means for the events of its request (Splunk's
/// "Troubleshoot HTTP Event Collector" status codes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// 2xx: taken; with indexer acknowledgement, its `ackId`.
    Taken { ack_id: Option<u64> },
    /// 401/403 or codes 1–4: the token is missing, wrong or disabled. The
    /// events are not at fault: sent again, never set aside.
    TokenRefused(String),
    /// 503 (code 9, server busy), 500 (code 8), 408, 429: sent again.
    Retry,
    /// 400 and other refusals (code 6 invalid data format, 7 incorrect
    /// index, 12/13 event field missing or blank, …): set aside.
    Refused(Rejection),
}

/// The [`Outcome`] of an answer with `status`, its body read as `hec`;
/// `retried` says which statuses are sent again.
pub fn outcome(status: u16, hec: &HecAnswer, retried: bool, shown: &str) -> Outcome {
    if (200..300).contains(&status) {
        return Outcome::Taken { ack_id: hec.ack_id };
    }
    if matches!(status, 401 | 403) || matches!(hec.code, Some(1..=4)) {
        return Outcome::TokenRefused(format!("HTTP {status}: {shown}"));
    }
    if retried {
        return Outcome::Retry;
    }
    let kind = match hec.code {
        Some(6) => "hec_invalid_data_format",
        Some(7) => "hec_incorrect_index",
        Some(12 | 13) => "hec_event_missing",
        _ if (400..500).contains(&status) => "http_4xx",
        _ => "http_status",
    };
    Outcome::Refused(Rejection {
        kind,
        message: format!("HTTP {status}: {shown}"),
    })
}

/// The acknowledged ids of an answer to `/services/collector/ack`:
/// `{"acks":{"3":true,"4":false}}`.
pub fn acked_ids(body: &[u8]) -> Result<Vec<u64>, String> {
    #[derive(Deserialize)]
    struct Acks {
        acks: std::collections::HashMap<String, bool>,
    }
    let a: Acks = serde_json::from_slice(body).map_err(|e| format!("not an ack answer: {e}"))?;
    Ok(a.acks
        .into_iter()
        .filter(|(_, done)| *done)
        .filter_map(|(id, _)| id.parse().ok())
        .collect())
}

/// The body asking about `ids`: `{"acks":[3,4]}`.
pub fn ack_query(ids: &[u64]) -> Vec<u8> {
    let mut out = b"{\"acks\":[".to_vec();
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(out, "{id}");
    }
    out.extend_from_slice(b"]}");
    out
}

/// A record as it would be sent, for tests.
#[cfg(test)]
fn one_event(m: &mut Metadata, tag: &str, time: EventTime, line: &str) -> String {
    let batch = Batch::new(
        tag.into(),
        crate::event::Records::Lines {
            data: bytes::Bytes::from(format!("{line}\n")),
            time,
        },
        1,
    );
    let mut out = Vec::new();
    m.events(&batch, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(extra: &str) -> SplunkHecSettings {
        let c: super::super::config::SplunkHecSinkConfig =
            toml::from_str(&format!("endpoint = \"http://h\"\ntoken = \"t\"\n{extra}")).unwrap();
        c.sink
    }

    #[test]
    fn events_carry_time_metadata_and_the_record() {
        let mut m = Metadata::new(&settings(
            "index = \"logs-%Y\"\nsourcetype = \"${tag}\"\nhost = \"${record.host}\"",
        ))
        .unwrap();
        let t = EventTime::new(1_700_000_000, 123_456_789);
        let e = one_event(&mut m, "app.web", t, "hello \"x\"");
        assert_eq!(
            e,
            "{\"time\":1700000000.123456,\"index\":\"logs-2023\",\"sourcetype\":\"app.web\",\"host\":\"_\",\"event\":{\"message\":\"hello \\\"x\\\"\"}}"
        );
        assert_eq!(m.missing_fields, 1);
        let v: serde_json::Value = serde_json::from_str(&e).unwrap();
        assert_eq!(v["event"]["message"], "hello \"x\"");
        let mut bare = Metadata::new(&settings("")).unwrap();
        assert_eq!(
            one_event(&mut bare, "t", EventTime::new(5, 0), "m"),
            "{\"time\":5.000000,\"event\":{\"message\":\"m\"}}"
        );
    }

    #[test]
    fn answers_map_to_retry_token_or_set_aside() {
        let read = |s: &str| HecAnswer::read(s.as_bytes());
        let ok = read("{\"text\":\"Success\",\"code\":0,\"ackId\":7}");
        assert_eq!(
            outcome(200, &ok, false, ""),
            Outcome::Taken { ack_id: Some(7) }
        );
        for (status, body) in [
            (401, "{\"text\":\"Token is required\",\"code\":2}"),
            (401, "{\"text\":\"Invalid authorization\",\"code\":3}"),
            (403, "{\"text\":\"Invalid token\",\"code\":4}"),
            (403, "{\"text\":\"Token disabled\",\"code\":1}"),
            (401, "not json"),
        ] {
            assert!(
                matches!(
                    outcome(status, &read(body), false, body),
                    Outcome::TokenRefused(_)
                ),
                "{status} {body}"
            );
        }
        let busy = read("{\"text\":\"Server is busy\",\"code\":9}");
        assert_eq!(outcome(503, &busy, true, ""), Outcome::Retry);
        let bad = read("{\"text\":\"Invalid data format\",\"code\":6,\"invalid-event-number\":0}");
        match outcome(400, &bad, false, "x") {
            Outcome::Refused(r) => assert_eq!(r.kind, "hec_invalid_data_format"),
            o => panic!("{o:?}"),
        }
        match outcome(400, &read("{\"code\":7}"), false, "x") {
            Outcome::Refused(r) => assert_eq!(r.kind, "hec_incorrect_index"),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn ack_bodies() {
        assert_eq!(ack_query(&[1, 2]), b"{\"acks\":[1,2]}");
        let mut ids = acked_ids(b"{\"acks\":{\"1\":true,\"2\":false,\"3\":true}}").unwrap();
        ids.sort();
        assert_eq!(ids, [1, 3]);
        assert!(acked_ids(b"{}").is_err());
    }
}
