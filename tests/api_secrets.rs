//! Credentials never leave through what echoes the configuration: with
//! the docs' own OTLP sink example (`headers = { "x-api-key" =
//! "${OTLP_API_KEY}" }`) and an `Authorization` header written into the
//! file, neither value shows in `GET /config`, in `logferry validate`'s
//! output, in the 422 of a refused reload, or anywhere in the log.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// The key, given in the environment.
const KEY: &str = "k3y-from-env-5d1c9e77";
/// The bearer token, written in the file itself.
const BEARER: &str = "lit3ral-bearer-0b8f4a21";

/// A generator feeding the docs' OTLP sink example, pointed at a port
/// nobody listens on, and a file sink; `headers` is the sink's headers
/// line.
fn config(headers: &str) -> String {
    format!(
        r#"
[sources.gen]
type = "generator"
tag = "app.web"
rate = 20
message = "hello"

[sinks.vendor]
type = "otlp"
match = "app.**"
endpoint = "http://127.0.0.1:{port}"
{headers}
body_keys = ["msg"]
severity_keys = ["lvl"]

[sinks.file]
type = "file"
match = "**"
path = "{{dir}}/out.log"

[api]
address = "127.0.0.1:0"
"#,
        port = free_port()
    )
}

fn good() -> String {
    config(&format!(
        r#"headers = {{ "x-api-key" = "${{OTLP_API_KEY}}", Authorization = "Bearer {BEARER}" }}"#
    ))
}

/// What a Fluent Bit user may write: the headers as one string, which
/// the error then quotes.
fn broken() -> String {
    config(&format!(
        r#"headers = "Authorization: Bearer {BEARER} x-api-key: ${{OTLP_API_KEY}}""#
    ))
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [KEY, BEARER] {
        assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
    }
}

#[test]
fn header_credentials_show_nowhere_the_configuration_is_echoed() {
    let mut lf = Logferry::start_with_env(&good(), [("OTLP_API_KEY", KEY)]);
    let api = lf.address("api listening");

    let config = api_get(api, "/config");
    assert!(config.starts_with("HTTP/1.1 200"), "{config}");
    assert_no_secret("GET /config", &config);
    // the headers are there, their values hidden; the key says where it
    // came from
    assert!(config.contains("x-api-key"), "{config}");
    assert!(config.contains("Authorization"), "{config}");

    // validate, on the file as a user would break it
    let broken_path = lf.path("broken.toml");
    let broken = broken().replace("{dir}", &lf.dir.path().display().to_string());
    std::fs::write(&broken_path, &broken).unwrap();
    let out = Command::new(BIN)
        .args(["validate", "--config"])
        .arg(&broken_path)
        .env("OTLP_API_KEY", KEY)
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("[sinks.vendor]"),
        "the error names the sink: {shown}"
    );
    assert_no_secret("logferry validate", &shown);

    // a reload of the same: 422, and the reason is logged
    lf.rewrite_config(&broken);
    let answer = api_post(api, "/reload");
    assert!(answer.starts_with("HTTP/1.1 422"), "{answer}");
    assert!(answer.contains("[sinks.vendor]"), "{answer}");
    assert_no_secret("the 422 of POST /reload", &answer);
    lf.wait_for_log("configuration reload rejected", Duration::from_secs(10));

    // the sink failed to deliver meanwhile, and said so
    lf.stop();
    assert_no_secret("the log", &lf.log_text());
}

/// A component that cannot start (here a file sink whose directory,
/// from the environment, cannot be made) is reported without quoting
/// what came from the environment: the log says `${LOG_DIR}`.
#[test]
fn a_failed_start_does_not_quote_the_environment() {
    let secret_dir = "/proc/secret-dir-9f3a2c";
    let mut lf = Logferry::start_with_env(
        r#"
[sources.gen]
type = "generator"
tag = "app.web"
rate = 20
message = "hello"

[sinks.file]
type = "file"
match = "**"
path = "${LOG_DIR}/deeper/out.log"
"#,
        [("LOG_DIR", secret_dir)],
    );
    let status = lf.wait(Duration::from_secs(30));
    assert!(!status.success(), "{}", lf.log_text());
    let log = lf.log_text();
    assert!(log.contains("${LOG_DIR}"), "{log}");
    assert!(!log.contains("secret-dir-9f3a2c"), "{log}");
}
