//! `logferry validate` finds every problem a start would meet, all at once,
//! each with its line, without starting anything.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::BIN;

/// Runs `validate` on `config` (`{dir}` is a fresh directory); returns the
/// exit code and stderr. Fails the test if validate takes over 20 s (a FIFO
/// or /dev/zero must not make it hang).
fn validate(config: &str, dir: &std::path::Path) -> (Option<i32>, String) {
    let config = config.replace("{dir}", &dir.display().to_string());
    let path = dir.join("c.toml");
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(BIN)
        .args(["validate", "-c"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("validate did not finish within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The error line about `line` of c.toml; it must contain every word.
fn has_error(stderr: &str, line: usize, words: &[&str]) {
    let prefix = format!("c.toml:{line}: ");
    let found = stderr
        .lines()
        .filter(|l| l.starts_with("error:") && l.contains(&prefix))
        .find(|l| words.iter().all(|w| l.contains(w)));
    assert!(
        found.is_some(),
        "no error at line {line} with {words:?}:\n{stderr}"
    );
}

fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn every_machine_problem_is_reported_at_once_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    std::fs::write(dir.path().join("afile"), "not a directory").unwrap();
    std::fs::write(dir.path().join("garbage.pem"), "this is no PEM\n").unwrap();
    mkfifo(&dir.path().join("fifo.pem"));
    let config = format!(
        r#"[sources.busy]
type = "forward"
address = "127.0.0.1:{port}"

[sources.zero]
type = "tcp"
address = "127.0.0.1:0"
tls = {{ cert_file = "/dev/zero", key_file = "/dev/zero" }}

[sources.fifo]
type = "tcp"
address = "127.0.0.1:0"
tls = {{ cert_file = "{{dir}}/fifo.pem", key_file = "{{dir}}/fifo.pem" }}

[sources.garbage]
type = "tcp"
address = "127.0.0.1:0"
tls = {{ cert_file = "{{dir}}/garbage.pem", key_file = "{{dir}}/garbage.pem" }}

[sources.files]
type = "tail"
paths = ["{{dir}}/*.log"]
tag = "app"
checkpoint_dir = "{{dir}}/afile/checkpoints"

[sinks.pattern]
type = "null"
match = "{{a,b"

[sinks.out]
type = "file"
match = "**"
path = "{{dir}}/afile/out/unified.log"

[sinks.buffered]
type = "null"
match = "**"
buffer = {{ type = "disk", dir = "{{dir}}/afile/buffer" }}
"#
    );
    let (code, stderr) = validate(&config, dir.path());
    assert_eq!(code, Some(1), "{stderr}");
    has_error(
        &stderr,
        3,
        &["[sources.busy].address", "cannot listen", &port.to_string()],
    );
    has_error(
        &stderr,
        8,
        &["tls.cert_file", "/dev/zero", "not a regular file"],
    );
    has_error(
        &stderr,
        13,
        &["tls.cert_file", "fifo.pem", "not a regular file"],
    );
    has_error(
        &stderr,
        18,
        &["tls.cert_file", "garbage.pem", "no certificate"],
    );
    has_error(
        &stderr,
        24,
        &["checkpoint_dir", "cannot be created", "not a directory"],
    );
    has_error(&stderr, 28, &["[sinks.pattern].match", "{a,b"]);
    has_error(&stderr, 33, &["[sinks.out].path", "cannot be created"]);
    has_error(
        &stderr,
        38,
        &["[sinks.buffered].buffer.dir", "cannot be created"],
    );
    assert!(stderr.contains("8 problem(s) found"), "{stderr}");
    drop(taken);
}

#[test]
fn flow_problems_are_reported_when_every_tag_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"[sources.gen]
type = "generator"
tag = "gen.a"

[sources.app]
type = "tail"
paths = ["{dir}/*.log"]
tag = "app"

[sinks.gen]
type = "null"
match = "gen.*"

[sinks.never]
type = "null"
match = "other.**"
"#;
    let (code, stderr) = validate(config, dir.path());
    assert_eq!(code, Some(1), "{stderr}");
    has_error(&stderr, 8, &["[sources.app]", "no sink", "\"app\""]);
    has_error(
        &stderr,
        16,
        &["[sinks.never].match", "matches no tag", "gen.a, app"],
    );
    assert!(stderr.contains("2 problem(s) found"), "{stderr}");
}

#[test]
fn a_source_with_unknown_tags_makes_every_sink_reachable() {
    // forward clients choose their tags: `other.**` may well receive records
    let dir = tempfile::tempdir().unwrap();
    let config = r#"[sources.gen]
type = "generator"
tag = "gen"

[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.gen]
type = "null"
match = "gen"

[sinks.other]
type = "null"
match = "other.**"
"#;
    let (code, stderr) = validate(config, dir.path());
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_writable_setup_passes_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"[sources.in]
type = "forward"
address = "127.0.0.1:0"

[sinks.out]
type = "file"
match = "**"
path = "{dir}/new/sub/unified.log"
buffer = { type = "disk", dir = "{dir}/buffer" }
"#;
    let (code, stderr) = validate(config, dir.path());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!dir.path().join("new").exists());
    assert!(!dir.path().join("buffer").exists());
}

/// Runs `validate` on `config`: exit code, stdout and stderr.
fn validate_output(config: &str) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(BIN)
        .args(["validate", "-c"])
        .arg(&path)
        .env("LF_TEST_VALIDATE_TOKEN", "t0ken-value")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_api_open_to_the_network_without_a_token_is_warned_about() {
    let base = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n\n[api]\n";
    let (code, stdout, stderr) = validate_output(&format!("{base}address = \"0.0.0.0:0\"\n"));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("ok (1 sources, 1 sinks)"), "{stdout}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("c.toml:10:")
            && warnings[0].contains("not a loopback address")
            && warnings[0].contains("token"),
        "{stderr}"
    );
    for quiet in [
        format!("{base}address = \"0.0.0.0:0\"\ntoken_env = \"LF_TEST_VALIDATE_TOKEN\"\n"),
        format!("{base}address = \"127.0.0.1:0\"\n"),
    ] {
        let (code, _, stderr) = validate_output(&quiet);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("warning"), "{quiet}\n{stderr}");
    }
    // an unset token variable is an error
    let (code, _, stderr) = validate_output(&format!(
        "{base}address = \"127.0.0.1:0\"\ntoken_env = \"LF_TEST_VALIDATE_UNSET\"\n"
    ));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("c.toml:11:") && stderr.contains("LF_TEST_VALIDATE_UNSET is not set"),
        "{stderr}"
    );
}

