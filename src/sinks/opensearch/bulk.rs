//! The `_bulk` API: records → action and document lines, and the answer's
//! items → what became of each document.

use std::io::Write as _;
use std::ops::Range;

use chrono::{TimeZone, Utc};
use serde::Deserialize;

use super::config::{Action, OpenSearchSettings};
use crate::event::{Batch, EventTime, RecordRef};
use crate::format::json;
use crate::format::time::TimeFormat as Rfc3339;
use crate::protocol::msgpack;
use crate::sinks::http::encode::Added;
use crate::sinks::name::{scalar_text, BatchName, NameTemplate};

/// One document of a bulk request.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Which batch of the request, and which record of it.
    pub batch: usize,
    pub record: usize,
    pub time: EventTime,
    /// Its action and document lines in the request's buffer.
    pub lines: Range<usize>,
    /// The record's tag and content, to know it again when its batch
    /// comes back ([`record_key`]); 0 unless the encoder is `keyed`.
    pub key: u128,
}

/// Writes the action and document lines of records.
pub struct BulkEncoder {
    index: NameTemplate,
    /// The index of every record, when it names no field, tag or time.
    fixed_index: Option<String>,
    action: Action,
    id_key: Option<Vec<u8>>,
    generate_id: bool,
    routing_key: Option<Vec<u8>>,
    added: Added,
    rfc3339: Rfc3339,
    /// Records whose index names a field they lack (`_` stood in).
    pub missing_fields: u64,
    /// Records without their `id_key` field (sent without an `_id`).
    pub missing_ids: u64,
    /// Whether documents carry their [`record_key`]: only a sink that
    /// gives batches back when `retry.max_attempts` runs out (no
    /// `dead_letter`) uses it, so no other pays for hashing each record.
    pub keyed: bool,
}

impl BulkEncoder {
    pub fn new(c: &OpenSearchSettings) -> Result<BulkEncoder, String> {
        let index = NameTemplate::parse("index", &c.index)?;
        Ok(BulkEncoder {
            fixed_index: index.fixed(),
            index,
            action: c.action,
            id_key: c.id_key.as_ref().map(|k| k.as_bytes().to_vec()),
            generate_id: c.generate_id,
            routing_key: c.routing_key.as_ref().map(|k| k.as_bytes().to_vec()),
            added: Added {
                time_key: Some(c.time_key.clone()).filter(|k| !k.is_empty()),
                time_format: c.time_format,
                tag_key: c.tag_key.clone(),
            },
            rfc3339: Rfc3339::new(None)?,
            missing_fields: 0,
            missing_ids: 0,
            keyed: false,
        })
    }

    /// The encoder with documents carrying their [`record_key`] or not.
    pub fn keyed(mut self, keyed: bool) -> BulkEncoder {
        self.keyed = keyed;
        self
    }

