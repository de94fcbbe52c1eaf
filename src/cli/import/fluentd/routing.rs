//! Fluentd's routing as logferry `match` patterns.
//!
//! Fluentd sends an event through the `<filter>`s and `<match>`es of its
//! label (the top level, or the `<label>` its source names) in file order;
//! the FIRST `<match>` whose pattern matches consumes it. logferry gives a
//! record to every sink whose pattern matches and runs every matching
//! filter, so each component here gets its pattern minus those of the
//! `<match>`es before it (`** !app.**`). Labels become tag spaces: the
//! components of a label take only the tags its sources (and the
//! `<match>`es relabelling to it) give, and not the tags of other labels'
//! sources; where those spaces overlap, the routing is not exact and the
//! components say so.

use super::super::model::{Imported, Kind, Untranslated, Value};
use super::syntax::Element;
use super::{filters, outputs, sources};
use crate::router::TagPattern;

/// The label of the top level.
const ROOT: &str = "@ROOT";

/// What a `<match>`'s translation tells the routing.
#[derive(Default)]
pub struct Routed {
    /// Labels it sends events to (out_relabel, a `<store>` of it).
    pub relabel: Vec<String>,
    /// It gives events new tags (rewrite_tag_filter): they start again
    /// from the top of the label, under tags not known here.
    pub retags: bool,
}

/// A label's components as they are translated.
struct Label<'a> {
    name: String,
    items: Vec<&'a Element>,
    /// Tag patterns of the events that reach it.
    space: Vec<String>,
    /// Tag patterns of its own sources only.
    sources: Vec<String>,
    /// Tags taken by `<match>`es before the one relabelling to it, in the
    /// label it came from: they never reach it.
    exclude: Vec<String>,
}

