//! `google.rpc.Status`, OTLP's error answer: the body of an OTLP/HTTP
//! 4xx or 5xx (protobuf or JSON, as the request was), and over gRPC the
//! `grpc-status-details-bin` trailer. When the client should send again,
//! it carries a `google.rpc.RetryInfo` with the delay, which OTLP
//! exporters honour (the HTTP answer also has `Retry-After`). The `otlp`
//! sink reads the message of the ones it is answered with.
//!
//! The four messages are small and stable; they are declared here with
//! `prost`'s derive rather than pulled from a crate of Google's types.

use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use prost::Message;

use super::Format;

/// `google.rpc.Status`.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<Any>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `google.rpc.RetryInfo`.
#[derive(Clone, PartialEq, Message)]
pub struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    pub retry_delay: Option<ProtoDuration>,
}

/// `google.protobuf.Duration`.
#[derive(Clone, PartialEq, Message)]
pub struct ProtoDuration {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// The type URL of a `RetryInfo` detail.
pub const RETRY_INFO: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// The status of an error: its gRPC `code` (OTLP/HTTP clients may only
/// log it), its `message`, and with `retry` a `RetryInfo`.
pub fn status(code: u16, message: &str, retry: Option<Duration>) -> Status {
    let details = retry
        .map(|after| {
            let info = RetryInfo {
                retry_delay: Some(ProtoDuration {
                    seconds: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                    nanos: i32::try_from(after.subsec_nanos()).unwrap_or(0),
                }),
            };
            Any {
                type_url: RETRY_INFO.into(),
                value: info.encode_to_vec(),
            }
        })
        .into_iter()
        .collect();
    Status {
        code: i32::from(code),
        message: message.trim_end().into(),
        details,
    }
}

/// An OTLP/HTTP error body in the request's `format`: protobuf, or
/// OTLP/JSON (`{"code":…,"message":…,"details":[{"@type":…,"retryDelay":"1s"}]}`).
pub fn http_body(format: Format, status: &Status) -> Bytes {
    match format {
        Format::Json => json(status).into(),
        Format::Protobuf | Format::Grpc => status.encode_to_vec().into(),
    }
}

fn json(status: &Status) -> Vec<u8> {
    let details: Vec<serde_json::Value> = status
        .details
        .iter()
        .filter_map(|d| {
            let info = RetryInfo::decode(d.value.as_slice()).ok()?;
            let delay = info.retry_delay.unwrap_or_default();
            // protobuf's JSON form of a Duration: seconds with an `s`
            let delay = Duration::new(
                u64::try_from(delay.seconds).unwrap_or(0),
                u32::try_from(delay.nanos).unwrap_or(0),
            );
            Some(serde_json::json!({
                "@type": d.type_url,
                "retryDelay": format!("{}s", delay.as_secs_f64()),
            }))
        })
        .collect();
    let mut v = serde_json::json!({ "code": status.code, "message": status.message });
    if !details.is_empty() {
        v["details"] = serde_json::Value::Array(details);
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The `grpc-status-details-bin` trailer's value: the status in protobuf,
/// base64 without padding (gRPC's binary header form).
pub fn details_bin(status: &Status) -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(status.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_carries_its_delay_and_reads_back() {
        let s = status(14, "full\n", Some(Duration::from_millis(1500)));
        let back = Status::decode(s.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back.code, 14);
        assert_eq!(back.message, "full");
        assert_eq!(back.details.len(), 1);
        assert_eq!(back.details[0].type_url, RETRY_INFO);
        let info = RetryInfo::decode(back.details[0].value.as_slice()).unwrap();
        assert_eq!(
            info.retry_delay,
            Some(ProtoDuration {
                seconds: 1,
                nanos: 500_000_000
            })
        );
        let bin = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(details_bin(&s))
            .unwrap();
        assert_eq!(Status::decode(bin.as_slice()).unwrap(), s);
    }

    #[test]
    fn json_bodies_use_protobuf_json_names() {
        let s = status(14, "full", Some(Duration::from_secs(1)));
        let v: serde_json::Value = serde_json::from_slice(&http_body(Format::Json, &s)).unwrap();
        assert_eq!(v["code"], 14);
        assert_eq!(v["message"], "full");
        assert_eq!(v["details"][0]["@type"], RETRY_INFO);
        assert_eq!(v["details"][0]["retryDelay"], "1s");
        let plain = status(3, "bad", None);
        let v: serde_json::Value =
            serde_json::from_slice(&http_body(Format::Json, &plain)).unwrap();
        assert!(v.get("details").is_none());
        let p = http_body(Format::Protobuf, &plain);
        assert_eq!(Status::decode(p).unwrap(), plain);
    }
}
