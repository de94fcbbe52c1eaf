//! Configuration of the `otlp` source.

use serde::Deserialize;

use crate::protocol::otlp::TagTemplate;
use crate::sources::http::HttpSourceConfig;

/// `type = "otlp"`: receives OpenTelemetry logs over OTLP/HTTP (protobuf
/// and JSON, `POST /v1/logs`). Its keys are in two structs: its own
/// ([`OtlpSettings`]) and the HTTP source's listener and limits
/// ([`HttpSourceConfig`]), whose `address` default is OTLP/HTTP's port.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(from = "RawOtlpSourceConfig")]
pub struct OtlpSourceConfig {
    /// The keys that are the `otlp` source's own.
    pub otlp: OtlpSettings,
    /// The listener and its limits, served by the HTTP source's machinery
    /// (`address` is always set here).
    pub http: HttpSourceConfig,
}

/// The table as written (read into [`OtlpSourceConfig`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOtlpSourceConfig {
    #[serde(flatten)]
    otlp: OtlpSettings,
    #[serde(flatten)]
    http: HttpSourceConfig,
}

impl From<RawOtlpSourceConfig> for OtlpSourceConfig {
    fn from(raw: RawOtlpSourceConfig) -> Self {
        let RawOtlpSourceConfig { otlp, mut http } = raw;
        // `address` is read into `otlp` (first in the table), so the HTTP
        // source's own default (its port 9880) never applies
        http.address = otlp.address.clone();
        OtlpSourceConfig { otlp, http }
    }
}

/// The keys of the `otlp` source that are its own.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct OtlpSettings {
    /// `host:port` OTLP/HTTP is served on (default `127.0.0.1:4318`,
    /// OTLP/HTTP's port, this machine only): `POST /v1/logs` with
    /// `application/x-protobuf` or `application/json`.
    #[serde(default = "default_address")]
    pub address: String,
    /// `host:port` OTLP/gRPC (`LogsService/Export`, HTTP/2 only) is served
    /// on, with the same limits, `tls` and `ack` as `address`; none by
    /// default (OTLP/gRPC's port is 4317).
    #[serde(default)]
    pub grpc_address: Option<String>,
    /// The records' tag, rendered for each resource: `${resource.KEY}` is
    /// the resource attribute KEY (`otel.${resource.service.name}`; `_`
    /// when a resource lacks it).
    #[serde(default = "default_tag")]
    pub tag: String,
}

fn default_address() -> String {
    "127.0.0.1:4318".into()
}

fn default_tag() -> String {
    "otel".into()
}

impl OtlpSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.http.validate()?;
        TagTemplate::parse(&self.otlp.tag).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The parsed `tag` (checked by `validate`).
    pub fn tag(&self) -> TagTemplate {
        TagTemplate::parse(&self.otlp.tag)
            .unwrap_or_else(|_| TagTemplate::parse("otel").expect("a plain tag parses"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<OtlpSourceConfig, String> {
        let c: OtlpSourceConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    #[test]
    fn defaults_are_otlps_port_and_tag() {
        let c = parse("").unwrap();
        assert_eq!(c.http.address, "127.0.0.1:4318");
        assert_eq!(c.otlp.tag, "otel");
        let c = parse("address = \"127.0.0.1:0\"\nmax_body_bytes = \"1KiB\"\ntag = \"o.${resource.service.name}\"").unwrap();
        assert_eq!(c.http.address, "127.0.0.1:0");
        assert_eq!(c.http.max_body_bytes, 1024);
    }

    #[test]
    fn refuses_unknown_keys_and_bad_tags_and_reads_grpc_address() {
        assert!(parse("adress = \"x\"").unwrap_err().contains("adress"));
        assert!(parse("tag = \"${record.x}\"").is_err());
        let c = parse("grpc_address = \"127.0.0.1:4317\"").unwrap();
        assert_eq!(c.otlp.grpc_address.as_deref(), Some("127.0.0.1:4317"));
    }
}
