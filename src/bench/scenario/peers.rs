//! Where the programs of the other systems are. In order:
//!
//! 1. the path given on the command line (`--target-bin`, `--agent-bin`,
//!    `--receiver-bin`);
//! 2. the peers' build: the variables `ANCHOR_FLUENTBIT` (Fluent Bit's
//!    binary), `ANCHOR_FLUENTD_DIR` (a Fluentd source tree, run as
//!    `DIR/bin/fluentd`) and `ANCHOR_VECTOR` (Vector's binary), taken from
//!    the environment or else from the `export NAME=VALUE` lines of the
//!    file `LOGFERRY_PEERS_ENV` names (default `/opt/peers/env`, which the
//!    peers' build script writes);
//! 3. the system's usual command on PATH (`fluent-bit`, `fluentd`,
//!    `vector`).
//!
//! logferry itself is this very binary unless a path is given.

use std::path::{Path, PathBuf};

use super::template::Target;

/// The peers' build writes its export lines here.
pub const DEFAULT_ENV_FILE: &str = "/opt/peers/env";

/// The variable that names another file of export lines.
pub const ENV_FILE_VAR: &str = "LOGFERRY_PEERS_ENV";

/// The program that runs `system`.
pub fn program(system: Target, given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    if system == Target::Logferry {
        return std::env::current_exe().map_err(|e| e.to_string());
    }
    Ok(built(system).unwrap_or_else(|| PathBuf::from(system.default_bin())))
}

/// The peers' build of `system`, if the environment or the env file names
/// one.
pub fn built(system: Target) -> Option<PathBuf> {
    let var = match system {
        Target::Logferry => return None,
        Target::FluentBit => "ANCHOR_FLUENTBIT",
        Target::Fluentd => "ANCHOR_FLUENTD_DIR",
        Target::Vector => "ANCHOR_VECTOR",
    };
    let value = std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| {
            let file = std::env::var(ENV_FILE_VAR).unwrap_or_else(|_| DEFAULT_ENV_FILE.into());
            exported(&std::fs::read_to_string(file).ok()?, var)
        })?;
    let path = PathBuf::from(value);
    Some(match system {
        Target::Fluentd => path.join("bin/fluentd"),
        _ => path,
    })
}

/// The value of `export NAME=VALUE` (or `NAME=VALUE`, quotes removed) for
/// `name` in `text`; the last one wins, as in a shell.
fn exported(text: &str, name: &str) -> Option<String> {
    text.lines()
        .rev()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("export ").unwrap_or(l).trim_start();
            let (k, v) = l.split_once('=')?;
            (k == name).then(|| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
        })
        .find(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_lines_are_read_as_a_shell_would() {
        let text = "# peers\nexport ANCHOR_FLUENTBIT=/opt/peers/fluent-bit/bin/fluent-bit\n\
                    export ANCHOR_FLUENTD_DIR=\"/opt/peers/fluentd\"\n  ANCHOR_VECTOR='/v'\n\
                    export ANCHOR_FLUENTBITX=/no\n";
        assert_eq!(
            exported(text, "ANCHOR_FLUENTBIT").as_deref(),
            Some("/opt/peers/fluent-bit/bin/fluent-bit")
        );
        assert_eq!(
            exported(text, "ANCHOR_FLUENTD_DIR").as_deref(),
            Some("/opt/peers/fluentd")
        );
        assert_eq!(exported(text, "ANCHOR_VECTOR").as_deref(), Some("/v"));
        assert_eq!(
            exported("export A=1\nexport A=2\n", "A").as_deref(),
            Some("2")
        );
        assert_eq!(exported(text, "ANCHOR"), None);
    }

    #[test]
    fn a_given_path_wins_and_logferry_is_this_binary() {
        let given = Path::new("/x/fluent-bit");
        assert_eq!(
            program(Target::FluentBit, Some(given)).unwrap(),
            given.to_path_buf()
        );
        assert_eq!(
            program(Target::Logferry, None).unwrap(),
            std::env::current_exe().unwrap()
        );
    }
}
