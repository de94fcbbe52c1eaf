//! `logferry config import` in black-box tests: import a file, validate
//! the result, run a peer and logferry (on its imported configuration)
//! over the same input and compare what both wrote, record by record.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{free_port, pki, read_lines, wait_for_lines, Logferry, BIN};

/// A file of the corpus written here for `peer` (`fluent-bit`, `fluentd`,
/// `vector`): tests/import/PEER/REL.
pub fn corpus_file(peer: &str, rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/import")
        .join(peer)
        .join(rel)
}

/// The environment the corpora refer to: free ports, directories in `dir`
/// (with the VRL program a Vector configuration reads from `IN_DIR`),
/// secrets, a host name, and `TLS_DIR` holding the ca.pem, server.pem and
/// server.key their TLS keys name.
pub fn corpus_env(dir: &Path) -> Vec<(String, String)> {
    let mut env = ports(&[
        "API_PORT",
        "FORWARD_PORT",
        "SYSLOG_PORT",
        "HTTP_PORT",
        "TCP_PORT",
        "UDP_PORT",
        "OTLP_PORT",
        "OTLP_GRPC_PORT",
    ]);
    for (k, sub) in [
        ("LOG_ROOT", "log"),
        ("STATE_DIR", "state"),
        ("OUT_DIR", "out"),
        ("IN_DIR", "in"),
    ] {
        env.push((k.into(), dir.join(sub).display().to_string()));
    }
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/program.vrl"), ".seen = true\n").unwrap();
    for k in [
        "FORWARD_KEY",
        "FORWARD_PASSWORD",
        "ALERT_PASSWORD",
        "OPENSEARCH_PASSWORD",
        "ES_PASSWORD",
        "LOKI_PASSWORD",
        "SPLUNK_TOKEN",
        "API_TOKEN",
        "HTTP_PASSWORD",
        "S3_KEY_ID",
        "S3_SECRET",
    ] {
        env.push((k.into(), "secret".into()));
    }
    env.push(("HOSTNAME".into(), "host-1".into()));
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    pki(&tls);
    env.push(("TLS_DIR".into(), tls.display().to_string()));
    env
}

/// `logferry config import ARGS FILE`.
pub fn import(args: &[&str], file: &Path) -> Output {
    Command::new(BIN)
        .args(["config", "import"])
        .args(args)
        .arg(file)
        .output()
        .expect("run logferry config import")
}

/// `logferry validate --config CONFIG` with `env`.
pub fn validate(config: &Path, env: &[(String, String)]) -> Output {
    Command::new(BIN)
        .args(["validate", "--config"])
        .arg(config)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run logferry validate")
}

/// Imports `file` (TOML, or YAML with `yaml`), writes the result beside
/// the other files in `dir` and validates it with `env`; panics with both
/// outputs when either step fails. Returns the imported text.
pub fn import_and_validate(
    file: &Path,
    yaml: bool,
    dir: &Path,
    env: &[(String, String)],
) -> String {
    let flags: &[&str] = if yaml { &["--yaml"] } else { &[] };
    let out = import(flags, file);
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("components translated"), "{summary}");
    let name = file.file_name().unwrap().to_string_lossy();
    let path = dir.join(format!("{name}.{}", if yaml { "yaml" } else { "toml" }));
    std::fs::write(&path, &out.stdout).unwrap();
    let v = validate(&path, env);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        v.status.success(),
        "{} as {} does not validate:\n{}\n{text}",
        file.display(),
        if yaml { "YAML" } else { "TOML" },
        String::from_utf8_lossy(&v.stderr),
    );
    text
}

/// `--strict`: exit status 1 on `untranslated` (a file with something
/// not translated), its configuration still printed; 0 on a file of
/// `clean_text` (named `clean_name`), with its format detected and named
/// (`from`).
pub fn assert_strict(untranslated: &Path, clean_name: &str, clean_text: &str, from: &str) {
    let out = import(&["--strict"], untranslated);
    assert_eq!(out.status.code(), Some(1));
    assert!(!out.stdout.is_empty(), "the configuration is still printed");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--strict"));
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join(clean_name);
    std::fs::write(&clean, clean_text).unwrap();
    for args in [&["--strict"][..], &["--strict", "--from", from]] {
        let out = import(args, &clean);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The lines of `text` from the comment block above `header` to it.
pub fn block_above<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == header)
        .unwrap_or_else(|| panic!("no {header} in\n{text}"));
    let start = lines[..at]
        .iter()
        .rposition(|l| !l.trim_start().starts_with('#'))
        .map_or(0, |i| i + 1);
    lines[start..at].to_vec()
}

