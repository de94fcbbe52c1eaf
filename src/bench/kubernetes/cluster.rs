//! The API server `bench kubernetes` runs against: started (or found
//! running) by `scripts/kube.sh start` with its state in `--kube-dir`, and
//! filled through its REST API as an administrator: a namespace, the
//! node's pods with their containers' ids in their status (as a kubelet
//! reports them, so Fluent Bit's `docker_id` from the file name matches),
//! and the read-only role the agent's token needs.
//!
//! Requests go over one HTTP/2 connection ([`crate::http_client::Client`]),
//! [`PARALLEL`] at a time: 5,000 pods are created and given a status in
//! seconds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Value};

use crate::http_client::{Client, ClientConfig, HttpVersion};
use crate::tls::ClientTlsConfig;

/// Requests in flight at once when pods are created or updated.
const PARALLEL: usize = 32;

/// The ClusterRole (and its binding) that lets user `log-agent` read pods
/// and namespaces, and nothing else.
const AGENT_ROLE: &str = "logferry-bench-agent";

/// The user scripts/kube.sh gives the agent token to.
const AGENT_USER: &str = "log-agent";

/// A running API server and an administrator's connection to it.
pub struct Cluster {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// The token of user `log-agent`, which both agents use.
    pub agent_token: String,
    /// The CA file that verifies the server's certificate.
    pub ca: PathBuf,
    /// The bearer token of group `system:masters`, for setting things up.
    admin_token: String,
    client: Arc<Client>,
    /// Drives the client's requests from this plain thread.
    rt: tokio::runtime::Runtime,
}

/// One pod to create on a node.
#[derive(Debug, Clone)]
pub struct NewPod {
    pub name: String,
    /// `spec.nodeName` (no scheduler runs).
    pub node: String,
    /// Its bench index, also its `index` label.
    pub index: usize,
    /// The containerd id its one container gets in the status (64 hex
    /// digits); `None` leaves the pod without a status, as the pods of
    /// other nodes are.
    pub container_id: Option<String>,
}

/// The one container of every bench pod.
pub const CONTAINER: &str = "app";
/// Its image.
pub const IMAGE: &str = "registry.example.com/shop/orders:1.42.0";

impl Cluster {
    /// Runs `script start` with its state in `kube_dir` (which starts the
    /// server, or finds it running) and connects to what it prints.
    pub fn start(script: &Path, kube_dir: &Path) -> Result<Cluster, String> {
        let out = Command::new(script)
            .arg("start")
            .env("LOGFERRY_KUBE_DIR", kube_dir)
            .output()
            .map_err(|e| {
                format!(
                    "cannot run {} ({e}); run the bench from the repository's root, or give --kube-script",
                    script.display()
                )
            })?;
        if !out.status.success() {
            return Err(format!(
                "{} start failed (it needs go, openssl and curl):\n{}",
                script.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let printed = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_string)
                .ok_or_else(|| format!("{} start printed no {key}= line", script.display()))
        };
        let url = printed("url")?;
        let ca = PathBuf::from(printed("ca")?);
        let client = Client::new(ClientConfig {
            base: url.parse().map_err(|e| format!("{url}: {e}"))?,
            version: HttpVersion::Auto,
            tls: Some(ClientTlsConfig {
                ca_file: Some(ca.clone()),
                ..ClientTlsConfig::default()
            }),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            max_response_bytes: 64 * 1024 * 1024,
        })?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Cluster {
            url,
            agent_token: printed("agent_token")?,
            ca,
            admin_token: printed("admin_token")?,
            client: Arc::new(client),
            rt,
        })
    }

