//! Where each key of a YAML configuration is written, for messages that
//! name a line: found in the text itself, as the TOML loader finds a key's
//! line, since the YAML parser keeps no positions once a document is read.
//!
//! Block style (`key:` on its own line, `- ` items, indentation) is
//! followed exactly; inside a flow collection (`{ a: 1 }`, `[a, b]`) the
//! keys are not told apart, and a message about one names the line of
//! the key holding the collection. Block scalars (`|`, `>`) and quoted
//! strings over several lines are skipped whole.

/// One key, or one item of a list, and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Keys from the document's root; items as their index.
    path: Vec<String>,
    /// From 1.
    line: usize,
    /// Of the key's first character (or the item's `-`), from 1.
    column: usize,
}

/// The keys and list items of a YAML text, in the order they are written.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    /// Every key and item, in text order.
    entries: Vec<Entry>,
}

/// A node open at some indentation while the text is read.
enum Frame {
    Key { indent: usize, name: String },
    Item { indent: usize, index: usize },
}

impl Frame {
    fn indent(&self) -> usize {
        match self {
            Frame::Key { indent, .. } | Frame::Item { indent, .. } => *indent,
        }
    }

    fn name(&self) -> String {
        match self {
            Frame::Key { name, .. } => name.clone(),
            Frame::Item { index, .. } => index.to_string(),
        }
    }
}

/// What the following lines continue, rather than start anew.
enum Open {
    /// A block scalar: lines indented more than this, and blank lines.
    Block(usize),
    /// A flow collection or a quoted string not closed yet.
    Flow(Flow),
}

impl Lines {
    /// Reads where every key of `text` is. Never fails: what it cannot
    /// follow, it leaves out, and lookups fall back to an enclosing key.
    pub fn of(text: &str) -> Lines {
        let mut entries = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        let mut open: Option<Open> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let indent = raw.len() - raw.trim_start_matches(' ').len();
            match &mut open {
                Some(Open::Block(min)) if raw.trim().is_empty() || indent > *min => continue,
                Some(Open::Flow(flow)) => {
                    flow.scan(raw);
                    if flow.is_closed() {
                        open = None;
                    }
                    continue;
                }
                _ => open = None,
            }
            let content = without_comment(raw);
            let trimmed = content.trim();
            if trimmed.is_empty() || trimmed.starts_with('%') {
                continue;
            }
            if indent == 0 && (trimmed.starts_with("---") || trimmed.starts_with("...")) {
                stack.clear();
                continue;
            }
            let mut col = indent;
            let mut rest = content[indent..].trim_end();
            while rest == "-" || rest.starts_with("- ") {
                while stack.last().is_some_and(|f| f.indent() > col) {
                    stack.pop();
                }
                let index = match stack.last() {
                    Some(Frame::Item { indent, index }) if *indent == col => {
                        let next = index + 1;
                        stack.pop();
                        next
                    }
                    _ => 0,
                };
                stack.push(Frame::Item { indent: col, index });
                entries.push(Entry {
                    path: stack.iter().map(Frame::name).collect(),
                    line,
                    column: col + 1,
                });
                let after = &rest[1..];
                let item = after.trim_start_matches(' ');
                col += 1 + after.len() - item.len();
                rest = item;
            }
            if rest.is_empty() {
                continue;
            }
            let value = match key(rest) {
                Some((name, value)) => {
                    while stack.last().is_some_and(|f| f.indent() >= col) {
                        stack.pop();
                    }
                    let mut path: Vec<String> = stack.iter().map(Frame::name).collect();
                    path.push(name.clone());
                    entries.push(Entry {
                        path,
                        line,
                        column: col + 1,
                    });
                    stack.push(Frame::Key { indent: col, name });
                    value
                }
                None => rest,
            };
            let value = without_properties(value);
            if value.starts_with(['|', '>']) {
                // after `key: |` the text is indented past the key; after `- |`, past the `-`
                let min = if value.len() == rest.len() {
                    col.saturating_sub(2)
                } else {
                    col
                };
                open = Some(Open::Block(min));
            } else if value.starts_with(['[', '{', '"', '\'']) {
                let mut flow = Flow::default();
                flow.scan(value);
                if !flow.is_closed() {
                    open = Some(Open::Flow(flow));
                }
            }
        }
        Lines { entries }
    }

    /// The line of `key` in the mapping at `path`, else of the first
    /// `key` anywhere under `path` (as the TOML loader looks in a table
    /// and its sub-tables).
    pub fn key(&self, path: &[&str], key: &str) -> Option<usize> {
        let exact = self.entries.iter().find(|e| {
            e.path.len() == path.len() + 1
                && e.path[..path.len()].iter().zip(path).all(|(a, b)| a == b)
                && e.path[path.len()] == key
        });
        exact
            .or_else(|| {
                self.entries.iter().find(|e| {
                    e.path.len() > path.len() + 1
                        && e.path.iter().zip(path).all(|(a, b)| a == b)
                        && e.path.last().is_some_and(|k| k == key)
                })
            })
            .map(|e| e.line)
    }

    /// The line of the key (or item) whose value is the node at `path`;
    /// `None` for the root.
    pub fn node(&self, path: &[&str]) -> Option<usize> {
        if path.is_empty() {
            return None;
        }
        self.entries
            .iter()
            .find(|e| e.path.len() == path.len() && e.path.iter().zip(path).all(|(a, b)| a == b))
            .map(|e| e.line)
    }

    /// The column of the last key written on `line` (after any `- `).
    pub fn column(&self, line: usize) -> Option<usize> {
        self.entries
            .iter()
            .filter(|e| e.line == line)
            .map(|e| e.column)
            .next_back()
    }

    /// The line and column of the first key written a second time in
    /// its mapping.
    pub fn duplicate(&self) -> Option<(usize, usize)> {
        self.entries
            .iter()
            .enumerate()
            .find(|(i, e)| self.entries[..*i].iter().any(|d| d.path == e.path))
            .map(|(_, e)| (e.line, e.column))
    }

    /// The lines of the items of the list at `path`, in order.
    pub fn items(&self, path: &[&str]) -> Vec<usize> {
        self.entries
            .iter()
            .filter(|e| {
                e.path.len() == path.len() + 1
                    && e.path.iter().zip(path).all(|(a, b)| a == b)
                    && e.path[path.len()].parse::<usize>().is_ok()
            })
            .map(|e| e.line)
            .collect()
    }
}

