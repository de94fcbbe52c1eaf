//! The kubernetes source against a real kube-apiserver (scripts/kube.sh):
//! the kubelet's log layout written by the tests (no kubelet runs), pods
//! created, changed and deleted through the API, and every numbered line
//! counted at the end in the file a user would read.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::kube::{unique, Kube, Kubelet, PodSpec};
use common::*;
use serde_json::Value;

/// What logferry logs once the node's pods are listed.
const LISTED: &str = "kubernetes: first list in (";

/// A node of the tests' own: its name (so only its pods are watched), a
/// namespace, the kubelet's layout and a kubeconfig for the agent's token.
struct Node<'k> {
    kube: &'k Kube,
    kubelet: Kubelet,
    name: String,
    ns: String,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl<'k> Node<'k> {
    fn new(kube: &'k Kube) -> Node<'k> {
        kube.grant_agent_read();
        let ns = unique("ns");
        kube.create_namespace(&ns, &[("team", "logs")], &[("owner", "tests")]);
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = kube.kubeconfig(dir.path(), kube.agent_token());
        Node {
            kube,
            kubelet: Kubelet::new(),
            name: unique("node"),
            ns,
            kubeconfig,
            _dir: dir,
        }
    }

    /// A kubernetes source on this node (`extra` lines added to it), an
    /// API, and every record as JSON in `{dir}/out.log`.
    fn config(&self, extra: &str) -> String {
        format!(
            "[sources.kube]\ntype = \"kubernetes\"\npods_root = \"{}\"\nnode_name = \"{}\"\nkubeconfig = \"{}\"\n{extra}\n\n\
             [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/out.log\"\nformat = \"json\"\n\n\
             [api]\naddress = \"127.0.0.1:0\"\n",
            self.kubelet.pods_root().display(),
            self.name,
            self.kubeconfig.display()
        )
    }

    /// A pod on this node with one container `app`; its uid.
    fn pod(&self, name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> String {
        self.kube.create_pod(
            &self.ns,
            name,
            &self.name,
            labels,
            annotations,
            &[("app", "busybox:1.37")],
        )
    }

    fn write(&self, pod: &str, uid: &str, lines: impl IntoIterator<Item = String>) {
        self.kubelet.write_cri(&self.ns, pod, uid, "app", 0, lines);
    }
}

/// Waits until records whose `log` starts with `prefix` number `n`; all
/// records then.
fn wait_for(lf: &Logferry, prefix: &str, n: usize, timeout: Duration) -> Vec<(String, Value)> {
    let path = lf.path("out.log");
    let deadline = Instant::now() + timeout;
    loop {
        let all = json_records(&path);
        let have = all
            .iter()
            .filter(|(_, r)| log_of(r).starts_with(prefix))
            .count();
        if have >= n {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "{have} of {n} records `{prefix}…` after {timeout:?}\n{}",
            lf.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn log_of(r: &Value) -> &str {
    r["log"].as_str().unwrap_or_default()
}

fn api(lf: &mut Logferry) -> SocketAddr {
    lf.address("api")
}

/// Records the source sent with only what their path tells.
fn without_metadata(lf: &mut Logferry) -> f64 {
    metric(
        lf,
        "logferry_kubernetes_records_without_metadata_total{component=\"kube\"}",
    )
}

fn metric(lf: &mut Logferry, name_and_labels: &str) -> f64 {
    let a = api(lf);
    metric_value(&api_get(a, "/metrics"), name_and_labels)
}

#[test]
fn every_line_of_110_pods_arrives_once_with_its_pods_metadata_and_other_nodes_cost_nothing() {
    const PODS: usize = 110;
    const LINES: usize = 100;
    let node = Node::new(Kube::shared());
    // 2,000 pods on other nodes, in a namespace of their own
    let elsewhere = unique("other");
    node.kube.ensure_namespace(&elsewhere);
    let others: Vec<PodSpec> = (0..2000)
        .map(|i| {
            PodSpec::new(
                &elsewhere,
                &format!("p{i}"),
                &format!("{}-other-{}", node.name, i % 20),
            )
        })
        .collect();
    node.kube.create_pods_bulk(&others);
    let specs: Vec<PodSpec> = (0..PODS)
        .map(|i| {
            PodSpec::new(&node.ns, &format!("web-{i}"), &node.name)
                .label("app", "web")
                .label("index", &i.to_string())
                .annotation("example.com/owner", &format!("team-{i}"))
        })
        .collect();
    let uids = node.kube.create_pods_bulk(&specs);
    // half the lines are there before logferry starts, half come after
    for (i, uid) in uids.iter().enumerate() {
        node.write(
            &format!("web-{i}"),
            uid,
            (0..LINES / 2).map(|n| format!("line {i} {n}")),
        );
    }
    let mut lf = Logferry::start(&node.config(""));
    for (i, uid) in uids.iter().enumerate() {
        node.write(
            &format!("web-{i}"),
            uid,
            (LINES / 2..LINES).map(|n| format!("line {i} {n}")),
        );
    }
    let all = wait_for(&lf, "line ", PODS * LINES, Duration::from_secs(120));
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (tag, r) in &all {
        let text = log_of(r);
        *seen.entry(text.to_string()).or_default() += 1;
        let i: usize = text.split(' ').nth(1).unwrap().parse().unwrap();
        let k = &r["kubernetes"];
        assert_eq!(k["pod_name"], format!("web-{i}"), "{r}");
        assert_eq!(k["namespace_name"], node.ns.as_str());
        assert_eq!(k["pod_id"], uids[i].as_str());
        assert_eq!(k["container_name"], "app");
        assert_eq!(k["container_image"], "busybox:1.37");
        assert_eq!(k["host"], node.name.as_str());
        assert_eq!(k["labels"]["index"], i.to_string(), "{r}");
        assert_eq!(k["annotations"]["example.com/owner"], format!("team-{i}"));
        assert_eq!(k["namespace_labels"]["team"], "logs");
        assert_eq!(r["stream"], "stdout");
        assert_eq!(tag, &format!("kube.{}.web-{i}.app", node.ns));
    }
    assert_eq!(seen.len(), PODS * LINES, "distinct lines");
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "lines sent twice: {twice:?}");
    // only this node's pods are held
    assert_eq!(
        metric(
            &mut lf,
            "logferry_kubernetes_pods_cached{component=\"kube\"}"
        ),
        PODS as f64
    );
    assert_eq!(without_metadata(&mut lf), 0.0);
    assert!(lf.stop().success());
}

/// A Job's pod: it writes, and is deleted a moment later, before its lines
/// are read (the reader lets lines gather for a second): they carry the
/// pod's full metadata all the same (`delete_grace`).
#[test]
fn a_short_lived_pods_lines_carry_its_metadata() {
    let node = Node::new(Kube::shared());
    let mut lf = Logferry::start(&node.config(""));
    wait_until("the first list", Duration::from_secs(30), || {
        lf.log_text().contains(LISTED)
    });
    for j in 0..5 {
        let name = format!("job-{j}");
        let uid = node.pod(&name, &[("job-name", "nightly")], &[("batch", "yes")]);
        node.write(&name, &uid, (0..20).map(|n| format!("job {j} {n}")));
        std::thread::sleep(Duration::from_millis(200));
        node.kube.delete_pod(&node.ns, &name);
        node.kubelet.remove_pod(&node.ns, &name, &uid);
    }
    let all = wait_for(&lf, "job ", 100, Duration::from_secs(60));
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("job ")) {
        let k = &r["kubernetes"];
        assert_eq!(k["labels"]["job-name"], "nightly", "{r}");
        assert_eq!(k["annotations"]["batch"], "yes", "{r}");
    }
    assert_eq!(
        distinct(all.iter().map(|(_, r)| log_of(r).to_string())).len(),
        100
    );
    assert!(lf.stop().success());
}

/// Labels, annotations and `logferry.io/exclude` (on the pod and on its
/// namespace) take effect on the next lines, without a restart.
#[test]
fn metadata_changes_and_exclusion_take_effect_without_a_restart() {
    let node = Node::new(Kube::shared());
    let uid = node.pod("web", &[("version", "v1")], &[]);
    let mut lf = Logferry::start(&node.config(""));
    let mut batch = 0;
    // writes lines of batch `b` and waits for their event to be seen first
    let mut write = |b: &str| {
        batch += 1;
        node.write("web", &uid, (0..10).map(|n| format!("{b} {n}")));
    };
    write("a");
    let all = wait_for(&lf, "a ", 10, Duration::from_secs(30));
    assert!(all
        .iter()
        .all(|(_, r)| r["kubernetes"]["labels"]["version"] == "v1"));

    node.kube
        .patch_pod_labels(&node.ns, "web", &[("version", Some("v2"))]);
    node.kube
        .patch_pod_annotations(&node.ns, "web", &[("note", Some("changed"))]);
    std::thread::sleep(Duration::from_secs(1));
    write("b");
    let all = wait_for(&lf, "b ", 10, Duration::from_secs(30));
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("b ")) {
        assert_eq!(r["kubernetes"]["labels"]["version"], "v2", "{r}");
        assert_eq!(r["kubernetes"]["annotations"]["note"], "changed", "{r}");
    }

    node.kube
        .patch_pod_annotations(&node.ns, "web", &[("logferry.io/exclude", Some("true"))]);
    std::thread::sleep(Duration::from_secs(1));
    write("c");
    std::thread::sleep(Duration::from_secs(2));
    node.kube
        .patch_pod_annotations(&node.ns, "web", &[("logferry.io/exclude", None)]);
    node.kube
        .patch_namespace_labels(&node.ns, &[("logferry.io/exclude", Some("true"))]);
    std::thread::sleep(Duration::from_secs(1));
    write("d");
    std::thread::sleep(Duration::from_secs(2));
    node.kube
        .patch_namespace_labels(&node.ns, &[("logferry.io/exclude", None)]);
    std::thread::sleep(Duration::from_secs(1));
    write("e");
    let all = wait_for(&lf, "e ", 10, Duration::from_secs(30));
    let excluded: Vec<_> = all
        .iter()
        .filter(|(_, r)| log_of(r).starts_with("c ") || log_of(r).starts_with("d "))
        .collect();
    assert!(excluded.is_empty(), "excluded lines arrived: {excluded:?}");
    assert_eq!(
        metric(
            &mut lf,
            "logferry_kubernetes_excluded_records_total{component=\"kube\"}"
        ),
        20.0
    );
    assert!(lf.stop().success());
}

/// CRI partial lines (`P` … `F`) and docker json-file parts are joined,
/// per stream; the format is told per file; a Java trace is one record
/// when the pod asks for it (`logferry.io/multiline`).
#[test]
fn partial_lines_and_traces_are_joined_per_container() {
    let node = Node::new(Kube::shared());
    let cri = node.pod("cri", &[], &[]);
    let docker = node.pod("docker", &[], &[]);
    let java = node.pod("java", &[], &[("logferry.io/multiline", "java")]);
    let mut lf = Logferry::start(&node.config(""));
    let long = "x".repeat(20_000);
    node.kubelet.write_cri_parts(
        &node.ns,
        "cri",
        &cri,
        "app",
        0,
        "stderr",
        &["part1-", &long, "-end"],
    );
    node.kubelet.write_docker_parts(
        &node.ns,
        "docker",
        &docker,
        "app",
        0,
        &["dpart1-", &long, "-dend"],
    );
    node.kubelet
        .write_docker(&node.ns, "docker", &docker, "app", 0, ["docker whole"]);
    node.write(
        "java",
        &java,
        [
            "trace: something failed".to_string(),
            "java.lang.IllegalStateException: boom".to_string(),
            "\tat com.example.App.main(App.java:10)".to_string(),
            "trace done".to_string(),
        ],
    );
    let all = wait_for(&lf, "trace done", 1, Duration::from_secs(30));
    let by_pod = |pod: &str| -> Vec<&Value> {
        all.iter()
            .filter(|(_, r)| r["kubernetes"]["pod_name"] == pod)
            .map(|(_, r)| r)
            .collect()
    };
    let c = by_pod("cri");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(log_of(c[0]), format!("part1-{long}-end"));
    assert_eq!(c[0]["stream"], "stderr");
    let d = by_pod("docker");
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(log_of(d[0]), format!("dpart1-{long}-dend"));
    assert_eq!(log_of(d[1]), "docker whole");
    let j = by_pod("java");
    assert_eq!(j.len(), 2, "{j:?}");
    assert!(log_of(j[0]).ends_with("App.java:10)"), "{}", log_of(j[0]));
    assert!(lf.stop().success());
}

/// Lines of a pod the API server does not know yet wait for it (up to
/// `metadata_wait`); a pod it never tells about goes on with what the
/// path gives, counted; a static pod is found through its mirror.
#[test]
fn pods_not_yet_known_wait_and_unknown_ones_go_on_with_their_path() {
    let node = Node::new(Kube::shared());
    let mut lf = Logferry::start(&node.config("metadata_wait = \"3s\""));
    wait_until("the first list", Duration::from_secs(30), || {
        lf.log_text().contains(LISTED)
    });
    // the kubelet writes as soon as the pod exists: the line may well be
    // read before the watch brings the pod
    for i in 0..20 {
        let name = format!("fresh-{i}");
        let uid = node.pod(&name, &[("fresh", "yes")], &[]);
        node.write(&name, &uid, (0..5).map(|n| format!("fresh {i} {n}")));
    }
    // a static pod: its logs are under its manifest's hash; its mirror
    // pod has another uid and says which hash it mirrors
    let hash = "5c9a7a3c2b1d4e5f6a7b8c9d0e1f2a3b";
    let mirror = node.kube.create_pod(
        &node.ns,
        "static-web",
        &node.name,
        &[("tier", "control-plane")],
        &[("kubernetes.io/config.mirror", hash)],
        &[("app", "busybox:1.37")],
    );
    node.write("static-web", hash, (0..5).map(|n| format!("static {n}")));
    node.write(
        "ghost",
        "11111111-2222-4333-8444-555555555555",
        (0..5).map(|n| format!("ghost {n}")),
    );
    // a pod the API server never tells about: its lines go on with the
    // path's fields
    let all = wait_for(&lf, "ghost ", 5, Duration::from_secs(30));
    let all = {
        let _ = all;
        wait_for(&lf, "fresh ", 100, Duration::from_secs(30))
    };
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("fresh ")) {
        assert_eq!(r["kubernetes"]["labels"]["fresh"], "yes", "{r}");
    }
    let all = {
        let _ = all;
        wait_for(&lf, "static ", 5, Duration::from_secs(30))
    };
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("static ")) {
        assert_eq!(r["kubernetes"]["labels"]["tier"], "control-plane", "{r}");
        // the pod's uid as the API server has it
        assert_eq!(r["kubernetes"]["pod_id"], mirror.as_str(), "{r}");
    }
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("ghost ")) {
        let k = &r["kubernetes"];
        assert_eq!(k["pod_name"], "ghost");
        assert_eq!(k["namespace_name"], node.ns.as_str());
        assert_eq!(k["container_name"], "app");
        assert!(k.get("labels").is_none(), "{r}");
    }
    // only the ghost's five
    assert_eq!(without_metadata(&mut lf), 5.0);
    assert!(lf.stop().success());
}

