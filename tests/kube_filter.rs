//! The kubernetes filter against a real kube-apiserver (scripts/kube.sh):
//! records forwarded as a Fluent Bit agent forwards its tail of
//! `/var/log/containers` (tag `kube.var.log.containers.<pod>_<namespace>_<container>-<id>.log`)
//! get their pod's metadata under `kubernetes`, and `merge_log` turns a
//! JSON `log` into fields; every numbered record is counted at the end in
//! the file a user would read.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::kube::{unique, Kube};
use common::*;
use logferry::protocol::msgpack::write;
use serde_json::{json, Value};

/// A container id as the kubelet's link names it (64 lower-case hex).
fn container_id(seed: &str) -> String {
    let mut id = String::new();
    for b in seed.bytes().cycle().take(64) {
        id.push(char::from(b"0123456789abcdef"[usize::from(b % 16)]));
    }
    id
}

/// Fluent Bit's tail tag of a container's log.
fn fluent_bit_tag(ns: &str, pod: &str, container: &str, id: &str) -> String {
    format!("kube.var.log.containers.{pod}_{ns}_{container}-{id}.log")
}

/// A forward-mode frame of `records` (JSON objects) under `tag`, asking
/// for an acknowledgement `chunk`.
fn frame(tag: &str, records: &[Value], chunk: &str) -> Vec<u8> {
    let mut out = Vec::new();
    write::array_len(&mut out, 3);
    write::str(&mut out, tag.as_bytes());
    write::array_len(&mut out, records.len());
    for r in records {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, 1_700_000_000, 0);
        logferry::protocol::json::object_to_msgpack(&mut out, r.to_string().as_bytes()).unwrap();
    }
    write::map_len(&mut out, 1);
    write::str(&mut out, b"chunk");
    write::str(&mut out, chunk.as_bytes());
    out
}

/// Sends `records` under `tag` and waits for their acknowledgement (the
/// file sink has written them).
fn send_acked(addr: SocketAddr, tag: &str, records: &[Value]) {
    let chunk = unique("chunk");
    let mut s = TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut s, &frame(tag, records, &chunk)).unwrap();
    let ack = read_ack(&mut s, Duration::from_secs(60));
    assert_eq!(ack.as_deref(), Some(chunk.as_str()), "no ack for {tag}");
}

/// Sends `make(i)` for i in 0..n under `tag`, 20 records a frame, each
/// frame acknowledged before the next, on a thread of its own.
fn send_on_thread(
    addr: SocketAddr,
    tag: &str,
    n: usize,
    make: fn(usize) -> Value,
) -> std::thread::JoinHandle<()> {
    let tag = tag.to_string();
    std::thread::spawn(move || {
        for chunk in (0..n).collect::<Vec<_>>().chunks(20) {
            let batch: Vec<Value> = chunk.iter().map(|i| make(*i)).collect();
            send_acked(addr, &tag, &batch);
        }
    })
}

