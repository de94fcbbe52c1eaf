//! `logferry config import` on Vector configurations: a corpus written here
//! (tests/import/vector), each imported as TOML and YAML and checked by
//! `logferry validate`; the notes beside their components; `--strict`; the
//! graph (fan-in, fan-out, wildcards, route outputs) routed by tags as
//! Vector routes it, counted in the files logferry writes; Vector itself
//! and logferry run on the same input with the same (imported) pipeline,
//! their records compared field by field; and Vector's own example
//! configurations, read from its mirror.

mod common;

use std::path::{Path, PathBuf};

use common::import::*;
use common::*;

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/vector")
        .join(rel)
}

/// Environment the corpus refers to: free ports, directories in `dir`,
/// secrets, certificates.
fn corpus_env(dir: &Path) -> Vec<(String, String)> {
    let mut env = ports(&[
        "API_PORT",
        "FORWARD_PORT",
        "SYSLOG_PORT",
        "HTTP_PORT",
        "TCP_PORT",
        "OTLP_PORT",
        "OTLP_GRPC_PORT",
    ]);
    for (k, sub) in [
        ("LOG_ROOT", "log"),
        ("STATE_DIR", "state"),
        ("OUT_DIR", "out"),
    ] {
        env.push((k.into(), dir.join(sub).display().to_string()));
    }
    for k in ["ES_PASSWORD", "SPLUNK_TOKEN"] {
        env.push((k.into(), "secret".into()));
    }
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    pki(&tls);
    env.push(("TLS_DIR".into(), tls.display().to_string()));
    env
}

const CORPUS: &[&str] = &["vector.toml", "vector.yaml"];

#[test]
fn every_corpus_configuration_imports_and_validates_as_toml_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let env = corpus_env(dir.path());
    for file in CORPUS {
        for yaml in [false, true] {
            import_and_validate(&corpus(file), yaml, dir.path(), &env);
        }
    }
}

#[test]
fn keys_not_translated_are_named_beside_their_component() {
    let out = import(&[], &corpus("vector.toml"));
    let text = String::from_utf8(out.stdout).unwrap();
    let summary = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{summary}");
    let web = block_above(&text, "[sources.app_web]");
    assert!(
        web.iter()
            .any(|l| l
                .starts_with("# not translated: ignore_older_secs (logferry follows every file")),
        "{web:?}"
    );
    assert!(
        web.iter()
            .any(|l| l.starts_with("# note: Vector's file field")),
        "{web:?}"
    );
    let s3 = block_above(&text, "[sinks.s3]");
    assert!(
        s3.iter()
            .any(|l| l.contains("not translated: storage_class")),
        "{s3:?}"
    );
    // a component logferry lacks is there, commented out, with why
    let yaml = String::from_utf8(import(&[], &corpus("vector.yaml")).stdout).unwrap();
    assert!(
        yaml.contains("# not translated: logferry has no reduce filter"),
        "{yaml}"
    );
    assert!(
        yaml.contains("# [filters.merge_lines]\n# type = \"reduce\"\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("# not translated: logferry has no stdin source"),
        "{yaml}"
    );
    assert!(
        yaml.contains("# [sinks.forward_raw]\n# type = \"socket\"\n"),
        "{yaml}"
    );
    // global keys at the top
    assert!(
        text.contains("[api]\naddress = \"127.0.0.1:${API_PORT}\""),
        "{text}"
    );
    assert!(text.contains("# note: data_dir ${STATE_DIR}"), "{text}");
    // what was translated: ${VAR} kept, the graph as tags
    assert!(
        text.contains("paths = [\"${LOG_ROOT}/web/*.log\"]"),
        "{text}"
    );
    assert!(text.contains("tag = \"app_web\""), "{text}");
    assert!(
        text.contains("buffer = { type = \"disk\", dir = \"${STATE_DIR}/buffer/archive\", max_bytes = 268435488, when_full = \"block\" }"),
        "{text}"
    );
    assert!(
        text.contains("format = { type = \"ndjson\", time_key = \"\" }"),
        "{text}"
    );
    assert!(
        text.contains("topic = \"logs-${record.service}\""),
        "{text}"
    );
    assert!(
        text.contains(
            "match = \"noisy debug_sample debug_sample.excluded by_level.errors syslog_udp\""
        ),
        "{text}"
    );
    assert!(
        summary.contains("components translated, 0 commented out,"),
        "{summary}"
    );
}

#[test]
fn strict_exits_1_when_anything_is_not_translated() {
    let out = import(&["--strict"], &corpus("vector.toml"));
    assert_eq!(out.status.code(), Some(1));
    assert!(!out.stdout.is_empty(), "the configuration is still printed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--strict"));

    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.yaml");
    std::fs::write(
        &clean,
        "sources:\n  in:\n    type: file\n    include: [/var/log/a.log]\ntransforms:\n  t:\n    type: remap\n    inputs: [in]\n    source: .x = 1\nsinks:\n  out:\n    type: file\n    inputs: [t]\n    path: /tmp/out.log\n    encoding:\n      codec: json\n",
    )
    .unwrap();
    let out = import(&["--strict"], &clean);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = import(&["--strict", "--from", "vector"], &clean);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn bad_files_are_refused_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("vector.toml");
    std::fs::write(&bad, "[sources.in]\ntype = \"file\"\ninclude = [\n").unwrap();
    let out = import(&["--from", "vector"], &bad);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:", bad.display())), "{err}");
    let bad = dir.path().join("vector.yaml");
    std::fs::write(&bad, "sources:\n  in: [\n").unwrap();
    let out = import(&[], &bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("vector.yaml:"));
    // numbers from the environment are filled in at import, and said so
    let env = dir.path().join("env.toml");
    std::fs::write(
        &env,
        "[sources.in]\ntype = \"demo_logs\"\ncount = ${LOGFERRY_TEST_COUNT:-7}\nlines = [\"x\"]\n[sinks.out]\ntype = \"blackhole\"\ninputs = [\"in\"]\n",
    )
    .unwrap();
    let out = import(&[], &env);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("count = 7"), "{text}");
    assert!(
        text.contains("filled in from the environment at import"),
        "{text}"
    );
}

