//! `<filter>` sections: filter_grep, filter_record_transformer,
//! filter_parser, filter_stdout, concat, kubernetes_metadata.

use super::super::model::vrl_str;
use super::super::model::{Component, Imported, Kind, Value};
use super::parse::{self, vrl_field, Merge, Parsed};
use super::syntax::Element;
use super::{component, duration, field, list, regex, unsupported, Keys};

/// Translates `<filter>` `el`, routed by `m`, into `imported`.
pub fn translate(el: &Element, m: &str, imported: &mut Imported) {
    let plugin = el.get("@type").unwrap_or("").to_string();
    let keys = Keys::new(el);
    match plugin.as_str() {
        "grep" => grep(el, keys, m, imported),
        "record_transformer" => record_transformer(el, keys, m, imported),
        "parser" => parser(el, keys, m, imported),
        "stdout" => {
            let mut keys = keys;
            let mut c = component(el, &mut keys, Kind::Filter, "stdout", "stdout", imported);
            c.set("match", m);
            c.comment_out("logferry has no filter that prints records as they pass: `logferry tap NAME` shows a component's records");
            keys.finish(&mut c);
            imported.components.push(c);
        }
        "concat" => concat(el, keys, m, imported),
        "kubernetes_metadata" => kubernetes(el, keys, m, imported),
        other => {
            let why = match other {
                "" => "a <filter> without @type".to_string(),
                "geoip" => "logferry has no GeoIP lookup".to_string(),
                _ => format!("logferry has no {other} filter"),
            };
            unsupported(el, Kind::Filter, &why, imported);
        }
    }
}

/// `(field, regex)` rules.
type RuleList = Vec<(String, String)>;

/// One grep filter's rules: `(field, regex)` for include or exclude.
struct Rules {
    include: Vec<(String, String)>,
    exclude: Vec<(String, String)>,
}

fn rules_of(el: &Element, keys: &mut Keys, c: &mut Component) -> Rules {
    let mut r = Rules {
        include: Vec::new(),
        exclude: Vec::new(),
    };
    for (name, into) in [("regexp", &mut r.include), ("exclude", &mut r.exclude)] {
        for s in keys.sections(name) {
            match (s.get("key"), s.get("pattern")) {
                (Some(k), Some(p)) => into.push((field(k), regex(p))),
                _ => c.untranslated(
                    &format!("<{name}> ({}:{})", el.file, s.line),
                    "needs key and pattern",
                ),
            }
        }
        // the older form: regexp1 FIELD REGEX
        for n in 1..=20 {
            if let Some(v) = keys.take(&format!("{name}{n}")) {
                match v.split_once(char::is_whitespace) {
                    Some((k, p)) => into.push((field(k), regex(p.trim()))),
                    None => c.untranslated(&format!("{name}{n} {v}"), "needs a field and a regex"),
                }
            }
        }
    }
    r
}

fn rule_map(rules: &[(String, String)]) -> Value {
    Value::Map(
        rules
            .iter()
            .map(|(k, v)| (k.clone(), Value::Str(v.clone())))
            .collect(),
    )
}

