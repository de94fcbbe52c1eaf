//! The real Kubernetes API server the kubernetes tests run against
//! (scripts/kube.sh, tests/common/kube.rs), checked on its own: the
//! helpers do what the tests rely on, RBAC gives the agent's token exactly
//! what deploy/kubernetes grants, a compacted etcd answers an old
//! resourceVersion with 410, a restarted server keeps its address, the
//! kubelet layout rotates as the kubelet does, and every object in
//! deploy/kubernetes is accepted by the server.

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::kube::{unique, Kube, Kubelet, PodSpec};
use serde_json::Value;

/// The names of the pods in a list answer.
fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_agent_token_lists_and_watches_pods_once_granted() {
    let k = Kube::shared();
    let ns = unique("srv-list");
    let node = unique("node");
    k.create_namespace(&ns, &[("team", "logs")], &[("owner", "a")]);
    let uid = k.create_pod(
        &ns,
        "web-1",
        &node,
        &[("app", "web")],
        &[("example.com/owner", "team-a")],
        &[("nginx", "nginx:1.27"), ("sidecar", "busybox:1.37")],
    );
    k.grant_agent_read();

    let path = format!("/api/v1/pods?fieldSelector=spec.nodeName%3D{node}");
    let a = k.request(k.agent_token(), "GET", &path, "", None);
    assert_eq!(a.status, 200, "{}", a.body);
    let list = a.json();
    assert_eq!(names(&list), ["web-1"]);
    let pod = &list["items"][0];
    assert_eq!(pod["metadata"]["uid"], uid.as_str());
    assert_eq!(pod["metadata"]["labels"]["app"], "web");
    assert_eq!(
        pod["metadata"]["annotations"]["example.com/owner"],
        "team-a"
    );

    let a = k.request(
        k.agent_token(),
        "GET",
        &format!("/api/v1/namespaces/{ns}"),
        "",
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["metadata"]["labels"]["team"], "logs");

    // status: container ids and Running, as a kubelet reports them
    let id = format!("containerd://{}", "ab".repeat(32));
    k.set_container_ids(&ns, "web-1", &[("nginx", &id)]);
    let p = k.pod(&ns, "web-1");
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(
        p["status"]["containerStatuses"][0]["containerID"],
        id.as_str()
    );

    // the watch from the list's resourceVersion sees a patch and the delete
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    k.patch_pod_labels(&ns, "web-1", &[("app", None), ("version", Some("v2"))]);
    k.patch_pod_annotations(&ns, "web-1", &[("logferry.io/exclude", Some("true"))]);
    k.patch_namespace_labels(&ns, &[("team", Some("infra"))]);
    k.delete_pod(&ns, "web-1");
    let (status, events) = k.watch(
        k.agent_token(),
        &format!("{path}&watch=1&resourceVersion={rv}"),
        Duration::from_secs(3),
    );
    assert_eq!(status, 200);
    let events: Vec<Value> = events
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.last(), Some(&"DELETED"), "{kinds:?}");
    let labelled = events
        .iter()
        .find(|e| e["object"]["metadata"]["labels"]["version"] == "v2")
        .expect("a MODIFIED event with the new label");
    assert!(labelled["object"]["metadata"]["labels"]
        .get("app")
        .is_none());
}

