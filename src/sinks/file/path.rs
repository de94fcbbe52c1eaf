//! Output paths with `${tag}`, `${tag[N]}` and strftime placeholders.

use std::fmt::Write as _;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, Local};

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// Text, possibly with strftime sequences.
    Text(String),
    Tag,
    TagPart(usize),
}

/// A parsed `path` setting.
#[derive(Debug, Clone)]
pub struct PathTemplate {
    pieces: Vec<Piece>,
    /// True if any text piece has a `%` sequence.
    timed: bool,
}

impl PathTemplate {
    pub fn parse(path: &str) -> Result<Self, String> {
        if path.trim().is_empty() {
            return Err("path must not be empty".into());
        }
        let mut pieces = Vec::new();
        let mut rest = path;
        while let Some(i) = rest.find("${tag") {
            let after = &rest[i + 5..];
            let (piece, len) = if after.starts_with('}') {
                (Piece::Tag, 6)
            } else if let Some(inner) = after.strip_prefix('[') {
                let close = inner
                    .find("]}")
                    .ok_or_else(|| format!("path {path:?}: `${{tag[` needs `]}}`"))?;
                let n = inner[..close]
                    .parse()
                    .map_err(|_| format!("path {path:?}: `${{tag[N]}}` needs a number N"))?;
                (Piece::TagPart(n), 5 + 1 + close + 2)
            } else {
                return Err(format!(
                    "path {path:?}: unknown placeholder (use ${{tag}} or ${{tag[N]}})"
                ));
            };
            if i > 0 {
                pieces.push(Piece::Text(rest[..i].to_string()));
            }
            pieces.push(piece);
            rest = &rest[i + len..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        let mut timed = false;
        for p in &pieces {
            if let Piece::Text(t) = p {
                if t.contains('%') {
                    if StrftimeItems::new(t).any(|i| matches!(i, Item::Error)) {
                        return Err(format!("path {path:?}: invalid strftime sequence"));
                    }
                    timed = true;
                }
            }
        }
        Ok(PathTemplate { pieces, timed })
    }

    /// True if every record goes to the same path.
    pub fn is_static(&self) -> bool {
        !self.timed && self.pieces.iter().all(|p| matches!(p, Piece::Text(_)))
    }

    /// The path for a record with `tag`, written at `now`. Tag text is
    /// inserted with `/` replaced by `_`, so a tag cannot leave the
    /// configured directory.
    pub fn render(&self, tag: &str, now: &DateTime<Local>) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) if self.timed && t.contains('%') => {
                    let _ = write!(out, "{}", now.format(t));
                }
                Piece::Text(t) => out.push_str(t),
                Piece::Tag => push_safe(&mut out, tag),
                Piece::TagPart(n) => push_safe(&mut out, tag.split('.').nth(*n).unwrap_or("")),
            }
        }
        out
    }
}

fn push_safe(out: &mut String, s: &str) {
    out.extend(
        s.chars()
            .map(|c| if c == '/' || c == '\0' { '_' } else { c }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn renders_tags_parts_and_dates() {
        let now = Local.with_ymd_and_hms(2026, 11, 22, 1, 2, 3).unwrap();
        let t = PathTemplate::parse("/logs/%Y/${tag[1]}/${tag}.log").unwrap();
        assert!(!t.is_static());
        assert_eq!(t.render("app.web", &now), "/logs/2026/web/app.web.log");
        assert_eq!(t.render("x", &now), "/logs/2026//x.log");
        assert!(PathTemplate::parse("/a/unified.log").unwrap().is_static());
    }

    #[test]
    fn tags_cannot_escape_the_directory() {
        let now = Local::now();
        let t = PathTemplate::parse("/logs/${tag}.log").unwrap();
        assert_eq!(
            t.render("../../etc/passwd", &now),
            "/logs/.._.._etc_passwd.log"
        );
        // a tag full of % signs is not a strftime pattern
        assert_eq!(t.render("%Q%n", &now), "/logs/%Q%n.log");
    }

    #[test]
    fn bad_placeholders_are_errors() {
        assert!(PathTemplate::parse("/a/${tags}.log").is_err());
        assert!(PathTemplate::parse("/a/${tag[x]}.log").is_err());
        assert!(PathTemplate::parse("/a/%Q.log").is_err());
        assert!(PathTemplate::parse("").is_err());
    }
}
