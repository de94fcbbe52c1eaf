//! `logferry config example KIND TYPE`: a commented TOML example of each
//! component type: every key it accepts, set to its default or a typical
//! value, or commented out where it needs a file, a secret or a choice.
//! With `--yaml`, the same example in YAML, comments kept
//! ([`crate::config::yaml::write`]).
//! The tests below load each example with the real loader and check that
//! it shows every key, so the examples cannot fall behind the code.

use std::process::ExitCode;

/// Whether a component is a source, a filter or a sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ComponentKind {
    Source,
    Filter,
    Sink,
}

impl ComponentKind {
    fn name(self) -> &'static str {
        match self {
            ComponentKind::Source => "source",
            ComponentKind::Filter => "filter",
            ComponentKind::Sink => "sink",
        }
    }
}

/// Arguments of `logferry config example`.
#[derive(Debug, clap::Args)]
pub struct ExampleArgs {
    /// `source`, `filter` or `sink`.
    #[arg(value_enum, required_unless_present = "list")]
    pub kind: Option<ComponentKind>,
    /// The component type: `forward`, `tail`, `kafka`, `file`, … (see --list).
    #[arg(value_name = "TYPE", required_unless_present = "list")]
    pub type_name: Option<String>,
    /// List the component types that have an example.
    #[arg(long, conflicts_with_all = ["kind", "type_name"])]
    pub list: bool,
    /// Print the example in YAML (for a `.yaml` configuration file).
    #[arg(long)]
    pub yaml: bool,
}

/// One component's example.
pub struct Example {
    pub kind: ComponentKind,
    /// The `type` value.
    pub type_name: &'static str,
    /// The commented TOML: one `[sources.NAME]`, `[filters.NAME]` or
    /// `[sinks.NAME]` table (with its sub-tables).
    pub text: &'static str,
}

macro_rules! example {
    ($kind:ident, $name:literal, $file:literal) => {
        Example {
            kind: ComponentKind::$kind,
            type_name: $name,
            text: include_str!(concat!("examples/", $file)),
        }
    };
}

/// Every example, sources first, then filters.
pub const EXAMPLES: &[Example] = &[
    example!(Source, "forward", "source-forward.toml"),
    example!(Source, "fuse", "source-fuse.toml"),
    example!(Source, "generator", "source-generator.toml"),
    example!(Source, "http", "source-http.toml"),
    example!(Source, "journald", "source-journald.toml"),
    example!(Source, "kafka", "source-kafka.toml"),
    example!(Source, "kubernetes", "source-kubernetes.toml"),
    example!(Source, "otlp", "source-otlp.toml"),
    example!(Source, "tail", "source-tail.toml"),
    example!(Source, "tcp", "source-tcp.toml"),
    example!(Source, "udp", "source-udp.toml"),
    example!(Filter, "grep", "filter-grep.toml"),
    example!(Filter, "kubernetes", "filter-kubernetes.toml"),
    example!(Filter, "modify", "filter-modify.toml"),
    example!(Filter, "multiline", "filter-multiline.toml"),
    example!(Filter, "parser", "filter-parser.toml"),
    example!(Filter, "remap", "filter-remap.toml"),
    example!(Filter, "rewrite_tag", "filter-rewrite_tag.toml"),
    example!(Filter, "sample", "filter-sample.toml"),
    example!(Filter, "throttle", "filter-throttle.toml"),
    example!(Sink, "counter", "sink-counter.toml"),
    example!(Sink, "file", "sink-file.toml"),
    example!(Sink, "forward", "sink-forward.toml"),
    example!(Sink, "http", "sink-http.toml"),
    example!(Sink, "kafka", "sink-kafka.toml"),
    example!(Sink, "loki", "sink-loki.toml"),
    example!(Sink, "null", "sink-null.toml"),
    example!(Sink, "opensearch", "sink-opensearch.toml"),
    example!(Sink, "otlp", "sink-otlp.toml"),
    example!(Sink, "s3", "sink-s3.toml"),
    example!(Sink, "splunk_hec", "sink-splunk_hec.toml"),
    example!(Sink, "stdout", "sink-stdout.toml"),
    example!(Sink, "syslog", "sink-syslog.toml"),
];

