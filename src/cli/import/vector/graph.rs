//! Vector's graph: components by id, each transform's and sink's `inputs`
//! resolved to the outputs they name (an id, `route.port`, a wildcard),
//! and the transforms in an order where every one comes after its inputs.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

/// Which of Vector's tables a component is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    Source,
    Transform,
    Sink,
}

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Source => "sources",
            Table::Transform => "transforms",
            Table::Sink => "sinks",
        }
    }
}

/// One Vector component as read.
#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    pub table: Table,
    /// Its `type`, empty when missing.
    pub type_: String,
    /// Its keys, `type` and `inputs` included.
    pub keys: Map<String, Value>,
    /// The file it was read from.
    pub file: String,
}

impl Node {
    pub fn origin(&self) -> String {
        format!(
            "[{}.{}] {} ({})",
            self.table.name(),
            self.id,
            self.type_,
            self.file
        )
    }

    /// Its `inputs` as written.
    pub fn inputs(&self) -> Vec<String> {
        match self.keys.get("inputs") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }
}

/// The outputs of a transform: `None` is its default output (named by
/// its id), `Some(port)` a named one (`id.port`).
pub fn outputs(node: &Node) -> Vec<Option<String>> {
    match node.type_.as_str() {
        "route" => {
            let mut ports: Vec<Option<String>> = match node.keys.get("route") {
                Some(Value::Object(routes)) => routes.keys().map(|k| Some(k.clone())).collect(),
                _ => Vec::new(),
            };
            if node.keys.get("reroute_unmatched") != Some(&Value::Bool(false)) {
                ports.push(Some("_unmatched".into()));
            }
            ports
        }
        "remap" if node.keys.get("reroute_dropped") == Some(&Value::Bool(true)) => {
            vec![None, Some("dropped".into())]
        }
        _ => vec![None],
    }
}

/// The output id of `id`'s `port`.
pub fn output_id(id: &str, port: &Option<String>) -> String {
    match port {
        Some(p) => format!("{id}.{p}"),
        None => id.to_string(),
    }
}

/// The graph: every node, and each consumer's resolved inputs.
pub struct Graph {
    pub nodes: Vec<Node>,
    /// Consumer id → the output ids its inputs name, and the inputs that
    /// named nothing.
    pub inputs: HashMap<(Table, String), (Vec<String>, Vec<String>)>,
}

impl Graph {
    pub fn new(nodes: Vec<Node>) -> Graph {
        let mut outputs = Vec::new();
        for n in &nodes {
            match n.table {
                Table::Source => outputs.push(n.id.clone()),
                Table::Transform => {
                    for p in self::outputs(n) {
                        outputs.push(output_id(&n.id, &p));
                    }
                }
                Table::Sink => {}
            }
        }
        let mut inputs = HashMap::new();
        for n in nodes.iter().filter(|n| n.table != Table::Source) {
            let mut found: Vec<String> = Vec::new();
            let mut missing = Vec::new();
            for pattern in n.inputs() {
                let own = |o: &String| {
                    n.table == Table::Transform
                        && (o == &n.id || o.starts_with(&format!("{}.", n.id)))
                };
                let hits: Vec<&String> = if pattern.contains('*') || pattern.contains('?') {
                    outputs
                        .iter()
                        .filter(|o| !own(o) && glob_match(&pattern, o))
                        .collect()
                } else {
                    outputs.iter().filter(|o| **o == pattern).collect()
                };
                if hits.is_empty() {
                    missing.push(pattern.clone());
                }
                for h in hits {
                    if !found.contains(h) {
                        found.push(h.clone());
                    }
                }
            }
            inputs.insert((n.table, n.id.clone()), (found, missing));
        }
        Graph { nodes, inputs }
    }

    /// The output ids `node` reads.
    pub fn inputs_of(&self, node: &Node) -> &[String] {
        self.inputs
            .get(&(node.table, node.id.clone()))
            .map_or(&[], |(found, _)| found.as_slice())
    }

