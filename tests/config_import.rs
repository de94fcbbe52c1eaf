//! `logferry config import` on Fluent Bit configurations: a corpus written
//! here (tests/import/fluent-bit), each imported as TOML and YAML and
//! checked by `logferry validate`; `--strict`; the notes beside their
//! components; Fluent Bit itself and logferry run on the same input with
//! the same (imported) pipeline, their records compared field by field.
//! Fluent Bit's own configurations are checked by `logferry bench
//! import-corpus` (tests/import_corpus.rs).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::import::*;
use common::*;

/// A file of the corpus written here for Fluent Bit configurations.
fn corpus(rel: &str) -> PathBuf {
    corpus_file("fluent-bit", rel)
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

/// Tag_Regex and Path_Key of the corpus: the source keeps the path in
/// `path_key`, its cri parser filter keeps that field, and a remap filter
/// after every input's parser filters sets the tag from the captures.
#[test]
fn tag_regex_and_path_key_become_path_key_and_a_remap_setting_the_tag() {
    let text = String::from_utf8(import(&[], &corpus("kubernetes.conf")).stdout).unwrap();
    let source = block_above(&text, "[sources.system_pods]");
    assert!(
        !source
            .iter()
            .any(|l| l.contains("Tag_Regex") || l.contains("Path_Key")),
        "{source:?}"
    );
    assert!(text.contains("tag = \"system_pods.tag_regex.*\"\npath_key = \"file_path\"\n"));
    let cri = text
        .find("[filters.system_pods_cri]")
        .expect("the cri fields' filter");
    let retag = text
        .find("[filters.system_pods_tag_regex]")
        .expect("the remap");
    let docker = text
        .find("[filters.tail_0_docker]")
        .expect("tail.0's filter");
    assert!(docker < retag && cri < retag, "{text}");
    assert!(text[cri..retag].contains("reserve_data = true"), "{text}");
    assert!(
        text[retag..].contains("%tag = s'kube.' + p1 + s'.' + p3 + s'.' + p5\n'''"),
        "{text}"
    );
}

#[test]
fn strict_exits_1_when_anything_is_not_translated() {
    assert_strict(
        &corpus("kubernetes.conf"),
        "clean.conf",
        "[INPUT]\n    Name forward\n    Listen 127.0.0.1\n    Port 0\n\n[OUTPUT]\n    Name  file\n    Match *\n    Path  /tmp\n    File  x.log\n    Format plain\n",
        "fluent-bit",
    );
}

#[test]
fn a_file_of_no_known_format_is_refused_naming_from() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = dir.path().join("x.txt");
    std::fs::write(&unknown, "hello\n").unwrap();
    let out = import(&[], &unknown);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--from"));
    assert!(out.stdout.is_empty());
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

/// A tail with `Tag debug.*` no output matches: its tags come from file
/// paths, so validate does not ask for a sink of them, and logferry drops
/// and counts its records (`logferry_router_unrouted_records_total`) as
/// Fluent Bit drops them; the null sink takes only the fixed tags.
#[test]
fn records_of_a_wildcard_tag_no_output_matches_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let conf = dir.path().join("fluent-bit.conf");
    std::fs::write(
        &conf,
        format!(
            "[SERVICE]\n    HTTP_Server On\n    HTTP_Listen 127.0.0.1\n    HTTP_Port ${{API_PORT}}\n\n\
             [INPUT]\n    Name tail\n    Path {}/*.log\n    Tag  debug.*\n    Read_from_Head On\n\n\
             [INPUT]\n    Name tail\n    Path {}/*.log\n    Tag  app.*\n    Read_from_Head On\n\n\
             [INPUT]\n    Name dummy\n    Tag  audit\n\n\
             [OUTPUT]\n    Name  file\n    Match app.*\n    Path  {}\n    File  app.out\n    Format plain\n",
            logs.display(),
            logs.display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let text = String::from_utf8(import(&[], &conf).stdout).unwrap();
    assert!(
        text.contains("[sinks.unrouted]\ntype = \"null\"\nmatch = \"audit\"\n"),
        "{text}"
    );
    let lines: Vec<String> = (0..500).map(|n| format!("line {n}")).collect();
    std::fs::write(logs.join("a.log"), lines.join("\n") + "\n").unwrap();
    let port = free_port();
    let mut lf = Logferry::start_with_env(&text, [("API_PORT", port.to_string().as_str())]);
    wait_for_lines(&dir.path().join("app.out"), 500, Duration::from_secs(30));
    let api: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    wait_until("the debug records counted", Duration::from_secs(30), || {
        metric_value(
            &api_get(api, "/metrics"),
            "logferry_router_unrouted_records_total",
        ) >= 500.0
    });
    std::thread::sleep(Duration::from_millis(500));
    let metrics = api_get(api, "/metrics");
    assert_eq!(
        metric_value(&metrics, "logferry_router_unrouted_records_total"),
        500.0,
        "{metrics}"
    );
    assert!(lf.stop().success(), "{}", lf.log_text());
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
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
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
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
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
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let first = &sides[1].files[0][0];
    assert!(first["http"]["status"].is_u64(), "{first}");
    assert!(
        first.get("secret").is_none() && first.get("msg").is_none(),
        "{first}"
    );
}

/// Runs Fluent Bit `bin` and logferry on the import of `config` over
/// `input`, and asserts they wrote the `expected` records, field by field.
fn same_records(
    bin: &Path,
    config: &Path,
    dir: &Path,
    input: &Path,
    expected: &[(&str, usize)],
) -> [Written; 2] {
    let sides = run_both(fluent_bit_on(bin), config, dir, input, expected, |_| {});
    assert_same(expected, &sides);
    sides
}

/// Writes `lines` into `IN_DIR/name` under `dir` and returns `IN_DIR`.
fn input_file(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(input.join(name), text).unwrap();
    input
}

#[test]
fn differential_regex_parser_types_time_keep_and_template_times_match_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let total = 1200;
    let mut lines: Vec<String> = (0..total)
        .map(|n| {
            format!(
                "2026-12-06T10:{:02}:{:02}.{:03}+0{}00 {} n={n} ratio={n}.25 ok={} message {n}",
                (n / 60) % 60,
                n % 60,
                n % 1000,
                n % 3,
                ["info", "error"][n % 2],
                // Fluent Bit's bool reads true and false only (migrating.md)
                ["true", "false", "TRUE"][n % 3],
            )
        })
        .collect();
    // a line the parser does not read goes on as it came
    lines.push("not a typed line".into());
    let input = input_file(dir.path(), "typed.log", &lines);
    let config = corpus("differential/regex-types-time.conf");
    // times.log (not JSON) is written at the same flush: compared below
    let expected = [("typed.log", total + 1)];
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let first = sides[1].files[0]
        .iter()
        .find(|r| r["n"] == 7)
        .expect("record 7");
    assert_eq!(
        first["ts"], "2026-12-06T10:00:07.007+0100",
        "Time_Keep: {first}"
    );
    assert_eq!(first["ratio"], 7.25);
    assert_eq!(first["ok"], false);
    // the record times, as Fluent Bit's {time} writes them; the unparsed
    // line's time is when it was read, and its placeholders differ
    // (migrating.md)
    let times = |who: &str| -> Vec<String> {
        let mut v: Vec<String> = read_lines(&dir.path().join(who).join("times.log"))
            .into_iter()
            .filter(|l| !l.ends_with(' '))
            .filter(|l| !l.contains('{'))
            .collect();
        v.sort();
        v
    };
    let (theirs, ours) = (times("peer"), times("logferry"));
    assert_eq!(theirs.len(), total);
    assert_eq!(theirs, ours);
    assert!(
        ours.contains(&"1796547607.007000 7 error".to_string()),
        "{ours:?}"
    );
}

#[test]
fn differential_parser_reserve_data_preserve_key_remove_key_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let total = 1000;
    let level = |n: usize| ["info", "warn"][n % 2];
    let mut input = PathBuf::new();
    for file in ["kept.log", "bare.log"] {
        let lines: Vec<String> = (0..total)
            .map(|n| {
                // every fifth payload is not the action parser's
                let payload = if n % 5 == 0 {
                    format!("garbage {n}")
                } else {
                    format!(
                        "user=u{n} action={} took={}",
                        ["login", "logout"][n % 2],
                        n * 3
                    )
                };
                serde_json::json!({"n": n, "level": level(n), "payload": payload, "secret": "s"})
                    .to_string()
            })
            .collect();
        input = input_file(dir.path(), file, &lines);
    }
    let config = corpus("differential/parser-reserve-preserve.conf");
    let expected = [("parsed.log", 2 * total)];
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let ours = &sides[1].files[0];
    // Reserve_Data and Preserve_Key: every field stays, the parsed ones added
    assert!(ours
        .iter()
        .any(|r| r["n"] == 1 && r["took"] == 3 && r["payload"].is_string()));
    // Preserve_Key alone: the parsed fields and the key, no other field
    assert!(ours
        .iter()
        .any(|r| r.get("n").is_none() && r["took"] == 3 && r["payload"].is_string()));
    assert!(ours.iter().all(|r| r.get("secret").is_none()));
}

