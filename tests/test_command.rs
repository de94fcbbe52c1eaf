//! `logferry test --config FILE` against the built binary: a passing file
//! exits 0, a failing test exits 1 with what differs field by field, a
//! file or test that cannot run exits 2, `validate` accepts `[[tests]]`,
//! and every filter example of docs/configuration.md is such a file whose
//! tests pass.

mod common;

use std::path::Path;
use std::process::Command;

use common::BIN;

/// Runs `logferry ARGS -c FILE` with `config` in FILE: (exit code,
/// stdout, stderr).
fn logferry(command: &str, config: &str, dir: &Path) -> (Option<i32>, String, String) {
    let path = dir.join("c.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(BIN)
        .args([command, "-c"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const PIPELINE: &str = r#"
[sources.app]
type = "tcp"
address = "127.0.0.1:0"
tag = "app"

[filters.parse]
type = "parser"
match = "app"
format = "json"

[filters.quiet]
type = "grep"
match = "app"
exclude = { path = "^/health" }

[sinks.out]
type = "file"
match = "**"
path = "/nonexistent/never-written.log"
format = "json"
"#;

/// Numbered lines, half of them health checks: the other half reach the
/// sink, each once, parsed.
fn numbered(n: usize) -> String {
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let path = if i % 2 == 0 { "/health" } else { "/api" };
            format!("'{{\"n\": {i}, \"path\": \"{path}\"}}'")
        })
        .collect();
    let want: Vec<String> = (0..n)
        .filter(|i| i % 2 == 1)
        .map(|i| format!("{{ n = {i}, path = \"/api\" }}"))
        .collect();
    format!(
        "{PIPELINE}\n[[tests]]\nname = \"health checks are dropped\"\n[[tests.inputs]]\nsource = \"app\"\nlines = [{}]\n[[tests.outputs]]\nsink = \"out\"\nrecords = [{}]\n",
        lines.join(", "),
        want.join(", ")
    )
}

#[test]
fn a_passing_file_exits_0_and_says_ok_per_test() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}\n[[tests]]\nname = \"nothing from health\"\n[[tests.inputs]]\nsource = \"app\"\nlines = ['{{\"path\": \"/health\"}}']\n[[tests.outputs]]\nsink = \"out\"\ncount = 0\n",
        numbered(1000)
    );
    let (code, out, err) = logferry("test", &config, dir.path());
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        out,
        "test \"health checks are dropped\" ... ok\ntest \"nothing from health\" ... ok\n2 passed, 0 failed\n"
    );
    // nothing was started: the sink's directory does not exist
    assert!(!Path::new("/nonexistent").exists());
    // and `validate` takes the same file
    let (code, _, err) = logferry("validate", &config, dir.path());
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_failing_test_exits_1_with_each_difference() {
    let dir = tempfile::tempdir().unwrap();
    // record 3 (n = 5) is expected with a wrong path, and the type of n
    // of the first is wrong
    let config = numbered(8)
        .replacen(
            "{ n = 1, path = \"/api\" }",
            "{ n = \"1\", path = \"/api\" }",
            1,
        )
        .replacen(
            "{ n = 5, path = \"/api\" }",
            "{ n = 5, path = \"/other\" }",
            1,
        );
    let (code, out, err) = logferry("test", &config, dir.path());
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains("test \"health checks are dropped\" ... FAILED"),
        "{out}"
    );
    assert!(
        out.contains("sink out: record 1: field \"n\": expected \"1\", got 1"),
        "{out}"
    );
    assert!(
        out.contains("sink out: record 3: field \"path\": expected \"/other\", got \"/api\""),
        "{out}"
    );
    assert!(out.ends_with("0 passed, 1 failed\n"), "{out}");
}

#[test]
fn a_file_or_test_that_cannot_run_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = logferry("test", PIPELINE, dir.path());
    assert_eq!(code, Some(2));
    assert!(err.contains("no [[tests]] tables"), "{err}");
    let bad = format!(
        "{PIPELINE}\n[[tests]]\nname = \"x\"\n[[tests.inputs]]\nsource = \"app\"\nlines = [\"a\"]\n[[tests.outputs]]\nsink = \"elsewhere\"\ncount = 1\n"
    );
    let (code, _, err) = logferry("test", &bad, dir.path());
    assert_eq!(code, Some(2));
    assert!(
        err.contains("sink elsewhere is not in the configuration"),
        "{err}"
    );
    let (code, _, err) = logferry("test", "[sources.x]\ntype = \"nope\"\n", dir.path());
    assert_eq!(code, Some(2), "{err}");
}

