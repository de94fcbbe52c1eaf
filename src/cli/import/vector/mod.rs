//! Vector configurations (TOML, YAML or JSON: `sources`, `transforms`,
//! `sinks` and their `inputs` graph) as logferry ones. The file is read
//! into one tree ([`read`]), its graph resolved ([`graph`]) and turned
//! into tags and `match` patterns ([`wiring`]); each component is
//! translated by the module of its role.

mod global;
mod graph;
mod keys;
mod read;
mod sinks;
mod sources;
mod transforms;
mod wiring;

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::model::{Component, Imported, Kind, Untranslated};
use super::ImportError;
use graph::{Graph, Node, Table};
use read::Syntax;
use wiring::{tag_of, Wiring};

/// Process-wide settings a component's translation needs.
#[derive(Debug, Default)]
pub struct Settings {
    /// Vector's `data_dir`: checkpoints and disk buffers go under it.
    pub data_dir: Option<String>,
    /// Vector's global `timezone`: the remap filters' default.
    pub timezone: Option<String>,
}

/// Reads the Vector configuration at `path`, TOML or (`yaml`) YAML (JSON
/// by its name), and the component files of a namespaced directory
/// beside it (`sources/`, `transforms/`, `sinks/`).
pub fn import(path: &Path, yaml: bool) -> Result<Imported, ImportError> {
    let read = read::file(path, Syntax::of(path, yaml))?;
    let mut imported = Imported {
        from: path.display().to_string(),
        ..Imported::default()
    };
    if !read.filled_in.is_empty() {
        imported.remarks.push(format!(
            "filled in from the environment at import, where logferry takes no variable (outside a string): {}",
            read.filled_in.join(", ")
        ));
    }
    let mut tree = read.tree;
    let file = path.display().to_string();
    let mut nodes = Vec::new();
    for table in [Table::Source, Table::Transform, Table::Sink] {
        match tree.remove(table.name()) {
            Some(Value::Object(components)) => {
                for (id, v) in components {
                    nodes.push(node(table, id, v, &file));
                }
            }
            Some(_) => imported.untranslated.push(Untranslated {
                key: table.name().into(),
                reason: "not a table of components".into(),
            }),
            None => {}
        }
    }
    if let Some(dir) = path.parent() {
        namespaced(dir, yaml, &mut nodes)?;
    }
    let settings = global::translate(tree, &mut imported);
    imported.remarks.push(
        "Vector has no tags: each record is tagged with the id of the last component it passed (ROUTE.PORT after a route), which only a sink writing the tag (the json format, ${tag} in a path) shows".into(),
    );
    translate(Graph::new(nodes), &settings, &mut imported);
    Ok(imported)
}

fn node(table: Table, id: String, v: Value, file: &str) -> Node {
    let keys = match v {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let type_ = keys
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("")
        .to_string();
    Node {
        id,
        table,
        type_,
        keys,
        file: file.to_string(),
    }
}

/// Vector's `--config-dir` layout: `sources/ID.yaml` (or `.toml`,
/// `.json`) is the source `ID`, and so on.
fn namespaced(dir: &Path, yaml: bool, nodes: &mut Vec<Node>) -> Result<(), ImportError> {
    for table in [Table::Source, Table::Transform, Table::Sink] {
        let Ok(entries) = std::fs::read_dir(dir.join(table.name())) else {
            continue;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            let Some(id) = f.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if !matches!(
                f.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "toml" | "json")
            ) {
                continue;
            }
            let read = read::file(&f, Syntax::of(&f, yaml))?;
            let id = id.to_string();
            nodes.push(node(
                table,
                id,
                Value::Object(read.tree),
                &f.display().to_string(),
            ));
        }
    }
    Ok(())
}

