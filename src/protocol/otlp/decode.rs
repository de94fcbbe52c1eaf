//! An OTLP `ExportLogsServiceRequest` (protobuf or JSON) to records: the
//! inverse of the `otlp` sink's mapping (`sinks::otlp::encode`), so a
//! record the sink exports comes back the same.
//!
//! Each `LogRecord` becomes one forward entry `[time, map]`:
//! - the body is `message` (a string stays a string, other values keep
//!   their types); a key/value-list body of a record without attributes is
//!   the record itself: its entries are the fields (the sink sends a
//!   record with none of its `body_keys` that way);
//! - each attribute is a field;
//! - `severity` is `severity_text`; `severity_number` is written too when
//!   it is not the number the text names (`severity_number("WARN")` is
//!   13); without a text, `severity` is the number;
//! - `trace_id` and `span_id` as lowercase hex, when set;
//! - `event_name`, when set;
//! - `resource`: the resource's attributes as a map (the sink's default
//!   `resource_key`), `scope`: the scope's `name`, `version` and
//!   `attributes`, when there are any;
//! - the time is `time_unix_nano`, else `observed_time_unix_nano`, else
//!   now.
//!
//! A key already written is not written again (the first wins): a map
//! has each key once. Records go in one batch per tag; the tag is rendered
//! from each `ResourceLogs`' resource.
//!
//! The protobuf is read here field by field (src/protocol/protobuf.rs),
//! each log record written as msgpack straight from the request's bytes;
//! only a `Resource`, once per `ResourceLogs`, is read with `prost` (for
//! the tag). A profile of OTLP/HTTP → file had prost's structs (a `String`
//! or `Vec` per value, all freed again) cost about a fifth of the CPU.
//! The reading is prost's: unknown fields skipped, a wrong wire type, a
//! string that is not UTF-8 or a message nested over 100 deep refused, a
//! resource or scope sent in two pieces merged. One difference, which no
//! OTLP client produces: an `AnyValue` sent in pieces (a body twice, two
//! members of its `oneof`, one list twice) keeps its last piece, where
//! prost would merge two lists. OTLP/JSON is read by serde into prost's
//! types and encoded to protobuf first.

use std::collections::{HashMap, HashSet};

use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;

use super::tag::TagTemplate;
use super::DecodeError;
use crate::event::{EventTime, Records, Tag};
use crate::protocol::msgpack::write;
use crate::protocol::protobuf::{Fields as Wire, Wire as WireValue, WireError};

/// Deepest message nesting read, counted from the request (prost's
/// default limit).
const MAX_DEPTH: usize = 100;

/// Most tags the resources of one request may render. Each tag is a
/// batch routed on its own, which costs far more than a record; no
/// exporter sends this many resources at once (the Collector's batches
/// are 8,192 records by default), and past it a request refused with a
/// reason is worth more than one that holds up its connection for
/// seconds.
pub const MAX_TAGS: usize = 10_000;

/// The records of one tag.
#[derive(Debug)]
pub struct Tagged {
    pub tag: Tag,
    pub records: Records,
    pub count: usize,
}

/// Every record of the `ExportLogsServiceRequest` in `body` (protobuf), by
/// tag, in the order their tags first came; refused when the records take
/// more than `limit` bytes (a resource's attributes are repeated in each
/// of its records, so a small body can name far more).
pub fn records(
    body: &[u8],
    tag: &TagTemplate,
    now: EventTime,
    limit: usize,
) -> Result<Vec<Tagged>, DecodeError> {
    let mut out = Batches {
        list: Vec::new(),
        index: HashMap::new(),
        bytes: 0,
        limit,
    };
    // one record's fields at a time, the allocations kept from one to the next
    let mut fields = Fields::default();
    for f in Wire::new(body) {
        let (n, v) = f?;
        if n == 1 {
            resource_logs(v.bytes(n)?, tag, now, &mut fields, &mut out)?;
        }
    }
    Ok(out
        .list
        .into_iter()
        .filter(|(_, _, count)| *count > 0)
        .map(|(tag, buf, count)| Tagged {
            tag,
            records: Records::Entries(buf.into()),
            count,
        })
        .collect())
}

