//! The API server's JSON (list pages and watch events) read into the few
//! fields the cache keeps: serde skips everything else (managed fields,
//! the full spec) without allocating for it, and no raw JSON is kept.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use super::{Container, Namespace, Pod};

/// Longest watch line read; a longer one is skipped and counted. The API
/// server stores objects of at most 1.5 MiB (etcd's limit), so a line
/// this long is not an object of ours.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Why a list page or a watch line could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Not the JSON of a list or an event.
    Json(String),
    /// An event type other than ADDED, MODIFIED, DELETED, BOOKMARK, ERROR.
    UnknownType(String),
    /// An object without the name (or uid, for a pod) that keys it.
    NoKey,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Json(e) => write!(f, "invalid JSON: {e}"),
            DecodeError::UnknownType(t) => write!(f, "unknown watch event type {t:?}"),
            DecodeError::NoKey => f.write_str("an object without name or uid"),
        }
    }
}

/// One watch event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<T> {
    Added(T, String),
    Modified(T, String),
    Deleted(T, String),
    /// Nothing changed up to this `resourceVersion`: a watch resumes from
    /// it.
    Bookmark(String),
    /// The watch cannot go on (410: the version is too old).
    Error(Status),
}

/// A `Status` object: an error answer, or the object of an ERROR event.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct Status {
    /// The HTTP status it stands for (410 for an expired version).
    pub code: u16,
    /// `Expired`, `Gone`, `Forbidden`, …
    pub reason: String,
    pub message: String,
}

impl Status {
    /// The resourceVersion asked for is gone from the server's history: a
    /// fresh list is the only way on.
    pub fn is_gone(&self) -> bool {
        self.code == 410
            || self.reason == "Expired"
            || self.reason == "Gone"
            || self.message.contains("too old resource version")
    }
}

/// A kind of object the cache keeps, read from its API JSON.
pub trait Object: Sized {
    /// The API's JSON of it.
    type Raw: DeserializeOwned;
    /// The object and its `resourceVersion`.
    fn from_raw(raw: Self::Raw) -> Result<(Self, String), DecodeError>;
}

/// Reads one line of a watch.
pub fn decode_event<T: Object>(line: &[u8]) -> Result<Event<T>, DecodeError> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(Deserialize)]
    struct Wrapped<O> {
        object: O,
    }
    #[derive(Deserialize)]
    struct Versioned {
        #[serde(default)]
        metadata: Meta,
    }
    let json = |e: serde_json::Error| DecodeError::Json(e.to_string());
    let head: Head = serde_json::from_slice(line).map_err(json)?;
    let object = || -> Result<(T, String), DecodeError> {
        let w: Wrapped<T::Raw> = serde_json::from_slice(line).map_err(json)?;
        T::from_raw(w.object)
    };
    Ok(match head.kind.as_str() {
        "ADDED" => object().map(|(o, v)| Event::Added(o, v))?,
        "MODIFIED" => object().map(|(o, v)| Event::Modified(o, v))?,
        "DELETED" => object().map(|(o, v)| Event::Deleted(o, v))?,
        "BOOKMARK" => {
            let w: Wrapped<Versioned> = serde_json::from_slice(line).map_err(json)?;
            Event::Bookmark(w.object.metadata.resource_version)
        }
        "ERROR" => {
            let w: Wrapped<Status> = serde_json::from_slice(line).map_err(json)?;
            Event::Error(w.object)
        }
        _ => return Err(DecodeError::UnknownType(head.kind)),
    })
}

/// One page of a list: its objects (with their versions), the list's
/// `resourceVersion` (where the watch starts) and the `continue` token of
/// the next page, if any.
pub struct Page<T> {
    pub items: Vec<(T, String)>,
    pub resource_version: String,
    pub next: Option<String>,
}

/// Reads one page of a list; an item that cannot be read fails the page.
pub fn decode_page<T: Object>(body: &[u8]) -> Result<Page<T>, DecodeError> {
    #[derive(Deserialize)]
    #[serde(bound = "R: DeserializeOwned")]
    struct List<R> {
        #[serde(default)]
        metadata: ListMeta,
        #[serde(default, deserialize_with = "null_default")]
        items: Vec<R>,
    }
    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct ListMeta {
        resource_version: String,
        #[serde(rename = "continue")]
        next: String,
    }
    let list: List<T::Raw> =
        serde_json::from_slice(body).map_err(|e| DecodeError::Json(e.to_string()))?;
    Ok(Page {
        items: list
            .items
            .into_iter()
            .map(T::from_raw)
            .collect::<Result<_, _>>()?,
        resource_version: list.metadata.resource_version,
        next: Some(list.metadata.next).filter(|n| !n.is_empty()),
    })
}

/// `null` read as the default (the API writes `null` for some empty
/// lists and maps).
fn null_default<'de, D, V>(d: D) -> Result<V, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de> + Default,
{
    Ok(Option::<V>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Meta {
    name: String,
    namespace: String,
    uid: String,
    resource_version: String,
    #[serde(deserialize_with = "null_default")]
    labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "null_default")]
    annotations: BTreeMap<String, String>,
}