/// The graph's components as logferry's, wired by tags.
fn translate(graph: Graph, settings: &Settings, imported: &mut Imported) {
    let (order, cycle) = graph.order();
    let mut out_tags: HashMap<String, Vec<String>> = HashMap::new();
    let mut prepared = Vec::new();
    for n in graph.nodes.iter().filter(|n| n.table == Table::Source) {
        let s = sources::translate(n, settings);
        if s.component.commented_out.is_none() {
            out_tags.insert(n.id.clone(), vec![tag_of(&n.id)]);
        }
        imported.components.push(s.component.clone());
        prepared.push((n, s));
    }
    // transforms that will run, to know which readers take records
    let running: Vec<usize> = order
        .iter()
        .copied()
        .filter(|i| transforms::supported(&graph.nodes[*i]))
        .collect();
    let sinks_running: Vec<bool> = graph
        .nodes
        .iter()
        .map(|n| n.table == Table::Sink && sinks::supported(n))
        .collect();
    let mut w = Wiring { imported };
    untagged_sources(&prepared, &mut w);
    // the tags of outputs nothing running reads
    let mut unread: Vec<String> = Vec::new();
    let mut deliver =
        |w: &mut Wiring, output: &str, tags: &[String], first: Option<(&str, &str)>| {
            let (readers, sinks) = graph.consumers(output, &running);
            let readers: Vec<String> = readers
                .iter()
                .map(|i| tag_of(&graph.nodes[*i].id))
                .collect();
            let keep = sinks.iter().any(|i| sinks_running[*i]);
            if readers.is_empty() && !keep {
                unread.extend(tags.iter().cloned());
            }
            w.deliver(&tag_of(output), tags, &readers, keep, first);
        };
    for (n, s) in &prepared {
        let Some(tags) = out_tags.get(&n.id).cloned() else {
            continue;
        };
        let origin = format!("the fields Vector's {} source adds", n.type_);
        let first = s.fields.as_deref().map(|p| (p, origin.as_str()));
        deliver(&mut w, &n.id, &tags, first);
    }
    for i in &order {
        let n = &graph.nodes[*i];
        let outputs = transforms::translate(n, settings, &mut w);
        for (port, tags) in outputs {
            let output = graph::output_id(&n.id, &port);
            deliver(&mut w, &output, &tags, None);
            out_tags.insert(output, tags);
        }
    }
    for i in &cycle {
        let n = &graph.nodes[*i];
        let mut c = transforms::commented(n, "its inputs form a cycle (Vector refuses it too)");
        c.set("match", tag_of(&n.id));
        w.push(c);
    }
    for n in graph.nodes.iter().filter(|n| n.table == Table::Sink) {
        let mut c = sinks::translate(n, settings);
        let tags: Vec<String> = graph
            .inputs_of(n)
            .iter()
            .flat_map(|o| out_tags.get(o).cloned().unwrap_or_default())
            .collect();
        for m in graph.missing_of(n) {
            c.untranslated(
                &format!("inputs: {m}"),
                "names no component of this configuration",
            );
        }
        if tags.is_empty() {
            c.set("match", wiring::pattern(&n.inputs()));
            if c.commented_out.is_none() {
                c.comment_out("none of its inputs gives it records here: they are commented out, or name no component");
            }
        } else {
            c.set("match", wiring::pattern(&tags));
        }
        move_after_type(&mut c, "match");
        w.push(c);
    }
    if !unread.is_empty() {
        let name = w.imported.unique_name(Kind::Sink, "unread");
        let mut c = Component::new(
            Kind::Sink,
            &name,
            "null",
            "records no component reads".into(),
        );
        c.set("match", wiring::pattern(&unread));
        c.remark("Vector drops the events of a component nothing reads (and warns at start); logferry drops them here, counted in logferry_sink_records_total");
        w.push(c);
    }
}

/// Moves `key` to just after `type`, where a reader looks for it.
fn move_after_type(c: &mut super::model::Component, key: &str) {
    if let Some(at) = c.keys.iter().position(|(k, _)| k == key) {
        let kv = c.keys.remove(at);
        c.keys.insert(1.min(c.keys.len()), kv);
    }
}

/// Sources whose records come tagged by their clients (forward, HTTP)
/// cannot tag them with their id: a first filter gives every record not
/// tagged by another source the first such source's id.
fn untagged_sources(prepared: &[(&Node, sources::Source)], w: &mut Wiring) {
    let untagged: Vec<&Node> = prepared
        .iter()
        .filter(|(_, s)| !s.tagged && s.component.commented_out.is_none())
        .map(|(n, _)| *n)
        .collect();
    let Some(first) = untagged.first() else {
        return;
    };
    let tagged: Vec<String> = prepared
        .iter()
        .filter(|(_, s)| s.tagged && s.component.commented_out.is_none())
        .map(|(n, _)| super::model::vrl_str(&tag_of(&n.id)))
        .collect();
    let mut c = w.filter(
        &format!("{}_tag", first.id),
        "remap",
        &["**".to_string()],
        &format!(
            "the tag of the records of {} (their clients tag them)",
            untagged
                .iter()
                .map(|n| n.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    // Vector's fluent source keeps the client's tag in a field
    let keep_tag = if first.type_ == "fluent" {
        ".tag = %tag; "
    } else {
        ""
    };
    c.set(
        "source",
        format!(
            "if !includes([{}], %tag) {{ {keep_tag}%tag = {} }}",
            tagged.join(", "),
            super::model::vrl_str(&tag_of(&first.id))
        ),
    );
    if untagged.len() > 1 {
        c.remark(format!(
            "the records of {} cannot be told apart by tag: all go on as {}'s",
            untagged
                .iter()
                .map(|n| n.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            first.id
        ));
    }
    w.push(c);
}