#[test]
fn differential_yaml_nest_and_lift_with_prefixes_grep_and_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut expected = 0;
    let lines: Vec<String> = (0..1200)
        .map(|n| {
            let level = ["info", "warn", "error", "debug"][n % 4];
            let zone = ["eu-west", "us-east", "eu-north"][n % 3];
            let mut r = serde_json::json!({
                "n": n, "level": level, "k8s_ns": "shop", "k8s_container": format!("c{}", n % 3),
                "pod_name": format!("web-{}", n % 5), "kind": "x",
                "meta": {"zone": zone, "rack": n % 7},
            });
            // a record without the map, or with a string there, is not lifted
            if n % 6 == 0 {
                r.as_object_mut().unwrap().remove("meta");
            } else if n % 9 == 0 {
                r["meta"] = "flat".into();
            } else if (level == "info" || level == "warn") && zone.starts_with("eu-") {
                expected += 1;
            }
            r.to_string()
        })
        .collect();
    let input = input_file(dir.path(), "nest.log", &lines);
    let config = corpus("differential/nest-prefixes.yaml");
    let expected = [("nest.log", expected)];
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let first = &sides[1].files[0][0];
    assert!(
        first["kube"]["ns"].is_string() && first["kube"]["pod_name"].is_string(),
        "{first}"
    );
    assert!(first["m_rack"].is_u64(), "{first}");
}

