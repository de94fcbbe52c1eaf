//! A real Kubernetes API server for black-box tests (scripts/kube.sh:
//! kube-apiserver v1.37.2 over etcd, no kubelet), the REST calls the tests
//! make on it as an administrator, and [`Kubelet`], which writes the
//! kubelet's container-log layout in a temporary dir as the kubelet does.
//! Tests fail, never skip, when the server cannot start: go and the Go
//! module proxy build it (also done by scripts/test-deps.sh), curl talks
//! to it.
//!
//! The shared server (`Kube::shared()`) is started once per test binary on
//! first use and left running for the next binary; scripts/test.sh stops
//! it. Tests on it never stop it and name what they create with
//! [`unique`], since other tests (and earlier runs: its etcd keeps its
//! data) share it. A test that stops, restarts or compacts a server takes
//! one of its own (`Kube::private()`).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A name no other test, test binary or earlier run gives: `prefix`, the
/// time in milliseconds, the process id and a counter, lower case (a valid
/// Kubernetes object name for a prefix of lower-case letters, digits and
/// `-`).
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!(
        "{}-{ms:x}-{}-{}",
        prefix.to_lowercase(),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs `scripts/kube.sh <cmd>` with its state in `dir` and returns what it
/// printed.
pub fn kube_sh(cmd: &str, dir: &Path) -> String {
    let out = Command::new(repo().join("scripts/kube.sh"))
        .arg(cmd)
        .env("LOGFERRY_KUBE_DIR", dir)
        .output()
        .expect("run scripts/kube.sh");
    assert!(
        out.status.success(),
        "scripts/kube.sh {cmd} failed; the Kubernetes tests need go and the Go module proxy \
         (see scripts/test-deps.sh), openssl and curl:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// What `scripts/kube.sh start` prints: `key=value` lines.
fn printed(out: &str, key: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("scripts/kube.sh start printed no {key}= line: {out:?}"))
        .to_string()
}

/// An HTTP answer: the status and the body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    /// The body as JSON (panics, showing it, if it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("answer {} is not JSON ({e}): {}", self.status, self.body))
    }
}

/// A new pod: what [`Kube::create_pods_bulk`] creates, and
/// [`Kube::create_pod`] too.
#[derive(Debug, Clone, Default)]
pub struct PodSpec {
    pub namespace: String,
    pub name: String,
    /// `spec.nodeName`: which node's agent sees it (no scheduler runs).
    pub node: String,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    /// (name, image) of each container.
    pub containers: Vec<(String, String)>,
}

impl PodSpec {
    /// A pod with one container `app` (image `busybox:1.37`).
    pub fn new(namespace: &str, name: &str, node: &str) -> PodSpec {
        PodSpec {
            namespace: namespace.into(),
            name: name.into(),
            node: node.into(),
            containers: vec![("app".into(), "busybox:1.37".into())],
            ..PodSpec::default()
        }
    }

    pub fn label(mut self, key: &str, value: &str) -> PodSpec {
        self.labels.push((key.into(), value.into()));
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> PodSpec {
        self.annotations.push((key.into(), value.into()));
        self
    }

    /// Replaces the containers.
    pub fn containers(mut self, containers: &[(&str, &str)]) -> PodSpec {
        self.containers = pairs(containers);
        self
    }

    fn body(&self) -> Value {
        let containers: Vec<Value> = self
            .containers
            .iter()
            .map(|(name, image)| json!({"name": name, "image": image}))
            .collect();
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name,
                "labels": string_map(&self.labels),
                "annotations": string_map(&self.annotations),
            },
            "spec": {"nodeName": self.node, "containers": containers},
        })
    }

    fn path(&self) -> String {
        format!("/api/v1/namespaces/{}/pods", self.namespace)
    }
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn string_map(p: &[(String, String)]) -> Value {
    Value::Object(
        p.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>(),
    )
}

/// A merge patch of `field` (labels or annotations) under `metadata`:
/// `None` removes the key.
fn metadata_patch(field: &str, changes: &[(&str, Option<&str>)]) -> Value {
    let map: Map<String, Value> = changes
        .iter()
        .map(|(k, v)| (k.to_string(), v.map_or(Value::Null, Value::from)))
        .collect();
    json!({"metadata": {field: map}})
}

