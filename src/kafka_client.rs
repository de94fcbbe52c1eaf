//! What the Kafka sink and source share as librdkafka clients: the
//! properties their settings become (brokers, `tls`, SASL through
//! `librdkafka_options`), and the callback that logs and counts the errors
//! librdkafka reports outside any one message (a refused TLS handshake, a
//! failed authentication, an unreachable broker), and the count of brokers
//! a client is connected to, read from librdkafka's statistics.

use std::collections::BTreeMap;
use std::sync::Arc;

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::ClientContext;

use crate::metrics::{Counter, Gauge, Registry};
use crate::telemetry::RateLimitedLog;
use crate::tls::ClientTlsConfig;
use crate::warn_limited;

/// Checks the settings every Kafka client has: `brokers` and `tls`.
pub fn validate(brokers: &[String], tls: Option<&ClientTlsConfig>) -> Result<(), String> {
    if brokers.is_empty() || brokers.iter().any(|b| b.trim().is_empty()) {
        return Err("brokers must list at least one `host:port`".into());
    }
    if let Some(tls) = tls {
        if tls.server_name.is_some() {
            // librdkafka verifies each broker against the name it connects
            // to, which comes from the cluster's metadata, not from here
            return Err(
                "tls.server_name is not used by Kafka clients: each broker's \
                        certificate must name the address the broker advertises; remove it"
                    .into(),
            );
        }
        tls.validate()?;
    }
    Ok(())
}

/// The librdkafka properties of a client: `bootstrap.servers`, `tls` as
/// `security.protocol` and `ssl.*`, then the component's own `settings`,
/// then `librdkafka_options`; a later one wins over an earlier one.
///
/// SASL comes through `librdkafka_options`: with `sasl.mechanism` (or
/// `sasl.mechanisms`) and no `security.protocol` there, the protocol is
/// `sasl_ssl` with `tls` set and `sasl_plaintext` without.
pub fn properties<'a>(
    brokers: &[String],
    tls: Option<&ClientTlsConfig>,
    settings: impl IntoIterator<Item = (&'a str, String)>,
    options: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("bootstrap.servers".to_string(), brokers.join(","));
    if let Some(tls) = tls {
        p.insert("security.protocol".into(), "ssl".into());
        let ca = tls
            .ca_file
            .clone()
            .unwrap_or_else(|| crate::tls::SYSTEM_CA_BUNDLE.into());
        p.insert("ssl.ca.location".into(), ca.display().to_string());
        if let (Some(cert), Some(key)) = (&tls.cert_file, &tls.key_file) {
            p.insert(
                "ssl.certificate.location".into(),
                cert.display().to_string(),
            );
            p.insert("ssl.key.location".into(), key.display().to_string());
        }
        if tls.insecure_skip_verify {
            p.insert("enable.ssl.certificate.verification".into(), "false".into());
            p.insert(
                "ssl.endpoint.identification.algorithm".into(),
                "none".into(),
            );
        }
    }
    let sasl = options.contains_key("sasl.mechanism") || options.contains_key("sasl.mechanisms");
    if sasl && !options.contains_key("security.protocol") {
        let protocol = if tls.is_some() {
            "sasl_ssl"
        } else {
            "sasl_plaintext"
        };
        p.insert("security.protocol".into(), protocol.into());
    }
    for (k, v) in settings {
        p.insert(k.to_string(), v);
    }
    for (k, v) in options {
        p.insert(k.clone(), v.clone());
    }
    p
}

/// librdkafka property that turns on its statistics, from which
/// [`BrokerConnections`] counts connected brokers.
pub const STATISTICS_INTERVAL: &str = "statistics.interval.ms";

/// `statistics.interval.ms` unless the user set their own: once a second,
/// parsed on librdkafka's thread, off the produce and consume paths.
pub const DEFAULT_STATISTICS_INTERVAL_MS: &str = "1000";

/// `properties` as a librdkafka client configuration.
pub fn client_config(properties: &BTreeMap<String, String>) -> rdkafka::ClientConfig {
    let mut client = rdkafka::ClientConfig::new();
    for (k, v) in properties {
        client.set(k, v);
    }
    client
}

