//! msgpack → JSON conversion (what the `json` format and templates write for
//! every record) on arbitrary msgpack.
//!
//! Checked:
//! * nothing panics, whatever the bytes;
//! * if `msgpack::skip` says the input starts with a complete value, then
//!   `json::write_value` converts it without error, consumes exactly that
//!   value (ending where `skip` ends), and writes valid UTF-8 JSON (parsed with
//!   serde_json, which reads at most 128 levels of nesting) of the same kind
//!   (map → object, array → array, …);
//! * a float is written as the shortest text that reads back as the same
//!   float (a float 32 as the same float 32) and still reads as a float
//!   (`2.0`, `1e16`, `-0.0`), or `null` for NaN and infinities;
//! * `json::write_str` always writes one valid JSON string.
//! * stack use does not grow with the input: the checks run on a 256 KiB
//!   stack (see `common.rs`), so recursion on nesting depth overflows it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::format::json;
use logferry::protocol::msgpack::{self, Reader};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let mut out = Vec::new();
    match msgpack::skip(data, 0) {
        Ok(end) => {
            let mut r = Reader::new(data);
            if let Err(e) = json::write_value(&mut out, &mut r) {
                panic!("skip() accepts a value of {end} bytes but write_value fails: {e}");
            }
            assert_eq!(r.pos(), end, "write_value stopped at byte {} but the value ends at {end}", r.pos());
            let text = std::str::from_utf8(&out).unwrap_or_else(|e| panic!("JSON output is not UTF-8: {e}"));
            let value: serde_json::Value = match serde_json::from_str(text) {
                Ok(v) => v,
                // serde_json reads at most 128 levels of nesting: a deeper
                // value is beyond what this oracle can check
                Err(e) if e.to_string().starts_with("recursion limit exceeded") => return check_str(data),
                Err(e) => panic!("invalid JSON {text:?}: {e}"),
            };
            let kind_ok = match data[0] {
                0x80..=0x8f | 0xde | 0xdf => value.is_object(),
                0x90..=0x9f | 0xdc | 0xdd => value.is_array(),
                0xa0..=0xbf | 0xd9..=0xdb | 0xc4..=0xc6 => value.is_string(),
                0xc2 | 0xc3 => value.is_boolean(),
                0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xcf | 0xd0..=0xd3 => value.is_number(),
                // nil, floats (NaN/inf become null), ext (EventTime becomes a number)
                _ => true,
            };
            assert!(kind_ok, "marker {:#04x} converted to {text}", data[0]);
            check_float(data, text, &value);
        }
        Err(_) => {
            // truncated or invalid: an error is fine, a panic is not
            let _ = json::write_value(&mut out, &mut Reader::new(data));
        }
    }
    check_str(data);
}

/// Any bytes as a JSON string.
fn check_str(data: &[u8]) {
    let mut out = Vec::new();
    json::write_str(&mut out, data);
    let text = std::str::from_utf8(&out).expect("write_str output is not UTF-8");
    let s: String = serde_json::from_str(text).unwrap_or_else(|e| panic!("write_str wrote invalid JSON {text:?}: {e}"));
    if let Ok(orig) = std::str::from_utf8(data) {
        assert_eq!(s, orig, "write_str does not round-trip valid UTF-8");
    }
}

/// A top-level float: the text must parse back to the same bits (std's
/// parser is exact; serde_json's default one may be off by one ulp) and be
/// a JSON float, not an integer.
fn check_float(data: &[u8], text: &str, value: &serde_json::Value) {
    let same = match data[0] {
        0xcb => {
            let f = f64::from_bits(u64::from_be_bytes(data[1..9].try_into().unwrap()));
            if !f.is_finite() {
                return assert!(value.is_null(), "{f} written as {text}");
            }
            text.parse::<f64>().map(|g| g.to_bits() == f.to_bits())
        }
        0xca => {
            let f = f32::from_bits(u32::from_be_bytes(data[1..5].try_into().unwrap()));
            if !f.is_finite() {
                return assert!(value.is_null(), "{f} written as {text}");
            }
            text.parse::<f32>().map(|g| g.to_bits() == f.to_bits())
        }
        _ => return,
    };
    assert_eq!(same, Ok(true), "float written as {text}");
    assert!(value.is_f64(), "float written as {text}, which reads as {value:?}");
}