#[test]
fn differential_match_regex_and_overlapping_outputs_copy_records_as_fluent_bit_does() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let total = 600;
    let mut input = PathBuf::new();
    for name in ["web", "api", "kern"] {
        let lines: Vec<String> = (0..total)
            .map(|n| format!("{name} line {n}{}", if n % 4 == 0 { " drop" } else { "" }))
            .collect();
        input = input_file(dir.path(), &format!("{name}.log"), &lines);
    }
    // the grep (Match_Regex on app.api and sys.kernel) drops a quarter of
    // those two; every record goes to each output its tag matches
    let kept = total - total / 4;
    let expected = [
        ("all.log", total + 2 * kept),
        ("app.log", total + kept),
        ("web.log", total),
    ];
    let config = corpus("differential/match-regex-copy.conf");
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    // Match_Regex is matched at the tag's start: \.web$ does not take
    // app.web, .*\.web$ does, in Fluent Bit as here
    assert!(sides[1].files[2]
        .iter()
        .all(|r| r.get("side").is_none() && r["suffix"] == "web"));
}

#[test]
fn differential_modify_with_every_kind_of_condition_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let total = 1500;
    let lines: Vec<String> = (0..total)
        .map(|n| {
            let level = ["error", "info", "warn"][n % 3];
            let app = ["web-1", "api", "web-2", "db"][n % 4];
            let mut r = serde_json::json!({
                "n": n,
                "level": level,
                "msg": format!("m{n}"),
                "kubernetes": {"labels": {"app": app}},
            });
            let m = r.as_object_mut().unwrap();
            if n % 2 == 0 {
                m.insert("user".into(), format!("u{n}").into());
            }
            if n % 5 < 2 {
                m.insert("x_debug".into(), n.into());
                m.insert("x_trace".into(), "t".into());
            }
            // ok: a boolean, a string, or missing
            match n % 4 {
                0 => m.insert("ok".into(), true.into()),
                1 => m.insert("ok".into(), "true".into()),
                2 => m.insert("ok".into(), "false".into()),
                _ => None,
            };
            if n % 7 != 0 {
                m.insert("tag_a".into(), "alpha".into());
                // a number does not match a value regex in Fluent Bit
                let b: serde_json::Value = match n % 3 {
                    0 => "beta".into(),
                    1 => "Beta9".into(),
                    _ => 9.into(),
                };
                m.insert("tag_b".into(), b);
            }
            if n % 11 == 0 {
                m.insert("account".into(), "preset".into());
                m.insert("n_copy".into(), "preset".into());
            }
            r.to_string()
        })
        .collect();
    let input = input_file(dir.path(), "cond.log", &lines);
    let config = corpus("differential/modify-conditions.conf");
    let expected = [("cond.log", total)];
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let ours = &sides[1].files[0];
    // each filter's rules applied where its conditions hold, and only there
    assert!(ours
        .iter()
        .any(|r| r["alert"] == "yes" && r["account"].is_string()));
    assert!(ours
        .iter()
        .any(|r| r["account"] == "anonymous" && r["severity"].is_string()));
    assert!(ours
        .iter()
        .any(|r| r["web"] == "true" && r.get("x_debug").is_none()));
    assert!(ours
        .iter()
        .any(|r| r["tags_clean"] == "yes" && r.get("tag_a").is_none()));
    assert!(ours
        .iter()
        .any(|r| r["tags_clean"] == "no" && r["tag_a"] == "alpha"));
    assert!(
        ours.iter().any(|r| r["message"].is_string()) && ours.iter().any(|r| r["msg"].is_string())
    );
}

