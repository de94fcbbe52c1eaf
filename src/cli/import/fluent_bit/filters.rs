//! `[FILTER]` sections as logferry filters, in the same order (logferry,
//! like Fluent Bit, applies filters in the order of the file).

use std::collections::HashMap;

use super::parsers::{apply_multiline, Parsers};
use super::{boolean, list, route, Head, Keys, Section};
use crate::cli::import::model::{Component, Imported, Kind, Value};

pub fn translate(
    s: &Section,
    parsers: &Parsers,
    counters: &mut HashMap<String, usize>,
    imported: &mut Imported,
) {
    let mut head = Head::new(s, Kind::Filter, counters, imported);
    let plugin = head.plugin.clone();
    let name = head.name.clone();
    let keys = &mut head.keys;
    let origin = s.origin();
    let ty = match plugin.as_str() {
        "grep" | "modify" | "parser" | "rewrite_tag" | "multiline" | "kubernetes" | "throttle" => {
            plugin.as_str()
        }
        "record_modifier" | "nest" => "modify",
        other => other,
    };
    let mut c = Component::new(Kind::Filter, &name, ty, origin);
    route(keys, &mut c);
    match plugin.as_str() {
        "grep" => grep(keys, &mut c),
        "modify" if super::modify::needs_program(keys) => super::modify::to_remap(keys, &mut c),
        "modify" => modify(keys, &mut c),
        "record_modifier" => {
            for r in keys.take_all("record") {
                if let Some((k, v)) = pair(&r) {
                    c.set_in("set", &k, v);
                }
            }
            let remove: Vec<Value> = keys.take_all("remove_key").into_iter().map(Value::Str).collect();
            if !remove.is_empty() {
                c.set("remove", Value::List(remove));
            }
            let mut keep = keys.take_all("allowlist_key");
            keep.extend(keys.take_all("whitelist_key"));
            if !keep.is_empty() {
                c.set("keep_only", Value::List(keep.into_iter().map(Value::Str).collect()));
            }
        }
        "nest" => nest(keys, &mut c),
        "parser" => {
            c.set("key", keys.take("key_name").unwrap_or_else(|| "log".into()));
            let names = keys.take_all("parser");
            match names.first() {
                Some(p) => {
                    if let Err(e) = parsers.apply(p, &mut c) {
                        c.comment_out(e);
                    }
                }
                None => c.comment_out("no Parser"),
            }
            for p in names.iter().skip(1) {
                c.untranslated(&format!("Parser {p}"), format!("logferry's parser filter tries one format: {} applies", names[0]));
            }
            for (k, ours) in [("reserve_data", "reserve_data"), ("preserve_key", "preserve_key")] {
                if let Some(v) = keys.take(k).and_then(|v| boolean(&v)) {
                    c.set(ours, Value::Bool(v));
                }
            }
        }
        "rewrite_tag" => rewrite_tag(keys, &mut c),
        "multiline" => {
            c.set("key", keys.take("multiline.key_content").unwrap_or_else(|| "log".into()));
            let names: Vec<String> = keys.take_all("multiline.parser").iter().flat_map(|v| list(v)).collect();
            match names.first().map(|n| parsers.multiline(n)) {
                Some(Ok(m)) => apply_multiline(m, &mut c, None),
                Some(Err(e)) => c.comment_out(e),
                None => c.comment_out("no multiline.parser"),
            }
            // Fluent Bit gives each line to the first parser that takes it
            for p in names.iter().skip(1) {
                c.untranslated(&format!("multiline.parser {p}"), format!("Fluent Bit gives each line to the first parser that takes it, so {p} joins only lines {} does not take; logferry's filter takes one rule set: {} applies", names[0], names[0]));
            }
            if let Some(ms) = keys.take("flush_ms") {
                c.set("flush_timeout", format!("{}ms", ms.trim()));
            }
            if let Some(m) = keys.take("mode") {
                if !m.eq_ignore_ascii_case("parser") {
                    c.untranslated(&format!("mode {m}"), "logferry's cri and docker rule sets join partial lines");
                }
            }
        }
        "kubernetes" => kubernetes(keys, &mut c),
        "throttle" => {
            if let Some(r) = keys.take("rate").and_then(|r| r.trim().parse::<i64>().ok()) {
                c.set("rate", Value::Int(r));
            }
            if let Some(i) = keys.take("interval") {
                let i = i.trim();
                let w = if i.chars().all(|ch| ch.is_ascii_digit()) { format!("{i}s") } else { i.to_string() };
                c.set("window", w);
            }
            if let Some(w) = keys.take("window") {
                c.remark(format!("Window {w}: Fluent Bit averages the rate over {w} intervals; logferry counts each window alone"));
            }
        }
        "lua" => c.comment_out("logferry runs no Lua: rewrite the script as a remap filter (VRL)"),
        "sampling" => c.comment_out("Fluent Bit's sampling is for traces; logferry's sample filter keeps one record in rate"),
        other => c.comment_out(format!("logferry has no {other} filter")),
    }
    head.finish(c, imported);
}

