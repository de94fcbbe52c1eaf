use super::*;
use crate::format::FormatKind;
use crate::topology::kinds::{SinkKind, SourceKind};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, "test.toml")
}

const GOOD: &str = r#"
[sources.in]
type = "forward"
address = "127.0.0.1:0"
max_frame_bytes = "1MiB"
idle_timeout = "30s"

[sources.gen]
type = "generator"
count = 10

[sinks.unify]
type = "file"
match = "app.** system"
path = "/tmp/unify.log"
format = { type = "template", template = "{time} {message}" }
rotate_bytes = "100MiB"

[sinks.unify.buffer]
max_bytes = "4MiB"
when_full = "drop_newest"

[sinks.count]
type = "counter"
match = "**"
interval = "1s"
"#;

#[test]
fn parses_the_documented_shape() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.sources.len(), 2);
    assert_eq!(c.sources[0].name, "in", "file order is kept");
    let SourceKind::Forward(f) = &c.sources[0].kind else {
        panic!()
    };
    assert_eq!(f.max_frame_bytes, 1 << 20);
    assert_eq!(f.idle_timeout, std::time::Duration::from_secs(30));
    let unify = &c.sinks[0];
    assert_eq!(unify.name, "unify");
    assert!(unify.pattern.matches("app.x.y") && unify.pattern.matches("system"));
    assert!(!unify.pattern.matches("other"));
    assert_eq!(unify.buffer.max_bytes, 4 << 20);
    let SinkKind::File(file) = &unify.kind else {
        panic!()
    };
    assert_eq!(file.format.kind, FormatKind::Template);
    assert_eq!(file.rotate_bytes, Some(100 << 20));
}

#[test]
fn the_embedded_default_is_valid() {
    let c = Config::embedded_default().unwrap();
    assert_eq!(
        (c.sources.len(), c.sinks.len()),
        (2, 1),
        "forward and HTTP in, one file out"
    );
}

fn err(text: &str) -> ConfigError {
    parse(text).expect_err("config must be rejected")
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    let e = err("[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\nadress = \"x\"\n\n[sinks.o]\ntype = \"null\"\nmatch = \"**\"\n");
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("adress"), "{e}");
    let e = err(&GOOD.replace("interval = \"1s\"", "interval = \"1s\"\ncolour = \"red\""));
    assert!(
        e.message.contains("colour") && e.to_string().starts_with("test.toml:"),
        "{e}"
    );
    assert_eq!(
        e.line,
        Some(
            GOOD.lines()
                .position(|l| l.starts_with("interval"))
                .unwrap()
                + 2
        )
    );
    let e = err(&GOOD.replace("when_full", "when_ful"));
    assert!(e.message.contains("when_ful"), "{e}");
    let e = err(&format!("{GOOD}\n[extra]\nx = 1\n"));
    assert!(e.message.contains("unknown top-level key `extra`"), "{e}");
}

#[test]
fn semantic_errors_are_explained() {
    let e = err(&GOOD.replace("type = \"counter\"", "type = \"countr\""));
    assert!(
        e.message.contains("unknown sink type `countr`") && e.message.contains("counter"),
        "{e}"
    );
    let e = err(&GOOD.replace("match = \"**\"\n", ""));
    assert!(e.message.contains("needs `match`"), "{e}");
    let e = err(&GOOD.replace("when_full = \"drop_newest\"", "when_full = \"explode\""));
    assert!(e.message.contains("explode"), "{e}");
    let e = err(&GOOD.replace("\"1MiB\"", "\"1 parsec\""));
    assert!(e.message.contains("parsec"), "{e}");
    let e = err(&GOOD.replace("app.** system", "{app"));
    assert!(e.message.contains("match"), "{e}");
    let e = err(&GOOD.replace("{time} {message}", "{time"));
    assert!(e.message.contains("template"), "{e}");
    let e = err("[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n");
    assert!(e.message.contains("no sinks"), "{e}");
    let e = err("[sources.in\ntype = 1");
    assert_eq!(e.line, Some(1), "{e}");
}

