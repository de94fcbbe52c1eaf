//! Values a filter writes into records: text with `${tag}`, `${tag[N]}`
//! (the Nth part of the tag, from 0) and `${hostname}`, and for a new tag
//! also `$1`…`$9`, a regex's captures. Environment variables (`${VAR}`)
//! were already substituted when the file was read.

/// One piece of a value.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Tag,
    TagPart(usize),
    Hostname,
    /// `$N`: the Nth capture group of a rule's regex.
    Capture(usize),
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueTemplate(Vec<Piece>);

impl ValueTemplate {
    /// Reads `text`; a `${...}` other than the three above is an error.
    ///
    /// ```
    /// use logferry::filters::value::ValueTemplate;
    ///
    /// let v = ValueTemplate::parse("${tag[1]} on ${tag}").unwrap();
    /// assert_eq!(v.render("app.web", "h"), "web on app.web");
    /// assert!(ValueTemplate::parse("${nope}").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<ValueTemplate, String> {
        let template = Self::parse_with_captures(text)?;
        if template.0.iter().any(|p| matches!(p, Piece::Capture(_))) {
            // `$1` is text here: put it back as it was written
            let pieces = template
                .0
                .into_iter()
                .map(|p| match p {
                    Piece::Capture(n) => Piece::Text(format!("${n}")),
                    p => p,
                })
                .collect();
            return Ok(ValueTemplate(pieces));
        }
        Ok(template)
    }

    /// Like [`ValueTemplate::parse`], with `$1`…`$9` standing for a
    /// regex's captures (see [`ValueTemplate::render_with`]).
    pub fn parse_with_captures(text: &str) -> Result<ValueTemplate, String> {
        let mut pieces = Vec::new();
        for (i, part) in text.split('$').enumerate() {
            // `$` followed by a digit: a capture; the rest is parsed below
            let digit = part
                .as_bytes()
                .first()
                .filter(|c| c.is_ascii_digit() && i > 0);
            if let Some(d) = digit {
                pieces.push(Piece::Capture(usize::from(d - b'0')));
                pieces.extend(Self::placeholders(&part[1..])?);
            } else if i > 0 {
                pieces.extend(Self::placeholders(&format!("${part}"))?);
            } else {
                pieces.extend(Self::placeholders(part)?);
            }
        }
        // adjacent text pieces come from splitting: join them
        let mut joined: Vec<Piece> = Vec::new();
        for p in pieces {
            match (joined.last_mut(), p) {
                (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
                (_, p) => joined.push(p),
            }
        }
        Ok(ValueTemplate(joined))
    }

    /// The pieces of `text`, which holds no capture.
    fn placeholders(text: &str) -> Result<Vec<Piece>, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err(format!("{text:?}: `${{` without a closing `}}`"));
            };
            let name = &after[..end];
            pieces.push(match name {
                "tag" => Piece::Tag,
                "hostname" => Piece::Hostname,
                _ => match name
                    .strip_prefix("tag[")
                    .and_then(|n| n.strip_suffix(']'))
                    .and_then(|n| n.parse().ok())
                {
                    Some(n) => Piece::TagPart(n),
                    None => {
                        return Err(format!(
                        "{text:?}: unknown placeholder `${{{name}}}` (known: ${{tag}}, ${{tag[N]}}, ${{hostname}}, and environment variables)"
                    ))
                    }
                },
            });
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(pieces)
    }

    /// Whether the value can be empty: every piece can (`${tag[N]}` past
    /// a tag's last part, `$N` where `capture_may_be_empty(N)` says the
    /// capture can be empty or missing); text, `${tag}` and `${hostname}`
    /// never are.
    pub fn may_be_empty(&self, capture_may_be_empty: impl Fn(usize) -> bool) -> bool {
        self.0.iter().all(|p| match p {
            Piece::Text(t) => t.is_empty(),
            Piece::Tag | Piece::Hostname => false,
            Piece::TagPart(_) => true,
            Piece::Capture(n) => capture_may_be_empty(*n),
        })
    }

    /// The captures `$N` the value names.
    pub fn captures(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().filter_map(|p| match p {
            Piece::Capture(n) => Some(*n),
            _ => None,
        })
    }

    /// The value for a record of tag `tag`; a tag part past the last is
    /// empty.
    pub fn render(&self, tag: &str, hostname: &str) -> String {
        self.render_with(tag, hostname, &[])
    }

    /// Like [`ValueTemplate::render`], `$N` taking the Nth of `captures`
    /// (empty when there is none; not UTF-8 is replaced).
    pub fn render_with(&self, tag: &str, hostname: &str, captures: &[Option<&[u8]>]) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Tag => out.push_str(tag),
                Piece::TagPart(n) => out.push_str(tag.split('.').nth(*n).unwrap_or("")),
                Piece::Hostname => out.push_str(hostname),
                Piece::Capture(n) => {
                    if let Some(Some(c)) = captures.get(*n) {
                        out.push_str(&String::from_utf8_lossy(c));
                    }
                }
            }
        }
        out
    }
}
