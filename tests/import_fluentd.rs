//! `logferry config import` on Fluentd configurations: a corpus written
//! here (tests/import/fluentd), each imported as TOML and YAML and checked
//! by `logferry validate`; `--strict`; the notes beside their components;
//! Fluentd's first-match routing and labels, run by logferry and counted
//! per output file; Fluentd itself (v1.15, from source) and logferry run on
//! the same input with the same (imported) pipeline, their records compared
//! field by field. Fluentd's own example configurations are checked by
//! `logferry bench import-corpus` (tests/import_corpus.rs).

mod common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::import::*;
use common::*;

/// A file of the corpus written here for Fluentd configurations.
fn corpus(rel: &str) -> PathBuf {
    corpus_file("fluentd", rel)
}

const CORPUS: &[&str] = &["td-agent.conf", "kubernetes.conf"];

#[test]
fn every_corpus_configuration_imports_and_validates_as_toml_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let env = corpus_env(dir.path());
    for file in CORPUS {
        for yaml in [false, true] {
            import_and_validate(&corpus(file), yaml, dir.path(), &env);
        }
    }
    // the differential pipelines too (their forward port set)
    for entry in std::fs::read_dir(corpus("differential")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("FORWARD_PORT", &free_port().to_string());
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::write(&copy, text).unwrap();
        let mut env = env.clone();
        env.push(("IN_DIR".into(), dir.path().join("in").display().to_string()));
        for yaml in [false, true] {
            import_and_validate(&copy, yaml, dir.path(), &env);
        }
    }
}