#[test]
fn the_agent_token_may_do_nothing_else() {
    let k = Kube::shared();
    let ns = unique("srv-rbac");
    k.create_namespace(&ns, &[], &[]);
    k.create_pod(&ns, "p", "node-x", &[], &[], &[("app", "busybox:1.37")]);
    k.grant_agent_read();
    let agent = k.agent_token();
    let pod = PodSpec::new(&ns, "q", "node-x");
    let denied = [
        (
            "POST",
            format!("/api/v1/namespaces/{ns}/pods"),
            Some(
                r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"a","image":"b"}]}}"#,
            ),
        ),
        ("GET", format!("/api/v1/namespaces/{ns}/secrets"), None),
        ("GET", "/api/v1/secrets".to_string(), None),
        ("GET", "/api/v1/configmaps".to_string(), None),
        ("DELETE", format!("/api/v1/namespaces/{ns}/pods/p"), None),
        (
            "PATCH",
            format!("/api/v1/namespaces/{ns}/pods/p"),
            Some(r#"{"metadata":{"labels":{"x":"y"}}}"#),
        ),
        ("GET", format!("/api/v1/namespaces/{ns}/pods/p/log"), None),
        ("GET", "/api/v1/nodes".to_string(), None),
    ];
    for (method, path, body) in denied {
        let ct = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        let a = k.request(agent, method, &path, ct, body.map(str::as_bytes));
        assert_eq!(a.status, 403, "{method} {path} as the agent: {}", a.body);
    }
    // what it needs
    for path in [
        format!("/api/v1/namespaces/{ns}/pods/p"),
        "/api/v1/pods?limit=1".to_string(),
        "/api/v1/namespaces?limit=1".to_string(),
    ] {
        let a = k.request(agent, "GET", &path, "", None);
        assert_eq!(a.status, 200, "GET {path} as the agent: {}", a.body);
    }
    // the admin token is allowed what the agent's is not
    assert_eq!(k.create_spec(&pod).len(), 36);
}

#[test]
fn a_watch_from_before_a_compaction_gets_410_gone() {
    let k = Kube::private();
    let ns = unique("srv-gone");
    k.create_namespace(&ns, &[], &[]);
    k.create_pod(&ns, "p", "node-a", &[], &[], &[("app", "busybox:1.37")]);
    let list = k.get(&format!("/api/v1/namespaces/{ns}/pods")).json();
    let old = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..20 {
        k.patch_pod_labels(&ns, "p", &[("n", Some(&i.to_string()))]);
    }
    let rev = k.compact();
    assert!(
        rev > old.parse::<u64>().unwrap(),
        "compacted at {rev}, old {old}"
    );
    // the API server's watch cache starts anew from etcd on a restart, as
    // after an outage: the old version is then in neither
    k.stop();
    k.start();
    let (status, events) = k.watch(
        k.admin_token(),
        &format!("/api/v1/namespaces/{ns}/pods?watch=1&resourceVersion={old}"),
        Duration::from_secs(5),
    );
    let gone = status == 410
        || events.iter().any(|l| {
            let e: Value = serde_json::from_str(l).unwrap_or_default();
            e["type"] == "ERROR" && e["object"]["code"] == 410
        });
    assert!(gone, "status {status}, events {events:?}");
    // a list at exactly that version, which etcd answers (the watch cache
    // of the restarted server has no such snapshot), is gone too: without
    // the compaction it is 200
    let a = k.get(&format!(
        "/api/v1/namespaces/{ns}/pods?resourceVersion={old}&resourceVersionMatch=Exact"
    ));
    assert_eq!(a.status, 410, "{}", a.body);
}

#[test]
fn a_restarted_server_keeps_its_address_and_objects() {
    let k = Kube::private();
    let url = k.url().to_string();
    let ns = unique("srv-restart");
    k.create_namespace(&ns, &[("keep", "yes")], &[]);
    k.stop();
    let down = std::process::Command::new("curl")
        .args(["-s", "--max-time", "5", "--cacert"])
        .arg(k.ca_file())
        .arg(format!("{url}/readyz"))
        .status()
        .unwrap();
    assert!(!down.success(), "answers while stopped");
    k.start();
    assert_eq!(k.url(), url);
    let a = k.get(&format!("/api/v1/namespaces/{ns}"));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["metadata"]["labels"]["keep"], "yes");
    // a kubeconfig names the same server and CA
    let dir = tempfile::tempdir().unwrap();
    let cfg = std::fs::read_to_string(k.kubeconfig(dir.path(), k.agent_token())).unwrap();
    assert!(cfg.contains(&format!("server: {url}\n")), "{cfg}");
    assert!(cfg.contains(&k.ca_file().display().to_string()), "{cfg}");
}

