//! The Kafka sink's encoder: a batch's records → one message each, as the
//! sink does it for every batch before handing the messages to librdkafka.
//! Reports records/s (elements).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logferry::format::{FormatConfig, FormatKind, Formatter};
use logferry::sinks::kafka::encode::Encoder;

mod common;
use common::{batch, RECORDS};

fn encoder(kind: FormatKind) -> Encoder {
    let config = FormatConfig {
        kind,
        ..FormatConfig::default()
    };
    Encoder::new(Formatter::new(&config).unwrap(), None)
}

fn encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("kafka_encode");
    g.throughput(Throughput::Elements(RECORDS as u64));
    for size in [100, 1024] {
        let b = batch(size);
        for (name, kind) in [("raw", FormatKind::Raw), ("json", FormatKind::Json)] {
            let mut e = encoder(kind);
            let id = BenchmarkId::new(name, size);
            g.bench_with_input(id, &b, |bench, b| {
                bench.iter(|| e.encode(b, None).unwrap().len())
            });
        }
    }
    g.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