#[test]
fn every_key_is_translated_or_named_beside_its_component() {
    let out = import(&[], &corpus("td-agent.conf"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // @include conf.d/*.conf, ENV in strings and in a JSON array
    assert!(
        text.contains("paths = [\"${LOG_ROOT}/app/*.log\"]"),
        "{text}"
    );
    assert!(
        text.contains("exclude = [\"${LOG_ROOT}/app/debug*.log\"]"),
        "{text}"
    );
    let tail = block_above(&text, "[sources.app_logs]");
    assert!(
        tail.iter()
            .any(|l| l.contains("not translated: rotate_wait 5")),
        "{tail:?}"
    );
    assert!(text.contains("checkpoint_dir = \"${STATE_DIR}\""), "{text}");
    // <system>
    assert!(
        text.contains("# not translated: <system> log_level info"),
        "{text}"
    );
    // <parse> sections as parser filters right after the sources
    assert!(
        text.contains(
            "[filters.app_logs_parse]\ntype = \"parser\"\nmatch = \"app.**\"\nformat = \"regex\""
        ),
        "{text}"
    );
    assert!(text.contains("types = { pid = \"int\" }"), "{text}");
    assert!(
        text.contains("multiline = { start = '^\\d{4}-\\d{2}-\\d{2}', flush_timeout = \"2s\" }"),
        "{text}"
    );
    assert!(text.contains("message_key = \"line\""), "{text}");
    assert!(
        text.contains("tag = \"jobs\"\npath_key = \"file\"\n"),
        "{text}"
    );
    // the parser's keys on the source itself, as before v1
    assert!(
        text.contains("[filters.legacy_parse]\ntype = \"parser\"\nmatch = \"app.legacy\"\nformat = \"regex\"\nregex = '^(?<level>\\w+) (?<message>.*)$'\n"),
        "{text}"
    );
    // the buffer: a file buffer is the disk buffer, limits and retries carried over
    assert!(text.contains("buffer = { type = \"disk\", dir = \"${STATE_DIR}/buffer/audit\", max_bytes = \"512MiB\", when_full = \"block\" }"), "{text}");
    assert!(
        text.contains("retry = { initial = \"1s\", max = \"30s\", max_attempts = 10 }"),
        "{text}"
    );
    let audit = block_above(&text, "[sinks.file]");
    assert!(
        audit
            .iter()
            .any(|l| l.contains("not translated: <buffer > chunk_limit_size 8m")),
        "{audit:?}"
    );
    // <format> json + <inject>: the records themselves with time and tag
    assert!(text.contains("format = { type = \"ndjson\", time_key = \"time\", tag_key = \"tag\", time_format = \"%Y-%m-%dT%H:%M:%S%z\" }"), "{text}");
    // first match: the copy's stores do not get what the audit file took
    assert!(
        text.contains(
            "[sinks.elasticsearch]\ntype = \"opensearch\"\nmatch = \"app.** !app.audit.**\""
        ),
        "{text}"
    );
    // the relabelled archive gets what the copy got, under its label
    let archive = block_above(&text, "[sinks.file_2]");
    assert!(
        archive.iter().any(|l| l.contains("in <label @ARCHIVE>")),
        "{archive:?}"
    );
    assert!(text.contains("[sinks.file_2]\ntype = \"file\"\nmatch = \"app.** !app.audit.**\"\npath = \"${OUT_DIR}/archive/${tag}.log\"\nformat = \"raw\""), "{text}");
    // Ruby other than ENV is not evaluated, except the host name
    assert!(text.contains("\"hostname\" = get_hostname!()"), "{text}");
    // the forwarded label: not the top level's tags
    assert!(
        text.contains("[filters.parser]\ntype = \"parser\"\nmatch = \"** !app.** !"),
        "{text}"
    );

    let k8s = String::from_utf8(import(&[], &corpus("kubernetes.conf")).stdout).unwrap();
    let rt = block_above(&k8s, "# [filters.record_transformer]");
    assert!(
        rt.iter().any(|l| l.contains("not translated: enable_ruby")),
        "{rt:?}"
    );
    assert!(
        k8s.contains("# not translated: logferry has no GeoIP lookup"),
        "{k8s}"
    );
    let rewrite = block_above(&k8s, "[filters.rewrite_tag_filter]");
    assert!(
        rewrite
            .iter()
            .any(|l| l.contains("invert true (logferry's rules have no invert")),
        "{rewrite:?}"
    );
    assert!(k8s.contains("tag = \"alert.${tag[1]}\""), "{k8s}");
    assert!(k8s.contains("include = { \"$kubernetes['namespace_name']\" = \"^(shop|payments)$\", \"$kubernetes['labels']['app']\" = \"^(web|api)$\" }\nop = \"or\""), "{k8s}");
    assert!(
        k8s.contains("exclude = { stream = \"^stderr$\", log = \"healthz\" }\nop = \"and\""),
        "{k8s}"
    );
    assert!(
        k8s.contains("kube_tag_prefix = \"kubernetes.var.log.containers.\""),
        "{k8s}"
    );
    let error = block_above(&k8s, "# [sinks.file]");
    assert!(
        error.iter().any(|l| l.contains("no event reaches it")),
        "{error:?}"
    );
}

#[test]
fn strict_exits_1_when_anything_is_not_translated() {
    assert_strict(
        &corpus("kubernetes.conf"),
        "fluent.conf",
        "<source>\n  @type forward\n  port 0\n  bind 127.0.0.1\n</source>\n<match **>\n  @type file\n  path /tmp/x\n  append true\n  <format>\n    @type json\n  </format>\n</match>\n",
        "fluentd",
    );
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("fluent.conf");
    std::fs::write(&conf, "<source>\n  @type tail\n  tag \"open\n</source>\n").unwrap();
    let out = import(&[], &conf);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fluent.conf:3: a string without its closing"),
        "{err}"
    );
    std::fs::write(&conf, "<source>\n  @type tail\n</match>\n").unwrap();
    let err = String::from_utf8_lossy(&import(&["--from", "fluentd"], &conf).stderr).to_string();
    assert!(err.contains("fluent.conf:3: unmatched </match>"), "{err}");
    std::fs::write(
        &conf,
        "<source>\n  @type tail\n</source>\n@include missing/*.conf\n@include nope.conf\n",
    )
    .unwrap();
    let err = String::from_utf8_lossy(&import(&[], &conf).stderr).to_string();
    assert!(err.contains("fluent.conf:5: @include"), "{err}");
}

// --- routing, on logferry alone

/// `n` numbered lines `PREFIX-i` in `path`.
fn numbered(path: &Path, prefix: &str, n: usize) {
    let text: String = (0..n).map(|i| format!("{prefix}-{i}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Runs logferry on the import of `config` until `files` hold their
/// counts; the records of each.
fn run_logferry(
    config: &Path,
    input: &Path,
    out: &Path,
    files: &[(&str, usize)],
) -> Vec<Vec<serde_json::Value>> {
    let env = vec![
        ("IN_DIR".to_string(), input.display().to_string()),
        ("OUT_DIR".to_string(), out.display().to_string()),
    ];
    let outputs: Vec<(PathBuf, usize)> = files.iter().map(|(f, n)| (out.join(f), *n)).collect();
    run_imported(config, &env, &outputs);
    outputs.iter().map(|(p, _)| records(p)).collect()
}

#[test]
fn first_match_routes_each_event_to_one_match_and_later_filters_skip_it() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&input).unwrap();
    numbered(&input.join("access.log"), "access", 300);
    numbered(&input.join("error.log"), "error", 200);
    numbered(&input.join("slow.log"), "slow", 100);
    let files = [("errors.log", 200), ("web.log", 300), ("rest.log", 100)];
    let got = run_logferry(
        &corpus("differential/first-match.conf"),
        &input,
        &out,
        &files,
    );
    for (i, (f, n)) in files.iter().enumerate() {
        assert_eq!(got[i].len(), *n, "{f}");
    }
    assert!(got[0]
        .iter()
        .all(|r| r["stage"] == "first" && r.get("after_errors").is_none()));
    assert!(got[1]
        .iter()
        .all(|r| r["stage"] == "first" && r["after_errors"] == "yes"));
    assert!(got[2]
        .iter()
        .all(|r| r.get("stage").is_none() && r["after_errors"] == "yes" && r["tag"] == "db.slow"));
}

#[test]
fn labels_keep_their_events_apart_and_relabel_moves_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&input).unwrap();
    labels_input(&input);
    let files = [("web.log", 250), ("audit.log", 100), ("archive.log", 150)];
    let got = run_logferry(&corpus("differential/labels.conf"), &input, &out, &files);
    for (i, (f, n)) in files.iter().enumerate() {
        assert_eq!(got[i].len(), *n, "{f}");
    }
    assert!(got[0]
        .iter()
        .all(|r| r["seen_by"] == "root" && r.get("archived").is_none()));
    assert!(got[1]
        .iter()
        .all(|r| r.get("seen_by").is_none() && r["result"] == "fail"));
    assert!(got[2]
        .iter()
        .all(|r| r["seen_by"] == "root" && r["archived"] == "true"));
    assert!(
        !out.join("root-rest.log").exists(),
        "the catch-all after the relabel gets nothing"
    );
}

