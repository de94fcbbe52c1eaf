//! Fluent Bit's `kubernetes` map of a record, msgpack-encoded, with its
//! field names and order (Fluent Bit's filter_kubernetes, kube_meta.c),
//! so that dashboards and queries built on Fluent Bit's records keep
//! working: `pod_name`, `namespace_name`, `pod_id`, `labels`,
//! `annotations`, `host`, `pod_ip`, `container_name`, `docker_id`,
//! `container_hash`, `container_image`. Added: `container_id` (the
//! runtime's id as the pod's status writes it, `containerd://…`, as
//! Vector names it) and `namespace_labels` (Fluent Bit writes these under
//! a separate `kubernetes_namespace` map).

use std::collections::BTreeMap;

use super::{Namespace, Pod};
use crate::protocol::msgpack::write;

/// Which optional parts of the map are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldOptions {
    /// The pod's labels (`include_labels`).
    pub labels: bool,
    /// The pod's annotations (`include_annotations`).
    pub annotations: bool,
    /// The namespace's labels.
    pub namespace_labels: bool,
}

enum Value<'a> {
    Str(&'a str),
    Map(&'a BTreeMap<String, String>),
}

/// `scheme://id` → `id`, as Fluent Bit shortens container and image ids
/// (a value without `://` is kept whole: `sha256:…`).
fn without_scheme(id: &str) -> &str {
    match id.find("://") {
        Some(i) => &id[i + 3..],
        None => id,
    }
}

/// Adds `key` unless `value` is empty.
fn str_field<'a>(fields: &mut Vec<(&'static str, Value<'a>)>, key: &'static str, value: &'a str) {
    if !value.is_empty() {
        fields.push((key, Value::Str(value)));
    }
}

