//! `logferry config import` on Fluent Bit configurations: a corpus written
//! here (tests/import/fluent-bit), each imported as TOML and YAML and
//! checked by `logferry validate`; `--strict`; the notes beside their
//! components; Fluent Bit itself and logferry run on the same input with
//! the same (imported) pipeline, their records compared field by field;
//! and Fluent Bit's own example configurations, read from its mirror.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fluent-bit")
        .join(rel)
}

fn import(args: &[&str], file: &Path) -> Output {
    Command::new(BIN)
        .args(["config", "import"])
        .args(args)
        .arg(file)
        .output()
        .expect("run logferry config import")
}

/// Environment the corpus refers to: free ports and directories in `dir`.
fn corpus_env(dir: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        "API_PORT",
        "FORWARD_PORT",
        "SYSLOG_PORT",
        "HTTP_PORT",
        "TCP_PORT",
        "UDP_PORT",
        "OTLP_PORT",
    ]
    .iter()
    .map(|k| (k.to_string(), free_port().to_string()))
    .collect();
    for (k, sub) in [
        ("LOG_ROOT", "log"),
        ("STATE_DIR", "state"),
        ("OUT_DIR", "out"),
    ] {
        env.push((k.into(), dir.join(sub).display().to_string()));
    }
    for k in [
        "FORWARD_KEY",
        "FORWARD_PASSWORD",
        "ALERT_PASSWORD",
        "OPENSEARCH_PASSWORD",
        "ES_PASSWORD",
        "LOKI_PASSWORD",
        "SPLUNK_TOKEN",
    ] {
        env.push((k.into(), "secret".into()));
    }
    env.push(("HOSTNAME".into(), "host-1".into()));
    // ca.pem, server.pem and server.key, which the corpus's TLS keys name
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    pki(&tls);
    env.push(("TLS_DIR".into(), tls.display().to_string()));
    env
}

fn validate(config: &Path, env: &[(String, String)]) -> Output {
    Command::new(BIN)
        .args(["validate", "--config"])
        .arg(config)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run logferry validate")
}

const CORPUS: &[&str] = &[
    "fluent-bit.conf",
    "kubernetes.conf",
    "aggregator.conf",
    "yaml/fluent-bit.yaml",
];