/// Translates every section of `root` into `imported`.
pub fn translate(root: &Element, imported: &mut Imported) {
    // `<worker N>` sections: their contents run on one worker of several;
    // logferry is one process, so they run as if at the top level
    let mut flat = root.clone();
    flat.elements.clear();
    for e in &root.elements {
        if e.name == "worker" {
            imported.remarks.push(format!(
                "<worker {}> ({}:{}): its sections run as if at the top level (logferry is one process)",
                e.arg, e.file, e.line
            ));
            flat.elements.extend(e.elements.iter().cloned());
        } else {
            flat.elements.push(e.clone());
        }
    }
    let root = &flat;
    for sys in root.children("system") {
        for a in &sys.attrs {
            imported.untranslated.push(Untranslated {
                key: format!("<system> {} {}", a.key, a.value),
                reason: system_reason(&a.key).into(),
            });
        }
        for e in &sys.elements {
            imported.untranslated.push(Untranslated {
                key: format!("<system> <{}>", e.name),
                reason: "no logferry equivalent".into(),
            });
        }
    }
    let mut labels: Vec<Label> = vec![Label {
        name: ROOT.into(),
        items: Vec::new(),
        space: Vec::new(),
        sources: Vec::new(),
        exclude: Vec::new(),
    }];
    for e in &root.elements {
        match e.name.as_str() {
            "filter" | "match" => labels[0].items.push(e),
            "label" => {
                let items = e
                    .elements
                    .iter()
                    .filter(|i| i.name == "filter" || i.name == "match")
                    .collect();
                labels.push(Label {
                    name: e.arg.clone(),
                    items,
                    space: Vec::new(),
                    sources: Vec::new(),
                    exclude: Vec::new(),
                });
                for other in e
                    .elements
                    .iter()
                    .filter(|i| i.name != "filter" && i.name != "match")
                {
                    imported.untranslated.push(Untranslated {
                        key: format!(
                            "<label {}> <{}> ({}:{})",
                            e.arg, other.name, other.file, other.line
                        ),
                        reason: "only <filter> and <match> belong in a label".into(),
                    });
                }
            }
            "source" | "system" => {}
            other => imported.untranslated.push(Untranslated {
                key: format!("<{other}> ({}:{})", e.file, e.line),
                reason: "not a Fluentd directive logferry knows".into(),
            }),
        }
    }
    for a in &root.attrs {
        imported.untranslated.push(Untranslated {
            key: format!("{} {}", a.key, a.value),
            reason: match &a.ruby {
                Some(why) => format!("not read: {why}"),
                None => "a key outside any section".into(),
            },
        });
    }
    let labelled = root.children("source").any(|s| s.get("@label").is_some()) || labels.len() > 1;
    for s in root.children("source") {
        let out = sources::translate(s, imported);
        let label = out.label.unwrap_or_else(|| ROOT.into());
        match labels.iter_mut().find(|l| l.name == label) {
            Some(l) => {
                l.space.extend(out.tags.iter().cloned());
                l.sources.extend(out.tags);
            }
            None => {
                if let Some(c) = imported.components.last_mut() {
                    c.remark(format!("its @label {label} is no <label> of the configuration: Fluentd refuses to start"));
                }
            }
        }
    }
    let any_source = imported
        .components
        .iter()
        .any(|c| c.kind == Kind::Source && c.commented_out.is_none());
    if !labelled && any_source {
        labels[0].space = vec!["**".into()];
    }
    // a label's filters come after those of the labels that send to it
    let mut order = vec![0];
    order.extend((1..labels.len()).filter(|&i| !labels[i].sources.is_empty()));
    let mut at = 0;
    while at < order.len() {
        let i = order[at];
        at += 1;
        let others: Vec<String> = labels
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, l)| l.sources.iter().cloned())
            .filter(|p| p != "**" && !labels[i].space.iter().any(|s| s != "**" && covers(s, p)))
            .collect();
        let space = labels[i].space.clone();
        let overlap = overlaps(&labels[i].sources, &labels, i);
        let items = labels[i].items.clone();
        let name = labels[i].name.clone();
        let mut consumed: Vec<String> = labels[i].exclude.clone();
        let mut space_now = space;
        for item in items {
            let routed = translate_item(
                item,
                &name,
                &space_now,
                &consumed,
                &others,
                overlap.as_deref(),
                labelled,
                imported,
            );
            if item.name != "match" {
                continue;
            }
            if routed.retags {
                space_now.push("**".into());
            }
            // what this match takes, as positive and negative tags
            let taken = effective(&item.arg, &space_now, &consumed, &[]).unwrap_or_default();
            let (positive, negative): (Vec<&str>, Vec<&str>) =
                taken.split_whitespace().partition(|p| !p.starts_with('!'));
            let negative: Vec<String> = negative.iter().map(|n| n[1..].to_string()).collect();
            for target in routed.relabel {
                match labels.iter().position(|l| l.name == target) {
                    Some(j) if j != i && (!order.contains(&j) || order[at..].contains(&j)) => {
                        labels[j]
                            .space
                            .extend(positive.iter().map(|p| p.to_string()));
                        labels[j].exclude.extend(negative.iter().cloned());
                        if !order.contains(&j) {
                            order.push(j);
                        }
                    }
                    _ => {
                        if let Some(c) = imported.components.last_mut() {
                            c.remark(format!("it sends events to {target}, whose components come earlier here: they do not see these records"));
                        }
                    }
                }
            }
            consumed.extend(alternatives(&item.arg));
        }
    }
    for (i, l) in labels.iter().enumerate() {
        if !order.contains(&i) {
            for item in &l.items {
                translate_item(item, &l.name, &[], &[], &[], None, true, imported);
            }
        }
    }
    imported.add_unrouted_sink(
        "events no <match> takes",
        "Fluentd drops the events of these tags (\"no patterns matched\"); this sink drops them too, counted in its metrics",
    );
}

