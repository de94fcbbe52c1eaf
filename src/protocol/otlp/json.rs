//! OTLP/JSON: an `ExportLogsServiceRequest` read from JSON into
//! `opentelemetry-proto`'s (prost's) types, as the protobuf JSON mapping
//! and the OpenTelemetry Collector read it:
//!
//! - 64-bit integers (`timeUnixNano`, `observedTimeUnixNano`,
//!   `intValue`) as JSON numbers or as strings, and so every integer
//!   field (`severityNumber`, `flags`, `droppedAttributesCount`);
//! - `severityNumber` also as its enum name (`"SEVERITY_NUMBER_WARN"`);
//! - field names in lowerCamelCase or as the `.proto` names them
//!   (`time_unix_nano`);
//! - `null` for a field is the field left out; an `AnyValue` of no known
//!   member (`{}`) is an empty value; unknown fields are skipped (as OTLP
//!   asks of receivers);
//! - `traceId` and `spanId` in hex (OTLP's exception to the mapping),
//!   `bytesValue` in base64 (standard or URL-safe, padded or not);
//! - `doubleValue` as a number, or `"NaN"`, `"Infinity"`, `"-Infinity"`
//!   or a number in a string.
//!
//! `opentelemetry-proto`'s own serde mapping reads 64-bit integers as
//! strings only, and refuses `{}` values and enum names, hence this one.