/// The key a line (after any `- `) starts with, unquoted, and the text
/// after its `:`; `None` when the line holds no key.
pub fn key_value(rest: &str) -> Option<(String, &str)> {
    key(rest)
}

/// The key a line starts with (unquoted) and the text after its `:`.
fn key(rest: &str) -> Option<(String, &str)> {
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let body = &rest[1..];
        let end = closing_quote(body, q)?;
        let after = body[end + 1..].trim_start_matches(' ');
        let value = after.strip_prefix(':')?;
        if !(value.is_empty() || value.starts_with([' ', '\t'])) {
            return None;
        }
        let name = match q {
            '\'' => body[..end].replace("''", "'"),
            _ => body[..end].replace("\\\"", "\"").replace("\\\\", "\\"),
        };
        return Some((name, value.trim_start()));
    }
    if rest.starts_with(['[', '{', '&', '*', '!', '?', '|', '>']) {
        return None;
    }
    let colon = rest
        .match_indices(':')
        .map(|(i, _)| i)
        .find(|&i| rest[i + 1..].is_empty() || rest[i + 1..].starts_with([' ', '\t']))?;
    Some((
        rest[..colon].trim_end().to_string(),
        rest[colon + 1..].trim_start(),
    ))
}

/// The byte index in `body` (after an opening `q`) of the closing quote.
fn closing_quote(body: &str, q: char) -> Option<usize> {
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if q == '"' => {
                chars.next();
            }
            c if c == q => {
                // '' inside single quotes is one quote
                if q == '\'' && chars.peek().is_some_and(|(_, n)| *n == '\'') {
                    chars.next();
                    continue;
                }
                return Some(i);
            }
            _ => {}
        }
    }
    None
}

