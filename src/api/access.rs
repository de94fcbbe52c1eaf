//! Who may use the `[api]` endpoint.
//!
//! - Every request must name this endpoint in `Host`: the address the
//!   connection came in on (with or without a port), `localhost` or a
//!   loopback address, the host name `[api].address` gives, or a name in
//!   `[api].allowed_hosts`; anything else is refused with 421. A web page
//!   whose name an attacker points at 127.0.0.1 (DNS rebinding) sends its
//!   own name, so it reads neither `/config` nor `/tap`. A request without
//!   `Host` (HTTP/1.0 tools) is no browser's and goes on.
//! - `GET /metrics`, `/health` and `/ready` are open to whoever reaches the
//!   address: monitoring reads them.
//! - With a token configured (`token_file`, `token_env` or `token`),
//!   every request that changes something (any method but `GET`, today
//!   `POST /reload`), `GET /config` (it shows the whole topology) and
//!   `GET /tap` (it shows the records themselves) need
//!   `Authorization: Bearer <token>`; otherwise 401 with
//!   `WWW-Authenticate: Bearer`. The token is compared in constant time.
//! - Whatever the token, a request that changes something is refused if a
//!   browser could have sent it from another site: an `Origin` that is not
//!   the API's own, a `Sec-Fetch-Site` other than `same-origin` or `none`
//!   (403), or one of the content types a cross-site form may post without
//!   asking first (415). Tools (`curl -X POST`) send none of these.
//!
//! Every refusal is counted in `logferry_api_refused_requests_total{reason}`
//! and logged (rate-limited per reason).

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use hyper::header::{HeaderMap, AUTHORIZATION, CONTENT_TYPE, HOST, ORIGIN};
use hyper::{Method, StatusCode};
use sha2::{Digest, Sha256};

use super::ApiConfig;
use crate::config::Secret;
use crate::metrics::{Counter, Registry};
use crate::telemetry::RateLimitedLog;

/// The largest token file read: a token is a line, not a document (and a
/// FIFO or a device is never read).
const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// The token `[api]` configures, read now: the content of `token_file`
/// (trimmed), the value of the variable `token_env`, or `token`. `None`
/// when none is set. Messages start with the key they are about and never
/// quote the token.
pub fn resolve_token(c: &ApiConfig) -> Result<Option<Secret>, String> {
    let set = [
        c.token.is_some(),
        c.token_file.is_some(),
        c.token_env.is_some(),
    ];
    if set.iter().filter(|s| **s).count() > 1 {
        return Err(
            "token, token_file and token_env: set only one of them (where the token comes from)"
                .into(),
        );
    }
    let (token, key) = if let Some(path) = &c.token_file {
        (read_token_file(path)?, "token_file")
    } else if let Some(var) = &c.token_env {
        let value = std::env::var(var).map_err(|e| match e {
            std::env::VarError::NotPresent => {
                format!("token_env: environment variable {var} is not set")
            }
            std::env::VarError::NotUnicode(_) => {
                format!("token_env: environment variable {var} is not valid UTF-8")
            }
        })?;
        (value.trim().to_string(), "token_env")
    } else if let Some(t) = &c.token {
        (t.expose().to_string(), "token")
    } else {
        return Ok(None);
    };
    if token.is_empty() {
        return Err(format!("{key}: the token is empty"));
    }
    // it travels in a header: only visible ASCII and inner spaces can
    if !token.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
        return Err(format!(
            "{key}: the token may hold only printable ASCII characters (it is sent in an HTTP header)"
        ));
    }
    Ok(Some(Secret::new(token)))
}

