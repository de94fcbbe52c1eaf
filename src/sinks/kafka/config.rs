//! Configuration of the Kafka sink.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::format::FormatConfig;
use crate::kafka_client;
use crate::tls::ClientTlsConfig;

/// `type = "kafka"`: produces every record as one Kafka message.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KafkaSinkConfig {
    /// Bootstrap brokers, `host:port` each.
    pub brokers: Vec<String>,
    /// Topic. May contain `${tag}` and `${tag[N]}` (as the file sink's `path`).
    pub topic: String,
    /// Record field whose value becomes the message key; without it,
    /// messages have no key (librdkafka spreads them over partitions).
    #[serde(default)]
    pub key_field: Option<String>,
    /// How a keyed message picks its partition (librdkafka's
    /// `partitioner`): `"consistent_random"` (default: a hash of the key,
    /// random without a key), `"consistent"`, `"murmur2"`,
    /// `"murmur2_random"` (the Java client's), `"fnv1a"`, `"fnv1a_random"`
    /// or `"random"`.
    #[serde(default = "default_partitioner")]
    pub partitioner: String,
    /// `"none"` (default), `"gzip"`, `"snappy"`, `"lz4"` or `"zstd"`.
    #[serde(default)]
    pub compression: Compression,
    /// Acknowledgements the leader waits for: `"all"` (default), `"1"`, `"0"`.
    #[serde(default = "default_acks")]
    pub acks: String,
    /// Idempotent producer: librdkafka's own retries neither duplicate nor
    /// reorder messages. A message logferry produces again after a failed
    /// delivery report is stored after those produced meanwhile. Needs
    /// `acks = "all"`.
    #[serde(default = "default_true")]
    pub idempotence: bool,
    /// How long librdkafka waits to fill a batch (`linger.ms`), in
    /// milliseconds; fractions are allowed. Only where nobody waits: a
    /// batch whose client waits for its acknowledgement (an HTTP request,
    /// a forward chunk with ack) is sent at once whatever this says; the
    /// others (tail, TCP, a forward chunk without ack, a disk buffer's)
    /// wait up to this long for fuller requests.
    #[serde(default = "default_linger_ms")]
    pub linger_ms: f64,
    /// How long batches nobody waits for may gather before they are
    /// handed to librdkafka. Unset: 0 on a memory queue (handed over as
    /// they come; `linger_ms` then fills the requests),
    /// [`crate::sinks::DISK_FLUSH_INTERVAL`] on a disk buffer (see
    /// [`KafkaSinkConfig::flush_interval`]). A batch whose client waits
    /// for its acknowledgement is handed over at once, with what gathered
    /// before it.
    #[serde(
        default,
        rename = "flush_interval",
        deserialize_with = "units::opt_duration"
    )]
    pub flush_interval_set: Option<Duration>,
    /// Largest message batch per partition request (`batch.size`).
    #[serde(default = "default_batch_bytes", deserialize_with = "units::bytes")]
    pub batch_bytes: usize,
    /// `"raw"` (default), `"json"`, `"msgpack"`, or a template table: the
    /// same formats as the file sink, one record per message, without the
    /// trailing newline.
    #[serde(default)]
    pub format: FormatConfig,
    /// If set, each message gets a header of this name holding the tag.
    #[serde(default)]
    pub tag_header: Option<String>,
    /// If set, each message gets a header of this name holding the event
    /// time as `seconds.nanoseconds`. The message timestamp is always the
    /// event time (milliseconds).
    #[serde(default)]
    pub time_header: Option<String>,
    /// First wait before a failed message is produced again; doubles per
    /// attempt up to `retry_backoff_max`. Failed messages are retried until
    /// delivered, never dropped, unless Kafka can never take them.
    #[serde(
        default = "default_retry_backoff",
        deserialize_with = "units::duration"
    )]
    pub retry_backoff: Duration,
    /// Longest wait between two attempts of one message.
    #[serde(
        default = "default_retry_backoff_max",
        deserialize_with = "units::duration"
    )]
    pub retry_backoff_max: Duration,
    /// At shutdown, how long to keep trying to deliver what is in flight.
    #[serde(
        default = "default_drain_timeout",
        deserialize_with = "units::duration"
    )]
    pub drain_timeout: Duration,
    /// TLS to the brokers (`security.protocol = "ssl"`): `ca_file`, and
    /// `cert_file`/`key_file` for brokers that require client
    /// certificates. Unset: plaintext.
    #[serde(default)]
    pub tls: Option<ClientTlsConfig>,
    /// Any librdkafka producer property, passed as it is (SASL,
    /// `message.max.bytes`, `message.timeout.ms`…). These win over the
    /// settings above, `tls` included.
    #[serde(default)]
    pub librdkafka_options: BTreeMap<String, String>,
}