/// filter_grep: every `<regexp>` must match and no `<exclude>` may, each
/// `<and>`/`<or>` being one rule. Each group becomes one grep filter
/// (filters in a row keep a record only if each keeps it, which is the
/// same); rules on one field go to filters of their own.
fn grep(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = component(el, &mut keys, Kind::Filter, "grep", "grep", imported);
    c.set("match", m);
    let top = rules_of(el, &mut keys, &mut c);
    // (include, exclude, op) per filter
    let mut groups: Vec<(RuleList, RuleList, Option<&str>)> = Vec::new();
    let mut plain_in: Vec<Vec<(String, String)>> = Vec::new();
    for rule in top.include {
        match plain_in
            .iter_mut()
            .find(|g| !g.iter().any(|(k, _)| *k == rule.0))
        {
            Some(g) => g.push(rule),
            None => plain_in.push(vec![rule]),
        }
    }
    let mut plain_ex: Vec<Vec<(String, String)>> = Vec::new();
    for rule in top.exclude {
        match plain_ex
            .iter_mut()
            .find(|g| !g.iter().any(|(k, _)| *k == rule.0))
        {
            Some(g) => g.push(rule),
            None => plain_ex.push(vec![rule]),
        }
    }
    let n = plain_in.len().max(plain_ex.len());
    for i in 0..n {
        groups.push((
            plain_in.get(i).cloned().unwrap_or_default(),
            plain_ex.get(i).cloned().unwrap_or_default(),
            None,
        ));
    }
    for op in ["and", "or"] {
        for s in keys.sections(op) {
            let mut sk = Keys::new(s);
            let r = rules_of(s, &mut sk, &mut c);
            for (rules, include) in [(r.include, true), (r.exclude, false)] {
                if rules.is_empty() {
                    continue;
                }
                let mut merged: Vec<(String, String)> = Vec::new();
                for (k, v) in rules {
                    match merged.iter_mut().find(|(mk, _)| *mk == k) {
                        // the same field twice: one regex for either (or)
                        Some(slot) if op == "or" => slot.1 = format!("(?:{})|(?:{v})", slot.1),
                        Some(_) => c.untranslated(
                            &format!("<{op}> {k} {v}"),
                            "a second rule on one field in <and>: logferry's rules are one per field",
                        ),
                        None => merged.push((k, v)),
                    }
                }
                if include {
                    groups.push((merged, Vec::new(), Some(op)));
                } else {
                    groups.push((Vec::new(), merged, Some(op)));
                }
            }
            sk.finish_in(&format!("<{op}>"), &mut c);
        }
    }
    keys.finish(&mut c);
    if groups.is_empty() {
        c.comment_out("a grep with no rule keeps every record");
        imported.components.push(c);
        return;
    }
    let base = c.name.clone();
    for (i, (include, exclude, op)) in groups.into_iter().enumerate() {
        let mut f = if i == 0 {
            c.clone()
        } else {
            let name = imported.unique_name(Kind::Filter, &format!("{base}_{}", i + 1));
            let mut f = Component::new(Kind::Filter, &name, "grep", c.origin.clone());
            f.set("match", m);
            f.remark(format!("part {} of {base}", i + 1));
            f
        };
        if !include.is_empty() {
            f.set("include", rule_map(&include));
        }
        if !exclude.is_empty() {
            f.set("exclude", rule_map(&exclude));
        }
        if let Some(op) = op {
            // one rule: and and or are the same
            if include.len() + exclude.len() > 1 {
                f.set("op", op);
            }
        }
        imported.components.push(f);
    }
}

/// A record_transformer value as a VRL expression: one placeholder alone
/// keeps its value's type (auto_typecast), several make a string.
fn vrl_value(v: &str, c: &mut Component) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = v;
    let mut single = None;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let ph = &rest[start + 2..start + end];
        let expr = placeholder(ph, c)?;
        if start == 0 && start + end + 1 == rest.len() && parts.is_empty() {
            single = Some(expr.clone());
        }
        if start > 0 {
            parts.push(vrl_str(&rest[..start]));
        }
        if expr.starts_with("get_hostname") || expr.starts_with("(join") || expr == "%tag" {
            parts.push(expr);
        } else {
            parts.push(format!("(to_string({expr}) ?? \"\")"));
        }
        rest = &rest[start + end + 1..];
    }
    if let Some(s) = single {
        return Some(s);
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(vrl_str(rest));
    }
    Some(parts.join(" + "))
}

/// One `${…}` placeholder of record_transformer as a VRL expression.
fn placeholder(ph: &str, c: &mut Component) -> Option<String> {
    let ph = ph.trim();
    if ph == "tag" {
        return Some("%tag".into());
    }
    if ph == "hostname" {
        return Some("get_hostname!()".into());
    }
    for (name, expr) in [
        ("tag_parts[", "get!(split(%tag, \".\"), [N])"),
        (
            "tag_prefix[",
            "join!(slice!(split(%tag, \".\"), 0, N + 1), \".\")",
        ),
        ("tag_suffix[", "join!(slice!(split(%tag, \".\"), N), \".\")"),
    ] {
        if let Some(n) = ph.strip_prefix(name).and_then(|r| r.strip_suffix(']')) {
            let n: i64 = n.trim().parse().ok()?;
            if name != "tag_parts[" && n < 0 {
                c.untranslated(
                    &format!("${{{ph}}}"),
                    "a negative index of tag_prefix/tag_suffix",
                );
                return None;
            }
            return Some(format!("({})", expr.replace('N', &n.to_string())));
        }
    }
    if let Some(k) = ph
        .strip_prefix("record[\"")
        .and_then(|r| r.strip_suffix("\"]"))
    {
        return Some(format!("orig.{}", vrl_field(k)));
    }
    c.untranslated(
        &format!("${{{ph}}}"),
        "a placeholder logferry does not fill (Fluentd writes nothing for an unknown one)",
    );
    None
}