fn labels_input(input: &Path) {
    let audit: String = (0..300)
        .map(|i| {
            format!(
                "{{\"n\":{i},\"result\":\"{}\"}}\n",
                if i % 3 == 0 { "fail" } else { "ok" }
            )
        })
        .collect();
    std::fs::write(input.join("audit.log"), audit).unwrap();
    let app: String = (0..250)
        .map(|i| format!("{{\"n\":{i},\"app\":\"web\"}}\n"))
        .collect();
    std::fs::write(input.join("app.log"), app).unwrap();
    let old: String = (0..150)
        .map(|i| format!("{{\"n\":{i},\"app\":\"old\"}}\n"))
        .collect();
    std::fs::write(input.join("old.log"), old).unwrap();
}

#[test]
fn rewrite_tag_filter_and_concat_route_on_logferry() {
    // rewrite_tag_filter and concat are not core plugins: no Fluentd here
    // runs them, so their import is checked on logferry alone
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&input).unwrap();
    let conf = corpus("rewrite-concat.conf");
    let mut text = String::new();
    let (mut errors, mut rest) = (0, 0);
    for n in 0..400 {
        let level = ["ERROR", "WARN", "INFO", "DEBUG"][n % 4];
        text.push_str(&format!("{n} {level} request {n}\n"));
        if n % 2 == 0 {
            text.push_str(&format!("    at frame {n}\n"));
        }
        match level {
            "ERROR" => errors += 1,
            "WARN" | "INFO" => rest += 1,
            // no rule matches DEBUG: Fluentd drops it, and so does logferry
            _ => {}
        }
    }
    std::fs::write(input.join("app.log"), text).unwrap();
    let files = [("errors.log", errors), ("rest.log", rest)];
    let got = run_logferry(&conf, &input, &out, &files);
    assert_eq!(got[0].len(), errors);
    assert_eq!(got[1].len(), rest);
    assert!(got[0].iter().all(|r| r["tag"] == "alert.ERROR.web"));
    let joined = got[0]
        .iter()
        .find(|r| r["message"].as_str().unwrap_or("").starts_with("0 ERROR"))
        .expect("record 0");
    assert_eq!(joined["message"], "0 ERROR request 0\n    at frame 0");
    assert!(got[1]
        .iter()
        .all(|r| r["tag"] == "alert.WARN.web" || r["tag"] == "info.app.web"));
}

