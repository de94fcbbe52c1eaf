//! docs/configuration.md cannot drift from the config structs: every key a
//! struct accepts is in the option table of its section, and every key in
//! an option table (a table whose first column is `key`) is accepted.

use std::collections::BTreeSet;

use super::keys::{keys_of, known_types};

const DOC: &str = include_str!("../../docs/configuration.md");

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
        keys_of::<sources::forward::ForwardSourceConfig>(),
    );
    forward_source
        .inline
        .push(("users", keys_of::<sources::forward::UserConfig>()));
    let mut forward_sink = section(
        "Sinks > `forward`",
        keys_of::<sinks::forward::ForwardSinkConfig>(),
    );
    forward_sink
        .inline
        .push(("servers", keys_of::<sinks::forward::ServerConfig>()));
    let mut retry = section("Failed deliveries: `retry` and `dead_letter`", &[]);
    // `dead_letter` and `retry` are read by the loader itself, for every sink
    retry.keys = dotted(
        &["dead_letter", "retry"],
        "retry",
        keys_of::<sinks::verdict::RetryConfig>(),
    );
    let mut tail = section("Sources > `tail`", &[]);
    tail.keys = dotted(
        keys_of::<sources::tail::TailSourceConfig>(),
        "multiline",
        keys_of::<sources::tail::MultilineConfig>(),
    );
    vec![
        section(
            "Sink queues: `buffer`",
            keys_of::<crate::buffer::BufferConfig>(),
        ),
        retry,
        forward_source,
        section(
            "Sources > `http`",
            keys_of::<sources::http::HttpSourceConfig>(),
        ),
        section(
            "Sources > `tcp`",
            keys_of::<sources::tcp::TcpSourceConfig>(),
        ),
        section(
            "Sources > `kafka`",
            keys_of::<sources::kafka::KafkaSourceConfig>(),
        ),
        tail,
        section(
            "Sources > `generator`",
            keys_of::<sources::generator::GeneratorConfig>(),
        ),
        section("Sinks > `file`", keys_of::<sinks::file::FileSinkConfig>()),
        forward_sink,
        section(
            "Sinks > `kafka`",
            keys_of::<sinks::kafka::KafkaSinkConfig>(),
        ),
        section(
            "Sinks > `stdout`",
            keys_of::<sinks::stdout::StdoutSinkConfig>(),
        ),
        section("Sinks > `null`", keys_of::<sinks::null::NullSinkConfig>()),
        section(
            "Sinks > `counter`",
            keys_of::<sinks::counter::CounterSinkConfig>(),
        ),
        section("Formats", keys_of::<crate::format::FormatTable>()),
        section("TLS > Listeners", keys_of::<crate::tls::ServerTlsConfig>()),
        section("TLS > Clients", keys_of::<crate::tls::ClientTlsConfig>()),
        section("`[limits]`", keys_of::<crate::limits::LimitsConfig>()),
        section("`[api]`", keys_of::<super::ApiConfig>()),
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
    for (kind, title) in [("sources", "Sources"), ("sinks", "Sinks")] {
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
