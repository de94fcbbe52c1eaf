//! Forward-protocol decoding: frames → batches, as a connection does it.
//! Reports records/s (elements) and MB/s of wire bytes.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use flate2::{write::GzEncoder, Compression};
use logferry::protocol::forward::{next_frame, write_message_entry, write_packed_forward, Limits};
use logferry::protocol::msgpack::write;
use std::io::Write;

const RECORDS: usize = 1000;

fn entries(size: usize) -> Vec<u8> {
    let msg = vec![b'x'; size];
    let mut e = Vec::new();
    for i in 0..RECORDS {
        write_message_entry(&mut e, 1_700_000_000, i as u32, &msg);
    }
    e
}

fn frames(size: usize) -> Vec<(&'static str, Vec<u8>)> {
    let e = entries(size);
    let mut packed = Vec::new();
    write_packed_forward(&mut packed, "bench", &e, RECORDS, None);
    let mut forward = Vec::new();
    write::array_len(&mut forward, 2);
    write::str(&mut forward, b"bench");
    write::array_len(&mut forward, RECORDS);
    forward.extend_from_slice(&e);
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&e).unwrap();
    let gz = gz.finish().unwrap();
    let mut compressed = Vec::new();
    write::array_len(&mut compressed, 3);
    write::str(&mut compressed, b"bench");
    write::bin_header(&mut compressed, gz.len());
    compressed.extend_from_slice(&gz);
    write::map_len(&mut compressed, 1);
    write::str(&mut compressed, b"compressed");
    write::str(&mut compressed, b"gzip");
    vec![
        ("PackedForward", packed),
        ("Forward", forward),
        ("CompressedPackedForward", compressed),
    ]
}

fn decode(c: &mut Criterion) {
    let limits = Limits::default();
    for size in [100usize, 4096] {
        let mut group = c.benchmark_group(format!("forward_decode/{size}B"));
        for (mode, frame) in frames(size) {
            group.throughput(Throughput::Elements(RECORDS as u64));
            group.bench_with_input(BenchmarkId::new("records", mode), &frame, |b, frame| {
                b.iter(|| {
                    let mut buf = BytesMut::from(&frame[..]);
                    let mut hint = logferry::protocol::forward::Scan::default();
                    let f = next_frame(&mut buf, &limits, &mut hint).unwrap().unwrap();
                    assert_eq!(f.count, RECORDS);
                    f
                })
            });
            group.throughput(Throughput::Bytes(frame.len() as u64));
            group.bench_with_input(BenchmarkId::new("wire_bytes", mode), &frame, |b, frame| {
                b.iter(|| {
                    let mut buf = BytesMut::from(&frame[..]);
                    let mut hint = logferry::protocol::forward::Scan::default();
                    next_frame(&mut buf, &limits, &mut hint).unwrap().unwrap()
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, decode);
criterion_main!(benches);
