//! The real OpenSearch node the OpenSearch sink is tested against
//! (scripts/opensearch.sh, tests/common/opensearch.rs): what its `_bulk`
//! answers look like when a document is refused, that data streams take
//! `create`, that the helpers read back every document, and that a private
//! node killed with SIGKILL comes back on its port with what it had
//! acknowledged.

mod common;

use std::collections::BTreeSet;

use common::opensearch::{unique_index, OpenSearch};
use serde_json::{json, Value};

/// `n` numbered documents as `_bulk` lines with the action `action`; the
/// documents whose number is in `bad` carry a string in `n`.
fn bulk_lines(action: &str, n: u64, bad: &[u64]) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&json!({ action: {} }).to_string());
        s.push('\n');
        let doc = if bad.contains(&i) {
            json!({"@timestamp": "2026-11-27T00:00:00Z", "n": "not-a-number", "seq": i})
        } else {
            json!({"@timestamp": "2026-11-27T00:00:00Z", "n": i, "seq": i})
        };
        s.push_str(&doc.to_string());
        s.push('\n');
    }
    s
}

/// The `seq` of every document, asserting each is there once.
fn seqs(docs: &[Value]) -> BTreeSet<u64> {
    let mut set = BTreeSet::new();
    for d in docs {
        let s = d["seq"].as_u64().unwrap_or_else(|| panic!("no seq in {d}"));
        assert!(set.insert(s), "seq {s} indexed twice");
    }
    set
}

/// Asserts `got` holds exactly the numbers of `want`, naming the first
/// missing and unexpected ones rather than printing both sets.
fn assert_exactly(got: &BTreeSet<u64>, want: impl IntoIterator<Item = u64>) {
    let want: BTreeSet<u64> = want.into_iter().collect();
    let missing: Vec<_> = want.difference(got).take(10).collect();
    let extra: Vec<_> = got.difference(&want).take(10).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} documents of {}: missing {missing:?}…, unexpected {extra:?}…",
        got.len(),
        want.len()
    );
}

#[test]
fn a_bulk_with_one_refused_document_answers_errors_with_that_item_alone() {
    let os = OpenSearch::shared();
    let index = unique_index("refused");
    os.put_json(
        &format!("/{index}"),
        &json!({"mappings": {"properties": {"n": {"type": "long"}}}}),
    );
    let answer = os.post_ndjson(&format!("/{index}/_bulk"), &bulk_lines("index", 3, &[1]));
    println!("bulk answer with a refused document: {answer}");

    assert_eq!(answer["errors"], json!(true), "{answer}");
    let items = answer["items"].as_array().expect("items");
    assert_eq!(items.len(), 3, "one item per document, in order: {answer}");
    let failed: Vec<(usize, &Value)> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| it["index"].get("error").is_some())
        .collect();
    assert_eq!(failed.len(), 1, "{answer}");
    let (at, item) = failed[0];
    assert_eq!(at, 1, "the refused item stands where its document stood");
    assert_eq!(item["index"]["status"], json!(400));
    assert_eq!(
        item["index"]["error"]["type"],
        json!("mapper_parsing_exception")
    );
    for ok in [0, 2] {
        assert_eq!(items[ok]["index"]["status"], json!(201), "{answer}");
        assert_eq!(items[ok]["index"]["result"], json!("created"), "{answer}");
    }

    assert_eq!(os.count(&index), 2);
    // the two others are indexed once
    assert_exactly(&seqs(&os.search_all(&index)), [0, 2]);
    os.delete_index(&index);
    assert_eq!(os.count(&format!("{index}*")), 0, "deleted");
}

/// More documents than one search page (10,000) holds: `search_all` must
/// page through them all.
#[test]
fn a_data_stream_takes_create_and_every_document_reads_back() {
    const N: u64 = 12_345;
    let os = OpenSearch::shared();
    os.put_json(
        "/_index_template/logferry-test-logs-ds",
        &json!({"index_patterns": ["logs-ds-*"], "data_stream": {}, "priority": 100}),
    );
    let stream = unique_index("logs-ds");
    let answer = os.post_ndjson(&format!("/{stream}/_bulk"), &bulk_lines("create", N, &[]));
    assert_eq!(answer["errors"], json!(false), "{}", answer["items"][0]);
    let first = &answer["items"][0]["create"];
    assert!(
        first["_index"]
            .as_str()
            .is_some_and(|i| i.starts_with(&format!(".ds-{stream}-"))),
        "a data stream writes to its backing index: {first}"
    );

    // `index` is refused by a data stream: it only takes `create`
    let refused = os.post_ndjson(&format!("/{stream}/_bulk"), &bulk_lines("index", 1, &[]));
    assert_eq!(refused["errors"], json!(true), "{refused}");
    println!("bulk `index` into a data stream: {refused}");

    assert_eq!(os.count(&stream), N);
    assert_exactly(&seqs(&os.search_all(&stream)), 0..N);
    os.delete_data_stream(&stream);
}

#[test]
fn a_private_node_killed_comes_back_on_its_port_with_its_documents() {
    let dir = tempfile::tempdir().unwrap();
    let os = OpenSearch::private(dir.path());
    assert_ne!(os.url(), OpenSearch::shared().url());
    let index = unique_index("killed");
    let answer = os.post_ndjson(&format!("/{index}/_bulk"), &bulk_lines("index", 100, &[]));
    assert_eq!(answer["errors"], json!(false), "{}", answer["items"][0]);

    os.kill();
    assert!(!os.is_up(), "a killed node does not answer");
    os.restart();
    assert!(os.is_up());
    // acknowledged documents are in the translog: a crash keeps them
    assert_eq!(os.count(&index), 100);
    assert_exactly(&seqs(&os.search_all(&index)), 0..100);
}
