//! Sink-side formatting of records that came from outside: `Batch::for_each_record`
//! and `Formatter::write_batch` (raw, json, ndjson, msgpack and template formats)
//! over arbitrary `Records::Entries` bytes (and, sometimes, `Records::Lines`).
//!
//! Input: byte 0 picks the format, the time format and the record kind;
//! for a fuzzed template, byte 1 is its length and the template text follows;
//! the rest is the records payload.
//!
//! Checked:
//! * nothing panics (errors are fine for entries the decoder would reject);
//! * entries the decoder accepts (`count_entries` is `Ok(n)`) are formatted
//!   without error, as exactly `n` records;
//! * the `json` format (default time format) writes one valid JSON object
//!   `{"time", "tag", "record"}` per record and line, its time a valid
//!   RFC 3339 UTC time with nine fraction digits;
//! * the `msgpack` format replays: its output, fed to `next_frame`, gives back
//!   one Message-mode frame per record with the same tag, time and record;
//! * `raw` over lines copies them byte for byte.
//! * stack use does not grow with the input: the checks run on a 256 KiB
//!   stack (see `common.rs`), so recursion on nesting depth overflows it.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use logferry::event::{Batch, EventTime, RecordRef, Records};
use logferry::format::{FormatConfig, FormatKind, Formatter};
use logferry::protocol::forward::{count_entries, next_frame, Limits, Mode};

const TAG: &str = "fuzz.\"tag\"\\é";

const TEMPLATES: [&str; 2] = [
    "{time} {tag} {host} {message}",
    "{{{level}}} log={log} msg={message} n={n} {a}{b} {time}",
];

const TIME_FORMATS: [Option<&str>; 4] = [None, Some("%H:%M:%S"), Some("%s.%3f"), Some("%Y-%m-%dT%H:%M:%S%.f%:z")];

/// (time, encoded record) for every record of a batch.
fn records(batch: &Batch) -> (Vec<(EventTime, Vec<u8>)>, bool) {
    let mut seen = Vec::new();
    let ok = batch
        .for_each_record(|t, r| {
            let bytes = match r {
                RecordRef::Map(m) | RecordRef::Line(m) => m.to_vec(),
            };
            seen.push((t, bytes));
        })
        .is_ok();
    (seen, ok)
}

/// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` with every field in range (days are
/// not checked against the month: chrono writes the times).
fn is_rfc3339_nanos(t: &str) -> bool {
    let b = t.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let s = t.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    b.len() == 30
        && (b[4], b[7], b[10], b[13], b[16], b[19], b[29]) == (b'-', b'-', b'T', b':', b':', b'.', b'Z')
        && num(0..4).is_some_and(|y| (1970..=2106).contains(&y))
        && num(5..7).is_some_and(|m| (1..=12).contains(&m))
        && num(8..10).is_some_and(|d| (1..=31).contains(&d))
        && num(11..13).is_some_and(|h| h < 24)
        && num(14..16).is_some_and(|m| m < 60)
        && num(17..19).is_some_and(|s| s < 60)
        && num(20..29).is_some()
}

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else { return };
    let variant = sel % 6;
    let time_format = TIME_FORMATS[usize::from(sel / 6) % TIME_FORMATS.len()];
    let lines = (sel / 24) % 8 == 7;

    // the bit that picks escape_newlines for raw and template picks
    // ndjson (with a tag and a time field) over json
    let ndjson = variant == 1 && (sel / 12) % 2 == 1;
    let (kind, template) = match variant {
        0 => (FormatKind::Raw, None),
        1 if ndjson => (FormatKind::Ndjson, None),
        1 => (FormatKind::Json, None),
        2 => (FormatKind::Msgpack, None),
        3 | 4 => (FormatKind::Template, Some(TEMPLATES[usize::from(variant - 3)].to_string())),
        _ => {
            let Some((&n, tail)) = rest.split_first() else { return };
            let n = usize::from(n).min(tail.len());
            let text = String::from_utf8_lossy(&tail[..n]).into_owned();
            rest = &tail[n..];
            (FormatKind::Template, Some(text))
        }
    };
    let config = FormatConfig {
        kind,
        template,
        time_format: time_format.map(str::to_string),
        time_key: ndjson.then(|| "t".to_string()),
        tag_key: ndjson.then(|| "tag".to_string()),
        escape_newlines: matches!(kind, FormatKind::Raw | FormatKind::Template) && (sel / 12) % 2 == 1,
    };
    // only a fuzzed template can be invalid; config validation rejects it
    let Ok(mut formatter) = Formatter::new(&config) else {
        assert_eq!(variant, 5, "a fixed format config was rejected: {config:?}");
        return;
    };

    let payload = Bytes::copy_from_slice(rest);
    let records_kind = if lines {
        Records::Lines {
            data: payload.clone(),
            time: EventTime::new(1_700_000_000, 123),
        }
    } else {
        Records::Entries(payload.clone())
    };
    let decoder_count = if lines { None } else { count_entries(&payload).ok() };
    let batch = Batch::new(TAG.into(), records_kind, decoder_count.unwrap_or(0));

    let mut out = Vec::new();
    let result = formatter.write_batch(&batch, &mut out);
    let (seen, iter_ok) = records(&batch);

    if let Some(n) = decoder_count {
        assert!(iter_ok, "for_each_record fails on entries the decoder accepts");
        assert_eq!(seen.len(), n, "for_each_record sees {} records, the decoder counted {n}", seen.len());
        if let Err(e) = &result {
            panic!("{kind:?} format fails on entries the decoder accepts: {e}");
        }
    }

    match (kind, lines) {
        (FormatKind::Raw | FormatKind::Template, _) if config.escape_newlines && result.is_ok() => {
            let n = out.iter().filter(|b| **b == b'\n').count();
            assert_eq!(n, seen.len(), "escape_newlines: {n} lines for {} records", seen.len());
        }
        (FormatKind::Raw, true) => assert_eq!(out, rest, "raw lines are not copied byte for byte"),
        (FormatKind::Json, _) if time_format.is_none() => {
            let text = std::str::from_utf8(&out).unwrap_or_else(|e| panic!("json output is not UTF-8: {e}"));
            let mut n = 0;
            for line in text.split_terminator('\n') {
                let v: serde_json::Value =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("invalid JSON line {line:?}: {e}"));
                assert_eq!(v["tag"], TAG, "{line}");
                assert!(v["time"].is_string() && v.get("record").is_some(), "{line}");
                assert!(is_rfc3339_nanos(v["time"].as_str().unwrap_or("")), "invalid time in {line}");
                n += 1;
            }
            if result.is_ok() {
                assert_eq!(n, seen.len(), "{n} JSON lines for {} records", seen.len());
            }
        }
        (FormatKind::Ndjson, _) => {
            let text = std::str::from_utf8(&out).unwrap_or_else(|e| panic!("ndjson output is not UTF-8: {e}"));
            let mut n = 0;
            for line in text.split_terminator('\n') {
                let _: serde_json::Value =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("invalid JSON line {line:?}: {e}"));
                n += 1;
            }
            if result.is_ok() {
                assert_eq!(n, seen.len(), "{n} ndjson lines for {} records", seen.len());
            }
        }
        (FormatKind::Msgpack, false) if decoder_count.is_some() => {
            // replay the output into the forward decoder
            let mut buf = BytesMut::from(&out[..]);
            let mut hint = logferry::protocol::forward::Scan::default();
            let mut replayed = Vec::new();
            loop {
                match next_frame(&mut buf, &Limits::default(), &mut hint) {
                    Ok(Some(frame)) => {
                        assert_eq!(frame.mode, Mode::Message);
                        assert_eq!(frame.tag, TAG);
                        assert_eq!(frame.count, 1);
                        let b = Batch::new(TAG.into(), Records::Entries(frame.entries), 1);
                        let (r, ok) = records(&b);
                        assert!(ok);
                        replayed.extend(r);
                    }
                    Ok(None) => break,
                    Err(e) => panic!("msgpack output does not replay: {e}"),
                }
            }
            assert!(buf.is_empty(), "msgpack output ends with {} bytes of a partial frame", buf.len());
            assert_eq!(replayed, seen, "msgpack output replays different records");
        }
        _ => {}
    }
}