    /// Appends the lines of every record of `batch` (the `n`th of its
    /// request) to `out`, and a [`Doc`] for each to `docs`.
    pub fn batch(
        &mut self,
        n: usize,
        batch: &Batch,
        out: &mut Vec<u8>,
        docs: &mut Vec<Doc>,
    ) -> msgpack::Result<()> {
        let tag = &batch.tag;
        let index = &self.index;
        let fixed = self.fixed_index.as_deref();
        // the rendered tag and date, again for each new second
        let mut named: Option<(u32, BatchName<'_>)> = None;
        let mut record = 0;
        let mut missing = 0;
        let mut missing_ids = 0;
        let (action, id_key, routing_key) = (self.action, &self.id_key, &self.routing_key);
        let (added, rfc3339, generate_id) = (&self.added, &mut self.rfc3339, self.generate_id);
        let keyed = self.keyed;
        batch.for_each_record(|time, rec| {
            let start = out.len();
            out.extend_from_slice(b"{\"");
            out.extend_from_slice(action.name().as_bytes());
            out.extend_from_slice(b"\":{\"_index\":");
            match fixed {
                Some(name) => json::write_str(out, name.as_bytes()),
                None => {
                    if named.as_ref().is_none_or(|(secs, _)| *secs != time.secs) {
                        let at = Utc
                            .timestamp_opt(i64::from(time.secs), 0)
                            .single()
                            .unwrap_or_default();
                        named = Some((time.secs, index.for_batch(tag, &at)));
                    }
                    let (name, lacks) = named
                        .as_ref()
                        .map(|(_, b)| b.render(rec))
                        .unwrap_or_default();
                    missing += u64::from(lacks);
                    json::write_str(out, name.as_bytes());
                }
            }
            if let Some(k) = id_key {
                // Without the field the node picks an id: one shared
                // stand-in id would make every such record overwrite (or,
                // with `create`, conflict with) the first, and be lost.
                match rec.field(k).and_then(scalar_text) {
                    Some(id) => {
                        out.extend_from_slice(b",\"_id\":");
                        json::write_str(out, &id);
                    }
                    None => missing_ids += 1,
                }
            } else if generate_id {
                out.extend_from_slice(b",\"_id\":\"");
                let _ = write!(out, "{:032x}", document_id(tag, time, rec));
                out.push(b'"');
            }
            if let Some(k) = routing_key {
                if let Some(r) = rec.field(k).and_then(scalar_text) {
                    out.extend_from_slice(b",\"routing\":");
                    json::write_str(out, &r);
                }
            }
            out.extend_from_slice(b"}}\n");
            added.write_json(rfc3339, tag, time, rec, out);
            out.push(b'\n');
            docs.push(Doc {
                batch: n,
                record,
                time,
                lines: start..out.len(),
                key: if keyed { record_key(tag, rec) } else { 0 },
            });
            record += 1;
        })?;
        self.missing_fields += missing;
        self.missing_ids += missing_ids;
        Ok(())
    }
}

/// A document id from a record's tag, time and content: the same record
/// sent twice gets the same id.
fn document_id(tag: &str, time: EventTime, rec: RecordRef<'_>) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(tag.as_bytes());
    h.update(&[0]);
    h.update(&time.secs.to_be_bytes());
    h.update(&time.nanos.to_be_bytes());
    match rec {
        RecordRef::Map(m) => h.update(m),
        RecordRef::Line(l) => {
            h.update(b"line");
            h.update(l);
        }
    }
    h.digest128()
}

/// A record by its tag and content, not its time (a batch sent again by
/// an HTTP client or read again from a file has a new one).
pub fn record_key(tag: &str, rec: RecordRef<'_>) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(tag.as_bytes());
    h.update(&[0]);
    match rec {
        RecordRef::Map(m) => h.update(m),
        RecordRef::Line(l) => {
            h.update(b"line");
            h.update(l);
        }
    }
    h.digest128()
}

/// What became of one document of a bulk request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemResult {
    Stored,
    /// Try it again (429, 5xx, a full queue on the node).
    Retry,
    /// Never: the node's error type and reason.
    Refused {
        kind: String,
        reason: String,
    },
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    errors: bool,
    #[serde(default)]
    items: Vec<Slot>,
}

/// One item of an answer: `{"index": {…}}` or `{"create": {…}}` (the
/// actions the sink sends), read without a map per item.
#[derive(Deserialize)]
struct Slot {
    index: Option<Item>,
    create: Option<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    status: u16,
    error: Option<ItemError>,
}

#[derive(Deserialize)]
struct ItemError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    reason: Option<String>,
    caused_by: Option<Box<ItemError>>,
}

/// Reads a bulk answer of `docs` documents: one result per document, in
/// order; an error when the answer is not a bulk answer for them.
pub fn read_answer(body: &[u8], docs: usize, action: Action) -> Result<Vec<ItemResult>, String> {
    let answer: Answer =
        serde_json::from_slice(body).map_err(|e| format!("not a bulk answer: {e}"))?;
    if answer.items.len() != docs {
        return Err(format!(
            "the bulk answer has {} items for {docs} documents",
            answer.items.len()
        ));
    }
    Ok(answer
        .items
        .into_iter()
        .map(|i| {
            let Some(item) = i.index.or(i.create) else {
                return ItemResult::Retry;
            };
            judge(item, action, answer.errors)
        })
        .collect())
}