// --- differential: Fluentd and the imported logferry on the same input

fn fluentd() -> Option<PathBuf> {
    if !peer_is_built("ANCHOR_FLUENTD_DIR", "Fluentd") {
        return None;
    }
    peer_path("ANCHOR_FLUENTD_DIR")
}

/// Fluentd from its source tree `dir` as the peer of [`run_both`].
fn fluentd_on(dir: &Path) -> impl Fn(&Path) -> Command + '_ {
    move |config| {
        let mut command = Command::new("ruby");
        command
            .arg(dir.join("bin/fluentd"))
            .arg("-c")
            .arg(config)
            .args(["--no-supervisor", "-q"])
            .env("TZ", "UTC");
        command
    }
}

/// Runs one differential pipeline of the corpus over the files `input`
/// holds, expecting `expected`; the two sides' records.
fn differential(
    name: &str,
    dir: &Path,
    input: &Path,
    expected: &[(&str, usize)],
) -> Option<[Written; 2]> {
    let fd = fluentd()?;
    let sides = run_both(
        fluentd_on(&fd),
        &corpus(&format!("differential/{name}")),
        dir,
        input,
        expected,
        |_| {},
    );
    assert_same(expected, &sides);
    Some(sides)
}

fn input_dir(dir: &Path) -> PathBuf {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    input
}

#[test]
fn differential_tail_regexp_types_and_time_match_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let text: String = (0..1500)
        .map(|n| {
            format!(
                "2026-12-06T10:{:02}:{:02} {} n={n} ratio={}.5 ok={} did thing {n}\n",
                (n / 60) % 60,
                n % 60,
                ["INFO", "ERROR", "WARN"][n % 3],
                n % 10,
                n % 2 == 0
            )
        })
        .collect();
    std::fs::write(input.join("app.log"), text).unwrap();
    let Some(sides) = differential("regexp-time.conf", dir.path(), &input, &[("out.log", 1500)])
    else {
        return;
    };
    let r = &sides[1].files[0][0];
    assert!(
        r["n"].is_u64() && r["ratio"].is_f64() && r["ok"].is_boolean(),
        "{r}"
    );
    assert!(
        r["time"]
            .as_str()
            .unwrap_or("")
            .starts_with("2026-12-06T10:"),
        "{r}"
    );
    assert_eq!(r["tag"], "app.web");
}

#[test]
fn differential_tail_json_grep_regexp_exclude_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let mut text = String::new();
    let mut expected = 0;
    for n in 0..2000 {
        let level = ["info", "error", "debug", "warn"][n % 4];
        let msg = if n % 5 == 0 {
            format!("note {n}")
        } else {
            format!("event {n}")
        };
        let path = if n % 7 == 0 { "/health" } else { "/api" };
        text.push_str(&format!(
            "{{\"level\":\"{level}\",\"msg\":\"{msg}\",\"n\":{n},\"http\":{{\"path\":\"{path}/{n}\",\"status\":200}}}}\n"
        ));
        if (level == "info" || level == "error") && msg.contains("event") && path != "/health" {
            expected += 1;
        }
    }
    std::fs::write(input.join("events.log"), text).unwrap();
    differential(
        "json-grep.conf",
        dir.path(),
        &input,
        &[("out.log", expected)],
    );
}

