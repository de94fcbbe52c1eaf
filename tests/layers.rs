//! The import picture reads top to bottom: a module may import only modules
//! in a layer below its own (and its own submodules). This test reads every
//! `crate::...` path in src/ and fails on one that points up or sideways,
//! so a new kind (or a quick fix) cannot tie the modules into a circle
//! again. The layers are described in docs/DEVELOPMENT.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top to bottom. Modules in one row do not import each other; a path is
/// placed by its longest prefix in this table (so `protocol::forward` and
/// `protocol::syslog`, which read events, sit above `event`, and the rest of `protocol`,
/// msgpack, below it).
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["bench"],
    &["topology", "top"],
    &["sources", "filters", "sinks"],
    &["api", "kube"],
    &["net"],
    &["component"],
    &["router"],
    &["buffer"],
    &["limits", "format", "kafka_client", "http_client", "backoff"],
    &[
        "config",
        "tls",
        "protocol::forward",
        "protocol::syslog",
        "protocol::otlp",
    ],
    &["event"],
    &["memory", "ack", "protocol", "logging", "timer", "wake"],
    &["telemetry"],
    &["metrics"],
];

/// The row of module path `path` (`sinks::file::config`), and the table
/// entry it falls under.
fn layer_of(path: &str) -> Option<(usize, &'static str)> {
    let mut best: Option<(usize, &'static str)> = None;
    for (row, modules) in LAYERS.iter().enumerate() {
        for m in *modules {
            let under = path == *m || path.starts_with(&format!("{m}::"));
            if under && best.is_none_or(|(_, b)| m.len() > b.len()) {
                best = Some((row, m));
            }
        }
    }
    best
}

/// The module path of a source file: `src/sinks/file/mod.rs` → `sinks::file`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src/");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.to_string()];
    };
    let close = path.rfind('}').unwrap_or(path.len());
    let (prefix, inner) = (&path[..open], &path[open + 1..close]);
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .flat_map(|i| expand(&format!("{prefix}{i}")))
        .collect()
}

/// Every `crate::` path in `text` (comments left out), as module paths
/// without the `crate::`.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at + "crate::".len()..];
        rest = tail;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        // a whole `use crate::{...};` group, or one path
        let end = if tail.starts_with('{') {
            tail.find(';').unwrap_or(tail.len())
        } else {
            tail.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '{'))
                .unwrap_or(tail.len())
        };
        // `x as y` keeps `x`
        let joined: String = tail[..end]
            .replace(" as ", "@")
            .split_whitespace()
            .collect();
        for p in expand(&joined) {
            let p = p.split('@').next().unwrap_or("").trim_end_matches(':');
            if !p.is_empty() {
                out.insert(p.to_string());
            }
        }
    }
    out
}

/// Imports that point up or sideways: `(file, importing module, path)`.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let module = module_of(src, &file);
        let Some((row, entry)) = layer_of(&module) else {
            continue; // lib.rs, main.rs
        };
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for path in crate_paths(&text) {
            let Some((to_row, to_entry)) = layer_of(&path) else {
                continue; // a macro or an item of lib.rs
            };
            if to_entry != entry && to_row <= row {
                out.push(format!(
                    "{}: {module} (layer {row}) imports crate::{path} (layer {to_row})",
                    file.display()
                ));
            }
        }
    }
    out
}

#[test]
fn every_module_is_in_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let missing: Vec<String> = std::fs::read_dir(&src)
        .expect("src/ is readable")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let module = name.strip_suffix(".rs").unwrap_or(&name).to_string();
            let top_level = !["lib", "main"].contains(&module.as_str());
            (top_level && layer_of(&module).is_none()).then_some(module)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "add these modules to LAYERS (and docs/DEVELOPMENT.md): {missing:?}"
    );
}

#[test]
fn imports_point_down_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "imports against the layers of docs/DEVELOPMENT.md:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_grouped_and_inline_paths() {
    let paths = crate_paths(
        "use crate::{a::{B, c::D}, e as f};\n// crate::ignored::X\nlet x = crate::g::h(1);\n",
    );
    let expect: BTreeSet<String> = ["a::B", "a::c::D", "e", "g::h"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(paths, expect);
}
