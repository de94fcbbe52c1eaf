//! Vector's transforms as logferry filters matching the transform's tag
//! (see [`super::wiring`]): `remap` kept as it is, `filter` as a `remap`
//! that aborts, `route` and `exclusive_route` as copies tagged by port,
//! `sample` and `throttle` as logferry's (their `exclude` as a tag the
//! filter does not match).

use serde_json::Value as Json;

use super::super::model::vrl_str;
use super::super::model::{Component, Kind, Value};
use super::graph::Node;
use super::keys::{self, Keys};
use super::wiring::{tag_of, Wiring, MARK};
use super::Settings;

const LEFT: &str = "no logferry equivalent";

/// Whether logferry runs `node` (others are written commented out).
pub fn supported(node: &Node) -> bool {
    matches!(
        node.type_.as_str(),
        "remap" | "filter" | "route" | "exclusive_route" | "sample" | "throttle"
    )
}

/// `node` written commented out, with `reason`.
pub fn commented(node: &Node, reason: &str) -> Component {
    let mut c = Component::new(Kind::Filter, &tag_of(&node.id), &node.type_, node.origin());
    for (key, v) in node.keys.iter().filter(|(key, _)| *key != "type") {
        let v = keys::value(v, &mut c);
        c.set(key, v);
    }
    c.comment_out(reason.to_string());
    c
}