/// `KEY VALUE` of a rule line.
fn pair(v: &str) -> Option<(String, String)> {
    let (k, v) = v.trim().split_once(char::is_whitespace)?;
    Some((k.to_string(), v.trim().to_string()))
}

/// A record accessor for logferry: `$log` is the field `log`, and
/// `$a['b']` is kept (logferry reads it as Fluent Bit does).
pub fn field(k: &str) -> String {
    match k.strip_prefix('$') {
        Some(rest) if !rest.contains('[') => rest.to_string(),
        _ => k.to_string(),
    }
}

fn grep(keys: &mut Keys, c: &mut Component) {
    let op = keys.take("logical_op").map(|o| o.to_ascii_lowercase());
    if let Some(op @ ("and" | "or")) = op.as_deref() {
        c.set("op", op);
    }
    let or = op.as_deref() == Some("or");
    let legacy = !matches!(op.as_deref(), Some("and" | "or"));
    // Fluent Bit's default (legacy) mode reads the rules in order: a
    // matching Exclude drops the record, a Regex keeps it if it matches and
    // drops it if not; either way the rules after that Regex are never read.
    // The Excludes before the first Regex and that Regex are exactly
    // logferry's include (every one must match) and exclude (any drops).
    let mut decided = false;
    for (fb, rule) in keys.take_ordered(&["regex", "exclude"]) {
        let ours = if fb.eq_ignore_ascii_case("regex") {
            "include"
        } else {
            "exclude"
        };
        if legacy && decided {
            c.untranslated(
                &format!("{fb} {rule}"),
                "never read by Fluent Bit: the Regex before it keeps or drops every record first",
            );
            continue;
        }
        let Some((k, re)) = pair(&rule) else {
            c.untranslated(&format!("{fb} {rule}"), "a rule is KEY REGEX");
            continue;
        };
        let k = field(&k);
        if let Err(e) = regex::Regex::new(&re) {
            c.untranslated(
                &format!("{fb} {rule}"),
                format!("not a regex logferry reads: {e}"),
            );
            continue;
        }
        let earlier = match c.get(ours) {
            Some(Value::Map(m)) => m.iter().find(|(x, _)| *x == k).map(|(_, v)| v.clone()),
            _ => None,
        };
        match (&earlier, or) {
            // with Logical_Op or, two regexes on one field are one alternation
            (Some(Value::Str(before)), true) => {
                c.set_in(ours, &k, format!("(?:{before})|(?:{re})"))
            }
            (Some(_), _) => c.untranslated(
                &format!("{fb} {rule}"),
                format!("logferry's {ours} takes one regex per field"),
            ),
            (None, _) => c.set_in(ours, &k, re),
        }
        if ours == "include" {
            decided = true;
        }
    }
}

