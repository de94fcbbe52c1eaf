//! The remap filter end to end, against the built binary: a VRL program
//! parses numbered JSON lines from a tailed file, changes their fields and
//! their tag; the lines it aborts on and those it fails on go on under
//! `error_tag`. Through a kill -9 mid-run and a restart every line arrives
//! at least once, transformed, at the sink its outcome sends it to.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::tail::*;
use common::*;

fn config(dir: &std::path::Path) -> String {
    format!(
        r#"
[sources.tail]
type = "tail"
paths = ["{d}/logs/*.log"]
tag = "app"
read_from_head = true
refresh_interval = "100ms"
poll_interval = "50ms"
checkpoint_dir = "{d}/state"

[filters.shape]
type = "remap"
match = "app"
drop_on_error = true
error_tag = "bad"
source = '''
. = parse_json!(.message)
n = int!(.n)
if mod(n, 7) == 0 {{ abort }}
.doubled = n * 2
.level = upcase!(.level)
.source_tag = %tag
%tag = "remapped." + %tag
'''

[sinks.out]
type = "file"
match = "remapped.**"
path = "{d}/out.log"
format = "json"

[sinks.bad]
type = "file"
match = "bad"
path = "{d}/bad.log"
format = "json"
"#,
        d = dir.display()
    )
}

/// Line `i`: JSON, but every 11th is not.
fn line(i: usize) -> String {
    if i.is_multiple_of(11) {
        format!("not-json-{i}\n")
    } else {
        format!(
            "{{\"n\": {i}, \"level\": \"info\", \"pad\": \"{}\"}}\n",
            "x".repeat(i % 50)
        )
    }
}

/// The numbers in `out.log`, each record checked to be transformed.
fn remapped(lines: &[String]) -> BTreeSet<usize> {
    lines
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let r = &v["record"];
            let n = r["n"].as_u64().unwrap_or_else(|| panic!("{l}"));
            assert_eq!(r["doubled"], n * 2, "{l}");
            assert_eq!(r["level"], "INFO", "{l}");
            assert_eq!(r["source_tag"], "app", "{l}");
            assert_eq!(
                r["pad"].as_str().map(str::len),
                Some(n as usize % 50),
                "{l}"
            );
            n as usize
        })
        .collect()
}

/// The numbers in `bad.log`: lines as they came, `{"message": LINE}`.
fn rerouted(lines: &[String]) -> BTreeSet<usize> {
    lines
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let message = v["record"]["message"]
                .as_str()
                .unwrap_or_else(|| panic!("{l}"));
            match message.strip_prefix("not-json-") {
                Some(n) => n.parse().unwrap(),
                None => {
                    let inner: serde_json::Value = serde_json::from_str(message).unwrap();
                    assert!(inner.get("doubled").is_none(), "{l}");
                    inner["n"].as_u64().unwrap() as usize
                }
            }
        })
        .collect()
}

#[test]
fn remapped_records_arrive_transformed_through_a_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let out = dir.path().join("out.log");
    let bad = dir.path().join("bad.log");
    let cfg = config(dir.path());
    let total = 40_000;
    let text: String = (0..total).map(line).collect();
    let live = logs.join("app.log");

    let mut lf = Logferry::start(&cfg);
    append(&live, &text.as_bytes()[..text.len() / 2]);
    wait_for_lines(&out, 2000, Duration::from_secs(30));
    lf.kill();
    append(&live, &text.as_bytes()[text.len() / 2..]);

    let mut again = Logferry::start(&cfg);
    let expect_out: BTreeSet<usize> = (0..total).filter(|i| i % 11 != 0 && i % 7 != 0).collect();
    let expect_bad: BTreeSet<usize> = (0..total).filter(|i| i % 11 == 0 || i % 7 == 0).collect();
    wait_until("every line at its sink", Duration::from_secs(90), || {
        remapped(&read_lines(&out)).len() >= expect_out.len()
            && rerouted(&read_lines(&bad)).len() >= expect_bad.len()
    });
    assert!(again.stop().success(), "{}", again.log_text());
    assert_eq!(remapped(&read_lines(&out)), expect_out);
    assert_eq!(rerouted(&read_lines(&bad)), expect_bad);
    let labels = "component=\"shape\",component_type=\"remap\"";
    let errors = again.final_counter(&format!("logferry_filter_remap_errors_total{{{labels}}}"));
    let aborts = again.final_counter(&format!("logferry_filter_remap_aborts_total{{{labels}}}"));
    // the restarted process saw at least the lines after the checkpoint
    assert!(errors > 0 && aborts > 0, "errors {errors}, aborts {aborts}");
}

/// `logferry validate` names the filter, the program's line and column,
/// and shows VRL's report.
#[test]
fn validate_shows_a_vrl_compile_error_with_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        r#"
[sources.gen]
type = "generator"
tag = "app"
count = 1

[filters.shape]
type = "remap"
match = "**"
source = '''
.a = 1
.b = parse_json(.message)
'''

[sinks.out]
type = "null"
match = "**"
"#,
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["validate", "-c"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("[filters.shape]"), "{err}");
    assert!(err.contains("line 2, column 6"), "{err}");
    assert!(err.contains("error[E103]"), "{err}");
    assert!(err.contains(".b = parse_json(.message)"), "{err}");
}
