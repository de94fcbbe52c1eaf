//! Fluent Bit and Fluentd as receivers: one input, every record written
//! to a file as a line of JSON (their `stdout` output).

use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{peer_is_built, peer_path};

/// A peer process, killed on drop.
pub struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fluent Bit with the `[INPUT]` of `input` (its settings, one per line),
/// writing every record to `out` as JSON lines; `None` (the test skipped,
/// saying why) where it is not built.
pub fn fluent_bit(dir: &Path, input: &str, out: &Path) -> Option<Peer> {
    if !peer_is_built("ANCHOR_FLUENTBIT", "Fluent Bit") {
        return None;
    }
    let input: String = input
        .lines()
        .map(|l| format!("    {}\n", l.trim()))
        .collect();
    let conf = dir.join("fluent-bit.conf");
    std::fs::write(
        &conf,
        format!(
            "[SERVICE]\n    Flush 0.2\n    Log_Level info\n\n[INPUT]\n{input}\n\
             [OUTPUT]\n    Name stdout\n    Match *\n    Format json_lines\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(peer_path("ANCHOR_FLUENTBIT")?);
    cmd.arg("-c").arg(&conf);
    Some(spawn(cmd, out))
}

/// Fluentd with the `<source>` of `source` (its directives, one per
/// line), writing every record to `out` as a line of JSON; `None` (the
/// test skipped, saying why) where it is not built.
pub fn fluentd(dir: &Path, source: &str, out: &Path) -> Option<Peer> {
    if !peer_is_built("ANCHOR_FLUENTD_DIR", "Fluentd") {
        return None;
    }
    let source: String = source
        .lines()
        .map(|l| format!("  {}\n", l.trim()))
        .collect();
    let conf = dir.join("fluent.conf");
    std::fs::write(
        &conf,
        format!(
            "<source>\n{source}</source>\n\n\
             <match **>\n  @type stdout\n  <format>\n    @type json\n  </format>\n</match>\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(peer_path("ANCHOR_FLUENTD_DIR")?.join("bin/fluentd"));
    cmd.arg("-c").arg(&conf).arg("--no-supervisor");
    Some(spawn(cmd, out))
}

fn spawn(mut cmd: Command, out: &Path) -> Peer {
    let child = cmd
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Peer(child)
}