/// A `<filter>` or `<match>` translated with its pattern as logferry
/// routes it; one no event reaches is commented out, saying why.
#[allow(clippy::too_many_arguments)]
fn translate_item(
    item: &Element,
    label: &str,
    space: &[String],
    consumed: &[String],
    others: &[String],
    overlap: Option<&str>,
    labelled: bool,
    imported: &mut Imported,
) -> Routed {
    let first = imported.components.len();
    let pattern = effective(&item.arg, space, consumed, others);
    let m = pattern.as_ref().map(String::as_str).unwrap_or("**");
    let routed = if item.name == "filter" {
        filters::translate(item, m, imported);
        Routed::default()
    } else {
        outputs::translate(item, m, imported)
    };
    for c in &mut imported.components[first..] {
        if let Err(why) = &pattern {
            if c.commented_out.is_none() {
                c.comment_out(why.clone());
            }
        }
        if label != ROOT {
            c.remark(format!(
                "in <label {label}>: it takes the tags that reach that label"
            ));
        }
        if let Some(o) = overlap {
            c.remark(format!("not exact: {o}"));
        }
        if labelled && label == ROOT && pattern.is_ok() && item.arg.split_whitespace().count() > 0 {
            let written = c.get("match").cloned();
            if written != Some(Value::from(item.arg.as_str())) {
                c.remark(format!(
                    "its pattern {} is limited to the tags of the top level's sources",
                    item.arg
                ));
            }
        }
    }
    routed
}

/// Where the sources of label `i` share tags with those of other labels,
/// which logferry's routing by tag cannot tell apart.
fn overlaps(own: &[String], labels: &[Label], i: usize) -> Option<String> {
    let mut shared: Vec<String> = Vec::new();
    for (j, l) in labels.iter().enumerate() {
        if j == i {
            continue;
        }
        let theirs: Vec<&String> = l
            .sources
            .iter()
            .filter(|b| own.iter().any(|a| !disjoint(a, b)))
            .collect();
        if !theirs.is_empty() {
            let mut t: Vec<&str> = theirs.iter().map(|s| s.as_str()).collect();
            t.dedup();
            shared.push(format!("{} of {}", t.join(" "), l.name));
        }
    }
    (!shared.is_empty()).then(|| {
        format!(
            "Fluentd routes an event by its source's label, logferry by its tag alone, and the tags of this label's sources meet those of other labels' sources ({}): such events reach the components of each label that match them",
            shared.join("; ")
        )
    })
}

fn system_reason(key: &str) -> &'static str {
    match key {
        "log_level" => "logferry has one log level for the process: --log-level",
        "workers" => "logferry runs every component on its own tasks",
        "root_dir" => "set each disk buffer's dir and each tail source's checkpoint_dir",
        _ => "no logferry equivalent",
    }
}

/// The alternatives of a Fluentd pattern (`**` for an empty one).
pub fn alternatives(pattern: &str) -> Vec<String> {
    let alts: Vec<String> = pattern.split_whitespace().map(String::from).collect();
    if alts.is_empty() {
        vec!["**".into()]
    } else {
        alts
    }
}

/// The `match` of a component with Fluentd pattern `pattern` in a label
/// reached by the tags of `space`, after the `<match>`es `consumed`, beside
/// the labels whose sources give `others`; or why no event reaches it.
pub fn effective(
    pattern: &str,
    space: &[String],
    consumed: &[String],
    others: &[String],
) -> Result<String, String> {
    if space.is_empty() {
        return Err("no event reaches it: no source sends to its label".into());
    }
    let (mut positive, _) = intersect(&alternatives(pattern), space);
    if positive.is_empty() {
        return Err("no source of its label gives a tag it matches".into());
    }
    positive.retain(|p| !consumed.iter().any(|c| covers(c, p)));
    if positive.is_empty() {
        return Err(
            "an earlier <match> takes every event it would get (Fluentd's first match)".into(),
        );
    }
    let mut negative: Vec<&String> = Vec::new();
    for n in consumed.iter().chain(others) {
        if positive.iter().any(|p| !disjoint(p, n))
            && !negative.contains(&n)
            && !positive.contains(n)
        {
            negative.push(n);
        }
    }
    let all = negative.clone();
    negative.retain(|n| !all.iter().any(|m| m != n && covers(m, n)));
    let mut out = positive.join(" ");
    for n in negative {
        out.push_str(" !");
        out.push_str(n);
    }
    TagPattern::new(&out)
        .map_err(|e| format!("its pattern cannot be written for logferry: {e}"))?;
    Ok(out)
}

