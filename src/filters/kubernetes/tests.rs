use super::*;

/// `json` as an encoded map.
fn map(json: &str) -> Vec<u8> {
    let mut out = Vec::new();
    crate::protocol::json::object_to_msgpack(&mut out, json.as_bytes()).unwrap();
    out
}

fn json(map: &[u8]) -> String {
    let mut out = Vec::new();
    crate::format::write_record_json(crate::event::RecordRef::Map(map), &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn the_tags_container_id_completes_a_map_without_one() {
    let m = map(
        r#"{"pod_name":"web","namespace_name":"ns","container_name":"app","namespace_labels":{}}"#,
    );
    assert_eq!(
        json(&completed(m, Some("abc"))),
        r#"{"pod_name":"web","namespace_name":"ns","container_name":"app","docker_id":"abc","namespace_labels":{}}"#
    );
    // the cache's id stays
    let m = map(r#"{"pod_name":"web","docker_id":"fromapi"}"#);
    assert_eq!(completed(m.clone(), Some("abc")), m);
    // no id named: left as it is
    let m = map(r#"{"pod_name":"web"}"#);
    assert_eq!(completed(m.clone(), None), m);
}

use crate::event::{RecordRef, Records};
use crate::kube::cache::Store;
use crate::kube::{Container, Namespace, Pod};

const PREFIX: &str = "kube.var.log.containers.";

fn id() -> String {
    "0123456789abcdef".repeat(4)
}

fn tag(ns: &str, pod: &str, container: &str) -> String {
    format!("{PREFIX}{pod}_{ns}_{container}-{}.log", id())
}

/// A filter on a cache the test fills, and that cache.
fn filter(config: &str) -> (KubernetesFilter, Arc<Store>) {
    let config: KubernetesFilterConfig =
        toml::from_str(&format!("metadata_wait = 0\n{config}")).unwrap();
    config.validate().unwrap();
    let store = Arc::new(Store::new(std::time::Duration::from_secs(60), true));
    let (stop, _) = crate::component::shutdown_channel();
    let f = KubernetesFilter::with_metadata(
        "k8s",
        TagPattern::new("**").unwrap(),
        &config,
        &Registry::new(),
        Metadata::from_store(store.clone()),
        stop,
    );
    (f, store)
}

fn pod(ns: &str, name: &str, app: &str, version: u64) -> (Pod, String) {
    let pod = Pod {
        namespace: ns.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        node_name: Some("node-a".into()),
        labels: [("app".to_string(), app.to_string())].into(),
        annotations: [("owner".to_string(), "team-a".to_string())].into(),
        containers: vec![Container {
            name: "nginx".into(),
            image: "nginx:1.27".into(),
            ..Container::default()
        }],
        ..Pod::default()
    };
    (pod, version.to_string())
}

/// A batch of `[time, record]` entries, each record given as JSON.
fn entries(tag: &str, records: &[&str]) -> Batch {
    let mut data = Vec::new();
    for r in records {
        write::array_len(&mut data, 2);
        write::event_time(&mut data, 1_700_000_000, 0);
        crate::protocol::json::object_to_msgpack(&mut data, r.as_bytes()).unwrap();
    }
    Batch::new(tag.into(), Records::Entries(data.into()), records.len())
}

/// The records the filter puts out, as JSON values.
fn applied(f: &KubernetesFilter, batch: Batch) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    f.apply(batch, &mut out);
    let mut records = Vec::new();
    for b in out {
        match &b.records {
            Records::Entries(data) => {
                let mut r = Reader::new(data);
                while !r.is_empty() {
                    let map = crate::event::next_record(&mut r).unwrap();
                    records.push(serde_json::from_str(&json(map)).unwrap());
                }
            }
            Records::Lines { data, .. } => {
                for line in data.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
                    let mut j = Vec::new();
                    crate::format::write_record_json(RecordRef::Line(line), &mut j);
                    records.push(serde_json::from_slice(&j).unwrap());
                }
            }
        }
    }
    records
}

#[test]
fn a_known_pods_records_get_its_map_and_a_change_shows_at_once() {
    let (f, store) = filter("merge_log = true\nkeep_log = false");
    let (p, v) = pod("shop", "web-1", "web", 1);
    store.upsert_pod(p, v);
    store.upsert_namespace(
        Namespace {
            name: "shop".into(),
            labels: [("team".to_string(), "logs".to_string())].into(),
            ..Namespace::default()
        },
        "1".into(),
    );
    let t = tag("shop", "web-1", "nginx");
    let out = applied(
        &f,
        entries(
            &t,
            &[
                r#"{"log":"{\"a\":1}","kubernetes":{"old":1}}"#,
                r#"{"log":"text"}"#,
            ],
        ),
    );
    assert_eq!(out.len(), 2);
    for r in &out {
        let k = &r["kubernetes"];
        assert_eq!(k["pod_name"], "web-1", "{r}");
        assert_eq!(k["namespace_name"], "shop", "{r}");
        assert_eq!(k["labels"]["app"], "web", "{r}");
        assert_eq!(k["annotations"]["owner"], "team-a", "{r}");
        assert_eq!(k["namespace_labels"]["team"], "logs", "{r}");
        assert_eq!(k["docker_id"], id().as_str(), "{r}");
        assert!(k.get("old").is_none(), "{r}");
    }
    assert_eq!(out[0]["a"], 1);
    assert!(out[0].get("log").is_none());
    assert_eq!(out[1]["log"], "text");

    let (p, v) = pod("shop", "web-1", "web-v2", 2);
    store.upsert_pod(p, v);
    let out = applied(&f, entries(&t, &[r#"{"log":"x"}"#]));
    assert_eq!(out[0]["kubernetes"]["labels"]["app"], "web-v2");
}

#[test]
fn an_unknown_pod_gets_what_its_tag_tells_counted() {
    let (f, _store) = filter("");
    let t = tag("shop", "ghost", "worker");
    let out = applied(&f, entries(&t, &[r#"{"log":"a"}"#, r#"{"log":"b"}"#]));
    for r in &out {
        let k = &r["kubernetes"];
        assert_eq!(k["pod_name"], "ghost", "{r}");
        assert_eq!(k["namespace_name"], "shop", "{r}");
        assert_eq!(k["container_name"], "worker", "{r}");
        assert_eq!(k["docker_id"], id().as_str(), "{r}");
        assert!(
            k.get("labels").is_none() && k.get("pod_id").is_none(),
            "{r}"
        );
    }
    assert_eq!(f.without_metadata.get(), 2);
}

#[test]
fn other_tags_pass_as_they_came_and_lines_become_maps() {
    let (f, store) = filter("merge_log = true");
    let batch = entries("app.web", &[r#"{"log":"{\"a\":1}"}"#]);
    let before = match &batch.records {
        Records::Entries(d) => d.clone(),
        _ => unreachable!(),
    };
    let mut out = Vec::new();
    f.apply(batch, &mut out);
    match &out[0].records {
        Records::Entries(d) => assert_eq!(d, &before),
        _ => panic!("changed"),
    }

    let (p, v) = pod("shop", "web-1", "web", 1);
    store.upsert_pod(p, v);
    let t = tag("shop", "web-1", "nginx");
    let lines = Batch::new(
        t.as_str().into(),
        Records::Lines {
            data: bytes::Bytes::from_static(b"one\ntwo\n"),
            time: crate::event::EventTime::now(),
        },
        2,
    );
    let out = applied(&f, lines);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1]["message"], "two");
    assert_eq!(out[1]["kubernetes"]["labels"]["app"], "web");
}

#[test]
fn record_fields_name_the_pod_when_the_tag_does_not() {
    let (f, store) = filter("use_record_fields = true");
    let (p, v) = pod("shop", "web-1", "web", 1);
    store.upsert_pod(p, v);
    let out = applied(
        &f,
        entries(
            "agent.logs",
            &[
                r#"{"log":"a","kubernetes":{"namespace_name":"shop","pod_name":"web-1","container_name":"nginx"}}"#,
                r#"{"log":"b","kubernetes":{"namespace_name":"shop","pod_name":"gone","mine":1}}"#,
                r#"{"log":"c"}"#,
            ],
        ),
    );
    assert_eq!(out[0]["kubernetes"]["labels"]["app"], "web");
    assert_eq!(out[0]["kubernetes"]["container_name"], "nginx");
    // a pod the cache does not know: the record's own map stays
    assert_eq!(out[1]["kubernetes"]["mine"], 1);
    assert_eq!(out[2], serde_json::json!({"log": "c"}));
    assert_eq!(f.without_metadata.get(), 1);
}

#[test]
fn with_metadata_wait_an_unknown_pods_batches_wait_for_it_in_order() {
    let config: KubernetesFilterConfig = toml::from_str("metadata_wait = \"30s\"").unwrap();
    let store = Arc::new(Store::new(std::time::Duration::from_secs(60), true));
    let (stop, _) = crate::component::shutdown_channel();
    let f = KubernetesFilter::with_metadata(
        "k8s",
        TagPattern::new("**").unwrap(),
        &config,
        &Registry::new(),
        Metadata::from_store(store.clone()),
        stop,
    );
    assert!(f.holds());
    let t = tag("shop", "web-1", "nginx");
    let mut out = Vec::new();
    f.apply(entries(&t, &[r#"{"log":"1"}"#]), &mut out);
    f.apply(entries(&t, &[r#"{"log":"2"}"#]), &mut out);
    assert!(out.is_empty(), "held");
    let now = Instant::now();
    let d = f.deadline().unwrap();
    assert!(d > now + std::time::Duration::from_secs(20), "{d:?}");
    f.flush(now, false, &mut out);
    assert!(out.is_empty(), "not known yet, not due");

    let (p, v) = pod("shop", "web-1", "web", 1);
    store.upsert_pod(p, v);
    // the cache changed: due soon
    assert!(f.deadline().unwrap() <= Instant::now() + wait::LOOK_AGAIN);
    f.flush(Instant::now(), false, &mut out);
    assert!(
        out.is_empty(),
        "the pod is in, its namespace's labels are not"
    );

    let shop = Namespace {
        name: "shop".into(),
        labels: [("team".to_string(), "logs".to_string())].into(),
        ..Namespace::default()
    };
    store.replace_namespaces(vec![(shop, "1".into())], "1");
    assert!(f.deadline().unwrap() <= Instant::now() + wait::LOOK_AGAIN);
    f.flush(Instant::now(), false, &mut out);
    let records: Vec<serde_json::Value> = out.drain(..).flat_map(applied_none).collect();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["log"], "1");
    assert_eq!(records[1]["log"], "2");
    for r in &records {
        assert_eq!(r["kubernetes"]["labels"]["app"], "web", "{r}");
        assert_eq!(r["kubernetes"]["namespace_labels"]["team"], "logs", "{r}");
    }
    assert_eq!(f.without_metadata.get(), 0);
    assert_eq!(f.deadline(), None);

    // a pod never known: held once until its time is up, then never again
    let ghost = tag("shop", "ghost", "app");
    f.apply(entries(&ghost, &[r#"{"log":"g1"}"#]), &mut out);
    assert!(out.is_empty());
    f.flush(
        Instant::now() + std::time::Duration::from_secs(31),
        false,
        &mut out,
    );
    assert_eq!(out.len(), 1);
    f.apply(entries(&ghost, &[r#"{"log":"g2"}"#]), &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(f.without_metadata.get(), 2);

    // retired: what is held goes on as it came, and nothing more is held
    let other = tag("shop", "other", "app");
    out.clear();
    f.apply(entries(&other, &[r#"{"log":"o1"}"#]), &mut out);
    f.retire();
    f.flush(Instant::now(), true, &mut out);
    let held = applied_none(out.remove(0));
    assert!(held[0].get("kubernetes").is_none(), "{:?}", held[0]);
    f.apply(entries(&other, &[r#"{"log":"o2"}"#]), &mut out);
    assert_eq!(out.len(), 1);
}

/// The records of `batch` as JSON values, as they are.
fn applied_none(batch: Batch) -> Vec<serde_json::Value> {
    let Records::Entries(data) = &batch.records else {
        panic!("entries")
    };
    let mut r = Reader::new(data);
    let mut out = Vec::new();
    while !r.is_empty() {
        let map = crate::event::next_record(&mut r).unwrap();
        out.push(serde_json::from_str(&json(map)).unwrap());
    }
    out
}