/// Message compression (librdkafka `compression.type`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

fn default_partitioner() -> String {
    "consistent_random".into()
}
fn default_acks() -> String {
    "all".into()
}
const fn default_true() -> bool {
    true
}
/// 5 ms: fuller requests where nobody waits (forward → Kafka in bulk makes
/// about 16 % more records per second than with 0); a batch whose client
/// waits is expedited instead (`Producer::expedite`), so one-line HTTP
/// requests do not wait for it.
const fn default_linger_ms() -> f64 {
    DEFAULT_LINGER_MS
}

/// The default `linger_ms` (the benchmarks use it too).
pub const DEFAULT_LINGER_MS: f64 = 5.0;
const fn default_batch_bytes() -> usize {
    1024 * 1024
}
const fn default_retry_backoff() -> Duration {
    Duration::from_millis(500)
}
const fn default_retry_backoff_max() -> Duration {
    Duration::from_secs(30)
}
const fn default_drain_timeout() -> Duration {
    Duration::from_secs(30)
}

impl KafkaSinkConfig {
    /// How long batches may gather before they are handed to librdkafka:
    /// the setting, else 0 on a memory queue and
    /// [`crate::sinks::DISK_FLUSH_INTERVAL`] on a disk buffer (`disk`).
    pub fn flush_interval(&self, disk: bool) -> Duration {
        crate::sinks::flush_interval(self.flush_interval_set, disk)
    }

