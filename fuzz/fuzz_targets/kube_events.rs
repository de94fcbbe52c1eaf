//! The Kubernetes metadata watch's reading of the API server's answers
//! (`kube::stream::Lines`, `kube::objects::decode_event` and
//! `decode_page`), applied to a cache as the watch applies them: the
//! bytes come from whatever answers at the configured API server.
//!
//! Byte 0 picks the chunk size (1 to 256) the body arrives in; the rest
//! is the body, read both as a watch stream and as one list page.
//!
//! Checked:
//! * nothing panics, and stack use stays bounded (serde_json's recursion
//!   limit, on the small stack of `common.rs`);
//! * the same lines give the same cache whatever the chunking;
//! * every pod of a list page is held once the page replaces the cache.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use logferry::kube::cache::Store;
use logferry::kube::objects::decode_page;
use logferry::kube::stream::{apply_line, Lines};
use logferry::kube::{Namespace, Pod};

mod common;

fn apply(body: &[u8], chunk: usize) -> (Store, String) {
    let store = Store::new(Duration::from_secs(60), true);
    let mut version = String::new();
    let mut lines = Lines::default();
    for piece in body.chunks(chunk) {
        lines.push(
            piece,
            |line| {
                let _ = apply_line::<Pod>(&store, line, &mut version);
                let _ = apply_line::<Namespace>(&store, line, &mut String::new());
            },
            || {},
        );
    }
    (store, version)
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(head) + 1;
    let body = body.to_vec();
    common::on_small_stack(move || {
        let (chunked, v1) = apply(&body, chunk);
        let (whole, v2) = apply(&body, body.len().max(1));
        assert_eq!(v1, v2);
        assert_eq!(chunked.generation(), whole.generation());
        assert_eq!(chunked.live(), whole.live());
        if let Ok(page) = decode_page::<Pod>(&body) {
            let uids: Vec<String> = page.items.iter().map(|(p, _)| p.uid.clone()).collect();
            let version = page.resource_version.clone();
            whole.replace_pods(page.items, &version);
            for uid in &uids {
                assert!(whole.pod(uid).is_some(), "listed pod {uid} not held");
            }
        }
        let _ = decode_page::<Namespace>(&body);
    });
});
