//! OTLP/gRPC for the `otlp` sink: the headers and the framed body of a
//! `LogsService/Export` call, and what its answer says, read as gRPC
//! defines it: the `grpc-status` in the trailers (or, for an answer
//! without a message, in the headers: "trailers-only"), `grpc-message`,
//! and a `google.rpc.Status` in `grpc-status-details-bin` whose
//! `RetryInfo` says when to call again.
//!
//! The call itself is an HTTP/2 request of the shared client
//! ([`crate::http_client`]): gRPC needs nothing of HTTP/2 that a
//! plain request lacks but the trailers, which the client keeps. A gRPC
//! library (tonic) would bring a second HTTP/2 client, connection pool and
//! TLS setup to keep in step with the first.

use std::io::Read as _;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use prost::Message as _;

use crate::http_client::Answer;
use crate::protocol::otlp::grpc::{self, status};
use crate::protocol::otlp::status::{RetryInfo, Status, RETRY_INFO};
use crate::sinks::http::config::Compression;
use crate::sinks::http::{asked_wait, shown};
use crate::sinks::verdict::{Rejection, RetryConfig, Verdict};

const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
const GRPC_DETAILS: HeaderName = HeaderName::from_static("grpc-status-details-bin");
const GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");
const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The headers of every call, besides `auth` and the configured ones:
/// gRPC's content type, `te: trailers` (which gRPC servers require),
/// the message coding, and `timeout` as the call's deadline.
pub fn headers(compression: Compression, timeout: Duration) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    h.insert(http::header::TE, HeaderValue::from_static("trailers"));
    if compression == Compression::Gzip {
        h.insert(GRPC_ENCODING, HeaderValue::from_static("gzip"));
    }
    // at most 8 digits: milliseconds up to 27 hours
    let millis = timeout.as_millis().clamp(1, 99_999_999);
    if let Ok(v) = HeaderValue::from_str(&format!("{millis}m")) {
        h.insert(GRPC_TIMEOUT, v);
    }
    h
}

/// The body of a call: `message`, already compressed as `compression`
/// says, with gRPC's 5-byte prefix.
pub fn body(message: &[u8], compression: Compression) -> Bytes {
    match compression {
        Compression::None => grpc::frame(message),
        _ => grpc::frame_compressed(message),
    }
}

/// What an answer to an `Export` call says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The gRPC status code.
    pub code: u16,
    /// Why, for a code other than OK: `grpc-message`, else the message
    /// of the `google.rpc.Status`.
    pub message: String,
    /// The wait a `RetryInfo` in `grpc-status-details-bin` asks for.
    pub retry_delay: Option<Duration>,
    /// With OK, the `ExportLogsServiceResponse`'s bytes, when there is one
    /// message that could be read (uncompressed).
    pub response: Option<Bytes>,
}

impl Reply {
    /// The status of `answer`, a message of at most `max_message` bytes
    /// once uncompressed.
    pub fn read(answer: &Answer, max_message: usize) -> Reply {
        // an answer with a message has its status in the trailers; one
        // without (an error, mostly) may have it in its headers
        let fields = if answer.trailers.contains_key(GRPC_STATUS) {
            &answer.trailers
        } else {
            &answer.headers
        };
        let Some(value) = fields.get(GRPC_STATUS) else {
            return Self::without_status(answer);
        };
        let Some(code) = value.to_str().ok().and_then(|v| v.trim().parse().ok()) else {
            return Self::error(
                status::INTERNAL,
                format!("grpc-status {value:?} is not a status code"),
            );
        };
        let details = fields.get(GRPC_DETAILS).and_then(|v| details(v.as_bytes()));
        let mut message = fields
            .get(GRPC_MESSAGE)
            .map(|v| grpc::message_from_header(v.as_bytes()))
            .unwrap_or_default();
        if message.is_empty() {
            message = details
                .as_ref()
                .map(|s| s.message.clone())
                .unwrap_or_default();
        }
        Reply {
            code,
            message,
            retry_delay: details.as_ref().and_then(retry_delay),
            response: (code == status::OK)
                .then(|| response(answer, max_message))
                .flatten(),
        }
    }

    fn error(code: u16, message: String) -> Reply {
        Reply {
            code,
            message,
            retry_delay: None,
            response: None,
        }
    }

    /// An answer without `grpc-status`: an HTTP error (a proxy's, or a
    /// server that is not gRPC's) maps as gRPC maps it; a 200 is
    /// INTERNAL, as gRPC clients have it.
    fn without_status(answer: &Answer) -> Reply {
        if !answer.complete {
            return Self::error(
                status::INTERNAL,
                "the answer is longer than max_response_bytes: its grpc-status was not read".into(),
            );
        }
        let code = match answer.status {
            StatusCode::OK => {
                return Self::error(status::INTERNAL, "the answer has no grpc-status".into())
            }
            StatusCode::BAD_REQUEST => status::INTERNAL,
            StatusCode::UNAUTHORIZED => status::UNAUTHENTICATED,
            StatusCode::FORBIDDEN => status::PERMISSION_DENIED,
            StatusCode::NOT_FOUND => status::UNIMPLEMENTED,
            StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT => status::UNAVAILABLE,
            _ => status::UNKNOWN,
        };
        Self::error(code, format!("HTTP {}: {}", answer.status, shown(answer)))
    }

