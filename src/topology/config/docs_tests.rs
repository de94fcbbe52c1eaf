//! docs/configuration.md cannot drift from the config structs: every key a
//! struct accepts is in the option table of its section, and every key in
//! an option table (a table whose first column is `key`) is accepted.

use std::cell::RefCell;
use std::collections::BTreeSet;

use super::keys::{keys_of, known_types};

thread_local! {
    /// The config structs [`sections`] has probed (on this test's thread).
    static PROBED: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

/// [`keys_of`], remembering that `T` is covered.
fn probe<T: for<'de> serde::Deserialize<'de>>() -> &'static [&'static str] {
    let name = std::any::type_name::<T>().rsplit("::").next().unwrap_or("");
    PROBED.with(|p| p.borrow_mut().insert(name.to_string()));
    keys_of::<T>()
}

/// The keys of a table read by two flattened structs, `A` and `B` (the
/// key probe cannot see into `Outer`, which holds them), remembering that
/// `Outer` is covered.
fn probe_flattened<Outer, A, B>() -> Vec<&'static str>
where
    A: for<'de> serde::Deserialize<'de>,
    B: for<'de> serde::Deserialize<'de>,
{
    let name = std::any::type_name::<Outer>()
        .rsplit("::")
        .next()
        .unwrap_or("");
    PROBED.with(|p| p.borrow_mut().insert(name.to_string()));
    [keys_of::<A>(), keys_of::<B>()].concat()
}

const DOC: &str = include_str!("../../../docs/configuration.md");

