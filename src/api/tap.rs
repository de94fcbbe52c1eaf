//! `GET /tap?component=NAME[&tag=PATTERN][&rate=N]`: the records leaving a
//! source or a filter, or reaching a sink, as they pass, one JSON object a
//! line (`{"component", "tag", "time", "record"}`), until the client
//! hangs up. At most `rate` records a second are sent (100 by default);
//! what a tap leaves out, over the rate or because the client reads too
//! slowly, is announced once a second as `{"component", "skipped": N}`
//! and counted in `logferry_tap_skipped_records_total`. A tap never makes
//! the pipeline wait (see [`crate::router::tap`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use super::access::Refusal;
use super::ApiState;
use crate::metrics::Counter;
use crate::router::tap::{AttachError, TapHandle, TapRequest, DEFAULT_CAPACITY, DEFAULT_RATE};
use crate::router::TagPattern;

/// The most records a second a client may ask for.
pub const MAX_RATE: u32 = 10_000;

/// How often skipped records are announced.
const SKIPPED_EVERY: Duration = Duration::from_secs(1);

/// Records put in one chunk of the answer at most.
const RECORDS_PER_CHUNK: usize = 64;

/// Bytes past which a chunk takes no more records: what is taken off a
/// tap's channel leaves the memory budget, so a chunk stays small.
const CHUNK_BYTES: usize = 256 * 1024;

/// The answer to `GET /tap` with `query`; refused when `max_taps` are
/// attached already.
pub fn answer(
    state: &ApiState,
    max_taps: usize,
    query: Option<&str>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Refusal> {
    let Some(taps) = &state.taps else {
        return Ok(text(StatusCode::NOT_FOUND, "no taps here\n".into()));
    };
    let mut request = match parse_query(query.unwrap_or("")) {
        Ok(r) => r,
        Err(e) => return Ok(text(StatusCode::BAD_REQUEST, format!("{e}\n"))),
    };
    let config = state
        .config
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let known = components(&config);
    if !known.contains(&request.component) {
        return Ok(text(
            StatusCode::NOT_FOUND,
            format!(
                "no component {:?}; tap one of: {}\n",
                request.component,
                known.join(", ")
            ),
        ));
    }
    request.skipped = state.metrics.counter(
        "logferry_tap_skipped_records_total",
        "Records a tap (GET /tap) left out: over its rate, or its client reading too slowly.",
        &[("component", &request.component)],
    );
    let component = request.component.clone();
    let tap = match taps.attach_charged(request, &state.memory, max_taps) {
        Ok(tap) => tap,
        Err(AttachError::TooMany { .. }) => return Err(Refusal::TooManyTaps),
    };
    tracing::info!(%component, "tap attached");
    let body = TapBody {
        component,
        tap,
        tick: tokio::time::interval(SKIPPED_EVERY),
    };
    let mut r = Response::new(body.boxed());
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(r)
}

fn text(status: StatusCode, body: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// The source, filter and sink names of the running configuration text.
fn components(config: &str) -> Vec<String> {
    let Ok(tree) = config.parse::<toml::Table>() else {
        return Vec::new();
    };
    ["sources", "filters", "sinks"]
        .iter()
        .filter_map(|s| tree.get(*s).and_then(|v| v.as_table()))
        .flat_map(|t| t.keys().cloned())
        .collect()
}

/// `component=NAME&tag=PATTERN&rate=N`.
fn parse_query(query: &str) -> Result<TapRequest, String> {
    let mut request = TapRequest {
        component: String::new(),
        tag: None,
        rate: Some(DEFAULT_RATE),
        capacity: DEFAULT_CAPACITY,
        skipped: Counter::detached(),
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value).ok_or_else(|| format!("{key}: bad %-encoding"))?;
        match key {
            "component" => request.component = value,
            "tag" => request.tag = Some(TagPattern::new(&value).map_err(|e| format!("tag: {e}"))?),
            "rate" => {
                let rate: u32 = value
                    .parse()
                    .ok()
                    .filter(|r| (1..=MAX_RATE).contains(r))
                    .ok_or_else(|| {
                        format!("rate: a number of records a second, 1 to {MAX_RATE}")
                    })?;
                request.rate = Some(rate);
            }
            other => {
                return Err(format!(
                    "unknown parameter {other:?} (component, tag, rate)"
                ))
            }
        }
    }
    if request.component.is_empty() {
        return Err("give the component to tap: /tap?component=NAME".into());
    }
    Ok(request)
}

/// `%XX` and `+` decoded; `None` for a bad escape or text that is not
/// UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The streamed answer: records as they are taken, and a skipped notice
/// each second some were left out. Dropped (the client gone), it detaches
/// its tap.
struct TapBody {
    component: String,
    tap: TapHandle,
    tick: tokio::time::Interval,
}

impl Body for TapBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let mut chunk = Vec::new();
        for _ in 0..RECORDS_PER_CHUNK {
            if chunk.len() >= CHUNK_BYTES {
                break;
            }
            match this.tap.poll_recv(cx) {
                Poll::Ready(Some(record)) => chunk.extend_from_slice(&record.ndjson()),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => break,
            }
        }
        while this.tick.poll_tick(cx).is_ready() {
            let n = this.tap.take_skipped();
            if n > 0 {
                let mut line = b"{\"component\":".to_vec();
                crate::format::json::write_str(&mut line, this.component.as_bytes());
                line.extend_from_slice(format!(",\"skipped\":{n}}}\n").as_bytes());
                chunk.extend_from_slice(&line);
            }
        }
        if chunk.is_empty() {
            return Poll::Pending;
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(chunk)))))
    }
}

impl Drop for TapBody {
    fn drop(&mut self) {
        tracing::info!(component = %self.component, "tap detached");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_names_a_component_a_tag_and_a_rate() {
        let r = parse_query("component=my%20filter&tag=app.%2A&rate=5").unwrap();
        assert_eq!(r.component, "my filter");
        assert!(r.tag.unwrap().matches("app.x"));
        assert_eq!(r.rate, Some(5));
        assert_eq!(parse_query("component=x").unwrap().rate, Some(DEFAULT_RATE));
        assert!(parse_query("").is_err());
        assert!(parse_query("component=x&rate=0").is_err());
        assert!(parse_query("component=x&rate=99999999").is_err());
        assert!(parse_query("component=x&colour=1").is_err());
        assert!(parse_query("component=%zz").is_err());
    }

    #[test]
    fn components_are_read_from_the_running_configuration() {
        let c = components(
            "[sources.a]\ntype = \"x\"\n[filters.f]\ntype = \"grep\"\n[sinks.s]\ntype = \"null\"\n",
        );
        assert_eq!(c, ["a", "f", "s"]);
    }
}