#[test]
fn differential_tail_json_grep_and_or_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let mut text = String::new();
    let mut expected = 0;
    for n in 0..2400 {
        let level = ["ERROR", "WARN", "INFO"][n % 3];
        let msg = match n % 5 {
            0 => format!("urgent {n}"),
            1 => format!("retry {n}"),
            2 => format!("urgent retry {n}"),
            _ => format!("did {n}"),
        };
        let user = format!("u{}", n % 4);
        // <or>: level ERROR or an urgent msg; <and>: drop user u1 retrying
        if (level == "ERROR" || msg.contains("urgent")) && !(user == "u1" && msg.contains("retry"))
        {
            expected += 1;
        }
        text.push_str(&format!(
            "{{\"n\":{n},\"level\":\"{level}\",\"msg\":\"{msg}\",\"user\":\"{user}\"}}\n"
        ));
    }
    std::fs::write(input.join("events.log"), text).unwrap();
    differential(
        "json-grep-and-or.conf",
        dir.path(),
        &input,
        &[("out.log", expected)],
    );
}

#[test]
fn differential_tail_multiline_parse_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let mut text = String::new();
    for n in 0..800 {
        text.push_str(&format!(
            "{n} {} request {n} failed\n",
            ["ERROR", "INFO"][n % 2]
        ));
        for frame in 0..(n % 4) {
            text.push_str(&format!(
                "    at com.example.Handler.step{frame}(Handler.java:{n})\n"
            ));
        }
    }
    std::fs::write(input.join("trace.log"), text).unwrap();
    let Some(sides) = differential("multiline.conf", dir.path(), &input, &[("out.log", 800)])
    else {
        return;
    };
    let three = sides[1].files[0]
        .iter()
        .find(|r| r["n"] == "3")
        .expect("record 3");
    assert_eq!(
        three["message"],
        "request 3 failed\n    at com.example.Handler.step0(Handler.java:3)\n    at com.example.Handler.step1(Handler.java:3)\n    at com.example.Handler.step2(Handler.java:3)"
    );
}

/// Sends `input`'s JSON lines with Fluentd's fluent-cat under `tag` to
/// `port` once for each side of a run: when the port opens, then again
/// after it closed and opened.
fn fluent_cat_twice(
    fd: PathBuf,
    port: u16,
    tag: &'static str,
    input: PathBuf,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let open = || TcpStream::connect(("127.0.0.1", port)).is_ok();
        for _ in 0..2 {
            let start = Instant::now();
            while !open() && start.elapsed() < Duration::from_secs(120) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let status = Command::new("ruby")
                .arg(fd.join("bin/fluent-cat"))
                .args(["--host", "127.0.0.1", "--port", &port.to_string(), tag])
                .stdin(Stdio::from(std::fs::File::open(&input).unwrap()))
                .stdout(Stdio::null())
                .status()
                .expect("run fluent-cat");
            assert!(status.success());
            let start = Instant::now();
            while open() && start.elapsed() < Duration::from_secs(180) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    })
}

#[test]
fn differential_forward_record_transformer_matches_fluentd() {
    let Some(fd) = fluentd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let records: String = (0..1000)
        .map(|n| {
            format!(
                "{{\"n\":{n},\"level\":\"{}\",\"password\":\"p{n}\",\"secret\":\"s\",\"msg\":\"m{n}\"}}\n",
                ["info", "error"][n % 2]
            )
        })
        .collect();
    let records_file = dir.path().join("records.jsonl");
    std::fs::write(&records_file, records).unwrap();
    let port = free_port();
    let conf = dir.path().join("forward-record-transformer.conf");
    let text = std::fs::read_to_string(corpus("differential/forward-record-transformer.conf"))
        .unwrap()
        .replace("FORWARD_PORT", &port.to_string());
    std::fs::write(&conf, text).unwrap();
    let sender = fluent_cat_twice(fd.clone(), port, "shop.orders.eu", records_file);
    let expected = [("out.log", 1000)];
    let sides = run_both(
        fluentd_on(&fd),
        &conf,
        dir.path(),
        &input,
        &expected,
        |_| {},
    );
    sender.join().unwrap();
    assert_same(&expected, &sides);
    let r = sides[1].files[0]
        .iter()
        .find(|r| r["n"] == 7)
        .expect("record 7");
    assert_eq!(r["service"], "orders");
    assert_eq!(r["last"], "eu");
    assert_eq!(r["origin"], "shop.orders.eu");
    assert_eq!(r["n_again"], 7);
    assert_eq!(r["summary"], "error n=7 on shop.orders.eu");
    assert!(
        r.get("password").is_none() && r.get("secret").is_none(),
        "{r}"
    );
}