/// A namespace and a node of the test's own, the agent's kubeconfig, and
/// a logferry with a forward source, the kubernetes filter (`extra` keys
/// added) and a JSON file sink.
struct Setup {
    kube: &'static Kube,
    ns: String,
    node: String,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let kube = Kube::shared();
        kube.grant_agent_read();
        let ns = unique("kf");
        kube.create_namespace(&ns, &[("team", "logs")], &[("owner", "tests")]);
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = kube.kubeconfig(dir.path(), kube.agent_token());
        Setup {
            kube,
            ns,
            node: unique("node"),
            kubeconfig,
            _dir: dir,
        }
    }

    fn config(&self, extra: &str) -> String {
        format!(
            "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
             [filters.k8s]\ntype = \"kubernetes\"\nmatch = \"kube.**\"\nkubeconfig = \"{}\"\n{extra}\n\n\
             [sinks.out]\ntype = \"file\"\nmatch = \"**\"\npath = \"{{dir}}/out.log\"\nformat = \"json\"\n\n\
             [api]\naddress = \"127.0.0.1:0\"\n",
            self.kubeconfig.display()
        )
    }

    fn start(&self, extra: &str) -> (Logferry, SocketAddr) {
        let mut lf = Logferry::start(&self.config(extra));
        let addr = lf.forward_addr("in");
        (lf, addr)
    }

    /// A pod `known` (label `app=known`) and a logferry started with
    /// `extra`, once the filter's cache has listed it.
    fn start_listed(&self, extra: &str) -> (Logferry, SocketAddr) {
        self.kube.create_pod(
            &self.ns,
            "known",
            &self.node,
            &[("app", "known")],
            &[],
            &[("app", "busybox:1.37")],
        );
        let (lf, addr) = self.start(extra);
        let known = fluent_bit_tag(&self.ns, "known", "app", &container_id("known"));
        self.probe_until(&lf, addr, &known, "labels", |k| {
            k["labels"]["app"] == "known"
        });
        (lf, addr)
    }

    /// Creates pod `name` (label `app=late`, container `app`).
    fn late_pod(&self, name: &str) {
        self.kube.create_pod(
            &self.ns,
            name,
            &self.node,
            &[("app", "late")],
            &[],
            &[("app", "busybox:1.37")],
        );
    }

    /// Sends one probe record for `pod` at a time until one arrives whose
    /// `kubernetes` map satisfies `ready` (the watch has caught up).
    fn probe_until(
        &self,
        lf: &Logferry,
        addr: SocketAddr,
        tag: &str,
        what: &str,
        ready: impl Fn(&Value) -> bool,
    ) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for k in 0.. {
            let log = format!("probe-{what}-{k}");
            send_acked(addr, tag, &[json!({"log": log, "stream": "stdout"})]);
            let seen = json_records(&lf.path("out.log"))
                .into_iter()
                .any(|(_, r)| r["log"] == log.as_str() && ready(&r["kubernetes"]));
            if seen {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the filter's metadata never showed {what}\n{}",
                lf.log_text()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Records forwarded with Fluent Bit's tag for a pod the API server has:
/// every one arrives once, with the pod's labels and annotations, the
/// namespace's labels and the tag's container id; a change of the pod's
/// labels shows on the next records, without a restart; `merge_log` with
/// `keep_log = false` turns a JSON `log` into fields and removes `log`,
/// and leaves a `log` that is not an object as it was.
#[test]
fn forwarded_records_get_their_pods_metadata_and_merged_log() {
    const N: usize = 600;
    let s = Setup::new();
    s.kube.create_pod(
        &s.ns,
        "web-1",
        &s.node,
        &[("app", "web"), ("stage", "one")],
        &[("example.com/owner", "team-a")],
        &[("nginx", "nginx:1.27")],
    );
    let (mut lf, addr) = s.start("merge_log = true\nkeep_log = false\n");
    let id = container_id("web-1");
    let tag = fluent_bit_tag(&s.ns, "web-1", "nginx", &id);
    s.probe_until(&lf, addr, &tag, "labels", |k| {
        k["labels"]["app"] == "web" && k["namespace_labels"]["team"] == "logs"
    });

    let send = |range: std::ops::Range<usize>, stage: &str| {
        for chunk in range.collect::<Vec<_>>().chunks(50) {
            let batch: Vec<Value> = chunk
                .iter()
                .map(|i| {
                    // every tenth line is plain text: nothing to merge
                    let log = if i % 10 == 0 {
                        format!("plain {stage}-{i}")
                    } else {
                        json!({"n": i, "stage": stage, "msg": "line\n"}).to_string()
                    };
                    json!({"log": log, "stream": "stdout", "kubernetes": {"stale": true}})
                })
                .collect();
            send_acked(addr, &tag, &batch);
        }
    };
    send(0..N, "one");
    s.kube
        .patch_pod_labels(&s.ns, "web-1", &[("stage", Some("two"))]);
    s.probe_until(&lf, addr, &tag, "the new label", |k| {
        k["labels"]["stage"] == "two"
    });
    send(N..2 * N, "two");
    assert!(lf.stop().success(), "{}", lf.log_text());

    let all = json_records(&lf.path("out.log"));
    let mut seen = vec![0usize; 2 * N];
    for (t, r) in all
        .iter()
        .filter(|(_, r)| r["log"].as_str().is_none_or(|l| !l.starts_with("probe-")))
    {
        assert_eq!(t, &tag);
        let k = &r["kubernetes"];
        let i = match r["n"].as_u64() {
            Some(n) => {
                // merged: `log` gone, its fields at the top, trimmed
                assert!(r.get("log").is_none(), "{r}");
                assert_eq!(r["msg"], "line", "{r}");
                n as usize
            }
            None => {
                let log = r["log"].as_str().unwrap_or_else(|| panic!("{r}"));
                let (_, n) = log.rsplit_once('-').unwrap();
                n.parse().unwrap()
            }
        };
        let stage = if i < N { "one" } else { "two" };
        assert_eq!(k["labels"]["stage"], stage, "{r}");
        assert_eq!(k["labels"]["app"], "web", "{r}");
        assert_eq!(k["annotations"]["example.com/owner"], "team-a", "{r}");
        assert_eq!(k["namespace_labels"]["team"], "logs", "{r}");
        assert_eq!(k["pod_name"], "web-1", "{r}");
        assert_eq!(k["namespace_name"], s.ns.as_str(), "{r}");
        assert_eq!(k["container_name"], "nginx", "{r}");
        assert_eq!(k["docker_id"], id.as_str(), "{r}");
        assert!(
            k.get("stale").is_none(),
            "the record's own map is replaced: {r}"
        );
        seen[i] += 1;
    }
    let wrong: Vec<usize> = (0..2 * N).filter(|i| seen[*i] != 1).collect();
    assert!(
        wrong.is_empty(),
        "records not there exactly once: {wrong:?}"
    );
}

/// A pod the API server does not have: the records go on at once with
/// what the tag tells (pod, namespace, container, container id), counted;
/// a tag that names no container log passes untouched.
#[test]
fn an_unknown_pod_gets_what_its_tag_tells_and_other_tags_pass_untouched() {
    const N: usize = 200;
    let s = Setup::new();
    let (mut lf, addr) = s.start_listed("merge_log = true\n");
    // probes sent before the first list are counted too
    let api = lf.address("api");
    let without = "logferry_filter_kubernetes_records_without_metadata_total{component=\"k8s\"}";
    let before = metric_value(&api_get(api, "/metrics"), without);

    let id = container_id("ghost");
    let ghost = fluent_bit_tag(&s.ns, "ghost-7", "worker", &id);
    for chunk in (0..N).collect::<Vec<_>>().chunks(40) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"log": format!("{{\"ghost\":{i}}}")}))
            .collect();
        send_acked(addr, &ghost, &batch);
    }
    let other = "kube.app.web";
    send_acked(
        addr,
        other,
        &[json!({"log": "{\"x\":1}", "kubernetes": {"mine": 1}})],
    );
    let counted = metric_value(&api_get(api, "/metrics"), without) - before;
    assert!(lf.stop().success(), "{}", lf.log_text());

    let all = json_records(&lf.path("out.log"));
    let mut seen = vec![0usize; N];
    for (_, r) in all.iter().filter(|(t, _)| t == &ghost) {
        let k = &r["kubernetes"];
        let want = json!({
            "pod_name": "ghost-7",
            "namespace_name": s.ns,
            "container_name": "worker",
            "docker_id": id,
        });
        for (key, v) in want.as_object().unwrap() {
            assert_eq!(&k[key], v, "{r}");
        }
        for absent in ["labels", "annotations", "pod_id", "host"] {
            assert!(k.get(absent).is_none(), "{absent} in {r}");
        }
        // merge_log still applies, and keep_log (default) keeps `log`
        let i = r["ghost"].as_u64().unwrap_or_else(|| panic!("{r}")) as usize;
        assert!(r["log"].is_string(), "{r}");
        seen[i] += 1;
    }
    let wrong: Vec<usize> = (0..N).filter(|i| seen[*i] != 1).collect();
    assert!(
        wrong.is_empty(),
        "records not there exactly once: {wrong:?}"
    );
    assert_eq!(counted, N as f64, "records counted without metadata");
    let untouched: Vec<&Value> = all
        .iter()
        .filter(|(t, _)| t == other)
        .map(|(_, r)| r)
        .collect();
    assert_eq!(
        untouched,
        [&json!({"log": "{\"x\":1}", "kubernetes": {"mine": 1}})],
        "a tag that names no container log"
    );
}

