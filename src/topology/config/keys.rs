//! The keys a config struct accepts, as serde sees them.
//!
//! A derived `Deserialize` for a struct calls `deserialize_struct(name,
//! FIELDS, visitor)`, where `FIELDS` lists every key it recognises (after
//! `rename`, aliases included). With `deny_unknown_fields` that is exactly
//! the set of keys a user may write. [`keys_of`] hands a struct a
//! deserializer that records that list and stops, so tests can compare it
//! with the documentation and the examples.

use std::fmt;

use serde::de::{self, Deserialize, Visitor};

/// The keys `T` accepts. Panics if `T` is not deserialized as a struct
/// (a map, an enum or a custom implementation that never calls
/// `deserialize_struct`).
pub fn keys_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    match T::deserialize(KeyProbe) {
        Err(Probed::Struct(fields)) => fields,
        Err(Probed::Other(what)) => panic!(
            "{} is not deserialized as a struct ({what})",
            std::any::type_name::<T>()
        ),
        Ok(_) => unreachable!("the probe never yields a value"),
    }
}

/// The component types the loader knows under `[sources]` or `[sinks]`
/// (`kind`), from the error it gives for an unknown one.
pub fn known_types(kind: &str) -> Vec<String> {
    let text = match kind {
        "sources" => "[sources.x]\ntype = \"no-such-type\"\n".to_string(),
        "filters" => "[sources.x]\ntype = \"generator\"\n[filters.x]\ntype = \"no-such-type\"\nmatch = \"**\"\n".to_string(),
        _ => "[sources.x]\ntype = \"generator\"\n[sinks.x]\ntype = \"no-such-type\"\nmatch = \"**\"\n".to_string(),
    };
    let err = super::Config::parse(&text, "probe").unwrap_err().message;
    let list = err
        .split("(known: ")
        .nth(1)
        .and_then(|l| l.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no list of known types in {err:?}"));
    list.split(", ").map(str::to_string).collect()
}

/// Ends every deserialization at once, reporting what was asked for.
struct KeyProbe;

#[derive(Debug)]
enum Probed {
    /// `deserialize_struct` was called with these fields.
    Struct(&'static [&'static str]),
    /// Something else was asked for.
    Other(String),
}

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Probed::Other(msg.to_string())
    }
}

impl<'de> de::Deserializer<'de> for KeyProbe {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Probed> {
        Err(Probed::Other("deserialize_any".into()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        Err(Probed::Struct(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        plain: u32,
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        optional: Option<bool>,
    }

    #[test]
    fn the_probe_reports_the_accepted_keys_after_renames() {
        assert_eq!(keys_of::<Example>(), ["plain", "type", "optional"]);
    }

    #[test]
    fn the_known_types_come_from_the_loader() {
        assert!(known_types("sources").contains(&"tail".to_string()));
        assert!(known_types("sinks").contains(&"file".to_string()));
    }

    #[test]
    #[should_panic(expected = "is not deserialized as a struct")]
    fn a_map_is_not_a_struct() {
        keys_of::<std::collections::HashMap<String, u32>>();
    }
}
