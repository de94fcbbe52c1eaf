//! The kubernetes filter's reading of what a forwarding agent sends
//! (`filters::kubernetes`): a record's tag, which names the pod
//! (`TagPlace::parse`), and its `log` text, which `merge_log` reads as
//! JSON (`MergeLog`).
//!
//! Byte 0 picks the tag prefix (Fluent Bit's default, none, or `k8s.`)
//! and the merge settings (`merge_log_key`, `keep_log`, `merge_log_trim`);
//! the rest, as text, is both the tag after the prefix and the `log`
//! value.
//!
//! Checked: nothing panics, nothing recurses past the small stack; a tag
//! that is read puts its parts back together into the tag; a merged
//! record is one valid msgpack map.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::filters::field::{map_fields, write_map};
use logferry::filters::kubernetes::{MergeLog, TagPlace};
use logferry::protocol::msgpack::write;

mod common;

const PREFIXES: [&str; 3] = ["kube.var.log.containers.", "", "k8s."];

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    common::on_small_stack(move || {
        let prefix = PREFIXES[usize::from(head % 3)];
        let tag = format!("{prefix}{text}");
        if let Some(p) = TagPlace::parse(&tag, prefix) {
            let again = format!(
                "{prefix}{}_{}_{}-{}.log",
                p.pod, p.namespace, p.container, p.container_id
            );
            assert_eq!(again, tag);
            assert_eq!(p.container_id.len(), 64);
        }

        let merge = MergeLog {
            key: (head & 0x04 != 0).then(|| b"merged".to_vec()),
            keep_log: head & 0x08 != 0,
            trim: head & 0x10 != 0,
        };
        let mut record = Vec::new();
        write::map_len(&mut record, 2);
        write::str(&mut record, b"log");
        write::str(&mut record, text.as_bytes());
        write::str(&mut record, b"stream");
        write::str(&mut record, b"stdout");
        let fields = map_fields(&record).expect("a map of text keys");
        let mut scratch = Vec::new();
        if merge.read(&fields, &mut scratch) {
            let merged = merge.merge(fields, &scratch);
            let mut out = Vec::new();
            write_map(&mut out, &merged);
            assert_eq!(logferry::protocol::msgpack::skip(&out, 0), Ok(out.len()));
        }
    });
});
