//! Fluentd's configuration syntax (v1): `<directive arg>` … `</directive>`
//! sections, `key value` lines, `"…"` strings with escapes and embedded
//! Ruby, `'…'` literal strings, multi-line JSON arrays and hashes, `#`
//! comments and `@include` (relative paths and globs), read into a tree of
//! [`Element`]s. Included files' elements take the place of the `@include`.

use std::path::{Path, PathBuf};

use super::super::ImportError;

/// Deepest nesting of sections, and of includes, read: deeper input is an
/// error, never a stack overflow.
const MAX_DEPTH: usize = 64;

/// One `<name arg>` section, or the file itself (the root, named "").
#[derive(Debug, Clone, Default)]
pub struct Element {
    /// `source`, `match`, `filter`, `label`, `parse`, `store`, …
    pub name: String,
    /// What follows the name in the header: the tag pattern of a `<match>`,
    /// the label of a `<label>`, `tls` of `<transport tls>`.
    pub arg: String,
    /// Its `key value` lines, in file order.
    pub attrs: Vec<Attr>,
    /// Its sections, in file order.
    pub elements: Vec<Element>,
    /// The file it was read from, for origin comments and errors.
    pub file: String,
    /// Its header's line.
    pub line: usize,
}

/// One `key value` line.
#[derive(Debug, Clone)]
pub struct Attr {
    pub key: String,
    /// The value, quotes and escapes undone, `#{ENV['X']}` made `${X}`.
    pub value: String,
    /// Embedded Ruby other than `ENV['X']` (`#{Socket.gethostname}`): the
    /// code, which logferry cannot evaluate.
    pub ruby: Option<String>,
    pub line: usize,
}

impl Element {
    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.key == key)
            .map(|a| a.value.as_str())
    }

    /// The sections named `name`.
    pub fn children<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.elements.iter().filter(move |e| e.name == name)
    }

    /// `<source> @type tail (td-agent.conf:12)`.
    pub fn origin(&self) -> String {
        let head = if self.arg.is_empty() {
            format!("<{}>", self.name)
        } else {
            format!("<{} {}>", self.name, self.arg)
        };
        match self.get("@type") {
            Some(t) => format!("{head} @type {t} ({}:{})", self.file, self.line),
            None => format!("{head} ({}:{})", self.file, self.line),
        }
    }
}

/// Reads the file at `path` and what it includes.
pub fn load(path: &Path) -> Result<Element, ImportError> {
    let mut root = Element {
        file: path.display().to_string(),
        ..Element::default()
    };
    let mut included = Vec::new();
    read_into(path, &mut root, 0, &mut included)?;
    Ok(root)
}

