//! The keys that choose and bound a multiline rule set, shared by the tail
//! source's `multiline` option and the `multiline` filter.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::rules::Rules;
use super::Limits;
use crate::config::units;

/// A built-in rule set (Fluent Bit's `multiline.parser` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// A log line, the exception line under it, its `at …` frames,
    /// `Caused by:` / `Suppressed:` sections and `... N more`.
    Java,
    /// `Traceback (most recent call last):`, its `File …` and code lines,
    /// up to the final `XxxError: …` line.
    Python,
    /// `panic: …`, `[signal …]`, and the `goroutine N [state]:` blocks.
    Go,
    /// `file:line:in `method'` and its `from file:line:in …` lines.
    Ruby,
    /// Container runtime (CRI) lines `<time> <stream> <P|F> <text>`: `P`
    /// parts joined up to the `F` part, stdout and stderr apart.
    Cri,
    /// Docker json-file lines `{"log":"…","stream":…}`: a `log` without a
    /// trailing newline continues in the next line of the same stream.
    Docker,
}

impl Preset {
    /// A container runtime's partial lines, rather than lines of a trace.
    pub fn is_partial(self) -> bool {
        matches!(self, Preset::Cri | Preset::Docker)
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::Java => "java",
            Preset::Python => "python",
            Preset::Go => "go",
            Preset::Ruby => "ruby",
            Preset::Cri => "cri",
            Preset::Docker => "docker",
        }
    }
}

/// `parser = "java"`, or a chain `parser = ["cri", "java"]`: a container
/// runtime's partial lines put back together first, then the stack trace
/// rules on the whole lines (Fluent Bit's `multiline.parser cri, java`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presets(pub Vec<Preset>);

impl<'de> Deserialize<'de> for Presets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Presets, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Presets;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a built-in rule set (\"java\", \"python\", \"go\", \"ruby\", \"cri\", \"docker\") or a list of them ([\"cri\", \"java\"])")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Presets, E> {
                let p = Preset::deserialize(de::value::StrDeserializer::<E>::new(s))?;
                Ok(Presets(vec![p]))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Presets, A::Error> {
                Vec::<Preset>::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Presets)
            }
        }
        d.deserialize_any(V)
    }
}

impl Presets {
    /// The rules of one preset, or of a chain of two: a container
    /// runtime's (`cri`, `docker`), then a stack trace's.
    fn rules(&self) -> Result<Rules, String> {
        match self.0[..] {
            [p] => Ok(Rules::preset(p)),
            [first, lines] if first.is_partial() && !lines.is_partial() => Ok(Rules::Chain(
                Arc::new(Rules::preset(first)),
                Arc::new(Rules::preset(lines)),
            )),
            [] => Err("parser: give at least one rule set".into()),
            _ => Err(format!(
                "parser: a list is a container runtime's rule set (cri, docker) then a stack trace's (java, python, go, ruby), as [\"cri\", \"java\"]; not {:?}",
                self.0.iter().map(|p| p.name()).collect::<Vec<_>>()
            )),
        }
    }
}

/// `multiline = "java"` or a table of the keys below.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultilineConfig {
    /// A built-in rule set: `"java"`, `"python"`, `"go"`, `"ruby"`,
    /// `"cri"` or `"docker"`, or a container runtime's then a stack
    /// trace's (`["cri", "java"]`). Unset: the custom `start` rule.
    #[serde(default)]
    pub parser: Option<Presets>,
    /// A custom rule: a line matching this regex starts a record.
    #[serde(default)]
    pub start: Option<String>,
    /// With `start`: a line matching this regex continues the record being
    /// joined, and a line matching neither ends it and stands alone. Unset:
    /// every line that does not match `start` continues the record.
    #[serde(default, rename = "continue")]
    pub continue_: Option<String>,
    /// The older name of `start` (with `continue` unset).
    #[serde(default)]
    pub start_pattern: Option<String>,
    /// Most lines joined into one record; the next line starts another.
    #[serde(default = "default_max_lines")]
    pub max_lines: usize,
    /// Most bytes of one joined record; a line that would pass it starts
    /// another.
    #[serde(default = "default_max_bytes", deserialize_with = "units::bytes")]
    pub max_bytes: usize,
    /// A record being joined is sent once no line has been added to it for
    /// this long (a trace's last line has no next line to end it).
    #[serde(
        default = "default_flush_timeout",
        deserialize_with = "units::duration"
    )]
    pub flush_timeout: Duration,
    /// The older name of `flush_timeout`.
    #[serde(default, deserialize_with = "units::opt_duration")]
    pub timeout: Option<Duration>,
}

