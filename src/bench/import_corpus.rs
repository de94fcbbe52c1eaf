//! `bench import-corpus`: the peers' own example and test configurations,
//! read from their source mirrors (bare git directories, laid out
//! `OWNER+NAME/repo` as the peers' build script expects them), each
//! imported with `logferry config import` and the result checked with
//! `logferry validate`. Nothing of the peers is copied into this
//! repository: the files are written to a work directory for the run.
//!
//! A configuration counts as
//! - **valid**: it imported and the import validates;
//! - **listed**: it imported, with components logferry lacks commented out
//!   and named (what is left may then not validate: a sink no source feeds);
//! - **no pipeline**: a parsers file, a plugin list, a fragment of a
//!   directory of configurations: nothing to import on its own;
//! - **failed**: anything else: an import error, or an import that neither
//!   validates nor names what it left out.
//!
//! `${VAR}`s the files name (and Fluentd's `ENV['VAR']`) get values from
//! their names, as the peers' test harnesses would give them: a free port
//! for `…PORT`, a certificate and key for `…CERT…`/`…KEY…`, a path under
//! the work directory for anything else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::filters::free_port;
use super::report::WorkDir;

#[derive(Debug, clap::Args)]
pub struct ImportCorpusArgs {
    /// The folder of the source mirrors (`fluent+fluent-bit/repo`,
    /// `fluent+fluentd/repo`, `vectordotdev+vector/repo`).
    #[arg(long, env = "MIRROR")]
    pub mirrors: PathBuf,
    /// Only these corpora (default: every one whose mirror is there).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub only: Vec<Corpus>,
    /// Keep the files and their imports here (default: a temporary
    /// directory, removed at the end).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print each file's outcome, not only the totals.
    #[arg(long)]
    pub verbose: bool,
}

/// A set of configurations from one peer's source tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Corpus {
    /// Fluent Bit's `conf/`.
    FluentBitConf,
    /// The configurations of Fluent Bit's integration tests
    /// (`tests/integration/scenarios/*/config/`).
    FluentBitIntegration,
    /// Fluentd's `example/`.
    FluentdExample,
    /// Vector's `config/` (its `examples/` and the default `vector.yaml`).
    VectorConfig,
}

impl Corpus {
    const ALL: [Corpus; 4] = [
        Corpus::FluentBitConf,
        Corpus::FluentBitIntegration,
        Corpus::FluentdExample,
        Corpus::VectorConfig,
    ];

    /// The mirror's folder name, the tree's folder, and whether its
    /// subfolders count.
    fn place(self) -> (&'static str, &'static str, bool) {
        match self {
            Corpus::FluentBitConf => ("fluent+fluent-bit", "conf/", false),
            Corpus::FluentBitIntegration => {
                ("fluent+fluent-bit", "tests/integration/scenarios", true)
            }
            Corpus::FluentdExample => ("fluent+fluentd", "example/", false),
            Corpus::VectorConfig => ("vectordotdev+vector", "config/", true),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Corpus::FluentBitConf => "Fluent Bit conf/",
            Corpus::FluentBitIntegration => "Fluent Bit tests/integration",
            Corpus::FluentdExample => "Fluentd example/",
            Corpus::VectorConfig => "Vector config/",
        }
    }

    /// Whether the tree's file `name` is one of the corpus's configurations.
    fn holds(self, name: &str) -> bool {
        let config = [".conf", ".yaml", ".yml", ".toml", ".json"]
            .iter()
            .any(|e| name.ends_with(e));
        match self {
            Corpus::FluentBitIntegration => config && name.contains("/config/"),
            _ => config,
        }
    }

    /// Files the configurations refer to that must be beside them.
    fn companions(self) -> &'static [&'static str] {
        match self {
            Corpus::FluentBitIntegration => &["conf/parsers.conf"],
            _ => &[],
        }
    }
}

/// What became of one corpus.
#[derive(Debug, Default)]
struct Tally {
    files: usize,
    valid: usize,
    listed: usize,
    no_pipeline: usize,
    failed: Vec<String>,
    /// The types of the components commented out, and how often.
    lacking: BTreeMap<String, usize>,
}

/// How one file fared.
enum Outcome {
    Valid,
    Listed,
    NoPipeline,
    Failed(String),
}