/// The example of `kind` `type_name`, if there is one.
pub fn find(kind: ComponentKind, type_name: &str) -> Option<&'static Example> {
    EXAMPLES
        .iter()
        .find(|e| e.kind == kind && e.type_name == type_name)
}

/// `source forward    a Fluentd forward-protocol server`: one line per
/// example, from the first sentence of its leading comment.
pub fn list() -> String {
    EXAMPLES
        .iter()
        .map(|e| {
            format!(
                "{:<6} {:<10} {}\n",
                e.kind.name(),
                e.type_name,
                summary(e.text)
            )
        })
        .collect()
}

/// The first sentence of the comment an example starts with, after its
/// `TYPE KIND: ` prefix.
fn summary(text: &str) -> String {
    let comment: Vec<&str> = text
        .lines()
        .map_while(|l| l.strip_prefix('#'))
        .map(str::trim)
        .collect();
    let comment = comment.join(" ");
    let body = comment.split_once(": ").map_or("", |(_, b)| b);
    let end = [". ", "; "]
        .iter()
        .filter_map(|p| body.find(p))
        .min()
        .unwrap_or(body.len());
    body[..end].trim_end_matches('.').to_string()
}

pub fn main(args: &ExampleArgs) -> ExitCode {
    if args.list {
        print!("{}", list());
        return ExitCode::SUCCESS;
    }
    let (Some(kind), Some(type_name)) = (args.kind, args.type_name.as_deref()) else {
        eprintln!(
            "error: give a component, e.g. `logferry config example source forward`, or --list"
        );
        return ExitCode::from(2);
    };
    match find(kind, type_name) {
        Some(e) if args.yaml => match crate::config::yaml::write::from_toml(e.text) {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(why) => {
                eprintln!("error: the example cannot be written as YAML: {why}");
                ExitCode::FAILURE
            }
        },
        Some(e) => {
            print!("{}", e.text);
            ExitCode::SUCCESS
        }
        None => {
            let known: Vec<&str> = EXAMPLES
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| e.type_name)
                .collect();
            eprintln!(
                "error: no {} type `{type_name}` (known: {}); `logferry config example --list` shows them all",
                kind.name(),
                known.join(", ")
            );
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::config::keys::{keys_of, known_types};
    use crate::topology::config::Config;

    /// The example in the smallest config that the loader accepts: a
    /// source gets a `null` sink, a sink a `generator` source.
    fn wrapped(e: &Example) -> String {
        match e.kind {
            ComponentKind::Source => format!(
                "{}\n[sinks.example_out]\ntype = \"null\"\nmatch = \"**\"\n",
                e.text
            ),
            ComponentKind::Sink => format!(
                "[sources.example_in]\ntype = \"generator\"\ncount = 1\n\n{}",
                e.text
            ),
            ComponentKind::Filter => format!(
                "[sources.example_in]\ntype = \"generator\"\ncount = 1\n\n{}\n[sinks.example_out]\ntype = \"null\"\nmatch = \"**\"\n",
                e.text
            ),
        }
    }

    #[test]
    fn every_example_is_accepted_by_the_loader() {
        for e in EXAMPLES {
            let origin = format!("{} {}", e.kind.name(), e.type_name);
            let config = Config::parse(&wrapped(e), &origin)
                .unwrap_or_else(|err| panic!("example {origin} does not load: {err}"));
            let type_of = match e.kind {
                ComponentKind::Source => format!("{:?}", config.sources[0].kind),
                ComponentKind::Filter => format!("{:?}", config.filters[0].kind),
                ComponentKind::Sink => format!("{:?}", config.sinks[0].kind),
            };
            assert!(
                type_of
                    .to_lowercase()
                    .starts_with(&e.type_name.replace('_', "")),
                "example {origin} is a {type_of}"
            );
        }
    }

    #[test]
    fn every_example_in_yaml_loads_as_its_toml_does() {
        use crate::config::yaml::write::from_toml;
        for e in EXAMPLES {
            let origin = format!("{} {}", e.kind.name(), e.type_name);
            let toml = Config::parse(&wrapped(e), &format!("{origin}.toml"))
                .unwrap_or_else(|err| panic!("example {origin} does not load: {err}"));
            let yaml = from_toml(&wrapped(e))
                .unwrap_or_else(|err| panic!("example {origin} is not written as YAML: {err}"));
            let loaded = Config::parse(&yaml, &format!("{origin}.yaml")).unwrap_or_else(|err| {
                panic!("example {origin} in YAML does not load: {err}\n{yaml}")
            });
            assert_eq!(loaded.tree, toml.tree, "example {origin}:\n{yaml}");
            assert_eq!(
                format!("{:?}", (&loaded.sources, &loaded.filters, &loaded.sinks)),
                format!("{:?}", (&toml.sources, &toml.filters, &toml.sinks)),
                "example {origin}"
            );
            // the keys set aside stay, as YAML comments
            let set_aside = e.text.lines().filter(|l| {
                l.strip_prefix("# ").is_some_and(|l| {
                    l.starts_with(|c: char| c.is_ascii_lowercase())
                        && toml::from_str::<toml::Table>(l).is_ok()
                })
            });
            for line in set_aside {
                let key = line[2..].split([' ', '=']).next().unwrap_or_default();
                assert!(
                    yaml.contains(&format!("# {key}:")),
                    "example {origin}: `{line}` is lost:\n{yaml}"
                );
            }
        }
    }

    #[test]
    fn every_known_type_has_an_example_and_no_other_does() {
        for kind in [
            ComponentKind::Source,
            ComponentKind::Filter,
            ComponentKind::Sink,
        ] {
            let mut known = known_types(&format!("{}s", kind.name()));
            known.sort();
            let mut examples: Vec<String> = EXAMPLES
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| e.type_name.to_string())
                .collect();
            examples.sort();
            assert_eq!(examples, known, "{} types with examples", kind.name());
        }
    }

    /// The keys each type accepts (its config struct).
    fn keys(e: &Example) -> &'static [&'static str] {
        use crate::{filters, sinks, sources};
        match (e.kind, e.type_name) {
            (ComponentKind::Filter, "grep") => keys_of::<filters::grep::GrepConfig>(),
            (ComponentKind::Filter, "kubernetes") => {
                keys_of::<filters::kubernetes::KubernetesFilterConfig>()
            }
            (ComponentKind::Filter, "modify") => keys_of::<filters::modify::ModifyConfig>(),
            (ComponentKind::Filter, "multiline") => {
                keys_of::<filters::multiline::MultilineFilterConfig>()
            }
            (ComponentKind::Filter, "parser") => keys_of::<filters::parser::ParserConfig>(),
            (ComponentKind::Filter, "remap") => keys_of::<filters::remap::RemapConfig>(),
            (ComponentKind::Filter, "rewrite_tag") => {
                keys_of::<filters::rewrite_tag::RewriteTagConfig>()
            }
            (ComponentKind::Filter, "sample") => keys_of::<filters::sample::SampleConfig>(),
            (ComponentKind::Filter, "throttle") => keys_of::<filters::throttle::ThrottleConfig>(),
            (ComponentKind::Source, "forward") => {
                keys_of::<sources::forward::ForwardSourceConfig>()
            }
            (ComponentKind::Source, "generator") => {
                keys_of::<sources::generator::GeneratorConfig>()
            }
            (ComponentKind::Source, "fuse") => keys_of::<sources::fuse::FuseSourceConfig>(),
            (ComponentKind::Source, "http") => keys_of::<sources::http::HttpSourceConfig>(),
            (ComponentKind::Source, "journald") => {
                keys_of::<sources::journald::JournaldSourceConfig>()
            }
            (ComponentKind::Source, "kafka") => keys_of::<sources::kafka::KafkaSourceConfig>(),
            (ComponentKind::Source, "kubernetes") => {
                keys_of::<sources::kubernetes::KubernetesSourceConfig>()
            }
            (ComponentKind::Source, "otlp") => both(
                keys_of::<sources::otlp::config::OtlpSettings>(),
                keys_of::<sources::http::HttpSourceConfig>(),
            ),
            (ComponentKind::Source, "tail") => keys_of::<sources::tail::TailSourceConfig>(),
            (ComponentKind::Source, "tcp") => keys_of::<sources::tcp::TcpSourceConfig>(),
            (ComponentKind::Source, "udp") => keys_of::<sources::udp::UdpSourceConfig>(),
            (ComponentKind::Sink, "counter") => keys_of::<sinks::counter::CounterSinkConfig>(),
            (ComponentKind::Sink, "file") => keys_of::<sinks::file::FileSinkConfig>(),
            (ComponentKind::Sink, "forward") => keys_of::<sinks::forward::ForwardSinkConfig>(),
            (ComponentKind::Sink, "kafka") => keys_of::<sinks::kafka::KafkaSinkConfig>(),
            (ComponentKind::Sink, "http") => both(
                keys_of::<sinks::http::config::HttpSettings>(),
                keys_of::<sinks::http::RequestConfig>(),
            ),
            (ComponentKind::Sink, "loki") => both(
                keys_of::<sinks::loki::config::LokiSettings>(),
                keys_of::<sinks::http::RequestConfig>(),
            ),
            (ComponentKind::Sink, "opensearch") => both(
                keys_of::<sinks::opensearch::config::OpenSearchSettings>(),
                keys_of::<sinks::http::RequestConfig>(),
            ),
            (ComponentKind::Sink, "otlp") => both(
                keys_of::<sinks::otlp::config::OtlpSettings>(),
                keys_of::<sinks::http::RequestConfig>(),
            ),
            (ComponentKind::Sink, "s3") => keys_of::<sinks::s3::config::S3SinkConfig>(),
            (ComponentKind::Sink, "splunk_hec") => both(
                keys_of::<sinks::splunk_hec::config::SplunkHecSettings>(),
                keys_of::<sinks::http::RequestConfig>(),
            ),
            (ComponentKind::Sink, "null") => keys_of::<sinks::null::NullSinkConfig>(),
            (ComponentKind::Sink, "stdout") => keys_of::<sinks::stdout::StdoutSinkConfig>(),
            (ComponentKind::Sink, "syslog") => keys_of::<sinks::syslog::SyslogSinkConfig>(),
            (kind, name) => panic!("no key list for {kind:?} {name}: add it here"),
        }
    }

    /// The keys of a table read by two flattened structs.
    fn both(a: &'static [&'static str], b: &'static [&'static str]) -> &'static [&'static str] {
        Vec::leak([a, b].concat())
    }

    /// Whether `text` sets `key`, or shows it commented out (`# key = …`),
    /// or has its sub-table (`[sources.x.key]`).
    fn mentions(text: &str, key: &str) -> bool {
        text.lines().any(|line| {
            let line = line.trim_start_matches('#').trim();
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
                || line.starts_with('[') && line.ends_with(&format!(".{key}]"))
        })
    }

    #[test]
    fn every_example_shows_every_key_of_its_type() {
        let mut missing = Vec::new();
        for e in EXAMPLES {
            for key in keys(e) {
                if !mentions(e.text, key) {
                    missing.push(format!("{} {}: `{key}`", e.kind.name(), e.type_name));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "keys missing from examples:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn the_key_check_sees_set_commented_and_table_keys_only() {
        let text =
            "[sinks.a]\npath = \"x\"\n# fsync = false\n[sinks.a.buffer]\n# pathological = 1\n";
        assert!(mentions(text, "path"));
        assert!(mentions(text, "fsync"));
        assert!(mentions(text, "buffer"));
        assert!(!mentions(text, "format"));
        assert!(!mentions(text, "patho"));
    }

    #[test]
    fn the_list_names_every_example_with_its_summary() {
        let list = list();
        assert_eq!(list.lines().count(), EXAMPLES.len());
        assert!(
            list.contains("source forward    a Fluentd forward-protocol server"),
            "{list}"
        );
    }
}
