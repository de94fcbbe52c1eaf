//! The `otlp` source's request decoding (`protocol::otlp::decode`):
//! protobuf and OTLP/JSON `ExportLogsServiceRequest`s → records by tag, on
//! arbitrary bytes; and OTLP/gRPC's framing (`protocol::otlp::grpc`).
//!
//! Byte 0 picks the format (bit 0: JSON), whether the tag has a resource
//! placeholder (bit 1) and whether the body is a gRPC request body (bit 2:
//! one framed message, read by `grpc::unframe`, then protobuf unless its
//! compressed flag is set: inflating is `http_encodings`' target); the
//! rest is the body.
//!
//! Checked:
//! * nothing panics, whatever the bytes, and stack use stays bounded (the
//!   checks run on the small stack of `common.rs`);
//! * a gRPC body is read as one message exactly when its length prefix
//!   names the rest of the body, and framing any bytes reads them back;
//! * each batch is well-formed `[time, map]` forward entries, exactly
//!   `count` of them, and no tag is empty or repeated;
//! * protobuf prost reads is read too, and its records are those of the
//!   reference below (prost's structs mapped field by field) for the
//!   request as prost encodes it again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::event::{EventTime, Records};
use logferry::protocol::forward::count_entries;
use logferry::protocol::otlp::{decode, grpc, Format, TagTemplate};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

const NOW: EventTime = EventTime { secs: 1_000, nanos: 0 };

fn check(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let format = if head & 1 == 0 { Format::Protobuf } else { Format::Json };
    let tag = if head & 2 == 0 { "otel" } else { "otel.${resource.service.name}" };
    let tag = TagTemplate::parse(tag).expect("a valid template");
    let message;
    let (format, body) = if head & 4 == 0 {
        (format, body)
    } else {
        let framed = grpc::frame(body);
        let back = grpc::unframe(&framed).expect("a framed message reads back");
        assert!(!back.compressed && back.bytes[..] == *body, "framing is not read back");
        let whole = bytes::Bytes::copy_from_slice(body);
        let Ok(m) = grpc::unframe(&whole) else {
            return;
        };
        assert_eq!(m.bytes.len() + 5, body.len(), "a message is the body less its prefix");
        if m.compressed {
            return;
        }
        message = m.bytes;
        (Format::Grpc, &message[..])
    };
    if format != Format::Json {
        if let Ok(req) = <ExportLogsServiceRequest as prost::Message>::decode(body) {
            let decoded = decode(format, body, &tag, NOW, usize::MAX);
            assert!(decoded.is_ok(), "prost reads it, decode does not");
            let canonical = prost::Message::encode_to_vec(&req);
            let got = decode(Format::Protobuf, &canonical, &tag, NOW, usize::MAX)
                .expect("prost's encoding");
            let want = reference(&req, &tag, NOW);
            assert_eq!(got.len(), want.len(), "batches");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((&g.tag, g.count), (&w.tag, w.count), "tag and count");
                match (&g.records, &w.records) {
                    (Records::Entries(g), Records::Entries(w)) => assert_eq!(g, w, "records"),
                    _ => panic!("entries"),
                }
            }
        }
    }
    let Ok(batches) = decode(format, body, &tag, NOW, usize::MAX) else {
        return;
    };
    let mut tags = Vec::new();
    for b in &batches {
        assert!(!b.tag.is_empty(), "an empty tag");
        assert!(!tags.contains(&b.tag), "tag {} twice", b.tag);
        tags.push(b.tag.clone());
        assert!(b.count > 0, "an empty batch");
        match &b.records {
            Records::Entries(e) => {
                assert_eq!(count_entries(e).ok(), Some(b.count), "count_entries disagrees")
            }
            Records::Lines { .. } => panic!("OTLP decodes to entries"),
        }
    }
}

// ---------------------------------------------------------------------
// The reference: a request read by prost into its structs, mapped as
// decode.rs documents (the mapping the `otlp` source had before it read
// protobuf by hand). Kept here as the oracle, not in the crate.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use logferry::event::Tag;
use logferry::protocol::msgpack::write;
use logferry::protocol::otlp::Tagged;

/// Every record of a request, by tag, in the order their tags first came.
fn reference(req: &ExportLogsServiceRequest, tag: &TagTemplate, now: EventTime) -> Vec<Tagged> {
    let mut out: Vec<(Tag, Vec<u8>, usize)> = Vec::new();
    // one record's fields at a time, the allocations kept from one to the next
    let mut fields = Fields {
        keys: Vec::new(),
        body: Vec::new(),
    };
    for rl in &req.resource_logs {
        let resource: &[KeyValue] = rl
            .resource
            .as_ref()
            .map_or(&[], |r| r.attributes.as_slice());
        let tag = tag.render(resource);
        let i = match out.iter().position(|(t, _, _)| *t == tag) {
            Some(i) => i,
            None => {
                out.push((tag, Vec::new(), 0));
                out.len() - 1
            }
        };
        let (_, buf, count) = &mut out[i];
        // what every record of the resource (and of a scope) repeats is
        // encoded once
        let resource = (!resource.is_empty()).then(|| {
            let mut m = Vec::new();
            kv_map(resource, &mut m);
            m
        });
        for sl in &rl.scope_logs {
            let scope = sl.scope.as_ref().and_then(scope_map);
            let shared = Shared {
                resource: resource.as_deref(),
                scope: scope.as_deref(),
            };
            for record in &sl.log_records {
                entry(record, &shared, now, &mut fields, buf);
                *count += 1;
            }
        }
    }
    out.into_iter()
        .filter(|(_, _, count)| *count > 0)
        .map(|(tag, buf, count)| Tagged {
            tag,
            records: Records::Entries(buf.into()),
            count,
        })
        .collect()
}