    /// Lets the agent get, list and watch pods and namespaces (the
    /// ClusterRole of deploy/kubernetes). Idempotent.
    pub fn grant_agent_read(&self) -> Result<(), String> {
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": AGENT_ROLE},
            "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces"],
                       "verbs": ["get", "list", "watch"]}],
        });
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": AGENT_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": AGENT_ROLE},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                          "name": AGENT_USER}],
        });
        self.expect("POST", &format!("{rbac}/clusterroles"), &role, &[201, 409])?;
        self.expect(
            "POST",
            &format!("{rbac}/clusterrolebindings"),
            &binding,
            &[201, 409],
        )?;
        Ok(())
    }

    /// Creates namespace `name` (labelled as a team's) unless it exists.
    pub fn create_namespace(&self, name: &str) -> Result<(), String> {
        let body = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"team": "shop"}},
        });
        self.expect("POST", "/api/v1/namespaces", &body, &[201, 409])?;
        Ok(())
    }

    /// Creates `pods` in `ns`, then sets the status of those with a
    /// container id; their uids, in the order given.
    pub fn create_pods(&self, ns: &str, pods: &[NewPod]) -> Result<Vec<String>, String> {
        let ns = ns.to_string();
        let namespace = ns.clone();
        let created = self.each(pods, move |client, admin, pod| {
            let path = format!("/api/v1/namespaces/{namespace}/pods");
            let body = pod_body(&pod);
            async move {
                let v = send(&client, &admin, "POST", &path, JSON, &body, &[201]).await?;
                v["metadata"]["uid"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("pod {}: no uid in {v}", pod.name))
            }
        })?;
        self.each(pods, move |client, admin, pod| {
            let path = format!("/api/v1/namespaces/{ns}/pods/{}/status", pod.name);
            let body = status_patch(&pod);
            async move {
                if let Some(body) = body {
                    send(&client, &admin, "PATCH", &path, MERGE_PATCH, &body, &[200]).await?;
                }
                Ok(())
            }
        })?;
        Ok(created)
    }

    /// Deletes every pod of namespace `ns` at once (no kubelet runs to
    /// wait for). The namespace stays: without a controller manager, a
    /// deleted namespace would stay terminating.
    pub fn delete_pods(&self, ns: &str) -> Result<(), String> {
        let path = format!("/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0");
        self.rt.block_on(send(
            &self.client,
            &self.admin_token,
            "DELETE",
            &path,
            JSON,
            &Value::Null,
            &[200],
        ))?;
        Ok(())
    }

    /// Writes a kubeconfig for the agent's token (and this server's CA)
    /// to `path`.
    pub fn agent_kubeconfig(&self, path: &Path) -> Result<(), String> {
        let yaml = format!(
            "apiVersion: v1\nkind: Config\n\
             clusters:\n- name: bench\n  cluster:\n    server: {}\n    certificate-authority: {}\n\
             users:\n- name: bench-agent\n  user:\n    token: {}\n\
             contexts:\n- name: bench\n  context:\n    cluster: bench\n    user: bench-agent\n\
             current-context: bench\n",
            self.url,
            self.ca.display(),
            self.agent_token
        );
        std::fs::write(path, yaml).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A request that must answer one of `expect`; its JSON body.
    fn expect(
        &self,
        method: &str,
        path: &str,
        body: &Value,
        expect: &[u16],
    ) -> Result<Value, String> {
        self.rt.block_on(send(
            &self.client,
            &self.admin_token,
            method,
            path,
            JSON,
            body,
            expect,
        ))
    }

    /// Runs `request` for every item, [`PARALLEL`] at a time; the results
    /// in the items' order, or the first failure.
    fn each<T, R, F, Fut>(&self, items: &[T], request: F) -> Result<Vec<R>, String>
    where
        T: Clone + Send + Sync + 'static,
        R: Send + 'static,
        F: Fn(Arc<Client>, String, T) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<R, String>> + Send,
    {
        let items: Arc<Vec<T>> = Arc::new(items.to_vec());
        let next = Arc::new(AtomicUsize::new(0));
        let request = Arc::new(request);
        self.rt.block_on(async {
            let mut workers = tokio::task::JoinSet::new();
            for _ in 0..PARALLEL.min(items.len()) {
                let (items, next, request) = (items.clone(), next.clone(), request.clone());
                let (client, admin) = (self.client.clone(), self.admin_token.clone());
                workers.spawn(async move {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return Ok::<_, String>(done);
                        };
                        let r = request(client.clone(), admin.clone(), item.clone()).await?;
                        done.push((i, r));
                    }
                });
            }
            let mut all = Vec::with_capacity(items.len());
            while let Some(joined) = workers.join_next().await {
                all.extend(joined.map_err(|e| e.to_string())??);
            }
            all.sort_by_key(|(i, _)| *i);
            Ok(all.into_iter().map(|(_, r)| r).collect())
        })
    }
}

