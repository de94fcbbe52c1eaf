//! The configuration parser (`topology::config::Config::parse`): TOML and
//! YAML text (the same input is read as both, by the file name), `${VAR}`
//! interpolation, typed component tables, `validate()` and the search for
//! the line an error is about. A configuration comes from the operator, but
//! `logferry validate` is run on half-written files, and an error must be a
//! message, not a crash.
//!
//! The whole input is the file's text (inputs that are not UTF-8 are
//! refused before parsing, as `Config::load` does). Checked:
//! * nothing panics (errors are expected for most inputs);
//! * an error's line, when it has one, is a line of the text;
//! * parsing the same text twice gives the same outcome (the same error).

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::topology::config::Config;

// Not on `common::on_small_stack`: a configuration is parsed once, at
// start-up, on the main thread (8 MiB of stack), and toml stops at 80 levels
// of nesting; at those 80 levels toml's parser, with AddressSanitizer's
// larger frames, needs more than the 256 KiB the other targets run on. The
// fuzzer's own thread is the main thread, as in logferry.
fuzz_target!(|data: &[u8]| check(data));

fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for origin in ["fuzz.toml", "fuzz.yaml"] {
        check_as(text, origin);
    }
}

fn check_as(text: &str, origin: &str) {
    let first = Config::parse(text, origin);
    if let Err(e) = &first {
        let lines = text.split('\n').count();
        if let Some(line) = e.line {
            assert!(line >= 1 && line <= lines, "line {line} of {lines}: {e}");
        }
        assert!(!e.message.is_empty());
    }
    let second = Config::parse(text, origin);
    // (a Config holds hash maps: compare the outcome, not its Debug text)
    assert_eq!(first.is_ok(), second.is_ok());
    assert_eq!(first.err(), second.err());
}
