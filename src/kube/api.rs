//! Requests to the API server: a list's pages, and what an answer that
//! is not 200 means for the next attempt.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;

use super::connection::{Connection, Credentials};
use super::objects::{self, DecodeError, Object, Status};
use crate::http_client::{
    percent_encode, BodyStream, Client, ClientConfig, HttpVersion, SendError,
};

/// Objects per list page.
pub const PAGE: usize = 500;
/// Largest list page read (500 pods with large annotations stay far below).
const MAX_PAGE_BYTES: usize = 64 * 1024 * 1024;

/// Why a list or a watch did not go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// No answer: connect, TLS, timeout, broken or silent connection.
    Send(SendError),
    /// 401: the token was refused.
    Unauthorized,
    /// 403: the account lacks a permission (the server's message).
    Forbidden(String),
    /// 410, or an ERROR event saying the version is too old.
    Gone,
    /// 429: the server sheds load.
    Throttled(Option<Duration>),
    /// 5xx, or an ERROR event other than 410.
    Server(u16, String),
    /// Any other status.
    Status(u16, String),
    /// A list page that cannot be read.
    Decode(DecodeError),
    /// A list page larger than [`MAX_PAGE_BYTES`].
    TooLarge,
}

/// The `kind` labels of `logferry_kubernetes_api_errors_total`.
pub const ERROR_KINDS: &[&str] = &[
    "connect",
    "tls",
    "timeout",
    "broken",
    "idle",
    "unauthorized",
    "forbidden",
    "gone",
    "throttled",
    "server",
    "decode",
    "too_large",
    "status",
];

impl ApiError {
    pub fn kind(&self) -> &'static str {
        match self {
            ApiError::Send(e) => e.kind(),
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::Gone => "gone",
            ApiError::Throttled(_) => "throttled",
            ApiError::Server(..) => "server",
            ApiError::Status(..) => "status",
            ApiError::Decode(_) => "decode",
            ApiError::TooLarge => "too_large",
        }
    }

    fn from_status(code: StatusCode, headers: &http::HeaderMap, body: &[u8]) -> ApiError {
        let message = || {
            serde_json::from_slice::<Status>(body)
                .map(|s| s.message)
                .unwrap_or_else(|_| String::from_utf8_lossy(&body[..body.len().min(200)]).into())
        };
        match code.as_u16() {
            401 => ApiError::Unauthorized,
            403 => ApiError::Forbidden(message()),
            410 => ApiError::Gone,
            429 => ApiError::Throttled(crate::http_client::retry_after(headers)),
            c @ 500..=599 => ApiError::Server(c, message()),
            c => ApiError::Status(c, message()),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Send(e) => write!(f, "{e}"),
            ApiError::Unauthorized => f.write_str("401 Unauthorized: the token was refused"),
            ApiError::Forbidden(m) => write!(f, "403 Forbidden: {m}"),
            ApiError::Gone => f.write_str("410 Gone: the resourceVersion is too old"),
            ApiError::Throttled(_) => f.write_str("429 Too Many Requests"),
            ApiError::Server(c, m) | ApiError::Status(c, m) => write!(f, "{c}: {m}"),
            ApiError::Decode(e) => write!(f, "cannot read the list: {e}"),
            ApiError::TooLarge => write!(f, "a list page is larger than {MAX_PAGE_BYTES} bytes"),
        }
    }
}

/// One kind of object watched: where it is listed and where it goes.
#[derive(Clone, Debug)]
pub enum Resource {
    /// Pods; of one node when `Some`.
    Pods(Option<String>),
    Namespaces,
}

impl Resource {
    pub fn name(&self) -> &'static str {
        match self {
            Resource::Pods(_) => "pods",
            Resource::Namespaces => "namespaces",
        }
    }

    /// Path and the query every request of it has, ready for more
    /// parameters (it ends in `?` or `&`).
    pub fn path(&self) -> String {
        match self {
            Resource::Pods(Some(node)) => format!(
                "/api/v1/pods?fieldSelector={}&",
                percent_encode(&format!("spec.nodeName={node}"))
            ),
            Resource::Pods(None) => "/api/v1/pods?".into(),
            Resource::Namespaces => "/api/v1/namespaces?".into(),
        }
    }

    /// The permission a 403 says is missing.
    pub fn permission(&self) -> &'static str {
        match self {
            Resource::Pods(_) => {
                "the service account needs list and watch on pods (a ClusterRole rule: \
                 apiGroups [\"\"], resources [\"pods\"], verbs [\"get\", \"list\", \"watch\"])"
            }
            Resource::Namespaces => {
                "the service account needs list and watch on namespaces (a ClusterRole rule: \
                 apiGroups [\"\"], resources [\"namespaces\"], verbs [\"get\", \"list\", \"watch\"])"
            }
        }
    }
}