fn read_token_file(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| format!("token_file: cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("token_file: {shown} is not a regular file"));
    }
    if meta.len() > MAX_TOKEN_FILE_BYTES {
        return Err(format!(
            "token_file: {shown} is larger than {MAX_TOKEN_FILE_BYTES} bytes; it should hold one token"
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("token_file: cannot read {shown}: {e}"))?;
    Ok(text.trim().to_string())
}

/// Whether `address` (`host:port`) listens on loopback only. A name is
/// resolved; one that does not resolve, or resolves to any other address,
/// is not loopback.
pub fn is_loopback(address: &str) -> bool {
    use std::net::ToSocketAddrs;
    if let Ok(a) = address.parse::<SocketAddr>() {
        return a.ip().is_loopback();
    }
    let Some((host, port)) = address.rsplit_once(':') else {
        return false;
    };
    let host = host.trim_matches(|c| c == '[' || c == ']');
    let Ok(port) = port.parse::<u16>() else {
        return false;
    };
    match (host, port).to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// The warning for an `[api]` that anyone on the network may use, if it
/// is one: a non-loopback address and no token.
pub fn open_to_network(c: &ApiConfig) -> Option<String> {
    let no_token = c.token.is_none() && c.token_file.is_none() && c.token_env.is_none();
    (no_token && !is_loopback(&c.address)).then(|| {
        format!(
            "[api].address {:?} is not a loopback address and no token is set: anyone who can reach it can read /config and reload the configuration; set token_file or token_env (see \"Who can reach the API\" in docs/operations.md)",
            c.address
        )
    })
}

/// Why a request was refused; each is a `reason` label of
/// `logferry_api_refused_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A `Host` that is not this endpoint's.
    Host,
    /// `Sec-Fetch-Site` says a page of another origin sent it.
    CrossSite,
    /// An `Origin` that is not the API's own.
    Origin,
    /// A content type a cross-site form may post (`text/plain`, …).
    ContentType,
    /// A token is configured and the request carries none.
    NoToken,
    /// A token is configured and the request carries another.
    WrongToken,
    /// `[api].max_connections` connections are open already.
    TooManyConnections,
    /// `[api].max_taps` taps are attached already.
    TooManyTaps,
}

const REFUSALS: [Refusal; 8] = [
    Refusal::Host,
    Refusal::CrossSite,
    Refusal::Origin,
    Refusal::ContentType,
    Refusal::NoToken,
    Refusal::WrongToken,
    Refusal::TooManyConnections,
    Refusal::TooManyTaps,
];

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Host => "host",
            Refusal::CrossSite => "cross_site",
            Refusal::Origin => "origin",
            Refusal::ContentType => "content_type",
            Refusal::NoToken => "no_token",
            Refusal::WrongToken => "wrong_token",
            Refusal::TooManyConnections => "too_many_connections",
            Refusal::TooManyTaps => "too_many_taps",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Refusal::Host => StatusCode::MISDIRECTED_REQUEST,
            Refusal::CrossSite | Refusal::Origin => StatusCode::FORBIDDEN,
            Refusal::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Refusal::NoToken | Refusal::WrongToken => StatusCode::UNAUTHORIZED,
            Refusal::TooManyConnections | Refusal::TooManyTaps => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The answer's body.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Host => {
                "refused: the Host header does not name this API (its address, localhost, or a name in [api] allowed_hosts); add the name clients use to allowed_hosts\n"
            }
            Refusal::CrossSite | Refusal::Origin => {
                "refused: this request comes from a web page of another origin\n"
            }
            Refusal::ContentType => {
                "refused: a form content type (text/plain, application/x-www-form-urlencoded, multipart/form-data) is not accepted here; send no body or application/json\n"
            }
            Refusal::NoToken => "a token is required: send Authorization: Bearer <token>\n",
            Refusal::WrongToken => "the token is not the one configured\n",
            Refusal::TooManyConnections => {
                "too many connections to the API ([api] max_connections); try again later\n"
            }
            Refusal::TooManyTaps => {
                "too many taps attached ([api] max_taps); end one (its logferry tap) or raise max_taps\n"
            }
        }
    }
}

/// The access rules of one endpoint: its token (if any) and what refusals
/// are counted in.
pub struct Access {
    /// SHA-256 of the token: compared digest to digest, so the time taken
    /// says nothing about the token, not even its length.
    token: Option<[u8; 32]>,
    /// The host name `[api].address` was given with (not an IP address),
    /// also accepted in `Origin` and `Host`.
    host_name: Option<String>,
    /// `[api].allowed_hosts`, lowercased: more names accepted in `Host`.
    allowed_hosts: Vec<String>,
    /// One per [`REFUSALS`], in that order.
    refused: Vec<Counter>,
    log: RateLimitedLog,
}

