//! What an operator meets before the first record: log format and level,
//! configuration examples, shell completions and the manual page.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_logferry");

/// A pipeline that makes 100 records, delivers them and exits by itself.
const FINITE: &str = "[sources.gen]\ntype = \"generator\"\ncount = 100\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n";

/// Runs `logferry ARGS run -c FINITE` with `LOGFERRY_LOG` set to `env`
/// (or unset).
fn run_finite(args: &[&str], env: Option<&str>) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finite.toml");
    std::fs::write(&path, FINITE).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args).args(["run", "-c"]).arg(&path);
    match env {
        Some(v) => cmd.env("LOGFERRY_LOG", v),
        None => cmd.env_remove("LOGFERRY_LOG"),
    };
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn json_logs_are_one_object_per_line() {
    let out = run_finite(&["--log-format", "json"], None);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(!lines.is_empty(), "no log lines at the default level");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON object ({e}): {line}"));
        assert!(v["timestamp"].is_string(), "{line}");
        assert!(v["level"].is_string(), "{line}");
        assert!(v["message"].is_string(), "{line}");
    }
    // key/value fields of an event are fields of its object
    assert!(
        lines.iter().any(|l| l.contains("\"level\":\"INFO\"")),
        "{stderr}"
    );
}

#[test]
fn the_global_options_also_go_after_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finite.toml");
    std::fs::write(&path, FINITE).unwrap();
    let after = |args: &[&str]| {
        let out = Command::new(BIN)
            .arg("run")
            .args(args)
            .arg("-c")
            .arg(&path)
            .env_remove("LOGFERRY_LOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let json = after(&["--log-format", "json"]);
    assert!(json.lines().count() > 0);
    assert!(json.lines().all(|l| l.starts_with('{')), "{json}");
    let quiet = after(&["--log-level", "warn"]);
    assert!(!quiet.contains("INFO"), "{quiet}");
}

#[test]
fn with_json_logs_a_failed_start_is_json_too() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let sink = "[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n";
    for (name, config, needle) in [
        (
            "bad.toml",
            "[sources.in]\ntype = \"forward\"\nadress = \"x\"\n".to_string(),
            "unknown key `adress`",
        ),
        (
            "taken.toml",
            format!("[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:{port}\"\n{sink}"),
            "already in use",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, config).unwrap();
        let out = Command::new(BIN)
            .args(["--log-format", "json", "run", "-c"])
            .arg(&path)
            .env_remove("LOGFERRY_LOG")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let stderr = text(&out.stderr);
        let errors: Vec<serde_json::Value> = stderr
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {l}"))
            })
            .filter(|v: &serde_json::Value| v["level"] == "ERROR")
            .collect();
        assert_eq!(errors.len(), 1, "{name}: {stderr}");
        let message = errors[0]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{name}: {stderr}");
    }
}

#[test]
fn text_logs_are_not_json() {
    let out = run_finite(&[], None);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.lines().any(|l| l.contains(" INFO ")), "{stderr}");
    assert!(!stderr.trim_start().starts_with('{'), "{stderr}");
}

#[test]
fn log_level_filters_and_logferry_log_wins_over_it() {
    let quiet = run_finite(&["--log-level", "warn"], None);
    assert!(quiet.status.success());
    let quiet = text(&quiet.stderr);
    assert!(
        !quiet.contains("INFO"),
        "--log-level warn still logs info:\n{quiet}"
    );

    let loud = run_finite(&["--log-level", "warn"], Some("info"));
    assert!(loud.status.success());
    let loud = text(&loud.stderr);
    assert!(
        loud.contains("INFO"),
        "LOGFERRY_LOG=info did not win:\n{loud}"
    );

    // the old spelling still works
    let old = run_finite(&["--log", "warn"], None);
    assert!(old.status.success());
    assert!(!text(&old.stderr).contains("INFO"));
}

#[test]
fn bad_log_settings_are_errors_that_say_what_to_do() {
    let out = run_finite(&[], Some("info,=["));
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("LOGFERRY_LOG=\"info,=[\" is not a valid log filter"),
        "{stderr}"
    );

    let out = run_finite(&["--log-level", "verbose"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("unknown level \"verbose\""), "{stderr}");

    let out = run_finite(&["--log-format", "xml"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("text, json"),
        "{}",
        text(&out.stderr)
    );
}

fn logferry(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("LOGFERRY_LOG")
        .output()
        .unwrap()
}

#[test]
fn config_example_list_names_every_component() {
    let out = logferry(&["config", "example", "--list"]);
    assert!(out.status.success());
    let list = text(&out.stdout);
    for want in [
        "source forward",
        "source tail",
        "source kafka",
        "source otlp",
        "sink file",
        "sink forward",
        "sink http",
        "sink opensearch",
        "sink otlp",
        "sink s3",
        "sink kafka",
    ] {
        let (kind, name) = want.split_once(' ').unwrap();
        assert!(
            list.lines().any(|l| {
                let mut w = l.split_whitespace();
                w.next() == Some(kind) && w.next() == Some(name)
            }),
            "{want} missing from:\n{list}"
        );
    }
}

/// As docs/deploy.md starts a configuration: two examples in one file.
#[test]
fn printed_examples_together_pass_validate() {
    let dir = tempfile::tempdir().unwrap();
    for pair in [
        [["source", "tail"], ["sink", "file"]],
        [["source", "generator"], ["sink", "kafka"]],
        [["source", "forward"], ["sink", "forward"]],
    ] {
        let mut config = String::new();
        for [kind, name] in pair {
            let out = logferry(&["config", "example", kind, name]);
            assert!(out.status.success(), "{kind} {name}");
            let example = text(&out.stdout);
            assert!(example.starts_with("# "), "not commented:\n{example}");
            config.push_str(&example);
        }
        let path = dir.path().join("c.toml");
        std::fs::write(&path, &config).unwrap();
        let out = Command::new(BIN)
            .args(["validate", "-c"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{pair:?}: {}", text(&out.stderr));
    }
}

#[test]
fn an_unknown_example_lists_the_known_ones() {
    let out = logferry(&["config", "example", "sink", "elasticsearch"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no sink type `elasticsearch`"), "{stderr}");
    assert!(stderr.contains("kafka"), "{stderr}");
    assert!(stderr.contains("--list"), "{stderr}");
}

#[test]
fn completions_for_each_shell_mention_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = logferry(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = text(&out.stdout);
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        for sub in ["run", "validate", "bench", "replay", "config", "man"] {
            assert!(script.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let out = logferry(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_and_mentions_the_subcommands() {
    let out = logferry(&["man"]);
    assert!(out.status.success());
    let page = text(&out.stdout);
    assert!(
        page.contains(".TH logferry 1"),
        "{}",
        &page[..page.len().min(200)]
    );
    for sub in [
        "run",
        "validate",
        "bench",
        "replay",
        "buffer",
        "config",
        "completions",
    ] {
        assert!(
            page.contains(&format!("logferry\\-{sub}")),
            "man page lacks {sub}"
        );
    }
    assert!(
        page.contains("LOGFERRY_LOG"),
        "the precedence is in the page"
    );
}