#[test]
fn environment_variables_are_substituted() {
    std::env::set_var("LOGFERRY_TEST_PORT", "24299");
    let c = parse(&GOOD.replace("127.0.0.1:0", "127.0.0.1:${LOGFERRY_TEST_PORT}")).unwrap();
    let SourceKind::Forward(f) = &c.sources[0].kind else {
        panic!()
    };
    assert_eq!(f.address, "127.0.0.1:24299");
    let e = err(&GOOD.replace("127.0.0.1:0", "${LOGFERRY_TEST_UNSET_VAR}"));
    assert_eq!(e.line, Some(4), "{e}");
    assert!(e.message.contains("LOGFERRY_TEST_UNSET_VAR"), "{e}");
}

#[test]
fn type_errors_point_at_the_key() {
    let e = err(&GOOD.replace("max_bytes = \"4MiB\"", "max_bytes = true"));
    let line = GOOD
        .lines()
        .position(|l| l.starts_with("max_bytes"))
        .unwrap()
        + 1;
    assert_eq!(e.line, Some(line), "{e}");
    assert!(e.message.contains("max_bytes"), "{e}");
}

#[test]
fn environment_values_cannot_change_the_structure() {
    std::env::set_var(
        "LOGFERRY_TEST_INJECT",
        "k\"\n\n[sinks.evil]\ntype = \"stdout\"\nmatch = \"**\"\n[x\\",
    );
    let c = parse(&GOOD.replace(
        "address = \"127.0.0.1:0\"",
        "address = \"127.0.0.1:0\"\nshared_key = \"${LOGFERRY_TEST_INJECT}\"",
    ))
    .unwrap();
    assert_eq!(c.sinks.len(), 2, "no sink added");
    let SourceKind::Forward(f) = &c.sources[0].kind else {
        panic!()
    };
    assert_eq!(
        f.shared_key.as_deref(),
        Some("k\"\n\n[sinks.evil]\ntype = \"stdout\"\nmatch = \"**\"\n[x\\")
    );
}

#[test]
fn validation_errors_point_at_the_key() {
    let line_of =
        |text: &str, key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let text = GOOD.replace(
        "idle_timeout = \"30s\"",
        "idle_timeout = \"30s\"\nmax_connections = 0",
    );
    let e = err(&text);
    assert_eq!(e.line, Some(line_of(&text, "max_connections")), "{e}");
    let text = GOOD.replace("rotate_bytes = \"100MiB\"", "rotate_bytes = 0");
    let e = err(&text);
    assert_eq!(e.line, Some(line_of(&text, "rotate_bytes")), "{e}");
    // a default named by the message: the key that is in the file
    let text = GOOD.replace("\"1MiB\"", "\"512MiB\"");
    let e = err(&text);
    assert_eq!(e.line, Some(line_of(&text, "max_frame_bytes")), "{e}");
    assert!(e.message.contains("raise max_decompressed_bytes"), "{e}");
}

#[test]
fn a_variable_outside_quotes_is_explained() {
    let e = err(&GOOD.replace("count = 10", "count = ${COUNT}"));
    assert_eq!(
        e.line,
        Some(GOOD.lines().position(|l| l == "count = 10").unwrap() + 1)
    );
    assert!(e.message.contains("inside quoted strings only"), "{e}");
}