/// The records written so far: one buffer per tag.
struct Batches {
    /// Each tag's records and their count, in the order tags first came.
    list: Vec<(Tag, Vec<u8>, usize)>,
    /// Where each tag is in `list`: a request may hold a resource per
    /// record, each its own tag.
    index: HashMap<Tag, usize>,
    /// The bytes of every record written.
    bytes: usize,
    /// The most `bytes` may be.
    limit: usize,
}

impl Batches {
    /// The position of `tag`'s buffer, made if it is new; the first made
    /// with room for `room` bytes.
    fn of(&mut self, tag: Tag, room: usize) -> Result<usize, DecodeError> {
        if let Some(&i) = self.index.get(&tag) {
            return Ok(i);
        }
        if self.list.len() == MAX_TAGS {
            return Err(DecodeError::TooManyTags(MAX_TAGS));
        }
        let room = if self.list.is_empty() { room } else { 0 };
        self.list.push((tag.clone(), Vec::with_capacity(room), 0));
        self.index.insert(tag, self.list.len() - 1);
        Ok(self.list.len() - 1)
    }
}

/// The bytes of a message field sent once, or of all its pieces (what
/// protobuf's merging of them reads as).
#[derive(Default)]
struct Pieces<'a> {
    first: Option<&'a [u8]>,
    joined: Vec<u8>,
}

impl<'a> Pieces<'a> {
    fn add(&mut self, b: &'a [u8]) {
        match self.first {
            None => self.first = Some(b),
            Some(first) => {
                if self.joined.is_empty() {
                    self.joined.extend_from_slice(first);
                }
                self.joined.extend_from_slice(b);
            }
        }
    }

    fn get(&self) -> Option<&[u8]> {
        if self.joined.is_empty() {
            self.first
        } else {
            Some(&self.joined)
        }
    }
}

/// The head of a `ResourceLogs` or a `ScopeLogs`, which share their
/// shape: field 1 (its `Resource` or `InstrumentationScope`, in pieces),
/// with field 2 (the list below) checked to be bytes and field 3
/// (`schema_url`) text.
fn head(m: &[u8]) -> Result<Pieces<'_>, WireError> {
    let mut first = Pieces::default();
    for f in Wire::new(m) {
        let (n, v) = f?;
        match n {
            1 => first.add(v.bytes(n)?),
            2 => {
                v.bytes(n)?;
            }
            3 => {
                v.str(n)?;
            }
            _ => {}
        }
    }
    Ok(first)
}

/// One `ResourceLogs`: its records added to its tag's batch in `out`.
fn resource_logs<'a>(
    rl: &'a [u8],
    tag: &TagTemplate,
    now: EventTime,
    fields: &mut Fields<'a>,
    out: &mut Batches,
) -> Result<(), DecodeError> {
    let resource = head(rl)?;
    let resource = resource.get().unwrap_or_default();
    let attributes = Resource::decode(resource)
        .map_err(|e| DecodeError::Protobuf(e.to_string()))?
        .attributes;
    let tag = tag.render(&attributes);
    // the first tag's records, usually all of them, take about half as
    // much again as their protobuf: room made once, not by doubling (each
    // a copy) as they are written
    let i = out.of(tag, rl.len() + rl.len() / 2)?;
    let (_, buf, count) = &mut out.list[i];
    // what every record of the resource (and of a scope) repeats is
    // encoded once
    let resource = if attributes.is_empty() {
        None
    } else {
        let mut m = Vec::new();
        kv_map(Wire::new(resource), 1, 3, &mut m)?;
        Some(m)
    };
    for f in Wire::new(rl) {
        let (n, v) = f?;
        if n != 2 {
            continue;
        }
        let scope = head(v.bytes(n)?)?;
        let scope = match scope.get() {
            Some(s) => scope_map(s)?,
            None => None,
        };
        let shared = Shared {
            resource: resource.as_deref(),
            scope: scope.as_deref(),
        };
        for f in Wire::new(v.bytes(n)?) {
            let (n, v) = f?;
            if n == 2 {
                let before = buf.len();
                entry(v.bytes(n)?, &shared, now, fields, buf)?;
                *count += 1;
                out.bytes += buf.len() - before;
                if out.bytes > out.limit {
                    return Err(DecodeError::TooLarge(out.limit));
                }
            }
        }
    }
    Ok(())
}

