//! The Kubernetes metadata cache (`logferry::kube::cache::Store`): the
//! heap it holds for a node's pods (110, Kubernetes' default per node)
//! and for a large filter's (5,000), measured by a counting allocator,
//! and lookups by uid per second. The pods are decoded from the JSON an
//! API server sends (managed fields, full spec and status), with 6
//! labels, 3 annotations and 2 containers each, as a Deployment's pods
//! have; a pod with a large annotation (kubectl's last-applied
//! configuration) costs that annotation's length more.
//!
//! Reproduce: `cargo bench --bench kube_cache` (the memory lines are
//! printed first; `cargo test --bench kube_cache` prints them from a
//! debug build, the same figures).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use logferry::kube::cache::Store;
use logferry::kube::objects::{decode_event, Event};
use logferry::kube::Pod;

/// Bytes allocated and not freed, by every thread.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every call is passed to the system allocator unchanged; only the
// sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// An ADDED event of pod `i`, as an API server writes it.
fn event(i: usize) -> String {
    let name = format!("web-7d9f8c6b5-{i:05}");
    let uid = format!("6d1e2042-8013-449c-aa93-{i:012}");
    format!(
        r#"{{"type":"ADDED","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","generateName":"web-7d9f8c6b5-","namespace":"shop-frontend","uid":"{uid}","resourceVersion":"{v}","creationTimestamp":"2026-12-06T00:00:00Z","labels":{{"app":"web","app.kubernetes.io/name":"web","app.kubernetes.io/instance":"shop","app.kubernetes.io/version":"1.27.3","pod-template-hash":"7d9f8c6b5","tier":"frontend"}},"annotations":{{"kubectl.kubernetes.io/restartedAt":"2026-12-01T10:00:00Z","prometheus.io/scrape":"true","prometheus.io/port":"9090"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f8c6b5","uid":"0b9e","controller":true,"blockOwnerDeletion":true}}],"managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-12-06T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:generateName":{{}},"f:labels":{{".":{{}},"f:app":{{}}}}}}}}}}]}},"spec":{{"nodeName":"node-a","containers":[{{"name":"web","image":"registry.example.com/shop/web:1.27.3","ports":[{{"containerPort":8080,"protocol":"TCP"}}],"resources":{{"limits":{{"memory":"256Mi"}},"requests":{{"cpu":"100m"}}}},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}},{{"name":"envoy","image":"envoyproxy/envoy:v1.31.0"}}],"restartPolicy":"Always","serviceAccountName":"web","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}]}},"status":{{"phase":"Running","podIP":"10.244.{a}.{b}","hostIP":"172.18.0.2","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"2026-12-06T00:00:05Z"}}],"containerStatuses":[{{"name":"web","image":"registry.example.com/shop/web:1.27.3","imageID":"registry.example.com/shop/web@sha256:4f2a7c0e6b0f1c9e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e","containerID":"containerd://{i:064}","ready":true,"restartCount":0,"started":true,"state":{{"running":{{"startedAt":"2026-12-06T00:00:04Z"}}}}}},{{"name":"envoy","image":"docker.io/envoyproxy/envoy:v1.31.0","imageID":"docker.io/envoyproxy/envoy@sha256:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b","containerID":"containerd://{j:064}","ready":true,"restartCount":0,"started":true}}]}}}}}}"#,
        v = 1000 + i,
        a = i / 250,
        b = i % 250,
        j = i + 1_000_000,
    )
}

/// Heap held by a cache of `n` pods, in bytes.
fn cache_bytes(n: usize) -> (Store, isize) {
    let lines: Vec<String> = (0..n).map(event).collect();
    let store = Store::new(Duration::from_secs(60), false);
    let before = LIVE.load(Ordering::Relaxed);
    for line in &lines {
        if let Ok(Event::Added(pod, version)) = decode_event::<Pod>(line.as_bytes()) {
            store.upsert_pod(pod, version);
        }
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
    assert_eq!(store.live().0, n);
    (store, held)
}

fn bench(c: &mut Criterion) {
    for n in [110, 5_000] {
        let (_, bytes) = cache_bytes(n);
        println!(
            "kube metadata cache: {n} pods hold {:.1} KiB ({} bytes per pod)",
            bytes as f64 / 1024.0,
            bytes / n as isize
        );
    }
    let (store, _) = cache_bytes(110);
    let uids: Vec<String> = (0..110)
        .map(|i| format!("6d1e2042-8013-449c-aa93-{i:012}"))
        .collect();
    let mut g = c.benchmark_group("kube_cache");
    g.throughput(Throughput::Elements(uids.len() as u64));
    g.bench_function("pod_by_uid", |b| {
        b.iter(|| {
            for uid in &uids {
                black_box(store.pod(black_box(uid)));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
