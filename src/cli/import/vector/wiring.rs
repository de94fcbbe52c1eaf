//! Vector's graph as tags. Each source tags its records with its id;
//! records entering a transform are given the transform's id as their tag
//! (a `remap` setting `%tag`), its filters match that tag, and what comes
//! out carries it on; a route's outputs are tagged `ROUTE.PORT`. Where an
//! output feeds several transforms, or a transform and a sink, the record
//! is copied, once per reader (a `remap` making `.` an array of copies,
//! each marked with its reader, then a `rewrite_tag` on the mark). Sinks
//! match the tags of their inputs. Filters run in file order, and the
//! transforms are written after their inputs, so every record meets the
//! filters Vector would pass it through, in Vector's order, and no other.

use super::super::model::{vrl_str, Component, Imported, Kind, Value};

/// The field a copy carries its reader's tag in, between the copy and
/// the retag; removed right after.
pub const MARK: &str = "__logferry_to";

/// Filters that move records along the graph, collected in file order.
pub struct Wiring<'a> {
    pub imported: &'a mut Imported,
}

impl Wiring<'_> {
    /// A filter of `type_` named after `wanted`, matching `tags`.
    pub fn filter(
        &mut self,
        wanted: &str,
        type_: &str,
        tags: &[String],
        origin: &str,
    ) -> Component {
        let name = self.imported.unique_name(Kind::Filter, wanted);
        let mut c = Component::new(Kind::Filter, &name, type_, origin.to_string());
        c.set("match", pattern(tags));
        c
    }

    pub fn push(&mut self, c: Component) {
        self.imported.components.push(c);
    }

    /// Sends the records tagged `tags` (the output `output`) on to the
    /// transforms `readers` (their ids, the tags they take records under),
    /// keeping them under their tags too when `keep` (a sink reads them);
    /// `first`, a VRL program, runs on them before (in the same filter).
    pub fn deliver(
        &mut self,
        output: &str,
        tags: &[String],
        readers: &[String],
        keep: bool,
        first: Option<(&str, &str)>,
    ) {
        if tags.is_empty() {
            return;
        }
        let (first, first_origin) = match first {
            Some((program, origin)) => (format!("{program}\n"), origin.to_string()),
            None => (String::new(), String::new()),
        };
        let origin = if readers.is_empty() {
            first_origin
        } else {
            let read = format!("the output {output} read by {}", readers.join(", "));
            if first_origin.is_empty() {
                read
            } else {
                format!("{first_origin}; {read}")
            }
        };
        if readers.is_empty() || (readers.len() == 1 && !keep) {
            if readers.is_empty() && first.is_empty() {
                return;
            }
            let wanted = match readers.first() {
                Some(r) => format!("{output}_to_{r}"),
                None => format!("{output}_fields"),
            };
            let mut c = self.filter(&wanted, "remap", tags, &origin);
            let retag = readers
                .first()
                .map(|r| format!("%tag = {}", vrl_str(r)))
                .unwrap_or_default();
            c.set("source", format!("{first}{retag}").trim_end().to_string());
            self.push(c);
            return;
        }
        let mut copies: Vec<String> = Vec::new();
        if keep {
            copies.push(format!("merge(., {{ {}: %tag }})", vrl_str(MARK)));
        }
        for r in readers {
            copies.push(format!("merge(., {{ {}: {} }})", vrl_str(MARK), vrl_str(r)));
        }
        self.split(
            output,
            tags,
            &origin,
            format!("{first}. = [{}]", copies.join(", ")),
            readers,
        );
    }

    /// A `remap` running `program` (which makes `.` an array of copies,
    /// each marked with the tag it goes on under), the retag on the mark,
    /// and the mark's removal from the copies tagged `tags` or `new_tags`.
    pub fn split(
        &mut self,
        output: &str,
        tags: &[String],
        origin: &str,
        program: String,
        new_tags: &[String],
    ) {
        let mut copy = self.filter(&format!("{output}_copy"), "remap", tags, origin);
        copy.set("source", program);
        copy.set("drop_on_error", Value::Bool(true));
        self.push(copy);
        let mut retag = self.filter(&format!("{output}_retag"), "rewrite_tag", tags, origin);
        let rule = vec![
            ("field".to_string(), Value::from(MARK)),
            ("regex".to_string(), Value::from("^(.+)$")),
            ("tag".to_string(), Value::from("$1")),
        ];
        retag.set("rules", Value::List(vec![Value::Map(rule)]));
        self.push(retag);
        let all: Vec<String> = tags.iter().chain(new_tags).cloned().collect();
        let mut unmark = self.filter(&format!("{output}_unmark"), "remap", &all, origin);
        unmark.set("source", format!("del(.{MARK})"));
        self.push(unmark);
    }
}

/// A `match` pattern taking exactly `tags`.
pub fn pattern(tags: &[String]) -> String {
    let mut unique: Vec<&String> = Vec::new();
    for t in tags {
        if !unique.contains(&t) {
            unique.push(t);
        }
    }
    unique
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A tag from a Vector id: its characters other than letters, digits,
/// `_`, `-` and `.` (a port's separator) written `_`, so no id reads as a
/// pattern (`*`, `{a,b}`) or splits into alternatives.
pub fn tag_of(id: &str) -> String {
    let t: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() {
        "_".into()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_and_tags() {
        assert_eq!(pattern(&["a".into(), "b.c".into(), "a".into()]), "a b.c");
        assert_eq!(tag_of("app web*"), "app_web_");
        assert_eq!(tag_of("split.errors"), "split.errors");
        assert_eq!(vrl_str("a\"b"), "\"a\\\"b\"");
    }
}
