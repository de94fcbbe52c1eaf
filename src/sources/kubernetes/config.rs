//! Configuration of the kubernetes source.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::select::Selector;
use crate::config::units;
use crate::format::multiline::Preset;
use crate::kube::fields::FieldOptions;
use crate::kube::ApiSettings;
use crate::sources::tail::TailSourceConfig;

/// `type = "kubernetes"`: every container's log on this node, with its
/// pod's metadata from the API server.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KubernetesSourceConfig {
    /// The kubelet's log directory: `<namespace>_<pod>_<uid>/<container>/<restart>.log`.
    #[serde(default = "default_pods_root")]
    pub pods_root: PathBuf,
    /// The node whose pods are watched. Unset: `$NODE_NAME` (the
    /// DaemonSet sets it from `spec.nodeName`).
    pub node_name: Option<String>,
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
    /// Tag of the records: `{namespace}`, `{pod}`, `{container}` are
    /// replaced by the file's.
    #[serde(default = "default_tag")]
    pub tag: String,
    /// Record key of the container's line (Fluent Bit's `log`).
    #[serde(default = "default_message_key")]
    pub message_key: String,
    /// Add the pod's labels (`kubernetes.labels`).
    #[serde(default = "yes")]
    pub include_labels: bool,
    /// Add the pod's annotations (`kubernetes.annotations`).
    #[serde(default = "yes")]
    pub include_annotations: bool,
    /// Add the namespace's labels (`kubernetes.namespace_labels`); also
    /// watches namespaces, which `namespace_selector` and a namespace's
    /// `logferry.io/exclude` need anyway.
    #[serde(default = "yes")]
    pub include_namespace_labels: bool,
    /// Only pods whose labels match this selector (`app=web,tier!=cache`,
    /// `env in (prod,staging)`, `!debug`) are read; the others' lines are
    /// left out. Changes to labels take effect at once.
    #[serde(default)]
    pub pod_selector: Selector,
    /// The same for the labels of the pod's namespace.
    #[serde(default)]
    pub namespace_selector: Selector,
    /// Lines of a pod the API server has not told about yet wait this
    /// long for it, then go on with what the path tells (namespace, pod,
    /// uid, container), counted.
    #[serde(
        default = "default_metadata_wait",
        deserialize_with = "units::duration"
    )]
    pub metadata_wait: Duration,
    /// A deleted pod's metadata is kept this long, for the lines still
    /// being read.
    #[serde(default = "default_delete_grace", deserialize_with = "units::duration")]
    pub delete_grace: Duration,
    /// Stack traces joined after the runtime's partial lines: `"java"`,
    /// `"python"`, `"go"` or `"ruby"` for every container; a pod's
    /// `logferry.io/multiline` annotation (or
    /// `logferry.io/multiline.<container>`) chooses per container.
    pub multiline: Option<Preset>,
    /// Directory of the checkpoint file (offsets survive restarts).
    pub checkpoint_dir: Option<PathBuf>,
    /// Most often the checkpoint is written while acknowledgements arrive.
    #[serde(
        default = "default_checkpoint_interval",
        deserialize_with = "units::duration"
    )]
    pub checkpoint_interval: Duration,
    /// On the very first start (no checkpoint), read the logs already
    /// there from their beginning (the default), or only what comes next.
    #[serde(default = "yes")]
    pub read_from_head: bool,
    /// How long lines gather once the reader has caught up (the tail
    /// source's `linger`).
    #[serde(default = "default_linger", deserialize_with = "units::duration")]
    pub linger: Duration,
    /// Most log files held open at once (the tail source's).
    pub max_open_files: Option<usize>,
    /// Longest line kept whole.
    #[serde(default = "default_max_line_bytes", deserialize_with = "units::bytes")]
    pub max_line_bytes: usize,
}

fn default_pods_root() -> PathBuf {
    PathBuf::from("/var/log/pods")
}
fn default_tag() -> String {
    "kube.{namespace}.{pod}.{container}".into()
}
fn default_message_key() -> String {
    "log".into()
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
const fn default_checkpoint_interval() -> Duration {
    Duration::from_secs(1)
}
const fn default_linger() -> Duration {
    Duration::from_secs(1)
}
const fn default_max_line_bytes() -> usize {
    1024 * 1024
}

impl KubernetesSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(p) = self.multiline {
            if p.is_partial() {
                return Err(format!(
                    "multiline: {:?} is a container runtime's; the runtime's partial lines are always joined. Give a stack trace's rule set: java, python, go or ruby",
                    p.name()
                ));
            }
        }
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        if self.message_key.is_empty() || self.message_key == "kubernetes" {
            return Err(
                "message_key must be a key of its own (not empty, not `kubernetes`)".into(),
            );
        }
        if self.checkpoint_interval.is_zero() {
            return Err("checkpoint_interval must be positive".into());
        }
        if self.max_open_files == Some(0) {
            return Err("max_open_files must be at least 1 (or unset)".into());
        }
        if self.max_line_bytes == 0 {
            return Err("max_line_bytes must be positive".into());
        }
        self.tail().validate()
    }

    /// The node name, from the config or `$NODE_NAME`.
    pub fn node(&self) -> Result<String, String> {
        match &self.node_name {
            Some(n) if !n.is_empty() => Ok(n.clone()),
            _ => match std::env::var("NODE_NAME") {
                Ok(n) if !n.is_empty() => Ok(n),
                _ => Err("node_name: unset, and $NODE_NAME is not set either; in a DaemonSet set NODE_NAME from the downward API (fieldRef spec.nodeName), elsewhere give node_name".into()),
            },
        }
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

    /// The tail reader's settings: every container log under `pods_root`.
    pub fn tail(&self) -> TailSourceConfig {
        let root = self.pods_root.display().to_string();
        let root = root.trim_end_matches('/');
        TailSourceConfig {
            paths: vec![format!("{root}/*/*/*.log")],
            exclude: Vec::new(),
            tag: "kubernetes".into(),
            refresh_interval: Duration::from_secs(5),
            linger: self.linger,
            poll_interval: Duration::from_millis(250),
            read_from_head: self.read_from_head,
            checkpoint_dir: self.checkpoint_dir.clone(),
            checkpoint_interval: self.checkpoint_interval,
            max_open_files: self.max_open_files,
            close_idle_after: Duration::from_secs(300),
            per_file_metrics: false,
            message_key: self.message_key.clone(),
            path_key: None,
            partial_line_timeout: Duration::from_secs(5),
            max_line_bytes: self.max_line_bytes,
            on_long_line: Default::default(),
            read_bytes: 256 * 1024,
            multiline: None,
        }
    }

    /// The tag of a container's records.
    pub fn tag_for(&self, namespace: &str, pod: &str, container: &str) -> String {
        self.tag
            .replace("{namespace}", namespace)
            .replace("{pod}", pod)
            .replace("{container}", container)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_kubelets_layout() {
        let c: KubernetesSourceConfig = toml::from_str("").unwrap();
        c.validate().unwrap();
        assert_eq!(c.tail().paths, vec!["/var/log/pods/*/*/*.log".to_string()]);
        assert_eq!(c.tag_for("ns", "web-1", "nginx"), "kube.ns.web-1.nginx");
        assert_eq!(c.message_key, "log");
    }

    #[test]
    fn a_runtime_rule_set_is_refused_as_multiline() {
        let c: KubernetesSourceConfig = toml::from_str("multiline = \"cri\"").unwrap();
        assert!(c
            .validate()
            .unwrap_err()
            .contains("java, python, go or ruby"));
    }
}
