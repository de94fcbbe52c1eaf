//! The body of an answer: the HTTP answers' one piece, or an OTLP/gRPC
//! answer's message followed by its `grpc-status` trailers (hyper sends
//! trailers when a body yields a trailers frame).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use crate::protocol::otlp::{grpc, status};

const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");
const GRPC_DETAILS: HeaderName = HeaderName::from_static("grpc-status-details-bin");
const GRPC: HeaderValue = HeaderValue::from_static("application/grpc");

/// An answer's body.
pub enum Answer {
    /// Every HTTP answer, and a gRPC error (trailers-only: its status is in
    /// the headers, the body is empty).
    Full(Full<Bytes>),
    /// A gRPC answer: the framed message, then the trailers.
    Grpc {
        /// Taken when sent.
        message: Option<Bytes>,
        /// Taken when sent, after `message`.
        trailers: Option<HeaderMap>,
    },
}

impl Answer {
    pub fn full(body: impl Into<Bytes>) -> Self {
        Answer::Full(Full::new(body.into()))
    }
}

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Answer::Full(full) => Pin::new(full).poll_frame(cx),
            Answer::Grpc { message, trailers } => {
                let frame = match message.take() {
                    Some(m) => Some(Frame::data(m)),
                    None => trailers.take().map(Frame::trailers),
                };
                Poll::Ready(frame.map(Ok))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Answer::Full(full) => full.is_end_stream(),
            Answer::Grpc { message, trailers } => message.is_none() && trailers.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Answer::Full(full) => full.size_hint(),
            // trailers follow: no length announced
            Answer::Grpc { .. } => SizeHint::default(),
        }
    }
}

/// A gRPC answer: `message` (framed) and `grpc-status: 0`.
pub fn grpc_ok(message: Bytes) -> Response<Answer> {
    let mut trailers = HeaderMap::new();
    trailers.insert(GRPC_STATUS, HeaderValue::from(grpc::status::OK));
    let mut r = Response::new(Answer::Grpc {
        message: Some(message),
        trailers: Some(trailers),
    });
    r.headers_mut().insert(CONTENT_TYPE, GRPC);
    r
}

/// A gRPC error: HTTP 200 with the status in the headers (trailers-only),
/// and the `google.rpc.Status` in `grpc-status-details-bin`, with a
/// `RetryInfo` when the client should `retry` after a while.
pub fn grpc_error(code: u16, message: &str, retry: Option<Duration>) -> Response<Answer> {
    let mut r = Response::new(Answer::full(Bytes::new()));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, GRPC);
    h.insert(GRPC_STATUS, HeaderValue::from(code));
    if let Ok(v) = HeaderValue::from_str(&grpc::message_header(message)) {
        h.insert(GRPC_MESSAGE, v);
    }
    let details = status::details_bin(&status::status(code, message, retry));
    if let Ok(v) = HeaderValue::from_str(&details) {
        h.insert(GRPC_DETAILS, v);
    }
    r
}

/// The gRPC status of an error the HTTP source answers with `status`:
/// what an OTLP exporter does with it follows (it retries `UNAVAILABLE`
/// and `DEADLINE_EXCEEDED`, and drops the others).
pub fn grpc_code(status: StatusCode, unsupported_encoding: bool) -> u16 {
    use grpc::status::*;
    match status {
        StatusCode::BAD_REQUEST => INVALID_ARGUMENT,
        StatusCode::PAYLOAD_TOO_LARGE => RESOURCE_EXHAUSTED,
        StatusCode::SERVICE_UNAVAILABLE => UNAVAILABLE,
        StatusCode::REQUEST_TIMEOUT => DEADLINE_EXCEEDED,
        StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => UNIMPLEMENTED,
        // a `grpc-encoding` not read here (gRPC says UNIMPLEMENTED)
        StatusCode::UNSUPPORTED_MEDIA_TYPE if unsupported_encoding => UNIMPLEMENTED,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => INVALID_ARGUMENT,
        _ => INTERNAL,
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn a_grpc_answer_is_its_message_then_its_trailers() {
        let collected = grpc_ok(Bytes::from_static(b"\0\0\0\0\0"))
            .into_body()
            .collect()
            .await
            .unwrap();
        let trailers = collected.trailers().cloned().expect("trailers");
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(&collected.to_bytes()[..], b"\0\0\0\0\0");
        let e = grpc_error(3, "bad\n", None);
        assert_eq!(e.headers()["grpc-status"], "3");
        assert_eq!(e.headers()["grpc-message"], "bad");
        assert!(e.body().is_end_stream(), "trailers-only");
        // the status again, with the delay of a retry
        let busy = grpc_error(14, "full", Some(Duration::from_secs(1)));
        let details = busy.headers()["grpc-status-details-bin"].to_str().unwrap();
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(details)
            .unwrap();
        use prost::Message;
        let s = status::Status::decode(bytes.as_slice()).unwrap();
        assert_eq!((s.code, s.message.as_str()), (14, "full"));
        assert_eq!(s.details[0].type_url, status::RETRY_INFO);
    }
}