    /// The inputs of `node` that name no output.
    pub fn missing_of(&self, node: &Node) -> &[String] {
        self.inputs
            .get(&(node.table, node.id.clone()))
            .map_or(&[], |(_, missing)| missing.as_slice())
    }

    /// The transforms and sinks that read `output`, transforms first (in
    /// `order`), then sinks.
    pub fn consumers(&self, output: &str, order: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let reads = |i: &usize| self.inputs_of(&self.nodes[*i]).iter().any(|o| o == output);
        let transforms = order.iter().copied().filter(reads).collect();
        let sinks = (0..self.nodes.len())
            .filter(|i| self.nodes[*i].table == Table::Sink)
            .filter(reads)
            .collect();
        (transforms, sinks)
    }

    /// The transforms (indices into `nodes`) with each after its inputs,
    /// else in file order; and those on a cycle, left out.
    pub fn order(&self) -> (Vec<usize>, Vec<usize>) {
        let transforms: Vec<usize> = (0..self.nodes.len())
            .filter(|i| self.nodes[*i].table == Table::Transform)
            .collect();
        let producer: BTreeMap<String, usize> = transforms
            .iter()
            .flat_map(|i| {
                let n = &self.nodes[*i];
                outputs(n)
                    .into_iter()
                    .map(move |p| (output_id(&n.id, &p), *i))
            })
            .collect();
        let mut done: Vec<usize> = Vec::new();
        let mut left = transforms.clone();
        loop {
            let ready = left.iter().position(|i| {
                self.inputs_of(&self.nodes[*i])
                    .iter()
                    .filter_map(|o| producer.get(o))
                    .all(|p| done.contains(p))
            });
            match ready {
                Some(at) => done.push(left.remove(at)),
                None => break,
            }
        }
        (done, left)
    }
}

/// Vector's wildcard inputs: `*` any run of characters, `?` one.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(table: Table, id: &str, type_: &str, inputs: &[&str]) -> Node {
        let mut keys = Map::new();
        keys.insert("type".into(), type_.into());
        keys.insert(
            "inputs".into(),
            inputs.iter().map(|s| Value::from(*s)).collect(),
        );
        Node {
            id: id.into(),
            table,
            type_: type_.into(),
            keys,
            file: "v.toml".into(),
        }
    }

    #[test]
    fn wildcards_and_ports_resolve() {
        let mut route = node(Table::Transform, "split", "route", &["app_*"]);
        route
            .keys
            .insert("route".into(), serde_json::json!({"errors": ".x == 1"}));
        let g = Graph::new(vec![
            node(Table::Source, "app_web", "file", &[]),
            node(Table::Source, "app_db", "file", &[]),
            node(Table::Source, "sys", "file", &[]),
            route,
            node(Table::Sink, "errs", "file", &["split.errors"]),
            node(Table::Sink, "rest", "file", &["split._unmatched", "nope"]),
        ]);
        assert_eq!(g.inputs_of(&g.nodes[3]), ["app_web", "app_db"]);
        assert_eq!(g.inputs_of(&g.nodes[4]), ["split.errors"]);
        assert_eq!(g.missing_of(&g.nodes[5]), ["nope"]);
    }

    #[test]
    fn transforms_come_after_their_inputs() {
        let g = Graph::new(vec![
            node(Table::Source, "in", "file", &[]),
            node(Table::Transform, "b", "remap", &["a"]),
            node(Table::Transform, "a", "remap", &["in"]),
            node(Table::Transform, "x", "remap", &["y"]),
            node(Table::Transform, "y", "remap", &["x"]),
        ]);
        let (order, cycle) = g.order();
        assert_eq!(order, [2, 1]);
        assert_eq!(cycle, [3, 4]);
    }

    #[test]
    fn globs() {
        assert!(glob_match("app_*", "app_web"));
        assert!(glob_match("*", "r.errors"));
        assert!(!glob_match("app_*", "sys"));
        assert!(glob_match("a?c*", "abcdef"));
    }
}