pub fn run(a: ImportCorpusArgs) -> Result<(), String> {
    let dir = WorkDir::new(a.dir.clone())?;
    let pki = super::pki::generate(&dir.path)?;
    let wanted = if a.only.is_empty() {
        Corpus::ALL.to_vec()
    } else {
        a.only.clone()
    };
    let mut failed = 0;
    println!(
        "| corpus | files | import and validate | with components commented out | no pipeline | failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut notes = Vec::new();
    for corpus in wanted {
        let (repo, tree, recursive) = corpus.place();
        let mirror = a.mirrors.join(repo).join("repo");
        if !mirror.exists() {
            notes.push(format!(
                "{}: no mirror at {} (fetch github:{} brings it)",
                corpus.name(),
                mirror.display(),
                repo.replace('+', "/")
            ));
            continue;
        }
        let work = dir.path.join(repo);
        let t = tally(corpus, &mirror, tree, recursive, &work, &pki, a.verbose)?;
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            corpus.name(),
            t.files,
            t.valid,
            t.listed,
            t.no_pipeline,
            t.failed.len()
        );
        if !t.lacking.is_empty() {
            let list: Vec<String> = t.lacking.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            notes.push(format!(
                "{}: commented out: {}",
                corpus.name(),
                list.join(", ")
            ));
        }
        for f in &t.failed {
            notes.push(format!("{}: FAILED {f}", corpus.name()));
        }
        failed += t.failed.len();
    }
    for n in notes {
        println!("\n{n}");
    }
    if failed > 0 {
        return Err(format!("{failed} configurations failed"));
    }
    Ok(())
}