const JSON: &str = "application/json";

/// Times a request that got no answer is sent again.
const RETRIES: usize = 3;
const MERGE_PATCH: &str = "application/merge-patch+json";

/// One request with `token`; the answer's body as JSON (null when
/// empty), or why it was not one of `expect`.
async fn send(
    client: &Client,
    token: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
    expect: &[u16],
) -> Result<Value, String> {
    let payload = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    let request = || {
        http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", content_type)
            .header("accept", JSON)
            .body(Full::new(payload.clone()))
            .map_err(|e| format!("{method} {path}: {e}"))
    };
    let mut tries = 0;
    let answer = loop {
        // a connection the server closed while idle (an HTTP/2 GOAWAY)
        // fails the request that meets it: it goes again on a new one
        match client.send(request()?).await {
            Ok(a) => break a,
            Err(e) if tries < RETRIES => {
                tries += 1;
                tracing::debug!(error = %e, method, path, "request again");
            }
            Err(e) => return Err(format!("{method} {path}: {e}")),
        }
    };
    let status = answer.status.as_u16();
    if !expect.contains(&status) {
        return Err(format!(
            "{method} {path}: {status} (expected {expect:?}): {}",
            String::from_utf8_lossy(&answer.body)
        ));
    }
    if answer.body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&answer.body)
        .map_err(|e| format!("{method} {path}: the answer is not JSON ({e})"))
}

/// A pod as a Deployment makes it: a few labels, two annotations, one
/// container.
fn pod_body(pod: &NewPod) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "labels": {
                "app.kubernetes.io/name": "orders",
                "pod-template-hash": "7c9d8b5f4d",
                "index": pod.index.to_string(),
            },
            "annotations": {
                "example.com/owner": format!("team-{}", pod.index % 10),
                "kubectl.kubernetes.io/restartedAt": "2026-12-01T09:00:00Z",
            },
        },
        "spec": {
            "nodeName": pod.node,
            "containers": [{"name": CONTAINER, "image": IMAGE}],
        },
    })
}

/// The status a kubelet reports for a running pod: phase, pod IP and the
/// container's id; `None` for a pod without a container id.
fn status_patch(pod: &NewPod) -> Option<Value> {
    let id = pod.container_id.as_ref()?;
    Some(json!({"status": {
        "phase": "Running",
        "podIP": format!("10.244.{}.{}", pod.index / 250, pod.index % 250 + 2),
        "containerStatuses": [{
            "name": CONTAINER, "image": IMAGE, "imageID": "", "ready": true,
            "restartCount": 0, "started": true,
            "containerID": format!("containerd://{id}"),
            "state": {"running": {"startedAt": "2026-12-06T00:00:00Z"}},
        }],
    }}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_carry_their_index_and_a_kubelets_status() {
        let pod = NewPod {
            name: "orders-7".into(),
            node: "n".into(),
            index: 7,
            container_id: Some("ab".repeat(32)),
        };
        let body = pod_body(&pod);
        assert_eq!(body["metadata"]["labels"]["index"], "7");
        assert_eq!(body["spec"]["nodeName"], "n");
        let status = status_patch(&pod).unwrap();
        assert_eq!(
            status["status"]["containerStatuses"][0]["containerID"],
            format!("containerd://{}", "ab".repeat(32))
        );
        assert!(status_patch(&NewPod {
            container_id: None,
            ..pod
        })
        .is_none());
    }
}
