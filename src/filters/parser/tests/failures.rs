//! Records that do not parse (`failed_tag`), and the memory a parsed
//! record takes.

use super::*;
use crate::memory::MemoryBudget;

fn applied(f: &ParserFilter, batch: Batch) -> Vec<Batch> {
    let mut out = Vec::new();
    f.apply(batch, &mut out);
    out
}

#[test]
fn records_that_do_not_parse_go_on_unchanged_under_failed_tag() {
    let f = filter("format = 'json'\nfailed_tag = 'failed.${tag}'");
    let text: String = (0..10)
        .map(|i| {
            if i % 3 == 0 {
                format!("bad-{i}\n")
            } else {
                format!("{{\"n\": {i}}}\n")
            }
        })
        .collect();
    let batch = lines(Box::leak(text.into_boxed_str()));
    let out = applied(&f, batch);
    let tags: Vec<&str> = out.iter().map(|b| &*b.tag).collect();
    assert_eq!(tags, ["failed.t", "t"]);
    assert_eq!(out[0].count + out[1].count, 10);
    let failed: Vec<_> = show(&out[0]);
    assert_eq!(
        failed,
        [0, 3, 6, 9].map(|i| serde_json::json!({"message": format!("bad-{i}")}))
    );
    assert_eq!(
        show(&out[1]),
        [1, 2, 4, 5, 7, 8].map(|i| serde_json::json!({ "n": i }))
    );
    assert_eq!(f.failed.get(), 4);
    // a batch that parses whole is one batch, under its tag
    let out = applied(&f, lines("{\"n\": 1}\n"));
    assert_eq!((out.len(), &*out[0].tag), (1, "t"));
    // without failed_tag, one batch with every record
    let plain = filter("format = 'json'");
    let out = applied(&plain, lines("x\n{\"n\": 1}\n"));
    assert_eq!((out.len(), out[0].count), (1, 2));
}

/// Entries whose parsed field is missing, not text, or whose map has a
/// key that is not text: none parses, each is counted, and each goes to
/// `failed_tag` as it came.
#[test]
fn missing_and_unreadable_fields_are_failures_too() {
    let f = filter("format = 'logfmt'\nfailed_tag = 'bad'");
    let mut entries = Vec::new();
    let entry = |out: &mut Vec<u8>, fill: &dyn Fn(&mut Vec<u8>)| {
        write::array_len(out, 2);
        write::event_time(out, 3, 4);
        fill(out);
    };
    entry(&mut entries, &|o| {
        write::map_len(o, 1);
        write::str(o, b"other");
        write::str(o, b"a=1");
    });
    entry(&mut entries, &|o| {
        write::map_len(o, 1);
        write::str(o, b"message");
        write::uint(o, 5);
    });
    entry(&mut entries, &|o| {
        write::map_len(o, 2);
        write::uint(o, 1);
        write::str(o, b"x");
        write::str(o, b"message");
        write::str(o, b"a=1");
    });
    entry(&mut entries, &|o| {
        write::map_len(o, 1);
        write::str(o, b"message");
        write::str(o, b"a=1 b=\"two\"");
    });
    let batch = Batch::new("t".into(), Records::Entries(entries.into()), 4);
    let out = applied(&f, batch);
    assert_eq!(f.failed.get(), 3);
    let tags: Vec<(&str, usize)> = out.iter().map(|b| (&*b.tag, b.count)).collect();
    assert_eq!(tags, [("bad", 3), ("t", 1)]);
    assert_eq!(show(&out[1]), [serde_json::json!({"a": "1", "b": "two"})]);
}

#[test]
fn failed_tag_is_checked() {
    let bad = |t: &str| {
        let c: ParserConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("format = 'json'\nfailed_tag = ''").contains("failed_tag"));
    assert!(bad("format = 'json'\nfailed_tag = '${nope}'").contains("failed_tag"));
}

/// A parser that keeps the parsed text and adds its fields about doubles
/// each record: the batch is charged its new size while it lives, and
/// every byte comes back when it is dropped, also when the budget had no
/// room for the growth.
#[test]
fn a_record_made_larger_is_charged_its_new_size() {
    let f = filter("format = 'json'\npreserve_key = true");
    let text: String = (0..100)
        .map(|i| format!("{{\"n\": {i}, \"pad\": \"{}\"}}\n", "p".repeat(200)))
        .collect();
    let batch = lines(Box::leak(text.into_boxed_str()));
    let before = batch.byte_len();
    // room for the growth, and none (it goes over the budget)
    for limit in [10 * before, before] {
        let budget = MemoryBudget::new(limit, &Registry::new());
        let charged = batch
            .clone()
            .with_memory(budget.try_acquire(before).unwrap());
        let out = f.filter(charged);
        let after = out.byte_len();
        assert!(after > 2 * before - 1000, "{before} -> {after}");
        assert_eq!(budget.used(), after, "charged the new size");
        assert_eq!(out.memory.bytes(), after);
        // copies share the charge; it comes back with the last one
        let copy = out.clone();
        drop(out);
        assert_eq!(budget.used(), after);
        drop(copy);
        assert_eq!(budget.used(), 0, "all of it returned");
        let all = budget.try_acquire(limit);
        assert!(all.is_some(), "every permit returned");
        assert!(budget.try_acquire(1).is_none(), "no permit made up");
    }
}

#[test]
fn a_batch_charged_to_no_budget_stays_uncharged() {
    let f = filter("format = 'json'\npreserve_key = true");
    let out = f.filter(lines("{\"a\": \"b\"}\n"));
    assert_eq!(out.memory.bytes(), 0);
}