/// Runs git on the bare mirror `mirror`.
fn git(mirror: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(mirror)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

fn tally(
    corpus: Corpus,
    mirror: &Path,
    tree: &str,
    recursive: bool,
    work: &Path,
    pki: &super::pki::Pki,
    verbose: bool,
) -> Result<Tally, String> {
    let mut ls = vec!["ls-tree", "--name-only"];
    if recursive {
        ls.push("-r");
    }
    ls.extend(["HEAD", tree]);
    let listing = git(mirror, &ls)?;
    let names: Vec<String> = String::from_utf8_lossy(&listing)
        .lines()
        .filter(|f| corpus.holds(f))
        .map(String::from)
        .collect();
    let companions: Vec<String> = corpus.companions().iter().map(|s| s.to_string()).collect();
    // the files keep their paths, so their includes find each other
    for f in names.iter().chain(&companions) {
        let path = work.join(f);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let text = git(mirror, &["show", &format!("HEAD:{f}")])?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut t = Tally {
        files: names.len(),
        ..Tally::default()
    };
    for (i, f) in names.iter().enumerate() {
        let path = work.join(f);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let env = environment(&text, work, pki)?;
        let outcome = one(
            &exe,
            &path,
            &work.join(format!("imported-{i}.toml")),
            &env,
            &mut t.lacking,
        )?;
        let what = match outcome {
            Outcome::Valid => {
                t.valid += 1;
                "valid".to_string()
            }
            Outcome::Listed => {
                t.listed += 1;
                "components commented out, listed".to_string()
            }
            Outcome::NoPipeline => {
                t.no_pipeline += 1;
                "no pipeline".to_string()
            }
            Outcome::Failed(why) => {
                t.failed.push(format!("{f}: {why}"));
                format!("FAILED: {why}")
            }
        };
        if verbose {
            println!("{f}: {what}");
        }
    }
    Ok(t)
}

/// Imports `path` into `out` and validates it.
fn one(
    exe: &Path,
    path: &Path,
    out: &Path,
    env: &[(String, String)],
    lacking: &mut BTreeMap<String, usize>,
) -> Result<Outcome, String> {
    let import = Command::new(exe)
        .args(["config", "import"])
        .arg(path)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&import.stderr);
    if !import.status.success() {
        // a file that is no collector's configuration on its own
        if stderr.contains("not recognised") {
            return Ok(Outcome::NoPipeline);
        }
        return Ok(Outcome::Failed(format!("import: {}", stderr.trim())));
    }
    let text = String::from_utf8_lossy(&import.stdout).to_string();
    let commented = commented_types(&text);
    let has_pipeline = ["[sources.", "[sinks."]
        .iter()
        .any(|h| text.lines().any(|l| l.starts_with(h)))
        || !commented.is_empty();
    if !has_pipeline {
        return Ok(Outcome::NoPipeline);
    }
    for c in &commented {
        *lacking.entry(c.clone()).or_default() += 1;
    }
    std::fs::write(out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    let validate = Command::new(exe)
        .args(["validate", "--config"])
        .arg(out)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    let stderr = String::from_utf8_lossy(&validate.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    // a fixed port of an example (24224) may be taken on this machine
    let busy = !errors.is_empty() && errors.iter().all(|l| l.contains("in use"));
    Ok(if validate.status.success() || busy {
        Outcome::Valid
    } else if !commented.is_empty() {
        Outcome::Listed
    } else {
        Outcome::Failed(format!("validate: {}", errors.join(" / ")))
    })
}

/// The components an import wrote commented out, as kind and `type`
/// (`source mqtt`): a `# type = "X"` line right under a `# [sources.…]`,
/// `# [filters.…]` or `# [sinks.…]` header.
fn commented_types(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter_map(|w| {
            let kind = [
                ("# [sources.", "source"),
                ("# [filters.", "filter"),
                ("# [sinks.", "sink"),
            ]
            .iter()
            .find(|(h, _)| w[0].starts_with(h))?
            .1;
            let type_ = w[1].strip_prefix("# type = ")?.trim_matches('"');
            Some(format!(
                "{kind} {}",
                if type_.is_empty() { "(no name)" } else { type_ }
            ))
        })
        .collect()
}

/// The variables `text` names (`${VAR}`, `${VAR:-default}`, Fluentd's
/// `ENV['VAR']`), each with a value fit for its name.
fn environment(
    text: &str,
    work: &Path,
    pki: &super::pki::Pki,
) -> Result<Vec<(String, String)>, String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        let name: String = name
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    };
    for part in text.split("${").skip(1) {
        add(part);
    }
    for quote in ["ENV['", "ENV[\""] {
        for part in text.split(quote).skip(1) {
            add(part);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let value = value_for(&name, work, pki)?;
            Ok((name, value))
        })
        .collect()
}

/// A value for the variable `name`, from what its name says it holds.
fn value_for(name: &str, work: &Path, pki: &super::pki::Pki) -> Result<String, String> {
    let upper = name.to_ascii_uppercase();
    let path = |p: &PathBuf| p.display().to_string();
    Ok(if upper.ends_with("PORT") {
        free_port()?.port().to_string()
    } else if upper.contains("PARSERS_FILE") {
        path(&work.join("conf/parsers.conf"))
    } else if upper.contains("PRIVATE_KEY") || upper.ends_with("KEY_FILE") {
        path(&pki.key)
    } else if upper.contains("CERT") || upper.ends_with("CRT") {
        path(&pki.cert)
    } else if upper.ends_with("SIZE") {
        "10M".into()
    } else if upper.ends_with("MATCH") {
        "*".into()
    } else if upper.ends_with("_TAG") {
        "tag".into()
    } else if upper.contains("_FROM_") || upper.starts_with("ENABLE") {
        "true".into()
    } else {
        path(&work.join("state").join(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_a_file_names_are_found_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let pki = super::super::pki::generate(dir.path()).unwrap();
        let text = "Port ${IN_PORT}\nPath ${LOG_DIR}/a.log\nPort ${IN_PORT}\n\
                    host \"#{ENV['FLUENT_HOST']}\"\nkey ${PRIVATE_KEY_TEST:-x}\n";
        let env = environment(text, dir.path(), &pki).unwrap();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["IN_PORT", "LOG_DIR", "PRIVATE_KEY_TEST", "FLUENT_HOST"]
        );
        assert!(env[0].1.parse::<u16>().is_ok());
        assert_eq!(env[2].1, pki.key.display().to_string());
        assert!(env[1].1.ends_with("state/LOG_DIR"));
    }

    #[test]
    fn commented_out_components_are_named_by_their_type() {
        let text = "# not translated: logferry has no mqtt input\n# [sources.mqtt_0]\n\
                    # type = \"mqtt\"\n\n[sinks.out]\ntype = \"file\"\n";
        assert_eq!(commented_types(text), ["source mqtt"]);
    }
}