/// The keys of the map being written, to write each once.
struct Fields<'a> {
    keys: Vec<&'a str>,
    /// The map's entries, written after its length is known.
    body: Vec<u8>,
}

impl<'a> Fields<'a> {
    /// Starts an entry for `key`: false (write nothing) if it is there.
    fn key(&mut self, key: &'a str) -> bool {
        // attributes are few: a scan is cheaper than hashing
        if self.keys.contains(&key) {
            return false;
        }
        self.keys.push(key);
        write::str(&mut self.body, key.as_bytes());
        true
    }

    fn value(&mut self, key: &'a str, v: &AnyValue) {
        if self.key(key) {
            any(v.value.as_ref(), &mut self.body);
        }
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
}

/// The encoded maps every record of a scope repeats.
struct Shared<'s> {
    /// The resource's attributes.
    resource: Option<&'s [u8]>,
    /// The scope's name, version and attributes.
    scope: Option<&'s [u8]>,
}

/// The `scope` map, if the scope has a name or attributes.
fn scope_map(s: &InstrumentationScope) -> Option<Vec<u8>> {
    if s.name.is_empty() && s.attributes.is_empty() {
        return None;
    }
    let mut m = Vec::new();
    let n = 1 + usize::from(!s.version.is_empty()) + usize::from(!s.attributes.is_empty());
    write::map_len(&mut m, n);
    write::str(&mut m, b"name");
    write::str(&mut m, s.name.as_bytes());
    if !s.version.is_empty() {
        write::str(&mut m, b"version");
        write::str(&mut m, s.version.as_bytes());
    }
    if !s.attributes.is_empty() {
        write::str(&mut m, b"attributes");
        kv_map(&s.attributes, &mut m);
    }
    Some(m)
}

/// One log record as a forward entry.
fn entry<'a>(
    r: &'a LogRecord,
    shared: &Shared<'_>,
    now: EventTime,
    f: &mut Fields<'a>,
    out: &mut Vec<u8>,
) {
    f.keys.clear();
    f.body.clear();
    match r.body.as_ref().and_then(|b| b.value.as_ref()) {
        Some(Any::KvlistValue(list)) if r.attributes.is_empty() => {
            for kv in &list.values {
                field(f, kv);
            }
        }
        Some(_) => f.value("message", r.body.as_ref().expect("matched above")),
        None => {}
    }
    for kv in &r.attributes {
        field(f, kv);
    }
    let text = r.severity_text.as_str();
    if !text.is_empty() {
        f.str("severity", text);
        if r.severity_number != logferry::protocol::otlp::severity_number(text) {
            f.int("severity_number", i64::from(r.severity_number));
        }
    } else if r.severity_number != 0 {
        f.int("severity", i64::from(r.severity_number));
    }
    if !r.trace_id.is_empty() {
        f.str("trace_id", &logferry::protocol::hex(&r.trace_id));
    }
    if !r.span_id.is_empty() {
        f.str("span_id", &logferry::protocol::hex(&r.span_id));
    }
    if !r.event_name.is_empty() {
        f.str("event_name", &r.event_name);
    }
    if let Some(resource) = shared.resource {
        f.encoded("resource", resource);
    }
    if let Some(scope) = shared.scope {
        f.encoded("scope", scope);
    }
    let time = time_of(r.time_unix_nano)
        .or_else(|| time_of(r.observed_time_unix_nano))
        .unwrap_or(now);
    write::array_len(out, 2);
    write::event_time(out, time.secs, time.nanos);
    write::map_len(out, f.keys.len());
    out.extend_from_slice(&f.body);
}

fn field<'a>(f: &mut Fields<'a>, kv: &'a KeyValue) {
    match &kv.value {
        Some(v) => f.value(&kv.key, v),
        None => {
            if f.key(&kv.key) {
                f.body.push(0xc0);
            }
        }
    }
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

/// A key/value list as a msgpack map (a repeated key: the first wins).
fn kv_map(kvs: &[KeyValue], out: &mut Vec<u8>) {
    let mut f = Fields {
        keys: Vec::with_capacity(kvs.len()),
        body: Vec::new(),
    };
    for kv in kvs {
        field(&mut f, kv);
    }
    write::map_len(out, f.keys.len());
    out.extend_from_slice(&f.body);
}

/// An OTLP value as msgpack. Nesting is bounded by the decoders (prost's
/// recursion limit, the JSON depth check), so the recursion is too.
fn any(v: Option<&Any>, out: &mut Vec<u8>) {
    match v {
        None => out.push(0xc0),
        Some(Any::StringValue(s)) => write::str(out, s.as_bytes()),
        Some(Any::BoolValue(b)) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Some(Any::IntValue(i)) => write::int(out, *i),
        Some(Any::DoubleValue(d)) => {
            out.push(0xcb);
            out.extend_from_slice(&d.to_be_bytes());
        }
        Some(Any::BytesValue(b)) => {
            write::bin_header(out, b.len());
            out.extend_from_slice(b);
        }
        Some(Any::ArrayValue(a)) => {
            write::array_len(out, a.values.len());
            for v in &a.values {
                any(v.value.as_ref(), out);
            }
        }
        Some(Any::KvlistValue(l)) => kv_map(&l.values, out),
    }
}