#[test]
fn two_thousand_pods_are_created_in_one_go() {
    let k = Kube::private();
    let ns = unique("srv-bulk");
    k.create_namespace(&ns, &[], &[]);
    let pods: Vec<PodSpec> = (0..2000)
        .map(|i| {
            PodSpec::new(&ns, &format!("p-{i}"), &format!("node-{}", i % 20))
                .label("n", &i.to_string())
                .annotation("a", "b")
        })
        .collect();
    let t = Instant::now();
    let uids = k.create_pods_bulk(&pods);
    eprintln!("2000 pods created in {:?}", t.elapsed());
    assert_eq!(uids.len(), 2000);
    let distinct: std::collections::BTreeSet<_> = uids.iter().collect();
    assert_eq!(distinct.len(), 2000);
    let list = k.get(&format!("/api/v1/namespaces/{ns}/pods")).json();
    assert_eq!(names(&list).len(), 2000);
    let node3 = k
        .get(&format!(
            "/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3Dnode-3"
        ))
        .json();
    assert_eq!(names(&node3).len(), 100);
}

/// The files in a container's log dir, sorted.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// The text of a log file, gunzipped if it ends in `.gz`.
fn text(path: &std::path::Path) -> String {
    let raw = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(raw).unwrap()
    }
}

#[test]
fn the_kubelet_layout_rotates_as_the_kubelet_does() {
    let kubelet = Kubelet::new();
    let (ns, pod, uid, c) = ("ns", "web-1", "0f1e2d3c-0000-4000-8000-000000000001", "app");
    let live = kubelet.log_path(ns, pod, uid, c, 0);
    assert_eq!(
        live,
        kubelet
            .pods_root()
            .join(format!("{ns}_{pod}_{uid}/{c}/0.log"))
    );
    let dir = live.parent().unwrap().to_path_buf();
    for round in 0..8 {
        kubelet.write_cri(
            ns,
            pod,
            uid,
            c,
            0,
            (0..3).map(|i| format!("r{round} line {i}")),
        );
        kubelet.rotate(ns, pod, uid, c, 0);
        let f = files(&dir);
        // the live file, the last rotated one plain, older ones gzipped:
        // 5 files at most
        assert!(f.len() <= 5, "{f:?}");
        assert_eq!(f[0], "0.log", "{f:?}");
        let rotated = &f[1..];
        assert!(!rotated.last().unwrap().ends_with(".gz"), "{f:?}");
        assert!(
            rotated[..rotated.len() - 1]
                .iter()
                .all(|n| n.ends_with(".gz")),
            "{f:?}"
        );
        for n in rotated {
            let ts = n.trim_start_matches("0.log.").trim_end_matches(".gz");
            assert!(
                chrono::NaiveDateTime::parse_from_str(ts, "%Y%m%d-%H%M%S").is_ok(),
                "{n}"
            );
        }
        assert_eq!(std::fs::metadata(&live).unwrap().len(), 0);
    }
    // what is left is the last four rounds, oldest first
    let f = files(&dir);
    assert_eq!(f.len(), 5, "{f:?}");
    let all: String = f[1..].iter().map(|n| text(&dir.join(n))).collect();
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 12);
    for (i, l) in lines.iter().enumerate() {
        let want = format!("stdout F r{} line {}", 4 + i / 3, i % 3);
        assert!(l.ends_with(&want), "{l:?} is not {want:?}");
        assert!(l.len() > want.len() + 30, "{l:?} has no time");
    }
    kubelet.remove_pod(ns, pod, uid);
    assert!(!kubelet.pod_dir(ns, pod, uid).exists());
}

