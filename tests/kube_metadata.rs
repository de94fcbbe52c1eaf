//! The Kubernetes metadata cache (`logferry::kube::Metadata`) against a
//! real API server (scripts/kube.sh): what its list and watch bring, what
//! it keeps of deleted pods, and how it rides out a refused token, a
//! missing permission, an outage and a compaction (410 Gone) with the
//! metadata it held still answering all along.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::kube::{unique, Kube, PodSpec};
use logferry::component::{shutdown_channel, ShutdownTrigger};
use logferry::kube::{ApiSettings, Metadata, WatchOptions};
use logferry::metrics::Registry;

/// A running cache and what stops it.
struct Running {
    metadata: Metadata,
    registry: Registry,
    stop: ShutdownTrigger,
    runtime: tokio::runtime::Runtime,
}

impl Running {
    fn start(settings: ApiSettings, node: &str, grace: Duration) -> Running {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let registry = Registry::new();
        let (stop, shutdown) = shutdown_channel();
        let started = Instant::now();
        let metadata = Metadata::start(
            &settings,
            WatchOptions {
                node_name: Some(node.to_string()),
                namespaces: true,
                delete_grace: grace,
            },
            &registry,
            "k8s",
            shutdown,
            runtime.handle(),
        )
        .unwrap();
        // it never waits for the API server
        assert!(started.elapsed() < Duration::from_secs(5));
        Running {
            metadata,
            registry,
            stop,
            runtime,
        }
    }

    fn errors(&self, kind: &str) -> u64 {
        self.registry.value(
            "logferry_kubernetes_api_errors_total",
            &[("component", "k8s"), ("kind", kind)],
        )
    }

    fn restarts(&self, reason: &str) -> u64 {
        self.registry.value(
            "logferry_kubernetes_watch_restarts_total",
            &[("component", "k8s"), ("reason", reason)],
        )
    }

    fn stop(self) {
        self.stop.trigger();
        self.runtime.shutdown_timeout(Duration::from_secs(5));
    }
}