/// Keys of a map up to which a scan finds a repeated one (cheaper than
/// hashing for the few attributes records usually have); past it, a hash
/// set does, so a record of many keys costs what its bytes do.
const SCANNED_KEYS: usize = 16;

/// The keys of the map being written, to write each once.
#[derive(Default)]
struct Fields<'a> {
    keys: Vec<&'a str>,
    /// `keys` once there are more than [`SCANNED_KEYS`] (empty before);
    /// std's hasher, seeded per process: the keys are the client's.
    hashed: HashSet<&'a str>,
    /// The map's entries, written after its length is known.
    body: Vec<u8>,
}

impl<'a> Fields<'a> {
    /// Starts an entry for `key`: false (write nothing) if it is there.
    fn key(&mut self, key: &'a str) -> bool {
        if self.keys.len() < SCANNED_KEYS {
            if self.keys.contains(&key) {
                return false;
            }
        } else {
            if self.hashed.is_empty() {
                self.hashed.extend(self.keys.iter().copied());
            }
            if !self.hashed.insert(key) {
                return false;
            }
        }
        self.keys.push(key);
        write::str(&mut self.body, key.as_bytes());
        true
    }

    /// Makes room for `more` keys at once, rather than by doubling (each
    /// time hashing every key again).
    fn expect(&mut self, more: usize) {
        if self.keys.len() + more > SCANNED_KEYS {
            self.keys.reserve(more);
            self.hashed.reserve(self.keys.len() + more);
        }
    }

    /// Empties it for the next map, keeping its allocations; the hash
    /// set only when this map filled it (clearing a set costs its
    /// capacity, which a large map before must not make every later one
    /// pay).
    fn clear(&mut self) {
        self.keys.clear();
        if self.hashed.capacity() > 2 * self.hashed.len() + 2 * SCANNED_KEYS {
            self.hashed = HashSet::new();
        } else {
            self.hashed.clear();
        }
        self.body.clear();
    }

    fn str(&mut self, key: &'a str, s: &str) {
        if self.key(key) {
            write::str(&mut self.body, s.as_bytes());
        }
    }

    fn int(&mut self, key: &'a str, i: i64) {
        if self.key(key) {
            write::int(&mut self.body, i);
        }
    }

    /// `value`, already encoded.
    fn encoded(&mut self, key: &'a str, value: &[u8]) {
        if self.key(key) {
            self.body.extend_from_slice(value);
        }
    }

    /// A `KeyValue`'s entry (a key there already: its value is still read,
    /// to refuse what is not valid).
    fn key_value(&mut self, kv: &'a [u8], depth: usize) -> Result<(), WireError> {
        let (key, value) = read_key_value(kv, depth)?;
        if self.key(key) {
            any(value, &mut self.body, depth + 1)
        } else {
            any(value, &mut Vec::new(), depth + 1)
        }
    }
}

/// A `KeyValue`'s key and its value's bytes (`None`: no value).
fn read_key_value(kv: &[u8], depth: usize) -> Result<(&str, Option<&[u8]>), WireError> {
    if depth > MAX_DEPTH {
        return Err(WireError::TooDeep(MAX_DEPTH));
    }
    let (mut key, mut value) = ("", None);
    for f in Wire::new(kv) {
        let (n, v) = f?;
        match n {
            1 => key = v.str(n)?,
            2 => value = Some(v.bytes(n)?),
            _ => {}
        }
    }
    Ok((key, value))
}

/// The encoded maps every record of a scope repeats.
struct Shared<'s> {
    /// The resource's attributes.
    resource: Option<&'s [u8]>,
    /// The scope's name, version and attributes.
    scope: Option<&'s [u8]>,
}