/// Checks every property as librdkafka does when it is set, without
/// connecting: an unknown name or a bad value fails start-up.
pub fn check(properties: &BTreeMap<String, String>) -> Result<(), String> {
    client_config(properties)
        .create_native_config()
        .map(drop)
        .map_err(|e| format!("librdkafka_options: {e}"))
}

/// The kinds of client error, each a `kind` label of
/// `logferry_kafka_client_errors_total`.
const CLIENT_ERROR_KINDS: [&str; 5] = [
    "tls",
    "authentication",
    "transport",
    "all_brokers_down",
    "other",
];

/// librdkafka's errors that belong to no message, of one component: the
/// one place that logs them (rate-limited per kind) and counts them.
#[derive(Clone)]
pub struct ClientErrors {
    component: Arc<str>,
    /// One per kind, in the order of `CLIENT_ERROR_KINDS`.
    counters: Vec<Counter>,
    log: Arc<RateLimitedLog>,
}

impl ClientErrors {
    pub fn new(r: &Registry, component: &str) -> Self {
        ClientErrors {
            component: component.into(),
            counters: CLIENT_ERROR_KINDS
                .iter()
                .map(|kind| {
                    r.counter(
                        "logferry_kafka_client_errors_total",
                        "Errors of a Kafka client outside any one message (tls, authentication, transport, all_brokers_down, other).",
                        &[("component", component), ("kind", kind)],
                    )
                })
                .collect(),
            log: Arc::new(RateLimitedLog::default()),
        }
    }

    /// Counts and logs one error librdkafka reported.
    pub fn report(&self, error: &KafkaError, reason: &str) {
        let (kind, hint) = classify(error, reason);
        if let Some(i) = CLIENT_ERROR_KINDS.iter().position(|k| *k == kind) {
            self.counters[i].inc();
        }
        warn_limited!(self.log, kind, component = %self.component, kind, error = %reason, hint,
            "kafka client error");
    }

    /// Writes one of librdkafka's own log lines to logferry's log, under
    /// the target `librdkafka` (so `LOGFERRY_LOG=info,librdkafka=debug`
    /// shows its debug lines). A `FAIL` line is debug: librdkafka reports
    /// the same failure as an error, which [`ClientErrors::report`] logs
    /// (rate-limited, with a hint) and counts.
    pub fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        let component = &*self.component;
        match level {
            _ if facility == "FAIL" => {
                tracing::debug!(target: "librdkafka", component, "librdkafka {facility} {message}")
            }
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", component, "librdkafka {facility} {message}")
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", component, "librdkafka {facility} {message}")
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", component, "librdkafka {facility} {message}")
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", component, "librdkafka {facility} {message}")
            }
        }
    }
}

/// The kind of a client error and what a user can do about it.
fn classify(error: &KafkaError, reason: &str) -> (&'static str, &'static str) {
    let code = error.rdkafka_error_code();
    // a broker on an SSL listener is named `ssl://host:port/id` in every
    // message: only what follows the name tells of TLS
    let lower = reason.to_ascii_lowercase().replace("ssl://", "");
    if code == Some(RDKafkaErrorCode::SSL) || lower.contains("ssl") || lower.contains("certificate")
    {
        return (
            "tls",
            "the TLS handshake with the broker failed: check tls.ca_file (the CA of the \
             broker's certificate), and tls.cert_file/tls.key_file if the broker requires \
             client certificates (ssl.client.auth=required)",
        );
    }
    match code {
        Some(RDKafkaErrorCode::Authentication)
        | Some(RDKafkaErrorCode::SaslAuthenticationFailed) => (
            "authentication",
            "the broker refused the credentials: check the sasl.* librdkafka_options",
        ),
        Some(RDKafkaErrorCode::BrokerTransportFailure) => (
            "transport",
            "a connection to a broker failed or was closed: check brokers, and that \
             security.protocol (tls) matches the broker's listener",
        ),
        Some(RDKafkaErrorCode::AllBrokersDown) => (
            "all_brokers_down",
            "no broker can be reached; messages wait and are retried",
        ),
        _ => ("other", ""),
    }
}

