//! Configuration of the Kafka source.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;
use crate::kafka_client;
use crate::tls::ClientTlsConfig;

/// `type = "kafka"`: consumes messages from Kafka topics as a consumer group.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KafkaSourceConfig {
    /// Bootstrap brokers, `host:port` each.
    pub brokers: Vec<String>,
    /// Consumer group; its committed offsets are where a restart resumes.
    pub group_id: String,
    /// Topic names; one starting with `^` is a regular expression matching
    /// topic names (librdkafka's rule).
    pub topics: Vec<String>,
    /// Tag of the records; `${topic}` is replaced by the message's topic.
    #[serde(default = "default_tag")]
    pub tag: String,
    /// How a message value becomes a record: `"raw"` (default,
    /// `{"message": value}`), `"json"` (a JSON object) or `"msgpack"` (a map).
    #[serde(default)]
    pub format: ValueFormat,
    /// If set, the message key is added to the record under this name.
    #[serde(default)]
    pub key_field: Option<String>,
    /// If set, the partition number is added to the record under this name.
    #[serde(default)]
    pub partition_field: Option<String>,
    /// If set, the message offset is added to the record under this name.
    #[serde(default)]
    pub offset_field: Option<String>,
    /// If set, the message timestamp (milliseconds since the epoch) is added
    /// to the record under this name. The event time is always the message
    /// timestamp when it has one.
    #[serde(default)]
    pub timestamp_field: Option<String>,
    /// Where a group without a committed offset starts: `"earliest"`
    /// (default) or `"latest"` (librdkafka `auto.offset.reset`).
    #[serde(default = "default_auto_offset_reset")]
    pub auto_offset_reset: String,
    /// How often acknowledged offsets are committed.
    #[serde(
        default = "default_commit_interval",
        deserialize_with = "units::duration"
    )]
    pub commit_interval: Duration,
    /// Most records per batch handed to the sinks.
    #[serde(default = "default_batch_records")]
    pub batch_records: usize,
    /// How long the first record of a batch that is not full waits for
    /// more: nobody waits for a Kafka source's acknowledgement, so at an
    /// everyday rate a second's messages travel on as one batch. Zero: each
    /// message read is handed on at once.
    #[serde(default = "default_linger", deserialize_with = "units::duration")]
    pub linger: Duration,
    /// TLS to the brokers (`security.protocol = "ssl"`): `ca_file`, and
    /// `cert_file`/`key_file` for brokers that require client
    /// certificates. Unset: plaintext.
    #[serde(default)]
    pub tls: Option<ClientTlsConfig>,
    /// Any librdkafka consumer property, passed as it is (SASL…).
    /// These win over the settings above, `tls` included, except `enable.auto.commit`,
    /// which stays `false`: offsets are committed only once the sinks
    /// have the records.
    #[serde(default)]
    pub librdkafka_options: BTreeMap<String, String>,
}

/// How a message value becomes a record.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ValueFormat {
    #[default]
    Raw,
    Json,
    Msgpack,
}

fn default_tag() -> String {
    "${topic}".into()
}
fn default_auto_offset_reset() -> String {
    "earliest".into()
}
const fn default_commit_interval() -> Duration {
    Duration::from_secs(1)
}
const fn default_batch_records() -> usize {
    1000
}
const fn default_linger() -> Duration {
    Duration::from_secs(1)
}