fn write_map(out: &mut Vec<u8>, fields: &[(&str, Value<'_>)]) {
    write::map_len(out, fields.len());
    for (key, value) in fields {
        write::str(out, key.as_bytes());
        match value {
            Value::Str(s) => write::str(out, s.as_bytes()),
            Value::Map(m) => {
                write::map_len(out, m.len());
                for (k, v) in m.iter() {
                    write::str(out, k.as_bytes());
                    write::str(out, v.as_bytes());
                }
            }
        }
    }
}

/// Appends the `kubernetes` map of a record of `container` in `pod`:
/// each field only when known (and non-empty) and switched on.
pub fn encode(
    out: &mut Vec<u8>,
    pod: &Pod,
    namespace: Option<&Namespace>,
    container: &str,
    options: &FieldOptions,
) {
    let mut fields: Vec<(&'static str, Value<'_>)> = Vec::with_capacity(14);
    str_field(&mut fields, "pod_name", &pod.name);
    str_field(&mut fields, "namespace_name", &pod.namespace);
    str_field(&mut fields, "pod_id", &pod.uid);
    if options.labels && !pod.labels.is_empty() {
        fields.push(("labels", Value::Map(&pod.labels)));
    }
    if options.annotations && !pod.annotations.is_empty() {
        fields.push(("annotations", Value::Map(&pod.annotations)));
    }
    str_field(&mut fields, "host", pod.node_name.as_deref().unwrap_or(""));
    str_field(&mut fields, "pod_ip", pod.pod_ip.as_deref().unwrap_or(""));
    str_field(&mut fields, "container_name", container);
    if let Some(c) = pod.container(container) {
        if let Some(id) = &c.container_id {
            str_field(&mut fields, "container_id", id);
            str_field(&mut fields, "docker_id", without_scheme(id));
        }
        if let Some(image_id) = &c.image_id {
            str_field(&mut fields, "container_hash", without_scheme(image_id));
        }
        str_field(&mut fields, "container_image", &c.image);
    }
    if let Some(ns) = namespace {
        if options.namespace_labels && !ns.labels.is_empty() {
            fields.push(("namespace_labels", Value::Map(&ns.labels)));
        }
    }
    write_map(out, &fields);
}

/// Appends the `kubernetes` map that a log file's path gives alone
/// (`/var/log/pods/<namespace>_<pod>_<uid>/<container>/…`), for a record
/// whose pod is not known (yet).
pub fn encode_from_path(out: &mut Vec<u8>, namespace: &str, pod: &str, uid: &str, container: &str) {
    let fields: Vec<(&str, Value<'_>)> = [
        ("pod_name", pod),
        ("namespace_name", namespace),
        ("pod_id", uid),
        ("container_name", container),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| (k, Value::Str(v)))
    .collect();
    write_map(out, &fields);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::Container;
    use crate::protocol::msgpack::{to_json, Reader};
    use serde_json::json;

    fn pod() -> Pod {
        Pod {
            namespace: "demo".into(),
            name: "web-1".into(),
            uid: "6d1e2042-8013-449c-aa93-e7238391c45f".into(),
            node_name: Some("node-a".into()),
            pod_ip: Some("10.1.2.3".into()),
            labels: [("app".to_string(), "web".to_string())].into(),
            annotations: [("example.com/owner".to_string(), "team-a".to_string())].into(),
            containers: vec![Container {
                name: "nginx".into(),
                image: "docker.io/library/nginx:1.27".into(),
                image_id: Some("docker.io/library/nginx@sha256:abc".into()),
                container_id: Some("containerd://0123456789abcdef".into()),
            }],
            resource_version: "7".into(),
        }
    }

    fn decoded(out: &[u8]) -> (serde_json::Value, Vec<String>) {
        let value = to_json(&mut Reader::new(out));
        let keys = value.as_object().unwrap().keys().cloned().collect();
        (value, keys)
    }

    /// The names (and order) Fluent Bit's kubernetes filter writes, so
    /// that what is built on its records reads ours.
    #[test]
    fn the_fields_have_fluent_bits_names_and_order() {
        let ns = Namespace {
            name: "demo".into(),
            labels: [("team".to_string(), "logs".to_string())].into(),
            annotations: BTreeMap::new(),
        };
        let all = FieldOptions {
            labels: true,
            annotations: true,
            namespace_labels: true,
        };
        let mut out = Vec::new();
        encode(&mut out, &pod(), Some(&ns), "nginx", &all);
        let (value, keys) = decoded(&out);
        assert_eq!(
            keys,
            [
                "pod_name",
                "namespace_name",
                "pod_id",
                "labels",
                "annotations",
                "host",
                "pod_ip",
                "container_name",
                "container_id",
                "docker_id",
                "container_hash",
                "container_image",
                "namespace_labels"
            ]
        );
        assert_eq!(
            value,
            json!({
                "pod_name": "web-1",
                "namespace_name": "demo",
                "pod_id": "6d1e2042-8013-449c-aa93-e7238391c45f",
                "labels": {"app": "web"},
                "annotations": {"example.com/owner": "team-a"},
                "host": "node-a",
                "pod_ip": "10.1.2.3",
                "container_name": "nginx",
                "container_id": "containerd://0123456789abcdef",
                "docker_id": "0123456789abcdef",
                "container_hash": "docker.io/library/nginx@sha256:abc",
                "container_image": "docker.io/library/nginx:1.27",
                "namespace_labels": {"team": "logs"}
            })
        );
    }

    #[test]
    fn switched_off_unknown_and_empty_fields_are_left_out() {
        let none = FieldOptions {
            labels: false,
            annotations: false,
            namespace_labels: false,
        };
        let mut p = pod();
        p.pod_ip = None;
        let mut out = Vec::new();
        encode(&mut out, &p, None, "not-in-spec", &none);
        let (_, keys) = decoded(&out);
        assert_eq!(
            keys,
            [
                "pod_name",
                "namespace_name",
                "pod_id",
                "host",
                "container_name"
            ]
        );
        let mut out = Vec::new();
        encode_from_path(&mut out, "demo", "web-1", "u-1", "nginx");
        assert_eq!(
            decoded(&out).0,
            json!({"pod_name": "web-1", "namespace_name": "demo", "pod_id": "u-1", "container_name": "nginx"})
        );
        assert_eq!(without_scheme("sha256:abc"), "sha256:abc");
        assert_eq!(without_scheme("docker://x"), "x");
    }
}