/// The brokers a client is connected to now, as a gauge: the number of
/// cluster brokers librdkafka's statistics show a connection `UP` to,
/// set at each statistics report and dropped to 0 at once when
/// librdkafka reports that all brokers are down.
///
/// A broker counts once whether the connection is its own (a real node
/// id, not a bootstrap address) or a consumer group's coordinator's:
/// librdkafka keeps that one apart, under the node id -1, and a consumer
/// without partitions to fetch may hold no other (it connects to brokers
/// only as it needs them).
#[derive(Clone)]
pub struct BrokerConnections(Gauge);

/// The part of librdkafka's statistics JSON that is read: each broker's
/// state and node id (serde skips the rest).
#[derive(serde::Deserialize)]
struct Statistics {
    #[serde(default)]
    brokers: BTreeMap<String, BrokerState>,
}

#[derive(serde::Deserialize)]
struct BrokerState {
    state: String,
    nodeid: i32,
    /// `host:port` of the broker; for the coordinator's connection, of
    /// the broker it reaches.
    #[serde(default)]
    nodename: String,
    /// `configured` (bootstrap), `learned`, `logical` (the coordinator's
    /// connection) or `internal`.
    #[serde(default)]
    source: String,
}

impl BrokerConnections {
    /// The gauge `name{component}`, or `None` when `properties` turn
    /// librdkafka's statistics off (`statistics.interval.ms = 0`): then
    /// nothing would ever update it.
    pub fn new(
        r: &Registry,
        name: &'static str,
        help: &'static str,
        component: &str,
        properties: &BTreeMap<String, String>,
    ) -> Option<Self> {
        let interval = properties
            .get(STATISTICS_INTERVAL)
            .map(|v| v.trim().parse::<u64>().unwrap_or(0))
            .unwrap_or(0);
        (interval > 0).then(|| BrokerConnections(r.gauge(name, help, &[("component", component)])))
    }

    /// Reads one statistics report (JSON) and sets the gauge; a report
    /// that cannot be read leaves it as it was.
    pub fn update(&self, statistics: &[u8]) {
        if let Ok(s) = serde_json::from_slice::<Statistics>(statistics) {
            self.0.set(connected(&s));
        }
    }

    /// librdkafka said every broker is down.
    pub fn all_down(&self) {
        self.0.set(0);
    }

    /// Passes a client error on: `AllBrokersDown` drops the gauge to 0.
    pub fn on_error(&self, error: &KafkaError) {
        if error.rdkafka_error_code() == Some(RDKafkaErrorCode::AllBrokersDown) {
            self.all_down();
        }
    }
}