/// The `scope` map of an `InstrumentationScope`, if it has a name or
/// attributes.
fn scope_map(s: &[u8]) -> Result<Option<Vec<u8>>, WireError> {
    let (mut name, mut version, mut attributes) = ("", "", false);
    for f in Wire::new(s) {
        let (n, v) = f?;
        match n {
            1 => name = v.str(n)?,
            2 => version = v.str(n)?,
            3 => attributes = true,
            4 => {
                v.varint(n)?;
            }
            _ => {}
        }
    }
    let mut attrs = Vec::new();
    if attributes {
        kv_map(Wire::new(s), 3, 4, &mut attrs)?;
    }
    if name.is_empty() && !attributes {
        return Ok(None);
    }
    let mut m = Vec::new();
    let n = 1 + usize::from(!version.is_empty()) + usize::from(attributes);
    write::map_len(&mut m, n);
    write::str(&mut m, b"name");
    write::str(&mut m, name.as_bytes());
    if !version.is_empty() {
        write::str(&mut m, b"version");
        write::str(&mut m, version.as_bytes());
    }
    if attributes {
        write::str(&mut m, b"attributes");
        m.extend_from_slice(&attrs);
    }
    Ok(Some(m))
}

/// A `LogRecord`'s fields that are not lists, read in a first pass.
#[derive(Default)]
struct Record<'a> {
    time: u64,
    observed: u64,
    severity_number: i32,
    severity_text: &'a str,
    body: Option<&'a [u8]>,
    /// How many attributes it has.
    attributes: usize,
    trace_id: &'a [u8],
    span_id: &'a [u8],
    event_name: &'a str,
}

fn read_record(r: &[u8]) -> Result<Record<'_>, WireError> {
    let mut out = Record::default();
    for f in Wire::new(r) {
        let (n, v) = f?;
        match n {
            1 => out.time = v.fixed64(n)?,
            11 => out.observed = v.fixed64(n)?,
            2 => out.severity_number = v.varint(n)? as i32,
            3 => out.severity_text = v.str(n)?,
            5 => out.body = Some(v.bytes(n)?),
            6 => {
                v.bytes(n)?;
                out.attributes += 1;
            }
            7 => {
                v.varint(n)?;
            }
            8 => {
                v.fixed32(n)?;
            }
            9 => out.trace_id = v.bytes(n)?,
            10 => out.span_id = v.bytes(n)?,
            12 => out.event_name = v.str(n)?,
            _ => {}
        }
    }
    Ok(out)
}

/// One log record as a forward entry.
fn entry<'a>(
    bytes: &'a [u8],
    shared: &Shared<'_>,
    now: EventTime,
    f: &mut Fields<'a>,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    // request, ResourceLogs, ScopeLogs, LogRecord
    const DEPTH: usize = 3;
    let r = read_record(bytes)?;
    f.clear();
    let body = r.body;
    match body.map(|b| member(b, DEPTH + 1)).transpose()?.flatten() {
        Some((6, WireValue::Len(list))) if r.attributes == 0 => {
            for f_ in Wire::new(list) {
                let (n, v) = f_?;
                if n == 1 {
                    f.key_value(v.bytes(n)?, DEPTH + 3)?;
                }
            }
        }
        Some(set) => {
            // the first key: never there already
            f.key("message");
            write_member(set, &mut f.body, DEPTH + 1)?;
        }
        None => {}
    }
    if r.attributes > 0 {
        f.expect(r.attributes);
        for f_ in Wire::new(bytes) {
            let (n, v) = f_?;
            if n == 6 {
                f.key_value(v.bytes(n)?, DEPTH + 1)?;
            }
        }
    }
    let text = r.severity_text;
    if !text.is_empty() {
        f.str("severity", text);
        if r.severity_number != crate::protocol::otlp::severity_number(text) {
            f.int("severity_number", i64::from(r.severity_number));
        }
    } else if r.severity_number != 0 {
        f.int("severity", i64::from(r.severity_number));
    }
    if !r.trace_id.is_empty() {
        f.str("trace_id", &crate::protocol::hex(r.trace_id));
    }
    if !r.span_id.is_empty() {
        f.str("span_id", &crate::protocol::hex(r.span_id));
    }
    if !r.event_name.is_empty() {
        f.str("event_name", r.event_name);
    }
    if let Some(resource) = shared.resource {
        f.encoded("resource", resource);
    }
    if let Some(scope) = shared.scope {
        f.encoded("scope", scope);
    }
    let time = time_of(r.time)
        .or_else(|| time_of(r.observed))
        .unwrap_or(now);
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, f.keys.len());
    out.extend_from_slice(&f.body);
    Ok(())
}

