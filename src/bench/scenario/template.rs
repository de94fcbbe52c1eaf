//! Config templates of the systems a scenario starts, kept in the
//! repository as `bench/templates/<system>/<role>.<ext>` and built into the
//! binary, with `{{name}}` placeholders filled in by [`render`].

use std::path::Path;

/// A system that can take a role in a scenario (the measured deliver or
/// server role, and in the deliver scenarios the agent and receiver roles
/// too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    Logferry,
    FluentBit,
    Fluentd,
    Vector,
}

impl Target {
    /// The name used in results and in `bench/templates/<name>/`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Logferry => "logferry",
            Target::FluentBit => "fluent-bit",
            Target::Fluentd => "fluentd",
            Target::Vector => "vector",
        }
    }

    /// The deliver template built into the binary.
    pub fn deliver_template(self) -> &'static str {
        match self {
            Target::Logferry => LOGFERRY_DELIVER,
            Target::FluentBit => FLUENT_BIT_DELIVER,
            Target::Fluentd => FLUENTD_DELIVER,
            Target::Vector => VECTOR_DELIVER,
        }
    }

    /// The agent template (tail → forward) built into the binary; Vector
    /// has none: it has no forward sink.
    pub fn agent_template(self) -> Result<&'static str, String> {
        match self {
            Target::Logferry => Ok(LOGFERRY_AGENT),
            Target::FluentBit => Ok(FLUENT_BIT_AGENT),
            Target::Fluentd => Ok(FLUENTD_AGENT),
            Target::Vector => Err("vector cannot be an agent: it has no forward sink to send \
                                   to the deliver tier (use logferry, fluent-bit or fluentd)"
                .into()),
        }
    }

    /// The receiver template (forward → one file, a line per record)
    /// built into the binary.
    pub fn receiver_template(self) -> &'static str {
        match self {
            Target::Logferry => LOGFERRY_RECEIVER,
            Target::FluentBit => FLUENT_BIT_RECEIVER,
            Target::Fluentd => FLUENTD_RECEIVER,
            Target::Vector => VECTOR_RECEIVER,
        }
    }

    /// The name its receiver config gives the output file (Fluentd's
    /// out_file appends `.log` itself).
    pub fn output_file(self) -> &'static str {
        match self {
            Target::Fluentd => "out",
            _ => "out.log",
        }
    }

    /// Whether it binds port 0 and logs the address (logferry), rather
    /// than listening on a free port picked for it.
    pub fn reports_its_port(self) -> bool {
        self == Target::Logferry
    }

    /// File extension of its configs.
    pub fn config_ext(self) -> &'static str {
        match self {
            Target::Logferry | Target::Vector => "toml",
            Target::FluentBit | Target::Fluentd => "conf",
        }
    }

    /// The program run when `--target-bin` is not given.
    pub fn default_bin(self) -> &'static str {
        match self {
            Target::Logferry => "logferry",
            Target::FluentBit => "fluent-bit",
            Target::Fluentd => "fluentd",
            Target::Vector => "vector",
        }
    }

    /// Arguments that run `config` in the foreground.
    pub fn args(self, config: &Path) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = match self {
            Target::Logferry => vec!["run".into(), "--config".into()],
            Target::FluentBit => vec!["-c".into()],
            // no supervisor: the measured process is the one that works
            Target::Fluentd => vec!["--no-supervisor".into(), "-c".into()],
            Target::Vector => vec!["--config".into()],
        };
        args.push(config.into());
        args
    }

    /// Whether its deliver config sends the forward protocol (Vector has
    /// no forward sink: it sends lines over TCP).
    pub fn forwards(self) -> bool {
        self != Target::Vector
    }
}

pub const LOGFERRY_AGENT: &str = include_str!("../../../bench/templates/logferry/agent.toml");
pub const LOGFERRY_DELIVER: &str = include_str!("../../../bench/templates/logferry/deliver.toml");
pub const LOGFERRY_RECEIVER: &str = include_str!("../../../bench/templates/logferry/receiver.toml");
pub const LOGFERRY_RECEIVER_TCP: &str =
    include_str!("../../../bench/templates/logferry/receiver-tcp.toml");
pub const FLUENT_BIT_AGENT: &str = include_str!("../../../bench/templates/fluent-bit/agent.conf");
pub const FLUENT_BIT_DELIVER: &str =
    include_str!("../../../bench/templates/fluent-bit/deliver.conf");
