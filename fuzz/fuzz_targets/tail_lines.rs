//! The tail source's line splitting (`sources::tail::file::TailedFile`):
//! file contents come from whatever writes the log, so every byte sequence
//! must be handled.
//!
//! Byte 0 picks `max_line_bytes` (1..=256) and `on_long_line` (split or
//! skip); the rest is written to a file, which is read the way the tail
//! source reads it (blocks, then a partial last line once it is stale).
//!
//! Checked:
//! * nothing panics, and reading ends;
//! * every output line ends with `\n` and is at most `max_line_bytes` long;
//! * split mode keeps every byte that is not a line break: the output holds
//!   exactly the input's bytes other than `\n`, less `\r`s that end lines;
//! * skip mode never invents bytes: it outputs at most the input's.

#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use logferry::sources::tail::file::TailedFile;
use logferry::sources::tail::TailSourceConfig;

mod common;

fuzz_target!(|data: &[u8]| common::on_small_stack(|| check(data)));

fn check(data: &[u8]) {
    let Some((&knob, content)) = data.split_first() else { return };
    let max = usize::from(knob & 0x7f) * 2 + 1;
    let skip = knob & 0x80 != 0;
    let cfg: TailSourceConfig = toml::from_str(&format!(
        "paths = [\"/x\"]\ntag = \"t\"\nread_bytes = 4096\nmax_line_bytes = {max}\non_long_line = \"{}\"\npartial_line_timeout = \"0s\"",
        if skip { "skip" } else { "split" }
    ))
    .expect("valid config");
    let path = std::env::temp_dir().join(format!("logferry-fuzz-tail-{}", std::process::id()));
    std::fs::write(&path, content).expect("temp file");
    let mut f = TailedFile::open(&path, Some(0)).expect("open");
    let mut out = Vec::new();
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds < 100_000, "reading does not end");
        let now = Instant::now();
        match f.read_lines(&cfg, now).expect("read") {
            Some(lines) => out.extend_from_slice(&lines.data),
            None => break,
        }
        if let Some(lines) = f.take_partial(&cfg, now) {
            out.extend_from_slice(&lines.data);
        }
    }
    if let Some(lines) = f.take_partial(&cfg, Instant::now() + Duration::from_secs(1)) {
        out.extend_from_slice(&lines.data);
    }
    let _ = std::fs::remove_file(&path);

    assert!(out.is_empty() || out.ends_with(b"\n"), "output ends mid-line");
    for line in out.split(|b| *b == b'\n') {
        assert!(line.len() <= max, "a line of {} bytes with max_line_bytes {max}", line.len());
    }
    let kept = |b: &[u8]| b.iter().filter(|c| **c != b'\n' && **c != b'\r').count();
    if skip {
        assert!(kept(&out) <= kept(content), "skip mode produced bytes");
    } else {
        assert_eq!(kept(&out), kept(content), "split mode lost or invented bytes");
    }
}