// --- differential: a peer and the imported logferry on the same input

/// A record's text with its keys in sorted order at every level, so two
/// sides that write fields in different orders sort alike.
pub fn canonical(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let mut fields: Vec<(&String, String)> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            fields.sort();
            let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
            format!("{{{}}}", inner.join(","))
        }
        serde_json::Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

/// JSON lines of `path`, as values, sorted by their text (order across the
/// two runs is not compared: the records are).
pub fn records(path: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = read_lines(path)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    v.sort_by_key(canonical);
    v
}

/// Runs the peer `command` (its configuration and arguments set) with
/// `env` until `outputs` hold their number of lines, then a little longer,
/// so what it flushes late would show as extra lines.
pub fn run_peer(mut command: Command, env: &[(String, String)], outputs: &[(PathBuf, usize)]) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = command
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("start the peer");
    for (path, n) in outputs {
        let deadline = Instant::now() + Duration::from_secs(60);
        while read_lines(path).len() < *n {
            // a peer that refuses its configuration exits: say what it said
            if let Some(status) = child.try_wait().unwrap() {
                let said = std::fs::read_to_string(log.path()).unwrap_or_default();
                panic!(
                    "the peer exited ({status}) before {} held {n} lines:\n{said}",
                    path.display()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} holds {} lines, expected {n}",
                path.display(),
                read_lines(path).len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    let _ = child.kill();
    let _ = child.wait();
}

/// Imports `config`, runs logferry on it until `outputs` hold their number
/// of lines (and a little longer); returns the imported configuration.
pub fn run_imported(
    config: &Path,
    env: &[(String, String)],
    outputs: &[(PathBuf, usize)],
) -> String {
    let out = import(&[], config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lf = Logferry::start_with_env(&text, env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for (path, n) in outputs {
        wait_for_lines(path, *n, Duration::from_secs(60));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(lf.stop().success(), "{}", lf.log_text());
    text
}

/// What one side of a differential run wrote: the records of each output
/// file, sorted; and the imported configuration (logferry's side).
pub struct Written {
    pub files: Vec<Vec<serde_json::Value>>,
    pub config: String,
}

/// Runs the peer (`peer` makes its command for a configuration), then logferry on the import of `config`, over the
/// input files in `input` (`IN_DIR`), each writing under its own `OUT_DIR`,
/// until the `expected` files (name, records) are written; the peer's
/// records are passed through `normalise`.
pub fn run_both(
    peer: impl Fn(&Path) -> Command,
    config: &Path,
    dir: &Path,
    input: &Path,
    expected: &[(&str, usize)],
    normalise: impl Fn(&mut serde_json::Value),
) -> [Written; 2] {
    ["peer", "logferry"].map(|who| {
        let out_dir = dir.join(who);
        std::fs::create_dir_all(&out_dir).unwrap();
        let env = vec![
            ("IN_DIR".to_string(), input.display().to_string()),
            ("OUT_DIR".to_string(), out_dir.display().to_string()),
        ];
        let outputs: Vec<(PathBuf, usize)> = expected
            .iter()
            .map(|(f, n)| (out_dir.join(f), *n))
            .collect();
        let config = if who == "peer" {
            run_peer(peer(config), &env, &outputs);
            String::new()
        } else {
            run_imported(config, &env, &outputs)
        };
        let mut files: Vec<Vec<serde_json::Value>> =
            outputs.iter().map(|(p, _)| records(p)).collect();
        if who == "peer" {
            for f in files.iter_mut() {
                f.iter_mut().for_each(&normalise);
                f.sort_by_key(canonical);
            }
        }
        Written { files, config }
    })
}

/// Both sides wrote the expected number of records to every file, and the
/// same records, field by field.
pub fn assert_same(expected: &[(&str, usize)], sides: &[Written; 2]) {
    let [theirs, ours] = sides;
    for (i, (file, n)) in expected.iter().enumerate() {
        assert_eq!(theirs.files[i].len(), *n, "the peer's {file}");
        assert_eq!(
            theirs.files[i].len(),
            ours.files[i].len(),
            "{file}: record counts differ; imported:\n{}",
            ours.config
        );
        for (t, o) in theirs.files[i].iter().zip(&ours.files[i]) {
            assert_eq!(t, o, "{file}: records differ; imported:\n{}", ours.config);
        }
    }
}

/// Free ports for each of `names`, as environment variables.
pub fn ports(names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|k| (k.to_string(), free_port().to_string()))
        .collect()
}