/// Requests to the API server.
pub struct Api {
    /// Connections to the API server's origin.
    client: Client,
    /// The server URL's path, before every API path (a proxy's prefix).
    prefix: String,
    /// The bearer token of every request.
    credentials: Credentials,
}

/// Longest wait for a connection and an answer's head (or a whole list
/// page).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

impl Api {
    pub fn new(connection: Connection) -> Result<Api, String> {
        let config = ClientConfig {
            base: connection.origin,
            // one connection per watch: a stalled one stalls nothing else
            version: HttpVersion::Http1,
            tls: connection
                .server_name
                .map(|name| crate::tls::ClientTlsConfig {
                    server_name: Some(name),
                    ..Default::default()
                }),
            connect_timeout: Duration::from_secs(10),
            request_timeout: REQUEST_TIMEOUT,
            max_response_bytes: MAX_PAGE_BYTES,
        };
        let client = match connection.tls {
            Some(tls) => Client::with_rustls(config, tls),
            None => Client::new(config),
        }
        .map_err(|e| format!("kubernetes: {e}"))?;
        Ok(Api {
            client,
            prefix: connection.prefix,
            credentials: connection.credentials,
        })
    }

    fn request(&self, path_and_query: &str) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = format!("{}{path_and_query}", self.prefix)
            .parse()
            .unwrap_or_else(|_| http::Uri::from_static("/"));
        let headers = request.headers_mut();
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        headers.insert(
            http::header::USER_AGENT,
            http::HeaderValue::from_static(concat!("logferry/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(token) = self.credentials.header() {
            headers.insert(http::header::AUTHORIZATION, token);
        }
        request
    }

    /// After a 401: the token file is read again for the next request.
    pub fn token_refused(&self) {
        self.credentials.refused();
    }

    /// Starts a watch of `resource` from `version`, for `seconds`; its
    /// body is read chunk by chunk.
    pub async fn watch(
        &self,
        resource: &Resource,
        version: &str,
        seconds: u64,
    ) -> Result<BodyStream, ApiError> {
        let query = format!(
            "{}watch=1&allowWatchBookmarks=true&resourceVersion={}&timeoutSeconds={seconds}",
            resource.path(),
            percent_encode(version)
        );
        // the server sends a bookmark every minute or so; nothing for a
        // minute past the watch's own end means the connection is dead
        let idle = Duration::from_secs(seconds + 60);
        let mut answer = self
            .client
            .send_streaming(self.request(&query), idle)
            .await
            .map_err(ApiError::Send)?;
        if answer.status != StatusCode::OK {
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = answer.body.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() > 64 * 1024 {
                    break;
                }
            }
            return Err(ApiError::from_status(answer.status, &answer.headers, &body));
        }
        Ok(answer.body)
    }

    /// Every page (of `page` objects) of a list: the objects and the
    /// list's version.
    pub async fn list<T: Object>(
        &self,
        resource: &Resource,
        page: usize,
    ) -> Result<(Vec<(T, String)>, String), ApiError> {
        let mut items = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut query = format!("{}limit={page}", resource.path());
            if let Some(token) = &next {
                query.push_str("&continue=");
                query.push_str(&percent_encode(token));
            }
            let answer = self
                .client
                .send(self.request(&query))
                .await
                .map_err(ApiError::Send)?;
            if answer.status != StatusCode::OK {
                return Err(ApiError::from_status(
                    answer.status,
                    &answer.headers,
                    &answer.body,
                ));
            }
            if !answer.complete {
                return Err(ApiError::TooLarge);
            }
            let page = objects::decode_page::<T>(&answer.body).map_err(ApiError::Decode)?;
            items.extend(page.items);
            match page.next {
                Some(token) => next = Some(token),
                None => return Ok((items, page.resource_version)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_classified_for_retry_and_logs() {
        let h = http::HeaderMap::new();
        let forbidden = br#"{"kind":"Status","status":"Failure","message":"pods is forbidden: User \"log-agent\" cannot list resource \"pods\" in API group \"\" at the cluster scope","reason":"Forbidden","code":403}"#;
        let e = ApiError::from_status(StatusCode::FORBIDDEN, &h, forbidden);
        assert!(
            matches!(&e, ApiError::Forbidden(m) if m.contains("cannot list resource")),
            "{e:?}"
        );
        for (status, kind) in [
            (StatusCode::GONE, "gone"),
            (StatusCode::UNAUTHORIZED, "unauthorized"),
            (StatusCode::TOO_MANY_REQUESTS, "throttled"),
            (StatusCode::SERVICE_UNAVAILABLE, "server"),
            (StatusCode::NOT_FOUND, "status"),
        ] {
            assert_eq!(ApiError::from_status(status, &h, b"x").kind(), kind);
            assert!(ERROR_KINDS.contains(&kind));
        }
        assert_eq!(
            Resource::Pods(Some("node-a".into())).path(),
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&"
        );
    }
}