/// Nanoseconds since the epoch as an event time; `None` for 0 (unset) and
/// for times past what an event time holds (2106).
fn time_of(nanos: u64) -> Option<EventTime> {
    if nanos == 0 {
        return None;
    }
    let secs = u32::try_from(nanos / 1_000_000_000).ok()?;
    Some(EventTime::new(secs, (nanos % 1_000_000_000) as u32))
}

/// The `KeyValue`s that are field `field` of the message `fields` reads
/// as a msgpack map (a repeated key: the first wins); `depth`: the
/// `KeyValue`s' own.
fn kv_map(fields: Wire<'_>, field: u32, depth: usize, out: &mut Vec<u8>) -> Result<(), WireError> {
    let mut f = Fields::default();
    for f_ in fields {
        let (n, v) = f_?;
        if n == field {
            f.key_value(v.bytes(n)?, depth)?;
        }
    }
    write::map_len(out, f.keys.len());
    out.extend_from_slice(&f.body);
    Ok(())
}

/// The member of an `AnyValue`'s `oneof` that is set (the last one sent):
/// its field number and value, checked.
fn member(v: &[u8], depth: usize) -> Result<Option<(u32, WireValue<'_>)>, WireError> {
    if depth > MAX_DEPTH {
        return Err(WireError::TooDeep(MAX_DEPTH));
    }
    let mut set = None;
    for f in Wire::new(v) {
        let (n, w) = f?;
        match n {
            1 => {
                w.str(n)?;
            }
            2 | 3 => {
                w.varint(n)?;
            }
            4 => {
                w.fixed64(n)?;
            }
            5..=7 => {
                w.bytes(n)?;
            }
            _ => continue,
        }
        set = Some((n, w));
    }
    Ok(set)
}

/// An `AnyValue` (its bytes; `None`: absent) as msgpack. `depth`: its own,
/// counted from the request.
fn any(v: Option<&[u8]>, out: &mut Vec<u8>, depth: usize) -> Result<(), WireError> {
    let set = match v {
        Some(v) => member(v, depth)?,
        None => None,
    };
    match set {
        Some(set) => write_member(set, out, depth),
        None => {
            out.push(0xc0);
            Ok(())
        }
    }
}