fn modify(keys: &mut Keys, c: &mut Component) {
    let mut kinds = 0;
    for (fb, ours) in [
        ("set", "set"),
        ("add", "set_if_missing"),
        ("rename", "rename"),
        ("hard_rename", "rename"),
        ("copy", "copy"),
        ("hard_copy", "copy"),
    ] {
        let rules = keys.take_all(fb);
        if !rules.is_empty() {
            kinds += 1;
        }
        for r in rules {
            match pair(&r) {
                Some((k, v)) => c.set_in(ours, &k, v),
                None => c.untranslated(&format!("{fb} {r}"), "a rule is KEY VALUE"),
            }
            if fb == "rename" || fb == "copy" {
                c.remark(format!("{fb} {r}: Fluent Bit leaves an existing target field; logferry's {ours} replaces it (Fluent Bit's Hard_{fb})"));
            }
        }
    }
    let remove: Vec<Value> = keys
        .take_all("remove")
        .into_iter()
        .map(Value::Str)
        .collect();
    if !remove.is_empty() {
        kinds += 1;
        c.set("remove", Value::List(remove));
    }
    if kinds > 1 {
        c.remark("logferry applies remove, rename, copy, set and set_if_missing in that order, Fluent Bit in the order of its rules");
    }
}

fn nest(keys: &mut Keys, c: &mut Component) {
    let op = keys
        .take("operation")
        .unwrap_or_default()
        .to_ascii_lowercase();
    if op == "nest" {
        let mut t = vec![(
            "fields".to_string(),
            Value::List(
                keys.take_all("wildcard")
                    .into_iter()
                    .map(Value::Str)
                    .collect(),
            ),
        )];
        t.push((
            "under".into(),
            keys.take("nest_under").unwrap_or_default().into(),
        ));
        if let Some(p) = keys.take("remove_prefix") {
            t.push(("remove_prefix".into(), p.into()));
        }
        c.set("nest", Value::Map(t));
    } else if op == "lift" {
        let mut t = vec![(
            "from".to_string(),
            Value::Str(keys.take("nested_under").unwrap_or_default()),
        )];
        if let Some(p) = keys.take("add_prefix") {
            t.push(("add_prefix".into(), p.into()));
        }
        c.set("lift", Value::Map(t));
    } else {
        c.comment_out(format!("nest Operation {op:?}: nest or lift"));
    }
}

fn rewrite_tag(keys: &mut Keys, c: &mut Component) {
    let mut rules = Vec::new();
    let mut keeps = Vec::new();
    for r in keys.take_all("rule") {
        let parts: Vec<&str> = r.split_whitespace().collect();
        let [k, re, tag, keep] = parts.as_slice() else {
            c.untranslated(&format!("Rule {r}"), "a rule is $KEY REGEX NEW_TAG KEEP");
            continue;
        };
        let tag = tag
            .replace("$TAG[", "${tag[")
            .replace("]", "]}")
            .replace("$TAG", "${tag}");
        let placeholders_ok = tag.match_indices('$').all(|(i, _)| {
            let rest = &tag[i + 1..];
            rest.starts_with("{tag") || rest.starts_with(|ch: char| ch.is_ascii_digit())
        });
        if !placeholders_ok {
            c.untranslated(
                &format!("Rule {r}"),
                "the new tag takes $1…$9, $TAG and $TAG[N] only",
            );
            continue;
        }
        rules.push(Value::Map(vec![
            ("field".into(), Value::Str(field(k))),
            ("regex".into(), Value::Str(re.to_string())),
            ("tag".into(), Value::Str(tag)),
        ]));
        keeps.push(boolean(keep).unwrap_or(false));
    }
    if rules.is_empty() {
        c.comment_out("no Rule logferry can take");
    }
    c.set("rules", Value::List(rules));
    if let Some(first) = keeps.first() {
        c.set("keep", Value::Bool(*first));
        if keeps.iter().any(|k| k != first) {
            c.remark("KEEP differs between rules; logferry's keep is one for the filter: the first rule's applies");
        }
    }
    c.remark("a record with a new tag goes on from the next filter; Fluent Bit sends it through every filter again");
    for k in [
        "emitter_name",
        "emitter_storage.type",
        "emitter_mem_buf_limit",
    ] {
        if let Some(v) = keys.take(k) {
            c.untranslated(
                &format!("{k} {v}"),
                "logferry re-tags records in place, without an emitter input",
            );
        }
    }
}

