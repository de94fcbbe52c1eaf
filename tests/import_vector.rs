//! `logferry config import` on Vector configurations: a corpus written here
//! (tests/import/vector), each imported as TOML and YAML and checked by
//! `logferry validate`; the notes beside their components; `--strict`; the
//! graph (fan-in, fan-out, wildcards, route outputs) routed by tags as
//! Vector routes it, counted in the files logferry writes; Vector itself
//! and logferry run on the same input with the same (imported) pipeline,
//! their records compared field by field. Vector's own example
//! configurations are checked by `logferry bench import-corpus`
//! (tests/import_corpus.rs).

mod common;

use std::path::{Path, PathBuf};

use common::import::*;
use common::*;

/// A file of the corpus written here for Vector configurations.
fn corpus(rel: &str) -> PathBuf {
    corpus_file("vector", rel)
}

const CORPUS: &[&str] = &[
    "vector.toml",
    "vector.yaml",
    "exclusive-route.yaml",
    "more.yaml",
    "small.json",
];

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
    // Vector's file field (the file_key) is each record's path
    assert!(text.contains("path_key = \"file\""), "{text}");
    assert!(text.contains("path_key = \"path\""), "{text}");
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
            "match = \"noisy debug_sample debug_sample.excluded debug_sample.keyed by_level.errors syslog_udp\""
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
    assert_strict(
        &corpus("vector.toml"),
        "clean.yaml",
        "sources:\n  in:\n    type: file\n    include: [/var/log/a.log]\ntransforms:\n  t:\n    type: remap\n    inputs: [in]\n    source: .x = 1\nsinks:\n  out:\n    type: file\n    inputs: [t]\n    path: /tmp/out.log\n    encoding:\n      codec: json\n",
        "vector",
    );
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

// --- differential: Vector and the imported logferry on the same input

/// The components the differential corpus (tests/import/vector/differential)
/// runs, by kind as `vector list` names them. Vector is built with a
/// chosen set of features, so a build may lack some.
const COMPONENTS: &[(&str, &[&str])] = &[
    ("sources", &["file", "fluent"]),
    (
        "transforms",
        &["remap", "filter", "route", "sample", "throttle"],
    ),
    ("sinks", &["file"]),
];

/// The peers' Vector, if it is built with every one of [`COMPONENTS`].
fn vector() -> Option<PathBuf> {
    if !peer_is_built("ANCHOR_VECTOR", "Vector") {
        return None;
    }
    let bin = peer_path("ANCHOR_VECTOR")?;
    let out = std::process::Command::new(&bin)
        .args(["list", "--format", "json"])
        .output()
        .expect("run vector list");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "`vector list`: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let missing: Vec<String> = COMPONENTS
        .iter()
        .flat_map(|(kind, names)| {
            let have = &listed[kind];
            names
                .iter()
                .filter(|n| !have.as_array().is_some_and(|a| a.iter().any(|h| h == **n)))
                .map(move |n| format!("{kind}.{n}"))
        })
        .collect();
    if !missing.is_empty() {
        peer_unusable(&format!(
            "Vector at {} is built without {} (`vector list`); rebuild it with the peers' \
             build script and VECTOR_FEATURES naming them too (transforms-remap, \
             transforms-filter, transforms-route, transforms-sample, transforms-throttle)",
            bin.display(),
            missing.join(", ")
        ));
        return None;
    }
    Some(bin)
}

/// Vector `bin` as the peer of [`run_both`]: Vector 0.57 fills in
/// environment variables only when asked to.
fn vector_on(bin: &Path) -> impl Fn(&Path) -> std::process::Command + '_ {
    move |config| {
        let mut command = std::process::Command::new(bin);
        command
            .arg("--dangerously-allow-env-var-interpolation")
            .arg("--config")
            .arg(config);
        command
    }
}

/// A record with the time it was read (which no two runs share) made
/// the same: Vector's and logferry's `timestamp` are both RFC 3339 strings.
fn normalise(r: &mut serde_json::Value) {
    if let Some(t) = r.get_mut("timestamp") {
        let is_time = t
            .as_str()
            .is_some_and(|s| s.len() >= 20 && s.as_bytes()[4] == b'-' && s.ends_with('Z'));
        assert!(is_time, "timestamp {t} is not RFC 3339 in UTC");
        *t = "<time>".into();
    }
}

