//! The `otlp` source's `tag`: a template rendered once per `ResourceLogs`
//! from its resource attributes (`otel.${resource.service.name}`).

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;

use crate::event::Tag;

/// What stands in for a resource attribute a resource lacks (or one that
/// is empty or not a scalar), so a tag never has an empty part.
pub const MISSING: &str = "_";

/// A parsed `tag` template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagTemplate {
    /// Literal text and placeholders, in order.
    parts: Vec<Part>,
    /// The tag when the template has no placeholder: shared, not rebuilt.
    fixed: Option<Tag>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// `${resource.KEY}`: KEY may hold dots (`service.name`).
    Resource(String),
}

/// Why a `tag` template cannot be used; shown at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagTemplateError {
    #[error("`${{` without a closing `}}` in tag {0:?}")]
    Unclosed(String),
    #[error("unknown placeholder `${{{0}}}` in tag: use `${{resource.KEY}}` (for example `${{resource.service.name}}`)")]
    Unknown(String),
    #[error("tag is empty")]
    Empty,
}

impl TagTemplate {
    pub fn parse(text: &str) -> Result<Self, TagTemplateError> {
        if text.is_empty() {
            return Err(TagTemplateError::Empty);
        }
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find("${") {
            if i > 0 {
                parts.push(Part::Text(rest[..i].to_string()));
            }
            let after = &rest[i + 2..];
            let close = after
                .find('}')
                .ok_or_else(|| TagTemplateError::Unclosed(text.to_string()))?;
            let expr = &after[..close];
            match expr.strip_prefix("resource.") {
                Some(key) if !key.is_empty() => parts.push(Part::Resource(key.to_string())),
                _ => return Err(TagTemplateError::Unknown(expr.to_string())),
            }
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        let fixed = match parts.as_slice() {
            [Part::Text(t)] => Some(Tag::from(t.as_str())),
            _ => None,
        };
        Ok(TagTemplate { parts, fixed })
    }

    /// The tag of the records of a resource with these attributes.
    pub fn render(&self, resource: &[KeyValue]) -> Tag {
        if let Some(t) = &self.fixed {
            return t.clone();
        }
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Resource(key) => {
                    let value = resource
                        .iter()
                        .find(|kv| kv.key == *key)
                        .and_then(|kv| kv.value.as_ref()?.value.as_ref());
                    match value {
                        Some(Any::StringValue(s)) if !s.is_empty() => out.push_str(s),
                        Some(Any::IntValue(i)) => out.push_str(&i.to_string()),
                        Some(Any::BoolValue(b)) => out.push_str(&b.to_string()),
                        Some(Any::DoubleValue(d)) => out.push_str(&d.to_string()),
                        _ => out.push_str(MISSING),
                    }
                }
            }
        }
        out.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::AnyValue;

    fn kv(k: &str, v: &str) -> KeyValue {
        KeyValue {
            key: k.into(),
            value: Some(AnyValue {
                value: Some(Any::StringValue(v.into())),
            }),
        }
    }

    #[test]
    fn renders_resource_attributes_with_dots_in_their_names() {
        let t = TagTemplate::parse("otel.${resource.service.name}").unwrap();
        assert_eq!(&*t.render(&[kv("service.name", "web")]), "otel.web");
        assert_eq!(&*t.render(&[]), "otel._", "missing: `_`");
        assert_eq!(
            &*t.render(&[kv("service.name", "")]),
            "otel._",
            "empty: `_`"
        );
        let t = TagTemplate::parse("otel").unwrap();
        assert_eq!(&*t.render(&[kv("service.name", "web")]), "otel");
    }

    #[test]
    fn refuses_unknown_placeholders() {
        assert!(TagTemplate::parse("a.${record.x}").is_err());
        assert!(TagTemplate::parse("a.${resource.}").is_err());
        assert!(TagTemplate::parse("a.${resource.x").is_err());
        assert!(TagTemplate::parse("").is_err());
    }
}