// --- the graph as tags, counted in the files logferry writes

/// Writes `n` numbered lines (`line 0 …`) into `dir/name`.
fn numbered(dir: &Path, name: &str, n: usize, each: impl Fn(usize) -> String) {
    let text: String = (0..n).map(|i| format!("{}\n", each(i))).collect();
    std::fs::write(dir.join(name), text).unwrap();
}

/// Imports `vector` (a Vector configuration's text, `.toml`), runs
/// logferry on it over `IN_DIR`/`OUT_DIR` until `expected` files hold their
/// records, and returns the records of each.
fn route(
    vector: &str,
    input: impl Fn(&Path),
    expected: &[(&str, usize)],
) -> Vec<Vec<serde_json::Value>> {
    let dir = tempfile::tempdir().unwrap();
    let (inp, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&inp).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    input(&inp);
    let config = dir.path().join("vector.toml");
    std::fs::write(&config, vector).unwrap();
    let env = vec![
        ("IN_DIR".to_string(), inp.display().to_string()),
        ("OUT_DIR".to_string(), out.display().to_string()),
    ];
    let outputs: Vec<(PathBuf, usize)> = expected.iter().map(|(f, n)| (out.join(f), *n)).collect();
    let imported = run_imported(&config, &env, &outputs);
    outputs
        .iter()
        .map(|(p, n)| {
            let r = records(p);
            assert_eq!(r.len(), *n, "{}: imported:\n{imported}", p.display());
            r
        })
        .collect()
}

fn has(r: &serde_json::Value, field: &str) -> bool {
    r.get(field).is_some()
}

#[test]
fn fan_in_and_fan_out_route_as_vector_does() {
    // a and b meet in `both`; `a` also goes straight to `raw` (a
    // transform's input read by a sink) and to a second transform
    let files = route(
        r#"
data_dir = "${OUT_DIR}"
[sources.a]
type = "file"
include = ["${IN_DIR}/a.log"]
[sources.b]
type = "file"
include = ["${IN_DIR}/b.log"]
[transforms.both]
type = "remap"
inputs = ["a", "b"]
source = ".both = true"
[transforms.only_a]
type = "remap"
inputs = ["a"]
source = ".only_a = true"
[transforms.after_both]
type = "remap"
inputs = ["both"]
source = ".after = true"
[sinks.merged]
type = "file"
inputs = ["after_both"]
path = "${OUT_DIR}/merged.log"
encoding.codec = "json"
[sinks.raw]
type = "file"
inputs = ["a"]
path = "${OUT_DIR}/raw.log"
encoding.codec = "json"
[sinks.a_side]
type = "file"
inputs = ["only_a", "both"]
path = "${OUT_DIR}/a_side.log"
encoding.codec = "json"
"#,
        |d| {
            numbered(d, "a.log", 300, |i| format!("a {i}"));
            numbered(d, "b.log", 200, |i| format!("b {i}"));
        },
        &[("merged.log", 500), ("raw.log", 300), ("a_side.log", 800)],
    );
    assert!(files[0]
        .iter()
        .all(|r| has(r, "both") && has(r, "after") && !has(r, "only_a")));
    assert!(files[1]
        .iter()
        .all(|r| !has(r, "both") && !has(r, "only_a")));
    assert!(files[1]
        .iter()
        .all(|r| r["source_type"] == "file" && has(r, "host") && has(r, "timestamp")));
    assert!(files[1]
        .iter()
        .all(|r| r["file"].as_str().unwrap().ends_with("/a.log")));
    let only_a = files[2].iter().filter(|r| has(r, "only_a")).count();
    let both = files[2]
        .iter()
        .filter(|r| has(r, "both") && !has(r, "after"))
        .count();
    assert_eq!((only_a, both), (300, 500));
    assert!(files[2]
        .iter()
        .all(|r| !(has(r, "only_a") && has(r, "both"))));
}