/// Cluster brokers with a connection `UP`: by a node id learned from the
/// cluster, or by the group coordinator's connection, each once.
fn connected(s: &Statistics) -> u64 {
    s.brokers
        .values()
        .filter(|b| {
            b.state == "UP" && (b.nodeid >= 0 || (b.source == "logical" && !b.nodename.is_empty()))
        })
        .map(|b| b.nodename.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64
}

impl ClientContext for ClientErrors {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        ClientErrors::log(self, level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.report(&error, reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tls(cert: bool) -> ClientTlsConfig {
        ClientTlsConfig {
            ca_file: Some(PathBuf::from("/pki/ca.pem")),
            cert_file: cert.then(|| PathBuf::from("/pki/client.pem")),
            key_file: cert.then(|| PathBuf::from("/pki/client.key")),
            ..ClientTlsConfig::default()
        }
    }

    fn props(tls: Option<&ClientTlsConfig>, options: &[(&str, &str)]) -> BTreeMap<String, String> {
        let options = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        properties(
            &["b1:9093".into(), "b2:9093".into()],
            tls,
            [("linger.ms", "5".to_string())],
            &options,
        )
    }

    #[test]
    fn tls_becomes_the_ssl_properties() {
        let p = props(Some(&tls(true)), &[]);
        assert_eq!(p["bootstrap.servers"], "b1:9093,b2:9093");
        assert_eq!(p["security.protocol"], "ssl");
        assert_eq!(p["ssl.ca.location"], "/pki/ca.pem");
        assert_eq!(p["ssl.certificate.location"], "/pki/client.pem");
        assert_eq!(p["ssl.key.location"], "/pki/client.key");
        assert_eq!(p["linger.ms"], "5");
        assert!(!p.contains_key("enable.ssl.certificate.verification"));
        let p = props(Some(&tls(false)), &[]);
        assert!(!p.contains_key("ssl.certificate.location"));
        let p = props(None, &[]);
        assert!(!p.contains_key("security.protocol") && !p.contains_key("ssl.ca.location"));
        let system = props(Some(&ClientTlsConfig::default()), &[]);
        assert_eq!(system["ssl.ca.location"], crate::tls::SYSTEM_CA_BUNDLE);
        let insecure = ClientTlsConfig {
            insecure_skip_verify: true,
            ..ClientTlsConfig::default()
        };
        let p = props(Some(&insecure), &[]);
        assert_eq!(p["enable.ssl.certificate.verification"], "false");
        assert_eq!(p["ssl.endpoint.identification.algorithm"], "none");
    }

    #[test]
    fn options_win_and_sasl_picks_its_protocol() {
        let p = props(
            Some(&tls(true)),
            &[("ssl.ca.location", "/other.pem"), ("linger.ms", "50")],
        );
        assert_eq!(p["ssl.ca.location"], "/other.pem");
        assert_eq!(p["linger.ms"], "50");
        let sasl = [("sasl.mechanism", "PLAIN"), ("sasl.username", "u")];
        assert_eq!(
            props(Some(&tls(false)), &sasl)["security.protocol"],
            "sasl_ssl"
        );
        assert_eq!(props(None, &sasl)["security.protocol"], "sasl_plaintext");
        let explicit = [("sasl.mechanism", "PLAIN"), ("security.protocol", "ssl")];
        assert_eq!(props(None, &explicit)["security.protocol"], "ssl");
        check(&props(Some(&tls(true)), &sasl)).unwrap();
    }

    #[test]
    fn bad_brokers_and_tls_are_errors_naming_the_setting() {
        assert!(validate(&[], None).unwrap_err().contains("brokers"));
        assert!(validate(&[" ".into()], None)
            .unwrap_err()
            .contains("brokers"));
        let named = ClientTlsConfig {
            server_name: Some("kafka".into()),
            ..ClientTlsConfig::default()
        };
        let e = validate(&["b:1".into()], Some(&named)).unwrap_err();
        assert!(e.contains("tls.server_name"), "{e}");
        let e = validate(&["b:1".into()], Some(&tls(true))).unwrap_err();
        assert!(
            e.contains("tls.ca_file") && e.contains("/pki/ca.pem"),
            "{e}"
        );
        let mut options = BTreeMap::new();
        options.insert("no.such.option".to_string(), "1".to_string());
        let e = check(&properties(&["b:1".into()], None, [], &options)).unwrap_err();
        assert!(
            e.contains("librdkafka_options") && e.contains("no.such.option"),
            "{e}"
        );
    }

    #[test]
    fn connected_brokers_are_cluster_brokers_up_each_once() {
        let r = Registry::new();
        let mut p = BTreeMap::new();
        let new = |p: &BTreeMap<String, String>| BrokerConnections::new(&r, "c", "c", "k", p);
        assert!(new(&p).is_none(), "no statistics, no gauge");
        p.insert(STATISTICS_INTERVAL.into(), "0".into());
        assert!(new(&p).is_none());
        p.insert(STATISTICS_INTERVAL.into(), "1000".into());
        let c = new(&p).expect("statistics on");
        assert_eq!(r.value_if_any("c", &[("component", "k")]), Some(0.0));
        c.update(
            br#"{"name":"x","brokers":{
              "127.0.0.1:9092/bootstrap":{"name":"127.0.0.1:9092/bootstrap","nodeid":-1,"nodename":"127.0.0.1:9092","source":"configured","state":"UP","rtt":{}},
              "127.0.0.1:9092/1":{"name":"127.0.0.1:9092/1","nodeid":1,"nodename":"127.0.0.1:9092","source":"learned","state":"UP"},
              "127.0.0.1:9093/2":{"name":"127.0.0.1:9093/2","nodeid":2,"nodename":"127.0.0.1:9093","source":"learned","state":"UP"},
              "127.0.0.1:9094/3":{"name":"127.0.0.1:9094/3","nodeid":3,"nodename":"127.0.0.1:9094","source":"learned","state":"CONNECT"},
              "GroupCoordinator":{"name":"GroupCoordinator","nodeid":-1,"nodename":"127.0.0.1:9093","source":"logical","state":"UP"}},
              "topics":{}}"#,
        );
        assert_eq!(r.value("c", &[("component", "k")]), 2);
        c.update(b"not json");
        assert_eq!(r.value("c", &[("component", "k")]), 2);
        c.on_error(&KafkaError::Global(
            RDKafkaErrorCode::BrokerTransportFailure,
        ));
        assert_eq!(r.value("c", &[("component", "k")]), 2);
        // a consumer with nothing to fetch, connected to its coordinator
        // alone (as librdkafka 2.12 reports it)
        let coordinator_only = br#"{"brokers":{
              "127.0.0.1:9092/1":{"nodeid":1,"nodename":"127.0.0.1:9092","source":"learned","state":"INIT"},
              "GroupCoordinator":{"nodeid":-1,"nodename":"127.0.0.1:9092","source":"logical","state":"UP"}}}"#;
        c.update(coordinator_only);
        assert_eq!(r.value("c", &[("component", "k")]), 1);
        c.update(
            br#"{"brokers":{"GroupCoordinator":{"nodeid":-1,"nodename":"","source":"logical","state":"INIT"}}}"#,
        );
        assert_eq!(r.value("c", &[("component", "k")]), 0);
        c.update(coordinator_only);
        assert_eq!(r.value("c", &[("component", "k")]), 1);
        c.update(br#"{"brokers":{"127.0.0.1:9093/2":{"nodeid":2,"nodename":"127.0.0.1:9093","state":"UP"}}}"#);
        assert_eq!(r.value("c", &[("component", "k")]), 1);
        c.on_error(&KafkaError::Global(RDKafkaErrorCode::AllBrokersDown));
        assert_eq!(r.value("c", &[("component", "k")]), 0);
        c.update(br#"{"brokers":{"b/1":{"nodeid":1,"state":"DOWN"}}}"#);
        assert_eq!(r.value("c", &[("component", "k")]), 0);
    }

    #[test]
    fn client_errors_are_counted_by_kind() {
        let r = Registry::new();
        let errors = ClientErrors::new(&r, "k");
        errors.report(
            &KafkaError::Global(RDKafkaErrorCode::SSL),
            "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed",
        );
        errors.report(
            &KafkaError::Global(RDKafkaErrorCode::AllBrokersDown),
            "1/1 brokers are down",
        );
        errors.report(
            &KafkaError::Global(RDKafkaErrorCode::BrokerTransportFailure),
            "ssl://127.0.0.1:9093/bootstrap: Connect to ipv4#127.0.0.1:9093 failed: Connection refused",
        );
        errors.report(
            &KafkaError::Global(RDKafkaErrorCode::BrokerTransportFailure),
            "ssl://127.0.0.1:9093/1: SSL transport error: tlsv13 alert certificate required",
        );
        let count = |kind| {
            r.value(
                "logferry_kafka_client_errors_total",
                &[("component", "k"), ("kind", kind)],
            )
        };
        assert_eq!(count("tls"), 2);
        assert_eq!(count("all_brokers_down"), 1);
        assert_eq!(count("transport"), 1);
        assert_eq!(count("authentication"), 0);
    }
}