impl Access {
    pub fn new(
        token: Option<&Secret>,
        address: &str,
        allowed_hosts: &[String],
        metrics: &Registry,
    ) -> Access {
        let host = address.rsplit_once(':').map_or(address, |(h, _)| h);
        let host_name = (host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<IpAddr>())
        .is_err()
        .then(|| host.to_ascii_lowercase());
        Access {
            token: token.map(|t| digest(t.expose().as_bytes())),
            host_name,
            allowed_hosts: allowed_hosts
                .iter()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
                .collect(),
            refused: REFUSALS
                .iter()
                .map(|r| {
                    metrics.counter(
                        "logferry_api_refused_requests_total",
                        "Requests the API refused, by reason: host (a Host that is not the API's), cross_site, origin, content_type (a request a web page of another site could send), no_token, wrong_token, too_many_connections, too_many_taps.",
                        &[("reason", r.reason())],
                    )
                })
                .collect(),
            log: RateLimitedLog::default(),
        }
    }

    /// Whether a request may go on. `local`: the address the connection
    /// was accepted on (the API's own origin is `http://` and it).
    pub fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        local: SocketAddr,
    ) -> Result<(), Refusal> {
        if let Some(host) = headers.get(HOST) {
            if !self.own_host(host.as_bytes(), local) {
                return Err(Refusal::Host);
            }
        }
        let mutating = method != Method::GET;
        if mutating {
            browser_check(headers, local, self.host_name.as_deref())?;
        }
        // a tap shows records as they pass: as private as the topology
        if mutating || path == "/config" || path == "/tap" {
            if let Some(want) = &self.token {
                token_check(headers, want)?;
            }
        }
        Ok(())
    }

    /// Whether `host` (a `Host` header) names this endpoint: see the
    /// module docs. The port is not compared: a port forward
    /// (`ssh -L`, `kubectl port-forward`) reaches the API on another one.
    fn own_host(&self, host: &[u8], local: SocketAddr) -> bool {
        let Some(name) = std::str::from_utf8(host).ok().and_then(host_name) else {
            return false;
        };
        if self.allowed_hosts.iter().any(|a| a == "*" || *a == name) {
            return true;
        }
        match name.parse::<IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip == local.ip(),
            Err(_) => name == "localhost" || self.host_name.as_deref() == Some(name.as_str()),
        }
    }

    /// Counts and logs a refusal of a connection from `peer`, before any
    /// request was read.
    pub fn refused_connection(&self, why: Refusal, peer: SocketAddr) {
        if let Some(i) = REFUSALS.iter().position(|r| *r == why) {
            self.refused[i].inc();
        }
        crate::warn_limited!(self.log, why.reason(), reason = why.reason(), %peer,
            "api connection refused");
    }

    /// Counts and logs a refusal of a request from `peer`.
    pub fn refused(&self, why: Refusal, method: &Method, path: &str, peer: SocketAddr) {
        if let Some(i) = REFUSALS.iter().position(|r| *r == why) {
            self.refused[i].inc();
        }
        crate::warn_limited!(self.log, why.reason(), reason = why.reason(), %method, path,
            %peer, "api request refused");
    }
}