pub const FLUENT_BIT_RECEIVER: &str =
    include_str!("../../../bench/templates/fluent-bit/receiver.conf");
pub const FLUENTD_AGENT: &str = include_str!("../../../bench/templates/fluentd/agent.conf");
pub const FLUENTD_DELIVER: &str = include_str!("../../../bench/templates/fluentd/deliver.conf");
pub const FLUENTD_RECEIVER: &str = include_str!("../../../bench/templates/fluentd/receiver.conf");
pub const VECTOR_DELIVER: &str = include_str!("../../../bench/templates/vector/deliver.toml");
pub const VECTOR_RECEIVER: &str = include_str!("../../../bench/templates/vector/receiver.toml");

/// Why a template could not be filled in.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TemplateError {
    #[error("unknown placeholder {{{{{name}}}}} at line {line} (known: {known})")]
    Unknown {
        name: String,
        line: usize,
        known: String,
    },
    #[error("placeholder opened with {{{{ at line {line} is never closed with }}}}")]
    Unclosed { line: usize },
}

/// Replaces every `{{name}}` in `template` by its value in `values`; a
/// placeholder without a value is an error, so a template and the code
/// that fills it cannot drift apart silently.
pub fn render(template: &str, values: &[(&str, &str)]) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    let line_at = |rest: &str| {
        template[..template.len() - rest.len()]
            .bytes()
            .filter(|&b| b == b'\n')
            .count()
            + 1
    };
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(TemplateError::Unclosed {
                line: line_at(&rest[open..]),
            });
        };
        let name = after[..close].trim();
        match values.iter().find(|(k, _)| *k == name) {
            Some((_, v)) => out.push_str(v),
            None => {
                return Err(TemplateError::Unknown {
                    name: name.to_string(),
                    line: line_at(&rest[open..]),
                    known: values
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", "),
                })
            }
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `{{forward_to}}` of `target`'s deliver (or agent) config for these
/// downstream addresses; for Fluent Bit, the Upstream file is written to
/// `upstream`.
pub fn forward_to(
    target: Target,
    addrs: &[std::net::SocketAddr],
    upstream: &Path,
) -> Result<String, String> {
    match target {
        Target::Logferry => Ok(logferry_servers(addrs)),
        Target::FluentBit => {
            let mut s = String::from("[UPSTREAM]\n    name       receivers\n");
            for (i, a) in addrs.iter().enumerate() {
                s.push_str(&format!(
                    "\n[NODE]\n    name       receiver-{}\n    host       {}\n    port       {}\n",
                    i + 1,
                    a.ip(),
                    a.port()
                ));
            }
            std::fs::write(upstream, s).map_err(|e| format!("{}: {e}", upstream.display()))?;
            Ok(upstream.display().to_string())
        }
        Target::Fluentd => Ok(addrs
            .iter()
            .map(|a| {
                format!(
                    "<server>\n    host {}\n    port {}\n  </server>",
                    a.ip(),
                    a.port()
                )
            })
            .collect::<Vec<_>>()
            .join("\n  ")),
        Target::Vector => match addrs {
            [one] => Ok(one.to_string()),
            _ => Err(format!(
                "vector has no forward sink and its socket sink sends to one address: \
                 each vector deliver process can feed one receiver, not {} (use --receivers 1 \
                 with round-robin-deliver)",
                addrs.len()
            )),
        },
    }
}