/// One section of the reference and the keys its option tables must list.
struct Section {
    /// Heading titles from `##` down, joined with ` > `.
    heading: &'static str,
    keys: Vec<String>,
    /// Keys whose value is a list of inline tables, documented in their own
    /// row as `{ a = …, b = … }`, with the keys of those tables.
    inline: Vec<(&'static str, &'static [&'static str])>,
}

fn section(heading: &'static str, keys: &[&str]) -> Section {
    Section {
        heading,
        keys: keys.iter().map(|k| k.to_string()).collect(),
        inline: Vec::new(),
    }
}

/// `keys` with `table` replaced by its own keys written `table.key`.
fn dotted(keys: &[&str], table: &str, inner: &[&str]) -> Vec<String> {
    keys.iter()
        .filter(|k| **k != table)
        .map(|k| k.to_string())
        .chain(inner.iter().map(|k| format!("{table}.{k}")))
        .collect()
}

fn sections() -> Vec<Section> {
    use crate::sinks;
    use crate::sources;
    let mut forward_source = section(
        "Sources > `forward`",
        probe::<sources::forward::ForwardSourceConfig>(),
    );
    forward_source
        .inline
        .push(("users", probe::<sources::forward::UserConfig>()));
    let mut forward_sink = section(
        "Sinks > `forward`",
        probe::<sinks::forward::ForwardSinkConfig>(),
    );
    forward_sink
        .inline
        .push(("servers", probe::<sinks::forward::ServerConfig>()));
    let mut rewrite_tag = section(
        "Filters > `rewrite_tag`",
        probe::<crate::filters::rewrite_tag::RewriteTagConfig>(),
    );
    rewrite_tag.inline.push((
        "rules",
        probe::<crate::filters::rewrite_tag::RewriteRuleConfig>(),
    ));
    use crate::topology::unit_test::spec as tests;
    let mut outputs = section(
        "Tests: `[[tests]]` > `[[tests.outputs]]`",
        probe::<tests::OutputSpec>(),
    );
    outputs
        .inline
        .push(("conditions", probe::<tests::Condition>()));
    let mut modify = section(
        "Filters > `modify`",
        probe::<crate::filters::modify::ModifyConfig>(),
    );
    modify
        .inline
        .push(("nest", probe::<crate::filters::modify::NestConfig>()));
    modify
        .inline
        .push(("lift", probe::<crate::filters::modify::LiftConfig>()));
    let mut retry = section("Failed deliveries: `retry` and `dead_letter`", &[]);
    // `dead_letter` and `retry` are read by the loader itself, for every sink
    retry.keys = dotted(
        &["dead_letter", "retry"],
        "retry",
        probe::<sinks::verdict::RetryConfig>(),
    );
    let mut tail = section("Sources > `tail`", &[]);
    tail.keys = dotted(
        probe::<sources::tail::TailSourceConfig>(),
        "multiline",
        probe::<sources::tail::MultilineConfig>(),
    );
    vec![
        section(
            "Sink queues: `buffer`",
            probe::<crate::buffer::BufferConfig>(),
        ),
        retry,
        forward_source,
        section(
            "Sources > `http`",
            probe::<sources::http::HttpSourceConfig>(),
        ),
        section(
            "Sources > `otlp`",
            &probe_flattened::<
                sources::otlp::config::RawOtlpSourceConfig,
                sources::otlp::config::OtlpSettings,
                sources::http::HttpSourceConfig,
            >(),
        ),
        section("Sources > `tcp`", probe::<sources::tcp::TcpSourceConfig>()),
        section("Sources > `udp`", probe::<sources::udp::UdpSourceConfig>()),
        section(
            "Sources > `journald`",
            probe::<sources::journald::JournaldSourceConfig>(),
        ),
        section(
            "Sources > `fuse`",
            probe::<sources::fuse::FuseSourceConfig>(),
        ),
        section(
            "Sources > `kafka`",
            probe::<sources::kafka::KafkaSourceConfig>(),
        ),
        tail,
        section(
            "Sources > `kubernetes`",
            probe::<sources::kubernetes::KubernetesSourceConfig>(),
        ),
        section(
            "Filters > `kubernetes`",
            probe::<crate::filters::kubernetes::KubernetesFilterConfig>(),
        ),
        section(
            "Sources > `generator`",
            probe::<sources::generator::GeneratorConfig>(),
        ),
        section(
            "Filters > `grep`",
            probe::<crate::filters::grep::GrepConfig>(),
        ),
        modify,
        section(
            "Filters > `multiline`",
            probe::<crate::filters::multiline::MultilineFilterConfig>(),
        ),
        section(
            "Filters > `parser`",
            probe::<crate::filters::parser::ParserConfig>(),
        ),
        section(
            "Filters > `remap`",
            probe::<crate::filters::remap::RemapConfig>(),
        ),
        rewrite_tag,
        section(
            "Filters > `sample`",
            probe::<crate::filters::sample::SampleConfig>(),
        ),
        section(
            "Filters > `throttle`",
            probe::<crate::filters::throttle::ThrottleConfig>(),
        ),
        section("Sinks > `file`", probe::<sinks::file::FileSinkConfig>()),
        forward_sink,
        section(
            "Sinks > `http`",
            &probe_flattened::<
                sinks::http::config::HttpSinkConfig,
                sinks::http::config::HttpSettings,
                sinks::http::RequestConfig,
            >(),
        ),
        section("Sinks > `kafka`", probe::<sinks::kafka::KafkaSinkConfig>()),
        section(
            "Sinks > `loki`",
            &probe_flattened::<
                sinks::loki::LokiSinkConfig,
                sinks::loki::config::LokiSettings,
                sinks::http::RequestConfig,
            >(),
        ),
        section(
            "Sinks > `opensearch`",
            &probe_flattened::<
                sinks::opensearch::OpenSearchSinkConfig,
                sinks::opensearch::config::OpenSearchSettings,
                sinks::http::RequestConfig,
            >(),
        ),
        section("Sinks > `s3`", probe::<sinks::s3::config::S3SinkConfig>()),
        section(
            "Sinks > `syslog`",
            probe::<sinks::syslog::SyslogSinkConfig>(),
        ),
        section(
            "Sinks > `splunk_hec`",
            &probe_flattened::<
                sinks::splunk_hec::SplunkHecSinkConfig,
                sinks::splunk_hec::config::SplunkHecSettings,
                sinks::http::RequestConfig,
            >(),
        ),
        section(
            "Sinks > `otlp`",
            &probe_flattened::<
                sinks::otlp::OtlpSinkConfig,
                sinks::otlp::config::OtlpSettings,
                sinks::http::RequestConfig,
            >(),
        ),
        section(
            "Sinks > `stdout`",
            probe::<sinks::stdout::StdoutSinkConfig>(),
        ),
        section("Sinks > `null`", probe::<sinks::null::NullSinkConfig>()),
        section(
            "Sinks > `counter`",
            probe::<sinks::counter::CounterSinkConfig>(),
        ),
        section("Formats", probe::<crate::format::FormatTable>()),
        section("TLS > Listeners", probe::<crate::tls::ServerTlsConfig>()),
        section("TLS > Clients", probe::<crate::tls::ClientTlsConfig>()),
        section("`[limits]`", probe::<crate::limits::LimitsConfig>()),
        section("`[api]`", probe::<super::ApiConfig>()),
        section("Tests: `[[tests]]`", probe::<tests::TestSpec>()),
        section(
            "Tests: `[[tests]]` > `[[tests.inputs]]`",
            probe::<tests::InputSpec>(),
        ),
        outputs,
    ]
}

/// A row of an option table: the keys in its first column and the whole row.
struct Row {
    heading: String,
    line: usize,
    keys: Vec<String>,
    text: String,
}

/// Every row of every option table, with the headings it is under.
fn option_rows(doc: &str) -> Vec<Row> {
    let mut headings: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    let mut in_option_table = false;
    let mut in_code = false;
    for (i, line) in doc.lines().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(rest) = line.strip_prefix("##") {
            let level = 2 + rest.chars().take_while(|c| *c == '#').count();
            let title = rest.trim_start_matches('#').trim().to_string();
            headings.truncate(level - 2);
            headings.push(title);
            in_option_table = false;
            continue;
        }
        if !line.starts_with('|') {
            in_option_table = false;
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        if first == "key" {
            in_option_table = true;
            continue;
        }
        if !in_option_table || first.starts_with("---") {
            continue;
        }
        rows.push(Row {
            heading: headings.join(" > "),
            line: i + 1,
            keys: backticked(first),
            text: line.to_string(),
        });
    }
    rows
}

/// The `code` spans of `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The keys written `key = …` inside `{ … }` in `text`.
fn inline_keys(text: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for table in text.split('{').skip(1) {
        let table = table.split('}').next().unwrap_or("");
        for pair in table.split(',') {
            if let Some((k, _)) = pair.split_once('=') {
                keys.insert(k.trim().to_string());
            }
        }
    }
    keys
}

#[test]
fn every_option_table_documents_exactly_the_keys_its_struct_accepts() {
    let rows = option_rows(DOC);
    let sections = sections();
    let mut problems = Vec::new();
    for row in &rows {
        if !sections.iter().any(|s| s.heading == row.heading) {
            problems.push(format!(
                "docs/configuration.md:{}: option table under \"{}\", which this test does not know: add the section to sections()",
                row.line, row.heading
            ));
        }
    }
    for s in &sections {
        let documented: BTreeSet<String> = rows
            .iter()
            .filter(|r| r.heading == s.heading)
            .flat_map(|r| r.keys.iter().cloned())
            .collect();
        let accepted: BTreeSet<String> = s.keys.iter().cloned().collect();
        for k in accepted.difference(&documented) {
            problems.push(format!(
                "{}: key `{k}` is accepted but not documented",
                s.heading
            ));
        }
        for k in documented.difference(&accepted) {
            problems.push(format!(
                "{}: key `{k}` is documented but not accepted",
                s.heading
            ));
        }
        for (key, inner) in &s.inline {
            let Some(row) = rows
                .iter()
                .find(|r| r.heading == s.heading && r.keys.iter().any(|k| k == key))
            else {
                continue;
            };
            let documented = inline_keys(&row.text);
            let accepted: BTreeSet<String> = inner.iter().map(|k| k.to_string()).collect();
            if documented != accepted {
                problems.push(format!(
                    "{} `{key}`: entries documented with keys {documented:?}, accepted keys are {accepted:?}",
                    s.heading
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn every_component_type_has_a_section() {
    let headings: BTreeSet<&str> = sections().iter().map(|s| s.heading).collect();
    for (kind, title) in [
        ("sources", "Sources"),
        ("filters", "Filters"),
        ("sinks", "Sinks"),
    ] {
        for t in known_types(kind) {
            let heading = format!("{title} > `{t}`");
            assert!(
                headings.contains(heading.as_str()),
                "{kind} type `{t}` has no section \"{heading}\" in docs/configuration.md"
            );
        }
    }
}

#[test]
fn the_table_reader_finds_keys_and_sections() {
    let doc = "## A\n\n| key | default | meaning |\n|---|---|---|\n| `x`, `y` | `1` | see `z` |\n\n### `b`\n\n| key | d |\n|---|---|\n| `servers` | `{ address = \"h:p\", weight = 1 }` entries |\n\n| type | output |\n|---|---|\n| `raw` | lines |\n";
    let rows = option_rows(doc);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].heading, "A");
    assert_eq!(rows[0].keys, ["x", "y"]);
    assert_eq!(rows[1].heading, "A > `b`");
    assert_eq!(
        inline_keys(&rows[1].text).into_iter().collect::<Vec<_>>(),
        ["address", "weight"]
    );
}

/// The names of the structs declared with `deny_unknown_fields` in the
/// Rust files under `dir`, with the file each is in.
fn strict_structs(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            strict_structs(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut strict = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("#[serde(") && line.contains("deny_unknown_fields") {
                strict = true;
            } else if strict && !line.starts_with("#[") && !line.starts_with("///") {
                let name = line
                    .split("struct ")
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_alphanumeric() && c != '_').next());
                if let Some(name) = name {
                    out.push((name.to_string(), path.display().to_string()));
                }
                strict = false;
            }
        }
    }
}

/// A config struct added without a section here (and so, maybe, without
/// documentation) fails this test.
#[test]
fn every_strict_config_struct_is_checked_against_the_docs() {
    sections();
    let probed = PROBED.with(|p| p.borrow().clone());
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    strict_structs(&src, &mut found);
    assert!(found.len() >= 20, "the scan found only {found:?}");
    let missing: Vec<String> = found
        .iter()
        .filter(|(name, _)| !probed.contains(name) && name != "Example")
        .map(|(name, file)| format!("{name} ({file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "config structs not compared with docs/configuration.md: add them to sections(): {missing:?}"
    );
}