fn judge(item: Item, action: Action, errors: bool) -> ItemResult {
    let error_kind = item.error.as_ref().map(|e| e.kind.as_str()).unwrap_or("");
    match item.status {
        200..=299 if item.error.is_none() || !errors => ItemResult::Stored,
        // `create` of an id that is there: a record sent again
        409 if action == Action::Create && error_kind == "version_conflict_engine_exception" => {
            ItemResult::Stored
        }
        429 | 500..=599 => ItemResult::Retry,
        _ if error_kind == "es_rejected_execution_exception"
            || error_kind == "rejected_execution_exception" =>
        {
            ItemResult::Retry
        }
        status => {
            let (kind, reason) = match item.error {
                Some(e) => {
                    let mut reason = e.reason.clone().unwrap_or_default();
                    if let Some(c) = &e.caused_by {
                        reason.push_str(&format!(
                            " (caused by {}: {})",
                            c.kind,
                            c.reason.as_deref().unwrap_or("")
                        ));
                    }
                    (e.kind, reason)
                }
                None => (format!("status_{status}"), String::new()),
            };
            ItemResult::Refused { kind, reason }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Records;
    use crate::protocol::msgpack::write;
    use bytes::Bytes;

    fn batch(records: &[&str], secs: u32) -> Batch {
        let mut e = Vec::new();
        for r in records {
            write::array_len(&mut e, 2);
            write::event_time(&mut e, secs, 0);
            crate::protocol::json::object_to_msgpack(&mut e, r.as_bytes()).unwrap();
        }
        Batch::new(
            "app.web".into(),
            Records::Entries(Bytes::from(e)),
            records.len(),
        )
    }

    fn config(extra: &str) -> OpenSearchSettings {
        toml::from_str::<super::super::OpenSearchSinkConfig>(&format!(
            "endpoints = [\"http://h:9200\"]\n{extra}"
        ))
        .unwrap()
        .sink
    }

    fn lines(c: &OpenSearchSettings, b: &Batch) -> (Vec<serde_json::Value>, Vec<Doc>) {
        let mut enc = BulkEncoder::new(c).unwrap();
        let (mut out, mut docs) = (Vec::new(), Vec::new());
        enc.batch(0, b, &mut out, &mut docs).unwrap();
        let v = out
            .split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        (v, docs)
    }

    #[test]
    fn actions_name_the_index_of_each_record_by_tag_field_and_utc_date() {
        let b = batch(&[r#"{"svc":"a","n":1}"#, r#"{"n":2}"#], 1_700_000_000);
        let c = config("index = \"logs-${tag}-${record.svc}-%Y.%m.%d\"\ntag_key = \"tag\"");
        let (v, docs) = lines(&c, &b);
        assert_eq!(v.len(), 4);
        assert_eq!(
            v[0],
            serde_json::json!({"index": {"_index": "logs-app.web-a-2023.11.14"}})
        );
        assert_eq!(
            v[1],
            serde_json::json!({"svc": "a", "n": 1, "@timestamp": "2023-11-14T22:13:20.000000000Z", "tag": "app.web"})
        );
        assert_eq!(v[2]["index"]["_index"], "logs-app.web-_-2023.11.14");
        assert_eq!((docs[1].batch, docs[1].record), (0, 1));
    }

    #[test]
    fn ids_come_from_a_field_or_the_record_itself() {
        let b = batch(
            &[
                r#"{"id":"x1","n":1}"#,
                r#"{"id":7,"n":2}"#,
                r#"{"id":"x1","n":1}"#,
            ],
            5,
        );
        let (v, _) = lines(
            &config("id_key = \"id\"\naction = \"create\"\nrouting_key = \"n\""),
            &b,
        );
        assert_eq!(
            v[0],
            serde_json::json!({"create": {"_index": "logferry-1970.01.01", "_id": "x1", "routing": "1"}})
        );
        assert_eq!(v[2]["create"]["_id"], "7");
        // a record without the field: no `_id` (not a shared stand-in)
        let lacking = batch(&[r#"{"n":1}"#, r#"{"n":2}"#], 5);
        let c = config("id_key = \"id\"");
        let mut enc = BulkEncoder::new(&c).unwrap();
        let (mut out, mut docs) = (Vec::new(), Vec::new());
        enc.batch(0, &lacking, &mut out, &mut docs).unwrap();
        assert_eq!(enc.missing_ids, 2);
        let first: serde_json::Value =
            serde_json::from_slice(out.split(|c| *c == b'\n').next().unwrap()).unwrap();
        assert_eq!(
            first,
            serde_json::json!({"index": {"_index": "logferry-1970.01.01"}})
        );
        let (v, _) = lines(&config("generate_id = true"), &b);
        let id = |i: usize| v[i]["index"]["_id"].as_str().unwrap().to_string();
        // the same tag, time and record: the same id; another record: another
        assert_eq!(id(0), id(4));
        assert_ne!(id(0), id(2));
        assert_eq!(id(0).len(), 32);
    }

    #[test]
    fn bulk_answers_say_what_became_of_each_document() {
        // an answer OpenSearch 2.19 gave, items cut to status and error
        let body = br#"{"took":3,"errors":true,"items":[
            {"index":{"_index":"i","status":201}},
            {"index":{"_index":"i","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [n] of type [long]","caused_by":{"type":"illegal_argument_exception","reason":"For input string: \"x\""}}}},
            {"index":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}},
            {"create":{"status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}},
            {"index":{"status":503,"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"}}}
        ]}"#;
        let r = read_answer(body, 5, Action::Create).unwrap();
        assert_eq!(r[0], ItemResult::Stored);
        match &r[1] {
            ItemResult::Refused { kind, reason } => {
                assert_eq!(kind, "mapper_parsing_exception");
                assert!(
                    reason.contains("[n]") && reason.contains("illegal_argument_exception"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r[2], ItemResult::Retry);
        assert_eq!(r[3], ItemResult::Stored);
        assert_eq!(r[4], ItemResult::Retry);
        // with `index`, a conflict is a refusal
        let r = read_answer(body, 5, Action::Index).unwrap();
        assert!(
            matches!(&r[3], ItemResult::Refused { kind, .. } if kind == "version_conflict_engine_exception")
        );
        assert!(read_answer(body, 4, Action::Index)
            .unwrap_err()
            .contains("5 items for 4"));
        assert!(read_answer(b"<html>", 1, Action::Index).is_err());
    }
}