fn read_into(
    path: &Path,
    into: &mut Element,
    depth: usize,
    included: &mut Vec<PathBuf>,
) -> Result<(), ImportError> {
    let file = path.display().to_string();
    if depth > MAX_DEPTH {
        return Err(ImportError::Invalid {
            file,
            line: 0,
            message: "@include nested too deep (an include loop?)".into(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| ImportError::Read {
        file: file.clone(),
        error: e.to_string(),
    })?;
    let mut parser = Parser {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        file,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        depth,
        included,
    };
    parser.body(into, 0)?;
    Ok(())
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    file: String,
    /// Where relative `@include`s are looked for.
    dir: PathBuf,
    /// Include depth of this file.
    depth: usize,
    included: &'a mut Vec<PathBuf>,
}

impl Parser<'_> {
    fn error(&self, line: usize, message: impl Into<String>) -> ImportError {
        ImportError::Invalid {
            file: self.file.clone(),
            line,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(self.pos + i).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// Spaces, tabs, line ends and `#` comments.
    fn skip_blank(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.bump();
            } else if c == '#' {
                self.skip_line();
            } else {
                break;
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.bump() {
            if c == '\n' {
                break;
            }
        }
    }

    /// What is left of the line must be blank or a comment.
    fn end_of_line(&mut self, what: &str) -> Result<(), ImportError> {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' => {
                    self.bump();
                }
                '\n' => {
                    self.bump();
                    return Ok(());
                }
                '#' => {
                    self.skip_line();
                    return Ok(());
                }
                _ => return Err(self.error(self.line, format!("unexpected text after {what}"))),
            }
        }
        Ok(())
    }

    /// The keys and sections of `el` up to its `</name>` (or the end of
    /// the file, for the root).
    fn body(&mut self, el: &mut Element, nesting: usize) -> Result<(), ImportError> {
        loop {
            self.skip_blank();
            let line = self.line;
            let Some(c) = self.peek() else {
                if el.name.is_empty() || nesting == 0 {
                    return Ok(());
                }
                return Err(self.error(el.line, format!("<{}> is not closed", el.name)));
            };
            if c == '<' && self.at(1) == Some('/') {
                self.pos += 2;
                let name = self.until_gt(line)?;
                if nesting == 0 || name.trim() != el.name {
                    return Err(self.error(line, format!("unmatched </{}>", name.trim())));
                }
                self.end_of_line("a closing tag")?;
                return Ok(());
            }
            if c == '<' {
                self.bump();
                let header = self.until_gt(line)?;
                self.end_of_line("a section header")?;
                let header = header.trim();
                let (name, arg) = header
                    .split_once(char::is_whitespace)
                    .unwrap_or((header, ""));
                if name.is_empty() {
                    return Err(self.error(line, "a section without a name"));
                }
                if nesting >= MAX_DEPTH {
                    return Err(self.error(line, "sections nested too deep"));
                }
                let mut child = Element {
                    name: name.to_string(),
                    arg: arg.trim().to_string(),
                    file: self.file.clone(),
                    line,
                    ..Element::default()
                };
                self.body(&mut child, nesting + 1)?;
                el.elements.push(child);
                continue;
            }
            let key = self.word();
            let (value, ruby) = self.value()?;
            if key == "@include" || key == "include" {
                self.include(&value, line, el)?;
            } else {
                el.attrs.push(Attr {
                    key,
                    value,
                    ruby,
                    line,
                });
            }
        }
    }

    /// Up to the `>` closing a header, on the same line.
    fn until_gt(&mut self, line: usize) -> Result<String, ImportError> {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.bump();
            if c == '>' {
                return Ok(s);
            }
            s.push(c);
        }
        Err(self.error(line, "a section header without its closing `>`"))
    }

    fn word(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                break;
            }
            s.push(c);
            self.bump();
        }
        s
    }

    /// A key's value, to the end of its line (or of its string or JSON
    /// value, which may span lines).
    fn value(&mut self) -> Result<(String, Option<String>), ImportError> {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.bump();
        }
        let line = self.line;
        match self.peek() {
            Some('"') => {
                self.bump();
                let v = self.double_quoted(line)?;
                self.end_of_line("a quoted value")?;
                Ok(v)
            }
            Some('\'') => {
                self.bump();
                let v = self.single_quoted(line)?;
                self.end_of_line("a quoted value")?;
                Ok((v, None))
            }
            Some('[' | '{') => {
                let v = self.json(line)?;
                self.end_of_line("a JSON value")?;
                Ok((json_env(&v), None))
            }
            _ => Ok((self.unquoted(), None)),
        }
    }

    /// To the line's end or a `#` after a space (a comment), trimmed.
    fn unquoted(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if c == '\n' {
                self.bump();
                break;
            }
            if c == '#' && s.ends_with([' ', '\t']) {
                self.skip_line();
                break;
            }
            s.push(c);
            self.bump();
        }
        s.trim().to_string()
    }

    fn double_quoted(&mut self, line: usize) -> Result<(String, Option<String>), ImportError> {
        let mut s = String::new();
        let mut ruby = None;
        loop {
            let Some(c) = self.bump() else {
                return Err(self.error(line, "a string without its closing `\"`"));
            };
            match c {
                '"' => return Ok((s, ruby)),
                '\\' => {
                    let Some(e) = self.bump() else { continue };
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'f' => '\u{c}',
                        'b' => '\u{8}',
                        '0' => '\0',
                        's' => ' ',
                        other => other,
                    });
                }
                '#' if self.peek() == Some('{') => {
                    self.bump();
                    let code = self.ruby_code(line)?;
                    match env_name(&code) {
                        Some(name) => {
                            s.push_str("${");
                            s.push_str(&name);
                            s.push('}');
                        }
                        None => {
                            s.push_str("#{");
                            s.push_str(&code);
                            s.push('}');
                            ruby = Some(code);
                        }
                    }
                }
                c => s.push(c),
            }
        }
    }

    /// The code of `#{…}` up to its closing brace (braces inside nest).
    fn ruby_code(&mut self, line: usize) -> Result<String, ImportError> {
        let mut code = String::new();
        let mut depth = 0usize;
        loop {
            let Some(c) = self.bump() else {
                return Err(self.error(line, "embedded Ruby `#{` without its closing `}`"));
            };
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => return Ok(code.trim().to_string()),
                '}' => depth -= 1,
                _ => {}
            }
            code.push(c);
        }
    }

    fn single_quoted(&mut self, line: usize) -> Result<String, ImportError> {
        let mut s = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.error(line, "a string without its closing `'`"));
            };
            match c {
                '\'' => return Ok(s),
                '\\' if matches!(self.peek(), Some('\'' | '\\')) => {
                    if let Some(e) = self.bump() {
                        s.push(e);
                    }
                }
                c => s.push(c),
            }
        }
    }

    /// A JSON array or hash, which may span lines: its text, as written.
    fn json(&mut self, line: usize) -> Result<String, ImportError> {
        let mut s = String::new();
        let mut depth = 0usize;
        let mut in_string = false;
        loop {
            let Some(c) = self.bump() else {
                return Err(self.error(line, "a JSON value without its closing bracket"));
            };
            s.push(c);
            if in_string {
                match c {
                    '\\' => {
                        if let Some(e) = self.bump() {
                            s.push(e);
                        }
                    }
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '[' | '{' => depth += 1,
                ']' | '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(s);
                    }
                }
                _ => {}
            }
        }
    }

    /// `@include PATH`: relative to this file, a glob read in name order.
    fn include(&mut self, value: &str, line: usize, into: &mut Element) -> Result<(), ImportError> {
        if value.contains("://") {
            into.attrs.push(Attr {
                key: "@include".into(),
                value: value.to_string(),
                ruby: Some("an include read over the network".into()),
                line,
            });
            return Ok(());
        }
        let pattern = if Path::new(value).is_absolute() {
            PathBuf::from(value)
        } else {
            self.dir.join(value)
        };
        let mut files: Vec<PathBuf> = if value.contains(['*', '?', '[']) {
            glob::glob(&pattern.to_string_lossy())
                .map_err(|e| self.error(line, format!("@include {value}: {e}")))?
                .filter_map(Result::ok)
                .filter(|p| p.is_file())
                .collect()
        } else {
            vec![pattern]
        };
        files.sort();
        for f in files {
            if self.included.iter().filter(|p| **p == f).count() > MAX_DEPTH {
                return Err(self.error(line, format!("@include {}: an include loop", f.display())));
            }
            self.included.push(f.clone());
            read_into(&f, into, self.depth + 1, self.included).map_err(|e| match e {
                ImportError::Read { file, error } => {
                    self.error(line, format!("@include {file}: {error}"))
                }
                e => e,
            })?;
        }
        Ok(())
    }
}

