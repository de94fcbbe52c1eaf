//! YAML configuration files (`*.yaml`, `*.yml`) through the built binary:
//! the same pipelines as TOML, every record counted at the output; errors
//! naming the YAML line and column; `${VAR}` substituted as in TOML, with
//! the same rules; every `config example --yaml` valid; `logferry test`
//! and a SIGHUP reload reading YAML.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text.replace("{dir}", &dir.display().to_string())).unwrap();
    path
}

/// `logferry ARGS` with `env` added, to its end.
fn logferry(args: &[&str], path: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg(path)
        .envs(env.iter().copied())
        .env_remove("LOGFERRY_LOG")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The generator's numbered lines in `lines`, sorted.
fn numbers_of(lines: &[String]) -> Vec<u64> {
    let mut got: Vec<u64> = lines.iter().filter_map(|l| l.trim().parse().ok()).collect();
    got.sort_unstable();
    got
}

const PIPELINE: &str = "\
# numbered records through a filter into a file
sources:
  gen:
    type: generator
    tag: app.numbers
    rate: 0
    count: 20000
    size: 12
    batch_records: 1000

filters:
  no_sevens:          # drops every record whose number ends in 7
    type: grep
    match: app.**
    exclude:
      message: 7$

sinks:
  out:
    type: file
    match: 'app.**'
    path: {dir}/out.log
    format: raw
    buffer:
      max_bytes: 64KiB
      when_full: block
  elsewhere:
    type: 'null'
    match: other.**
";

#[test]
fn a_yaml_pipeline_delivers_every_record_once_through_its_filter() {
    for name in ["pipeline.yaml", "pipeline.yml"] {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), name, PIPELINE);
        let out = logferry(&["run", "--config"], &path, &[]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let lines = read_lines(&dir.path().join("out.log"));
        let got = numbers_of(&lines);
        let want: Vec<u64> = (0..20_000).filter(|n| n % 10 != 7).collect();
        assert_eq!(got.len(), lines.len(), "{name}: lines that are not numbers");
        assert!(
            got == want,
            "{name}: {} records, {} wanted",
            got.len(),
            want.len()
        );
    }
}

#[test]
fn yaml_errors_name_the_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    // an unknown key, on line 24 at column 5
    let bad = PIPELINE.replace("    format: raw\n", "    format: raw\n    colour: red\n");
    assert_eq!(bad.lines().nth(23), Some("    colour: red"));
    let path = write(dir.path(), "bad.yaml", &bad);
    for command in ["validate", "run", "test"] {
        let out = logferry(&[command, "--config"], &path, &[]);
        assert!(!out.status.success(), "{command}");
        let err = text(&out.stderr);
        let want = format!("{}:24:5: [sinks.out]: unknown key `colour`", path.display());
        assert!(err.contains(&want), "{command}: want {want}\n{err}");
    }
    // a value of the wrong type, inside a list item
    let bad = PIPELINE.replace("    rate: 0\n", "    rate: fast\n");
    let path = write(dir.path(), "type.yaml", &bad);
    let err = text(&logferry(&["validate", "--config"], &path, &[]).stderr);
    assert!(err.contains("type.yaml:6:5: [sources.gen]"), "{err}");
    // not YAML at all: the parser's own line and column
    let bad = PIPELINE.replace("    size: 12\n", "    size: 12\n   tag: x\n");
    let path = write(dir.path(), "syntax.yaml", &bad);
    let out = logferry(&["validate", "--config"], &path, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("syntax.yaml:9:4: "), "{err}");
    // a key with no value (YAML's null), which TOML cannot hold
    let bad = PIPELINE.replace("    path: {dir}/out.log\n", "    path:\n");
    let path = write(dir.path(), "null.yaml", &bad);
    let err = text(&logferry(&["validate", "--config"], &path, &[]).stderr);
    assert!(
        err.contains("null.yaml:22:5: `sinks.out.path`: has no value"),
        "{err}"
    );
    // a missing sink table: the whole file's problem
    let bad = "sources:\n  gen:\n    type: generator\n";
    let path = write(dir.path(), "nosink.yml", bad);
    let err = text(&logferry(&["validate", "--config"], &path, &[]).stderr);
    assert!(err.contains("nosink.yml: no sinks"), "{err}");
}

