//! msgpack → JSON text, streaming, without building a value tree.

use crate::protocol::msgpack::{self, Reader, Value};

/// Deepest nesting converted; deeper values become `null` so a hostile
/// record cannot make output (or work) explode.
const MAX_DEPTH: usize = 64;

/// Writes `s` as a JSON string. Invalid UTF-8 becomes U+FFFD, so the output
/// is always valid JSON.
pub fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    match std::str::from_utf8(s) {
        Ok(text) => escape_into(out, text),
        Err(_) => escape_into(out, &String::from_utf8_lossy(s)),
    }
    out.push(b'"');
}

fn escape_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Writes a scalar (containers are handled by [`write_value`]).
pub fn write_scalar(out: &mut Vec<u8>, v: Value<'_>) {
    use std::io::Write;
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f}");
        }
        Value::Float(_) => out.extend_from_slice(b"null"),
        Value::Str(s) | Value::Bin(s) => write_str(out, s),
        Value::Ext(0, b) if b.len() == 8 => {
            let secs = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let nanos = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            let _ = write!(out, "{secs}.{nanos:09}");
        }
        Value::Ext(..) | Value::Array(_) | Value::Map(_) => out.extend_from_slice(b"null"),
    }
}

/// An open array or map: items still to write, and items written so far
/// (a map counts keys and values as separate items).
struct Open {
    is_map: bool,
    left: usize,
    done: usize,
}

/// Converts the next complete value of `r` to JSON. Iterative, so nesting
/// depth costs no stack.
pub fn write_value(out: &mut Vec<u8>, r: &mut Reader<'_>) -> msgpack::Result<()> {
    let mut stack: Vec<Open> = Vec::new();
    loop {
        let mut is_key = false;
        if let Some(top) = stack.last_mut() {
            if top.left == 0 {
                out.push(if top.is_map { b'}' } else { b']' });
                stack.pop();
                if stack.is_empty() {
                    return Ok(());
                }
                continue;
            }
            if top.is_map && top.done % 2 == 1 {
                out.push(b':');
            } else if top.done > 0 {
                out.push(b',');
            }
            is_key = top.is_map && top.done % 2 == 0;
            top.done += 1;
            top.left -= 1;
        }
        let v = r.read()?;
        match v {
            Value::Array(_) | Value::Map(_) if is_key || stack.len() >= MAX_DEPTH => {
                crate::event::skip_rest(r, v)?;
                out.extend_from_slice(if is_key { b"\"null\"" } else { b"null" });
            }
            Value::Array(n) => {
                out.push(b'[');
                stack.push(Open {
                    is_map: false,
                    left: n,
                    done: 0,
                });
                continue;
            }
            Value::Map(n) => {
                out.push(b'{');
                stack.push(Open {
                    is_map: true,
                    left: n.saturating_mul(2),
                    done: 0,
                });
                continue;
            }
            // JSON object keys must be strings
            Value::Str(_) | Value::Bin(_) => write_scalar(out, v),
            other if is_key => {
                let mut tmp = Vec::new();
                write_scalar(&mut tmp, other);
                write_str(out, &tmp);
            }
            other => write_scalar(out, other),
        }
        if stack.is_empty() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::msgpack::write;

    fn json_of(bytes: &[u8]) -> String {
        let mut out = Vec::new();
        write_value(&mut out, &mut Reader::new(bytes)).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn nested_values_become_valid_json() {
        let mut m = Vec::new();
        write::map_len(&mut m, 4);
        write::str(&mut m, b"a");
        write::array_len(&mut m, 3);
        write::uint(&mut m, 1);
        write::map_len(&mut m, 0);
        write::array_len(&mut m, 0);
        write::str(&mut m, b"q\"uote\n");
        m.push(0xc3);
        m.push(0x05); // integer key
        m.push(0xc0);
        write::str(&mut m, b"bad");
        write::str(&mut m, b"\xff\x01");
        let text = json_of(&m);
        assert_eq!(
            text,
            "{\"a\":[1,{},[]],\"q\\\"uote\\n\":true,\"5\":null,\"bad\":\"\u{fffd}\\u0001\"}"
        );
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["a"][0], 1);
    }

    #[test]
    fn deep_nesting_is_cut_not_crashed() {
        let mut m = vec![0x91; 10_000];
        m.push(0x01);
        let text = json_of(&m);
        assert!(text.len() < 200);
        serde_json::from_str::<serde_json::Value>(&text).unwrap();
    }
}