/// `v` as msgpack (maps, arrays, strings, unsigned integers, floats,
/// booleans, nil).
fn msgpack(v: &serde_json::Value, out: &mut Vec<u8>) {
    use logferry::protocol::msgpack::write;
    match v {
        serde_json::Value::Null => out.push(0xc0),
        serde_json::Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        serde_json::Value::Number(n) => match n.as_u64() {
            Some(u) => write::uint(out, u),
            None => {
                out.push(0xcb);
                out.extend(n.as_f64().unwrap_or_default().to_be_bytes());
            }
        },
        serde_json::Value::String(s) => write::str(out, s.as_bytes()),
        serde_json::Value::Array(items) => {
            write::array_len(out, items.len());
            items.iter().for_each(|i| msgpack(i, out));
        }
        serde_json::Value::Object(m) => {
            write::map_len(out, m.len());
            for (k, v) in m {
                write::str(out, k.as_bytes());
                msgpack(v, out);
            }
        }
    }
}

/// Sends `frames` to the forward port `port` of each side of a
/// differential run under `dir` in turn: to the peer once it listens, then
/// to logferry once its side began (its output directory is made after
/// the peer is stopped).
fn feed_both(dir: &Path, port: u16, frames: Vec<u8>) -> std::thread::JoinHandle<()> {
    use std::io::Write;
    let ours = dir.join("logferry");
    std::thread::spawn(move || {
        for side in 0..2 {
            if side == 1 {
                wait_until(
                    "logferry's side of the run",
                    Duration::from_secs(120),
                    || ours.exists(),
                );
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let mut s = loop {
                match std::net::TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => break s,
                    Err(_) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(50))
                    }
                    Err(e) => panic!("side {side} does not listen on {port}: {e}"),
                }
            };
            s.write_all(&frames).expect("send the frames");
            // kept open until the side is stopped
            std::mem::forget(s);
        }
    })
}