    /// The retry settings of the shared settlement: `retry_backoff` and
    /// `retry_backoff_max`; retryable errors are retried until the stop.
    pub fn retry_config(&self) -> crate::sinks::verdict::RetryConfig {
        crate::sinks::verdict::RetryConfig {
            initial: self.retry_backoff,
            max: self.retry_backoff_max,
            jitter: 0.2,
            max_attempts: 0,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        self.format.validate()?;
        kafka_client::validate(&self.brokers, self.tls.as_ref())?;
        crate::sinks::name::NameTemplate::parse("topic", &self.topic)?;
        const PARTITIONERS: &[&str] = &[
            "consistent_random",
            "consistent",
            "murmur2",
            "murmur2_random",
            "fnv1a",
            "fnv1a_random",
            "random",
        ];
        if !PARTITIONERS.contains(&self.partitioner.as_str()) {
            return Err(format!(
                "partitioner = {:?}: use one of {}",
                self.partitioner,
                PARTITIONERS.join(", ")
            ));
        }
        if !matches!(self.acks.as_str(), "all" | "-1" | "1" | "0") {
            return Err(format!(
                "acks = {:?}: use \"all\", \"1\" or \"0\"",
                self.acks
            ));
        }
        if self.idempotence && !matches!(self.acks.as_str(), "all" | "-1") {
            return Err(format!(
                "idempotence needs acks = \"all\" (acks is {:?}); set idempotence = false to use it",
                self.acks
            ));
        }
        if !(0.0..=900_000.0).contains(&self.linger_ms) {
            return Err(format!(
                "linger_ms = {}: use 0 to 900000 (fractions of a millisecond allowed)",
                self.linger_ms
            ));
        }
        if self.batch_bytes == 0 {
            return Err("batch_bytes must be greater than 0".into());
        }
        if self.retry_backoff.is_zero() || self.retry_backoff > self.retry_backoff_max {
            return Err("retry_backoff must be above 0 and at most retry_backoff_max".into());
        }
        kafka_client::check(&self.client_properties())
    }

    /// The librdkafka client configuration for these settings.
    pub fn client_config(&self) -> rdkafka::ClientConfig {
        kafka_client::client_config(&self.client_properties())
    }

    /// The librdkafka producer properties for these settings.
    pub fn client_properties(&self) -> BTreeMap<String, String> {
        kafka_client::properties(
            &self.brokers,
            self.tls.as_ref(),
            [
                ("compression.type", self.compression.as_str().into()),
                ("acks", self.acks.clone()),
                ("partitioner", self.partitioner.clone()),
                ("enable.idempotence", self.idempotence.to_string()),
                ("linger.ms", self.linger_ms.to_string()),
                ("batch.size", self.batch_bytes.to_string()),
                (
                    kafka_client::STATISTICS_INTERVAL,
                    kafka_client::DEFAULT_STATISTICS_INTERVAL_MS.into(),
                ),
            ],
            &self.librdkafka_options,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<KafkaSinkConfig, String> {
        let c: KafkaSinkConfig = toml::from_str(&format!(
            "brokers = [\"127.0.0.1:9092\"]\ntopic = \"logs.${{tag}}\"\n{extra}"
        ))
        .map_err(|e| e.to_string())?;
        c.validate().map(|()| c)
    }

    #[test]
    fn defaults_are_safe() {
        let c = parse("").unwrap();
        let p = c.client_properties();
        assert_eq!(p["acks"], "all");
        assert_eq!(p["enable.idempotence"], "true");
        assert_eq!(p["compression.type"], "none");
        assert_eq!(p["bootstrap.servers"], "127.0.0.1:9092");
        assert_eq!(p["partitioner"], "consistent_random");
        assert_eq!(p["statistics.interval.ms"], "1000");
        let c = parse("partitioner = \"murmur2_random\"").unwrap();
        assert_eq!(c.client_properties()["partitioner"], "murmur2_random");
    }

    #[test]
    fn linger_takes_whole_and_fractional_milliseconds() {
        assert_eq!(parse("").unwrap().client_properties()["linger.ms"], "5");
        assert_eq!(
            parse("linger_ms = 0").unwrap().client_properties()["linger.ms"],
            "0"
        );
        let c = parse("linger_ms = 0.5").unwrap();
        assert_eq!(c.client_properties()["linger.ms"], "0.5");
        for bad in ["-1", "900001", "nan", "inf"] {
            let e = parse(&format!("linger_ms = {bad}")).unwrap_err();
            assert!(e.contains("linger_ms"), "{bad}: {e}");
        }
    }

    #[test]
    fn passed_options_win() {
        let c = parse("compression = \"zstd\"\n[librdkafka_options]\n\"linger.ms\" = \"50\"\n\"security.protocol\" = \"ssl\"\n\"statistics.interval.ms\" = \"250\"").unwrap();
        let p = c.client_properties();
        assert_eq!(p["linger.ms"], "50");
        assert_eq!(p["statistics.interval.ms"], "250");
        assert_eq!(p["security.protocol"], "ssl");
        assert_eq!(p["compression.type"], "zstd");
    }

    #[test]
    fn tls_becomes_ssl_properties_and_options_still_win() {
        let c: KafkaSinkConfig = toml::from_str(
            "brokers = [\"b:9093\"]\ntopic = \"t\"\n\
             tls = { ca_file = \"/pki/ca.pem\", cert_file = \"/pki/c.pem\", key_file = \"/pki/c.key\" }\n\
             [librdkafka_options]\n\"ssl.key.password\" = \"pw\"\n\"ssl.ca.location\" = \"/other.pem\"",
        )
        .unwrap();
        let p = c.client_properties();
        assert_eq!(p["security.protocol"], "ssl");
        assert_eq!(p["ssl.certificate.location"], "/pki/c.pem");
        assert_eq!(p["ssl.key.location"], "/pki/c.key");
        assert_eq!(p["ssl.key.password"], "pw");
        assert_eq!(p["ssl.ca.location"], "/other.pem");
        assert_eq!(p["acks"], "all");
        // the files are checked at start-up, with the key that names them
        let e = c.validate().unwrap_err();
        assert!(
            e.contains("tls.ca_file") && e.contains("/pki/ca.pem"),
            "{e}"
        );
    }

    #[test]
    fn bad_settings_are_errors() {
        assert!(parse("acks = \"some\"").unwrap_err().contains("acks"));
        assert!(parse("partitioner = \"round\"")
            .unwrap_err()
            .contains("partitioner"));
        assert!(parse("acks = \"1\"").unwrap_err().contains("idempotence"));
        assert!(parse("acks = \"1\"\nidempotence = false").is_ok());
        assert!(parse("compression = \"brotli\"").is_err());
        assert!(parse("topicc = \"x\"").is_err());
        let e: Result<KafkaSinkConfig, _> = toml::from_str("brokers = []\ntopic = \"t\"");
        assert!(e.unwrap().validate().unwrap_err().contains("brokers"));
        let e: KafkaSinkConfig =
            toml::from_str("brokers = [\"b:1\"]\ntopic = \"${tag[x]}\"").unwrap();
        assert!(e.validate().unwrap_err().contains("topic"));
        let e = parse("[librdkafka_options]\n\"no.such.option\" = \"1\"").unwrap_err();
        assert!(
            e.contains("librdkafka_options") && e.contains("no.such.option"),
            "{e}"
        );
        let e = parse("[librdkafka_options]\n\"linger.ms\" = \"soon\"").unwrap_err();
        assert!(e.contains("linger.ms"), "{e}");
    }
}