#[test]
fn the_kubelet_layout_writes_partial_and_docker_lines() {
    let kubelet = Kubelet::new();
    let (ns, pod, uid) = ("ns", "p", "0f1e2d3c-0000-4000-8000-000000000002");
    kubelet.write_cri_parts(ns, pod, uid, "cri", 1, "stderr", &["ab", "cd", "ef"]);
    let cri = text(&kubelet.log_path(ns, pod, uid, "cri", 1));
    let tags: Vec<(&str, &str, &str)> = cri
        .lines()
        .map(|l| {
            let mut f = l.splitn(4, ' ').skip(1);
            (f.next().unwrap(), f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    assert_eq!(
        tags,
        [
            ("stderr", "P", "ab"),
            ("stderr", "P", "cd"),
            ("stderr", "F", "ef")
        ]
    );
    kubelet.write_docker(ns, pod, uid, "dock", 0, ["whole"]);
    kubelet.write_docker_parts(ns, pod, uid, "dock", 0, &["pa", "rt"]);
    let logs: Vec<String> = text(&kubelet.log_path(ns, pod, uid, "dock", 0))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["stream"], "stdout");
            assert!(v["time"].as_str().unwrap().ends_with('Z'));
            v["log"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(logs, ["whole\n", "pa", "rt\n"]);
}

/// The documents of deploy/kubernetes/logferry.yaml.
fn deploy_documents() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/kubernetes/logferry.yaml"
    );
    let yaml = std::fs::read_to_string(path).unwrap();
    yaml.split("\n---\n")
        .map(str::to_string)
        .filter(|d| d.lines().any(|l| l.starts_with("kind:")))
        .collect()
}

/// `kind` and `metadata.name` of a manifest document (top-level keys).
fn kind_and_name(doc: &str) -> (String, String) {
    let kind = doc
        .lines()
        .find_map(|l| l.strip_prefix("kind: "))
        .unwrap()
        .trim()
        .to_string();
    let mut in_meta = false;
    let mut name = None;
    for l in doc.lines() {
        if l == "metadata:" {
            in_meta = true;
        } else if in_meta && !l.starts_with(' ') {
            break;
        } else if let Some(n) = l.strip_prefix("  name: ").filter(|_| in_meta) {
            name = Some(n.trim().to_string());
            break;
        }
    }
    (
        kind,
        name.unwrap_or_else(|| panic!("no metadata.name in {doc}")),
    )
}

/// Where objects of `kind` are created.
fn collection(kind: &str) -> &'static str {
    match kind {
        "Namespace" => "/api/v1/namespaces",
        "ServiceAccount" => "/api/v1/namespaces/logging/serviceaccounts",
        "ConfigMap" => "/api/v1/namespaces/logging/configmaps",
        "DaemonSet" => "/apis/apps/v1/namespaces/logging/daemonsets",
        "ClusterRole" => "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding" => "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        other => panic!("deploy/kubernetes has a {other} this test does not know"),
    }
}

#[test]
fn every_deploy_object_is_accepted_by_the_api_server() {
    let k = Kube::shared();
    // namespaced objects need their namespace, which a dry run does not
    // create
    k.ensure_namespace("logging");
    let docs = deploy_documents();
    let mut kinds = Vec::new();
    for doc in &docs {
        let (kind, name) = kind_and_name(doc);
        let a = submit(k, doc, "?dryRun=All&fieldValidation=Strict");
        assert!(
            matches!(a.status, 200 | 201),
            "{kind} {name}: {} {}",
            a.status,
            a.body
        );
        let v = a.json();
        assert_eq!(v["kind"], kind.as_str(), "{}", a.body);
        assert_eq!(v["metadata"]["name"], name.as_str(), "{}", a.body);
        kinds.push(kind);
    }
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "DaemonSet"
        ]
    );
}

/// Creates the object of a manifest document, or replaces it if it
/// exists (other tests, earlier runs), with `query` (a dry run, say).
fn submit(k: &Kube, doc: &str, query: &str) -> common::kube::Answer {
    let (kind, name) = kind_and_name(doc);
    let yaml = "application/yaml";
    let post = format!("{}{query}", collection(&kind));
    let a = k.request(k.admin_token(), "POST", &post, yaml, Some(doc.as_bytes()));
    if a.status != 409 {
        return a;
    }
    let put = format!("{}/{name}{query}", collection(&kind));
    k.request(k.admin_token(), "PUT", &put, yaml, Some(doc.as_bytes()))
}