#[test]
fn every_corpus_configuration_imports_and_validates_as_toml_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let env = corpus_env(dir.path());
    for file in CORPUS {
        for (flag, ext) in [(None, "toml"), (Some("--yaml"), "yaml")] {
            let out = import(flag.as_slice(), &corpus(file));
            assert!(
                out.status.success(),
                "{file}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let summary = String::from_utf8_lossy(&out.stderr);
            assert!(summary.contains("components translated"), "{summary}");
            let path = dir.path().join(format!("{}.{ext}", file.replace('/', "_")));
            std::fs::write(&path, &out.stdout).unwrap();
            let v = validate(&path, &env);
            assert!(
                v.status.success(),
                "{file} as {ext} does not validate:\n{}\n{}",
                String::from_utf8_lossy(&v.stderr),
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}

/// The lines of `text` from the comment block above `header` to it.
fn block_above<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == header)
        .unwrap_or_else(|| panic!("no {header} in\n{text}"));
    let start = lines[..at]
        .iter()
        .rposition(|l| !l.trim_start().starts_with('#'))
        .map_or(0, |i| i + 1);
    lines[start..at].to_vec()
}

#[test]
fn keys_not_translated_are_named_beside_their_component() {
    let out = import(&[], &corpus("fluent-bit.conf"));
    let text = String::from_utf8(out.stdout).unwrap();
    let tail = block_above(&text, "[sources.app_files]");
    assert!(
        tail.iter().any(|l| l.starts_with(
            "# not translated: Mem_Buf_Limit 50MB (logferry bounds memory with [limits] memory"
        )),
        "{tail:?}"
    );
    assert!(
        tail.iter()
            .any(|l| l.contains("not translated: rotate_wait 5")),
        "{tail:?}"
    );
    let rm = block_above(&text, "[filters.record_modifier_0]");
    assert!(
        rm.iter().any(|l| l.contains("not translated: UUID_key")),
        "{rm:?}"
    );
    // a component logferry lacks is there, commented out, with why
    assert!(
        text.contains("# not translated: logferry runs no Lua"),
        "{text}"
    );
    assert!(
        text.contains("# [filters.lua_0]\n# type = \"lua\"\n"),
        "{text}"
    );
    // service keys at the top
    assert!(
        text.contains("# not translated: [SERVICE] Log_Level"),
        "{text}"
    );
    // what was translated: @SET, ${VAR} kept, Match as logferry patterns
    assert!(
        text.contains("paths = [\"${LOG_ROOT}/app/*.log\", \"${LOG_ROOT}/app/*.out\"]"),
        "{text}"
    );
    assert!(text.contains("set = { env = \"production\" }"), "{text}");
    assert!(text.contains("match = \"app.*.**\""), "{text}");
    assert!(text.contains("match = \"{app,syslog,web}.*.**\""), "{text}");
    assert!(
        text.contains("[api]\naddress = \"127.0.0.1:${API_PORT}\""),
        "{text}"
    );
    assert!(text.contains("buffer = { type = \"disk\", dir = \"${STATE_DIR}/flb-storage/file_0\", max_bytes = \"512MiB\" }"), "{text}");
    let summary = String::from_utf8(out.stderr).unwrap();
    assert!(
        summary.contains("components translated, 1 commented out,"),
        "{summary}"
    );
}

#[test]
fn strict_exits_1_when_anything_is_not_translated() {
    let out = import(&["--strict"], &corpus("kubernetes.conf"));
    assert_eq!(out.status.code(), Some(1));
    assert!(!out.stdout.is_empty(), "the configuration is still printed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--strict"));

    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.conf");
    std::fs::write(
        &clean,
        "[INPUT]\n    Name forward\n    Listen 127.0.0.1\n    Port 0\n\n[OUTPUT]\n    Name  file\n    Match *\n    Path  /tmp\n    File  x.log\n    Format plain\n",
    )
    .unwrap();
    let out = import(&["--strict"], &clean);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = import(&["--strict", "--from", "fluent-bit"], &clean);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn fluentd_and_vector_are_refused_as_not_yet_supported() {
    let dir = tempfile::tempdir().unwrap();
    let td = dir.path().join("td-agent.conf");
    std::fs::write(
        &td,
        "<source>\n  @type forward\n</source>\n<match **>\n  @type stdout\n</match>\n",
    )
    .unwrap();
    let out = import(&[], &td);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fluentd configurations is not yet supported"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let vector = dir.path().join("vector.toml");
    std::fs::write(&vector, "[sources.in]\ntype = \"stdin\"\n").unwrap();
    let out = import(&[], &vector);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("vector configurations is not yet supported")
    );
    let out = import(&["--from", "vector"], &corpus("fluent-bit.conf"));
    assert_eq!(out.status.code(), Some(2));
    let unknown = dir.path().join("x.txt");
    std::fs::write(&unknown, "hello\n").unwrap();
    let out = import(&[], &unknown);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from"));
}

#[test]
fn an_input_no_output_matches_goes_to_a_null_sink_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("fluent-bit.conf");
    std::fs::write(
        &conf,
        "[INPUT]\n    Name dummy\n    Tag  debug.beat\n\n[INPUT]\n    Name dummy\n    Tag  app.web\n\n[OUTPUT]\n    Name  null\n    Match app.*\n",
    )
    .unwrap();
    let out = import(&[], &conf);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("[sinks.unrouted]\ntype = \"null\"\nmatch = \"debug.beat\"\n"),
        "{text}"
    );
    let path = dir.path().join("logferry.toml");
    std::fs::write(&path, &text).unwrap();
    let v = validate(&path, &[]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
}

// --- differential: Fluent Bit and the imported logferry on the same input

/// A record's text with its keys in sorted order at every level, so two
/// sides that write fields in different orders sort alike.
fn canonical(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let mut fields: Vec<(&String, String)> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            fields.sort();
            let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
            format!("{{{}}}", inner.join(","))
        }
        serde_json::Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

