//! `logferry config import` of Fluentd configurations: the v1 syntax
//! (sections, quoted strings with escapes and embedded Ruby, JSON values
//! over several lines, comments), the routing (first match, labels) and
//! every plugin's translation, then the rendering as TOML and YAML. A
//! configuration to import comes from anywhere, and a file that is not
//! Fluentd's must be an error with its line, never a crash.
//!
//! The whole input is the file's text (not UTF-8: refused, as reading the
//! file refuses it). Checked:
//! * nothing panics;
//! * an error's line, when it has one, is a line of the text;
//! * what is imported renders as TOML that parses.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logferry::cli::import::{fluentd, model, ImportError};

fuzz_target!(|data: &[u8]| check(data));

fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match fluentd::import_text(text) {
        Ok(imported) => {
            let toml_text = model::render(&imported, false);
            assert!(toml_text.parse::<toml::Table>().is_ok(), "{toml_text}");
            let _ = model::render(&imported, true);
        }
        Err(ImportError::Invalid { line, .. }) => {
            let lines = text.split('\n').count();
            assert!(line <= lines, "line {line} of {lines}");
        }
        Err(_) => {}
    }
}
