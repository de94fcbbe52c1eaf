//! OTLP logs as the `otlp` source receives them: an
//! `ExportLogsServiceRequest` in protobuf or JSON to records by tag
//! ([`decode`]), and the `ExportLogsServiceResponse` that answers it
//! ([`response`]). The message types are `opentelemetry-proto`'s, read by
//! `prost` (protobuf) and by [`json`] (OTLP/JSON).
//!
//! Decoding a request costs what its bytes do (no step grows faster), and
//! a body larger than [`DECODED_IN_PLACE_BYTES`] is decoded on a thread
//! of its own ([`decode_apart`]), so a large request never holds up the
//! runtime threads every source answers on.

mod apart;
pub mod decode;
pub mod grpc;
pub mod json;
pub mod status;
pub mod tag;

use bytes::Bytes;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use prost::Message;

pub use apart::{decode_apart, DECODED_IN_PLACE_BYTES};
pub use decode::Tagged;
pub use tag::{TagTemplate, TagTemplateError};

use crate::event::EventTime;

/// The path OTLP/HTTP clients post logs to.
pub const HTTP_PATH: &str = "/v1/logs";

/// Deepest JSON nesting read (as the HTTP source's JSON bodies): an OTLP
/// value nested a dozen levels deep is about 50 levels of JSON.
pub const MAX_JSON_DEPTH: usize = 64;

/// How a request (and its answer) is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`: OTLP/JSON.
    Json,
    /// OTLP/gRPC: the message of a request is protobuf, the answer is a
    /// framed protobuf message (see [`grpc`]).
    Grpc,
}

impl Format {
    /// The format of a `Content-Type` (parameters ignored); `None` for one
    /// OTLP/HTTP does not use.
    pub fn from_content_type(ct: Option<&[u8]>) -> Option<Format> {
        let ct = std::str::from_utf8(ct?).ok()?;
        let media = ct.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case("application/x-protobuf")
            || media.eq_ignore_ascii_case("application/protobuf")
        {
            Some(Format::Protobuf)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Format::Json)
        } else {
            None
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Protobuf => "application/x-protobuf",
            Format::Json => "application/json",
            Format::Grpc => "application/grpc",
        }
    }
}

/// Why a request body is not an `ExportLogsServiceRequest` (answered 400,
/// or `INVALID_ARGUMENT` over gRPC).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not an OTLP ExportLogsServiceRequest in protobuf: {0}")]
    Protobuf(String),
    #[error("not an OTLP ExportLogsServiceRequest in OTLP/JSON: {0}")]
    Json(String),
    #[error("OTLP/JSON nested deeper than {MAX_JSON_DEPTH} levels")]
    TooDeep,
    /// The records would take more than the memory budget (answered 413):
    /// a resource's attributes are repeated in each of its records.
    #[error("the request's records take more than {0} bytes (the memory budget, [limits] memory): send fewer records per request")]
    TooLarge(usize),
    /// The resources render more tags than one request may hold (413).
    #[error("the request's resources render more than {0} different tags: send fewer resources per request, or a `tag` with fewer placeholders")]
    TooManyTags(usize),
    /// logferry stopped while the request was being decoded (503).
    #[error("logferry is stopping: send again later")]
    Stopped,
}

/// The request in `body`.
pub fn request(format: Format, body: &[u8]) -> Result<ExportLogsServiceRequest, DecodeError> {
    match format {
        Format::Protobuf | Format::Grpc => {
            ExportLogsServiceRequest::decode(body).map_err(|e| DecodeError::Protobuf(e.to_string()))
        }
        Format::Json => {
            // serde_json parses recursively: bound the depth first
            if crate::protocol::json::deeper_than(body, MAX_JSON_DEPTH) {
                return Err(DecodeError::TooDeep);
            }
            json::request(body).map_err(|e| DecodeError::Json(e.to_string()))
        }
    }
}

/// Every record of the request in `body`, by tag (see [`decode`]); at
/// most `limit` bytes of them.
pub fn decode(
    format: Format,
    body: &[u8],
    tag: &TagTemplate,
    now: EventTime,
    limit: usize,
) -> Result<Vec<Tagged>, DecodeError> {
    match format {
        Format::Protobuf | Format::Grpc => decode::records(body, tag, now, limit),
        // read into prost's types, then as protobuf
        Format::Json => {
            let request = request(format, body)?.encode_to_vec();
            decode::records(&request, tag, now, limit)
        }
    }
}

/// The answer to an export: `rejected` records (with why) were refused
/// for good, the rest kept.
pub fn response(format: Format, rejected: Option<(usize, String)>) -> Bytes {
    let r = ExportLogsServiceResponse {
        partial_success: rejected.map(|(n, error_message)| ExportLogsPartialSuccess {
            rejected_log_records: i64::try_from(n).unwrap_or(i64::MAX),
            error_message,
        }),
    };
    match format {
        Format::Protobuf => r.encode_to_vec().into(),
        Format::Json => serde_json::to_vec(&r).unwrap_or_default().into(),
        Format::Grpc => grpc::frame(&r.encode_to_vec()),
    }
}

/// The OTLP severity number of a level name (syslog's and the usual
/// loggers' names); 0 (unspecified) for a name it does not know.
pub fn severity_number(name: &str) -> i32 {
    // the longest name is 13 bytes: lowercased on the stack, not the heap
    let name = name.trim().as_bytes();
    let mut lower = [0u8; 13];
    let Some(lower) = lower.get_mut(..name.len()) else {
        return 0;
    };
    for (l, b) in lower.iter_mut().zip(name) {
        *l = b.to_ascii_lowercase();
    }
    match std::str::from_utf8(lower).unwrap_or("") {
        "trace" | "finest" | "finer" => 1,
        "debug" | "dbg" | "fine" => 5,
        "info" | "information" | "informational" => 9,
        "notice" => 10,
        "warn" | "warning" => 13,
        "error" | "err" => 17,
        "crit" | "critical" | "severe" => 18,
        "alert" => 19,
        "fatal" | "emerg" | "emergency" | "panic" => 21,
        _ => 0,
    }
}
