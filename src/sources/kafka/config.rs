//! Configuration of the Kafka source.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;

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
    /// Any librdkafka consumer property, passed as it is (TLS, SASL…).
    /// These win over the settings above, except `enable.auto.commit`,
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

impl KafkaSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.brokers.is_empty() {
            return Err("brokers must list at least one host:port".into());
        }
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
        Ok(())
    }

    /// The librdkafka consumer properties.
    pub fn client_config(&self) -> rdkafka::ClientConfig {
        let mut client = rdkafka::ClientConfig::new();
        client.set("bootstrap.servers", self.brokers.join(","));
        client.set("group.id", &self.group_id);
        client.set("auto.offset.reset", &self.auto_offset_reset);
        for (k, v) in &self.librdkafka_options {
            client.set(k, v);
        }
        // the source commits acknowledged offsets itself
        client.set("enable.auto.commit", "false");
        client
    }

    /// The tag of records from `topic`.
    pub fn tag_for(&self, topic: &str) -> String {
        self.tag.replace("${topic}", topic)
    }
}
