//! Line templates: `{time}`, `{tag}`, `{host}`, `{message}` and any
//! top-level record field by name; `{{` and `}}` are literal braces.
//! A missing field renders as nothing; a non-string field as JSON.
//! `{message}` is exactly what the `raw` format writes for the record
//! ([`super::write_message`]).

use super::time::TimeFormat;
use crate::event::{EventTime, RecordRef};

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Literal(Vec<u8>),
    Time,
    Tag,
    Host,
    /// `{message}`: the record's message as `raw` writes it.
    Message,
    Field(Vec<u8>),
}

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut lit = Vec::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|p| p.1) == Some('{') => {
                    chars.next();
                    lit.push(b'{');
                }
                '}' if chars.peek().map(|p| p.1) == Some('}') => {
                    chars.next();
                    lit.push(b'}');
                }
                '{' => {
                    let rest = &text[i + 1..];
                    let end = rest
                        .find('}')
                        .ok_or_else(|| format!("template: `{{` at byte {i} has no closing `}}` (write `{{{{` for a literal brace)"))?;
                    let name = rest[..end].trim();
                    if name.is_empty() {
                        return Err(format!("template: empty placeholder at byte {i}"));
                    }
                    if !lit.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut lit)));
                    }
                    pieces.push(match name {
                        "time" => Piece::Time,
                        "tag" => Piece::Tag,
                        "host" => Piece::Host,
                        "message" => Piece::Message,
                        field => Piece::Field(field.as_bytes().to_vec()),
                    });
                    for _ in 0..rest[..=end].chars().count() {
                        chars.next();
                    }
                }
                '}' => {
                    return Err(format!(
                        "template: unmatched `}}` at byte {i} (write `}}}}` for a literal brace)"
                    ))
                }
                c => {
                    let mut b = [0; 4];
                    lit.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                }
            }
        }
        if !lit.is_empty() {
            pieces.push(Piece::Literal(lit));
        }
        Ok(Template { pieces })
    }

    /// Appends the rendered template (without a newline).
    pub fn render(
        &self,
        out: &mut Vec<u8>,
        tag: &str,
        time: EventTime,
        rec: RecordRef<'_>,
        host: &str,
        time_format: &mut TimeFormat,
    ) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(l) => out.extend_from_slice(l),
                Piece::Time => time_format.write(out, time),
                Piece::Tag => out.extend_from_slice(tag.as_bytes()),
                Piece::Host => out.extend_from_slice(host.as_bytes()),
                Piece::Message => super::write_message(rec, out),
                // a line record has no field but its message
                Piece::Field(name) => {
                    if let Some(raw) = rec.field_raw(name) {
                        super::write_value_text(out, raw);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_placeholders_and_escapes() {
        let t = Template::parse("{{x}} {time} {tag}:{ host }{message}{user_id}").unwrap();
        assert_eq!(
            t.pieces,
            vec![
                Piece::Literal(b"{x} ".to_vec()),
                Piece::Time,
                Piece::Literal(b" ".to_vec()),
                Piece::Tag,
                Piece::Literal(b":".to_vec()),
                Piece::Host,
                Piece::Message,
                Piece::Field(b"user_id".to_vec()),
            ]
        );
        assert!(Template::parse("{oops").is_err());
        assert!(Template::parse("a}b").is_err());
        assert!(Template::parse("{}").is_err());
    }

    #[test]
    fn renders_lines_and_numbers() {
        let t = Template::parse("[{tag}] {message} n={n}").unwrap();
        let mut tf = TimeFormat::new(None).unwrap();
        let mut out = Vec::new();
        t.render(
            &mut out,
            "a",
            EventTime::default(),
            RecordRef::Line(b"hi"),
            "h",
            &mut tf,
        );
        assert_eq!(out, b"[a] hi n=");
        let rec = [0x81, 0xa1, b'n', 0x2a];
        out.clear();
        t.render(
            &mut out,
            "a",
            EventTime::default(),
            RecordRef::Map(&rec),
            "h",
            &mut tf,
        );
        // no message field: `{message}` is the record as JSON, as in raw
        assert_eq!(out, b"[a] {\"n\":42} n=42");
    }

    #[test]
    fn renders_floats_as_json_does() {
        let t = Template::parse("n={n}").unwrap();
        let mut tf = TimeFormat::new(None).unwrap();
        let f64s = [
            (2.0, "n=2.0"),
            (1e16, "n=1e16"),
            (-0.0, "n=-0.0"),
            (1.79e308, "n=1.79e308"),
            (5e-324, "n=5e-324"),
            (f64::NAN, "n=null"),
            (f64::INFINITY, "n=null"),
        ];
        let f32s = [(0.1f32, "n=0.1"), (f32::NEG_INFINITY, "n=null")];
        let records = f64s
            .iter()
            .map(|(f, want)| {
                let mut rec = vec![0x81, 0xa1, b'n', 0xcb];
                rec.extend_from_slice(&f64::to_bits(*f).to_be_bytes());
                (rec, *want)
            })
            .chain(f32s.iter().map(|(f, want)| {
                let mut rec = vec![0x81, 0xa1, b'n', 0xca];
                rec.extend_from_slice(&f32::to_bits(*f).to_be_bytes());
                (rec, *want)
            }));
        for (rec, want) in records {
            let mut out = Vec::new();
            t.render(
                &mut out,
                "a",
                EventTime::default(),
                RecordRef::Map(&rec),
                "h",
                &mut tf,
            );
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }
}