/// The fields of a pod's JSON that are kept.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct RawPod {
    metadata: Meta,
    #[serde(deserialize_with = "null_default")]
    spec: RawSpec,
    #[serde(deserialize_with = "null_default")]
    status: RawStatus,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawSpec {
    node_name: Option<String>,
    #[serde(deserialize_with = "null_default")]
    containers: Vec<RawContainer>,
    #[serde(deserialize_with = "null_default")]
    init_containers: Vec<RawContainer>,
    #[serde(deserialize_with = "null_default")]
    ephemeral_containers: Vec<RawContainer>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawContainer {
    name: String,
    image: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawStatus {
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(deserialize_with = "null_default")]
    container_statuses: Vec<RawContainerStatus>,
    #[serde(deserialize_with = "null_default")]
    init_container_statuses: Vec<RawContainerStatus>,
    #[serde(deserialize_with = "null_default")]
    ephemeral_container_statuses: Vec<RawContainerStatus>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawContainerStatus {
    name: String,
    image: Option<String>,
    #[serde(rename = "imageID")]
    image_id: Option<String>,
    #[serde(rename = "containerID")]
    container_id: Option<String>,
}

/// `Some` unless empty.
fn given(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

impl Object for Pod {
    type Raw = RawPod;

    fn from_raw(raw: RawPod) -> Result<(Pod, String), DecodeError> {
        let RawPod {
            metadata: m,
            spec,
            status,
        } = raw;
        if m.uid.is_empty() || m.name.is_empty() {
            return Err(DecodeError::NoKey);
        }
        let mut statuses: Vec<RawContainerStatus> = status
            .container_statuses
            .into_iter()
            .chain(status.init_container_statuses)
            .chain(status.ephemeral_container_statuses)
            .collect();
        let mut containers: Vec<Container> = spec
            .containers
            .into_iter()
            .chain(spec.init_containers)
            .chain(spec.ephemeral_containers)
            .map(|c| {
                let status = statuses
                    .iter()
                    .position(|s| s.name == c.name)
                    .map(|i| statuses.swap_remove(i))
                    .unwrap_or_default();
                Container {
                    image: given(status.image).or(given(c.image)).unwrap_or_default(),
                    name: c.name,
                    image_id: given(status.image_id),
                    container_id: given(status.container_id),
                }
            })
            .collect();
        containers.shrink_to_fit();
        let version = m.resource_version;
        Ok((
            Pod {
                namespace: m.namespace,
                name: m.name,
                uid: m.uid,
                node_name: given(spec.node_name),
                pod_ip: given(status.pod_ip),
                labels: m.labels,
                annotations: m.annotations,
                containers,
                resource_version: version.clone(),
            },
            version,
        ))
    }
}

/// The fields of a namespace's JSON that are kept.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct RawNamespace {
    metadata: Meta,
}

impl Object for Namespace {
    type Raw = RawNamespace;

    fn from_raw(raw: RawNamespace) -> Result<(Namespace, String), DecodeError> {
        let m = raw.metadata;
        if m.name.is_empty() {
            return Err(DecodeError::NoKey);
        }
        Ok((
            Namespace {
                name: m.name,
                labels: m.labels,
                annotations: m.annotations,
            },
            m.resource_version,
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pod's JSON as the API server writes it (trimmed of nothing the
    /// decoder must skip: managed fields, spec details, conditions).
    pub(crate) fn pod_json(name: &str, uid: &str, version: u64) -> String {
        format!(
            r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"demo","uid":"{uid}","resourceVersion":"{version}","creationTimestamp":"2026-12-06T00:00:00Z","labels":{{"app":"web","tier":"frontend"}},"annotations":{{"example.com/owner":"team-a"}},"managedFields":[{{"manager":"curl","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:app":{{}}}}}}}}}}]}},"spec":{{"nodeName":"node-a","containers":[{{"name":"nginx","image":"nginx:1.27","resources":{{}},"terminationMessagePath":"/dev/termination-log"}},{{"name":"sidecar","image":"busybox"}}],"initContainers":[{{"name":"init","image":"alpine:3"}}],"restartPolicy":"Always","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}]}},"status":{{"phase":"Running","podIP":"10.1.2.3","podIPs":[{{"ip":"10.1.2.3"}}],"conditions":[{{"type":"Ready","status":"True"}}],"containerStatuses":[{{"name":"nginx","image":"docker.io/library/nginx:1.27","imageID":"docker.io/library/nginx@sha256:abc","containerID":"containerd://0123456789abcdef","ready":true,"restartCount":0,"state":{{"running":{{"startedAt":"2026-12-06T00:00:00Z"}}}}}}],"initContainerStatuses":[{{"name":"init","image":"alpine:3","imageID":"","containerID":"containerd://fedcba"}}]}}}}"#
        )
    }

    #[test]
    fn a_pod_event_keeps_metadata_and_joins_container_statuses_by_name() {
        let line = format!(
            r#"{{"type":"ADDED","object":{}}}"#,
            pod_json("web-1", "u-1", 7)
        );
        let Event::Added(pod, version) = decode_event::<Pod>(line.as_bytes()).unwrap() else {
            panic!("not ADDED");
        };
        assert_eq!(version, "7");
        assert_eq!(pod.resource_version, "7");
        assert_eq!(
            (pod.namespace.as_str(), pod.name.as_str()),
            ("demo", "web-1")
        );
        assert_eq!(pod.uid, "u-1");
        assert_eq!(pod.node_name.as_deref(), Some("node-a"));
        assert_eq!(pod.pod_ip.as_deref(), Some("10.1.2.3"));
        assert_eq!(pod.labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(pod.annotations.len(), 1);
        assert_eq!(
            pod.containers,
            vec![
                Container {
                    name: "nginx".into(),
                    image: "docker.io/library/nginx:1.27".into(),
                    image_id: Some("docker.io/library/nginx@sha256:abc".into()),
                    container_id: Some("containerd://0123456789abcdef".into()),
                },
                Container {
                    name: "sidecar".into(),
                    image: "busybox".into(),
                    image_id: None,
                    container_id: None,
                },
                Container {
                    name: "init".into(),
                    image: "alpine:3".into(),
                    image_id: None,
                    container_id: Some("containerd://fedcba".into()),
                },
            ]
        );
    }

    #[test]
    fn bookmarks_errors_and_deletions_are_told_apart() {
        let bookmark = br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12345","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
        assert_eq!(
            decode_event::<Pod>(bookmark).unwrap(),
            Event::Bookmark("12345".into())
        );
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (900)","reason":"Expired","code":410}}"#;
        let Event::Error(status) = decode_event::<Pod>(gone).unwrap() else {
            panic!("not ERROR");
        };
        assert!(status.is_gone());
        assert_eq!(status.code, 410);
        let other = br#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"internal error","reason":"InternalError","code":500}}"#;
        let Event::Error(status) = decode_event::<Pod>(other).unwrap() else {
            panic!("not ERROR");
        };
        assert!(!status.is_gone());
        let deleted = format!(
            r#"{{"type":"DELETED","object":{}}}"#,
            pod_json("web-1", "u-1", 9)
        );
        assert!(matches!(
            decode_event::<Pod>(deleted.as_bytes()).unwrap(),
            Event::Deleted(_, v) if v == "9"
        ));
        let ns = br#"{"type":"MODIFIED","object":{"kind":"Namespace","metadata":{"name":"demo","resourceVersion":"3","labels":{"team":"logs"},"annotations":null},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}}"#;
        let Event::Modified(ns, v) = decode_event::<Namespace>(ns).unwrap() else {
            panic!("not MODIFIED");
        };
        assert_eq!((ns.name.as_str(), v.as_str()), ("demo", "3"));
        assert_eq!(ns.labels.get("team").map(String::as_str), Some("logs"));
        assert!(ns.annotations.is_empty());
    }

    #[test]
    fn bad_lines_are_errors_not_panics() {
        for line in [
            &b""[..],
            b"{",
            b"[]",
            br#"{"type":"ADDED"}"#,
            br#"{"type":"ADDED","object":{"metadata":{"name":"x"}}}"#,
            br#"{"type":"ADDED","object":{"metadata":{"name":"x","uid":"u","labels":{"a":1}}}}"#,
            br#"{"type":"SOMETHING","object":{}}"#,
            br#"{"type":"ADDED","object":{"metadata":{"name":"x","uid":"u"},"spec":"weird"}}"#,
        ] {
            assert!(
                decode_event::<Pod>(line).is_err(),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
        // nulls where the API may write them are empty, not errors
        let nulls = br#"{"type":"ADDED","object":{"metadata":{"name":"x","uid":"u","labels":null},"spec":{"containers":null},"status":null}}"#;
        assert!(matches!(decode_event::<Pod>(nulls), Ok(Event::Added(..))));
    }

    #[test]
    fn a_list_page_gives_items_version_and_continue() {
        let body = format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"42","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDJ9","remainingItemCount":1}},"items":[{},{}]}}"#,
            pod_json("a", "u-a", 40),
            pod_json("b", "u-b", 41)
        );
        let page = decode_page::<Pod>(body.as_bytes()).unwrap();
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.items[1].1, "41");
        assert_eq!(page.resource_version, "42");
        assert!(page.next.is_some());
        let last = decode_page::<Pod>(
            br#"{"kind":"PodList","metadata":{"resourceVersion":"43"},"items":null}"#,
        )
        .unwrap();
        assert!(last.items.is_empty() && last.next.is_none());
        assert_eq!(last.resource_version, "43");
    }
}
