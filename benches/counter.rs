//! The hot-path cost of a counter: `logferry::metrics::Counter::add` (a
//! `prometheus-client` counter) against the plain `Arc<AtomicU64>` relaxed
//! add it replaced. Both compile to one `lock add`; this bench shows it as
//! increments per second. Reproduce: `cargo bench --bench counter`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use logferry::metrics::Registry;

const ADDS: u64 = 1000;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("counter_add");
    g.throughput(Throughput::Elements(ADDS));
    let plain = Arc::new(AtomicU64::new(0));
    g.bench_function("arc_atomic_u64", |b| {
        b.iter(|| {
            for i in 0..ADDS {
                black_box(&plain).fetch_add(black_box(i & 1), Ordering::Relaxed);
            }
        })
    });
    let registry = Registry::new();
    let counter = registry.counter("bench_total", "x", &[("component", "bench")]);
    g.bench_function("logferry_counter", |b| {
        b.iter(|| {
            for i in 0..ADDS {
                black_box(&counter).add(black_box(i & 1));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