impl KafkaSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        kafka_client::validate(&self.brokers, self.tls.as_ref())?;
        if self.group_id.is_empty() {
            return Err("group_id must not be empty".into());
        }
        if self.topics.is_empty() || self.topics.iter().any(String::is_empty) {
            return Err("topics must list at least one non-empty topic name or ^regex".into());
        }
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        if self.batch_records == 0 {
            return Err("batch_records must be at least 1".into());
        }
        if self.commit_interval.is_zero() {
            return Err("commit_interval must be more than 0".into());
        }
        if !matches!(
            self.auto_offset_reset.as_str(),
            "earliest" | "latest" | "error"
        ) {
            return Err(format!(
                "auto_offset_reset must be \"earliest\", \"latest\" or \"error\", not {:?}",
                self.auto_offset_reset
            ));
        }
        kafka_client::check(&self.client_properties())
    }

    /// The librdkafka consumer configuration.
    pub fn client_config(&self) -> rdkafka::ClientConfig {
        kafka_client::client_config(&self.client_properties())
    }

    /// The librdkafka consumer properties.
    pub fn client_properties(&self) -> BTreeMap<String, String> {
        let mut p = kafka_client::properties(
            &self.brokers,
            self.tls.as_ref(),
            [
                ("group.id", self.group_id.clone()),
                ("auto.offset.reset", self.auto_offset_reset.clone()),
                (
                    kafka_client::STATISTICS_INTERVAL,
                    kafka_client::DEFAULT_STATISTICS_INTERVAL_MS.into(),
                ),
            ],
            &self.librdkafka_options,
        );
        // the source commits acknowledged offsets itself
        p.insert("enable.auto.commit".into(), "false".into());
        p
    }

    /// The tag of records from `topic`.
    pub fn tag_for(&self, topic: &str) -> String {
        self.tag.replace("${topic}", topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> Result<KafkaSourceConfig, String> {
        let c: KafkaSourceConfig = toml::from_str(&format!(
            "brokers = [\"b:9092\"]\ngroup_id = \"g\"\ntopics = [\"t\", \"^logs-.*\"]\n{extra}"
        ))
        .map_err(|e| e.to_string())?;
        c.validate().map(|()| c)
    }

    #[test]
    fn defaults_and_the_properties_they_become() {
        let c = parse("[librdkafka_options]\n\"enable.auto.commit\" = \"true\"\n\"session.timeout.ms\" = \"7000\"").unwrap();
        assert_eq!(c.tag_for("app"), "app");
        assert_eq!(c.format, ValueFormat::Raw);
        assert_eq!(c.linger, Duration::from_secs(1));
        let props = c.client_config();
        assert_eq!(props.get("auto.offset.reset"), Some("earliest"));
        assert_eq!(props.get("group.id"), Some("g"));
        assert_eq!(props.get("session.timeout.ms"), Some("7000"));
        assert_eq!(
            props.get("enable.auto.commit"),
            Some("false"),
            "offsets are committed only once the sinks have the records"
        );
        let c = parse("tag = \"kafka.${topic}\"").unwrap();
        assert_eq!(c.tag_for("app"), "kafka.app");
    }

    #[test]
    fn tls_becomes_ssl_properties_and_auto_commit_stays_off() {
        let c: KafkaSourceConfig = toml::from_str(
            "brokers = [\"b:9093\"]\ngroup_id = \"g\"\ntopics = [\"t\"]\n\
             tls = { ca_file = \"/pki/ca.pem\", cert_file = \"/pki/c.pem\", key_file = \"/pki/c.key\" }\n\
             [librdkafka_options]\n\"enable.auto.commit\" = \"true\"",
        )
        .unwrap();
        let p = c.client_properties();
        assert_eq!(p["security.protocol"], "ssl");
        assert_eq!(p["ssl.ca.location"], "/pki/ca.pem");
        assert_eq!(p["ssl.certificate.location"], "/pki/c.pem");
        assert_eq!(p["ssl.key.location"], "/pki/c.key");
        assert_eq!(p["group.id"], "g");
        assert_eq!(p["enable.auto.commit"], "false");
        let e = c.validate().unwrap_err();
        assert!(e.contains("tls.ca_file"), "{e}");
    }

    #[test]
    fn bad_settings_are_errors_naming_the_setting() {
        let e = parse("[librdkafka_options]\n\"no.such.option\" = \"1\"").unwrap_err();
        assert!(
            e.contains("librdkafka_options") && e.contains("no.such.option"),
            "{e}"
        );
        let e = parse("auto_offset_reset = \"oldest\"").unwrap_err();
        assert!(e.contains("auto_offset_reset"), "{e}");
        let e = parse("batch_records = 0").unwrap_err();
        assert!(e.contains("batch_records"), "{e}");
        let e = parse("format = \"xml\"").unwrap_err();
        assert!(e.contains("format") || e.contains("xml"), "{e}");
    }
}
