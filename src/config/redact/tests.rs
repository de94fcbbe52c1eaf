use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "SECRET_ADDR" => Some("secret-host.internal:99999".into()),
        "PW" => Some("env-password-value".into()),
        "SHORT" => Some("ab".into()),
        "KEY" => Some("env-api-key-4f9a8b2c".into()),
        "DIR" => Some("/var/lib/logs".into()),
        _ => None,
    }
}

#[test]
fn secret_and_environment_values_are_replaced() {
    let text = r#"
[sources.in]
type = "forward"
address = "${SECRET_ADDR}"
shared_key = "written-shared-key"
users = [{ username = "alice", password = "alice-password" }]
[sinks.k]
librdkafka_options = { "sasl.password" = 98765432, "ssl.key.password" = "${PW}", "x" = "${SHORT}" }
path = "/logs/${tag}.log"
"#;
    let r = Redactions::of(text, &env);
    let m = r.apply(
        "address \"secret-host.internal:99999\" is bad; invalid type: integer `98765432`; \
         alice-password and written-shared-key and env-password-value; alice stays; ab stays",
    );
    for secret in [
        "secret-host.internal",
        "98765432",
        "alice-password",
        "written-shared-key",
        "env-password-value",
    ] {
        assert!(!m.contains(secret), "{secret}: {m}");
    }
    assert!(m.contains("address \"${SECRET_ADDR}\" is bad"), "{m}");
    assert!(m.contains("integer `***`"), "{m}");
    assert!(m.contains("alice stays") && m.contains("ab stays"), "{m}");
}

#[test]
fn header_values_are_secret_in_messages_whatever_the_header() {
    // valid TOML, an inline table, a table of its own, and text that is
    // not TOML at all
    for text in [
        "[sinks.o]\nheaders = { \"x-api-key\" = \"lit-api-key-1\", Authorization = \"Bearer lit-bearer-2\" }\n",
        "[sinks.o.headers]\nx-api-key = \"lit-api-key-1\"\nAuthorization = \"Bearer lit-bearer-2\"\n",
        "[sinks.o]\nheaders = { \"x-api-key\" = \"lit-api-key-1\", Authorization = \"Bearer lit-bearer-2\" } oops\n",
    ] {
        let r = Redactions::of(text, &env);
        let m = r.apply(
            "invalid type: string \"Authorization: Bearer lit-bearer-2 lit-api-key-1\"; \
             lit-api-key-1; Bearer lit-bearer-2; headers.x-api-key stays",
        );
        assert!(
            !m.contains("lit-api-key-1") && !m.contains("lit-bearer-2"),
            "{text}: {m}"
        );
        assert!(m.contains("headers.x-api-key stays"), "{m}");
    }
    // the headers as one string, as a Fluent Bit user may write them
    let text = "[sinks.o]\nheaders = \"Authorization: Bearer lit-bearer-2\"\n";
    let m = Redactions::of(text, &env)
        .apply("invalid type: string \"Authorization: Bearer lit-bearer-2\", expected a map");
    assert_eq!(m, "invalid type: string \"***\", expected a map");
}

#[test]
fn a_file_that_is_not_toml_still_has_its_secrets_found() {
    let text = "[sinks.out]\npassword = \"pa\\\"ss-word\" oops\nshared_key='single-quoted'\n";
    assert!(toml::from_str::<toml::Table>(text).is_err());
    let r = Redactions::of(text, &|_| None);
    let m = r.apply("line 2: password = \"pa\\\"ss-word\" oops; single-quoted");
    assert!(
        !m.contains("ss-word") && !m.contains("single-quoted"),
        "{m}"
    );
}

#[test]
fn a_debug_escaped_value_is_replaced_too() {
    let r = Redactions::of("token = \"tab\\there-token\"\n", &|_| None);
    let m = r.apply("invalid value \"tab\\there-token\"");
    assert!(!m.contains("here-token"), "{m}");
}

#[test]
fn a_replacement_is_not_searched_again() {
    // a variable whose value is its own name
    let r = Redactions::of("address = \"${ADDR}\"\n", &|n| Some(n.repeat(2)));
    assert_eq!(r.apply("x ADDRADDR y"), "x ${ADDR} y");
}