/// Writes `node`'s filters (matching its tag) and returns its outputs:
/// each port and the tags its records leave with. A transform logferry
/// lacks is written commented out and has no outputs.
pub fn translate(
    node: &Node,
    settings: &Settings,
    w: &mut Wiring,
) -> Vec<(Option<String>, Vec<String>)> {
    let tag = tag_of(&node.id);
    let tags = vec![tag.clone()];
    if !supported(node) {
        let reason = match node.type_.as_str() {
            "reduce" => "logferry has no reduce filter: the multiline filter (or the tail source's multiline) joins the lines of one record; fields are not merged".to_string(),
            "dedupe" => "logferry has no dedupe filter".to_string(),
            "lua" => "logferry has no Lua: rewrite the script as a remap (VRL) filter".to_string(),
            "log_to_metric" | "metric_to_log" | "aggregate" | "tag_cardinality_limit" => "logferry carries logs only, not metrics".to_string(),
            t => format!("logferry has no {t} filter"),
        };
        let mut c = commented(node, &reason);
        c.set("match", tag);
        w.push(c);
        return Vec::new();
    }
    let mut k = Keys::new(node.keys.clone(), "");
    k.skip("type");
    k.skip("inputs");
    let mut c = w.filter(&node.id, "remap", &tags, &node.origin());
    let mut outputs = vec![(None, tags.clone())];
    let mut after: Vec<Component> = Vec::new();
    let mut before: Vec<Component> = Vec::new();
    match node.type_.as_str() {
        "remap" => {
            if let Some(s) = k.text("source") {
                keys::set_str(&mut c, "source", &s);
            }
            if let Some(f) = k.text("file") {
                keys::set_str(&mut c, "file", &f);
            }
            if let Some(files) = k.list("files") {
                c.untranslated(
                    &format!("files = {files:?}"),
                    "logferry's remap reads one program (source or file)",
                );
            }
            for key in ["drop_on_error", "drop_on_abort"] {
                if let Some(b) = k.bool(key) {
                    c.set(key, Value::Bool(b));
                }
            }
            if k.bool("reroute_dropped") == Some(true) {
                let dropped = format!("{tag}.dropped");
                c.set("error_tag", dropped.clone());
                c.remark("records Vector would drop go on to its `dropped` output as they came, with Vector's metadata.dropped fields but its reason and message");
                let mut mark = w.filter(
                    &format!("{}_dropped", node.id),
                    "remap",
                    std::slice::from_ref(&dropped),
                    &node.origin(),
                );
                mark.set(
                    "source",
                    format!(
                        ".metadata.dropped = {{ \"component_id\": {}, \"component_kind\": \"transform\", \"component_type\": \"remap\" }}",
                        vrl_str(&node.id)
                    ),
                );
                after.push(mark);
                if c.get("drop_on_error").is_none() {
                    c.set("drop_on_error", Value::Bool(false));
                }
                outputs.push((Some("dropped".into()), vec![dropped]));
            }
            if let Some(tz) = k.text("timezone").or_else(|| settings.timezone.clone()) {
                c.set("timezone", tz);
            }
            k.refuse("metric_tag_values", "logferry carries logs only", &mut c);
            k.refuse("runtime", "logferry's remap has one runtime", &mut c);
        }
        "filter" => {
            match k.take("condition").map(|v| condition(&v)) {
                Some(Ok(cond)) => c.set("source", format!("if !{} {{ abort }}", wrap(&cond))),
                Some(Err(e)) => c.untranslated("condition", e),
                None => {}
            }
            // a condition that fails is false in Vector: the record is dropped
            c.set("drop_on_error", Value::Bool(true));
        }
        "route" | "exclusive_route" => {
            outputs.clear();
            let exclusive = node.type_ == "exclusive_route";
            let mut routes: Vec<(String, String)> = Vec::new();
            if exclusive {
                if let Some(Json::Array(items)) = k.take("routes") {
                    for item in items {
                        let name = item
                            .get("name")
                            .and_then(|n| n.as_str())
                            .unwrap_or("")
                            .to_string();
                        match item.get("condition").map(condition) {
                            Some(Ok(cond)) if !name.is_empty() => routes.push((name, cond)),
                            Some(Err(e)) => c.untranslated(&format!("routes.{name}.condition"), e),
                            _ => c.untranslated(
                                "routes (an item)",
                                "a route needs a name and a condition",
                            ),
                        }
                    }
                }
            } else if let Some(Json::Object(map)) = k.take("route") {
                for (name, v) in map {
                    match condition(&v) {
                        Ok(cond) => routes.push((name, cond)),
                        Err(e) => c.untranslated(&format!("route.{name}"), e),
                    }
                }
            }
            let unmatched = exclusive || k.bool("reroute_unmatched") != Some(false);
            let mut program = vec![format!("__logferry_in = .\n__logferry_out = []")];
            for (i, (name, cond)) in routes.iter().enumerate() {
                let port_tag = format!("{tag}.{}", tag_of(name));
                let push = format!(
                    "__logferry_out = push(__logferry_out, merge(__logferry_in, {{ {}: {} }}))",
                    vrl_str(MARK),
                    vrl_str(&port_tag)
                );
                let test = if exclusive && i > 0 {
                    format!(
                        "if length(__logferry_out) == 0 && {} {{\n  {push}\n}}",
                        wrap(cond)
                    )
                } else {
                    format!("if {} {{\n  {push}\n}}", wrap(cond))
                };
                program.push(test);
                outputs.push((Some(name.clone()), vec![port_tag]));
            }
            if unmatched {
                let port_tag = format!("{tag}._unmatched");
                program.push(format!(
                    "if length(__logferry_out) == 0 {{\n  __logferry_out = [merge(__logferry_in, {{ {}: {} }})]\n}}",
                    vrl_str(MARK),
                    vrl_str(&port_tag)
                ));
                outputs.push((Some("_unmatched".into()), vec![port_tag]));
            }
            program.push(". = __logferry_out".into());
            let new_tags: Vec<String> = outputs.iter().flat_map(|(_, t)| t.clone()).collect();
            c.remark("a condition that fails at run time drops the record (in Vector it is only false for that route)");
            k.finish(&mut c, LEFT);
            let untranslated = c.untranslated.clone();
            let remarks = c.remarks.clone();
            w.split(&tag, &tags, &node.origin(), program.join("\n"), &new_tags);
            // the notes go on the first of the filters just written
            if let Some(first) = w
                .imported
                .components
                .iter_mut()
                .rev()
                .filter(|c| c.kind == Kind::Filter)
                .nth(2)
            {
                first.untranslated.extend(untranslated);
                first.remarks.extend(remarks);
            }
            return outputs;
        }
        "sample" | "throttle" => {
            let sample = node.type_ == "sample";
            c.set("type", node.type_.as_str());
            c.keys.retain(|(key, _)| key != "source");
            let mut keyed: Option<(String, i64)> = None;
            let mut rate_key = String::new();
            if sample {
                let rate = k.int("rate").or_else(|| {
                    let ratio = k.peek_number("ratio")?;
                    let n = 1.0 / ratio;
                    (ratio > 0.0 && n.fract() == 0.0).then(|| {
                        k.skip("ratio");
                        n as i64
                    })
                });
                let rate = rate.unwrap_or(1).max(1);
                c.set("rate", Value::Int(rate));
                if let Some(f) = k.text("key_field") {
                    keyed = Some((f, rate));
                }
                rate_key = k
                    .text("sample_rate_key")
                    .unwrap_or_else(|| "sample_rate".into());
                for key in ["group_by", "rate_field", "ratio_field", "ratio"] {
                    k.refuse(key, "logferry's sample keeps one in a fixed rate", &mut c);
                }
            } else {
                if let Some(n) = k.int("threshold") {
                    c.set("rate", Value::Int(n));
                }
                if let Some(d) = k.seconds("window_secs") {
                    c.set("window", d);
                }
                if let Some(f) = k.text("key_field") {
                    match template_field(&f) {
                        Some(field) => c.set("key", field),
                        None => c.untranslated(
                            &format!("key_field = {f:?}"),
                            "logferry groups by one field",
                        ),
                    }
                }
                c.remark("Vector lets a burst of `threshold` through, then one record per window/threshold (GCRA); logferry lets `rate` through per fixed window");
                k.refuse("internal_metrics", LEFT, &mut c);
            }
            match k.take("exclude").map(|v| condition(&v)) {
                Some(Ok(cond)) => {
                    let passed = format!("{tag}.excluded");
                    let mut pre = w.filter(
                        &format!("{}_exclude", node.id),
                        "remap",
                        &tags,
                        &node.origin(),
                    );
                    pre.set(
                        "source",
                        format!("if {} {{ %tag = {} }}", wrap(&cond), vrl_str(&passed)),
                    );
                    before.push(pre);
                    outputs[0].1.push(passed);
                }
                Some(Err(e)) => c.untranslated("exclude", e),
                None => {}
            }
            if let Some((key, rate)) = keyed {
                // Vector keeps a record with the field when the seahash
                // of its text is a multiple of the rate (VRL's seahash is
                // that hash as a signed integer: 2^64 is added back)
                let kept = format!("{tag}.keyed");
                let wrap_back = ((u64::MAX % rate as u64) + 1) % rate as u64;
                let path = field(&key);
                let mut pre = w.filter(
                    &format!("{}_by_key", node.id),
                    "remap",
                    &tags,
                    &node.origin(),
                );
                pre.set(
                    "source",
                    format!(
                        "if exists(.{path}) {{\n  h = seahash(to_string(.{path}) ?? encode_json(.{path}))\n  m = mod(h, {rate})\n  if m < 0 {{ m = m + {rate} }}\n  if h < 0 {{ m = mod(m + {wrap_back}, {rate}) }}\n  if m == 0 {{ %tag = {} }} else {{ abort }}\n}}",
                        vrl_str(&kept)
                    ),
                );
                before.push(pre);
                outputs[0].1.push(kept);
                c.remark("a record with the key_field is kept by Vector's hash of its value (seahash); one without it by logferry's count, which counts only those records (Vector's counts all)");
            }
            if sample && !rate_key.is_empty() {
                let sampled: Vec<String> = outputs[0]
                    .1
                    .iter()
                    .filter(|t| !t.ends_with(".excluded"))
                    .cloned()
                    .collect();
                let mut mark = w.filter(
                    &format!("{}_rate", node.id),
                    "remap",
                    &sampled,
                    &node.origin(),
                );
                let rate = match c.get("rate") {
                    Some(Value::Int(n)) => n.to_string(),
                    _ => "1".into(),
                };
                mark.set(
                    "source",
                    format!(".{} = {}", field(&rate_key), vrl_str(&rate)),
                );
                after.push(mark);
            }
        }
        _ => {}
    }
    k.finish(&mut c, LEFT);
    for b in before {
        w.push(b);
    }
    w.push(c);
    for a in after {
        w.push(a);
    }
    outputs
}

