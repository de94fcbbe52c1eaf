//! Naming a field of a record, top-level (`level`) or nested in maps with
//! Fluent Bit's record accessor (`$kubernetes['labels']['app']`).

use crate::event::{map_field_raw, RecordRef};
use crate::protocol::msgpack::{write, Reader, Value};

/// The path to a field: one key, or the keys down nested maps.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPath(Vec<Vec<u8>>);

impl FieldPath {
    /// Reads `name`, or `$name['key']…` for a field in nested maps.
    ///
    /// ```
    /// use logferry::filters::field::FieldPath;
    ///
    /// assert!(FieldPath::parse("level").is_ok());
    /// assert!(FieldPath::parse("$kubernetes['labels']['app']").is_ok());
    /// assert!(FieldPath::parse("$log['level'").is_err());
    /// // Fluent Bit would read one top-level key "kubernetes.labels.app"
    /// assert!(FieldPath::parse("$kubernetes.labels.app").is_err());
    /// assert!(FieldPath::parse("kubernetes.labels.app").is_ok());
    /// ```
    pub fn parse(text: &str) -> Result<FieldPath, String> {
        let Some(rest) = text.strip_prefix('$') else {
            if text.is_empty() {
                return Err("an empty field name".into());
            }
            return Ok(FieldPath(vec![text.as_bytes().to_vec()]));
        };
        let (first, mut rest) = rest.split_at(rest.find('[').unwrap_or(rest.len()));
        if first.is_empty() {
            return Err(format!("{text:?}: a field name must follow `$`"));
        }
        if first.contains('.') {
            // Fluent Bit reads `$a.b` as the one top-level key "a.b",
            // which is almost never what was meant
            let nested: String = first
                .split('.')
                .enumerate()
                .map(|(i, k)| {
                    if i == 0 {
                        format!("${k}")
                    } else {
                        format!("['{k}']")
                    }
                })
                .collect();
            return Err(format!(
                "{text:?}: a dot does not reach into a nested map; write {nested}{rest} for the nested field, or {first:?} without `$` for a top-level key with dots in its name"
            ));
        }
        let mut keys = vec![first.as_bytes().to_vec()];
        while !rest.is_empty() {
            let inner = rest
                .strip_prefix("['")
                .and_then(|r| r.find("']").map(|end| (&r[..end], &r[end + 2..])));
            let Some((key, after)) = inner else {
                return Err(format!(
                    "{text:?}: expected ['KEY'] after the field name, as in $log['level']"
                ));
            };
            keys.push(key.as_bytes().to_vec());
            rest = after;
        }
        Ok(FieldPath(keys))
    }

    /// The keys from the top-level field down.
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.0
    }

    /// The encoded msgpack value at this path in `record`, or for a line
    /// (which stands for `{"message": line}`) the line itself as text.
    pub fn lookup<'a>(&self, record: RecordRef<'a>) -> Option<FieldValue<'a>> {
        let (first, nested) = self.0.split_first()?;
        match record {
            RecordRef::Line(line) => (first.as_slice() == b"message" && nested.is_empty())
                .then_some(FieldValue::Text(line)),
            RecordRef::Map(map) => {
                let mut raw = map_field_raw(map, first)?;
                for key in nested {
                    raw = map_field_raw(raw, key)?;
                }
                Some(FieldValue::Encoded(raw))
            }
        }
    }
}

/// A field's value as a filter reads it.
pub enum FieldValue<'a> {
    /// Text that is not msgpack (a line).
    Text(&'a [u8]),
    /// One encoded msgpack value.
    Encoded(&'a [u8]),
}

impl FieldValue<'_> {
    /// The value as the text a regex is matched against: strings and
    /// binaries as their bytes, numbers and booleans as they print; `None`
    /// for nil, maps, arrays and extension types, which no regex matches.
    pub fn with_text<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let encoded = match self {
            FieldValue::Text(t) => return Some(f(t)),
            FieldValue::Encoded(e) => e,
        };
        let printed = match Reader::new(encoded).read().ok()? {
            Value::Str(s) | Value::Bin(s) => return Some(f(s)),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::UInt(u) => u.to_string(),
            Value::Float(x) => x.to_string(),
            Value::Float32(x) => x.to_string(),
            Value::Nil | Value::Array(_) | Value::Map(_) | Value::Ext(..) => return None,
        };
        Some(f(printed.as_bytes()))
    }
}

/// A field of a record being changed: its key and its encoded value.
pub type Field<'a> = (std::borrow::Cow<'a, [u8]>, std::borrow::Cow<'a, [u8]>);

/// The key/value pairs of an encoded map; `None` if it is not one.
pub fn map_fields(map: &[u8]) -> Option<Vec<Field<'_>>> {
    read_map_fields(&mut Reader::new(map))
}

/// The key/value pairs of the encoded map at `r`, which moves past it;
/// `None` if it is not a map or a key is not text (`r` is then left
/// anywhere inside it).
pub fn read_map_fields<'a>(r: &mut Reader<'a>) -> Option<Vec<Field<'a>>> {
    let map = r.buffer();
    let n = r.read_map_len().ok()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let key = match r.read().ok()? {
            Value::Str(k) | Value::Bin(k) => k,
            // a key that is not a string cannot be named by a rule
            _ => return None,
        };
        let start = r.pos();
        r.skip().ok()?;
        out.push((key.into(), map[start..r.pos()].into()));
    }
    Some(out)
}

pub fn write_map(out: &mut Vec<u8>, fields: &[Field<'_>]) {
    write::map_len(out, fields.len());
    for (k, v) in fields {
        write::str(out, k);
        out.extend_from_slice(v);
    }
}