#[test]
fn the_content_of_a_secret_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "  from-a-token-file\n").unwrap();
    let text = format!(
        "[sinks.h.auth]\nstrategy = \"bearer\"\ntoken_file = {:?}\n",
        file.display().to_string()
    );
    let r = Redactions::of(&text, &env);
    assert_eq!(r.apply("sent Bearer from-a-token-file"), "sent Bearer ***");
    // where it is kept is no secret
    let shown = r.show(&toml::from_str(&text).unwrap());
    assert!(shown.contains(&file.display().to_string()), "{shown}");
}

/// Parses `text` as a start does: `${VAR}` substituted with [`env`].
fn substituted(text: &str) -> Table {
    let mut tree = Value::Table(toml::from_str(text).unwrap());
    crate::config::interpolate::interpolate_tree(&mut tree, &env).unwrap();
    match tree {
        Value::Table(t) => t,
        _ => unreachable!(),
    }
}

#[test]
fn config_shows_secrets_headers_and_environment_values_hidden() {
    let text = r#"
[sources.in]
type = "forward"
address = "${SECRET_ADDR}"
shared_key = "s3cret-shared"
users = [{ username = "alice", password = "alice-pw" }]
[sinks.k]
type = "kafka"
librdkafka_options = { "sasl.password" = "kpw", "ssl.key.password" = "kp2", "sasl.username" = "bob" }
[sinks.fwd]
type = "forward"
password = "fpw"
username = "carol"
[sinks.vendor]
type = "otlp"
endpoint = "https://otlp.example.net"
headers = { "x-api-key" = "${KEY}", Authorization = "Bearer lit", "x-short" = "${SHORT}" }
[sinks.file]
type = "file"
path = "${DIR}/${tag}.log"
[api]
token = "api-token-value"
token_file = "/etc/logferry/api-token"
token_env = "API_TOKEN"
"#;
    let r = Redactions::of(text, &env);
    let shown = r.show(&substituted(text));
    for secret in [
        "s3cret-shared",
        "alice-pw",
        "kpw",
        "kp2",
        "fpw",
        "api-token-value",
        "env-api-key-4f9a8b2c",
        "Bearer lit",
        "secret-host.internal",
        "/var/lib/logs",
    ] {
        assert!(!shown.contains(secret), "{secret} shown:\n{shown}");
    }
    // where a secret is kept, and what came from the environment, as written
    for kept in [
        "alice",
        "bob",
        "carol",
        "forward",
        "kafka",
        "/etc/logferry/api-token",
        "API_TOKEN",
        "x-api-key",
        "address = \"${SECRET_ADDR}\"",
        "path = \"${DIR}/${tag}.log\"",
    ] {
        assert!(shown.contains(kept), "{kept} missing:\n{shown}");
    }
    assert!(shown.contains("shared_key = \"***\""), "{shown}");
    let back: Table = toml::from_str(&shown).expect("still TOML");
    assert_eq!(back["sinks"]["fwd"]["password"].as_str(), Some("***"));
    let headers = back["sinks"]["vendor"]["headers"].as_table().unwrap();
    assert!(
        headers.values().all(|v| v.as_str() == Some("***")),
        "{shown}"
    );
}

#[test]
fn yaml_secret_and_environment_values_are_replaced_valid_or_not() {
    let valid = "\
sources:
  in:
    type: forward
    address: ${SECRET_ADDR}
    shared_key: written-shared-key   # a comment
    users:
      - username: alice
        password: 'alice-password'
sinks:
  o:
    headers:
      x-api-key: \"lit-api-key-1\"
    librdkafka_options: { sasl.password: 98765432 }
";
    for text in [valid.to_string(), format!("{valid}  bad: [\n")] {
        let r = Redactions::of(&text, &env);
        let m = r.apply(
            "address \"secret-host.internal:99999\"; written-shared-key, alice-password, \
             lit-api-key-1, 98765432; alice stays",
        );
        for secret in [
            "secret-host.internal",
            "written-shared-key",
            "alice-password",
            "lit-api-key-1",
            "98765432",
        ] {
            assert!(!m.contains(secret), "{secret}: {m}\n{text}");
        }
        assert!(
            m.contains("${SECRET_ADDR}") && m.contains("alice stays"),
            "{m}"
        );
    }
    let r = Redactions::of(valid, &env);
    let tree = crate::config::yaml::read(&valid.replace("${SECRET_ADDR}", "h:1")).unwrap();
    let shown = r.show(&tree);
    assert!(shown.contains("address = \"${SECRET_ADDR}\""), "{shown}");
    assert!(
        !shown.contains("alice-password") && !shown.contains("lit-api"),
        "{shown}"
    );
}
