//! Configuration of the kubernetes filter.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::merge::MergeLog;
use crate::config::units;
use crate::kube::fields::FieldOptions;
use crate::kube::ApiSettings;

/// `type = "kubernetes"` as a filter: records that arrive from elsewhere
/// (a Fluent Bit agent's `tail` on `/var/log/containers`, forwarded) get
/// their pod's metadata from the API server, as the kubernetes source's.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KubernetesFilterConfig {
    /// A kubeconfig file. Unset (and no `api_server`): the in-cluster
    /// configuration (the pod's service account).
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL, over the kubeconfig's or the in-cluster one.
    pub api_server: Option<String>,
    /// A bearer token file, over the kubeconfig's or the service account's;
    /// read again as it is rotated.
    pub token_file: Option<PathBuf>,
    /// CA certificates the API server's certificate must chain to.
    pub ca_file: Option<PathBuf>,
    /// Accept any API server certificate (tests only).
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// What comes before `<pod>_<namespace>_<container>-<id>.log` in a
    /// record's tag (Fluent Bit's `Kube_Tag_Prefix`).
    #[serde(default = "default_kube_tag_prefix")]
    pub kube_tag_prefix: String,
    /// Tags that do not name a container log: take the pod from the
    /// record's own `kubernetes.namespace_name`, `kubernetes.pod_name` and
    /// `kubernetes.container_name` (as another agent wrote them).
    #[serde(default)]
    pub use_record_fields: bool,
    /// A JSON object in the `log` field becomes fields of the record
    /// (Fluent Bit's `Merge_Log`).
    #[serde(default)]
    pub merge_log: bool,
    /// Put the merged fields under this key instead of at the top level.
    pub merge_log_key: Option<String>,
    /// Keep `log` once its object is merged (false: removed).
    #[serde(default = "yes")]
    pub keep_log: bool,
    /// Trim trailing line ends from merged string values.
    #[serde(default = "yes")]
    pub merge_log_trim: bool,
    /// Add the pod's labels (`kubernetes.labels`).
    #[serde(default = "yes")]
    pub include_labels: bool,
    /// Add the pod's annotations (`kubernetes.annotations`).
    #[serde(default = "yes")]
    pub include_annotations: bool,
    /// Add the namespace's labels (`kubernetes.namespace_labels`); also
    /// watches namespaces.
    #[serde(default = "yes")]
    pub include_namespace_labels: bool,
    /// Records of a container whose pod the API server has not told about
    /// yet are held this long for it (once per container: then they go
    /// on with what their tag tells); 0: never held.
    #[serde(
        default = "default_metadata_wait",
        deserialize_with = "units::duration"
    )]
    pub metadata_wait: Duration,
    /// A deleted pod's metadata is kept this long, for its records still
    /// on their way.
    #[serde(default = "default_delete_grace", deserialize_with = "units::duration")]
    pub delete_grace: Duration,
}

fn default_kube_tag_prefix() -> String {
    "kube.var.log.containers.".into()
}
const fn yes() -> bool {
    true
}
const fn default_metadata_wait() -> Duration {
    Duration::from_secs(1)
}
const fn default_delete_grace() -> Duration {
    Duration::from_secs(60)
}

impl KubernetesFilterConfig {
    pub fn validate(&self) -> Result<(), String> {
        match self.merge_log_key.as_deref() {
            Some("") => return Err("merge_log_key must not be empty".into()),
            Some("kubernetes") => {
                return Err("merge_log_key must be a key of its own, not `kubernetes`".into())
            }
            Some(_) if !self.merge_log => {
                return Err("merge_log_key applies only with merge_log = true".into())
            }
            _ => {}
        }
        if !self.keep_log && !self.merge_log {
            return Err("keep_log = false applies only with merge_log = true".into());
        }
        Ok(())
    }

    pub fn api(&self) -> ApiSettings {
        ApiSettings {
            kubeconfig: self.kubeconfig.clone(),
            api_server: self.api_server.clone(),
            token_file: self.token_file.clone(),
            ca_file: self.ca_file.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
        }
    }

    pub fn fields(&self) -> FieldOptions {
        FieldOptions {
            labels: self.include_labels,
            annotations: self.include_annotations,
            namespace_labels: self.include_namespace_labels,
        }
    }

    /// The merge of `log`, with `merge_log`.
    pub fn merge(&self) -> Option<MergeLog> {
        self.merge_log.then(|| MergeLog {
            key: self.merge_log_key.as_ref().map(|k| k.as_bytes().to_vec()),
            keep_log: self.keep_log,
            trim: self.merge_log_trim,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_fluent_bits() {
        let c: KubernetesFilterConfig = toml::from_str("").unwrap();
        c.validate().unwrap();
        assert_eq!(c.kube_tag_prefix, "kube.var.log.containers.");
        assert!(c.merge().is_none());
        assert!(c.keep_log && c.include_labels && c.include_annotations);
        assert_eq!(c.delete_grace, Duration::from_secs(60));
        assert_eq!(c.metadata_wait, Duration::from_secs(1));
    }

    #[test]
    fn merge_settings_need_merge_log() {
        let c: KubernetesFilterConfig = toml::from_str("merge_log_key = \"app\"").unwrap();
        assert!(c.validate().unwrap_err().contains("merge_log = true"));
        let c: KubernetesFilterConfig = toml::from_str("keep_log = false").unwrap();
        assert!(c.validate().is_err());
        let c: KubernetesFilterConfig =
            toml::from_str("merge_log = true\nmerge_log_key = \"kubernetes\"").unwrap();
        assert!(c.validate().is_err());
        let c: KubernetesFilterConfig =
            toml::from_str("merge_log = true\nmerge_log_key = \"app\"\nkeep_log = false").unwrap();
        c.validate().unwrap();
        let m = c.merge().unwrap();
        assert_eq!(m.key.as_deref(), Some(&b"app"[..]));
        assert!(!m.keep_log && m.trim);
    }
}
