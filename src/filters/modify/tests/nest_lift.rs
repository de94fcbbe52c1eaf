//! `nest` and `lift`.

use super::*;
use crate::memory::MemoryBudget;

/// One encoded value as JSON (maps and strings, as far as these tests go).
fn json_of(encoded: &[u8]) -> serde_json::Value {
    if let Some(fields) = map_fields(encoded) {
        let mut obj = serde_json::Map::new();
        for (k, v) in fields {
            obj.insert(String::from_utf8_lossy(&k).into(), json_of(&v));
        }
        return obj.into();
    }
    match Reader::new(encoded).read().unwrap() {
        Value::Str(v) => String::from_utf8_lossy(v).into(),
        other => format!("{other:?}").into(),
    }
}

fn records(batch: &Batch) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    batch
        .for_each_record(|_, r| {
            let crate::event::RecordRef::Map(m) = r else {
                panic!("a line left")
            };
            out.push(json_of(m));
        })
        .unwrap();
    out
}

/// `[time, {"log": …, KEY: {k: v…}}]` entries.
fn with_map(key: &str, maps: &[&[(&str, &[u8])]]) -> Batch {
    let mut out = Vec::new();
    for (i, inner) in maps.iter().enumerate() {
        write::array_len(&mut out, 2);
        write::event_time(&mut out, 7, 9);
        write::map_len(&mut out, 3);
        write::str(&mut out, b"log");
        write::str(&mut out, format!("line-{i}").as_bytes());
        write::str(&mut out, key.as_bytes());
        write::map_len(&mut out, inner.len());
        for (k, v) in inner.iter() {
            write::str(&mut out, k.as_bytes());
            write::str(&mut out, v);
        }
        write::str(&mut out, b"k8s_pod");
        write::str(&mut out, b"top");
    }
    Batch::new("t".into(), Records::Entries(out.into()), maps.len())
}

#[test]
fn lift_moves_a_maps_fields_up_with_a_prefix() {
    let f = filter("lift = { from = 'kubernetes', add_prefix = 'k8s_' }");
    let out = f
        .filter(with_map(
            "kubernetes",
            &[&[("pod", b"web-1"), ("ns", b"prod")], &[]],
        ))
        .unwrap();
    assert_eq!(
        records(&out),
        [
            // the lifted `pod` replaces the top-level `k8s_pod`
            serde_json::json!({"log": "line-0", "k8s_pod": "web-1", "k8s_ns": "prod"}),
            serde_json::json!({"log": "line-1", "k8s_pod": "top"}),
        ]
    );
}

#[test]
fn lift_leaves_records_without_the_map() {
    let f = filter("lift = { from = 'kubernetes' }");
    // missing, and a string rather than a map
    let batch = entries(&[&[("a", "0")], &[("kubernetes", "not a map")]]);
    let before = batch.records.bytes().as_ptr();
    let out = f.filter(batch).unwrap();
    assert_eq!(out.records.bytes().as_ptr(), before, "not re-encoded");
}

#[test]
fn nest_moves_matching_fields_under_one_key() {
    let f = filter(
        "nest = { fields = ['kube_*', 'pod'], under = 'kubernetes', remove_prefix = 'kube_' }",
    );
    let out = f
        .filter(entries(&[
            &[
                ("log", "x"),
                ("kube_ns", "prod"),
                ("pod", "web-1"),
                ("kube_", "empty after the prefix"),
                ("kubernetes", "replaced"),
            ],
            &[("log", "nothing to nest")],
        ]))
        .unwrap();
    assert_eq!(
        records(&out),
        [
            serde_json::json!({"log": "x", "kubernetes": {
                "ns": "prod", "pod": "web-1", "kube_": "empty after the prefix"}}),
            serde_json::json!({"log": "nothing to nest"}),
        ]
    );
}

#[test]
fn lift_then_nest_in_one_filter_and_bytes_that_are_not_utf8() {
    let f = filter(
        "lift = { from = 'meta' }\nnest = { fields = ['*'], under = 'all' }\nset = { added = 'yes' }",
    );
    let big = vec![b'z'; 1 << 20];
    let out = f
        .filter(with_map("meta", &[&[("raw", b"\xff\xfe"), ("big", &big)]]))
        .unwrap();
    let mut got = Vec::new();
    out.for_each_record(|_, r| {
        let crate::event::RecordRef::Map(m) = r else {
            panic!()
        };
        let top = map_fields(m).unwrap();
        assert_eq!(top.len(), 1, "everything nested");
        assert_eq!(top[0].0.as_ref(), b"all");
        for (k, v) in map_fields(&top[0].1).unwrap() {
            let Value::Str(s) = Reader::new(&v).read().unwrap() else {
                panic!()
            };
            got.push((String::from_utf8_lossy(&k).into_owned(), s.to_vec()));
        }
    })
    .unwrap();
    let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["log", "k8s_pod", "raw", "big", "added"]);
    assert_eq!(got[2].1, b"\xff\xfe");
    assert_eq!(got[3].1, big);
}

#[test]
fn nest_and_lift_tables_are_checked() {
    let bad = |t: &str| {
        let c: ModifyConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("nest = { fields = [], under = 'a' }").contains("nest.fields"));
    assert!(bad("nest = { fields = ['a'], under = '' }").contains("nest.under"));
    assert!(bad("lift = { from = '' }").contains("lift.from"));
    assert!(toml::from_str::<ModifyConfig>("nest = { fields = ['a'] }").is_err());
    assert!(toml::from_str::<ModifyConfig>("lift = { from = 'a', prefix = 'x' }").is_err());
}

/// A modify filter that doubles each record charges the new size while
/// the batch lives, and returns it all.
#[test]
fn a_record_made_larger_is_charged_its_new_size() {
    let f = filter("copy = { a = 'b' }");
    let value = "v".repeat(1000);
    let record: &[(&str, &str)] = &[("a", value.as_str())];
    let batch = entries(&[record; 50]);
    let before = batch.byte_len();
    let budget = MemoryBudget::new(before, &Registry::new());
    let out = f
        .filter(batch.with_memory(budget.try_acquire(before).unwrap()))
        .unwrap();
    let after = out.byte_len();
    assert!(after > before * 19 / 10, "{before} -> {after}");
    assert_eq!(budget.used(), after);
    drop(out);
    assert_eq!(budget.used(), 0);
}