fn kubernetes(keys: &mut Keys, c: &mut Component) {
    for (fb, ours) in [
        ("kube_url", "api_server"),
        ("kube_ca_file", "ca_file"),
        ("kube_token_file", "token_file"),
        ("kube_tag_prefix", "kube_tag_prefix"),
        ("merge_log_key", "merge_log_key"),
    ] {
        if let Some(v) = keys.take(fb) {
            c.set(ours, v);
        }
    }
    for (fb, ours) in [
        ("merge_log", "merge_log"),
        ("keep_log", "keep_log"),
        ("merge_log_trim", "merge_log_trim"),
        ("labels", "include_labels"),
        ("annotations", "include_annotations"),
        ("namespace_labels", "include_namespace_labels"),
    ] {
        if let Some(v) = keys.take(fb).and_then(|v| boolean(&v)) {
            c.set(ours, Value::Bool(v));
        }
    }
    if let Some(v) = keys.take("tls.verify").and_then(|v| boolean(&v)) {
        c.set("insecure_skip_verify", Value::Bool(!v));
    }
    for k in [
        "k8s-logging.parser",
        "k8s-logging.exclude",
        "use_kubelet",
        "kubelet_port",
        "buffer_size",
        "kube_meta_preload_cache_dir",
        "kube_token_ttl",
        "kube_meta_cache_ttl",
    ] {
        if let Some(v) = keys.take(k) {
            let reason = match k {
                "buffer_size" => "logferry reads API answers whole, bounded by [limits] memory",
                "use_kubelet" | "kubelet_port" => "logferry watches the API server",
                "kube_meta_cache_ttl" => {
                    "logferry's metadata follows the API server's watch (delete_grace)"
                }
                _ => "no logferry equivalent",
            };
            c.untranslated(&format!("{k} {v}"), reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grep_of(rules: &[(&str, &str)]) -> Component {
        let mut props = vec![
            ("Name".to_string(), "grep".to_string()),
            ("Match".into(), "*".into()),
        ];
        props.extend(rules.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let s = Section {
            kind: "FILTER".into(),
            props,
            file: "t.conf".into(),
            line: 1,
        };
        let mut imported = Imported::default();
        translate(
            &s,
            &Parsers::new(&[], &[]),
            &mut HashMap::new(),
            &mut imported,
        );
        imported.components.remove(0)
    }

    #[test]
    fn grep_rules_after_the_first_regex_are_never_read() {
        let c = grep_of(&[
            ("Exclude", "path ^/health"),
            ("Regex", "level ^error$"),
            ("Exclude", "user ^bot"),
            ("Regex", "level ^warn$"),
        ]);
        assert_eq!(
            c.get("include"),
            Some(&Value::Map(vec![("level".into(), "^error$".into())]))
        );
        assert_eq!(
            c.get("exclude"),
            Some(&Value::Map(vec![("path".into(), "^/health".into())]))
        );
        let dead: Vec<&str> = c.untranslated.iter().map(|u| u.key.as_str()).collect();
        assert_eq!(dead, ["Exclude user ^bot", "Regex level ^warn$"]);
    }

    #[test]
    fn grep_or_joins_regexes_of_one_field() {
        let c = grep_of(&[
            ("Logical_Op", "or"),
            ("Regex", "level ^error$"),
            ("Regex", "level ^warn$"),
            ("Regex", "$kubernetes['labels']['app'] ^web$"),
        ]);
        assert_eq!(c.get("op"), Some(&Value::from("or")));
        assert_eq!(
            c.get("include"),
            Some(&Value::Map(vec![
                ("level".into(), "(?:^error$)|(?:^warn$)".into()),
                ("$kubernetes['labels']['app']".into(), "^web$".into()),
            ]))
        );
        assert!(c.untranslated.is_empty());
    }
}