/// Waits up to `max` for `check`; false if it never held.
fn eventually(max: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + max;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn label(m: &Metadata, uid: &str, key: &str) -> Option<String> {
    m.pod(uid)?.labels.get(key).cloned()
}

#[test]
fn a_node_cache_holds_its_pods_only_follows_their_changes_and_keeps_the_deleted_for_the_grace() {
    let k = Kube::shared();
    k.grant_agent_read();
    let ns = unique("meta");
    k.create_namespace(&ns, &[("team", "logs")], &[]);
    let node = unique("node");
    let other = unique("other");
    let app = [("app", "busybox:1.36")];
    let uid1 = k.create_pod(&ns, "p1", &node, &[("v", "1")], &[("a", "x")], &app);
    let uid2 = k.create_pod(&ns, "p2", &node, &[("v", "1")], &[], &app);
    let elsewhere = k.create_pod(&ns, "q1", &other, &[], &[], &app);
    let dir = tempfile::tempdir().unwrap();
    let settings = ApiSettings {
        kubeconfig: Some(k.kubeconfig(dir.path(), k.agent_token())),
        ..ApiSettings::default()
    };
    let r = Running::start(settings, &node, Duration::from_secs(4));
    let m = &r.metadata;
    assert!(
        eventually(Duration::from_secs(30), || m.synced()),
        "no first list"
    );
    assert_eq!(label(m, &uid1, "v").as_deref(), Some("1"));
    assert_eq!(m.pod(&uid1).unwrap().annotations["a"], "x");
    assert_eq!(m.pod_named(&ns, "p2").unwrap().uid, uid2);
    assert_eq!(
        m.pod(&uid1).unwrap().node_name.as_deref(),
        Some(node.as_str())
    );
    assert!(m.pod(&elsewhere).is_none(), "another node's pod is held");
    assert_eq!(m.namespace(&ns).unwrap().labels["team"], "logs");

    // a new pod: the watch brings it
    let uid3 = k.create_pod(&ns, "p3", &node, &[], &[], &app);
    assert!(eventually(Duration::from_secs(20), || m
        .pod(&uid3)
        .is_some()));
    assert_eq!(m.pod(&uid3).unwrap().name, "p3");

    // changes take effect without a restart
    let generation = m.generation();
    k.patch_pod_labels(&ns, "p1", &[("v", Some("2"))]);
    k.set_container_ids(&ns, "p1", &[("app", "containerd://0123456789abcdef")]);
    k.patch_namespace_labels(&ns, &[("team", Some("ops"))]);
    assert!(eventually(Duration::from_secs(20), || {
        m.pod(&uid1).is_some_and(|p| {
            p.labels["v"] == "2"
                && p.container("app").and_then(|c| c.container_id.as_deref())
                    == Some("containerd://0123456789abcdef")
        }) && m.namespace(&ns).is_some_and(|n| n.labels["team"] == "ops")
    }));
    assert!(m.generation() > generation);

    // 100 pods on other nodes cost nothing here
    let others: Vec<PodSpec> = (0..100)
        .map(|i| PodSpec::new(&ns, &format!("o{i}"), &other))
        .collect();
    k.create_pods_bulk(&others);

    // a deleted pod stays known for its grace, then is evicted
    let deleted_at = Instant::now();
    k.delete_pod(&ns, "p2");
    std::thread::sleep(Duration::from_millis(500));
    if deleted_at.elapsed() < Duration::from_secs(3) {
        assert!(m.pod(&uid2).is_some(), "evicted before its grace");
    }
    assert!(
        eventually(Duration::from_secs(30), || m.pod(&uid2).is_none()),
        "a deleted pod is never evicted"
    );
    assert!(m.pod_named(&ns, "p2").is_none());
    let held = r
        .registry
        .value("logferry_kubernetes_pods_cached", &[("component", "k8s")]);
    assert_eq!(held, 2, "p1 and p3 only");
    assert_eq!(r.errors("decode"), 0);
    r.stop();
}

#[test]
fn a_refused_token_is_read_again_from_its_file_and_the_cache_fills_once_it_is_right() {
    let k = Kube::shared();
    let ns = unique("meta-token");
    k.create_namespace(&ns, &[], &[]);
    let node = unique("node");
    let uid = k.create_pod(&ns, "p1", &node, &[], &[], &[("app", "busybox")]);
    let dir = tempfile::tempdir().unwrap();
    let token: PathBuf = dir.path().join("token");
    std::fs::write(&token, "not-a-token\n").unwrap();
    let settings = ApiSettings {
        api_server: Some(k.url().to_string()),
        token_file: Some(token.clone()),
        ca_file: Some(k.ca_file().to_path_buf()),
        ..ApiSettings::default()
    };
    let r = Running::start(settings, &node, Duration::from_secs(60));
    assert!(eventually(Duration::from_secs(20), || r
        .errors("unauthorized")
        > 0));
    assert!(!r.metadata.synced());
    // the token rotates
    std::fs::write(&token, format!("{}\n", k.admin_token())).unwrap();
    assert!(
        eventually(Duration::from_secs(40), || r.metadata.synced()),
        "the new token was not read"
    );
    assert!(r.metadata.pod(&uid).is_some());
    r.stop();
}

#[test]
fn a_missing_permission_then_an_outage_and_a_compaction_lose_no_change() {
    let k = Kube::private();
    let ns = unique("meta-gone");
    k.create_namespace(&ns, &[], &[]);
    let node = unique("node");
    let app = [("app", "busybox")];
    let a = k.create_pod(&ns, "a", &node, &[("v", "1")], &[], &app);
    let b = k.create_pod(&ns, "b", &node, &[], &[], &app);
    let dir = tempfile::tempdir().unwrap();
    let settings = ApiSettings {
        kubeconfig: Some(k.kubeconfig(dir.path(), k.agent_token())),
        ..ApiSettings::default()
    };
    let r = Running::start(settings, &node, Duration::from_secs(2));
    let m = &r.metadata;
    // the agent's user may do nothing yet: 403, said and retried
    assert!(eventually(Duration::from_secs(20), || r
        .errors("forbidden")
        > 0));
    assert!(!m.synced());
    k.grant_agent_read();
    assert!(
        eventually(Duration::from_secs(60), || m.synced()),
        "not listed once granted"
    );
    assert!(m.pod(&a).is_some() && m.pod(&b).is_some());

    // the API server goes away: what is held still answers
    k.stop();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(label(m, &a, "v").as_deref(), Some("1"));
    assert!(m.pod(&b).is_some());
    k.start();
    // changes the watch has not seen, then a compaction: the version it
    // resumes from is gone (410) and a fresh list brings them
    let c = k.create_pod(&ns, "c", &node, &[], &[], &app);
    k.delete_pod(&ns, "b");
    k.patch_pod_labels(&ns, "a", &[("v", Some("2"))]);
    k.compact();
    assert!(
        eventually(Duration::from_secs(90), || {
            m.pod(&c).is_some() && label(m, &a, "v").as_deref() == Some("2") && m.pod(&b).is_none()
        }),
        "changes made across the outage were lost (c {:?}, a v={:?}, b {:?}); restarts gone {} error {}",
        m.pod(&c).is_some(),
        label(m, &a, "v"),
        m.pod(&b).is_some(),
        r.restarts("gone"),
        r.restarts("error"),
    );
    // and the watch goes on after the fresh list
    let d = k.create_pod(&ns, "d", &node, &[], &[], &app);
    assert!(eventually(Duration::from_secs(30), || m.pod(&d).is_some()));
    eprintln!(
        "restarts: gone {} error {} ended {}; errors: connect {} gone {} forbidden {}",
        r.restarts("gone"),
        r.restarts("error"),
        r.restarts("ended"),
        r.errors("connect"),
        r.errors("gone"),
        r.errors("forbidden")
    );
    r.stop();
}