/// A log whose pod the API server has not told about yet waits alone:
/// the node's other logs go on meanwhile, and its lines go out with the
/// pod's metadata once it comes (here a static pod, whose mirror is
/// created late).
#[test]
fn a_log_waiting_for_its_pod_holds_up_no_other_log() {
    let node = Node::new(Kube::shared());
    let mut lf = Logferry::start(&node.config("metadata_wait = \"90s\""));
    wait_until("the first list", Duration::from_secs(30), || {
        lf.log_text().contains(LISTED)
    });
    let steady = node.pod("steady", &[("steady", "yes")], &[]);
    let hash = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    node.write("late-static", hash, (0..5).map(|n| format!("late {n}")));
    // the reader meets the waiting log first
    std::thread::sleep(Duration::from_millis(500));
    node.write("steady", &steady, (0..5).map(|n| format!("steady {n}")));
    // well inside the late log's 90 s of metadata_wait
    let all = wait_for(&lf, "steady ", 5, Duration::from_secs(30));
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("steady ")) {
        assert_eq!(r["kubernetes"]["labels"]["steady"], "yes", "{r}");
    }
    assert!(
        all.iter().all(|(_, r)| !log_of(r).starts_with("late ")),
        "the late log went on without its pod: {all:?}"
    );
    let mirror = node.kube.create_pod(
        &node.ns,
        "late-static",
        &node.name,
        &[("late", "yes")],
        &[("kubernetes.io/config.mirror", hash)],
        &[("app", "busybox:1.37")],
    );
    let all = wait_for(&lf, "late ", 5, Duration::from_secs(30));
    let late: Vec<_> = all
        .iter()
        .filter(|(_, r)| log_of(r).starts_with("late "))
        .collect();
    assert_eq!(late.len(), 5, "{late:?}");
    for (_, r) in late {
        assert_eq!(r["kubernetes"]["labels"]["late"], "yes", "{r}");
        assert_eq!(r["kubernetes"]["pod_id"], mirror.as_str(), "{r}");
    }
    assert_eq!(without_metadata(&mut lf), 0.0);
    assert!(lf.stop().success());
}