#[test]
fn wildcards_and_route_outputs_route_as_vector_does() {
    let files = route(
        r#"
data_dir = "${OUT_DIR}"
[sources.app_web]
type = "file"
include = ["${IN_DIR}/web.log"]
[sources.app_db]
type = "file"
include = ["${IN_DIR}/db.log"]
[sources.sys]
type = "file"
include = ["${IN_DIR}/sys.log"]
[transforms.split]
type = "route"
inputs = ["app_*"]
route.errors = 'contains(string!(.message), "ERROR")'
route.slow = 'contains(string!(.message), "slow")'
[sinks.apps]
type = "file"
inputs = ["app_*"]
path = "${OUT_DIR}/apps.log"
encoding.codec = "json"
[sinks.errors]
type = "file"
inputs = ["split.errors"]
path = "${OUT_DIR}/errors.log"
encoding.codec = "json"
[sinks.slow]
type = "file"
inputs = ["split.slow"]
path = "${OUT_DIR}/slow.log"
encoding.codec = "json"
[sinks.rest]
type = "file"
inputs = ["split._unmatched"]
path = "${OUT_DIR}/rest.log"
encoding.codec = "json"
[sinks.every_route]
type = "file"
inputs = ["split.*"]
path = "${OUT_DIR}/every_route.log"
encoding.codec = "json"
[sinks.all]
type = "file"
inputs = ["*"]
path = "${OUT_DIR}/all.log"
encoding.codec = "json"
"#,
        |d| {
            // of every 10 lines: 0 ERROR, 5 slow, 3 ERROR and slow
            let line = |p: &str, i: usize| match i % 10 {
                0 => format!("{p} {i} ERROR"),
                5 => format!("{p} {i} slow"),
                3 => format!("{p} {i} ERROR slow"),
                _ => format!("{p} {i} ok"),
            };
            numbered(d, "web.log", 100, |i| line("web", i));
            numbered(d, "db.log", 50, |i| line("db", i));
            numbered(d, "sys.log", 40, |i| line("sys", i));
        },
        // 150 app lines: 30 errors, 30 slow (15 of each overlap), 105 unmatched;
        // "*" takes the sources and every route output: 190 + 30 + 30 + 105
        &[
            ("apps.log", 150),
            ("errors.log", 30),
            ("slow.log", 30),
            ("rest.log", 105),
            ("every_route.log", 165),
            ("all.log", 355),
        ],
    );
    assert!(files[1]
        .iter()
        .all(|r| r["message"].as_str().unwrap().contains("ERROR")));
    assert!(files[3]
        .iter()
        .all(|r| r["message"].as_str().unwrap().ends_with("ok")));
    assert!(files[0]
        .iter()
        .all(|r| !r["message"].as_str().unwrap().starts_with("sys")));
}

// --- Vector's own example configurations, read from its mirror

const VECTOR: Mirror = Mirror("/work/.mirror/vectordotdev+vector/repo");

#[test]
fn vector_example_configurations_import() {
    if !VECTOR.exists() {
        skipped("no Vector source mirror at /work/.mirror/vectordotdev+vector/repo (the `fetch` of github:vectordotdev/vector brings it)");
        return;
    }
    let names = VECTOR.list(
        "config/examples/",
        true,
        &[".toml", ".yaml", ".yml", ".json"],
    );
    assert!(!names.is_empty(), "config/examples/ lists no configuration");
    let dir = tempfile::tempdir().unwrap();
    VECTOR.copy(&names, dir.path());
    let env = corpus_env(dir.path());
    let t = tally(&names, dir.path(), &env);
    eprintln!("Vector config/examples/: {} files: {t:?}", names.len());
    assert!(t.failed.is_empty(), "{:#?}", t.failed);
    assert!(t.valid > 0);
}