/// Runs Vector and logferry (on the import of `differential/NAME`) over
/// the input `input` writes, until the `expected` files hold their
/// records; both sides' records, times normalised, must be the same.
fn differential(
    name: &str,
    input: impl Fn(&Path),
    expected: &[(&str, usize)],
) -> Option<[Written; 2]> {
    differential_with(name, input, expected, |_| {})
}

/// [`differential`], the peer's records passed through `peer_only` too.
fn differential_with(
    name: &str,
    input: impl Fn(&Path),
    expected: &[(&str, usize)],
    peer_only: impl Fn(&mut serde_json::Value),
) -> Option<[Written; 2]> {
    let bin = vector()?;
    let dir = tempfile::tempdir().unwrap();
    let inp = dir.path().join("in");
    std::fs::create_dir_all(&inp).unwrap();
    input(&inp);
    let config = corpus(&format!("differential/{name}"));
    let mut sides = run_both(
        vector_on(&bin),
        &config,
        dir.path(),
        &inp,
        expected,
        peer_only,
    );
    for side in sides.iter_mut() {
        for f in side.files.iter_mut() {
            f.iter_mut().for_each(normalise);
            f.sort_by_key(canonical);
        }
    }
    assert_same(expected, &sides);
    Some(sides)
}

const LEVELS: [&str; 5] = ["info", "debug", "error", "warn", "info"];

/// Line `i` of the numbered input: `n=I level=L user=uK msg=thing-I`.
fn app_line(i: usize) -> String {
    format!(
        "n={i} level={} user=u{} msg=thing-{i}",
        LEVELS[i % 5],
        i % 7
    )
}

fn app_log(n: usize) -> impl Fn(&Path) {
    move |d| numbered(d, "app.log", n, app_line)
}

fn count(n: usize, keep: impl Fn(usize) -> bool) -> usize {
    (0..n).filter(|i| keep(*i)).count()
}

#[test]
fn differential_remap_parses_key_values_as_vector_does() {
    let Some(sides) = differential("remap-kv.toml", app_log(600), &[("out.log", 600)]) else {
        return;
    };
    let r = &sides[1].files[0][0];
    assert!(
        r["n"].is_i64() && r.get("file").is_none() && r["host"].is_string(),
        "{r}"
    );
}

#[test]
fn differential_filter_conditions_as_vector_does() {
    let n = 600;
    let kept = count(n, |i| i % 5 != 1 && i % 2 == 0);
    differential("filter.toml", app_log(n), &[("out.log", kept)]);
}

#[test]
fn differential_route_outputs_as_vector_does() {
    let n = 700;
    let errors = count(n, |i| i % 5 == 2);
    let zero = count(n, |i| i % 7 == 0);
    let rest = count(n, |i| i % 5 != 2 && i % 7 != 0);
    differential(
        "route.toml",
        app_log(n),
        &[
            ("errors.log", errors),
            ("user_zero.log", zero),
            ("rest.log", rest),
        ],
    );
}

#[test]
fn differential_throttle_per_key_as_vector_does() {
    differential("throttle.yaml", app_log(500), &[("out.log", 500)]);
}

#[test]
fn differential_sample_with_exclude_as_vector_does() {
    let n = 600;
    let sampled = count(n, |i| i % 5 != 2);
    let kept = count(n, |i| i % 5 == 2) + sampled.div_ceil(3);
    differential("sample.toml", app_log(n), &[("out.log", kept)]);
}

#[test]
fn differential_sample_by_key_hashes_as_vector_does() {
    let n = 700;
    // Vector's seahash keeps user u2 (one user in seven, for a rate of
    // 3), and every error line, which is excluded from sampling
    let kept = count(n, |i| i % 5 == 2 || i % 7 == 2);
    let Some(sides) = differential("sample-key.toml", app_log(n), &[("out.log", kept)]) else {
        return;
    };
    let sampled = sides[1].files[0]
        .iter()
        .filter(|r| r.get("sample_rate").is_some());
    assert!(sampled
        .clone()
        .all(|r| r["user"] == "u2" && r["sample_rate"] == "3"));
    assert_eq!(sampled.count(), count(n, |i| i % 5 != 2 && i % 7 == 2));
}