/// JSON lines of `path`, as values, sorted by their text (order across the
/// two runs is not compared: the records are).
fn records(path: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = read_lines(path)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    v.sort_by_key(canonical);
    v
}

/// Runs Fluent Bit on `config` until `outputs` hold `expected` lines.
fn run_fluent_bit(
    bin: &Path,
    config: &Path,
    env: &[(String, String)],
    outputs: &[(PathBuf, usize)],
) {
    let mut child = Command::new(bin)
        .arg("-c")
        .arg(config)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fluent-bit");
    for (path, n) in outputs {
        wait_for_lines(path, *n, Duration::from_secs(60));
    }
    // what Fluent Bit flushes late would show as extra lines
    std::thread::sleep(Duration::from_secs(2));
    let _ = child.kill();
    let _ = child.wait();
}

/// Imports `config`, runs logferry on it until `outputs` hold `expected` lines.
fn run_imported(config: &Path, env: &[(String, String)], outputs: &[(PathBuf, usize)]) -> String {
    let out = import(&[], config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lf = Logferry::start_with_env(&text, env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for (path, n) in outputs {
        wait_for_lines(path, *n, Duration::from_secs(60));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(lf.stop().success(), "{}", lf.log_text());
    text
}

/// Every record of `ours` equals the one of `theirs`, field by field.
fn assert_same_records(
    what: &str,
    theirs: &[serde_json::Value],
    ours: &[serde_json::Value],
    config: &str,
) {
    assert_eq!(
        theirs.len(),
        ours.len(),
        "{what}: record counts differ; imported:\n{config}"
    );
    for (t, o) in theirs.iter().zip(ours) {
        assert_eq!(t, o, "{what}: records differ; imported:\n{config}");
    }
}

fn fluent_bit() -> Option<PathBuf> {
    if !peer_is_built("ANCHOR_FLUENTBIT", "Fluent Bit") {
        return None;
    }
    let p = peer_path("ANCHOR_FLUENTBIT")?;
    // the variable names either the binary or its install directory
    if p.is_dir() {
        Some(p.join("bin/fluent-bit"))
    } else {
        Some(p)
    }
}

/// What one side of a differential run wrote: the records of each output
/// file, sorted; and the imported configuration (logferry's side).
struct Written {
    files: Vec<Vec<serde_json::Value>>,
    config: String,
}

/// Runs Fluent Bit on `config`, then logferry on its import, over the
/// input files in `input`, until the `expected` files (name, records) are
/// written; Fluent Bit's records are passed through `normalise`.
fn run_both(
    bin: &Path,
    config: &Path,
    dir: &Path,
    input: &Path,
    expected: &[(&str, usize)],
    normalise: impl Fn(&mut serde_json::Value),
) -> [Written; 2] {
    ["fluent-bit", "logferry"].map(|who| {
        let out_dir = dir.join(who);
        std::fs::create_dir_all(&out_dir).unwrap();
        let env = vec![
            ("IN_DIR".to_string(), input.display().to_string()),
            ("OUT_DIR".to_string(), out_dir.display().to_string()),
        ];
        let outputs: Vec<(PathBuf, usize)> = expected
            .iter()
            .map(|(f, n)| (out_dir.join(f), *n))
            .collect();
        let config = if who == "fluent-bit" {
            run_fluent_bit(bin, config, &env, &outputs);
            String::new()
        } else {
            run_imported(config, &env, &outputs)
        };
        let mut files: Vec<Vec<serde_json::Value>> =
            outputs.iter().map(|(p, _)| records(p)).collect();
        if who == "fluent-bit" {
            for f in files.iter_mut() {
                f.iter_mut().for_each(&normalise);
                f.sort_by_key(canonical);
            }
        }
        Written { files, config }
    })
}

/// Both sides wrote the expected number of records to every file, and the
/// same records, field by field.
fn assert_same(expected: &[(&str, usize)], sides: &[Written; 2]) {
    let [theirs, ours] = sides;
    for (i, (file, n)) in expected.iter().enumerate() {
        assert_eq!(theirs.files[i].len(), *n, "Fluent Bit's {file}");
        assert_same_records(file, &theirs.files[i], &ours.files[i], &ours.config);
    }
}

#[test]
fn differential_tail_grep_parser_modify_to_file_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    let mut expected = 0;
    for n in 0..3000 {
        let level = ["INFO", "DEBUG", "ERROR", "WARN"][n % 4];
        text.push_str(&format!(
            "2026-12-06T10:{:02}:{:02} {level} n={n} user=u{n} password=p{n} did thing {n}\n",
            (n / 60) % 60,
            n % 60
        ));
        // the grep: Exclude n=\d*7 (any 7 in n), then Regex (INFO|ERROR)
        if (level == "INFO" || level == "ERROR") && !n.to_string().contains('7') {
            expected += 1;
        }
    }
    std::fs::write(input.join("app.log"), text).unwrap();
    let config = corpus("differential/parse-grep-modify.conf");
    let expected = [("out.log", expected)];
    let sides = run_both(&bin, &config, dir.path(), &input, &expected, |_| {});
    assert_same(&expected, &sides);
    let first = &sides[1].files[0][0];
    assert!(
        first.get("password").is_none() && first.get("log").is_none(),
        "{first}"
    );
    assert_eq!(first["env"], "prod");
    assert!(first["n"].is_u64(), "{first}");
}

#[test]
fn differential_yaml_multiline_rewrite_tag_grep_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    let (mut app, mut errors) = (0, 0);
    for n in 0..1500 {
        let level = if n % 3 == 0 { "ERROR" } else { "INFO" };
        text.push_str(&format!("{n} {level} request {n} failed\n"));
        for frame in 0..(n % 4) {
            text.push_str(&format!(
                "    at com.example.Handler.step{frame}(Handler.java:{n})\n"
            ));
        }
        // the grep drops records whose number ends in 5
        if n % 10 != 5 {
            *if level == "ERROR" {
                &mut errors
            } else {
                &mut app
            } += 1;
        }
    }
    // the last record ends once the file is quiet for the flush timeout
    std::fs::write(input.join("trace.log"), text).unwrap();
    let config = corpus("differential/multiline-rewrite.yaml");
    let expected = [("app.log", app), ("errors.log", errors)];
    // Fluent Bit's multiline parser keeps each record's last line end;
    // logferry's does not (docs/migrating.md, "Multiline")
    let sides = run_both(&bin, &config, dir.path(), &input, &expected, |r| {
        if let Some(log) = r["log"].as_str().and_then(|l| l.strip_suffix('\n')) {
            r["log"] = serde_json::Value::String(log.to_string());
        }
    });
    assert_same(&expected, &sides);
    let joined = sides[1].files[0]
        .iter()
        .find(|r| r["log"].as_str().unwrap_or("").starts_with("2 INFO"))
        .expect("record 2");
    assert!(
        joined["log"]
            .as_str()
            .unwrap_or("")
            .ends_with("step1(Handler.java:2)"),
        "{joined}"
    );
}

#[test]
fn differential_json_parser_lift_record_modifier_rewrite_tag_keep_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    let mut errors = 0;
    let total = 2000;
    for n in 0..total {
        let level = ["info", "error", "warn", "debug", "error"][n % 5];
        text.push_str(&format!(
            "{{\"ts\":\"2026-12-06T10:{:02}:{:02}.{:03}+0000\",\"level\":\"{level}\",\"n\":{n},\"ratio\":{}.5,\"ok\":{},\"kubernetes\":{{\"pod\":\"web-{}\",\"namespace\":\"shop\"}},\"msg\":\"event {n}\"}}\n",
            (n / 60) % 60,
            n % 60,
            n % 1000,
            n % 7,
            n % 2 == 0,
            n % 3
        ));
        if level == "error" {
            errors += 1;
        }
    }
    std::fs::write(input.join("events.log"), text).unwrap();
    let config = corpus("differential/json-lift-keep.conf");
    // KEEP true: every record stays under its tag, the errors also go on
    // under errors.events
    let expected = [("app.log", total), ("errors.log", errors)];
    let sides = run_both(&bin, &config, dir.path(), &input, &expected, |_| {});
    assert_same(&expected, &sides);
    let first = &sides[1].files[0][0];
    assert!(
        first.get("kubernetes").is_none() && first.get("msg").is_none(),
        "{first}"
    );
    assert_eq!(first["env"], "prod");
    assert!(first["ts"].is_string(), "Time_Keep: {first}");
}

