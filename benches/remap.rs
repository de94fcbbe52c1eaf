//! What a `remap` filter costs per record: a 200-byte apache combined
//! line parsed in VRL (`parse_apache_log`), and a 200-byte JSON line
//! (`parse_json`) with a field changed, against the built-in `parser`
//! filter doing the same parse. Batches of 1000 lines, one thread.
//! Reproduce: `cargo bench --bench remap -- --quick`.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use logferry::event::{Batch, EventTime, Records};
use logferry::filters::parser::{ParserConfig, ParserFilter};
use logferry::filters::remap::{RemapConfig, RemapFilter};
use logferry::metrics::Registry;
use logferry::router::{Filter, TagPattern};

const RECORDS: usize = 1000;

/// 1000 copies of `line`, numbered (about 200 bytes each).
fn batch(line: &str) -> (Batch, usize) {
    let mut data = Vec::new();
    for i in 0..RECORDS {
        let l = line.replace("{i}", &format!("{i:06}"));
        data.extend_from_slice(l.as_bytes());
        data.push(b'\n');
    }
    let bytes = data.len();
    let batch = Batch::new(
        "app.web".into(),
        Records::Lines {
            data: Bytes::from(data),
            time: EventTime::new(1_700_000_000, 0),
        },
        RECORDS,
    );
    (batch, bytes)
}

const APACHE: &str = "192.168.10.21 - frank [27/Nov/2026:10:00:00 +0000] \"GET /api/v1/items/{i}?page=2 HTTP/1.1\" 200 5123 \"https://example.com/list\" \"Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 bench/1.0\"";
const JSON: &str = "{\"time\":\"2026-11-27T10:00:00Z\",\"level\":\"INFO\",\"service\":\"checkout\",\"request_id\":\"{i}\",\"message\":\"order placed for customer 4411\",\"duration_ms\":23,\"status\":200,\"pad\":\"abcdefghijklmnopqrstuvwxyz0123\"}";

fn remap(source: &str) -> RemapFilter {
    let config = RemapConfig {
        source: Some(source.to_string()),
        file: None,
        drop_on_abort: true,
        drop_on_error: false,
        error_tag: None,
        timezone: Some("UTC".into()),
    };
    RemapFilter::new("bench", pattern(), &config, &Registry::new()).expect("compiles")
}

fn pattern() -> TagPattern {
    TagPattern::new("**").expect("valid pattern")
}

fn parser(format: &str) -> ParserFilter {
    let config: ParserConfig = toml::from_str(&format!("format = \"{format}\"")).expect("parses");
    ParserFilter::new("bench", pattern(), &config, &Registry::new()).expect("builds")
}

fn run(c: &mut Criterion, name: &str, line: &str, filters: Vec<(&str, Box<dyn Filter>)>) {
    let (input, bytes) = batch(line);
    assert!(
        (195..=215).contains(&(bytes / RECORDS)),
        "{name}: {} B lines",
        bytes / RECORDS
    );
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(RECORDS as u64));
    for (id, filter) in &filters {
        // every record must come out parsed, or the bench measures a failure
        let mut out = Vec::new();
        filter.apply(input.clone(), &mut out);
        assert_eq!(out.iter().map(|b| b.count).sum::<usize>(), RECORDS);
        assert!(
            matches!(out[0].records, Records::Entries(_)),
            "{id}: nothing parsed"
        );
        group.bench_function(*id, |b| {
            let mut out = Vec::with_capacity(4);
            b.iter(|| {
                out.clear();
                filter.apply(input.clone(), &mut out);
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group(format!("{name}_bytes"));
    group.throughput(Throughput::Bytes(bytes as u64));
    let (id, filter) = &filters[0];
    group.bench_function(*id, |b| {
        let mut out = Vec::with_capacity(4);
        b.iter(|| {
            out.clear();
            filter.apply(input.clone(), &mut out);
        })
    });
    group.finish();
}

fn apache(c: &mut Criterion) {
    run(
        c,
        "apache_combined_200B",
        APACHE,
        vec![
            (
                "vrl_parse_apache_log",
                Box::new(remap(". = parse_apache_log!(.message, \"combined\")")),
            ),
            ("parser_apache2", Box::new(parser("apache2"))),
        ],
    );
}

fn json(c: &mut Criterion) {
    run(
        c,
        "json_200B",
        JSON,
        vec![
            (
                "vrl_parse_json",
                Box::new(remap(
                    ". = parse_json!(.message)\n.level = downcase!(.level)\ndel(.pad)",
                )),
            ),
            ("parser_json", Box::new(parser("json"))),
        ],
    );
}

criterion_group!(benches, apache, json);
criterion_main!(benches);
