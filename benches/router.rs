//! What routing a batch costs with the routes behind the reload lock
//! (`logferry::router::Router`, the one every source uses) against a plain
//! route list that nothing can swap, with the same per-tag cache and the
//! same queue. Batches of 1000 records, one sink (`match = "**"`), routed
//! by 1 and by 2 threads into one queue that a third thread empties.
//! Reproduce: `cargo bench --bench router -- --quick`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logferry::buffer::{queue, BufferConfig, QueueReceiver, SendError};
use logferry::event::{Batch, EventTime, Records, Tag};
use logferry::metrics::{Counter, Registry};
use logferry::router::{Route, Router, TagPattern};

const RECORDS: usize = 1000;

/// One batch of 1000 records of 100 bytes (the bytes are shared by every
/// clone, as a fan-out shares them).
fn batch() -> Batch {
    let line = [b'x'; 99].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    let data: Vec<u8> = line.repeat(RECORDS);
    Batch::new(
        "app.web".into(),
        Records::Lines {
            data: Bytes::from(data),
            time: EventTime::default(),
        },
        RECORDS,
    )
}

fn route() -> (Route, QueueReceiver) {
    let config = BufferConfig {
        max_bytes: u32::MAX as usize,
        ..BufferConfig::default()
    };
    let (queue, rx) = queue("bench", config, &Registry::new());
    let route = Route {
        sink: Arc::from("bench"),
        pattern: TagPattern::new("**").expect("valid pattern"),
        queue,
    };
    (route, rx)
}

/// The routing of `Router::route` over a list nothing can swap.
#[derive(Clone)]
struct PlainRouter {
    routes: Arc<Vec<Route>>,
    cache: HashMap<Tag, Arc<[usize]>>,
}

impl PlainRouter {
    async fn route(&mut self, batch: Batch) -> Result<(), SendError> {
        let routes = &self.routes;
        let targets = match self.cache.get(&batch.tag) {
            Some(t) => t.clone(),
            None => {
                let t: Arc<[usize]> = routes
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.pattern.matches(&batch.tag))
                    .map(|(i, _)| i)
                    .collect();
                self.cache.insert(batch.tag.clone(), t.clone());
                t
            }
        };
        match targets.len() {
            0 => Ok(()),
            1 => routes[targets[0]].queue.send(batch).await,
            _ => {
                for &i in &targets[..targets.len() - 1] {
                    routes[i].queue.send(batch.clone()).await?;
                }
                routes[targets[targets.len() - 1]].queue.send(batch).await
            }
        }
    }
}

/// Either router, so both run through the same harness.
#[derive(Clone)]
enum AnyRouter {
    Locked(Router),
    Plain(PlainRouter),
}

impl AnyRouter {
    async fn route(&mut self, batch: Batch) -> Result<(), SendError> {
        match self {
            AnyRouter::Locked(r) => r.route(batch).await,
            AnyRouter::Plain(r) => r.route(batch).await,
        }
    }
}

/// Routes `total` batches split over `threads` threads; a consumer thread
/// settles them. Returns the time until the last one was received.
fn run(router: &AnyRouter, mut rx: QueueReceiver, threads: usize, total: u64) -> Duration {
    let template = batch();
    let start = Instant::now();
    let consumer = std::thread::spawn(move || {
        for _ in 0..total {
            match rx.blocking_recv() {
                Some(d) => d.accept(),
                None => break,
            }
        }
        rx
    });
    let per = total / threads as u64;
    let mut producers = Vec::new();
    for t in 0..threads {
        let mut router = router.clone();
        let template = template.clone();
        let n = if t == 0 {
            total - per * (threads as u64 - 1)
        } else {
            per
        };
        producers.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            rt.block_on(async {
                for _ in 0..n {
                    router.route(template.clone()).await.expect("queue open");
                }
            });
        }));
    }
    for p in producers {
        p.join().expect("producer");
    }
    let _rx = consumer.join().expect("consumer");
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("route_1000_records");
    g.throughput(Throughput::Elements(RECORDS as u64));
    for threads in [1usize, 2] {
        g.bench_function(BenchmarkId::new("router_rwlock", threads), |b| {
            b.iter_custom(|iters| {
                let (route, rx) = route();
                let router = AnyRouter::Locked(Router::new(vec![route], Counter::detached()));
                run(&router, rx, threads, iters)
            })
        });
        g.bench_function(BenchmarkId::new("plain_list", threads), |b| {
            b.iter_custom(|iters| {
                let (route, rx) = route();
                let router = AnyRouter::Plain(PlainRouter {
                    routes: Arc::new(vec![route]),
                    cache: HashMap::new(),
                });
                run(&router, rx, threads, iters)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