#[test]
fn differential_yaml_nested_grep_or_modify_nest_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = String::new();
    let mut expected = 0;
    for n in 0..2500 {
        let app = ["web", "api", "web-admin", "db"][n % 4];
        let level = ["info", "error", "debug"][n % 3];
        text.push_str(&format!(
            "{{\"log\":\"{{\\\"n\\\":{n},\\\"level\\\":\\\"{level}\\\",\\\"msg\\\":\\\"m{n}\\\",\\\"secret\\\":\\\"s\\\",\\\"http_status\\\":{},\\\"http_path\\\":\\\"/p/{n}\\\",\\\"kubernetes\\\":{{\\\"labels\\\":{{\\\"app\\\":\\\"{app}\\\"}}}}}}\"}}\n",
            200 + n % 5
        ));
        if app == "web" || level == "error" {
            expected += 1;
        }
    }
    // each line is {"log": "<json>"}, as a container runtime writes it,
    // and the parser reads the field named log
    let lines: String = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!("{}\n", v["log"].as_str().unwrap())
        })
        .collect();
    std::fs::write(input.join("pods.log"), lines).unwrap();
    let config = corpus("differential/nested-grep-or.yaml");
    let expected = [("pods.log", expected)];
    let sides = run_both(&bin, &config, dir.path(), &input, &expected, |_| {});
    assert_same(&expected, &sides);
    let first = &sides[1].files[0][0];
    assert!(first["http"]["status"].is_u64(), "{first}");
    assert!(
        first.get("secret").is_none() && first.get("msg").is_none(),
        "{first}"
    );
}

