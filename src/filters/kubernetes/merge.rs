//! Fluent Bit's `merge_log`: a record whose `log` field holds a JSON
//! object (a string, as a container writes it) or a map gets that
//! object's fields, at the top level or under `merge_log_key`.
//!
//! - `log` a map: its fields are merged as they are;
//! - `log` a string: read as JSON; anything but one object (an array, a
//!   number, text, broken JSON) leaves the record as it is;
//! - with `merge_log_trim`, merged string values lose their trailing line
//!   ends (`\n`, `\r`, and the two-character `\n` or `\r` an escaped log
//!   line keeps), as Fluent Bit's `Merge_Log_Trim`;
//! - `keep_log = false` removes `log` once merged (kept when it could not
//!   be read);
//! - merged fields replace top-level fields of the same name (Fluent Bit
//!   would write both: a map with one key twice, which most stores refuse).

use std::borrow::Cow;

use crate::filters::field::{map_fields, write_map, Field};
use crate::protocol::msgpack::{write, Reader, Value};

/// The key Fluent Bit's merge reads.
const LOG: &[u8] = b"log";

/// How the object in `log` is merged.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeLog {
    /// Put the merged fields in a map under this key, not at the top level.
    pub key: Option<Vec<u8>>,
    /// Keep `log` once merged.
    pub keep_log: bool,
    /// Trim trailing line ends of merged string values.
    pub trim: bool,
}

