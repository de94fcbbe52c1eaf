//! `logferry bench import-corpus`: the peers' configurations read from
//! their source mirrors, each imported and validated. First on a mirror
//! made here (a bare git repository laid out as Fluent Bit's), whose
//! every outcome is known; then on the peers' real mirrors, when this
//! machine has them.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// Runs git in `dir` with its repository at `git_dir`.
fn git(git_dir: &Path, work: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(work)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn import_corpus(mirrors: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["bench", "import-corpus", "--mirrors"])
        .arg(mirrors)
        .args(args)
        .output()
        .expect("run logferry bench import-corpus")
}

#[test]
fn a_mirror_made_here_is_tallied_file_by_file() {
    let dir = tempfile::tempdir().unwrap();
    let mirrors = dir.path().join("mirrors");
    let git_dir = mirrors.join("fluent+fluent-bit/repo");
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("conf")).unwrap();
    let files = [
        (
            "valid.conf",
            "[INPUT]\n    Name dummy\n    Tag  a\n\n[OUTPUT]\n    Name  null\n    Match *\n",
        ),
        // a variable the file names gets a value: a free port
        (
            "port.conf",
            "[INPUT]\n    Name forward\n    Listen 127.0.0.1\n    Port ${FORWARD_PORT}\n\n[OUTPUT]\n    Name  null\n    Match *\n",
        ),
        // a plugin logferry lacks: commented out and listed
        (
            "lacking.conf",
            "[INPUT]\n    Name mqtt\n    Tag  m\n\n[OUTPUT]\n    Name  stdout\n    Match m\n",
        ),
        (
            "parsers.conf",
            "[PARSER]\n    Name   json\n    Format json\n",
        ),
        // an include that is not there: the import fails, and says so
        (
            "broken.conf",
            "@INCLUDE missing.conf\n[OUTPUT]\n    Name  null\n    Match *\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(work.join("conf").join(name), text).unwrap();
    }
    let init = Command::new("git")
        .args(["init", "--bare", "-q"])
        .arg(&git_dir)
        .status()
        .expect("run git init");
    assert!(init.success());
    git(&git_dir, &work, &["add", "conf"]);
    git(&git_dir, &work, &["commit", "-q", "-m", "corpus"]);

    let out = import_corpus(&mirrors, &["--only", "fluent-bit-conf", "--verbose"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("| Fluent Bit conf/ | 5 | 2 | 1 | 1 | 1 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("conf/lacking.conf: components commented out, listed"),
        "{stdout}"
    );
    assert!(stdout.contains("commented out: source mqtt ×1"), "{stdout}");
    assert!(
        stdout.contains("FAILED conf/broken.conf: import:") && stdout.contains("missing.conf"),
        "{stdout}"
    );
    assert!(stderr.contains("1 configurations failed"), "{stderr}");

    // without the broken file, the same corpus passes
    git(&git_dir, &work, &["rm", "-q", "conf/broken.conf"]);
    git(&git_dir, &work, &["commit", "-q", "-m", "fixed"]);
    let out = import_corpus(&mirrors, &["--only", "fluent-bit-conf"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("| Fluent Bit conf/ | 4 | 2 | 1 | 1 | 0 |"),
        "{stdout}"
    );
    // a corpus whose mirror is absent is named, not failed
    assert!(stdout.contains("| corpus |"), "{stdout}");
    let out = import_corpus(&mirrors, &["--only", "fluentd-example"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Fluentd example/: no mirror at"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The peers' real configurations, when their mirrors are on this machine
/// (`fetch` of github:fluent/fluent-bit, fluent/fluentd and
/// vectordotdev/vector brings them, to /work/.mirror or `$MIRROR`).
#[test]
fn the_peers_own_configurations_import() {
    let mirrors = std::env::var("MIRROR").unwrap_or_else(|_| "/work/.mirror".into());
    let mirrors = Path::new(&mirrors);
    if !mirrors.join("fluent+fluent-bit/repo").exists() {
        skipped(&format!(
            "no peer source mirrors at {} (set MIRROR; `fetch` brings them)",
            mirrors.display()
        ));
        return;
    }
    let out = import_corpus(mirrors, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // each corpus present: some of its configurations import and validate
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| corpus"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert!(!rows.is_empty(), "{stdout}");
    for row in rows {
        let valid: usize = row[2].parse().unwrap_or(0);
        assert!(valid > 0, "{row:?}");
    }
}