/// A test that cannot run (its input needs a tag the source does not
/// give) exits 2 whatever the other tests do, and every message about a
/// test names the line of its `[[tests]]` header, not its number.
#[test]
fn a_test_that_cannot_run_exits_2_and_is_named_by_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let web = "\n[sources.web]\ntype = \"http\"\naddress = \"127.0.0.1:0\"\n";
    let passing = "\n[[tests]]\nname = \"passes\"\n[[tests.inputs]]\nsource = \"app\"\nlines = ['{\"path\": \"/api\"}']\n[[tests.outputs]]\nsink = \"out\"\ncount = 1\n";
    let untagged = "\n[[tests]]\nname = \"from the web\"\n[[tests.inputs]]\nsource = \"web\"\nlines = ['{\"path\": \"/api\"}']\n[[tests.outputs]]\nsink = \"out\"\ncount = 1\n";
    let config = format!("{PIPELINE}{web}{passing}{untagged}");
    let line = |name: &str| {
        let at = config.find(&format!("name = \"{name}\"")).unwrap();
        // the header is the line before the name
        config[..at].matches('\n').count()
    };
    let (code, out, err) = logferry("test", &config, dir.path());
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.contains("test \"passes\" ... ok"), "{out}");
    assert!(
        out.contains(&format!(
            "line {}: [[tests]]: cannot run: source web has no one tag of its own",
            line("from the web")
        )),
        "{out}"
    );
    assert!(
        out.ends_with("1 passed, 0 failed, 1 could not run\n"),
        "{out}"
    );

    // a test refused before any runs is named by its line too
    let bad = config.replace(
        "sink = \"out\"\ncount = 1\n\n[[tests]]",
        "sink = \"elsewhere\"\ncount = 1\n\n[[tests]]",
    );
    let (code, out, err) = logferry("test", &bad, dir.path());
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(&format!(
            "line {}: [[tests]]: \"passes\": sink elsewhere is not in the configuration",
            line("passes")
        )),
        "{err}"
    );
}

/// The ```toml blocks of the "Filters" section of docs/configuration.md,
/// with the `###` heading each sits under.
fn filter_examples() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    let start = doc.find("\n## Filters\n").expect("a Filters section");
    let end = start + doc[start + 1..].find("\n## ").expect("a section after it") + 1;
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut block: Option<String> = None;
    for line in doc[start..end].lines() {
        if let Some(h) = line.strip_prefix("### ") {
            heading = h.to_string();
        }
        match (&mut block, line) {
            (None, "```toml") => block = Some(String::new()),
            (Some(b), "```") => {
                out.push((heading.clone(), std::mem::take(b)));
                block = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

/// Filters whose records are completed from a server (the `kubernetes`
/// filter's metadata from the Kubernetes API): their examples are
/// validated, and their behaviour is tested against the real server
/// (tests/kube_filter.rs).
const SERVED: &[&str] = &["`kubernetes`"];

#[test]
fn every_filter_example_in_the_docs_is_a_config_whose_tests_pass() {
    let examples = filter_examples();
    let dir = tempfile::tempdir().unwrap();
    let mut headings: Vec<&str> = Vec::new();
    for (heading, text) in &examples {
        if SERVED.contains(&heading.as_str()) {
            // its data comes from a server `logferry test` does not fake:
            // the example must still be a whole, valid configuration
            let (code, out, err) = logferry("validate", text, dir.path());
            assert_eq!(
                code,
                Some(0),
                "docs/configuration.md, {heading}:\n{out}{err}\n{text}"
            );
            continue;
        }
        assert!(
            text.contains("[[tests]]"),
            "docs/configuration.md, {heading}: the example has no [[tests]]:\n{text}"
        );
        let (code, out, err) = logferry("test", text, dir.path());
        assert_eq!(
            code,
            Some(0),
            "docs/configuration.md, {heading}:\n{out}{err}\n{text}"
        );
        assert!(out.contains(" passed, 0 failed"), "{heading}: {out}");
        headings.push(heading);
    }
    // one example at least under every filter type's heading
    for kind in [
        "grep",
        "modify",
        "rewrite_tag",
        "parser",
        "sample",
        "throttle",
    ] {
        let h = format!("`{kind}`");
        assert!(
            headings.contains(&h.as_str()),
            "no example for {h} in docs/configuration.md's Filters"
        );
    }
}
