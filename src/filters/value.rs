//! Values a filter writes into records: text with `${tag}`, `${tag[N]}`
//! (the Nth part of the tag, from 0) and `${hostname}`. Environment
//! variables (`${VAR}`) were already substituted when the file was read.

/// One piece of a value.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Tag,
    TagPart(usize),
    Hostname,
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
        Ok(ValueTemplate(pieces))
    }

    /// The value for a record of tag `tag`; a tag part past the last is
    /// empty.
    pub fn render(&self, tag: &str, hostname: &str) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Tag => out.push_str(tag),
                Piece::TagPart(n) => out.push_str(tag.split('.').nth(*n).unwrap_or("")),
                Piece::Hostname => out.push_str(hostname),
            }
        }
        out
    }
}