/// `#{ENV['X']}` inside a JSON value's strings as `${X}` (Fluentd
/// evaluates them there too).
fn json_env(v: &str) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(start) = rest.find("#{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after
            .find('}')
            .and_then(|end| Some((end, env_name(after[..end].trim())?)))
        {
            Some((end, name)) => {
                out.push_str(&format!("${{{name}}}"));
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("#{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `ENV['X']`, `ENV["X"]`: the name X.
fn env_name(code: &str) -> Option<String> {
    let inner = code.strip_prefix("ENV[")?.strip_suffix(']')?.trim();
    let name = inner
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| name.to_string())
}

/// Parses `text` as the file `name` (no includes are read): what the fuzz
/// target drives.
pub fn parse_text(text: &str) -> Result<Element, ImportError> {
    let mut included = Vec::new();
    let mut parser = Parser {
        chars: text.chars().collect(),
        pos: 0,
        line: 1,
        file: "(text)".into(),
        dir: PathBuf::from("/nonexistent"),
        depth: MAX_DEPTH,
        included: &mut included,
    };
    let mut root = Element::default();
    parser.body(&mut root, 0)?;
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keys_strings_and_comments() {
        let root = parse_text(
            "# c\n<source>\n  @type tail\n  path /a/*.log # trailing\n  tag \"app.#{ENV['X']}\\n\"\n  v 'it\\'s'\n  h {\"a\": [1,\n 2]}\n  <parse>\n    @type none\n  </parse>\n</source>\n<match a.** b>\n  x #{Socket.gethostname}\n  y \"#{Socket.gethostname}\"\n</match>\n",
        )
        .unwrap();
        let src = &root.elements[0];
        assert_eq!(src.get("@type"), Some("tail"));
        assert_eq!(src.get("path"), Some("/a/*.log"));
        assert_eq!(src.get("tag"), Some("app.${X}\n"));
        assert_eq!(src.get("v"), Some("it's"));
        assert_eq!(src.get("h"), Some("{\"a\": [1,\n 2]}"));
        assert_eq!(src.elements[0].name, "parse");
        let m = &root.elements[1];
        assert_eq!(m.arg, "a.** b");
        assert_eq!(m.get("x"), Some("#{Socket.gethostname}"));
        assert!(m.attrs[1].ruby.is_some());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_text("<source>\n @type tail\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":1: <source> is not closed"), "{e}");
        let e = parse_text("<a>\n</b>\n").unwrap_err().to_string();
        assert!(e.contains(":2: unmatched </b>"), "{e}");
        let e = parse_text("<a>\n k \"open\n").unwrap_err().to_string();
        assert!(e.contains(":2: a string without"), "{e}");
        assert!(parse_text("</a>").is_err());
        assert!(parse_text("<").is_err());
        assert!(parse_text(&"<a>\n".repeat(100)).is_err());
    }
}