#[test]
fn every_sink_takes_dead_letter_and_the_file_sink_a_retry_table() {
    let c = parse(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n\
         [sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"/tmp/x.log\"\n\
         dead_letter = \"/tmp/dl/f.msgpack\"\n\
         retry = { initial = \"50ms\", max = \"5s\", jitter = 0.1, max_attempts = 3 }\n\n\
         [sinks.fw]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{ address = \"h:1\" }]\n\
         dead_letter = \"/tmp/dl/fw.msgpack\"\n\n\
         [sinks.n]\ntype = \"null\"\nmatch = \"**\"\n",
    )
    .unwrap();
    let f = &c.sinks[0].settle;
    assert_eq!(
        f.dead_letter.as_deref(),
        Some(Path::new("/tmp/dl/f.msgpack"))
    );
    let r = f.retry.unwrap();
    assert_eq!(
        (r.initial, r.max, r.jitter, r.max_attempts),
        (
            std::time::Duration::from_millis(50),
            std::time::Duration::from_secs(5),
            0.1,
            3
        )
    );
    assert!(c.sinks[1].settle.dead_letter.is_some());
    assert_eq!(c.sinks[2].settle, Default::default());
}

#[test]
fn bad_retry_and_dead_letter_settings_are_explained() {
    let head = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n";
    let e = err(&format!(
        "{head}[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"/tmp/x.log\"\nretry = {{ jitter = 2.0 }}\n"
    ));
    assert!(e.message.contains("retry.jitter"), "{e}");
    let e = err(&format!(
        "{head}[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"/tmp/x.log\"\n\n[sinks.f.retry]\ntries = 2\n"
    ));
    assert!(e.message.contains("unknown key `tries`"), "{e}");
    assert_eq!(e.line, Some(11));
    let e = err(&format!(
        "{head}[sinks.fw]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"h:1\" }}]\nretry = {{ max_attempts = 2 }}\n"
    ));
    assert!(e.message.contains("max_attempts"), "{e}");
    assert_eq!(e.line, Some(9));
    let e = err(&format!(
        "{head}[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"/tmp/x.log\"\ndead_letter = \"/tmp\"\n"
    ));
    assert!(e.message.contains("dead_letter"), "{e}");
    let e = err(&format!(
        "{head}[sinks.f]\ntype = \"file\"\nmatch = \"**\"\npath = \"/tmp/x.log\"\ndead_letter = 3\n"
    ));
    assert!(e.message.contains("dead_letter must be a file path"), "{e}");
    let e = err(&format!(
        "{head}[sinks.a]\ntype = \"null\"\nmatch = \"**\"\ndead_letter = \"/tmp/d\"\n\n\
         [sinks.b]\ntype = \"null\"\nmatch = \"**\"\ndead_letter = \"/tmp/d\"\n"
    ));
    assert!(
        e.message.contains("already the dead-letter file of sink a"),
        "{e}"
    );
    assert_eq!(e.line, Some(13));
}

#[test]
fn the_memory_budget_has_a_default_and_a_floor() {
    assert_eq!(parse(GOOD).unwrap().limits.memory, 256 * 1024 * 1024);
    let c = parse(&format!("[limits]\nmemory = \"64MiB\"\n{GOOD}")).unwrap();
    assert_eq!(c.limits.memory, 64 * 1024 * 1024);
    let e = parse(&format!("[limits]\nmemory = \"64KiB\"\n{GOOD}")).unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    assert!(
        e.message
            .contains("[limits]: memory = 65536 is below the least allowed, 1MiB"),
        "{e}"
    );
    let e = parse(&format!("[limits]\nmemroy = \"64MiB\"\n{GOOD}")).unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
    assert!(
        e.message
            .contains("unknown key `memroy`, expected `memory`"),
        "{e}"
    );
}

/// A control character in a comment: toml reports it with an empty
/// message, which left the user with a bare `file:line:`.
#[test]
fn a_control_character_is_named_in_the_error() {
    for text in ["# a\u{1}b\n", "a = 1\n# x\u{0}\n"] {
        let err = parse(text).unwrap_err();
        assert!(err.message.contains("U+00"), "{err}");
        assert!(err.message.contains("control character"), "{err}");
    }
}

/// Nesting is bounded by toml (80 levels): deeper values are an error,
/// not a stack overflow, on an ordinary thread's stack.
#[test]
fn deep_nesting_is_an_error() {
    for depth in [78, 200, 10_000] {
        let text = format!(
            "[sinks.out]\ntype = \"null\"\nmatch = {}\"**\"{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert!(parse(&text).is_err(), "depth {depth}");
    }
}

fn sink_with_buffer(buffer: &str) -> Result<BufferConfig, String> {
    let text = format!(
        "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:0\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\nbuffer = {buffer}\n"
    );
    Config::parse(&text, "test.toml")
        .map(|mut c| c.sinks.remove(0).buffer)
        .map_err(|e| e.to_string())
}

#[test]
fn a_disk_buffer_is_configured_in_the_sink_buffer_table() {
    let b = sink_with_buffer(
        r#"{ type = "disk", dir = "/var/lib/lf", max_bytes = "8GiB", fsync = "always", fsync_interval = "250ms" }"#,
    )
    .unwrap();
    assert_eq!(b.kind, crate::buffer::BufferKind::Disk);
    assert_eq!(b.dir.as_deref(), Some(std::path::Path::new("/var/lib/lf")));
    assert_eq!(b.max_bytes, 8 << 30, "a disk buffer may exceed 4 GiB");
    assert_eq!(b.fsync, crate::buffer::disk::Fsync::Always);
    assert_eq!(b.fsync_interval, std::time::Duration::from_millis(250));
    let d = sink_with_buffer(r#"{ type = "disk", dir = "/x" }"#).unwrap();
    assert_eq!(d.fsync, crate::buffer::disk::Fsync::Interval);
    assert_eq!(d.fsync_interval, std::time::Duration::from_secs(1));
    assert_eq!(sink_with_buffer("{}").unwrap(), BufferConfig::default());
}

#[test]
fn disk_buffer_mistakes_are_named() {
    let e = sink_with_buffer(r#"{ type = "disk" }"#).unwrap_err();
    assert!(e.contains("needs buffer.dir"), "{e}");
    let e = sink_with_buffer(r#"{ dir = "/x" }"#).unwrap_err();
    assert!(e.contains("type = \"disk\""), "{e}");
    let e = sink_with_buffer(r#"{ type = "tape" }"#).unwrap_err();
    assert!(e.contains("tape") || e.contains("unknown variant"), "{e}");
    let e = sink_with_buffer(r#"{ type = "disk", dir = "/x", fsync = "sometimes" }"#).unwrap_err();
    assert!(
        e.contains("sometimes") || e.contains("unknown variant"),
        "{e}"
    );
}

#[test]
fn filters_keep_the_order_of_the_file_in_either_table_form() {
    let base =
        "[sources.gen]\ntype = \"generator\"\n\n[sinks.out]\ntype = \"null\"\nmatch = \"**\"\n\n";
    let grep = "type = \"grep\"\nmatch = \"**\"\ninclude = { message = \"x\" }\n";
    let headers = format!("{base}[filters.z]\n{grep}\n[filters.a]\n{grep}\n[filters.m]\n{grep}");
    let names = |c: Config| c.filters.into_iter().map(|f| f.name).collect::<Vec<_>>();
    assert_eq!(names(parse(&headers).unwrap()), ["z", "a", "m"]);
    let inline = format!(
        "{base}[filters]\nz = {{ type = \"grep\", match = \"**\", exclude = {{ message = \"x\" }} }}\n\
         a = {{ type = \"grep\", match = \"**\", exclude = {{ message = \"y\" }} }}\n"
    );
    assert_eq!(names(parse(&inline).unwrap()), ["z", "a"]);
    let e = parse(&format!(
        "{base}[filters.f]\ntype = \"grep\"\ninclude = {{ a = \"b\" }}\n"
    ))
    .unwrap_err();
    assert!(e.to_string().contains("[filters.f] needs `match`"), "{e}");
    assert_eq!(e.line, Some(8), "the header of the filter");
}

/// The first ```toml and ```yaml blocks of docs/configuration.md: the
/// same configuration in both syntaxes.
#[test]
fn the_documented_yaml_example_is_the_toml_one() {
    let doc = include_str!("../../../docs/configuration.md");
    let block = |lang: &str| {
        let fence = format!("```{lang}\n");
        let start = doc.find(&fence).expect("a block") + fence.len();
        &doc[start..start + doc[start..].find("```").expect("its end")]
    };
    let toml = Config::parse(block("toml"), "doc.toml").unwrap();
    let yaml = Config::parse(block("yaml"), "doc.yaml").unwrap();
    assert_eq!(yaml.tree, toml.tree);
    assert_eq!(format!("{:?}", yaml.sinks), format!("{:?}", toml.sinks));
}

#[test]
fn yaml_filters_apply_in_file_order_and_errors_name_line_and_column() {
    let text = "\
sources:
  in:
    type: generator
filters:
  zz:
    type: grep
    match: '**'
    include: { message: a }
  aa:
    type: grep
    match: '**'
    include:
      message: b
sinks:
  out:
    type: 'null'
    match: '**'
";
    let c = Config::parse(text, "t.yaml").unwrap();
    let names: Vec<&str> = c.filters.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["zz", "aa"]);
    let e = Config::parse(
        &text.replace("      message: b\n", "      message: b\n    colour: 1\n"),
        "t.yml",
    )
    .unwrap_err();
    assert_eq!((e.line, e.column), (Some(14), Some(5)), "{e}");
    assert!(
        e.to_string()
            .starts_with("t.yml:14:5: [filters.aa]: unknown key `colour`"),
        "{e}"
    );
    // the same text named .toml is read as TOML
    let e = Config::parse(text, "t.toml").unwrap_err();
    assert_eq!(e.column, None);
    // a null sink whose type is YAML's null
    let e = Config::parse(&text.replace("'null'", "null"), "t.yaml").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("t.yaml:16:5: `sinks.out.type`: has no value"),
        "{e}"
    );
}