    /// The verdict on the `attempt`th call (from 1), as the OTLP
    /// specification asks: OK delivers; CANCELLED, DEADLINE_EXCEEDED,
    /// ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS and (only with a
    /// `RetryInfo`) RESOURCE_EXHAUSTED call again after the `RetryInfo`'s
    /// delay (at most `retry.max`) or the backoff; any other code rejects.
    pub fn verdict(&self, retry: &RetryConfig, attempt: u32) -> Verdict {
        use status::*;
        let retried = match self.code {
            OK => return Verdict::Delivered,
            CANCELLED | DEADLINE_EXCEEDED | ABORTED | OUT_OF_RANGE | UNAVAILABLE | DATA_LOSS => {
                true
            }
            RESOURCE_EXHAUSTED => self.retry_delay.is_some(),
            _ => false,
        };
        if retried {
            return Verdict::Retry {
                after: asked_wait(retry, self.retry_delay, attempt),
            };
        }
        Verdict::Rejected {
            reason: Rejection {
                kind: "grpc_status",
                message: format!(
                    "gRPC {} ({}): {}",
                    status::name(self.code),
                    self.code,
                    self.message
                ),
            },
        }
    }
}

/// The `google.rpc.Status` of a `grpc-status-details-bin` value (base64,
/// padded or not, as gRPC's binary headers are).
fn details(value: &[u8]) -> Option<Status> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    const BASE64: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let bytes = BASE64.decode(value).ok()?;
    Status::decode(bytes.as_slice()).ok()
}

/// The delay of the first `RetryInfo` among a status's details.
fn retry_delay(s: &Status) -> Option<Duration> {
    let info = s.details.iter().find(|d| d.type_url == RETRY_INFO)?;
    let delay = RetryInfo::decode(info.value.as_slice()).ok()?.retry_delay?;
    Some(Duration::new(
        u64::try_from(delay.seconds).unwrap_or(0),
        u32::try_from(delay.nanos).unwrap_or(0).min(999_999_999),
    ))
}