/// filter_record_transformer as a `remap` program: VRL reads the original
/// record's fields (`${record["k"]}`) where logferry's modify cannot.
fn record_transformer(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = component(
        el,
        &mut keys,
        Kind::Filter,
        "remap",
        "record_transformer",
        imported,
    );
    c.set("match", m);
    if keys.take_bool("enable_ruby") == Some(true) {
        c.comment_out("enable_ruby: logferry runs no Ruby; write the expressions in VRL (a remap filter, see docs/migrating.md)");
        for r in keys.sections("record") {
            for a in &r.attrs {
                c.set(&a.key, a.value.as_str());
            }
        }
        keys.finish(&mut c);
        imported.components.push(c);
        return;
    }
    let auto_typecast = keys.take_bool("auto_typecast").unwrap_or(true);
    let renew = keys.take_bool("renew_record").unwrap_or(false);
    let keep = keys.take("keep_keys").map(|k| list(&k)).unwrap_or_default();
    let remove = keys
        .take("remove_keys")
        .map(|k| list(&k))
        .unwrap_or_default();
    let mut program = String::from("orig = .\n");
    if renew {
        program.push_str(". = {}\n");
        for k in &keep {
            let f = vrl_field(k);
            program.push_str(&format!("if exists(orig.{f}) {{ .{f} = orig.{f} }}\n"));
        }
    } else if !keep.is_empty() {
        c.comment_out("keep_keys without renew_record: Fluentd refuses this configuration");
    }
    for r in keys.sections("record") {
        for a in &r.attrs {
            if let Some(code) = &a.ruby {
                if code == "Socket.gethostname" && a.value == format!("#{{{code}}}") {
                    program.push_str(&format!(".{} = get_hostname!()\n", vrl_field(&a.key)));
                } else {
                    c.untranslated(
                        &format!("<record> {} {}", a.key, a.value),
                        format!("embedded Ruby ({code}) is not evaluated"),
                    );
                }
                continue;
            }
            if a.value.trim_start().starts_with(['{', '[']) {
                c.untranslated(
                    &format!("<record> {} {}", a.key, a.value),
                    "a JSON value: logferry sets it as a string",
                );
                continue;
            }
            let Some(mut expr) = vrl_value(&a.value, &mut c) else {
                continue;
            };
            if !auto_typecast && !expr.starts_with(['"', '(']) {
                expr = format!("(to_string({expr}) ?? \"\")");
            }
            program.push_str(&format!(".{} = {expr}\n", vrl_field(&a.key)));
        }
    }
    for k in &remove {
        let f = field(k);
        let path = match f.strip_prefix('$') {
            Some(nested) => nested
                .split(['[', ']'])
                .map(|p| p.trim_matches('\''))
                .filter(|p| !p.is_empty())
                .map(vrl_field)
                .collect::<Vec<_>>()
                .join("."),
            None => vrl_field(&f),
        };
        program.push_str(&format!("del(.{path})\n"));
    }
    if let Some(k) = keys.take("renew_time_key") {
        c.untranslated(
            &format!("renew_time_key {k}"),
            "set %timestamp in a remap program instead",
        );
    }
    c.set("source", program);
    c.remark("record_transformer as a VRL program (keys come out sorted; a record's field order does not change its meaning)");
    keys.finish(&mut c);
    imported.components.push(c);
}