/// The host of a `Host` value (`name`, `name:port`, `[::1]:port`),
/// lowercased and without a trailing dot; `None` if it is not one.
fn host_name(value: &str) -> Option<String> {
    let value = value.trim();
    let host = if let Some(v6) = value.strip_prefix('[') {
        let (ip, rest) = v6.split_once(']')?;
        if !(rest.is_empty() || rest.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        ip
    } else {
        match value.split_once(':') {
            Some((h, port)) if is_port(port) => h,
            Some(_) => return None,
            None => value,
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

/// Checks `[api].allowed_hosts`: host names (or IP addresses), without a
/// scheme, port or path, or `"*"`. Messages start with the key.
pub fn check_allowed_hosts(hosts: &[String]) -> Result<(), String> {
    for h in hosts {
        let plain = h.trim_end_matches('.');
        let ok = h == "*"
            || plain.parse::<IpAddr>().is_ok()
            || (!plain.is_empty()
                && plain
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_'));
        if !ok {
            return Err(format!(
                "allowed_hosts: {h:?} is not a host name: give names as clients write them in URLs, without scheme, port or path (\"logs.internal\"), or \"*\" for any"
            ));
        }
    }
    Ok(())
}

/// The checks against requests a web page of another site could send.
fn browser_check(
    headers: &HeaderMap,
    local: SocketAddr,
    host_name: Option<&str>,
) -> Result<(), Refusal> {
    // `same-site` too: a page on another port of this host is same-site
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.as_bytes();
        if !site.eq_ignore_ascii_case(b"same-origin") && !site.eq_ignore_ascii_case(b"none") {
            return Err(Refusal::CrossSite);
        }
    }
    if let Some(origin) = headers.get(ORIGIN) {
        if !own_origin(origin.as_bytes(), local, host_name) {
            return Err(Refusal::Origin);
        }
    }
    if let Some(ct) = headers.get(CONTENT_TYPE) {
        if form_content_type(ct.as_bytes()) {
            return Err(Refusal::ContentType);
        }
    }
    Ok(())
}

/// Whether `origin` is this endpoint's own: `http://` and the address the
/// connection came in on (`http://127.0.0.1:8686`, `http://[::1]:8686`),
/// `localhost` on a loopback address, or the host name `[api].address`
/// names, with the same port. Anything else, `null` included, is not.
pub fn own_origin(origin: &[u8], local: SocketAddr, host_name: Option<&str>) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let origin = origin.trim().to_ascii_lowercase();
    let Some(authority) = origin.strip_prefix("http://") else {
        return false;
    };
    let port = local.port();
    let mut own = vec![local.to_string()];
    if local.ip().is_loopback() {
        own.push(format!("localhost:{port}"));
    }
    if let Some(name) = host_name {
        own.push(format!("{name}:{port}"));
    }
    own.iter().any(|o| *o == authority)
}

/// The content types an HTML form may post to another site without the
/// browser asking first (a CORS "simple" request).
fn form_content_type(value: &[u8]) -> bool {
    let Ok(value) = std::str::from_utf8(value) else {
        // not text: no browser sent that, and nothing here reads a body
        return false;
    };
    let media = value.split(';').next().unwrap_or("").trim();
    [
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "text/plain",
    ]
    .iter()
    .any(|m| media.eq_ignore_ascii_case(m))
}

/// Whether `Authorization: Bearer <token>` carries the token whose digest
/// is `want`.
fn token_check(headers: &HeaderMap, want: &[u8; 32]) -> Result<(), Refusal> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Err(Refusal::NoToken);
    };
    let value = value.as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return Err(Refusal::NoToken);
    }
    let given = value[scheme.len()..].trim_ascii();
    if constant_time_eq(&digest(given), want) {
        Ok(())
    } else {
        Err(Refusal::WrongToken)
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Compares two digests in a time that does not depend on where they
/// differ: every byte is looked at, and the verdict is read once at the
/// end.
pub fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // keep the compiler from turning the loop into an early exit
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn local() -> SocketAddr {
        "127.0.0.1:8686".parse().unwrap()
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn api(extra: &str) -> ApiConfig {
        toml::from_str(&format!("address = \"127.0.0.1:0\"\n{extra}")).unwrap()
    }

    #[test]
    fn digests_compare_equal_only_when_equal() {
        let a = digest(b"token-one");
        assert!(constant_time_eq(&a, &digest(b"token-one")));
        assert!(!constant_time_eq(&a, &digest(b"token-two")));
        assert!(!constant_time_eq(&a, &digest(b"token-on")));
        assert!(!constant_time_eq(&a, &digest(b"")));
        // a difference in the last byte alone is seen
        let mut b = a;
        b[31] ^= 1;
        assert!(!constant_time_eq(&a, &b));
        let mut c = a;
        c[0] ^= 0x80;
        assert!(!constant_time_eq(&a, &c));
    }

    #[test]
    fn only_the_apis_own_origin_is_its_own() {
        let l = local();
        assert!(own_origin(b"http://127.0.0.1:8686", l, None));
        assert!(own_origin(b"http://localhost:8686", l, None));
        assert!(own_origin(b"HTTP://LOCALHOST:8686", l, None));
        for other in [
            "http://evil.example",
            "http://evil.example:8686",
            "http://127.0.0.1:8080",
            "http://127.0.0.1",
            "https://127.0.0.1:8686",
            "http://127.0.0.1:8686.evil.example",
            "http://localhost:8686@evil.example",
            "null",
            "",
        ] {
            assert!(!own_origin(other.as_bytes(), l, None), "{other}");
        }
        let v6: SocketAddr = "[::1]:9000".parse().unwrap();
        assert!(own_origin(b"http://[::1]:9000", v6, None));
        assert!(own_origin(b"http://localhost:9000", v6, None));
        // listening on every address: the address the connection came in
        // on, and a host name the configuration gives
        let lan: SocketAddr = "192.0.2.7:8686".parse().unwrap();
        assert!(own_origin(b"http://192.0.2.7:8686", lan, None));
        assert!(!own_origin(b"http://localhost:8686", lan, None));
        assert!(own_origin(
            b"http://logs.internal:8686",
            lan,
            Some("logs.internal")
        ));
    }

    #[test]
    fn browser_checks_refuse_what_another_site_can_send() {
        let l = local();
        let ok = |h: &[(&'static str, &str)]| browser_check(&headers(h), l, None);
        assert_eq!(ok(&[]), Ok(()));
        assert_eq!(ok(&[("content-type", "application/json")]), Ok(()));
        assert_eq!(ok(&[("origin", "http://127.0.0.1:8686")]), Ok(()));
        assert_eq!(ok(&[("sec-fetch-site", "same-origin")]), Ok(()));
        assert_eq!(ok(&[("sec-fetch-site", "none")]), Ok(()));
        assert_eq!(
            ok(&[("origin", "http://evil.example")]),
            Err(Refusal::Origin)
        );
        assert_eq!(ok(&[("origin", "null")]), Err(Refusal::Origin));
        assert_eq!(
            ok(&[("sec-fetch-site", "cross-site")]),
            Err(Refusal::CrossSite)
        );
        assert_eq!(
            ok(&[("sec-fetch-site", "same-site")]),
            Err(Refusal::CrossSite)
        );
        for ct in [
            "text/plain",
            "Text/Plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            assert_eq!(
                ok(&[("content-type", ct)]),
                Err(Refusal::ContentType),
                "{ct}"
            );
        }
    }

    #[test]
    fn only_a_host_that_names_this_endpoint_is_served() {
        let m = Registry::new();
        let allowed = ["logs.internal".to_string(), "Other.Example.".to_string()];
        let a = Access::new(None, "api.local:8686", &allowed, &m);
        let l = local();
        let get = |host: &str| a.check(&Method::GET, "/config", &headers(&[("host", host)]), l);
        for ok in [
            "127.0.0.1:8686",
            "127.0.0.1",
            "127.0.0.1:9000",
            "localhost",
            "LOCALHOST:8686",
            "localhost.:8686",
            "[::1]:8686",
            "[::1]",
            "127.0.0.2",
            "api.local:8686",
            "logs.internal",
            "logs.internal:8686",
            "other.example",
        ] {
            assert_eq!(get(ok), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8686",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "192.0.2.9:8686",
            "logs.internal.evil",
            "",
            "localhost:x",
            "[::1",
            "a b",
        ] {
            assert_eq!(get(bad), Err(Refusal::Host), "{bad}");
        }
        // without Host: not a browser's request
        assert_eq!(a.check(&Method::GET, "/tap", &HeaderMap::new(), l), Ok(()));
        // the address the connection came in on, when listening on all
        let lan: SocketAddr = "192.0.2.7:8686".parse().unwrap();
        let h = headers(&[("host", "192.0.2.7:8686")]);
        assert_eq!(a.check(&Method::GET, "/metrics", &h, lan), Ok(()));
        let any = Access::new(None, "0.0.0.0:0", &["*".to_string()], &m);
        let h = headers(&[("host", "anything.example")]);
        assert_eq!(any.check(&Method::GET, "/config", &h, lan), Ok(()));
        assert!(check_allowed_hosts(&allowed).is_ok());
        assert!(check_allowed_hosts(&["::1".into(), "*".into(), "10.0.0.1".into()]).is_ok());
        for bad in ["http://x", "x:8686", "x/y", ""] {
            let e = check_allowed_hosts(&[bad.to_string()]).unwrap_err();
            assert!(e.starts_with("allowed_hosts"), "{e}");
        }
    }

    #[test]
    fn the_token_is_needed_to_change_things_and_to_read_config() {
        let m = Registry::new();
        let secret = Secret::new("s3cret-token");
        let a = Access::new(Some(&secret), "127.0.0.1:0", &[], &m);
        let l = local();
        let post = |h: &[(&'static str, &str)]| a.check(&Method::POST, "/reload", &headers(h), l);
        assert_eq!(post(&[]), Err(Refusal::NoToken));
        assert_eq!(
            post(&[("authorization", "Basic czNjcmV0LXRva2Vu")]),
            Err(Refusal::NoToken)
        );
        assert_eq!(
            post(&[("authorization", "Bearer s3cret-toke")]),
            Err(Refusal::WrongToken)
        );
        assert_eq!(post(&[("authorization", "Bearer s3cret-token")]), Ok(()));
        assert_eq!(post(&[("authorization", "bearer  s3cret-token ")]), Ok(()));
        // the right token does not make a cross-site request acceptable
        assert_eq!(
            post(&[
                ("authorization", "Bearer s3cret-token"),
                ("origin", "http://evil.example")
            ]),
            Err(Refusal::Origin)
        );
        let get = |path| a.check(&Method::GET, path, &HeaderMap::new(), l);
        assert_eq!(get("/config"), Err(Refusal::NoToken));
        // a tap shows the records themselves
        assert_eq!(get("/tap"), Err(Refusal::NoToken));
        for open in ["/metrics", "/health", "/ready"] {
            assert_eq!(get(open), Ok(()), "{open}");
        }
        // without a token: only the browser checks
        let open = Access::new(None, "127.0.0.1:0", &[], &m);
        assert_eq!(
            open.check(&Method::POST, "/reload", &HeaderMap::new(), l),
            Ok(())
        );
        assert_eq!(
            open.check(&Method::GET, "/config", &HeaderMap::new(), l),
            Ok(())
        );
        a.refused(Refusal::WrongToken, &Method::POST, "/reload", l);
        assert_eq!(
            m.value(
                "logferry_api_refused_requests_total",
                &[("reason", "wrong_token")]
            ),
            1
        );
    }

    #[test]
    fn the_token_comes_from_one_place_and_is_never_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  from-the-file\n").unwrap();
        let c = api(&format!("token_file = {:?}", file.display().to_string()));
        assert_eq!(
            resolve_token(&c).unwrap().unwrap().expose(),
            "from-the-file"
        );
        std::fs::write(&file, "\n").unwrap();
        let e = resolve_token(&c).unwrap_err();
        assert!(e.starts_with("token_file") && e.contains("empty"), "{e}");
        let e = resolve_token(&api("token_file = \"/nonexistent/token\"")).unwrap_err();
        assert!(e.starts_with("token_file: cannot read"), "{e}");
        let e = resolve_token(&api(&format!(
            "token_file = {:?}",
            dir.path().display().to_string()
        )))
        .unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");

        std::env::set_var("LF_ACCESS_TEST_TOKEN", "from-the-env");
        let c = api("token_env = \"LF_ACCESS_TEST_TOKEN\"");
        assert_eq!(resolve_token(&c).unwrap().unwrap().expose(), "from-the-env");
        let e = resolve_token(&api("token_env = \"LF_ACCESS_TEST_UNSET\"")).unwrap_err();
        assert!(e.contains("LF_ACCESS_TEST_UNSET is not set"), "{e}");

        let c = api("token = \"literal-token\"");
        assert_eq!(
            resolve_token(&c).unwrap().unwrap().expose(),
            "literal-token"
        );
        assert!(!format!("{c:?}").contains("literal-token"));
        let e = resolve_token(&api("token = \"bad\\ntoken\"")).unwrap_err();
        assert!(e.contains("printable ASCII") && !e.contains("bad"), "{e}");
        let e = resolve_token(&api("token = \"a\"\ntoken_env = \"X\"")).unwrap_err();
        assert!(e.contains("only one"), "{e}");
        assert_eq!(resolve_token(&api("")).unwrap(), None);
    }

    #[test]
    fn an_address_beyond_loopback_without_a_token_is_warned_about() {
        for local in [
            "127.0.0.1:8686",
            "[::1]:8686",
            "localhost:8686",
            "127.0.0.2:0",
        ] {
            assert!(is_loopback(local), "{local}");
        }
        for open in ["0.0.0.0:8686", "[::]:8686", "192.0.2.7:8686"] {
            assert!(!is_loopback(open), "{open}");
        }
        let open: ApiConfig = toml::from_str("address = \"0.0.0.0:8686\"").unwrap();
        let w = open_to_network(&open).expect("warned");
        assert!(
            w.contains("0.0.0.0:8686") && w.contains("token_file"),
            "{w}"
        );
        let closed: ApiConfig =
            toml::from_str("address = \"0.0.0.0:8686\"\ntoken_env = \"X\"").unwrap();
        assert_eq!(open_to_network(&closed), None);
        let local: ApiConfig = toml::from_str("address = \"127.0.0.1:8686\"").unwrap();
        assert_eq!(open_to_network(&local), None);
    }
}
