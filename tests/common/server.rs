//! What the fixtures of local servers started by a project script
//! (opensearch, otelcol, s3) share: the pid in the script's state dir, and
//! a SIGKILL that waits until the process is gone.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The process id the script keeps in `dir/pid`.
pub fn state_pid(dir: &Path) -> u32 {
    let p = dir.join("pid");
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
        .trim()
        .parse()
        .unwrap()
}

/// SIGKILLs `pid` (`what` names it in failures), as a crash would, and
/// waits until it is gone.
pub fn kill_and_wait(pid: u32, what: &str) {
    let pid = pid.to_string();
    let st = Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(st.success(), "kill -9 {pid} failed");
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(&pid) {
        assert!(
            Instant::now() < deadline,
            "{what} {pid} still alive after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` lives: any of its threads is not yet a zombie.
/// A killed process's first thread turns zombie while the others may still
/// be exiting and holding its sockets, and one its adopter has not reaped
/// yet stays a zombie: gone, for this purpose, once every thread is.
pub fn alive(pid: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        match std::fs::read_to_string(t.path().join("stat")) {
            // the state follows the command name, which is in parentheses
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => false,
        }
    })
}
