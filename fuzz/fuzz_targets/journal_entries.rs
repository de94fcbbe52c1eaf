//! A journal entry's fields into a record (`sources::journald::entry`):
//! sd-journal hands over each field as the bytes journald stored, and an
//! application can log any bytes (binary values, names repeated, no `=`).
//!
//! The input is split at NUL bytes into fields; its first byte chooses the
//! field-name options. Checked:
//! * nothing panics, whatever the bytes;
//! * the record is one `[time, map]` with a key per distinct field name,
//!   every key and value (or value of an array) valid UTF-8;
//! * every field with a `=` is in it, and nothing else.

#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use logferry::event::EventTime;
use logferry::protocol::msgpack::{Reader, Value};
use logferry::sources::journald::entry::{time_of, Fields, Names};

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let Some((&options, data)) = data.split_first() else {
        return;
    };
    let names = Names {
        lowercase: options & 1 != 0,
        strip_underscores: options & 2 != 0,
    };
    let mut fields = Fields::default();
    let mut pushed = 0;
    for field in data.split(|&b| b == 0) {
        pushed += usize::from(fields.push(field, names));
    }
    let expected = data.split(|&b| b == 0).filter(|f| f.contains(&b'=')).count();
    assert_eq!(pushed, expected);
    let mut out = Vec::new();
    fields.write(&mut out, time_of(u64::from_le_bytes([options; 8])));
    let mut r = Reader::new(&out);
    assert_eq!(r.read_array_len().unwrap(), 2);
    EventTime::read(&mut r).unwrap();
    let keys = r.read_map_len().unwrap();
    let mut seen = BTreeSet::new();
    let mut values = 0;
    for _ in 0..keys {
        let Value::Str(k) = r.read().unwrap() else {
            panic!("a key that is not a string")
        };
        assert!(std::str::from_utf8(k).is_ok());
        assert!(seen.insert(k.to_vec()), "key {k:?} twice");
        let n = match r.read().unwrap() {
            Value::Array(n) => {
                assert!(n >= 2, "an array of one");
                for _ in 0..n {
                    let Value::Str(v) = r.read().unwrap() else { panic!("not a string") };
                    assert!(std::str::from_utf8(v).is_ok());
                }
                n
            }
            Value::Str(v) => {
                assert!(std::str::from_utf8(v).is_ok());
                1
            }
            other => panic!("a value {other:?}"),
        };
        values += n;
    }
    assert!(r.is_empty());
    assert_eq!(values, pushed);
}