#[test]
fn differential_fan_in_as_vector_does() {
    differential(
        "fan-in.toml",
        |d| {
            numbered(d, "web.log", 300, |i| format!("web {}", app_line(i)));
            numbered(d, "db.log", 200, |i| format!("db {}", app_line(i)));
        },
        &[("out.log", 500)],
    );
}

#[test]
fn differential_fan_out_as_vector_does() {
    differential(
        "fan-out.toml",
        app_log(400),
        &[("upper.log", 400), ("length.log", 400), ("raw.log", 400)],
    );
}

#[test]
fn differential_wildcard_inputs_as_vector_does() {
    let (web, db, sys) = (300, 200, 100);
    let apps = web + db;
    // `split.*` takes every route output, `_unmatched` included; `*`
    // every source and every route output
    differential(
        "wildcard.yaml",
        |d| {
            numbered(d, "web.log", web, |i| format!("web {}", app_line(i)));
            numbered(d, "db.log", db, |i| format!("db {}", app_line(i)));
            numbered(d, "sys.log", sys, |i| format!("sys {}", app_line(i)));
        },
        &[
            ("apps.log", apps),
            ("routed.log", apps),
            ("everything.log", web + db + sys + apps),
        ],
    );
}

#[test]
fn differential_remap_abort_errors_and_reroute_dropped_as_vector_does() {
    let n = 600;
    let dropped = count(n, |i| i % 5 == 1 || i % 5 == 0);
    // Vector's metadata.dropped also says why (abort or error, and the
    // error's text): logferry's does not (docs/migrating.md)
    let why = |r: &mut serde_json::Value| {
        if let Some(d) = r
            .pointer_mut("/metadata/dropped")
            .and_then(|d| d.as_object_mut())
        {
            d.remove("reason");
            d.remove("message");
        }
    };
    differential_with(
        "remap-dropped.toml",
        app_log(n),
        &[("kept.log", n - dropped), ("dropped.log", dropped)],
        why,
    );
}

#[test]
fn differential_remap_array_makes_records_as_vector_does() {
    differential("remap-split.toml", app_log(500), &[("out.log", 1000)]);
}

#[test]
fn differential_chain_in_graph_order_as_vector_does() {
    let n = 600;
    let errors = count(n, |i| i % 5 == 2);
    let others = count(n, |i| i % 5 == 0 || i % 5 == 3 || i % 5 == 4);
    differential(
        "chain.toml",
        app_log(n),
        &[("errors.log", errors), ("thin.log", others.div_ceil(2))],
    );
}

#[test]
fn differential_text_codec_writes_the_message_as_vector_does() {
    differential(
        "text-codec.toml",
        |d| {
            numbered(d, "app.log", 300, |i| {
                format!("{{\"n\":{i},\"level\":\"{}\"}}", LEVELS[i % 5])
            })
        },
        &[("out.log", 300)],
    );
}

#[test]
fn differential_multiline_file_source_as_vector_does() {
    differential(
        "multiline.toml",
        |d| {
            numbered(d, "trace.log", 100, |i| {
                if i % 3 == 0 {
                    format!("n={i} failed\n  at a.b(A.java:{i})\n  at c.d(C.java:1)")
                } else {
                    format!("n={i} ok")
                }
            })
        },
        &[("out.log", 100)],
    );
}

