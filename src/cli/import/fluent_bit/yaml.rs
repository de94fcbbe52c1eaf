//! Fluent Bit's YAML format: `env`, `includes`, `service`, `pipeline`
//! (`inputs`, `filters`, `outputs`), `parsers` and `multiline_parsers`,
//! read into the same sections as the classic format.

use std::path::Path;

use serde_yaml::Value as Yaml;

use super::{substitute, FbConfig, Section};
use crate::cli::import::ImportError;

pub fn load(path: &Path, config: &mut FbConfig, depth: usize) -> Result<(), ImportError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ImportError::Read {
        file: file.clone(),
        error: e.to_string(),
    })?;
    let doc: Yaml = serde_yaml::from_str(&text).map_err(|e| ImportError::Invalid {
        file: file.clone(),
        line: e.location().map_or(0, |l| l.line()),
        message: e.to_string(),
    })?;
    let Yaml::Mapping(top) = doc else {
        return Err(ImportError::Invalid {
            file,
            line: 0,
            message: "a Fluent Bit YAML file is a mapping (service, pipeline, …)".into(),
        });
    };
    if let Some(Yaml::Mapping(env)) = top.get("env") {
        for (k, v) in env {
            let value = substitute(&scalar(v), &config.variables);
            config.variables.insert(scalar(k), value);
        }
    }
    if let Some(Yaml::Sequence(list)) = top.get("includes") {
        for item in list {
            let pattern = super::file_name(&substitute(&scalar(item), &config.variables));
            super::classic::include(path, &pattern, config, depth)?;
        }
    }
    for (key, value) in &top {
        let key = scalar(key);
        match key.as_str() {
            "env" | "includes" => {}
            "service" => {
                let mut s = section("SERVICE", &file);
                props(value, &mut s, config);
                config.push(s);
            }
            "pipeline" => {
                for (list, kind) in [
                    ("inputs", "INPUT"),
                    ("filters", "FILTER"),
                    ("outputs", "OUTPUT"),
                ] {
                    if let Some(Yaml::Sequence(items)) = value.get(list) {
                        for item in items {
                            let mut s = section(kind, &file);
                            props(item, &mut s, config);
                            config.push(s);
                        }
                    }
                }
            }
            "parsers" | "multiline_parsers" => {
                let kind = if key == "parsers" {
                    "PARSER"
                } else {
                    "MULTILINE_PARSER"
                };
                if let Yaml::Sequence(items) = value {
                    for item in items {
                        let mut s = section(kind, &file);
                        props(item, &mut s, config);
                        config.push(s);
                    }
                }
            }
            other => config.unknown.push(format!("{other} (in {file})")),
        }
    }
    Ok(())
}

fn section(kind: &str, file: &str) -> Section {
    Section {
        kind: kind.to_string(),
        props: Vec::new(),
        file: file.to_string(),
        line: 0,
    }
}

/// The keys of a mapping as `Key Value` pairs: a list becomes the key
/// repeated (as `Regex` lines are in the classic format), a multiline
/// parser's `rules` become classic `rule` lines.
fn props(value: &Yaml, s: &mut Section, config: &FbConfig) {
    let Yaml::Mapping(map) = value else { return };
    for (k, v) in map {
        let key = scalar(k);
        match (key.as_str(), v) {
            ("rules", Yaml::Sequence(rules)) => {
                for r in rules {
                    let field = |name: &str| r.get(name).map(scalar).unwrap_or_default();
                    let re = substitute(&field("regex"), &config.variables);
                    // Fluent Bit writes the regex between slashes or bare
                    let re = if re.len() > 1 && re.starts_with('/') && re.ends_with('/') {
                        re
                    } else {
                        format!("/{re}/")
                    };
                    s.props.push((
                        "rule".into(),
                        format!(
                            "\"{}\" \"{re}\" \"{}\"",
                            field("state"),
                            field("next_state")
                        ),
                    ));
                }
            }
            (_, Yaml::Sequence(items)) => {
                for item in items {
                    s.props
                        .push((key.clone(), substitute(&scalar(item), &config.variables)));
                }
            }
            // `name: null` is the null output, whose name YAML reads as null
            (k, Yaml::Null) if k.eq_ignore_ascii_case("name") => {
                s.props.push((key, "null".into()));
            }
            _ => s
                .props
                .push((key, substitute(&scalar(v), &config.variables))),
        }
    }
}

fn scalar(v: &Yaml) -> String {
    match v {
        Yaml::String(s) => s.clone(),
        // true/false, which Fluent Bit reads as booleans and librdkafka
        // (rdkafka.* keys) too
        Yaml::Bool(b) => b.to_string(),
        Yaml::Number(n) => n.to_string(),
        Yaml::Null => String::new(),
        // a nested mapping (processors, …) is kept as its YAML text so the
        // key can still be named in a note
        other => serde_yaml::to_string(other)
            .unwrap_or_default()
            .trim()
            .replace('\n', "; "),
    }
}
