//! The opensearch sink's reading of `_bulk` answers
//! (`sinks::opensearch::bulk::read_answer`): the body comes from whatever
//! answers at the configured endpoint.
//!
//! Byte 0 picks the number of documents the request had (0 to 63) and the
//! action (bit 6: `create`). The rest is the answer's body.
//!
//! Checked:
//! * nothing panics, and stack use stays bounded (serde_json's recursion
//!   limit, on the small stack of `common.rs`);
//! * a body that is read gives exactly one result per document, in order.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::sinks::opensearch::bulk::read_answer;
use logferry::sinks::opensearch::config::Action;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let docs = usize::from(head & 0x3f);
    let action = if head & 0x40 != 0 {
        Action::Create
    } else {
        Action::Index
    };
    let body = body.to_vec();
    common::on_small_stack(move || {
        if let Ok(results) = read_answer(&body, docs, action) {
            assert_eq!(results.len(), docs);
        }
    });
});