#[test]
fn differential_forward_in_record_modifier_allowlist_remove_key_matches_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let text = std::fs::read_to_string(corpus("differential/forward-allowlist.conf")).unwrap();
    let config = dir.path().join("forward-allowlist.conf");
    std::fs::write(&config, text.replace("FORWARD_PORT", &port.to_string())).unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let total = 2000;
    let mut frames = Vec::new();
    let (mut app, mut audit) = (0, 0);
    for n in 0..total {
        let tag = if n % 3 == 0 { "audit.login" } else { "app.web" };
        *if n % 3 == 0 { &mut audit } else { &mut app } += 1;
        let record = serde_json::json!({
            "n": n,
            "level": if n % 2 == 0 { "info" } else { "error" },
            "user": {"id": n, "name": format!("u{n}"), "admin": n % 5 == 0},
            "secret": "s",
            "token": null,
            "ratio": n as f64 + 0.5,
            "tags": ["a", n.to_string()],
        });
        // Message mode, [tag, time, record]
        logferry::protocol::msgpack::write::array_len(&mut frames, 3);
        logferry::protocol::msgpack::write::str(&mut frames, tag.as_bytes());
        logferry::protocol::msgpack::write::uint(&mut frames, 1_796_547_600 + n as u64);
        msgpack(&record, &mut frames);
    }
    let sender = feed_both(dir.path(), port, frames);
    let expected = [("app.log", app), ("audit.log", audit)];
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    sender.join().expect("the sender");
    let ours = &sides[1].files;
    let first = &ours[0][0];
    assert_eq!(
        first.as_object().unwrap().len(),
        4,
        "Allowlist_key: {first}"
    );
    assert_eq!(first["via"], "forward");
    assert!(ours[1]
        .iter()
        .all(|r| r.get("secret").is_none() && r["tags"][0] == "a"));
}

#[test]
fn differential_cri_java_multiline_parsers_on_a_wildcard_tag_match_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut input = PathBuf::new();
    let mut expected = 0;
    for pod in ["web-1", "api-2"] {
        let mut lines = Vec::new();
        for n in 0..400 {
            let t = format!("2026-12-06T10:{:02}:{:02}.{:09}Z", n / 60, n % 60, n);
            lines.push(format!("{t} stdout F request {n} ok"));
            expected += 1;
            if n % 3 == 0 {
                lines.push(format!("{t} stdout F noise {n}"));
            }
            if n % 2 == 1 {
                // a Java trace, one line of it written in two parts
                lines.push(format!(
                    "{t} stderr F java.lang.IllegalStateException: boom {n}"
                ));
                lines.push(format!("{t} stderr P \tat com.example.A.run(A.java:"));
                lines.push(format!("{t} stderr F {n})"));
                lines.push(format!("{t} stderr F \tat com.example.B.run(B.java:2)"));
                expected += 3;
            }
        }
        input = input_file(dir.path(), &format!("{pod}.log"), &lines);
    }
    let config = corpus("differential/cri-java.conf");
    let expected = [("pods.log", expected)];
    // the _p of a record joined from partial lines (migrating.md)
    let sides = run_both(
        fluent_bit_on(&bin),
        &config,
        dir.path(),
        &input,
        &expected,
        |r| {
            if r["log"]
                .as_str()
                .is_some_and(|l| l.starts_with("\tat com.example.A"))
            {
                r["_p"] = "F".into();
            }
        },
    );
    assert_same(&expected, &sides);
    let ours = &sides[1].files[0];
    // cri takes every line first: the partial lines are joined, the trace
    // is not (java gets no line), as in Fluent Bit
    assert!(ours
        .iter()
        .any(|r| r["log"] == "\tat com.example.A.run(A.java:1)"));
    assert!(ours
        .iter()
        .all(|r| r["stream"].is_string() && r["time"].is_string()));
}