#[test]
fn environment_variables_are_substituted_in_yaml_values_as_in_toml() {
    let dir = tempfile::tempdir().unwrap();
    let config = PIPELINE
        .replace(
            "path: {dir}/out.log",
            "path: ${YAML_TEST_OUT}/${YAML_TEST_NAME:-fallback}.log",
        )
        .replace("tag: app.numbers", "tag: \"${TAG}\"");
    let path = write(dir.path(), "env.yaml", &config);
    // a value holding YAML (and TOML) syntax is taken literally: it cannot
    // add a key or a component
    let nasty = "app.x\nsinks:\n  evil:\n    type: stdout\n    match: '**'";
    let out = logferry(
        &["validate", "--config"],
        &path,
        &[
            ("YAML_TEST_OUT", &dir.path().display().to_string()),
            ("TAG", nasty),
        ],
    );
    // its one problem: `elsewhere` takes no tag; no sink `evil` appeared
    let err = text(&out.stderr);
    assert!(err.contains("[sinks.elsewhere].match"), "{err}");
    assert!(
        err.contains("1 problem(s) found") && !err.contains("evil"),
        "{err}"
    );

    let out = logferry(
        &["run", "--config"],
        &path,
        &[
            ("YAML_TEST_OUT", &dir.path().display().to_string()),
            ("TAG", "app.env"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = numbers_of(&read_lines(&dir.path().join("fallback.log")));
    assert_eq!(got.len(), 18_000);

    // unset without a default: named with its key's line
    let out = logferry(&["validate", "--config"], &path, &[("TAG", "app.env")]);
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "env.yaml:22:5: `sinks.out.path`: environment variable YAML_TEST_OUT is not set"
        ),
        "{err}"
    );
    // only strings come from the environment: a number cannot, as in TOML
    let config = config.replace("rate: 0", "rate: ${RATE}");
    let path = write(dir.path(), "number.yaml", &config);
    let out = logferry(
        &["validate", "--config"],
        &path,
        &[("RATE", "0"), ("YAML_TEST_OUT", "/tmp"), ("TAG", "app.env")],
    );
    let err = text(&out.stderr);
    assert!(err.contains("number.yaml:6:5: [sources.gen]"), "{err}");
    assert!(err.contains("invalid type: string \"0\""), "{err}");
    // a secret from the environment is not quoted back
    let config = PIPELINE.replace(
        "    format: raw\n",
        "    format: raw\n    password: ${PW}\n",
    );
    let path = write(dir.path(), "secret.yaml", &config);
    let out = logferry(
        &["validate", "--config"],
        &path,
        &[("PW", "hunter2-secret")],
    );
    let err = text(&out.stderr);
    assert!(err.contains("unknown key `password`"), "{err}");
    assert!(!err.contains("hunter2-secret"), "{err}");
}

/// `source`, `filter`, `sink` and the type, from `config example --list`.
fn examples() -> Vec<(String, String)> {
    let out = Command::new(BIN)
        .args(["config", "example", "--list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect()
}

#[test]
fn every_config_example_in_yaml_passes_validate() {
    let dir = tempfile::tempdir().unwrap();
    let examples = examples();
    assert!(examples.len() >= 30, "{examples:?}");
    for (kind, name) in examples {
        let out = Command::new(BIN)
            .args(["config", "example", &kind, &name, "--yaml"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{kind} {name}: {}", text(&out.stderr));
        let example = text(&out.stdout);
        assert!(example.starts_with("# "), "not commented:\n{example}");
        let source = "sources:\n  example_in:\n    type: generator\n    count: 1\n";
        let sink = "sinks:\n  example_out:\n    type: 'null'\n    match: '**'\n";
        let config = match kind.as_str() {
            "source" => format!("{example}{sink}"),
            "sink" => format!("{source}{example}"),
            _ => format!("{source}{example}{sink}"),
        };
        let path = write(dir.path(), &format!("{kind}-{name}.yaml"), &config);
        let out = logferry(&["validate", "--config"], &path, &[]);
        assert!(
            out.status.success(),
            "{kind} {name}: {}\n{config}",
            text(&out.stderr)
        );
    }
}

#[test]
fn logferry_test_runs_the_tests_of_a_yaml_file_and_names_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let config = "\
sources:
  in:
    type: forward
    address: 127.0.0.1:0
filters:
  errors:
    type: grep
    match: app.**
    include:
      level: ^error$
sinks:
  out:
    type: 'null'
    match: app.**
tests:
  - name: passes
    inputs:
      - source: in
        tag: app.web
        records:
          - { level: error, n: 1 }
          - { level: info, n: 2 }
    outputs:
      - sink: out
        count: 1
  - name: fails
    inputs:
      - source: in
        tag: app.web
        records: [{ level: info }]
    outputs:
      - sink: out
        count: 1
";
    let path = write(dir.path(), "tests.yaml", config);
    let out = logferry(&["test", "--config"], &path, &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("test \"passes\" ... ok"), "{stdout}");
    assert!(stdout.ends_with("1 passed, 1 failed\n"), "{stdout}");
    // a test refused before any runs is named by the line of its item
    let bad = config.replacen("      - sink: out\n", "      - sink: elsewhere\n", 2);
    let bad = bad.replacen("      - sink: elsewhere\n", "      - sink: out\n", 1);
    let path = write(dir.path(), "tests.yaml", &bad);
    let out = logferry(&["test", "--config"], &path, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 26: [[tests]]: \"fails\": sink elsewhere is not in the configuration"),
        "{err}"
    );
}

#[test]
fn a_sighup_reloads_a_changed_yaml_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = |sinks: &str| {
        format!("sources:\n  in:\n    type: tcp\n    address: 127.0.0.1:0\n    tag: app\nsinks:\n{sinks}")
    };
    let first = "  a:\n    type: file\n    match: '**'\n    path: {dir}/a.log\n";
    let second = "  b:\n    type: file\n    match: '**'\n    path: {dir}/b.log\n";
    let path = write(dir.path(), "reload.yaml", &config(first));
    let mut cmd = Command::new(BIN);
    cmd.args(["run", "--config"]).arg(&path);
    let mut lf = Logferry::spawn(&mut cmd, tempfile::tempdir().unwrap());
    let addr = lf.address("tcp source listening source=in ");
    let lines = |range: std::ops::Range<usize>| -> Vec<u8> {
        range
            .flat_map(|i| format!("n-{i}\n").into_bytes())
            .collect()
    };
    let mut s = send(addr, &lines(0..1000));
    wait_for_lines(&dir.path().join("a.log"), 1000, Duration::from_secs(30));
    write(
        dir.path(),
        "reload.yaml",
        &config(&format!("{first}{second}")),
    );
    lf.signal(libc::SIGHUP);
    lf.wait_for_log("configuration reloaded", Duration::from_secs(30));
    use std::io::Write;
    s.write_all(&lines(1000..2000)).unwrap();
    drop(s);
    let b = wait_for_lines(&dir.path().join("b.log"), 1000, Duration::from_secs(30));
    assert!(lf.stop().success(), "{}", lf.log_text());
    assert_exactly(&read_lines(&dir.path().join("a.log")), "n", 2000);
    let b: Vec<String> = b.into_iter().filter(|l| l.starts_with("n-")).collect();
    assert_eq!(
        b.len(),
        1000,
        "b.log takes every record sent after the reload"
    );
}