// --- Fluent Bit's own example and test configurations

const FLUENT_BIT_MIRROR: &str = "/work/.mirror/fluent+fluent-bit/repo";

/// Runs git on the Fluent Bit mirror.
fn mirror_git(args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(FLUENT_BIT_MIRROR)
        .args(args)
        .output()
        .expect("run git");
    out.stdout
}

/// Copies the mirror's files `names` (paths in the repository) under
/// `dir`, keeping their paths, so their @INCLUDE and Parsers_File find
/// each other; nothing is copied into this repository.
fn from_mirror(names: &[String], dir: &Path) {
    for f in names {
        let path = dir.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, mirror_git(&["show", &format!("HEAD:{f}")])).unwrap();
    }
}

/// What became of a set of imported configurations.
#[derive(Default, Debug)]
struct Tally {
    /// Imported and validated.
    valid: usize,
    /// Imported, with plugins logferry lacks commented out (and listed):
    /// what is left may not validate (a sink no source feeds).
    with_exceptions: usize,
    /// No pipeline in the file: parsers files, plugin lists.
    no_pipeline: usize,
    /// Neither validated nor listed a component it could not translate.
    failed: Vec<String>,
}

/// Imports and validates each of `names` under `dir` with `env`.
fn tally(names: &[String], dir: &Path, env: &[(String, String)]) -> Tally {
    let mut t = Tally::default();
    for (n, f) in names.iter().enumerate() {
        let out = Command::new(BIN)
            .args(["config", "import"])
            .arg(dir.join(f))
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("run logferry config import");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let commented = ["# [sources.", "# [filters.", "# [sinks."]
            .iter()
            .any(|h| text.contains(h));
        let has_pipeline = text.contains("\n[sources.") || text.contains("\n[sinks.") || commented;
        if !out.status.success() || !has_pipeline {
            t.no_pipeline += 1;
            continue;
        }
        let imported = dir.join(format!("imported-{n}.toml"));
        std::fs::write(&imported, &text).unwrap();
        let v = validate(&imported, env);
        let stderr = String::from_utf8_lossy(&v.stderr).to_string();
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        // a fixed port of an example (24224) may be taken by another run
        let busy = !errors.is_empty() && errors.iter().all(|l| l.contains("in use"));
        if v.status.success() || busy {
            t.valid += 1;
        } else if commented {
            t.with_exceptions += 1;
        } else {
            t.failed.push(format!("{f}: {}", errors.join(" / ")));
        }
    }
    t
}