/// Creates (or replaces) the object of a manifest document for real.
fn apply(k: &Kube, doc: &str) {
    let (kind, name) = kind_and_name(doc);
    let a = submit(k, doc, "");
    assert!(
        matches!(a.status, 200 | 201),
        "{kind} {name}: {} {}",
        a.status,
        a.body
    );
}

#[test]
fn the_deploy_service_account_may_read_pods_and_namespaces_only() {
    let k = Kube::shared();
    for doc in deploy_documents() {
        let (kind, _) = kind_and_name(&doc);
        if [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
        ]
        .contains(&kind.as_str())
        {
            apply(k, &doc);
        }
    }
    // a token of the DaemonSet's service account, as the kubelet would
    // project into its pods
    let request = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}"#;
    let a = k.request(
        k.admin_token(),
        "POST",
        "/api/v1/namespaces/logging/serviceaccounts/logferry/token",
        "application/json",
        Some(request.as_bytes()),
    );
    assert_eq!(a.status, 201, "{}", a.body);
    let token = a.json()["status"]["token"].as_str().unwrap().to_string();

    k.wait_allowed(&token, "/api/v1/pods?limit=1");
    let ns = unique("srv-sa");
    let node = unique("node");
    k.create_namespace(&ns, &[], &[]);
    k.create_pod(&ns, "p", &node, &[], &[], &[("app", "busybox:1.37")]);
    for path in [
        format!("/api/v1/pods?fieldSelector=spec.nodeName%3D{node}"),
        format!("/api/v1/pods?fieldSelector=spec.nodeName%3D{node}&watch=1&timeoutSeconds=1"),
        format!("/api/v1/namespaces/{ns}/pods/p"),
        "/api/v1/namespaces?limit=5".to_string(),
        format!("/api/v1/namespaces/{ns}"),
        "/api/v1/namespaces?watch=1&timeoutSeconds=1".to_string(),
    ] {
        let a = k.request(&token, "GET", &path, "", None);
        assert_eq!(
            a.status, 200,
            "GET {path} as the service account: {}",
            a.body
        );
    }
    let denied = [
        ("GET", "/api/v1/secrets".to_string()),
        ("GET", "/api/v1/namespaces/logging/secrets".to_string()),
        ("GET", "/api/v1/configmaps".to_string()),
        ("GET", "/api/v1/nodes".to_string()),
        ("GET", format!("/api/v1/namespaces/{ns}/pods/p/log")),
        ("GET", "/apis/apps/v1/daemonsets".to_string()),
        ("DELETE", format!("/api/v1/namespaces/{ns}/pods/p")),
        ("DELETE", format!("/api/v1/namespaces/{ns}")),
    ];
    for (method, path) in denied {
        let a = k.request(&token, method, &path, "", None);
        assert_eq!(
            a.status, 403,
            "{method} {path} as the service account: {}",
            a.body
        );
    }
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"a","image":"b"}]}}"#;
    let a = k.request(
        &token,
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods"),
        "application/json",
        Some(pod.as_bytes()),
    );
    assert_eq!(
        a.status, 403,
        "create a pod as the service account: {}",
        a.body
    );
}

#[test]
fn the_deploy_config_is_valid() {
    let doc = deploy_documents()
        .into_iter()
        .find(|d| d.contains("\nkind: ConfigMap\n"))
        .expect("a ConfigMap");
    let (_, body) = doc
        .split_once("  logferry.toml: |\n")
        .expect("a logferry.toml key");
    // the block's lines, their four spaces of indentation taken off
    let toml: String = body
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l.trim())))
        .collect();
    // the checkpoint dir is the node's; here a temporary one stands in
    let dir = tempfile::tempdir().unwrap();
    let toml = toml.replace("/var/lib/logferry", &dir.path().display().to_string());
    let path = dir.path().join("logferry.toml");
    std::fs::write(&path, &toml).unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["validate", "--config"])
        .arg(&path)
        .env("NODE_NAME", "node-a")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{toml}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
