//! `logferry completions SHELL` and `logferry man`: shell completions and a
//! manual page generated at run time from the same clap definitions that
//! parse the command line, so they cannot fall out of step with it.

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use super::Cli;

/// Arguments of `logferry completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script for `shell` to `out`.
pub fn write_completions(shell: Shell, out: &mut dyn Write) {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "logferry", out);
}

/// Writes the manual page (roff, section 1) to `out`: the main page, with
/// every subcommand's own section appended after it (nested ones too), so
/// one `man -l` shows every option.
pub fn write_man(out: &mut dyn Write) -> std::io::Result<()> {
    let cmd = Cli::command();
    clap_mangen::Man::new(cmd.clone()).render(out)?;
    append_subcommands(&cmd, "logferry", out)
}

fn append_subcommands(
    cmd: &clap::Command,
    prefix: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = format!("{prefix}-{}", sub.get_name());
        let page_cmd = sub
            .clone()
            .display_name(name.clone())
            .bin_name(name.clone());
        let mut page = Vec::new();
        clap_mangen::Man::new(page_cmd).render(&mut page)?;
        // the page without its own title header: one `.TH` per document
        let page = String::from_utf8_lossy(&page);
        let body: String = page
            .lines()
            .filter(|l| !l.starts_with(".TH ") && !l.starts_with(".ie ") && !l.starts_with(".el "))
            .map(|l| format!("{l}\n"))
            .collect();
        out.write_all(body.as_bytes())?;
        append_subcommands(sub, &name, out)?;
    }
    Ok(())
}

pub fn completions(args: &CompletionsArgs) -> ExitCode {
    let mut script = Vec::new();
    write_completions(args.shell, &mut script);
    print_all(&script, "the completion script")
}

pub fn man() -> ExitCode {
    let mut page = Vec::new();
    match write_man(&mut page) {
        Ok(()) => print_all(&page, "the manual page"),
        Err(e) => {
            eprintln!("error: cannot render the manual page: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `bytes` to standard output; a reader that stops early (`| head`)
/// is not an error.
fn print_all(bytes: &[u8], what: &str) -> ExitCode {
    match std::io::stdout().lock().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_naming_the_subcommands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut out = Vec::new();
            write_completions(shell, &mut out);
            let text = String::from_utf8(out).unwrap();
            for sub in ["run", "validate", "bench", "config", "completions", "man"] {
                assert!(text.contains(sub), "{shell:?} script lacks {sub}");
            }
            assert!(text.contains("log-format"), "{shell:?}");
        }
    }

    /// The command lines in docs/deploy/ parse with today's options.
    #[test]
    fn the_deployment_examples_use_options_that_exist() {
        use clap::Parser;
        let unit = include_str!("../../docs/deploy/logferry.service");
        let mut lines: Vec<Vec<String>> = unit
            .lines()
            .filter_map(|l| {
                l.strip_prefix("ExecStart=")
                    .or_else(|| l.strip_prefix("ExecStartPre="))
            })
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        assert_eq!(lines.len(), 2, "ExecStartPre and ExecStart");
        let docker = include_str!("../../docs/deploy/Dockerfile");
        let json_array = |prefix: &str| -> Vec<String> {
            let line = docker
                .lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in the Dockerfile"));
            serde_json::from_str(line.trim()).unwrap()
        };
        let mut entry = json_array("ENTRYPOINT ");
        entry.extend(json_array("CMD "));
        lines.push(entry);
        for args in lines {
            assert!(args[0].ends_with("/logferry"), "{args:?}");
            if let Err(e) = Cli::try_parse_from(&args) {
                panic!("{args:?} does not parse: {e}");
            }
        }
    }

    #[test]
    fn the_man_page_covers_every_subcommand_and_its_options() {
        let mut out = Vec::new();
        write_man(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(".ie") || text.starts_with(".TH"),
            "{}",
            &text[..80]
        );
        assert_eq!(text.matches(".TH ").count(), 1);
        for sub in Cli::command().get_subcommands() {
            let name = format!("logferry-{}", sub.get_name()).replace('-', "\\-");
            assert!(text.contains(&name), "man page lacks {name}");
        }
        // an option of a subcommand, not only of the main command
        assert!(text.contains("\\-\\-list"), "config example --list");
        assert!(text.contains("\\-\\-log\\-format"));
    }
}
