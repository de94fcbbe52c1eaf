//! A commented TOML configuration written as YAML with the same comments
//! (`logferry config example … --yaml`): each `[a.b]` header becomes
//! nested keys, each `key = value` the YAML of that value, and a comment
//! that is a key set aside (`# key = value`) stays a comment, in YAML.
//! Arrays of tables (`[[a]]`) are not written: the examples have none.

use toml::Table;

/// The YAML of TOML `text`, comments kept where they were.
pub fn from_toml(text: &str) -> Result<String, String> {
    toml::from_str::<Table>(text).map_err(|e| e.message().trim().to_string())?;
    let mut w = Writer::default();
    let mut entry = String::new();
    for line in text.lines() {
        if !entry.is_empty() {
            // a value over several lines: until it parses
            entry.push('\n');
            entry.push_str(line);
            if toml::from_str::<Table>(&entry).is_ok() {
                w.entry(&std::mem::take(&mut entry))?;
            }
            continue;
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            w.pending.push(t.to_string());
        } else if t.starts_with("[[") {
            return Err(format!("`{t}`: arrays of tables are not written as YAML"));
        } else if t.starts_with('[') {
            w.header(t)?;
        } else if toml::from_str::<Table>(line).is_ok() {
            w.entry(line)?;
        } else {
            entry = line.to_string();
        }
    }
    if !entry.is_empty() {
        return Err(format!("`{entry}` does not end"));
    }
    w.flush(w.table.len());
    Ok(w.out)
}

#[derive(Default)]
struct Writer {
    /// The YAML so far.
    out: String,
    /// The tables whose key line is written.
    opened: Vec<Vec<String>>,
    /// The table of the last header.
    table: Vec<String>,
    /// Comment and blank lines (trimmed), written once the indentation
    /// of what they describe is known.
    pending: Vec<String>,
}

impl Writer {
    /// `[a.b.c]`: the keys of the tables not yet opened; the comments
    /// above it go with its own key.
    fn header(&mut self, line: &str) -> Result<(), String> {
        let table: Table = toml::from_str(line).map_err(|e| e.message().trim().to_string())?;
        let mut path = Vec::new();
        let mut node = &table;
        while let Some((k, toml::Value::Table(t))) = node.iter().next() {
            path.push(k.clone());
            node = t;
        }
        if self.out.is_empty() {
            // the file's own comment, before any table
            self.flush(0);
        }
        for depth in 1..=path.len() {
            let prefix = path[..depth].to_vec();
            if self.opened.contains(&prefix) {
                continue;
            }
            if depth == path.len() {
                self.flush(depth - 1);
            }
            self.out.push_str(&indent(depth - 1));
            self.out.push_str(&key(&prefix[depth - 1])?);
            self.out.push(':');
            if let (true, Some(c)) = (depth == path.len(), trailing_comment(line)) {
                self.out.push_str("  ");
                self.out.push_str(c);
            }
            self.out.push('\n');
            self.opened.push(prefix);
        }
        self.table = path;
        Ok(())
    }

    /// `key = value` (with its comment, if any) in the current table.
    fn entry(&mut self, text: &str) -> Result<(), String> {
        let depth = self.table.len();
        self.flush(depth);
        let comment = trailing_comment(text);
        let yaml = yaml_of(text)?;
        for (i, line) in yaml.lines().enumerate() {
            self.out.push_str(&indent(depth));
            self.out.push_str(line);
            if let (0, Some(c)) = (i, comment) {
                self.out.push_str("  ");
                self.out.push_str(c);
            }
            self.out.push('\n');
        }
        Ok(())
    }

    /// Writes the pending comments at `depth`.
    fn flush(&mut self, depth: usize) {
        for line in std::mem::take(&mut self.pending) {
            let Some(comment) = line.strip_prefix('#') else {
                self.out.push('\n');
                continue;
            };
            let set_aside = comment.trim_start();
            let as_yaml = set_aside
                .starts_with(|c: char| c.is_ascii_alphabetic())
                .then(|| yaml_of(set_aside).ok())
                .flatten();
            match as_yaml {
                Some(yaml) => {
                    for l in yaml.lines() {
                        self.out.push_str(&format!("{}# {l}\n", indent(depth)));
                    }
                }
                None => self.out.push_str(&format!("{}{line}\n", indent(depth))),
            }
        }
    }
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

/// A key as YAML writes it (quoted when it has to be).
fn key(k: &str) -> Result<String, String> {
    let yaml = serde_yaml::to_string(k).map_err(|e| e.to_string())?;
    Ok(yaml.trim_end().to_string())
}

/// The YAML of `key = value` text holding exactly one key.
fn yaml_of(text: &str) -> Result<String, String> {
    let table: Table = toml::from_str(text).map_err(|e| e.message().trim().to_string())?;
    if table.len() != 1 {
        return Err(format!("`{text}` is not one key"));
    }
    serde_yaml::to_string(&table).map_err(|e| e.to_string())
}

/// The `# …` after the value of a one-line `key = value`.
fn trailing_comment(text: &str) -> Option<&str> {
    if text.contains('\n') {
        return None;
    }
    let whole: Table = toml::from_str(text).ok()?;
    text.match_indices('#')
        .map(|(i, _)| i)
        .find(|&i| toml::from_str::<Table>(&text[..i]).is_ok_and(|t| t == whole))
        .map(|i| text[i..].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_values_and_comments_keep_their_places() {
        let toml = "\
# an example
[sinks.out]            # the sink
type = \"file\"
match = \"**\"   # every tag
# fsync = false
# Optional: its queue
[sinks.out.buffer]
max_bytes = \"8MiB\"
program = '''
a
b
'''
servers = [
  { address = \"h:1\", weight = 1 },
]
";
        let yaml = from_toml(toml).unwrap();
        assert_eq!(
            yaml,
            "\
# an example
sinks:
  out:  # the sink
    type: file
    match: '**'  # every tag
    # fsync: false
    # Optional: its queue
    buffer:
      max_bytes: 8MiB
      program: |
        a
        b
      servers:
      - address: h:1
        weight: 1
"
        );
        let back = crate::config::yaml::read(&yaml).unwrap();
        assert_eq!(back, toml::from_str::<Table>(toml).unwrap());
    }
}