const fn default_max_lines() -> usize {
    1000
}
const fn default_max_bytes() -> usize {
    1024 * 1024
}
/// 1 s, not Fluent Bit's 4 s: a logger writes a trace in one burst, so a
/// second of quiet means it is over, and a record (and the checkpoint
/// behind it) waits a quarter as long.
const fn default_flush_timeout() -> Duration {
    Duration::from_secs(1)
}

impl MultilineConfig {
    /// The configuration of a preset with the default bounds.
    pub fn preset(p: Preset) -> MultilineConfig {
        MultilineConfig {
            parser: Some(Presets(vec![p])),
            start: None,
            continue_: None,
            start_pattern: None,
            max_lines: default_max_lines(),
            max_bytes: default_max_bytes(),
            flush_timeout: default_flush_timeout(),
            timeout: None,
        }
    }

    /// The rules and bounds, checked; the error names the key.
    pub fn compile(&self) -> Result<(Arc<Rules>, Limits), String> {
        let start = self.start.as_ref().or(self.start_pattern.as_ref());
        if self.start.is_some() && self.start_pattern.is_some() {
            return Err("give `start` or its older name `start_pattern`, not both".into());
        }
        if self.parser.is_some() && self.continue_.is_some() {
            return Err("`continue` goes with `start`, not with `parser`".into());
        }
        let rules = match (&self.parser, start) {
            (Some(_), Some(_)) => return Err(
                "give either `parser` (a built-in rule set) or `start` (your own rule), not both"
                    .into(),
            ),
            (Some(p), None) => p.rules()?,
            (None, Some(start)) => Rules::custom(start, self.continue_.as_deref())?,
            (None, None) => {
                return Err(
                    "give `parser` (java, python, go, ruby, cri, docker) or a `start` regex".into(),
                )
            }
        };
        if self.max_lines == 0 || self.max_bytes == 0 {
            return Err("max_lines and max_bytes must be at least 1".into());
        }
        let flush_timeout = self.timeout.unwrap_or(self.flush_timeout);
        if flush_timeout.is_zero() {
            return Err("flush_timeout must be positive".into());
        }
        Ok((
            Arc::new(rules),
            Limits {
                max_lines: self.max_lines,
                max_bytes: self.max_bytes,
                flush_timeout,
            },
        ))
    }
}

/// Reads `"java"` as `{ parser = "java" }`, and a table as itself.
pub fn preset_or_table<'de, D>(d: D) -> Result<Option<MultilineConfig>, D::Error>
where
    D: Deserializer<'de>,
{
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = MultilineConfig;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a built-in rule set (\"java\", \"python\", \"go\", \"ruby\", \"cri\", \"docker\") or a table")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<MultilineConfig, E> {
            let p = Preset::deserialize(de::value::StrDeserializer::<E>::new(s))?;
            Ok(MultilineConfig::preset(p))
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MultilineConfig, A::Error> {
            MultilineConfig::deserialize(de::value::MapAccessDeserializer::new(map))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<MultilineConfig, A::Error> {
            let chain = Presets::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
            Ok(MultilineConfig {
                parser: Some(chain),
                ..MultilineConfig::preset(Preset::Java)
            })
        }
    }
    d.deserialize_any(V).map(Some)
}
