//! Configuration of the journald source.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::config::units;

/// `type = "journald"`: entries of the systemd journal.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JournaldSourceConfig {
    /// A directory of journal files to read (and the files added to it
    /// later, as journald rotates). Unset, with `files` unset too: this
    /// machine's journal (`/var/log/journal`, then `/run/log/journal`).
    pub directory: Option<PathBuf>,
    /// Journal files to read, and only these.
    #[serde(default)]
    pub files: Vec<PathBuf>,
    /// Tag of the records; a `*` in it is replaced by the entry's
    /// `_SYSTEMD_UNIT` (`journald.*` gives `journald.sshd.service`;
    /// `journald.unknown` for entries without a unit).
    #[serde(default = "default_tag")]
    pub tag: String,
    /// Where reading starts when there is no saved cursor: `"head"`, the
    /// oldest entry kept, or `"tail"`, only entries written from now on.
    #[serde(default)]
    pub read_from: ReadFrom,
    /// Only entries of these systemd units (`_SYSTEMD_UNIT`; a name
    /// without a `.` gets `.service`).
    #[serde(default)]
    pub units: Vec<String>,
    /// Only entries whose fields have these values: a field with a list
    /// matches any of its values, and every field listed must match
    /// (`{ PRIORITY = ["0", "1", "2", "3"], _TRANSPORT = "kernel" }`).
    #[serde(default)]
    pub matches: BTreeMap<String, OneOrMany>,
    /// Only entries of the running boot (`_BOOT_ID`). Default: on for this
    /// machine's journal, off for `directory` and `files` (journal files
    /// from elsewhere are of other boots).
    pub current_boot_only: Option<bool>,
    /// Field names lower-cased (`_SYSTEMD_UNIT` becomes `_systemd_unit`).
    #[serde(default)]
    pub lowercase: bool,
    /// Leading underscores of field names removed (`_SYSTEMD_UNIT` becomes
    /// `SYSTEMD_UNIT`; with `lowercase`, `systemd_unit`).
    #[serde(default)]
    pub strip_underscores: bool,
    /// Directory of the cursor file: how far the journal was read and
    /// acknowledged by every sink, so a restart (even after kill -9)
    /// resends at most what was not yet acknowledged and skips nothing.
    /// Unset: no cursor is kept, every start is a first start.
    pub checkpoint_dir: Option<PathBuf>,
    /// Most often the cursor file is written while acknowledgements
    /// arrive: after kill -9, a restart resends about this much.
    #[serde(
        default = "default_checkpoint_interval",
        deserialize_with = "units::duration"
    )]
    pub checkpoint_interval: Duration,
    /// Once the reader has caught up with the journal, how long new
    /// entries gather before it reads again (one batch instead of one per
    /// entry). The entries are on disk meanwhile; a reader with a backlog
    /// never waits. 0: read at every change.
    #[serde(default = "default_linger", deserialize_with = "units::duration")]
    pub linger: Duration,
}

/// Where a first start reads from.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReadFrom {
    /// The oldest entry kept.
    #[default]
    Head,
    /// Entries written after the start.
    Tail,
}

/// One value or several.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn values(&self) -> &[String] {
        match self {
            OneOrMany::One(v) => std::slice::from_ref(v),
            OneOrMany::Many(v) => v,
        }
    }
}

fn default_tag() -> String {
    "journald".into()
}

const fn default_checkpoint_interval() -> Duration {
    Duration::from_secs(1)
}

const fn default_linger() -> Duration {
    Duration::from_millis(200)
}

impl JournaldSourceConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.directory.is_some() && !self.files.is_empty() {
            return Err("set directory or files, not both".into());
        }
        if self.tag.is_empty() {
            return Err("tag must not be empty".into());
        }
        if self.checkpoint_interval.is_zero() {
            return Err("checkpoint_interval must be positive".into());
        }
        if self.units.iter().any(|u| u.is_empty()) {
            return Err("units: a unit name must not be empty".into());
        }
        for (field, values) in &self.matches {
            valid_field(field).map_err(|e| format!("matches: {e}"))?;
            if values.values().is_empty() {
                return Err(format!("matches: {field} has no value"));
            }
        }
        Ok(())
    }

    /// Whether only the running boot's entries are read.
    pub fn current_boot_only(&self) -> bool {
        self.current_boot_only
            .unwrap_or(self.directory.is_none() && self.files.is_empty())
    }

    /// Every match, as `FIELD=value`, grouped by field (the units as
    /// `_SYSTEMD_UNIT`).
    pub fn match_groups(&self) -> Vec<Vec<String>> {
        let mut groups: Vec<Vec<String>> = self
            .matches
            .iter()
            .map(|(field, v)| v.values().iter().map(|v| format!("{field}={v}")).collect())
            .collect();
        if !self.units.is_empty() {
            groups.push(
                self.units
                    .iter()
                    .map(|u| format!("_SYSTEMD_UNIT={}", unit_name(u)))
                    .collect(),
            );
        }
        groups
    }
}

/// A unit name as journald stores it: `sshd` is `sshd.service`.
fn unit_name(unit: &str) -> String {
    if unit.contains('.') {
        unit.to_string()
    } else {
        format!("{unit}.service")
    }
}

/// Journal field names are upper-case letters, digits and underscores,
/// not starting with a digit.
fn valid_field(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a journal field name (upper-case letters, digits and _)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<JournaldSourceConfig, String> {
        let c: JournaldSourceConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.validate().map(|()| c)
    }

    #[test]
    fn defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.tag, "journald");
        assert_eq!(c.read_from, ReadFrom::Head);
        assert!(c.current_boot_only(), "this machine's journal: this boot");
        assert_eq!(c.linger, Duration::from_millis(200));
        let d = parse("directory = \"/tmp/j\"").unwrap();
        assert!(!d.current_boot_only(), "files from elsewhere: every boot");
        let f = parse("files = [\"/tmp/j/a.journal\"]\ncurrent_boot_only = true").unwrap();
        assert!(f.current_boot_only());
    }

    #[test]
    fn matches_group_by_field_and_units_get_their_suffix() {
        let c = parse(
            "units = [\"sshd\", \"cron.timer\"]\n\
             matches = { PRIORITY = [\"0\", \"1\"], _TRANSPORT = \"kernel\" }",
        )
        .unwrap();
        assert_eq!(
            c.match_groups(),
            vec![
                vec!["PRIORITY=0".to_string(), "PRIORITY=1".into()],
                vec!["_TRANSPORT=kernel".into()],
                vec![
                    "_SYSTEMD_UNIT=sshd.service".into(),
                    "_SYSTEMD_UNIT=cron.timer".into()
                ],
            ]
        );
    }

    #[test]
    fn rejects_bad_settings_with_the_key() {
        let both = parse("directory = \"/a\"\nfiles = [\"/b\"]").unwrap_err();
        assert!(both.contains("directory or files"), "{both}");
        assert!(parse("colour = 1").unwrap_err().contains("colour"));
        assert!(parse("read_from = \"middle\"").is_err());
        let field = parse("matches = { priority = \"3\" }").unwrap_err();
        assert!(field.contains("priority"), "{field}");
        assert!(parse("matches = { PRIORITY = [] }")
            .unwrap_err()
            .contains("no value"));
        assert!(parse("units = [\"\"]").unwrap_err().contains("units"));
        assert!(parse("checkpoint_interval = \"0s\"")
            .unwrap_err()
            .contains("checkpoint_interval"));
    }
}