#[test]
fn neither_validate_nor_run_quotes_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(
        &path,
        r#"[sources.in]
type = "forward"
address = "${LF_TEST_SECRET_ADDRESS}"

[sinks.k]
type = "kafka"
match = "**"
brokers = ["127.0.0.1:9"]
topic = "t"
librdkafka_options = { "sasl.password" = 73519024681 }
"#,
    )
    .unwrap();
    for cmd in ["validate", "run"] {
        let out = Command::new(BIN)
            .args([cmd, "-c"])
            .arg(&path)
            .env("LF_TEST_SECRET_ADDRESS", "secret-host-8c2f.internal:99999")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {stderr}");
        assert!(
            stderr.contains("c.toml:3:") && stderr.contains("\"${LF_TEST_SECRET_ADDRESS}\""),
            "{cmd}: {stderr}"
        );
        for secret in ["secret-host-8c2f", "73519024681"] {
            assert!(!stderr.contains(secret), "{cmd}: {secret} in:\n{stderr}");
        }
    }
}

#[test]
fn a_source_whose_records_a_kafka_sink_cannot_send_is_warned_about() {
    let base = "[sources.app]\ntype = \"tail\"\npaths = [\"/tmp/x.log\"]\ntag = \"app\"\n\n[sinks.k]\ntype = \"kafka\"\nmatch = \"**\"\nbrokers = [\"127.0.0.1:9092\"]\ntopic = \"t\"\n";
    // tail's default max_line_bytes (1 MiB) is over librdkafka's 1,000,000
    let (code, _, stderr) = validate_output(base);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("warning:")
            && stderr.contains("[sources.app] accepts records of up to 1048576 bytes")
            && stderr.contains("message.max.bytes"),
        "{stderr}"
    );
    // agreed limits: quiet
    let (code, _, stderr) = validate_output(&base.replace(
        "tag = \"app\"",
        "tag = \"app\"\nmax_line_bytes = \"900KiB\"",
    ));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Field paths and tags that would silently do something else than they
/// say are refused, each at its line: `$a.b` (which Fluent Bit's record
/// accessor reads as the one top-level key "a.b"), a `$2` of a regex with
/// one group, a tag made only of what can be empty, and an `error_tag`
/// that can be empty. What is right beside them passes.
#[test]
fn paths_and_tags_that_cannot_mean_what_they_say_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[sources.in]
type = "http"
address = "127.0.0.1:0"

[filters.by_app]
type = "grep"
match = "**"
include = { "$kubernetes.labels.app" = "^web$" }

[filters.two]
type = "rewrite_tag"
match = "**"
rules = [{ field = "level", regex = "^(error)$", tag = "x.$2" }]

[filters.empty]
type = "rewrite_tag"
match = "**"
rules = [{ field = "level", regex = "^(e*)$", tag = "$1" }]

[filters.missing]
type = "rewrite_tag"
match = "**"
rules = [{ field = "level", regex = "^(a)?b|(c)$", tag = "$2${tag[3]}" }]

[filters.failed]
type = "remap"
match = "**"
source = "abort"
error_tag = "${tag[2]}"

[sinks.out]
type = "null"
match = "**"
"#;
    let (code, err) = validate(config, dir.path());
    assert_eq!(code, Some(1), "{err}");
    has_error(
        &err,
        9,
        &["[filters.by_app]", "$kubernetes['labels']['app']"],
    );
    // a rule's problem is at its filter's header (rules are inline tables)
    has_error(&err, 11, &["[filters.two]", "$2", "1 capture group"]);
    has_error(&err, 16, &["[filters.empty]", "can be empty"]);
    has_error(&err, 21, &["[filters.missing]", "can be empty"]);
    has_error(&err, 30, &["[filters.failed]", "error_tag", "empty"]);

    // the same filters written so that they mean what they say
    let good = config
        .replace("$kubernetes.labels.app", "$kubernetes['labels']['app']")
        .replace("x.$2", "x.$1")
        .replace("^(e*)$", "^(e+)$")
        .replace("$2${tag[3]}", "alert.$2${tag[3]}")
        .replace("\"${tag[2]}\"", "\"failed.${tag}\"");
    let (code, err) = validate(&good, dir.path());
    assert_eq!(code, Some(0), "{err}");
}
