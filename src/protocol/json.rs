//! JSON into msgpack, value by value, with no tree in between.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::msgpack::write;

/// Appends the JSON object `text` as a msgpack map. On error `out` may
/// hold part of it: the caller truncates.
pub fn object_to_msgpack(out: &mut Vec<u8>, text: &[u8]) -> Result<(), String> {
    if text.iter().find(|c| !c.is_ascii_whitespace()) != Some(&b'{') {
        return Err("not a JSON object".to_string());
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    Transcode(out)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| e.to_string())
}

/// Writes the JSON value it is deserialized from as msgpack, with no
/// intermediate tree. serde_json limits nesting to 128 levels, so hostile
/// input cannot exhaust the stack.
struct Transcode<'o>(&'o mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push(0xc0);
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push(if v { 0xc3 } else { 0xc2 });
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        write::uint(self.0, v);
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        write::int(self.0, v);
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.0.push(0xcb);
        self.0.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write::str(self.0, v.as_bytes());
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // the length is known only at the end: write the items, then move
        // them behind a header of the right size
        let start = self.0.len();
        let mut n = 0;
        while seq.next_element_seed(Transcode(self.0))?.is_some() {
            n += 1;
        }
        let mut header = Vec::new();
        write::array_len(&mut header, n);
        self.0.splice(start..start, header);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let start = self.0.len();
        let mut n = 0;
        while map.next_key_seed(Transcode(self.0))?.is_some() {
            map.next_value_seed(Transcode(self.0))?;
            n += 1;
        }
        let mut header = Vec::new();
        write::map_len(&mut header, n);
        self.0.splice(start..start, header);
        Ok(())
    }
}

/// Whether JSON `text` opens more than `max` arrays and objects inside
/// one another (read without parsing it: serde_json parses recursively, so
/// the depth is checked before it runs).
pub fn deeper_than(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &c in text {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}