/// `{ address = "…" }, …` for a logferry forward sink's `servers`.
pub fn logferry_servers(addrs: &[std::net::SocketAddr]) -> String {
    addrs
        .iter()
        .map(|a| format!("{{ address = \"{a}\" }}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_unknown_ones_are_errors() {
        assert_eq!(
            render("a {{x}} b {{ y }}{{x}}", &[("x", "1"), ("y", "2")]).unwrap(),
            "a 1 b 21"
        );
        let e = render("ok\nport {{listen_prot}}\n", &[("listen_port", "0")]).unwrap_err();
        assert_eq!(
            e,
            TemplateError::Unknown {
                name: "listen_prot".into(),
                line: 2,
                known: "listen_port".into()
            }
        );
        assert!(e.to_string().contains("{{listen_prot}}"), "{e}");
        assert_eq!(
            render("x {{open", &[]).unwrap_err(),
            TemplateError::Unclosed { line: 1 }
        );
        assert_eq!(render("no placeholders", &[]).unwrap(), "no placeholders");
    }

    #[test]
    fn every_built_in_template_renders_with_the_values_the_topology_gives() {
        let fill = |t: &str, values: &[(&str, &str)]| {
            let out = render(t, values).unwrap_or_else(|e| panic!("{e}\n{t}"));
            assert!(!out.contains("{{") && !out.contains("}}"), "{out}");
            out
        };
        let logferry = [
            LOGFERRY_AGENT,
            LOGFERRY_DELIVER,
            LOGFERRY_RECEIVER,
            LOGFERRY_RECEIVER_TCP,
        ];
        for t in logferry {
            let out = fill(
                t,
                &[
                    ("tail_path", "/tmp/a.log"),
                    ("forward_to", r#"{ address = "127.0.0.1:1" }"#),
                    ("listen_port", "0"),
                    ("output_path", "/tmp/r/out.log"),
                ],
            );
            // each is a config logferry accepts
            crate::topology::config::Config::parse(&out, "template")
                .unwrap_or_else(|e| panic!("{e}\n{out}"));
        }
        for target in [Target::FluentBit, Target::Fluentd, Target::Vector] {
            let out = fill(
                target.deliver_template(),
                &[("listen_port", "24224"), ("forward_to", "127.0.0.1:24225")],
            );
            assert!(out.contains("24224"), "{out}");
            let out = fill(
                target.receiver_template(),
                &[
                    ("listen_port", "24224"),
                    ("output_dir", "/tmp/r"),
                    ("output_file", target.output_file()),
                    ("output_path", "/tmp/r/out.log"),
                ],
            );
            assert!(out.contains("24224") && out.contains("/tmp/r"), "{out}");
            match target.agent_template() {
                Ok(t) => {
                    let out = fill(
                        t,
                        &[
                            ("tail_path", "/tmp/a.log"),
                            ("forward_to", "127.0.0.1:24225"),
                        ],
                    );
                    assert!(out.contains("/tmp/a.log"), "{out}");
                }
                Err(e) => {
                    assert_eq!(target, Target::Vector);
                    assert!(e.contains("no forward sink"), "{e}");
                }
            }
        }
    }

    /// A value may span lines (Fluentd's `<server>` sections): one filled
    /// into a comment would leave its next lines outside the comment.
    #[test]
    fn no_template_has_a_placeholder_in_a_comment() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/templates");
        let mut checked = 0;
        for system in std::fs::read_dir(&root).unwrap() {
            for file in std::fs::read_dir(system.unwrap().path()).unwrap() {
                let path = file.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    assert!(
                        !(line.trim_start().starts_with('#') && line.contains("{{")),
                        "{}:{}: {line}",
                        path.display(),
                        i + 1
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= 20, "{checked} templates");
    }

    #[test]
    fn forward_to_for_each_system() {
        let addrs: [std::net::SocketAddr; 2] = [
            "127.0.0.1:1000".parse().unwrap(),
            "127.0.0.1:2000".parse().unwrap(),
        ];
        let dir = tempfile::tempdir().unwrap();
        let up = dir.path().join("up.conf");
        assert_eq!(
            forward_to(Target::Logferry, &addrs, &up).unwrap(),
            r#"{ address = "127.0.0.1:1000" }, { address = "127.0.0.1:2000" }"#
        );
        let fd = forward_to(Target::Fluentd, &addrs, &up).unwrap();
        assert_eq!(fd.matches("<server>").count(), 2);
        assert!(fd.contains("port 2000"), "{fd}");
        assert_eq!(
            forward_to(Target::FluentBit, &addrs, &up).unwrap(),
            up.display().to_string()
        );
        let file = std::fs::read_to_string(&up).unwrap();
        assert_eq!(file.matches("[NODE]").count(), 2);
        assert!(file.contains("port       1000"), "{file}");
        assert_eq!(
            forward_to(Target::Vector, &addrs[..1], &up).unwrap(),
            "127.0.0.1:1000"
        );
        assert!(forward_to(Target::Vector, &addrs, &up)
            .unwrap_err()
            .contains("--receivers 1"));
    }
}