#[test]
fn differential_renew_record_keep_keys_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let text: String = (0..1200)
        .map(|n| {
            format!("{{\"n\":{n},\"level\":\"info\",\"msg\":\"m{n}\",\"extra\":{{\"a\":1}}}}\n")
        })
        .collect();
    std::fs::write(input.join("events.log"), text).unwrap();
    let Some(sides) = differential("renew-keep.conf", dir.path(), &input, &[("out.log", 1200)])
    else {
        return;
    };
    let r = &sides[1].files[0][0];
    assert!(
        r.get("msg").is_none() && r.get("extra").is_none() && r["component"] == "api",
        "{r}"
    );
}

#[test]
fn differential_parser_inject_key_prefix_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let text: String = (0..1000)
        .map(|n| {
            format!(
                "{{\"log\":\"{{\\\"a\\\":{n},\\\"b\\\":\\\"x{n}\\\"}}\",\"stream\":\"stdout\"}}\n"
            )
        })
        .collect();
    std::fs::write(input.join("wrapped.log"), text).unwrap();
    let Some(sides) = differential(
        "parser-prefix.conf",
        dir.path(),
        &input,
        &[("out.log", 1000)],
    ) else {
        return;
    };
    let r = &sides[1].files[0][0];
    assert!(r["parsed.a"].is_u64() && r["log"].is_string(), "{r}");
}

#[test]
fn differential_parser_hash_value_field_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let text: String = (0..1000)
        .map(|n| {
            format!(
                "{} n={n} user=u{} rest of line\n",
                ["INFO", "ERROR"][n % 2],
                n % 9
            )
        })
        .collect();
    std::fs::write(input.join("plain.log"), text).unwrap();
    let Some(sides) = differential("parser-hash.conf", dir.path(), &input, &[("out.log", 1000)])
    else {
        return;
    };
    let r = &sides[1].files[0][0];
    assert!(
        r["parsed"]["n"].is_string() && r.get("message").is_none(),
        "{r}"
    );
}

#[test]
fn differential_parser_reserve_data_remove_key_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let text: String = (0..1000)
        .map(|n| {
            if n % 10 == 3 {
                format!("{{\"log\":\"not json {n}\",\"stream\":\"stderr\"}}\n")
            } else {
                format!("{{\"log\":\"{{\\\"level\\\":\\\"info\\\",\\\"n\\\":{n}}}\",\"stream\":\"stdout\"}}\n")
            }
        })
        .collect();
    std::fs::write(input.join("docker.log"), text).unwrap();
    let Some(sides) = differential(
        "parser-reserve.conf",
        dir.path(),
        &input,
        &[("out.log", 1000)],
    ) else {
        return;
    };
    // a line that is not JSON keeps its record, log included
    assert_eq!(
        sides[1].files[0]
            .iter()
            .filter(|r| r.get("log").is_some())
            .count(),
        100
    );
}

#[test]
fn differential_copy_to_two_files_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    let text: String = (0..1500)
        .map(|n| format!("{{\"n\":{n},\"msg\":\"m{n}\"}}\n"))
        .collect();
    std::fs::write(input.join("events.log"), text).unwrap();
    let Some(sides) = differential(
        "copy.conf",
        dir.path(),
        &input,
        &[("all.log", 1500), ("tagged.log", 1500)],
    ) else {
        return;
    };
    assert_eq!(sides[1].files[1][0]["tag"], "events");
}

#[test]
fn differential_first_match_with_catch_all_matches_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    numbered(&input.join("access.log"), "access", 600);
    numbered(&input.join("error.log"), "error", 400);
    numbered(&input.join("slow.log"), "slow", 200);
    differential(
        "first-match.conf",
        dir.path(),
        &input,
        &[("errors.log", 400), ("web.log", 600), ("rest.log", 200)],
    );
}

#[test]
fn differential_labels_and_relabel_match_fluentd() {
    let dir = tempfile::tempdir().unwrap();
    let input = input_dir(dir.path());
    labels_input(&input);
    differential(
        "labels.conf",
        dir.path(),
        &input,
        &[("web.log", 250), ("audit.log", 100), ("archive.log", 150)],
    );
}