/// The records of an HTTP source (tagged by the URL path, as its
/// clients send them) go on as the source's, beside a file source's.
#[test]
fn records_tagged_by_their_clients_route_as_their_sources() {
    let dir = tempfile::tempdir().unwrap();
    let (inp, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&inp).unwrap();
    numbered(&inp, "a.log", 30, |i| format!("file line {i}"));
    let config = dir.path().join("vector.toml");
    std::fs::write(
        &config,
        r#"
[sources.push]
type = "http_server"
address = "127.0.0.1:${HTTP_PORT}"
[sources.app]
type = "file"
include = ["${IN_DIR}/a.log"]
[transforms.mark]
type = "remap"
inputs = ["push"]
source = '.via = "push"'
[sinks.pushed]
type = "file"
inputs = ["mark"]
path = "${OUT_DIR}/pushed.log"
encoding.codec = "json"
[sinks.files]
type = "file"
inputs = ["app"]
path = "${OUT_DIR}/files.log"
encoding.codec = "json"
"#,
    )
    .unwrap();
    let port = free_port();
    let env = [
        ("IN_DIR".to_string(), inp.display().to_string()),
        ("OUT_DIR".to_string(), out.display().to_string()),
        ("HTTP_PORT".to_string(), port.to_string()),
    ];
    let imported = import(&[], &config);
    assert!(imported.status.success());
    let text = String::from_utf8(imported.stdout).unwrap();
    let mut lf = Logferry::start_with_env(&text, env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let body: String = format!(
        "[{}]",
        (0..50)
            .map(|i| format!("{{\"n\":{i}}}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let request = format!(
        "POST /some/client/tag HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", lf.log_text());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _conn = send(
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        request.as_bytes(),
    );
    let timeout = std::time::Duration::from_secs(60);
    wait_for_lines(&out.join("pushed.log"), 50, timeout);
    wait_for_lines(&out.join("files.log"), 30, timeout);
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(lf.stop().success(), "{}", lf.log_text());
    let pushed = records(&out.join("pushed.log"));
    let files = records(&out.join("files.log"));
    assert_eq!((pushed.len(), files.len()), (50, 30), "{text}");
    assert!(pushed
        .iter()
        .all(|r| r["via"] == "push" && r["source_type"] == "http_server"));
    assert!(files
        .iter()
        .all(|r| r.get("via").is_none() && r["source_type"] == "file"));
}

/// Message-mode forward frames `[tag, time, {"n": i}]` for `n` records.
fn forward_frames(tag: &str, n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(0x93);
        out.push(0xa0 | tag.len() as u8);
        out.extend_from_slice(tag.as_bytes());
        out.push(0xce);
        out.extend_from_slice(&(1_700_000_000u32 + i as u32).to_be_bytes());
        out.extend_from_slice(&[0x81, 0xa1, b'n', 0xcd]);
        out.extend_from_slice(&(i as u16).to_be_bytes());
    }
    out
}

/// Starts `start` (a command, or logferry), sends `frames` to `port` once
/// it listens, and waits for `n` lines in `out`.
fn forward_run(port: u16, frames: &[u8], out: &Path, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _conn = send(addr, frames);
    wait_for_lines(out, n, std::time::Duration::from_secs(60));
    std::thread::sleep(std::time::Duration::from_secs(1));
}

#[test]
fn differential_fluent_source_as_vector_does() {
    let Some(bin) = vector() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = corpus("differential/fluent.toml");
    let frames = forward_frames("app.web", 200);
    let mut sides = Vec::new();
    for who in ["peer", "logferry"] {
        let out = dir.path().join(who);
        std::fs::create_dir_all(&out).unwrap();
        let port = free_port();
        let env = [
            ("OUT_DIR".to_string(), out.display().to_string()),
            ("FORWARD_PORT".to_string(), port.to_string()),
        ];
        if who == "peer" {
            let mut child = vector_on(&bin)(&config)
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            forward_run(port, &frames, &out.join("out.log"), 200);
            let _ = child.kill();
            let _ = child.wait();
        } else {
            let text = String::from_utf8(import(&[], &config).stdout).unwrap();
            let mut lf =
                Logferry::start_with_env(&text, env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            forward_run(port, &frames, &out.join("out.log"), 200);
            assert!(lf.stop().success(), "{}", lf.log_text());
        }
        let mut r = records(&out.join("out.log"));
        // Vector's fluent source adds the client's address as host; the
        // import does not (docs/migrating.md)
        r.iter_mut().for_each(|r| {
            r.as_object_mut().unwrap().remove("host");
        });
        r.sort_by_key(canonical);
        sides.push(r);
    }
    assert_eq!(sides[0].len(), 200);
    assert_eq!(sides[0], sides[1]);
    assert!(sides[1]
        .iter()
        .all(|r| r["tag"] == "app.web" && r["seen"] == true));
}
