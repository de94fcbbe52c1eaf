//! `logferry config import` on Fluent Bit configurations: a corpus written
//! here (tests/import/fluent-bit), each imported as TOML and YAML and
//! checked by `logferry validate`; `--strict`; the notes beside their
//! components; Fluent Bit itself and logferry run on the same input with
//! the same (imported) pipeline, their records compared field by field;
//! and Fluent Bit's own example configurations, read from its mirror.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::import::*;
use common::*;

fn corpus(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import/fluent-bit")
        .join(rel)
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
        for yaml in [false, true] {
            import_and_validate(&corpus(file), yaml, dir.path(), &env);
        }
    }
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

/// Fluent Bit `bin` as the peer of [`run_both`].
fn fluent_bit_on(bin: &Path) -> impl Fn(&Path) -> Command + '_ {
    move |config| {
        let mut command = Command::new(bin);
        command.arg("-c").arg(config);
        command
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
    let sides = run_both(
        fluent_bit_on(&bin),
        &config,
        dir.path(),
        &input,
        &expected,
        |_| {},
    );
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
    let sides = run_both(
        fluent_bit_on(&bin),
        &config,
        dir.path(),
        &input,
        &expected,
        |r| {
            if let Some(log) = r["log"].as_str().and_then(|l| l.strip_suffix('\n')) {
                r["log"] = serde_json::Value::String(log.to_string());
            }
        },
    );
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
    let sides = run_both(
        fluent_bit_on(&bin),
        &config,
        dir.path(),
        &input,
        &expected,
        |_| {},
    );
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
    let sides = run_both(
        fluent_bit_on(&bin),
        &config,
        dir.path(),
        &input,
        &expected,
        |_| {},
    );
    assert_same(&expected, &sides);
    let first = &sides[1].files[0][0];
    assert!(first["http"]["status"].is_u64(), "{first}");
    assert!(
        first.get("secret").is_none() && first.get("msg").is_none(),
        "{first}"
    );
}

// --- Fluent Bit's own example and test configurations

const FLUENT_BIT: Mirror = Mirror("/work/.mirror/fluent+fluent-bit/repo");

#[test]
fn fluent_bit_example_configurations_import() {
    if !FLUENT_BIT.exists() {
        skipped("no Fluent Bit source mirror at /work/.mirror/fluent+fluent-bit/repo (the `fetch` of github:fluent/fluent-bit brings it)");
        return;
    }
    let names = FLUENT_BIT.list("conf/", false, &[".conf", ".yaml", ".yml"]);
    assert!(!names.is_empty(), "conf/ lists no configuration");
    let dir = tempfile::tempdir().unwrap();
    FLUENT_BIT.copy(&names, dir.path());
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
    if !FLUENT_BIT.exists() {
        skipped("no Fluent Bit source mirror at /work/.mirror/fluent+fluent-bit/repo (the `fetch` of github:fluent/fluent-bit brings it)");
        return;
    }
    let names: Vec<String> = FLUENT_BIT
        .list(
            "tests/integration/scenarios",
            true,
            &[".conf", ".yaml", ".yml"],
        )
        .into_iter()
        .filter(|f| f.contains("/config/"))
        .collect();
    if names.is_empty() {
        skipped("the Fluent Bit mirror has no tests/integration/scenarios/*/config");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    FLUENT_BIT.copy(&names, dir.path());
    FLUENT_BIT.copy(&["conf/parsers.conf".to_string()], dir.path());
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