#[test]
fn differential_tail_tag_from_the_path_and_its_parts_match_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    // a path without a part starting with a dot: Fluent Bit folds the
    // ".." such a part makes in the tag, logferry does not (migrating.md)
    let dir = tempfile::Builder::new()
        .prefix("flb")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let mut input = PathBuf::new();
    let total = 600;
    let errors = total / 4;
    for name in ["web", "api"] {
        let lines: Vec<String> = (0..total)
            .map(|n| format!("{} {name} {n}", if n % 4 == 0 { "ERROR" } else { "INFO" }))
            .collect();
        input = input_file(dir.path(), &format!("{name}.log"), &lines);
    }
    // app.tmp.flbXXXX.in.web.log: $TAG[4] is the file's name
    let tag = |name: &str| {
        format!("app{}", input.join(format!("{name}.log")).display()).replace('/', ".")
    };
    let (web, api) = (tag("web"), tag("api"));
    assert_eq!(web.split('.').nth(4), Some("web"), "{web}");
    let expected = [
        (web.as_str(), total - errors),
        (api.as_str(), total - errors),
        ("err.web", errors),
        ("err.api", errors),
    ];
    let config = corpus("differential/tag-from-path.conf");
    // Path_Key: the file's path, as Fluent Bit writes it
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let web_path = input.join("web.log").display().to_string();
    assert!(sides[1].files[0]
        .iter()
        .all(|r| r["file"] == web_path.as_str()));
}

/// Tag_Regex with a Tag of its named captures over files named as the
/// kubelet names them, and a file the regex does not match (Fluent Bit
/// does not follow it: none of its lines is written); Tag_Regex with
/// Path_Key and Parser json, a capture that matched nothing and a name no
/// capture has (`_` in the tag). Each tag's records go to a file named by
/// the tag, and every record to all.log.
#[test]
fn differential_tail_tag_regex_captures_and_path_key_match_fluent_bit() {
    let Some(bin) = fluent_bit() else { return };
    let dir = tempfile::tempdir().unwrap();
    let id = |c: char| c.to_string().repeat(64);
    let pods = [
        ("web-1", "default", "nginx", id('a'), 300),
        ("api-7f9.v2", "prod", "app", id('b'), 250),
    ];
    let mut input = PathBuf::new();
    for (pod, ns, container, id, total) in &pods {
        let lines: Vec<String> = (0..*total)
            .map(|n| format!("{pod} {container} line {n}"))
            .collect();
        input = input_file(
            dir.path(),
            &format!("{pod}_{ns}_{container}-{id}.log"),
            &lines,
        );
    }
    // the regex needs the 64-character id: not followed
    let stray: Vec<String> = (0..100).map(|n| format!("stray {n}")).collect();
    input_file(dir.path(), "web-2_default_nginx-123.log", &stray);
    for (name, total) in [("alpha", 200), ("beta7", 150)] {
        let lines: Vec<String> = (0..total)
            .map(|n| format!("{{\"n\":{n},\"name\":\"{name}\"}}"))
            .collect();
        input_file(dir.path(), &format!("{name}.txt"), &lines);
    }
    let expected = [
        ("kube.default.web-1.nginx", 300),
        ("kube.prod.api-7f9.v2.app", 250),
        ("txt.alpha._._", 200),
        ("txt.beta.7._", 150),
        ("all.log", 900),
    ];
    let config = corpus("differential/tag-regex.conf");
    let sides = same_records(&bin, &config, dir.path(), &input, &expected);
    let ours = &sides[1].files;
    assert!(
        ours[0].iter().all(|r| r.as_object().unwrap().len() == 1),
        "{:?}",
        ours[0][0]
    );
    let alpha = input.join("alpha.txt").display().to_string();
    assert!(ours[2]
        .iter()
        .all(|r| r["file"] == alpha.as_str() && r["n"].is_u64()));
    assert!(ours[4].iter().all(|r| !r.to_string().contains("stray")));
}

/// `name: null` in Fluent Bit's YAML is the null output (YAML reads the
/// word as null; Fluent Bit as the plugin's name).
#[test]
fn a_yaml_output_named_null_is_the_null_sink() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("fluent-bit.yaml");
    std::fs::write(
        &conf,
        "pipeline:\n  inputs:\n    - name: dummy\n      tag: live\n  outputs:\n    - name: null\n      match: \"*\"\n",
    )
    .unwrap();
    let out = import(&[], &conf);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("type = \"null\"\nmatch = \"**\""), "{text}");
    let path = dir.path().join("logferry.toml");
    std::fs::write(&path, &text).unwrap();
    assert!(validate(&path, &[]).status.success());
}