/// A value without its anchor (`&name`) and tag (`!tag`).
fn without_properties(mut value: &str) -> &str {
    while value.starts_with(['&', '!']) {
        value = value
            .split_once(' ')
            .map_or("", |(_, rest)| rest)
            .trim_start();
    }
    value
}

/// `line` without its comment: a `#` at the start or after a space,
/// outside quotes.
fn without_comment(line: &str) -> &str {
    let mut flow = Flow::default();
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        if c == '#' && previous.is_whitespace() && flow.quote.is_none() {
            return &line[..i];
        }
        flow.step(c, previous);
        previous = c;
    }
    line
}

/// Brackets and quotes open so far in flow text.
#[derive(Debug, Default)]
struct Flow {
    /// `[` and `{` not closed yet.
    depth: usize,
    /// The quote of a string not closed yet.
    quote: Option<char>,
    /// The last character was a `\` inside double quotes.
    escaped: bool,
}

impl Flow {
    fn scan(&mut self, text: &str) {
        let mut previous = ' ';
        for c in text.chars() {
            if c == '#' && previous.is_whitespace() && self.quote.is_none() {
                break;
            }
            self.step(c, previous);
            previous = c;
        }
    }

    fn step(&mut self, c: char, previous: char) {
        match self.quote {
            Some('"') if self.escaped => self.escaped = false,
            Some('"') if c == '\\' => self.escaped = true,
            Some(q) if c == q => self.quote = None,
            Some(_) => {}
            // a quote opens a string only where a value starts
            None if (c == '"' || c == '\'')
                && (previous.is_whitespace()
                    || matches!(previous, ':' | '-' | '[' | '{' | ',')) =>
            {
                self.quote = Some(c)
            }
            None if c == '[' || c == '{' => self.depth += 1,
            None if c == ']' || c == '}' => self.depth = self.depth.saturating_sub(1),
            None => {}
        }
    }

    fn is_closed(&self) -> bool {
        self.depth == 0 && self.quote.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# a comment: not a key
sources:
  in:
    type: forward   # trailing: comment
    address: \"127.0.0.1:0\"
    users:
      - name: a
        password: x
      - name: b
sinks:
  \"out\":
    type: file
    program: |
      if a: b
      path: not a key
    tags: [a,
      b]
    path: /tmp/x
tests:
- name: t
  inputs:
  - source: in
- name: u
";

    #[test]
    fn keys_items_and_tables_have_their_lines() {
        let l = Lines::of(TEXT);
        assert_eq!(l.node(&["sources"]), Some(2));
        assert_eq!(l.node(&["sources", "in"]), Some(3));
        assert_eq!(l.key(&["sources", "in"], "type"), Some(4));
        assert_eq!(l.key(&["sources", "in"], "address"), Some(5));
        assert_eq!(l.node(&["sources", "in", "users", "1"]), Some(9));
        assert_eq!(l.key(&["sources", "in", "users", "0"], "password"), Some(8));
        assert_eq!(l.key(&["sources", "in"], "password"), Some(8));
        assert_eq!(l.node(&["sinks", "out"]), Some(11));
        assert_eq!(l.key(&["sinks", "out"], "path"), Some(18));
        assert_eq!(l.key(&["sinks", "out"], "if a"), None);
        assert_eq!(l.items(&["tests"]), vec![20, 23]);
        assert_eq!(l.key(&["tests", "0", "inputs", "0"], "source"), Some(22));
        assert_eq!(l.key(&[], "tests"), Some(19));
        assert_eq!(l.column(22), Some(5));
        assert_eq!(l.column(4), Some(5));
        assert_eq!(l.node(&[]), None);
    }

    #[test]
    fn quotes_and_comments_are_told_apart_from_keys() {
        assert_eq!(key("\"a: b\": 1"), Some(("a: b".to_string(), "1")));
        assert_eq!(key("'it''s': x"), Some(("it's".to_string(), "x")));
        assert_eq!(key("http://x"), None);
        assert_eq!(key("url: http://x"), Some(("url".to_string(), "http://x")));
        assert_eq!(without_comment("a: 'b # c' # d"), "a: 'b # c' ");
        assert_eq!(without_comment("a: b#c"), "a: b#c");
    }
}
