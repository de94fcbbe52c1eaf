use std::sync::mpsc;

use bytes::Bytes;

use super::*;
use crate::ack::{AckHandle, AckOutcome};
use crate::event::{EventTime, Records};

fn filter(toml: &str) -> RewriteTagFilter {
    let config: RewriteTagConfig = toml::from_str(toml).unwrap();
    config.validate().unwrap();
    let pattern = TagPattern::new("**").unwrap();
    RewriteTagFilter::new("r", pattern, &config, &Registry::new()).unwrap()
}

fn lines(tag: &str, text: &'static str) -> Batch {
    let records = Records::Lines {
        data: Bytes::from_static(text.as_bytes()),
        time: EventTime::new(1, 0),
    };
    Batch::new(tag.into(), records, text.lines().count())
}

/// (tag, lines) of every batch put out.
fn show(out: &[Batch]) -> Vec<(String, String)> {
    out.iter()
        .map(|b| {
            let text = String::from_utf8_lossy(b.records.bytes()).into_owned();
            assert_eq!(b.count, text.lines().count(), "count of {text:?}");
            (b.tag.to_string(), text)
        })
        .collect()
}

#[test]
fn matched_records_move_to_their_new_tag_with_captures_and_tag_parts() {
    let f = filter(
        r#"rules = [
  { field = "message", regex = "^(error|warn) ", tag = "alert.$1.${tag[1]}" },
  { field = "message", regex = "^debug", tag = "debug" },
]"#,
    );
    let mut out = Vec::new();
    f.apply(
        lines(
            "app.web",
            "error a\ninfo b\nwarn c\nerror d\ndebug e\ninfo f",
        ),
        &mut out,
    );
    assert_eq!(
        show(&out),
        [
            ("alert.error.web".into(), "error a\nerror d\n".into()),
            ("alert.warn.web".into(), "warn c\n".into()),
            ("debug".into(), "debug e\n".into()),
            // every line of a rebuilt batch ends in a newline
            ("app.web".into(), "info b\ninfo f\n".into()),
        ]
    );
    assert_eq!(f.retagged.get(), 4);
}

#[test]
fn keep_also_sends_the_original_and_nothing_moved_is_the_same_batch() {
    let f = filter("keep = true\nrules = [{ field = 'message', regex = 'x', tag = 'new' }]");
    let mut out = Vec::new();
    f.apply(lines("old", "x1\ny\n"), &mut out);
    assert_eq!(
        show(&out),
        [
            ("new".into(), "x1\n".into()),
            ("old".into(), "x1\ny\n".into())
        ]
    );
    let f = filter("rules = [{ field = 'message', regex = 'x', tag = 'new' }]");
    let batch = lines("old", "a\nb\n");
    let before = batch.records.bytes().as_ptr();
    let mut out = Vec::new();
    f.apply(batch, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].records.bytes().as_ptr(), before);
}

#[test]
fn the_source_batch_settles_once_every_batch_it_became_has() {
    let (tx, rx) = mpsc::channel();
    let f = filter("rules = [{ field = 'message', regex = '^a', tag = 'a' }]");
    let batch = lines("t", "a1\nb1\n").with_ack(AckHandle::new(move |o| tx.send(o).unwrap()));
    let mut out = Vec::new();
    f.apply(batch, &mut out);
    assert_eq!(out.len(), 2);
    let last = out.pop().unwrap();
    drop(out);
    assert!(rx.try_recv().is_err(), "settled before every part did");
    last.ack.reject();
    drop(last);
    assert_eq!(rx.try_recv().unwrap(), AckOutcome::Rejected);
}

#[test]
fn bad_rules_are_config_errors() {
    let bad = |t: &str| {
        let c: RewriteTagConfig = toml::from_str(t).unwrap();
        c.validate().unwrap_err()
    };
    assert!(bad("rules = []").contains("needs"));
    assert!(bad("rules = [{ field = 'a', regex = '(', tag = 'x' }]").contains("rules[0]"));
    assert!(bad("rules = [{ field = 'a', regex = 'x', tag = '${nope}' }]").contains("nope"));
    assert!(bad("rules = [{ field = 'a', regex = '(x)', tag = 'a.$2' }]").contains("$2"));
    assert!(bad("rules = [{ field = '$a.b', regex = 'x', tag = 'a' }]").contains("$a['b']"));
}

/// A tag made only of captures that can be empty, or missing from a
/// match, is refused; one a match always fills is not.
#[test]
fn a_rule_that_can_give_an_empty_tag_is_refused() {
    let check = |regex: &str, tag: &str| {
        let c: RewriteTagConfig = toml::from_str(&format!(
            "rules = [{{ field = 'a', regex = '{regex}', tag = '{tag}' }}]"
        ))
        .unwrap();
        c.validate().is_ok()
    };
    assert!(check("^(error|fatal)$", "$1"));
    assert!(check("^(e+)(x*)$", "$1$2"));
    assert!(check("^((a)b)+$", "$2"));
    assert!(check("x*", "t.$0"));
    assert!(!check("^(e*)$", "$1"));
    assert!(!check("^(a)?b$", "$1"));
    assert!(!check("^(a)|(b)$", "$1"));
    assert!(!check("^((a)|b)$", "$2"));
    assert!(!check("x*", "$0"));
    assert!(!check("x", "${tag[2]}"));
    assert!(!check("x", ""));
    assert!(check("x", "${tag}"));
}
