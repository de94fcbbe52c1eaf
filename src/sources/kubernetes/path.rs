//! What a container log's path tells: the kubelet writes
//! `<pods_root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`.
//! Namespace and pod names are DNS labels and subdomains, and uids are
//! UUIDs (or, for a static pod, the hash of its manifest): none holds `_`.

use std::path::Path;

/// A container log's place in the kubelet's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPath {
    pub namespace: String,
    pub pod: String,
    /// The pod's uid (a static pod's: its manifest's hash, which its
    /// mirror pod carries in the `kubernetes.io/config.mirror` annotation).
    pub uid: String,
    pub container: String,
}

impl LogPath {
    /// The parts of `path`, if it is a container log under the layout
    /// (under its own name, or the name the kubelet's rotation gave it).
    pub fn parse(path: &Path) -> Option<LogPath> {
        let mut parts = path.iter().rev();
        let file = parts.next()?.to_str()?;
        let container = parts.next()?.to_str()?;
        let pod_dir = parts.next()?.to_str()?;
        // `<restart>.log`, or renamed by the kubelet's rotation while
        // being read: `<restart>.log.<YYYYMMDD-HHMMSS>`
        let (restart, _) = file.split_once(".log")?;
        if restart.is_empty()
            || !restart.bytes().all(|b| b.is_ascii_digit())
            || container.is_empty()
        {
            return None;
        }
        let mut fields = pod_dir.splitn(3, '_');
        let (namespace, pod, uid) = (fields.next()?, fields.next()?, fields.next()?);
        if namespace.is_empty() || pod.is_empty() || uid.is_empty() || uid.contains('_') {
            return None;
        }
        Some(LogPath {
            namespace: namespace.to_string(),
            pod: pod.to_string(),
            uid: uid.to_string(),
            container: container.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubelets_layout() {
        let p = LogPath::parse(Path::new(
            "/var/log/pods/kube-system_coredns-5d78c9869d-abcde_0c2f5a3e-1b2c-4d5e-8f90-123456789abc/coredns/3.log",
        ))
        .unwrap();
        assert_eq!(p.namespace, "kube-system");
        assert_eq!(p.pod, "coredns-5d78c9869d-abcde");
        assert_eq!(p.uid, "0c2f5a3e-1b2c-4d5e-8f90-123456789abc");
        assert_eq!(p.container, "coredns");
        assert!(LogPath::parse(Path::new("/var/log/pods/nounderscore/c/0.log")).is_none());
        // a log the kubelet renamed while it was being read is the same
        // container's
        let rotated =
            LogPath::parse(Path::new("/var/log/pods/a_b_c/app/0.log.20261206-051207")).unwrap();
        assert_eq!(
            (rotated.pod.as_str(), rotated.container.as_str()),
            ("b", "app")
        );
        assert!(LogPath::parse(Path::new("/var/log/pods/a_b_c/app/notes.txt")).is_none());
    }
}
