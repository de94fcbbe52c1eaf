//! Fluent Bit's classic format: `[SECTION]` headers, `Key Value` lines,
//! `@INCLUDE` (relative to the including file, globs allowed) and `@SET`.

use std::path::Path;

use super::{substitute, FbConfig, Section};
use crate::cli::import::ImportError;

/// How deep `@INCLUDE` may nest before a loop is assumed.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads `path` (and what it includes) into `config`.
pub fn load(path: &Path, config: &mut FbConfig, depth: usize) -> Result<(), ImportError> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(ImportError::Invalid {
            file: path.display().to_string(),
            line: 0,
            message: "@INCLUDE nests too deep (a file including itself?)".into(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| ImportError::Read {
        file: path.display().to_string(),
        error: e.to_string(),
    })?;
    let file = path.display().to_string();
    let mut current: Option<Section> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let invalid = |message: String| ImportError::Invalid {
            file: file.clone(),
            line: n + 1,
            message,
        };
        if let Some(rest) = strip_directive(line, "@SET") {
            let (k, v) = rest
                .split_once('=')
                .ok_or_else(|| invalid(format!("@SET without KEY=VALUE: {rest}")))?;
            let value = substitute(v.trim(), &config.variables);
            config.variables.insert(k.trim().to_string(), value);
            continue;
        }
        if let Some(rest) = strip_directive(line, "@INCLUDE") {
            if let Some(s) = current.take() {
                config.push(s);
            }
            let pattern = super::file_name(&substitute(rest.trim(), &config.variables));
            include(path, &pattern, config, depth)?;
            continue;
        }
        if line.starts_with('[') {
            let name = line
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .ok_or_else(|| invalid(format!("a section header must be [NAME]: {line}")))?;
            if let Some(s) = current.take() {
                config.push(s);
            }
            current = Some(Section {
                kind: name.trim().to_ascii_uppercase(),
                props: Vec::new(),
                file: file.clone(),
                line: n + 1,
            });
            continue;
        }
        let Some(section) = current.as_mut() else {
            return Err(invalid(format!("a key outside any section: {line}")));
        };
        let (key, value) = match line.split_once(char::is_whitespace) {
            Some((k, v)) => (k, v.trim()),
            None => (line, ""),
        };
        section
            .props
            .push((key.to_string(), substitute(value, &config.variables)));
    }
    if let Some(s) = current.take() {
        config.push(s);
    }
    Ok(())
}

fn strip_directive<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let head = line.get(..name.len())?;
    if !head.eq_ignore_ascii_case(name) {
        return None;
    }
    let rest = &line[name.len()..];
    rest.starts_with(char::is_whitespace).then_some(rest)
}

/// Loads every file `pattern` names, relative to `from`'s directory; the
/// files of a glob in name order, as Fluent Bit reads them.
pub fn include(
    from: &Path,
    pattern: &str,
    config: &mut FbConfig,
    depth: usize,
) -> Result<(), ImportError> {
    let dir = from.parent().unwrap_or(Path::new("."));
    let full = if Path::new(pattern).is_absolute() {
        pattern.to_string()
    } else {
        dir.join(pattern).display().to_string()
    };
    let mut files: Vec<_> = match glob::glob(&full) {
        Ok(paths) => paths.filter_map(Result::ok).collect(),
        Err(e) => {
            return Err(ImportError::Invalid {
                file: from.display().to_string(),
                line: 0,
                message: format!("include {pattern}: {e}"),
            })
        }
    };
    files.sort();
    if files.is_empty() && !pattern.contains(['*', '?', '[']) {
        return Err(ImportError::Read {
            file: full,
            error: "included file not found".into(),
        });
    }
    config.included.push(pattern.to_string());
    for f in files {
        super::load_any(&f, config, depth + 1)?;
    }
    Ok(())
}