/// The member [`member`] found of an `AnyValue` `depth` deep, as msgpack.
fn write_member(
    set: (u32, WireValue<'_>),
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), WireError> {
    // checked by `member`
    match set {
        (1, WireValue::Len(b)) => write::str(out, b),
        (2, WireValue::Varint(b)) => out.push(if b != 0 { 0xc3 } else { 0xc2 }),
        (3, WireValue::Varint(i)) => write::int(out, i as i64),
        (4, WireValue::Fixed64(d)) => {
            out.push(0xcb);
            out.extend_from_slice(&f64::from_bits(d).to_be_bytes());
        }
        (5, WireValue::Len(list)) => {
            let mut len = 0;
            for f in Wire::new(list) {
                let (n, w) = f?;
                if n == 1 {
                    w.bytes(n)?;
                    len += 1;
                }
            }
            write::array_len(out, len);
            for f in Wire::new(list) {
                let (n, w) = f?;
                if n == 1 {
                    any(Some(w.bytes(n)?), out, depth + 2)?;
                }
            }
        }
        (6, WireValue::Len(list)) => kv_map(Wire::new(list), 1, depth + 2, out)?,
        (_, WireValue::Len(b)) => {
            write::bin_header(out, b.len());
            out.extend_from_slice(b);
        }
        _ => unreachable!("member checks each member's wire type"),
    }
    Ok(())
}

impl From<WireError> for DecodeError {
    fn from(e: WireError) -> DecodeError {
        DecodeError::Protobuf(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::{to_json, Reader, Value};
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
    };
    use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    use serde_json::{json, Value as Json};

    const NOW: EventTime = EventTime { secs: 7, nanos: 0 };

    fn v(a: Any) -> Option<AnyValue> {
        Some(AnyValue { value: Some(a) })
    }

    fn kv(key: &str, a: Any) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: v(a),
        }
    }

    fn s(text: &str) -> Any {
        Any::StringValue(text.into())
    }

    /// (tag, [(seconds, record)]) per batch.
    fn decoded(req: &ExportLogsServiceRequest, tag: &str) -> Vec<(String, Vec<(u32, Json)>)> {
        let tag = TagTemplate::parse(tag).unwrap();
        records(&req.encode_to_vec(), &tag, NOW, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|t| {
                let Records::Entries(e) = &t.records else {
                    panic!("entries")
                };
                let mut r = Reader::new(e);
                let mut out = Vec::new();
                for _ in 0..t.count {
                    assert_eq!(r.read_array_len().unwrap(), 2);
                    let secs = match r.read().unwrap() {
                        Value::Ext(0, b) => u32::from_be_bytes(b[..4].try_into().unwrap()),
                        other => panic!("{other:?}"),
                    };
                    out.push((secs, to_json(&mut r)));
                }
                assert!(r.is_empty());
                (t.tag.to_string(), out)
            })
            .collect()
    }

    fn resource_logs(
        service: &str,
        scope: Option<InstrumentationScope>,
        records: Vec<LogRecord>,
    ) -> ResourceLogs {
        ResourceLogs {
            resource: Some(opentelemetry_proto::tonic::resource::v1::Resource {
                attributes: vec![kv("service.name", s(service)), kv("host", Any::IntValue(3))],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                scope,
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn every_kind_of_value_and_field_maps_as_documented() {
        let nested = Any::KvlistValue(KeyValueList {
            values: vec![
                kv(
                    "list",
                    Any::ArrayValue(ArrayValue {
                        values: vec![
                            AnyValue {
                                value: Some(Any::IntValue(-40)),
                            },
                            AnyValue { value: None },
                        ],
                    }),
                ),
                kv("f", Any::DoubleValue(1.5)),
                kv("f", s("a repeated key: the first wins")),
            ],
        });
        let rich = LogRecord {
            time_unix_nano: 1_700_000_000_000_000_123,
            severity_number: 13,
            severity_text: "WARN".into(),
            body: v(s("hello \"world\"")),
            attributes: vec![
                kv("b", Any::BoolValue(true)),
                kv("i", Any::IntValue(i64::MIN)),
                kv("bytes", Any::BytesValue(vec![0, 255])),
                kv("nested", nested),
                KeyValue {
                    key: "none".into(),
                    value: None,
                },
                kv(
                    "message",
                    s("an attribute named as the body: the body wins"),
                ),
            ],
            trace_id: vec![0xab; 16],
            span_id: vec![0x01; 8],
            event_name: "login".into(),
            ..Default::default()
        };
        // a key/value body without attributes is the record; the severity
        // number not the text's is kept; no time: the observed time
        let own_body = LogRecord {
            observed_time_unix_nano: 1_600_000_000_000_000_000,
            severity_number: 9,
            severity_text: "warning".into(),
            body: v(Any::KvlistValue(KeyValueList {
                values: vec![kv("user", s("ann")), kv("n", Any::IntValue(5))],
            })),
            ..Default::default()
        };
        // a key/value body with attributes is `message`; a number alone
        // is the severity; no time at all: now
        let list_body = LogRecord {
            severity_number: 17,
            body: v(Any::KvlistValue(KeyValueList {
                values: vec![kv("k", s("v"))],
            })),
            attributes: vec![kv("a", s("x"))],
            ..Default::default()
        };
        let scope = InstrumentationScope {
            name: "lib".into(),
            version: "1.2".into(),
            attributes: vec![kv("sa", Any::BoolValue(false))],
            ..Default::default()
        };
        let req = ExportLogsServiceRequest {
            resource_logs: vec![
                resource_logs("api", Some(scope), vec![rich, own_body]),
                resource_logs("db", None, vec![list_body]),
                // the same tag as the first: the same batch
                resource_logs("api", None, vec![LogRecord::default()]),
            ],
        };
        let resource = |service: &str| json!({"service.name": service, "host": 3});
        let scope = json!({"name": "lib", "version": "1.2", "attributes": {"sa": false}});
        assert_eq!(
            decoded(&req, "otel.${resource.service.name}"),
            [
                (
                    "otel.api".to_string(),
                    vec![
                        (
                            1_700_000_000,
                            json!({
                                "message": "hello \"world\"",
                                "b": true,
                                "i": i64::MIN,
                                "bytes": {"bin": [0, 255]},
                                "nested": {"list": [-40, null], "f": 1.5},
                                "none": null,
                                "severity": "WARN",
                                "trace_id": "abababababababababababababababab",
                                "span_id": "0101010101010101",
                                "event_name": "login",
                                "resource": resource("api"),
                                "scope": scope,
                            })
                        ),
                        (
                            1_600_000_000,
                            json!({
                                "user": "ann",
                                "n": 5,
                                "severity": "warning",
                                "severity_number": 9,
                                "resource": resource("api"),
                                "scope": scope,
                            })
                        ),
                        (7, json!({"resource": resource("api")})),
                    ]
                ),
                (
                    "otel.db".to_string(),
                    vec![(
                        7,
                        json!({
                            "message": {"k": "v"},
                            "a": "x",
                            "severity": 17,
                            "resource": resource("db"),
                        })
                    )]
                ),
            ]
        );
    }

    #[test]
    fn a_record_of_more_than_fifteen_fields_and_the_next_read_back() {
        // 15 and 16 fields with the message: a one-byte map header, then
        // one widened to three bytes, and a record after each
        let record = |attributes: usize| LogRecord {
            time_unix_nano: 5_000_000_000,
            body: v(s("m")),
            attributes: (0..attributes)
                .map(|i| kv(&format!("a{i}"), Any::IntValue(i as i64)))
                .collect(),
            ..Default::default()
        };
        let req = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: vec![record(14), record(0), record(15), record(1)],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let expect = |attributes: usize| {
            let mut m = serde_json::Map::new();
            m.insert("message".into(), json!("m"));
            for i in 0..attributes {
                m.insert(format!("a{i}"), json!(i));
            }
            (5, Json::Object(m))
        };
        assert_eq!(
            decoded(&req, "t"),
            [(
                "t".to_string(),
                vec![expect(14), expect(0), expect(15), expect(1)]
            )]
        );
    }

    #[test]
    fn many_keys_keep_the_first_of_each_and_a_large_record_leaves_no_cost_behind() {
        // keys past the scanned few are found in a hash set: a repeat of a
        // key on either side of the switch is still dropped
        let record = |keys: usize| LogRecord {
            attributes: (0..keys)
                .flat_map(|i| {
                    [
                        kv(&format!("k{i}"), Any::IntValue(i as i64)),
                        kv(&format!("k{}", i / 2), s("a repeat")),
                    ]
                })
                .collect(),
            ..Default::default()
        };
        let req = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                scope_logs: vec![ScopeLogs {
                    log_records: vec![record(1_000), record(3), record(40)],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let expect = |keys: usize| {
            let m: serde_json::Map<String, Json> =
                (0..keys).map(|i| (format!("k{i}"), json!(i))).collect();
            (NOW.secs, Json::Object(m))
        };
        assert_eq!(
            decoded(&req, "t"),
            [("t".to_string(), vec![expect(1_000), expect(3), expect(40)])]
        );
    }

    #[test]
    fn too_many_tags_and_records_past_the_limit_are_refused() {
        let request = |services: usize| {
            ExportLogsServiceRequest {
                resource_logs: (0..services)
                    .map(|i| resource_logs(&i.to_string(), None, vec![LogRecord::default()]))
                    .collect(),
            }
            .encode_to_vec()
        };
        let tag = TagTemplate::parse("otel.${resource.service.name}").unwrap();
        let most = records(&request(MAX_TAGS), &tag, NOW, usize::MAX).unwrap();
        assert_eq!(most.len(), MAX_TAGS);
        assert_eq!(
            records(&request(MAX_TAGS + 1), &tag, NOW, usize::MAX).unwrap_err(),
            DecodeError::TooManyTags(MAX_TAGS)
        );
        // a fixed tag: any number of resources is one batch
        let fixed = TagTemplate::parse("otel").unwrap();
        let one = records(&request(MAX_TAGS + 1), &fixed, NOW, usize::MAX).unwrap();
        assert_eq!((one.len(), one[0].count), (1, MAX_TAGS + 1));
        // each record repeats its resource: bounded by the limit
        let bytes = one[0].records.bytes().len();
        assert!(records(&request(MAX_TAGS + 1), &fixed, NOW, bytes).is_ok());
        assert_eq!(
            records(&request(MAX_TAGS + 1), &fixed, NOW, bytes - 1).unwrap_err(),
            DecodeError::TooLarge(bytes - 1)
        );
    }

    #[test]
    fn bad_protobuf_is_refused_and_pieces_of_a_resource_merge() {
        let tag = TagTemplate::parse("otel.${resource.service.name}").unwrap();
        let mut req = ExportLogsServiceRequest {
            resource_logs: vec![resource_logs("api", None, vec![LogRecord::default()])],
        }
        .encode_to_vec();
        assert!(records(&req, &tag, NOW, usize::MAX).is_ok());
        // a string that is not UTF-8: "api" → "\xffpi"
        let at = req.windows(3).position(|w| w == b"api").unwrap();
        req[at] = 0xff;
        assert!(records(&req, &tag, NOW, usize::MAX).is_err());
        for bad in [
            &[0x0a, 0x05, 0x0a][..],
            &[0x0a, 0x02, 0x0d, 0x00],
            &[0x08, 0x01],
        ] {
            // truncated; a wire type 5 ResourceLogs field 1; request field 1 a varint
            assert!(records(bad, &tag, NOW, usize::MAX).is_err(), "{bad:?}");
        }
        // a resource in two pieces is one: its attributes from both
        let piece = |k: &str, val: &str| {
            opentelemetry_proto::tonic::resource::v1::Resource {
                attributes: vec![kv(k, s(val))],
                ..Default::default()
            }
            .encode_to_vec()
        };
        let mut rl = Vec::new();
        crate::protocol::protobuf::bytes_field(&mut rl, 1, &piece("service.name", "x"));
        crate::protocol::protobuf::bytes_field(&mut rl, 1, &piece("zone", "z"));
        let scope_logs = ScopeLogs {
            log_records: vec![LogRecord::default()],
            ..Default::default()
        };
        crate::protocol::protobuf::bytes_field(&mut rl, 2, &scope_logs.encode_to_vec());
        let mut req = Vec::new();
        crate::protocol::protobuf::bytes_field(&mut req, 1, &rl);
        let merged = ExportLogsServiceRequest::decode(&req[..]).unwrap();
        assert_eq!(
            merged.resource_logs[0]
                .resource
                .as_ref()
                .unwrap()
                .attributes
                .len(),
            2
        );
        let t = records(&req, &tag, NOW, usize::MAX).unwrap();
        assert_eq!(t[0].tag.to_string(), "otel.x");
    }

    #[test]
    fn nesting_is_read_to_prosts_limit_and_refused_past_it() {
        // a body of lists in lists: AnyValue at depth 4, then 2 levels a list
        let request = |lists: usize| {
            let mut value = AnyValue {
                value: Some(s("leaf")),
            };
            for _ in 0..lists {
                value = AnyValue {
                    value: Some(Any::ArrayValue(ArrayValue {
                        values: vec![value],
                    })),
                };
            }
            ExportLogsServiceRequest {
                resource_logs: vec![resource_logs(
                    "api",
                    None,
                    vec![LogRecord {
                        body: Some(value),
                        ..Default::default()
                    }],
                )],
            }
            .encode_to_vec()
        };
        let tag = TagTemplate::parse("otel").unwrap();
        for lists in [40, 47, 48, 60] {
            let bytes = request(lists);
            let prost = ExportLogsServiceRequest::decode(&bytes[..]).is_ok();
            assert_eq!(
                records(&bytes, &tag, NOW, usize::MAX).is_ok(),
                prost,
                "{lists} lists"
            );
        }
        assert!(records(&request(47), &tag, NOW, usize::MAX).is_ok());
        assert!(records(&request(60), &tag, NOW, usize::MAX).is_err());
    }
}