/// The API server stopped for 30 s, then back with etcd compacted past
/// every resourceVersion logferry had: no line is lost or sent twice,
/// lines written meanwhile keep their metadata, and changes made after
/// it show.
#[test]
fn an_api_server_down_and_compacted_loses_nothing() {
    let private = Kube::private();
    let kube = &private;
    let node = Node::new(kube);
    let uid = node.pod("web", &[("phase", "before")], &[]);
    let mut lf = Logferry::start(&node.config(""));
    node.write("web", &uid, (0..100).map(|n| format!("up {n}")));
    wait_for(&lf, "up ", 100, Duration::from_secs(30));
    kube.stop();
    let down = Instant::now();
    let mut n = 0;
    while down.elapsed() < Duration::from_secs(30) {
        node.write("web", &uid, (n..n + 10).map(|i| format!("down {i}")));
        n += 10;
        std::thread::sleep(Duration::from_millis(500));
    }
    let all = wait_for(&lf, "down ", n, Duration::from_secs(30));
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("down ")) {
        assert_eq!(r["kubernetes"]["labels"]["phase"], "before", "{r}");
    }
    kube.start();
    // move the revision on and compact past what logferry saw
    let other = node.pod("newcomer", &[("phase", "after")], &[]);
    kube.compact();
    node.kube
        .patch_pod_labels(&node.ns, "web", &[("phase", Some("after"))]);
    wait_until("a relist after 410 Gone", Duration::from_secs(90), || {
        metric(
            &mut lf,
            "logferry_kubernetes_pods_cached{component=\"kube\"}",
        ) == 2.0
    });
    std::thread::sleep(Duration::from_secs(1));
    node.write("web", &uid, (0..10).map(|i| format!("after {i}")));
    node.write("newcomer", &other, (0..10).map(|i| format!("new {i}")));
    let all = wait_for(&lf, "new ", 10, Duration::from_secs(30));
    let all = {
        let _ = all;
        wait_for(&lf, "after ", 10, Duration::from_secs(30))
    };
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("after ")) {
        assert_eq!(r["kubernetes"]["labels"]["phase"], "after", "{r}");
    }
    for (_, r) in all.iter().filter(|(_, r)| log_of(r).starts_with("new ")) {
        assert_eq!(r["kubernetes"]["labels"]["phase"], "after", "{r}");
    }
    let texts: Vec<String> = all.iter().map(|(_, r)| log_of(r).to_string()).collect();
    assert_eq!(
        distinct(texts.iter().cloned()).len(),
        texts.len(),
        "a line twice"
    );
    assert_eq!(texts.len(), 100 + n + 20);
    assert!(lf.stop().success());
}