use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// The request in `body` (depth already bounded by the caller).
pub fn request(body: &[u8]) -> Result<ExportLogsServiceRequest, serde_json::Error> {
    let r: Request = serde_json::from_slice(body)?;
    Ok(ExportLogsServiceRequest {
        resource_logs: r.resource_logs.into_iter().map(Into::into).collect(),
    })
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Request {
    #[serde(alias = "resource_logs", deserialize_with = "nullable")]
    resource_logs: Vec<JsonResourceLogs>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct JsonResourceLogs {
    #[serde(deserialize_with = "nullable")]
    resource: Option<JsonResource>,
    #[serde(alias = "scope_logs", deserialize_with = "nullable")]
    scope_logs: Vec<JsonScopeLogs>,
    #[serde(alias = "schema_url", deserialize_with = "nullable")]
    schema_url: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct JsonResource {
    #[serde(deserialize_with = "nullable")]
    attributes: Vec<JsonKeyValue>,
    #[serde(alias = "dropped_attributes_count", deserialize_with = "integer")]
    dropped_attributes_count: u32,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct JsonScopeLogs {
    #[serde(deserialize_with = "nullable")]
    scope: Option<JsonScope>,
    #[serde(alias = "log_records", deserialize_with = "nullable")]
    log_records: Vec<JsonLogRecord>,
    #[serde(alias = "schema_url", deserialize_with = "nullable")]
    schema_url: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct JsonScope {
    #[serde(deserialize_with = "nullable")]
    name: String,
    #[serde(deserialize_with = "nullable")]
    version: String,
    #[serde(deserialize_with = "nullable")]
    attributes: Vec<JsonKeyValue>,
    #[serde(alias = "dropped_attributes_count", deserialize_with = "integer")]
    dropped_attributes_count: u32,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct JsonLogRecord {
    #[serde(alias = "time_unix_nano", deserialize_with = "integer")]
    time_unix_nano: u64,
    #[serde(alias = "observed_time_unix_nano", deserialize_with = "integer")]
    observed_time_unix_nano: u64,
    #[serde(alias = "severity_number", deserialize_with = "severity")]
    severity_number: i32,
    #[serde(alias = "severity_text", deserialize_with = "nullable")]
    severity_text: String,
    #[serde(deserialize_with = "nullable")]
    body: Option<JsonAnyValue>,
    #[serde(deserialize_with = "nullable")]
    attributes: Vec<JsonKeyValue>,
    #[serde(alias = "dropped_attributes_count", deserialize_with = "integer")]
    dropped_attributes_count: u32,
    #[serde(deserialize_with = "integer")]
    flags: u32,
    #[serde(alias = "trace_id", deserialize_with = "hex")]
    trace_id: Vec<u8>,
    #[serde(alias = "span_id", deserialize_with = "hex")]
    span_id: Vec<u8>,
    #[serde(alias = "event_name", deserialize_with = "nullable")]
    event_name: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct JsonKeyValue {
    #[serde(deserialize_with = "nullable")]
    key: String,
    #[serde(deserialize_with = "nullable")]
    value: Option<JsonAnyValue>,
}

/// `{"values": [...]}`: an `ArrayValue` or a `KeyValueList`.
#[derive(Deserialize)]
#[serde(default, bound(deserialize = "T: Deserialize<'de>"))]
struct Values<T> {
    #[serde(deserialize_with = "nullable")]
    values: Vec<T>,
}

impl<T> Default for Values<T> {
    fn default() -> Self {
        Values { values: Vec::new() }
    }
}

/// An `AnyValue`: the member its one known key names (the last, if it
/// names several, as protobuf keeps the last member of a `oneof`).
struct JsonAnyValue(AnyValue);

impl<'de> Deserialize<'de> for JsonAnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(AnyValueVisitor)
    }
}

struct AnyValueVisitor;

impl<'de> Visitor<'de> for AnyValueVisitor {
    type Value = JsonAnyValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AnyValue object such as {\"stringValue\": \"text\"}")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<JsonAnyValue, M::Error> {
        let mut value = None;
        while let Some(key) = map.next_key::<Member>()? {
            let member = match key {
                Member::String => map.next_value::<Option<String>>()?.map(Value::StringValue),
                Member::Bool => map.next_value::<Option<bool>>()?.map(Value::BoolValue),
                Member::Int => {
                    let Integer(i) = map.next_value()?;
                    i.map(Value::IntValue)
                }
                Member::Double => {
                    let Double(d) = map.next_value()?;
                    d.map(Value::DoubleValue)
                }
                Member::Array => map.next_value::<Option<Values<JsonAnyValue>>>()?.map(|a| {
                    Value::ArrayValue(ArrayValue {
                        values: a.values.into_iter().map(|v| v.0).collect(),
                    })
                }),
                Member::Kvlist => map.next_value::<Option<Values<JsonKeyValue>>>()?.map(|l| {
                    Value::KvlistValue(KeyValueList {
                        values: l.values.into_iter().map(Into::into).collect(),
                    })
                }),
                Member::Bytes => match map.next_value::<Option<String>>()? {
                    Some(b) => Some(Value::BytesValue(base64(&b).map_err(de::Error::custom)?)),
                    None => None,
                },
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if member.is_some() {
                value = member;
            }
        }
        Ok(JsonAnyValue(AnyValue { value }))
    }
}

/// A key of an `AnyValue` object, read without allocating.
enum Member {
    String,
    Bool,
    Int,
    Double,
    Array,
    Kvlist,
    Bytes,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member of AnyValue")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Member, E> {
                Ok(match key {
                    "stringValue" | "string_value" => Member::String,
                    "boolValue" | "bool_value" => Member::Bool,
                    "intValue" | "int_value" => Member::Int,
                    "doubleValue" | "double_value" => Member::Double,
                    "arrayValue" | "array_value" => Member::Array,
                    "kvlistValue" | "kvlist_value" => Member::Kvlist,
                    "bytesValue" | "bytes_value" => Member::Bytes,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

impl From<JsonKeyValue> for KeyValue {
    fn from(kv: JsonKeyValue) -> KeyValue {
        KeyValue {
            key: kv.key,
            value: kv.value.map(|v| v.0),
        }
    }
}

fn key_values(kvs: Vec<JsonKeyValue>) -> Vec<KeyValue> {
    kvs.into_iter().map(Into::into).collect()
}

impl From<JsonResourceLogs> for ResourceLogs {
    fn from(rl: JsonResourceLogs) -> ResourceLogs {
        ResourceLogs {
            resource: rl.resource.map(|r| Resource {
                attributes: key_values(r.attributes),
                dropped_attributes_count: r.dropped_attributes_count,
                entity_refs: Vec::new(),
            }),
            scope_logs: rl.scope_logs.into_iter().map(Into::into).collect(),
            schema_url: rl.schema_url,
        }
    }
}

impl From<JsonScopeLogs> for ScopeLogs {
    fn from(sl: JsonScopeLogs) -> ScopeLogs {
        ScopeLogs {
            scope: sl.scope.map(|s| InstrumentationScope {
                name: s.name,
                version: s.version,
                attributes: key_values(s.attributes),
                dropped_attributes_count: s.dropped_attributes_count,
            }),
            log_records: sl.log_records.into_iter().map(Into::into).collect(),
            schema_url: sl.schema_url,
        }
    }
}

impl From<JsonLogRecord> for LogRecord {
    fn from(r: JsonLogRecord) -> LogRecord {
        LogRecord {
            time_unix_nano: r.time_unix_nano,
            observed_time_unix_nano: r.observed_time_unix_nano,
            severity_number: r.severity_number,
            severity_text: r.severity_text,
            body: r.body.map(|b| b.0),
            attributes: key_values(r.attributes),
            dropped_attributes_count: r.dropped_attributes_count,
            flags: r.flags,
            trace_id: r.trace_id,
            span_id: r.span_id,
            event_name: r.event_name,
        }
    }
}

/// A field that may be `null` (its default).
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// An integer field: a JSON number or a string of one; `null` is 0.
fn integer<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i128> + Default,
{
    let Integer(i) = Integer::<T>::deserialize(d)?;
    Ok(i.unwrap_or_default())
}

/// `severityNumber`: an integer, or the enum's name.
fn severity<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    struct Severity;
    impl<'de> Visitor<'de> for Severity {
        type Value = i32;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a severity number, or its name such as \"SEVERITY_NUMBER_INFO\"")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<i32, E> {
            match SeverityNumber::from_str_name(s) {
                Some(n) => Ok(n as i32),
                None => IntegerVisitor::<i32>(PhantomData)
                    .visit_str(s)
                    .map(Option::unwrap_or_default),
            }
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<i32, E> {
            in_range(i128::from(n))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<i32, E> {
            in_range(i128::from(n))
        }
        fn visit_f64<E: de::Error>(self, n: f64) -> Result<i32, E> {
            integral(n).and_then(in_range)
        }
        fn visit_unit<E: de::Error>(self) -> Result<i32, E> {
            Ok(0)
        }
    }
    d.deserialize_any(Severity)
}

/// An integer of type `T` or `null` (`None`), from a number or a string.
struct Integer<T>(Option<T>);

impl<'de, T: TryFrom<i128>> Deserialize<'de> for Integer<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntegerVisitor(PhantomData)).map(Integer)
    }
}

struct IntegerVisitor<T>(PhantomData<T>);

impl<'de, T: TryFrom<i128>> Visitor<'de> for IntegerVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer, as a JSON number or a string")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Option<T>, E> {
        in_range(i128::from(n)).map(Some)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Option<T>, E> {
        in_range(i128::from(n)).map(Some)
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Option<T>, E> {
        integral(n).and_then(in_range).map(Some)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<T>, E> {
        let n = match s.parse::<i128>() {
            Ok(n) => n,
            // "1.7e18", as the protobuf JSON mapping allows
            Err(_) => match s.parse::<f64>() {
                Ok(f)
                    if s.bytes()
                        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
                {
                    integral(f)?
                }
                _ => return Err(E::custom(format!("{s:?} is not an integer"))),
            },
        };
        in_range(n).map(Some)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
}

/// `n` if it is a whole number an `i128` holds.
fn integral<E: de::Error>(n: f64) -> Result<i128, E> {
    // 2^127: past it, or a fraction, or not a number at all
    if n.fract() == 0.0 && n.abs() < 1.7e38 {
        Ok(n as i128)
    } else {
        Err(E::custom(format!("{n} is not an integer")))
    }
}

fn in_range<E: de::Error, T: TryFrom<i128>>(n: i128) -> Result<T, E> {
    T::try_from(n).map_err(|_| E::custom(format!("{n} is out of range for this field")))
}

/// A `doubleValue` or `null` (`None`).
struct Double(Option<f64>);

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<f64>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, or \"NaN\", \"Infinity\", \"-Infinity\"")
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Option<f64>, E> {
                Ok(Some(n))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Option<f64>, E> {
                Ok(Some(n as f64))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Option<f64>, E> {
                Ok(Some(n as f64))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<f64>, E> {
                match s {
                    "NaN" => Ok(Some(f64::NAN)),
                    "Infinity" => Ok(Some(f64::INFINITY)),
                    "-Infinity" => Ok(Some(f64::NEG_INFINITY)),
                    // Rust also reads "inf" and "nan", which JSON does not name
                    _ if s
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
                    {
                        s.parse()
                            .map(Some)
                            .map_err(|_| E::custom(format!("{s:?} is not a number")))
                    }
                    _ => Err(E::custom(format!("{s:?} is not a number"))),
                }
            }
            fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
                Ok(None)
            }
        }
        d.deserialize_any(V).map(Double)
    }
}

/// `traceId`, `spanId`: hex (either case); `null` or `""` is empty.
fn hex<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an id in hex")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Vec<u8>, E> {
            let s = s.as_bytes();
            if !s.len().is_multiple_of(2) {
                return Err(E::custom("an id in hex has an even number of digits"));
            }
            let digit = |c: u8| match c {
                b'0'..=b'9' => Ok(c - b'0'),
                b'a'..=b'f' => Ok(c - b'a' + 10),
                b'A'..=b'F' => Ok(c - b'A' + 10),
                _ => Err(E::custom(
                    "an id is in hex (OTLP/JSON's ids are not base64)",
                )),
            };
            s.chunks_exact(2)
                .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
                .collect()
        }
        fn visit_unit<E: de::Error>(self) -> Result<Vec<u8>, E> {
            Ok(Vec::new())
        }
    }
    d.deserialize_any(V)
}

/// `bytesValue`: base64, standard or URL-safe, padded or not.
fn base64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let s = s.trim_end_matches('=');
    if s.contains(['-', '_']) {
        URL_SAFE_NO_PAD.decode(s)
    } else {
        STANDARD_NO_PAD.decode(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value) -> Result<ExportLogsServiceRequest, String> {
        request(v.to_string().as_bytes()).map_err(|e| e.to_string())
    }

    fn one_record(record: serde_json::Value) -> Result<LogRecord, String> {
        let mut r = read(json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}))?;
        Ok(r.resource_logs
            .remove(0)
            .scope_logs
            .remove(0)
            .log_records
            .remove(0))
    }

    #[test]
    fn sixty_four_bit_integers_are_read_as_numbers_and_as_strings() {
        let as_numbers = one_record(json!({
            "timeUnixNano": 1_700_000_000_000_000_123u64,
            "observedTimeUnixNano": 1_700_000_000_000_000_456u64,
            "severityNumber": 13,
            "flags": 1,
            "droppedAttributesCount": 2,
            "attributes": [
                {"key": "big", "value": {"intValue": i64::MAX}},
                {"key": "neg", "value": {"intValue": -5}},
                {"key": "exp", "value": {"intValue": 1e3}},
            ],
        }))
        .unwrap();
        let as_strings = one_record(json!({
            "timeUnixNano": "1700000000000000123",
            "observedTimeUnixNano": "1700000000000000456",
            "severityNumber": "SEVERITY_NUMBER_WARN",
            "flags": "1",
            "droppedAttributesCount": "2",
            "attributes": [
                {"key": "big", "value": {"intValue": i64::MAX.to_string()}},
                {"key": "neg", "value": {"intValue": "-5"}},
                {"key": "exp", "value": {"intValue": "1e3"}},
            ],
        }))
        .unwrap();
        assert_eq!(as_numbers, as_strings);
        assert_eq!(as_numbers.time_unix_nano, 1_700_000_000_000_000_123);
        assert_eq!(
            as_numbers.observed_time_unix_nano,
            1_700_000_000_000_000_456
        );
        assert_eq!(as_numbers.severity_number, 13);
        assert_eq!(
            as_numbers.attributes[0].value.as_ref().unwrap().value,
            Some(Value::IntValue(i64::MAX))
        );
        assert_eq!(
            as_numbers.attributes[2].value.as_ref().unwrap().value,
            Some(Value::IntValue(1000))
        );
        for bad in [
            json!({"timeUnixNano": -1}),
            json!({"timeUnixNano": 1.5}),
            json!({"timeUnixNano": "soon"}),
            json!({"timeUnixNano": true}),
            json!({"attributes": [{"key": "k", "value": {"intValue": 9_223_372_036_854_775_808u64}}]}),
            json!({"severityNumber": "LOUD"}),
            json!({"traceId": "xyz0"}),
        ] {
            assert!(one_record(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn snake_case_names_nulls_empty_values_and_every_member_read_as_the_collector_does() {
        let r = one_record(json!({
            "time_unix_nano": 5,
            "severity_text": "INFO",
            "body": {},
            "trace_id": "AB01",
            "spanId": null,
            "eventName": null,
            "unknown": {"skipped": [1, 2]},
            "attributes": [
                {"key": "d", "value": {"doubleValue": "NaN"}},
                {"key": "i", "value": {"doubleValue": 2}},
                {"key": "b", "value": {"bytesValue": "AP8"}},
                {"key": "u", "value": {"bytesValue": "-_8="}},
                {"key": "a", "value": {"arrayValue": {"values": [{"boolValue": true}, {}]}}},
                {"key": "l", "value": {"kvlist_value": {"values": [{"key": "x", "value": null}]}}},
                {"key": "none"},
            ],
        }))
        .unwrap();
        assert_eq!(r.time_unix_nano, 5);
        assert_eq!(r.severity_text, "INFO");
        assert_eq!(r.body, Some(AnyValue { value: None }));
        assert_eq!(r.trace_id, [0xab, 0x01]);
        let v = |i: usize| {
            r.attributes[i]
                .value
                .as_ref()
                .unwrap()
                .value
                .clone()
                .unwrap()
        };
        assert!(matches!(v(0), Value::DoubleValue(d) if d.is_nan()));
        assert_eq!(v(1), Value::DoubleValue(2.0));
        assert_eq!(v(2), Value::BytesValue(vec![0, 255]));
        assert_eq!(v(3), Value::BytesValue(vec![0xfb, 0xff]));
        assert_eq!(
            v(4),
            Value::ArrayValue(ArrayValue {
                values: vec![
                    AnyValue {
                        value: Some(Value::BoolValue(true))
                    },
                    AnyValue { value: None }
                ]
            })
        );
        assert_eq!(
            v(5),
            Value::KvlistValue(KeyValueList {
                values: vec![KeyValue {
                    key: "x".into(),
                    value: None
                }]
            })
        );
        assert_eq!(r.attributes[6].value, None);
        assert!(read(json!({"resourceLogs": 5})).is_err());
        assert!(read(json!({"resourceLogs": null}))
            .unwrap()
            .resource_logs
            .is_empty());
    }
}