/// Records of a pod that the API server gets only after they arrived (a
/// pod just started, a watch event a moment behind): they wait for it, up
/// to `metadata_wait`, and go on with its labels, in their order; the
/// source's connection is acknowledged only once they are written.
#[test]
fn records_of_a_pod_created_after_them_wait_for_its_metadata() {
    const N: usize = 300;
    let s = Setup::new();
    let (mut lf, addr) = s.start_listed("metadata_wait = \"20s\"\n");

    let tag = fluent_bit_tag(&s.ns, "late-1", "app", &container_id("late-1"));
    // sent before the pod exists: their acknowledgements come only once
    // they are written
    let sender = send_on_thread(addr, &tag, N, |i| json!({"log": format!("late-{i}")}));
    std::thread::sleep(Duration::from_millis(500));
    s.late_pod("late-1");
    sender.join().unwrap();
    assert!(lf.stop().success(), "{}", lf.log_text());

    let got: Vec<Value> = json_records(&lf.path("out.log"))
        .into_iter()
        .filter(|(t, _)| t == &tag)
        .map(|(_, r)| r)
        .collect();
    let order: Vec<String> = got
        .iter()
        .map(|r| r["log"].as_str().unwrap_or_default().to_string())
        .collect();
    let want: Vec<String> = (0..N).map(|i| format!("late-{i}")).collect();
    assert_eq!(order, want, "every record once, in order");
    for r in &got {
        assert_eq!(r["kubernetes"]["labels"]["app"], "late", "{r}");
    }
}