impl MergeLog {
    /// Reads the object in the `log` field of `fields` into `scratch` (one
    /// encoded map); false, with `scratch` empty, when there is none.
    pub fn read(&self, fields: &[Field<'_>], scratch: &mut Vec<u8>) -> bool {
        scratch.clear();
        let Some((_, value)) = fields.iter().find(|(k, _)| k.as_ref() == LOG) else {
            return false;
        };
        match Reader::new(value).read() {
            Ok(Value::Map(_)) => {
                scratch.extend_from_slice(value);
                true
            }
            Ok(Value::Str(text)) => {
                if crate::protocol::json::object_to_msgpack(scratch, text).is_ok() {
                    true
                } else {
                    scratch.clear();
                    false
                }
            }
            _ => false,
        }
    }

    /// `fields` with `object` (what [`MergeLog::read`] put in its
    /// scratch) merged in. An object with a key that is not text is not
    /// merged.
    pub fn merge<'a>(&self, mut fields: Vec<Field<'a>>, object: &'a [u8]) -> Vec<Field<'a>> {
        let Some(mut merged) = map_fields(object) else {
            return fields;
        };
        let mut trimmed = false;
        if self.trim {
            for (_, value) in merged.iter_mut() {
                if let Some(t) = trim(value) {
                    *value = Cow::Owned(t);
                    trimmed = true;
                }
            }
        }
        if !self.keep_log {
            fields.retain(|(k, _)| k.as_ref() != LOG);
        }
        match &self.key {
            Some(key) => {
                if merged.is_empty() {
                    return fields;
                }
                let value = if trimmed {
                    let mut map = Vec::with_capacity(object.len());
                    write_map(&mut map, &merged);
                    Cow::Owned(map)
                } else {
                    Cow::Borrowed(object)
                };
                fields.retain(|(k, _)| k.as_ref() != key.as_slice());
                fields.push((Cow::Owned(key.clone()), value));
            }
            None => {
                fields.retain(|(k, _)| !merged.iter().any(|(m, _)| m == k));
                fields.extend(merged);
            }
        }
        fields
    }
}

/// The encoded string `value` without its trailing line ends; `None` when
/// it is not a string or has none.
fn trim(value: &[u8]) -> Option<Vec<u8>> {
    let Ok(Value::Str(text)) = Reader::new(value).read() else {
        return None;
    };
    let mut end = text.len();
    loop {
        let rest = &text[..end];
        if rest.ends_with(b"\n") || rest.ends_with(b"\r") {
            end -= 1;
        } else if rest.ends_with(b"\\n") || rest.ends_with(b"\\r") {
            end -= 2;
        } else {
            break;
        }
    }
    if end == text.len() {
        return None;
    }
    let mut out = Vec::with_capacity(end + 5);
    write::str(&mut out, &text[..end]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::field::map_fields;

    /// `json` as the encoded record it stands for.
    fn record(json: &str) -> Vec<u8> {
        let mut out = Vec::new();
        crate::protocol::json::object_to_msgpack(&mut out, json.as_bytes()).unwrap();
        out
    }

    /// The merge of `record_json` as JSON text (keys in their order).
    fn merged(settings: &MergeLog, record_json: &str) -> String {
        let rec = record(record_json);
        let fields = map_fields(&rec).unwrap();
        let mut scratch = Vec::new();
        let fields = if settings.read(&fields, &mut scratch) {
            settings.merge(fields, &scratch)
        } else {
            fields
        };
        let mut map = Vec::new();
        write_map(&mut map, &fields);
        let mut json = Vec::new();
        crate::format::write_record_json(crate::event::RecordRef::Map(&map), &mut json);
        String::from_utf8(json).unwrap()
    }

    fn top(keep_log: bool) -> MergeLog {
        MergeLog {
            key: None,
            keep_log,
            trim: true,
        }
    }

    #[test]
    fn an_object_in_log_becomes_fields() {
        assert_eq!(
            merged(
                &top(true),
                r#"{"log":"{\"a\":1,\"b\":{\"c\":[true]}}\n","stream":"stdout"}"#
            ),
            r#"{"log":"{\"a\":1,\"b\":{\"c\":[true]}}\n","stream":"stdout","a":1,"b":{"c":[true]}}"#
        );
        assert_eq!(
            merged(&top(false), r#"{"log":"{\"a\":1}","stream":"stdout"}"#),
            r#"{"stream":"stdout","a":1}"#
        );
    }

    #[test]
    fn merged_fields_replace_those_of_the_same_name() {
        assert_eq!(
            merged(
                &top(false),
                r#"{"stream":"stdout","log":"{\"stream\":\"app\",\"log\":\"inner\"}"}"#
            ),
            r#"{"stream":"app","log":"inner"}"#
        );
    }

    #[test]
    fn under_a_key() {
        let settings = MergeLog {
            key: Some(b"app".to_vec()),
            keep_log: false,
            trim: true,
        };
        assert_eq!(
            merged(
                &settings,
                r#"{"log":"{\"a\":1,\"msg\":\"hi\\n\"}","app":"old"}"#
            ),
            r#"{"app":{"a":1,"msg":"hi"}}"#
        );
        // an empty object adds no key, yet was merged
        assert_eq!(merged(&settings, r#"{"log":"{}","x":1}"#), r#"{"x":1}"#);
    }

    #[test]
    fn a_map_in_log_is_merged_as_it_is() {
        assert_eq!(
            merged(&top(false), r#"{"log":{"a":"x\\n"},"s":1}"#),
            r#"{"s":1,"a":"x"}"#
        );
    }

    #[test]
    fn what_is_not_one_object_is_left_alone() {
        for rec in [
            r#"{"log":"plain text","s":1}"#,
            r#"{"log":"[1,2]","s":1}"#,
            r#"{"log":"{\"a\":1","s":1}"#,
            r#"{"log":"{\"a\":1} {\"b\":2}","s":1}"#,
            r#"{"log":"42","s":1}"#,
            r#"{"log":7,"s":1}"#,
            r#"{"message":"{\"a\":1}","s":1}"#,
        ] {
            assert_eq!(merged(&top(false), rec), rec);
        }
    }

    #[test]
    fn trim_takes_only_trailing_line_ends() {
        assert_eq!(
            merged(
                &top(false),
                r#"{"log":"{\"a\":\"x\\ny\\r\\n\",\"b\":\"q\\\\n\",\"c\":\"\\n\"}"}"#
            ),
            r#"{"a":"x\ny","b":"q","c":""}"#
        );
        let untrimmed = MergeLog {
            key: None,
            keep_log: false,
            trim: false,
        };
        assert_eq!(
            merged(&untrimmed, r#"{"log":"{\"a\":\"x\\n\"}"}"#),
            r#"{"a":"x\n"}"#
        );
    }
}
