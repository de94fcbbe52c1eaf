//! JSON of records with a nested map (a pod's Kubernetes metadata), as the
//! `json` format writes them: the map the same in every record (the
//! formatter's cache of recent containers copies its JSON), or different
//! in every record in its last bytes (the cache compares and stores it
//! for nothing: the worst case), or different in its first bytes.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use logferry::format::json::write_value;
use logferry::protocol::msgpack::{write, Reader};

const RECORDS: usize = 1000;

/// `RECORDS` encoded records `{"log": …, "kubernetes": {…}}`; `vary(i)`
/// gives the pod name of record `i`, placed first or last in the map.
fn records(vary: impl Fn(usize) -> String, pod_last: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..RECORDS {
        write::map_len(&mut out, 2);
        write::str(&mut out, b"log");
        write::str(
            &mut out,
            format!("GET /api/v1/items/{i} 200 {}", i % 977).as_bytes(),
        );
        write::str(&mut out, b"kubernetes");
        let pod = vary(i);
        let fixed: [(&str, &str); 6] = [
            ("namespace_name", "shop"),
            ("container_name", "nginx"),
            ("host", "node-a-1234.eu-west-1.compute.internal"),
            ("container_image", "docker.io/library/nginx:1.27.3"),
            ("pod_id", "9f8edcc5-c87c-45d3-9da7-9c4743a61c5b"),
            (
                "docker_id",
                "752d1752d1752d1752d1752d1752d1752d1752d1752d1752d1752d1752d1752d",
            ),
        ];
        write::map_len(&mut out, fixed.len() + 1);
        if !pod_last {
            write::str(&mut out, b"pod_name");
            write::str(&mut out, pod.as_bytes());
        }
        for (k, v) in fixed {
            write::str(&mut out, k.as_bytes());
            write::str(&mut out, v.as_bytes());
        }
        if pod_last {
            write::str(&mut out, b"pod_name");
            write::str(&mut out, pod.as_bytes());
        }
    }
    out
}

fn containers(c: &mut Criterion) {
    let cases = [
        ("repeats", records(|_| "web-7d4b9c".to_string(), true)),
        (
            "differs_at_its_end",
            records(|i| format!("web-{i:06}"), true),
        ),
        (
            "differs_at_its_start",
            records(|i| format!("web-{i:06}"), false),
        ),
    ];
    let mut group = c.benchmark_group("json_containers");
    group.throughput(Throughput::Elements(RECORDS as u64));
    for (name, data) in &cases {
        let mut out = Vec::with_capacity(data.len() * 2);
        group.bench_function(*name, |b| {
            b.iter(|| {
                out.clear();
                let mut r = Reader::new(data);
                while !r.is_empty() {
                    write_value(&mut out, &mut r).unwrap();
                    out.push(b'\n');
                }
                out.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, containers);
criterion_main!(benches);