/// A kube-apiserver with its etcd: the shared one, or a private one
/// (cleaned when dropped).
pub struct Kube {
    /// scripts/kube.sh's state dir (LOGFERRY_KUBE_DIR).
    dir: PathBuf,
    /// `https://127.0.0.1:PORT`, the same across restarts.
    url: String,
    admin_token: String,
    agent_token: String,
    /// The API server's self-signed certificate and its CA, which clients
    /// trust.
    ca: PathBuf,
    /// A private server's state lives here; removed after the server is
    /// stopped.
    tmp: Option<tempfile::TempDir>,
}

impl Kube {
    /// The shared server, started on first use (and left running for the
    /// next test binary; scripts/test.sh stops it).
    pub fn shared() -> &'static Kube {
        static K: OnceLock<Kube> = OnceLock::new();
        K.get_or_init(|| Kube::start_in(repo().join("target/kube"), None))
    }

    /// A server of this test's own, with its own ports and state: it may
    /// be stopped, restarted (on the same address) and compacted, and is
    /// stopped and deleted when dropped.
    pub fn private() -> Kube {
        let tmp = tempfile::tempdir().unwrap();
        Kube::start_in(tmp.path().to_path_buf(), Some(tmp))
    }

    fn start_in(dir: PathBuf, tmp: Option<tempfile::TempDir>) -> Kube {
        let out = kube_sh("start", &dir);
        Kube {
            url: printed(&out, "url"),
            admin_token: printed(&out, "admin_token"),
            agent_token: printed(&out, "agent_token"),
            ca: PathBuf::from(printed(&out, "ca")),
            dir,
            tmp,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// A token of the group `system:masters`: allowed everything.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The token of user `log-agent`, allowed nothing until
    /// [`Kube::grant_agent_read`] (or a test's own binding).
    pub fn agent_token(&self) -> &str {
        &self.agent_token
    }

    /// The CA file that verifies the server's certificate (for
    /// 127.0.0.1).
    pub fn ca_file(&self) -> &Path {
        &self.ca
    }

    /// The script's state dir (logs under `apiserver/` and `etcd/`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the API server and etcd (a private server only); objects and
    /// address stay for [`Kube::start`].
    pub fn stop(&self) {
        assert!(self.tmp.is_some(), "the shared server is never stopped");
        kube_sh("stop", &self.dir);
    }

    /// Starts a stopped private server again, on the same address, with
    /// its objects; returns once it is ready.
    pub fn start(&self) {
        assert!(self.tmp.is_some(), "the shared server is never restarted");
        let out = kube_sh("start", &self.dir);
        assert_eq!(
            printed(&out, "url"),
            self.url,
            "restarted on another address"
        );
    }

    /// Compacts etcd to its current revision (a private server only), so
    /// that a watch or list from an older resourceVersion that etcd has to
    /// answer gets `410 Gone`. Returns the revision.
    pub fn compact(&self) -> u64 {
        assert!(self.tmp.is_some(), "the shared server is never compacted");
        let out = kube_sh("compact", &self.dir);
        printed(&out, "revision").parse().unwrap()
    }

    /// One request with `token` (`content_type` for the body, if any).
    pub fn request(
        &self,
        token: &str,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&[u8]>,
    ) -> Answer {
        let mut cmd = self.curl(token);
        cmd.args(["-X", method, "-w", "\n%{http_code}"]);
        if body.is_some() {
            cmd.args(["-H", &format!("Content-Type: {content_type}")])
                .args(["--data-binary", "@-"]);
        }
        cmd.arg(format!("{}{path}", self.url));
        let out = run_curl(cmd, body.unwrap_or_default());
        let (body, status) = out.rsplit_once('\n').unwrap_or(("", &out));
        Answer {
            status: status
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("curl {method} {path} printed no status: {out:?}")),
            body: body.to_string(),
        }
    }

    /// curl with this server's CA and `token`, its own errors shown.
    fn curl(&self, token: &str) -> Command {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--max-time", "60", "--cacert"])
            .arg(&self.ca)
            .args(["-H", &format!("Authorization: Bearer {token}")]);
        cmd
    }

    /// A GET as administrator.
    pub fn get(&self, path: &str) -> Answer {
        self.request(&self.admin_token, "GET", path, "", None)
    }

    /// A JSON request as administrator that must answer `expect` (one of
    /// them); the answer's body as JSON.
    fn admin_json(&self, method: &str, path: &str, body: &Value, expect: &[u16]) -> Value {
        self.admin_body(method, path, "application/json", body, expect)
    }

    fn admin_body(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &Value,
        expect: &[u16],
    ) -> Value {
        let a = self.request(
            &self.admin_token,
            method,
            path,
            content_type,
            Some(body.to_string().as_bytes()),
        );
        assert!(
            expect.contains(&a.status),
            "{method} {path}: {} (expected {expect:?}): {}",
            a.status,
            a.body
        );
        a.json()
    }

    fn merge_patch(&self, path: &str, patch: &Value) -> Value {
        self.admin_body("PATCH", path, "application/merge-patch+json", patch, &[200])
    }

    /// Creates namespace `name`; it must not exist.
    pub fn create_namespace(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
    ) {
        let body = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": string_map(&pairs(labels)),
                "annotations": string_map(&pairs(annotations)),
            },
        });
        self.admin_json("POST", "/api/v1/namespaces", &body, &[201]);
    }

    /// Creates namespace `name` unless it exists.
    pub fn ensure_namespace(&self, name: &str) {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let a = self.request(
            &self.admin_token,
            "POST",
            "/api/v1/namespaces",
            "application/json",
            Some(body.to_string().as_bytes()),
        );
        assert!(
            matches!(a.status, 201 | 409),
            "create namespace {name}: {} {}",
            a.status,
            a.body
        );
    }

    /// Creates a pod on `node` (its `spec.nodeName`; it stays Pending, no
    /// kubelet runs) and returns its uid.
    pub fn create_pod(
        &self,
        ns: &str,
        name: &str,
        node: &str,
        labels: &[(&str, &str)],
        annotations: &[(&str, &str)],
        containers: &[(&str, &str)],
    ) -> String {
        let spec = PodSpec {
            namespace: ns.into(),
            name: name.into(),
            node: node.into(),
            labels: pairs(labels),
            annotations: pairs(annotations),
            containers: pairs(containers),
        };
        self.create_spec(&spec)
    }

    /// Creates one pod from its spec; its uid.
    pub fn create_spec(&self, spec: &PodSpec) -> String {
        let pod = self.admin_json("POST", &spec.path(), &spec.body(), &[201]);
        uid_of(&pod)
    }

    /// Creates many pods at once (one curl process, 16 requests at a
    /// time); their uids, in the order given. 2,000 pods take seconds.
    pub fn create_pods_bulk(&self, pods: &[PodSpec]) -> Vec<String> {
        if pods.is_empty() {
            return Vec::new();
        }
        let tmp = tempfile::tempdir().unwrap();
        let mut config = String::new();
        for (i, spec) in pods.iter().enumerate() {
            let body = tmp.path().join(format!("{i}.in.json"));
            std::fs::write(&body, spec.body().to_string()).unwrap();
            if i > 0 {
                config.push_str("next\n");
            }
            // curl's config syntax: a quoted string takes \" and \\
            let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
            config.push_str(&format!(
                "url = {}\nrequest = \"POST\"\ncacert = {}\nheader = {}\n\
                 header = \"Content-Type: application/json\"\ndata-binary = {}\noutput = {}\n",
                quote(&format!("{}{}", self.url, spec.path())),
                quote(&self.ca.display().to_string()),
                quote(&format!("Authorization: Bearer {}", self.admin_token)),
                quote(&format!("@{}", body.display())),
                quote(
                    &tmp.path()
                        .join(format!("{i}.out.json"))
                        .display()
                        .to_string()
                ),
            ));
        }
        let cfg = tmp.path().join("curl.cfg");
        std::fs::write(&cfg, config).unwrap();
        let mut cmd = Command::new("curl");
        cmd.args([
            "-sS",
            "--parallel",
            "--parallel-max",
            "16",
            "--max-time",
            "120",
        ])
        .arg("--config")
        .arg(&cfg);
        run_curl(cmd, b"");
        pods.iter()
            .enumerate()
            .map(|(i, spec)| {
                let p = tmp.path().join(format!("{i}.out.json"));
                let out = std::fs::read_to_string(&p)
                    .unwrap_or_else(|e| panic!("pod {}: no answer ({e})", spec.name));
                let v: Value = serde_json::from_str(&out)
                    .unwrap_or_else(|e| panic!("pod {}: answer not JSON ({e}): {out}", spec.name));
                assert_eq!(
                    v["kind"], "Pod",
                    "creating pod {}/{} failed: {out}",
                    spec.namespace, spec.name
                );
                uid_of(&v)
            })
            .collect()
    }

    /// The pod as the server has it.
    pub fn pod(&self, ns: &str, name: &str) -> Value {
        let a = self.get(&format!("/api/v1/namespaces/{ns}/pods/{name}"));
        assert_eq!(a.status, 200, "get pod {ns}/{name}: {}", a.body);
        a.json()
    }

    /// Sets the containers' ids (`containerd://<64 hex>`, as a kubelet
    /// reports them) in the pod's status, phase Running, through the
    /// status subresource.
    pub fn set_container_ids(&self, ns: &str, pod: &str, ids: &[(&str, &str)]) {
        let current = self.pod(ns, pod);
        let images: BTreeMap<String, String> = current["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default().to_string(),
                    c["image"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let statuses: Vec<Value> = ids
            .iter()
            .map(|(name, id)| {
                let image = images
                    .get(*name)
                    .unwrap_or_else(|| panic!("pod {ns}/{pod} has no container {name}"));
                json!({
                    "name": name, "image": image, "imageID": "", "ready": true,
                    "restartCount": 0, "started": true, "containerID": id,
                    "state": {"running": {"startedAt": "2026-12-06T00:00:00Z"}},
                })
            })
            .collect();
        let patch = json!({"status": {"phase": "Running", "containerStatuses": statuses}});
        self.merge_patch(
            &format!("/api/v1/namespaces/{ns}/pods/{pod}/status"),
            &patch,
        );
    }

    /// Merges `changes` into the pod's labels (`None` removes a key).
    pub fn patch_pod_labels(&self, ns: &str, pod: &str, changes: &[(&str, Option<&str>)]) {
        let path = format!("/api/v1/namespaces/{ns}/pods/{pod}");
        self.merge_patch(&path, &metadata_patch("labels", changes));
    }

    /// Merges `changes` into the pod's annotations (`None` removes a key).
    pub fn patch_pod_annotations(&self, ns: &str, pod: &str, changes: &[(&str, Option<&str>)]) {
        let path = format!("/api/v1/namespaces/{ns}/pods/{pod}");
        self.merge_patch(&path, &metadata_patch("annotations", changes));
    }

    /// Merges `changes` into the namespace's labels (`None` removes a key).
    pub fn patch_namespace_labels(&self, ns: &str, changes: &[(&str, Option<&str>)]) {
        let path = format!("/api/v1/namespaces/{ns}");
        self.merge_patch(&path, &metadata_patch("labels", changes));
    }

    /// Merges `changes` into the namespace's annotations (`None` removes a
    /// key).
    pub fn patch_namespace_annotations(&self, ns: &str, changes: &[(&str, Option<&str>)]) {
        let path = format!("/api/v1/namespaces/{ns}");
        self.merge_patch(&path, &metadata_patch("annotations", changes));
    }

    /// Deletes the pod at once (`gracePeriodSeconds=0`: with a node set
    /// and no kubelet, a graceful delete would wait forever).
    pub fn delete_pod(&self, ns: &str, name: &str) {
        let a = self.request(
            &self.admin_token,
            "DELETE",
            &format!("/api/v1/namespaces/{ns}/pods/{name}?gracePeriodSeconds=0"),
            "",
            None,
        );
        assert_eq!(a.status, 200, "delete pod {ns}/{name}: {}", a.body);
    }

    /// Gives user `log-agent` what a log agent needs and nothing more:
    /// get, list and watch on pods and namespaces, cluster-wide (the
    /// ClusterRole of deploy/kubernetes). Idempotent.
    pub fn grant_agent_read(&self) {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "logferry-test-agent"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "namespaces"],
                       "verbs": ["get", "list", "watch"]}],
        });
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "logferry-test-agent"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "logferry-test-agent"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                          "name": "log-agent"}],
        });
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        self.admin_json("POST", &format!("{rbac}/clusterroles"), &role, &[201, 409]);
        self.admin_json(
            "POST",
            &format!("{rbac}/clusterrolebindings"),
            &binding,
            &[201, 409],
        );
        self.wait_allowed(&self.agent_token, "/api/v1/pods?limit=1");
        self.wait_allowed(&self.agent_token, "/api/v1/namespaces?limit=1");
    }

    /// Waits until `token` may GET `path`: the API server's authorizer
    /// learns of a new binding through its own watch, a moment after the
    /// binding is stored.
    pub fn wait_allowed(&self, token: &str, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let a = self.request(token, "GET", path, "", None);
            if a.status == 200 {
                return;
            }
            assert!(
                a.status == 403 && Instant::now() < deadline,
                "GET {path}: {} {}",
                a.status,
                a.body
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes `dir/kubeconfig` for this server (its CA, `token`) and
    /// returns its path.
    pub fn kubeconfig(&self, dir: &Path, token: &str) -> PathBuf {
        let path = dir.join("kubeconfig");
        let yaml = format!(
            "apiVersion: v1\n\
             kind: Config\n\
             clusters:\n\
             - name: logferry-test\n  cluster:\n    server: {}\n    certificate-authority: {}\n\
             users:\n\
             - name: logferry-test\n  user:\n    token: {}\n\
             contexts:\n\
             - name: logferry-test\n  context:\n    cluster: logferry-test\n    user: logferry-test\n\
             current-context: logferry-test\n",
            self.url,
            self.ca.display(),
            token
        );
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// A watch with `token` on `path` (which has `watch=1` and whatever
    /// else), read for at most `max`: the status and the event lines.
    pub fn watch(&self, token: &str, path: &str, max: Duration) -> (u16, Vec<String>) {
        let mut cmd = self.curl(token);
        cmd.args(["-N", "-w", "\n%{http_code}"])
            .args(["--max-time", &max.as_secs().max(1).to_string()])
            .arg(format!("{}{path}", self.url));
        let out = cmd.stdin(Stdio::null()).output().expect("run curl");
        // 28: the time is up, which ends every watch the server keeps open
        assert!(
            out.status.success() || out.status.code() == Some(28),
            "curl watch {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (events, status) = text.rsplit_once('\n').unwrap_or(("", &text));
        let status = status.trim().parse().unwrap_or(0);
        let lines = events
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(String::from)
            .collect();
        (status, lines)
    }
}

impl Drop for Kube {
    fn drop(&mut self) {
        if self.tmp.is_some() {
            let _ = Command::new(repo().join("scripts/kube.sh"))
                .arg("clean")
                .env("LOGFERRY_KUBE_DIR", &self.dir)
                .output();
        }
    }
}

fn uid_of(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_else(|| panic!("no metadata.uid in {object}"))
        .to_string()
}

/// Runs curl with `stdin`; its output (curl's own failure is a panic).
fn run_curl(mut cmd: Command, stdin: &[u8]) -> String {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run curl");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&data));
    let out = child.wait_with_output().expect("wait for curl");
    writer.join().unwrap().expect("write curl's stdin");
    assert!(
        out.status.success(),
        "curl failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The kubelet's container-log layout under a temporary `pods_root` (what
/// the kubernetes source's `pods_root` points at):
/// `<pods_root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`, each
/// line written as containerd/CRI-O (CRI) or Docker's json-file driver
/// writes it, and rotated as the kubelet rotates it.
pub struct Kubelet {
    root: tempfile::TempDir,
}

/// The kubelet's default `containerLogMaxFiles`.
pub const KUBELET_MAX_FILES: usize = 5;

impl Default for Kubelet {
    fn default() -> Self {
        Kubelet::new()
    }
}

impl Kubelet {
    pub fn new() -> Kubelet {
        Kubelet {
            root: tempfile::tempdir().unwrap(),
        }
    }

    /// The dir holding one dir per pod.
    pub fn pods_root(&self) -> &Path {
        self.root.path()
    }

    /// `<pods_root>/<namespace>_<pod>_<uid>`.
    pub fn pod_dir(&self, ns: &str, pod: &str, uid: &str) -> PathBuf {
        self.root.path().join(format!("{ns}_{pod}_{uid}"))
    }

    /// The live log of a container's `restart`-th run: `<restart>.log`.
    pub fn log_path(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        restart: u32,
    ) -> PathBuf {
        self.pod_dir(ns, pod, uid)
            .join(container)
            .join(format!("{restart}.log"))
    }

    fn append(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        f.write_all(text.as_bytes()).unwrap();
    }

    /// Appends each line as one whole CRI line on stdout:
    /// `2026-12-06T05:12:07.123456789Z stdout F <text>`.
    pub fn write_cri<S: AsRef<str>>(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        restart: u32,
        lines: impl IntoIterator<Item = S>,
    ) {
        let mut text = String::new();
        for l in lines {
            text.push_str(&cri_line("stdout", 'F', l.as_ref()));
        }
        self.append(&self.log_path(ns, pod, uid, container, restart), &text);
    }

    /// Appends one logical line split into `parts` as the runtime splits a
    /// long one (16 KiB in containerd): every part but the last tagged `P`
    /// (partial), the last `F`, all on `stream` (`stdout` or `stderr`).
    #[allow(clippy::too_many_arguments)]
    pub fn write_cri_parts(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        restart: u32,
        stream: &str,
        parts: &[&str],
    ) {
        let mut text = String::new();
        for (i, p) in parts.iter().enumerate() {
            let tag = if i + 1 == parts.len() { 'F' } else { 'P' };
            text.push_str(&cri_line(stream, tag, p));
        }
        self.append(&self.log_path(ns, pod, uid, container, restart), &text);
    }

    /// Appends each line as Docker's json-file driver writes it:
    /// `{"log":"text\n","stream":"stdout","time":"..."}`.
    pub fn write_docker<S: AsRef<str>>(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        restart: u32,
        lines: impl IntoIterator<Item = S>,
    ) {
        let mut text = String::new();
        for l in lines {
            text.push_str(&docker_line("stdout", &format!("{}\n", l.as_ref())));
        }
        self.append(&self.log_path(ns, pod, uid, container, restart), &text);
    }

    /// Appends one logical line in `parts` as Docker splits a long one (at
    /// 16 KiB): only the last part's `log` ends with `\n`.
    #[allow(clippy::too_many_arguments)]
    pub fn write_docker_parts(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        restart: u32,
        parts: &[&str],
    ) {
        let mut text = String::new();
        for (i, p) in parts.iter().enumerate() {
            let log = if i + 1 == parts.len() {
                format!("{p}\n")
            } else {
                p.to_string()
            };
            text.push_str(&docker_line("stdout", &log));
        }
        self.append(&self.log_path(ns, pod, uid, container, restart), &text);
    }

    /// [`Kubelet::rotate_keeping`] with the kubelet's default of 5 files.
    pub fn rotate(&self, ns: &str, pod: &str, uid: &str, container: &str, restart: u32) {
        self.rotate_keeping(ns, pod, uid, container, restart, KUBELET_MAX_FILES);
    }

    /// Rotates `<restart>.log` as the kubelet's container log manager does
    /// when the file reaches `containerLogMaxSize`
    /// (pkg/kubelet/logs/container_log_manager.go, `rotateLog`), in its
    /// order:
    /// 1. of the rotated files `<restart>.log.*`, a `.tmp` left by a failed
    ///    compression, or a plain file whose `.gz` exists, is removed;
    /// 2. the oldest are removed (by name, which sorts by time) until at
    ///    most `max_files - 2` are left (the live file and the one about
    ///    to be rotated make `max_files`);
    /// 3. each plain rotated file left (the one the previous rotation
    ///    renamed) is gzipped into `<name>.tmp`, which is renamed to
    ///    `<name>.gz`, and the plain one removed;
    /// 4. `<restart>.log` is renamed to `<restart>.log.<YYYYMMDD-HHMMSS>`
    ///    (local time, kubelet's `20060102-150405`), left uncompressed so
    ///    that a reader can finish it, and the runtime reopens a new empty
    ///    `<restart>.log` (created here at once).
    ///
    /// The kubelet checks sizes every 10 s, so two rotations never share a
    /// second's timestamp; tests rotate faster, so the timestamp is moved
    /// past the newest rotated file's when it would not sort after it.
    /// Steps 1 to 4 are the benchmark's own (`logferry::bench::kubernetes::
    /// kubelet::rotate_keeping`), so tests and benchmark rotate alike.
    pub fn rotate_keeping(
        &self,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        restart: u32,
        max_files: usize,
    ) {
        let live = self.log_path(ns, pod, uid, container, restart);
        logferry::bench::kubernetes::kubelet::rotate_keeping(&live, max_files)
            .unwrap_or_else(|e| panic!("rotate {}: {e}", live.display()));
        File::create(&live).unwrap();
    }

    /// Deletes the pod's dir and every log in it, as the kubelet does once
    /// the pod is gone.
    pub fn remove_pod(&self, ns: &str, pod: &str, uid: &str) {
        std::fs::remove_dir_all(self.pod_dir(ns, pod, uid)).unwrap();
    }
}

/// The time as the runtimes write it: RFC 3339 with nanoseconds, UTC.
fn now_rfc3339() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.9fZ")
        .to_string()
}

/// One CRI log line: `<time> <stream> <P|F> <text>\n`.
fn cri_line(stream: &str, tag: char, text: &str) -> String {
    format!("{} {stream} {tag} {text}\n", now_rfc3339())
}

/// One json-file line; `log` carries its own `\n` when the line is whole.
fn docker_line(stream: &str, log: &str) -> String {
    let mut line = json!({"log": log, "stream": stream, "time": now_rfc3339()}).to_string();
    line.push('\n');
    line
}
