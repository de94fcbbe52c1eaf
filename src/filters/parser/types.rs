//! `types = { FIELD = "int" | "float" | "bool" }`: parsed text values
//! written as numbers or booleans (Fluentd's `types`, Fluent Bit's
//! `Types`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::filters::field::Field;
use crate::protocol::msgpack::{write, Reader, Value};

/// What a field becomes.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    /// A whole number (`-12`, `18446744073709551615`).
    Int,
    /// A finite number (`1.5`, `-2e3`, `7`).
    Float,
    /// `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0` (any case).
    Bool,
}

/// The conversions of one filter, by field name.
pub(super) struct Types(Vec<(Vec<u8>, FieldType)>);

impl Types {
    pub(super) fn new(config: &BTreeMap<String, FieldType>) -> Types {
        Types(
            config
                .iter()
                .map(|(k, t)| (k.as_bytes().to_vec(), *t))
                .collect(),
        )
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Converts the text values of the named fields in `pairs`; returns
    /// how many did not convert (they stay text). A value that is not
    /// text (a JSON number, say) is left as it is and not counted.
    pub(super) fn apply(&self, pairs: &mut [Field<'_>]) -> usize {
        let mut failed = 0;
        for (key, value) in pairs.iter_mut() {
            let Some((_, to)) = self.0.iter().find(|(k, _)| k.as_slice() == key.as_ref()) else {
                continue;
            };
            let text = match Reader::new(value).read() {
                Ok(Value::Str(t) | Value::Bin(t)) => t,
                _ => continue,
            };
            match convert(text, *to) {
                Some(v) => *value = v.into(),
                None => failed += 1,
            }
        }
        failed
    }
}

/// `text` encoded as `to`; `None` if it is not one.
fn convert(text: &[u8], to: FieldType) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut out = Vec::with_capacity(9);
    match to {
        FieldType::Int => match text.parse::<i64>() {
            Ok(i) => write::int(&mut out, i),
            Err(_) => write::uint(&mut out, text.parse::<u64>().ok()?),
        },
        FieldType::Float => {
            let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
            // `inf`, `nan` parse, but no output format can write them
            if text
                .chars()
                .any(|c| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E'))
            {
                return None;
            }
            out.push(0xcb);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        FieldType::Bool => {
            let b = match text.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => true,
                "false" | "no" | "off" | "0" => false,
                _ => return None,
            };
            out.push(if b { 0xc3 } else { 0xc2 });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(text: &[u8], to: FieldType) -> Option<Value<'static>> {
        let out = convert(text, to)?;
        let v = Reader::new(&out).read().unwrap();
        Some(match v {
            Value::Int(i) => Value::Int(i),
            Value::UInt(u) => Value::UInt(u),
            Value::Float(f) => Value::Float(f),
            Value::Bool(b) => Value::Bool(b),
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn values_that_convert() {
        assert_eq!(conv(b"-12", FieldType::Int), Some(Value::Int(-12)));
        assert_eq!(
            conv(b"18446744073709551615", FieldType::Int),
            Some(Value::UInt(u64::MAX))
        );
        assert_eq!(conv(b"1.5", FieldType::Float), Some(Value::Float(1.5)));
        assert_eq!(conv(b"-2e3", FieldType::Float), Some(Value::Float(-2000.0)));
        assert_eq!(conv(b"7", FieldType::Float), Some(Value::Float(7.0)));
        assert_eq!(conv(b"Yes", FieldType::Bool), Some(Value::Bool(true)));
        assert_eq!(conv(b"0", FieldType::Bool), Some(Value::Bool(false)));
    }

    #[test]
    fn values_that_do_not_convert() {
        for (t, to) in [
            (&b"1.5"[..], FieldType::Int),
            (b" 1", FieldType::Int),
            (b"", FieldType::Int),
            (b"18446744073709551616", FieldType::Int),
            (b"inf", FieldType::Float),
            (b"NaN", FieldType::Float),
            (b"1e999", FieldType::Float),
            (b"\xff1", FieldType::Int),
            (b"maybe", FieldType::Bool),
        ] {
            assert!(conv(t, to).is_none(), "{t:?} as {to:?}");
        }
    }
}