/// The one message of an OK answer, uncompressed (gzip is the only
/// coding asked for: a server answers in the request's, or none).
fn response(answer: &Answer, max: usize) -> Option<Bytes> {
    if !answer.complete {
        return None;
    }
    let m = grpc::unframe(&answer.body).ok()?;
    if !m.compressed {
        return Some(m.bytes);
    }
    if answer.headers.get(GRPC_ENCODING)? != "gzip" {
        return None;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&m.bytes[..])
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() <= max).then(|| out.into())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::protocol::otlp::status::{details_bin, status as rpc_status};

    fn answer(
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
        trailers: &[(&str, &str)],
    ) -> Answer {
        let map = |pairs: &[(&str, &str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.insert(
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                );
            }
            m
        };
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map(headers),
            body: Bytes::copy_from_slice(body),
            complete: true,
            trailers: map(trailers),
        }
    }

    fn retry() -> RetryConfig {
        RetryConfig {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(5),
            jitter: 0.0,
            max_attempts: 0,
        }
    }

    #[test]
    fn an_ok_in_the_trailers_gives_the_response_message() {
        let a = answer(
            200,
            &[("content-type", "application/grpc")],
            &grpc::frame(b"\x0a\x00"),
            &[("grpc-status", "0")],
        );
        let r = Reply::read(&a, 1024);
        assert_eq!(r.code, status::OK);
        assert_eq!(r.response.as_deref(), Some(&b"\x0a\x00"[..]));
        assert_eq!(r.verdict(&retry(), 1), Verdict::Delivered);
        // compressed as the request was
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(b"\x0a\x00").unwrap();
        let zipped = grpc::frame_compressed(&z.finish().unwrap());
        let a = answer(
            200,
            &[("grpc-encoding", "gzip")],
            &zipped,
            &[("grpc-status", "0")],
        );
        assert_eq!(
            Reply::read(&a, 1024).response.as_deref(),
            Some(&b"\x0a\x00"[..])
        );
        // past the limit once uncompressed, or a coding not asked for: unread
        assert_eq!(Reply::read(&a, 1).response, None);
        let a = answer(
            200,
            &[("grpc-encoding", "snappy")],
            &zipped,
            &[("grpc-status", "0")],
        );
        assert_eq!(Reply::read(&a, 1024).response, None);
    }

    #[test]
    fn unavailable_with_retry_info_waits_as_asked_up_to_retry_max() {
        let s = rpc_status(14, "queue full", Some(Duration::from_millis(1500)));
        let details = details_bin(&s);
        let a = answer(
            200,
            &[
                ("grpc-status", "14"),
                ("grpc-message", "queue%20full"),
                ("grpc-status-details-bin", &details),
            ],
            b"",
            &[],
        );
        let r = Reply::read(&a, 1024);
        assert_eq!(
            (r.code, r.message.as_str(), r.retry_delay),
            (14, "queue full", Some(Duration::from_millis(1500)))
        );
        assert_eq!(
            r.verdict(&retry(), 1),
            Verdict::Retry {
                after: Duration::from_millis(1500)
            }
        );
        let long = Reply {
            retry_delay: Some(Duration::from_secs(60)),
            ..r.clone()
        };
        assert_eq!(
            long.verdict(&retry(), 1),
            Verdict::Retry {
                after: Duration::from_secs(5)
            }
        );
        // without RetryInfo: the backoff
        let plain = Reply {
            retry_delay: None,
            ..r
        };
        assert_eq!(
            plain.verdict(&retry(), 1),
            Verdict::Retry {
                after: Duration::from_millis(100)
            }
        );
        // padded base64 is read too
        let padded = base64::engine::general_purpose::STANDARD.encode(s.encode_to_vec());
        let a = answer(
            200,
            &[("grpc-status", "14"), ("grpc-status-details-bin", &padded)],
            b"",
            &[],
        );
        let r = Reply::read(&a, 1024);
        assert_eq!(r.retry_delay, Some(Duration::from_millis(1500)));
        assert_eq!(
            r.message, "queue full",
            "the Status's message when grpc-message is absent"
        );
    }

    #[test]
    fn codes_are_retried_or_rejected_as_otlp_says() {
        let reply = |code, retry_delay| Reply {
            code,
            message: "why".into(),
            retry_delay,
            response: None,
        };
        for code in [1, 4, 10, 11, 14, 15] {
            assert!(
                matches!(
                    reply(code, None).verdict(&retry(), 1),
                    Verdict::Retry { .. }
                ),
                "{code}"
            );
        }
        let asked = Some(Duration::from_secs(1));
        assert!(matches!(
            reply(8, asked).verdict(&retry(), 1),
            Verdict::Retry { .. }
        ));
        for code in [2, 3, 5, 6, 7, 8, 9, 12, 13, 16, 99] {
            let Verdict::Rejected { reason } = reply(code, None).verdict(&retry(), 1) else {
                panic!("{code} is permanent");
            };
            assert_eq!(reason.kind, "grpc_status");
            assert!(
                reason.message.ends_with(&format!("({code}): why")),
                "{}",
                reason.message
            );
        }
        let Verdict::Rejected { reason } = reply(3, None).verdict(&retry(), 1) else {
            unreachable!()
        };
        assert_eq!(reason.message, "gRPC INVALID_ARGUMENT (3): why");
    }

    #[test]
    fn the_status_comes_from_the_trailers_before_the_headers() {
        let a = answer(
            200,
            &[("grpc-status", "0")],
            b"",
            &[("grpc-status", "13"), ("grpc-message", "late")],
        );
        let r = Reply::read(&a, 1024);
        assert_eq!((r.code, r.message.as_str()), (13, "late"));
    }

    #[test]
    fn an_answer_without_a_status_maps_its_http_status() {
        let r = Reply::read(&answer(503, &[], b"busy", &[]), 1024);
        assert_eq!(
            (r.code, r.message.as_str()),
            (14, "HTTP 503 Service Unavailable: busy")
        );
        assert_eq!(
            Reply::read(&answer(404, &[], b"", &[]), 1024).code,
            status::UNIMPLEMENTED
        );
        assert_eq!(
            Reply::read(&answer(401, &[], b"", &[]), 1024).code,
            status::UNAUTHENTICATED
        );
        assert_eq!(
            Reply::read(&answer(500, &[], b"", &[]), 1024).code,
            status::UNKNOWN
        );
        let r = Reply::read(&answer(200, &[], &grpc::frame(b""), &[]), 1024);
        assert_eq!(
            (r.code, r.message.as_str()),
            (13, "the answer has no grpc-status")
        );
        let mut cut = answer(200, &[], b"\x00\x00", &[]);
        cut.complete = false;
        assert!(Reply::read(&cut, 1024)
            .message
            .contains("max_response_bytes"));
        let r = Reply::read(&answer(200, &[("grpc-status", "x")], b"", &[]), 1024);
        assert_eq!(r.code, status::INTERNAL);
    }

    #[test]
    fn call_headers_and_body() {
        let h = headers(Compression::Gzip, Duration::from_secs(30));
        assert_eq!(h["content-type"], "application/grpc");
        assert_eq!(h["te"], "trailers");
        assert_eq!(h["grpc-encoding"], "gzip");
        assert_eq!(h["grpc-timeout"], "30000m");
        assert!(headers(Compression::None, Duration::from_secs(1))
            .get("grpc-encoding")
            .is_none());
        assert_eq!(
            &body(b"ab", Compression::None)[..],
            b"\x00\x00\x00\x00\x02ab"
        );
        assert_eq!(
            &body(b"ab", Compression::Gzip)[..],
            b"\x01\x00\x00\x00\x02ab"
        );
    }
}