/// kill -9 while the kubelet rotates a busy container's log (rename to
/// `0.log.<time>`, the previous one gzipped, the oldest removed past five
/// files), twice a second, faster than the kubelet's ten seconds: after
/// the restart every numbered line is there.
#[test]
fn kill_9_during_kubelet_rotation_loses_nothing() {
    const LINES: usize = 40_000;
    let node = Node::new(Kube::shared());
    let uid = node.pod("busy", &[], &[]);
    // the sink's file and the checkpoint outlive the killed process's dir
    let keep = tempfile::tempdir().unwrap();
    let out = keep.path().join("out.log");
    let config = node
        .config(&format!(
            "checkpoint_dir = \"{}\"\ncheckpoint_interval = \"200ms\"",
            keep.path().join("state").display()
        ))
        .replace("{dir}/out.log", &out.display().to_string());
    let mut lf = Logferry::start(&config);
    let mut written = 0;
    while written < LINES {
        node.write(
            "busy",
            &uid,
            (written..written + 500).map(|i| format!("busy {i}")),
        );
        written += 500;
        if written % 5_000 == 0 {
            node.kubelet.rotate(&node.ns, "busy", &uid, "app", 0);
        }
        if written == LINES / 2 {
            lf.kill();
            lf = Logferry::start(&config);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let got = distinct(
            json_records(&out)
                .iter()
                .map(|(_, r)| log_of(r).to_string())
                .filter(|t| t.starts_with("busy ")),
        );
        if got.len() == LINES {
            break;
        }
        if Instant::now() >= deadline {
            let missing: Vec<usize> = (0..LINES)
                .filter(|i| !got.contains_key(&format!("busy {i}")))
                .collect();
            panic!(
                "{} of {LINES} lines after the kill; missing {}\n{}",
                got.len(),
                ranges(&missing),
                lf.log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(lf.stop().success());
}

/// `3-7, 9` for [3, 4, 5, 6, 7, 9].
fn ranges(n: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < n.len() {
        let mut j = i;
        while j + 1 < n.len() && n[j + 1] == n[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            n[i].to_string()
        } else {
            format!("{}-{}", n[i], n[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

#[allow(dead_code)]
fn labels(r: &Value) -> BTreeMap<String, String> {
    r["kubernetes"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}