/// The alternatives of `pattern` limited to `space`: where a space
/// pattern lies inside an alternative, that pattern; where one cannot be
/// told, the alternative (not exact, the second value).
fn intersect(pattern: &[String], space: &[String]) -> (Vec<String>, bool) {
    if space.iter().any(|s| s == "**") {
        return (pattern.to_vec(), false);
    }
    let mut out: Vec<String> = Vec::new();
    let mut inexact = false;
    for a in pattern {
        for s in space {
            let pick = if covers(a, s) {
                s
            } else if covers(s, a) {
                a
            } else if disjoint(a, s) {
                continue;
            } else {
                inexact = true;
                a
            };
            if !out.contains(pick) {
                out.push(pick.clone());
            }
        }
    }
    // an alternative another one covers adds nothing
    let all = out.clone();
    out.retain(|a| !all.iter().any(|b| b != a && covers(b, a)));
    (out, inexact)
}

/// Whether pattern `p` matches the literal tag `tag`; each pattern is
/// compiled once per import (the checks below ask of the same few
/// patterns many times).
fn pattern_matches(p: &str, tag: &str) -> bool {
    thread_local! {
        static COMPILED: std::cell::RefCell<std::collections::HashMap<String, Option<TagPattern>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 4096 {
            c.clear();
        }
        c.entry(p.to_string())
            .or_insert_with(|| TagPattern::new(p).ok())
            .as_ref()
            .is_some_and(|t| t.matches(tag))
    })
}

fn is_literal(p: &str) -> bool {
    !p.contains(['*', '{', '}'])
}

/// Whether every tag `inner` matches is matched by `outer` (where that can
/// be told; false when not).
pub fn covers(outer: &str, inner: &str) -> bool {
    if outer == "**" || outer == inner {
        return true;
    }
    if is_literal(inner) {
        return pattern_matches(outer, inner);
    }
    if let Some(prefix) = outer.strip_suffix(".**") {
        return is_literal(prefix) && inner.starts_with(&format!("{prefix}."));
    }
    false
}

/// Whether no tag can match both patterns (where that can be told by
/// their literal parts; false when not).
pub fn disjoint(a: &str, b: &str) -> bool {
    if is_literal(a) && is_literal(b) {
        return a != b;
    }
    if is_literal(b) {
        return !pattern_matches(a, b);
    }
    if is_literal(a) {
        return !pattern_matches(b, a);
    }
    for (x, y) in a.split('.').zip(b.split('.')) {
        if !is_literal(x) || !is_literal(y) {
            return false;
        }
        if x != y {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn first_match_excludes_what_earlier_matches_took() {
        let all = s(&["**"]);
        assert_eq!(effective("app.**", &all, &[], &[]).unwrap(), "app.**");
        assert_eq!(
            effective("**", &all, &s(&["app.**"]), &[]).unwrap(),
            "** !app.**"
        );
        // a disjoint earlier match is left out
        assert_eq!(
            effective("sys.**", &all, &s(&["app.**"]), &[]).unwrap(),
            "sys.**"
        );
        assert!(effective("app.web", &all, &s(&["app.**"]), &[]).is_err());
        assert!(effective("app.**", &all, &s(&["**"]), &[]).is_err());
    }

    #[test]
    fn labels_limit_a_pattern_to_their_tags() {
        let space = s(&["app.access", "app.error"]);
        assert_eq!(
            effective("**", &space, &[], &[]).unwrap(),
            "app.access app.error"
        );
        assert_eq!(
            effective("app.*", &space, &s(&["app.error"]), &[]).unwrap(),
            "app.access"
        );
        assert!(effective("sys.**", &space, &[], &[]).is_err());
        assert!(effective("**", &[], &[], &[]).is_err());
        let fwd = s(&["**"]);
        assert_eq!(
            effective("**", &fwd, &[], &s(&["app.log"])).unwrap(),
            "** !app.log"
        );
    }

    #[test]
    fn covers_and_disjoint() {
        assert!(covers("app.**", "app.web.*"));
        assert!(covers("app.*", "app.web"));
        assert!(!covers("app.*", "app.web.x"));
        assert!(disjoint("app.**", "sys.**"));
        assert!(!disjoint("app.**", "*.web"));
        assert!(disjoint("a", "b"));
        assert!(!disjoint("a.*", "a.b"));
    }
}
