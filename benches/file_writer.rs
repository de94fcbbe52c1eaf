//! The file sink: batches of decoded forward entries → formatted lines in a
//! file, as the sink thread does it. Reports records/s and MB/s written.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use logferry::buffer::Delivery;
use logferry::event::Batch;
use logferry::metrics::Registry;
use logferry::sinks;
use logferry::topology::kinds::{build_sink, SinkKind};

mod common;
use common::{batch, RECORDS};

fn sink(dir: &std::path::Path, format: &str) -> Box<dyn sinks::Sink> {
    let config = format!(
        "path = {:?}\nformat = {format}",
        dir.join("out.log").display().to_string()
    );
    let kind = SinkKind::File(toml::from_str(&config).unwrap());
    match build_sink("bench", kind, &Default::default(), &Registry::new()).unwrap() {
        sinks::SinkRunner::Blocking(s) => s,
        sinks::SinkRunner::Forward(_)
        | sinks::SinkRunner::Kafka(_)
        | sinks::SinkRunner::Http(_)
        | sinks::SinkRunner::Loki(_)
        | sinks::SinkRunner::OpenSearch(_)
        | sinks::SinkRunner::Otlp(_)
        | sinks::SinkRunner::S3(_)
        | sinks::SinkRunner::SplunkHec(_) => {
            unreachable!("the file sink is a blocking sink")
        }
    }
}

fn deliveries(b: &Batch, n: usize) -> Vec<Delivery> {
    (0..n).map(|_| Delivery::standalone(b.clone())).collect()
}

fn write(c: &mut Criterion) {
    for (size, format) in [
        (100, "\"raw\""),
        (4096, "\"raw\""),
        (100, "\"json\""),
        (
            100,
            "{ type = \"template\", template = \"{time} {tag} {message}\" }",
        ),
    ] {
        let name = format!(
            "file_writer/{size}B/{}",
            format.split('"').nth(1).unwrap_or(format)
        );
        let b = batch(size);
        let mut group = c.benchmark_group(name);
        group.measurement_time(Duration::from_secs(5));
        group.throughput(Throughput::Elements(RECORDS as u64));
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), format);
        group.bench_function("records", |bench| {
            bench.iter_custom(|iters| {
                let ds = deliveries(&b, iters as usize);
                let start = std::time::Instant::now();
                for d in ds {
                    s.take(d);
                }
                s.flush();
                let t = start.elapsed();
                // keep the disk from filling across iterations
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.path().join("out.log"))
                    .and_then(|f| f.set_len(0));
                t
            })
        });
        group.finish();
    }
}

criterion_group!(benches, write);
criterion_main!(benches);