/// filter_parser: logferry's parser filter with the same options, or a
/// VRL program for what it lacks (inject_key_prefix, hash_value_field).
fn parser(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = component(el, &mut keys, Kind::Filter, "parser", "parser", imported);
    c.set("match", m);
    let key = keys.take("key_name").unwrap_or_else(|| "message".into());
    let reserve = keys.take_bool("reserve_data").unwrap_or(false);
    let remove_key = keys.take_bool("remove_key_name_field").unwrap_or(false);
    let prefix = keys.take("inject_key_prefix");
    let hash = keys.take("hash_value_field");
    let reserve_time = keys.take_bool("reserve_time");
    let Some(p) = keys.section("parse") else {
        c.comment_out("a parser filter without <parse>");
        keys.finish(&mut c);
        imported.components.push(c);
        return;
    };
    let merge = Merge {
        reserve,
        keep_key: reserve && !remove_key,
    };
    let outcome = parse::into_filter(p, &key, merge, &mut c);
    match outcome {
        Parsed::Filter if c.get("type") == Some(&Value::from("parser")) => {
            c.set("key", key.as_str());
            if prefix.is_some() || hash.is_some() {
                in_vrl(&mut c, &key, reserve, !remove_key, prefix, hash);
            } else if reserve {
                c.set("reserve_data", Value::Bool(true));
                if !remove_key {
                    c.set("preserve_key", Value::Bool(true));
                }
            }
        }
        Parsed::Filter => {
            if prefix.is_some() || hash.is_some() {
                c.untranslated(
                    "inject_key_prefix / hash_value_field",
                    "not with this <parse> type",
                );
            }
        }
        Parsed::Lines(_) | Parsed::Multiline(_) => {
            c.comment_out("this <parse> type gives the field as it is: nothing to parse");
        }
        Parsed::Unsupported(why) => c.comment_out(why),
    }
    if reserve_time == Some(true) {
        c.untranslated(
            "reserve_time true",
            "logferry's parser keeps the record's time unless time_key is set",
        );
    }
    for k in ["emit_invalid_record_to_error", "replace_invalid_sequence"] {
        if let Some(v) = keys.take(k) {
            c.untranslated(&format!("{k} {v}"), "a record that does not parse goes on unchanged (set failed_tag to send it elsewhere)");
        }
    }
    keys.finish(&mut c);
    imported.components.push(c);
}

/// inject_key_prefix and hash_value_field, which logferry's parser lacks:
/// `c` becomes a remap filter that parses the field in VRL with the same
/// format and puts the fields where filter_parser puts them.
fn in_vrl(
    c: &mut Component,
    key: &str,
    reserve: bool,
    keep_key: bool,
    prefix: Option<String>,
    hash: Option<String>,
) {
    // the parser keeps the record and the field, and the program picks
    c.set("reserve_data", Value::Bool(true));
    c.set("preserve_key", Value::Bool(true));
    let k = vrl_field(key);
    let mut program = String::new();
    let format = c.get("format").cloned();
    let regex_src = c.get("regex").cloned();
    let expr = match (format, regex_src) {
        (Some(Value::Str(f)), _) if f == "json" => format!("object!(parse_json!(string!(.{k})))"),
        (Some(Value::Str(f)), Some(Value::Str(r))) if f == "regex" => {
            format!("parse_regex!(string!(.{k}), r'{}')", r.replace('\'', "\\'"))
        }
        _ => {
            c.untranslated(
                "inject_key_prefix / hash_value_field",
                "not with this <parse> type",
            );
            return;
        }
    };
    c.set("type", "remap");
    for k in [
        "format",
        "regex",
        "key",
        "reserve_data",
        "preserve_key",
        "time_key",
        "time_format",
        "time_keep",
        "types",
    ] {
        c.keys.retain(|(name, _)| name != k);
    }
    program.push_str(&format!("parsed = {expr}\n"));
    if let Some(p) = &prefix {
        program.push_str(&format!(
            "prefixed = {{}}\nfor_each(parsed) -> |name, value| {{ prefixed = set!(prefixed, [{} + name], value) }}\nparsed = prefixed\n",
            vrl_str(p)
        ));
    }
    if let Some(h) = &hash {
        program.push_str(&format!("parsed = {{ {}: parsed }}\n", vrl_str(h)));
    }
    if reserve {
        if !keep_key {
            program.push_str(&format!("del(.{k})\n"));
        }
        program.push_str(". = merge(., parsed)\n");
    } else {
        program.push_str(". = parsed\n");
    }
    c.set("source", program);
    c.remark("filter_parser with inject_key_prefix / hash_value_field as a VRL program; a record that does not parse goes on unchanged");
}

