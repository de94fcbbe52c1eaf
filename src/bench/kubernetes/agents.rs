//! The two agents measured, each with its defaults and what a DaemonSet
//! gives it: logferry's `kubernetes` source, and Fluent Bit's `tail` on
//! the containers' symlinks with its `kubernetes` filter; both forward
//! every record to the bench's receiver.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::kubelet::Kubelet;
use crate::bench::process::Proc;

/// An agent under measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Logferry,
    FluentBit,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Logferry => "logferry",
            Agent::FluentBit => "Fluent Bit",
        }
    }
}

/// What both agents are given: the API server and the node.
pub struct Node {
    /// The node's name (`spec.nodeName` of its pods).
    pub name: String,
    /// A kubeconfig with the agent's token and the server's CA (logferry).
    pub kubeconfig: PathBuf,
    /// The API server's URL (Fluent Bit's `Kube_URL`).
    pub url: String,
    /// The server's CA file (`Kube_CA_File`).
    pub ca: PathBuf,
    /// A file holding the agent's token (`Kube_Token_File`).
    pub token_file: PathBuf,
    /// Fluent Bit's program; `None` measures logferry alone.
    pub peer: Option<PathBuf>,
}

/// Starts `agent` on `kubelet`'s layout, forwarding to `receiver`; its
/// config is written in `dir`.
pub fn start(
    agent: Agent,
    dir: &Path,
    node: &Node,
    kubelet: &Kubelet,
    receiver: SocketAddr,
) -> Result<Proc, String> {
    match agent {
        Agent::Logferry => Proc::start(
            dir,
            "logferry-kubernetes",
            &logferry_config(node, &kubelet.pods_root, receiver),
        ),
        Agent::FluentBit => {
            let bin = node.peer.as_ref().ok_or("no Fluent Bit program")?;
            let conf = dir.join("fluent-bit-kubernetes.conf");
            std::fs::write(
                &conf,
                fluent_bit_config(node, &kubelet.containers_root, receiver),
            )
            .map_err(|e| format!("{}: {e}", conf.display()))?;
            let mut cmd = Command::new(bin);
            cmd.arg("-c").arg(&conf).stdout(Stdio::null());
            Proc::spawn(cmd, "fluent-bit")
        }
    }
}

fn q(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

/// The `kubernetes` source with its defaults, forwarding everything.
pub fn logferry_config(node: &Node, pods_root: &Path, receiver: SocketAddr) -> String {
    format!(
        "[sources.k]\ntype = \"kubernetes\"\npods_root = {}\nnode_name = {:?}\nkubeconfig = {}\n\n\
         [sinks.out]\ntype = \"forward\"\nmatch = \"**\"\nservers = [{{ address = \"{receiver}\" }}]\n",
        q(pods_root),
        node.name,
        q(&node.kubeconfig)
    )
}

/// Fluent Bit as its Kubernetes documentation deploys it: `tail` on the
/// containers' symlinks with the CRI multiline parser, the `kubernetes`
/// filter pointed at the API server with the agent's token (labels and
/// annotations on, `Merge_Log` off), and a `forward` output.
pub fn fluent_bit_config(node: &Node, containers_root: &Path, receiver: SocketAddr) -> String {
    format!(
        "[SERVICE]\n    Flush     1\n    Log_Level warn\n\n\
         [INPUT]\n    Name             tail\n    Path             {}/*.log\n    multiline.parser cri\n    Tag              kube.*\n\n\
         [FILTER]\n    Name            kubernetes\n    Match           kube.*\n    Kube_URL        {}\n    Kube_CA_File    {}\n    Kube_Token_File {}\n    Kube_Tag_Prefix {}\n    Merge_Log       Off\n    Labels          On\n    Annotations     On\n\n\
         [OUTPUT]\n    Name  forward\n    Match *\n    Host  {}\n    Port  {}\n",
        containers_root.display(),
        node.url,
        node.ca.display(),
        node.token_file.display(),
        tag_prefix(containers_root),
        receiver.ip(),
        receiver.port()
    )
}

/// The tag prefix `tail` gives a file in `dir` with `Tag kube.*`: the
/// path with `/` turned into `.` (`kube.var.log.containers.` for
/// `/var/log/containers`).
fn tag_prefix(dir: &Path) -> String {
    let path = dir.display().to_string();
    format!("kube.{}.", path.trim_matches('/').replace('/', "."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_prefix_is_fluent_bits_for_its_directory() {
        assert_eq!(
            tag_prefix(Path::new("/var/log/containers")),
            "kube.var.log.containers."
        );
        assert_eq!(
            tag_prefix(Path::new("/tmp/b-1/run/containers/")),
            "kube.tmp.b-1.run.containers."
        );
    }
}
