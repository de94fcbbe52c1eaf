//! The parser filter (`filters::parser`): the field it parses is whatever
//! a client wrote (a tailed line, a forwarded record's `message`).
//!
//! Byte 0 picks the format (json, logfmt, a regex, the apache / nginx
//! presets, cri, docker, the syslog ones, csv with types) and whether the
//! other fields and the parsed key are kept (one of 52 filters); the rest
//! is the text, one line per record.
//!
//! Checked: nothing panics, nothing recurses past the small stack, and
//! every record the filter puts out is one valid msgpack `[time, map]`
//! entry (or the untouched line of a record that did not parse), as many
//! as went in.

#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use logferry::event::{Batch, EventTime, Records};
use logferry::filters::parser::{ParserConfig, ParserFilter};
use logferry::metrics::Registry;
use logferry::router::{Filter, TagPattern};

mod common;

const FORMATS: [&str; 13] = [
    "json",
    "logfmt",
    "regex",
    "apache",
    "apache2",
    "apache_error",
    "nginx",
    "cri",
    "docker",
    "syslog",
    "syslog_rfc3164",
    "syslog_rfc5424",
    "csv",
];

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

/// Every filter the first byte can pick (made once: building one compiles
/// its regexes), indexed by `pick % len`.
fn filters() -> &'static [ParserFilter] {
    static FILTERS: OnceLock<Vec<ParserFilter>> = OnceLock::new();
    FILTERS.get_or_init(|| {
        let mut all = Vec::new();
        for kept in 0..4u8 {
            for format in FORMATS {
                let regex = match format {
                    "regex" => r#"regex = '^(?<level>\w+) (?<rest>.*)$'"#,
                    "csv" => "columns = ['a', 'b', 'c']\ntypes = { a = 'int', b = 'float', c = 'bool' }",
                    _ => "",
                };
                let toml = format!(
                    "format = \"{format}\"\n{regex}\nreserve_data = {}\npreserve_key = {}\n",
                    kept & 1 != 0,
                    kept & 2 != 0
                );
                let config: ParserConfig = toml::from_str(&toml).expect("a valid table");
                config.validate().expect("a valid table");
                let pattern = TagPattern::new("**").expect("a valid pattern");
                all.push(ParserFilter::new("p", pattern, &config, &Registry::new()).expect("builds"));
            }
        }
        all
    })
}

fn check(data: &[u8]) {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let filters = filters();
    let filter = &filters[usize::from(pick) % filters.len()];
    // lines end in '\n', as a tail source hands them over
    let mut lines = text.to_vec();
    if lines.last().is_some_and(|&c| c != b'\n') {
        lines.push(b'\n');
    }
    let count = lines.split_inclusive(|&c| c == b'\n').count();
    let records = Records::Lines {
        data: Bytes::from(lines),
        time: EventTime::new(1, 2),
    };
    let mut out = Vec::new();
    filter.apply(Batch::new("t".into(), records, count), &mut out);
    let mut seen = 0;
    for batch in &out {
        batch
            .for_each_record(|_, _| seen += 1)
            .expect("the filter puts out valid entries");
    }
    assert_eq!(seen, count, "a parser keeps every record");
}