/// A Vector condition as a VRL boolean expression.
fn condition(v: &Json) -> Result<String, String> {
    match v {
        Json::String(s) => Ok(s.clone()),
        Json::Object(m) => match m.get("type").and_then(|t| t.as_str()).unwrap_or("vrl") {
            "vrl" => m
                .get("source")
                .and_then(|s| s.as_str())
                .map(String::from)
                .ok_or_else(|| "a vrl condition needs its source".to_string()),
            "is_log" => Ok("true".into()),
            "is_metric" | "is_trace" => Ok("false".into()),
            other => Err(format!("logferry runs VRL conditions, not {other}")),
        },
        _ => Err("not a condition".into()),
    }
}

/// A condition program as one VRL expression: a block when it holds
/// several expressions.
fn wrap(cond: &str) -> String {
    let cond = cond.trim();
    if cond.contains('\n') || cond.contains(';') {
        format!("{{\n{cond}\n}}")
    } else {
        format!("({cond})")
    }
}

/// A field name as a VRL path.
fn field(name: &str) -> String {
    let name = name.trim_start_matches('.');
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        name.to_string()
    } else {
        vrl_str(name)
    }
}

/// The field of a template that is one field (`{{ service }}`), or a
/// plain field name.
fn template_field(t: &str) -> Option<String> {
    let t = t.trim();
    let inner = match t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        Some(inner) => inner.trim(),
        None if !t.contains('{') => t,
        None => return None,
    };
    let inner = inner.trim_start_matches('.');
    (!inner.is_empty() && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_of_one_field() {
        assert_eq!(template_field("{{ service }}").as_deref(), Some("service"));
        assert_eq!(template_field("{{ .host }}").as_deref(), Some("host"));
        assert_eq!(template_field("svc"), Some("svc".into()));
        assert_eq!(template_field("{{ a }}-{{ b }}"), None);
    }

    #[test]
    fn conditions() {
        assert_eq!(condition(&Json::from(".a == 1")).unwrap(), ".a == 1");
        let c = serde_json::json!({"type": "vrl", "source": ".b"});
        assert_eq!(condition(&c).unwrap(), ".b");
        assert!(condition(&serde_json::json!({"type": "datadog_search", "source": "x"})).is_err());
        assert_eq!(wrap(".a == 1"), "(.a == 1)");
    }
}