/// fluent-plugin-concat as logferry's multiline filter.
fn concat(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = component(el, &mut keys, Kind::Filter, "multiline", "concat", imported);
    c.set("match", m);
    c.set("key", keys.take("key").unwrap_or_else(|| "message".into()));
    if let Some(s) = keys.take("multiline_start_regexp") {
        c.set("start", regex(&s));
    }
    if let Some(s) = keys.take("continuous_line_regexp") {
        c.set("continue", regex(&s));
        if c.get("start").is_none() {
            c.comment_out("continuous_line_regexp without multiline_start_regexp: logferry's multiline needs a start rule");
        }
    }
    if let Some(n) = keys.take("n_lines") {
        c.untranslated(
            &format!("n_lines {n}"),
            "logferry joins by rules, not by a count of lines",
        );
    }
    if c.get("start").is_none() && c.commented_out.is_none() {
        c.comment_out("no multiline_start_regexp: logferry's multiline joins by a start rule");
    }
    if let Some(s) = keys.take("stream_identity_key") {
        c.set("stream_key", Value::List(vec![Value::Str(s)]));
    }
    if let Some(t) = keys.take("flush_interval").and_then(|v| duration(&v)) {
        c.set("flush_timeout", t);
    }
    if let Some(sep) = keys.take("separator") {
        if sep != "\n" {
            c.untranslated(
                &format!("separator {sep:?}"),
                "logferry joins lines with \\n",
            );
        }
    }
    if let Some(t) = keys.take("timeout_label") {
        c.untranslated(
            &format!("timeout_label {t}"),
            "a record the flush timeout ends goes on like the others",
        );
    }
    keys.finish(&mut c);
    imported.components.push(c);
}

/// fluent-plugin-kubernetes_metadata_filter as logferry's kubernetes filter.
fn kubernetes(el: &Element, mut keys: Keys, m: &str, imported: &mut Imported) {
    let mut c = component(
        el,
        &mut keys,
        Kind::Filter,
        "kubernetes",
        "kubernetes_metadata",
        imported,
    );
    c.set("match", m);
    if let Some(u) = keys.take("kubernetes_url") {
        c.set("api_server", u);
    }
    if let Some(v) = keys.take("ca_file") {
        c.set("ca_file", v);
    }
    if let Some(v) = keys.take("bearer_token_file") {
        c.set("token_file", v);
    }
    if let Some(v) = keys.take_bool("verify_ssl") {
        c.set("insecure_skip_verify", Value::Bool(!v));
    }
    if let Some(v) = keys.take_bool("skip_labels") {
        c.set("include_labels", Value::Bool(!v));
    }
    if let Some(v) = keys.take_bool("skip_namespace_metadata") {
        c.set("include_namespace_labels", Value::Bool(!v));
    }
    if let Some(v) = keys.take("tag_to_kubernetes_name_regexp") {
        c.untranslated(
            &format!("tag_to_kubernetes_name_regexp {v}"),
            "logferry reads the tag as kube_tag_prefix + the container log's file name",
        );
    }
    // the plugin finds var.log.containers. anywhere in the tag; logferry
    // after a fixed prefix, which the tail source's tag gives
    if let Some(prefix) = m
        .split_whitespace()
        .next()
        .and_then(|p| p.strip_suffix(".**"))
    {
        if !prefix.contains(['*', '{']) {
            c.set("kube_tag_prefix", format!("{prefix}.var.log.containers."));
        }
    }
    c.remark("logferry's kubernetes filter reads the pod from the tag (PREFIX.var.log.containers.POD_NAMESPACE_CONTAINER-ID.log), as this plugin does by default");
    keys.finish(&mut c);
    imported.components.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_vrl() {
        let mut c = Component::new(Kind::Filter, "x", "remap", String::new());
        assert_eq!(vrl_value("${record[\"n\"]}", &mut c).unwrap(), "orig.\"n\"");
        assert_eq!(vrl_value("a-${tag}", &mut c).unwrap(), "\"a-\" + %tag");
        assert!(vrl_value("${tag_parts[1]}", &mut c)
            .unwrap()
            .contains("[1]"));
        assert_eq!(vrl_value("plain", &mut c).unwrap(), "\"plain\"");
        assert!(vrl_value("${nope}", &mut c).is_none());
        assert_eq!(c.untranslated.len(), 1);
    }
}