/// A reload that replaces the filter while it holds records of a pod not
/// created yet: they go on through the new filter (its `merge_log`), wait
/// there for the pod, and each arrives once, with its labels.
#[test]
fn records_held_across_a_reload_go_through_the_new_filter() {
    const N: usize = 200;
    let s = Setup::new();
    let (mut lf, addr) = s.start_listed("metadata_wait = \"20s\"\n");

    let tag = fluent_bit_tag(&s.ns, "late-2", "app", &container_id("late-2"));
    let sender = send_on_thread(
        addr,
        &tag,
        N,
        |i| json!({"log": json!({"n": i}).to_string()}),
    );
    // the first batch is held (its acknowledgement waits with it)
    std::thread::sleep(Duration::from_millis(500));
    lf.rewrite_config(&s.config("metadata_wait = \"20s\"\nmerge_log = true\nkeep_log = false\n"));
    lf.signal(libc::SIGHUP);
    lf.wait_for_log("configuration reloaded", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    s.late_pod("late-2");
    sender.join().unwrap();
    assert!(lf.stop().success(), "{}", lf.log_text());

    let mut seen = vec![0usize; N];
    for (_, r) in json_records(&lf.path("out.log"))
        .iter()
        .filter(|(t, _)| t == &tag)
    {
        let n = r["n"].as_u64().unwrap_or_else(|| panic!("not merged: {r}")) as usize;
        assert!(r.get("log").is_none(), "{r}");
        assert_eq!(r["kubernetes"]["labels"]["app"], "late", "{r}");
        seen[n] += 1;
    }
    let wrong: Vec<usize> = (0..N).filter(|i| seen[*i] != 1).collect();
    assert!(
        wrong.is_empty(),
        "records not there exactly once: {wrong:?}"
    );
}