#[test]
fn fluent_bit_example_configurations_import() {
    if !Path::new(FLUENT_BIT_MIRROR).exists() {
        skipped("no Fluent Bit source mirror at /work/.mirror/fluent+fluent-bit/repo (the `fetch` of github:fluent/fluent-bit brings it)");
        return;
    }
    let list = mirror_git(&["ls-tree", "--name-only", "HEAD", "conf/"]);
    let names: Vec<String> = String::from_utf8_lossy(&list)
        .lines()
        .filter(|f| f.ends_with(".conf") || f.ends_with(".yaml") || f.ends_with(".yml"))
        .map(String::from)
        .collect();
    assert!(!names.is_empty(), "conf/ lists no configuration");
    let dir = tempfile::tempdir().unwrap();
    from_mirror(&names, dir.path());
    let env = corpus_env(dir.path());
    let t = tally(&names, dir.path(), &env);
    eprintln!("Fluent Bit conf/: {} files: {t:?}", names.len());
    assert!(t.failed.is_empty(), "{:#?}", t.failed);
    assert!(t.valid > 0);
}

/// The configurations of Fluent Bit's integration tests, with the
/// environment its test harness would give them: ports, certificates,
/// paths, a parsers file.
#[test]
fn fluent_bit_integration_test_configurations_import() {
    if !Path::new(FLUENT_BIT_MIRROR).exists() {
        skipped("no Fluent Bit source mirror at /work/.mirror/fluent+fluent-bit/repo (the `fetch` of github:fluent/fluent-bit brings it)");
        return;
    }
    let list = mirror_git(&[
        "ls-tree",
        "-r",
        "--name-only",
        "HEAD",
        "tests/integration/scenarios",
    ]);
    let names: Vec<String> = String::from_utf8_lossy(&list)
        .lines()
        .filter(|f| f.contains("/config/"))
        .filter(|f| f.ends_with(".conf") || f.ends_with(".yaml") || f.ends_with(".yml"))
        .map(String::from)
        .collect();
    if names.is_empty() {
        skipped("the Fluent Bit mirror has no tests/integration/scenarios/*/config");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    from_mirror(&names, dir.path());
    from_mirror(&["conf/parsers.conf".to_string()], dir.path());
    let tls = dir.path().join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    let pki = pki(&tls);
    let mut vars: Vec<String> = Vec::new();
    for f in &names {
        let text = std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
        for part in text.split("${").skip(1) {
            if let Some((name, _)) = part.split_once('}') {
                if !vars.iter().any(|v| v == name) {
                    vars.push(name.to_string());
                }
            }
        }
    }
    let env: Vec<(String, String)> = vars
        .into_iter()
        .map(|v| {
            let value = match v.as_str() {
                "CERTIFICATE_TEST" => pki.server_cert.display().to_string(),
                "PRIVATE_KEY_TEST" => pki.server_key.display().to_string(),
                "OTEL_TAG_FROM_URI" => "true".into(),
                "OTEL_OUTPUT_MATCH" => "*".into(),
                "OTEL_INPUT_TAG" => "otel".into(),
                v if v.ends_with("PORT") => free_port().to_string(),
                v if v.ends_with("SIZE") => "10M".into(),
                v if v.contains("PARSERS_FILE") => {
                    dir.path().join("conf/parsers.conf").display().to_string()
                }
                v => dir.path().join("state").join(v).display().to_string(),
            };
            (v, value)
        })
        .collect();
    let t = tally(&names, dir.path(), &env);
    eprintln!("Fluent Bit tests/integration: {} files: {t:?}", names.len());
    assert!(t.failed.is_empty(), "{:#?}", t.failed);
}
