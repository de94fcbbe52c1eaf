//! The processes of a deliver scenario on loopback: receivers first, then
//! the deliver tier (the target system), then the agents, each from a
//! rendered template. Dropping a [`Topology`] stops them in the opposite
//! order (agents, delivers, receivers), so each tier can hand on what it
//! holds; a process that does not stop in time is killed (see `Proc`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::template::{self, render, Target};
use crate::bench::process::{metric, Proc};

/// How long a foreign deliver process may take to accept connections
/// (Fluentd starts in seconds).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Where each agent sends and where each deliver sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// agent i → deliver i → receiver i.
    Peer,
    /// Every agent → all delivers, every deliver → all receivers, round
    /// robin.
    RoundRobin,
}

/// What to start.
pub struct Plan {
    pub shape: Shape,
    pub agents: usize,
    pub delivers: usize,
    pub receivers: usize,
    pub target: Target,
    /// The target's program (default: this binary for logferry, else the
    /// system's usual command name on PATH).
    pub target_bin: Option<PathBuf>,
    /// A deliver template to use instead of the built-in one.
    pub template: Option<PathBuf>,
}

impl Plan {
    pub fn validate(&self) -> Result<(), String> {
        if self.agents == 0 || self.delivers == 0 || self.receivers == 0 {
            return Err("--agents, --delivers and --receivers must be at least 1".into());
        }
        if self.shape == Shape::Peer
            && (self.delivers != self.agents || self.receivers != self.agents)
        {
            return Err(format!(
                "peer-deliver pairs agent i with deliver i and receiver i: give as many \
                 delivers and receivers as agents (got {} agents, {} delivers, {} receivers)",
                self.agents, self.delivers, self.receivers
            ));
        }
        if self.target == Target::Vector && self.shape == Shape::RoundRobin && self.receivers > 1 {
            return Err(format!(
                "vector has no forward sink and its socket sink sends to one address: a vector \
                 deliver process cannot balance over {} receivers (use --receivers 1)",
                self.receivers
            ));
        }
        Ok(())
    }
}

/// A tier of the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Agent,
    Deliver,
    Receiver,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Agent => "agent",
            Tier::Deliver => "deliver",
            Tier::Receiver => "receiver",
        }
    }
}

/// One running process of the topology.
pub struct Member {
    /// `agent-1`, `deliver-2`, …
    pub name: String,
    pub tier: Tier,
    pub proc: Proc,
    /// A receiver's metrics endpoint, where its count is read.
    pub api: Option<SocketAddr>,
}

impl Member {
    /// Records a receiver has counted (0 for the other tiers).
    pub fn received(&self) -> u64 {
        self.api.map_or(0, |api| {
            metric(api, "logferry_sink_records_total", "component=\"count\"")
        })
    }
}

/// The running topology. Fields drop in order: agents, delivers, receivers.
pub struct Topology {
    pub agents: Vec<Member>,
    pub delivers: Vec<Member>,
    pub receivers: Vec<Member>,
    /// The file each agent follows (the writers append to it).
    pub tail_paths: Vec<PathBuf>,
}

impl Topology {
    /// Every member, tier by tier.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        self.agents
            .iter()
            .chain(&self.delivers)
            .chain(&self.receivers)
    }

    /// A member that has exited, with its status.
    pub fn exited(&mut self) -> Option<String> {
        self.agents
            .iter_mut()
            .chain(&mut self.delivers)
            .chain(&mut self.receivers)
            .find_map(|m| m.proc.exited().map(|s| format!("{} exited ({s})", m.name)))
    }

    /// Starts every process of `plan` in `dir`, announcing each one
    /// (`started NAME pid=PID`) on stdout.
    pub fn start(plan: &Plan, dir: &Path) -> Result<Topology, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut topo = Topology {
            agents: Vec::new(),
            delivers: Vec::new(),
            receivers: Vec::new(),
            tail_paths: Vec::new(),
        };
        let receiver_template = if plan.target.forwards() {
            template::LOGFERRY_RECEIVER
        } else {
            template::LOGFERRY_RECEIVER_TCP
        };
        let mut receiver_addrs = Vec::new();
        for i in 1..=plan.receivers {
            let name = format!("receiver-{i}");
            let config = render(
                receiver_template,
                &[("listen_port", "0"), ("api_port", "0")],
            )
            .map_err(|e| format!("receiver template: {e}"))?;
            let mut proc = spawn_logferry(&exe, dir, &name, &config)?;
            receiver_addrs.push(proc.address("source=in ")?);
            let api = proc.address("api listening")?;
            topo.receivers.push(announce(Member {
                name,
                tier: Tier::Receiver,
                proc,
                api: Some(api),
            }));
        }

        let deliver_template = match &plan.template {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            None => plan.target.deliver_template().to_string(),
        };
        let mut deliver_addrs = Vec::new();
        for i in 1..=plan.delivers {
            let name = format!("deliver-{i}");
            let downstream = match plan.shape {
                Shape::Peer => &receiver_addrs[i - 1..i],
                Shape::RoundRobin => &receiver_addrs[..],
            };
            let forward_to = template::forward_to(
                plan.target,
                downstream,
                &dir.join(format!("{name}.upstream.conf")),
            )?;
            // logferry binds port 0 and logs the address; the others get a
            // free port picked here
            let port = match plan.target {
                Target::Logferry => 0,
                _ => free_port()?,
            };
            let port_text = port.to_string();
            let config = render(
                &deliver_template,
                &[
                    ("listen_port", port_text.as_str()),
                    ("forward_to", forward_to.as_str()),
                ],
            )
            .map_err(|e| format!("{} deliver template: {e}", plan.target.name()))?;
            let path = dir.join(format!("{name}.{}", plan.target.config_ext()));
            std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
            let bin = match (&plan.target_bin, plan.target) {
                (Some(b), _) => b.clone(),
                (None, Target::Logferry) => exe.clone(),
                (None, t) => PathBuf::from(t.default_bin()),
            };
            let mut cmd = Command::new(&bin);
            cmd.args(plan.target.args(&path))
                .env("LOGFERRY_LOG", "info")
                .stdout(output_log(dir, &name)?);
            let mut proc = spawn(cmd, &name)?;
            let addr = match plan.target {
                Target::Logferry => proc.address("source=in ")?,
                _ => {
                    let addr = SocketAddr::from(([127, 0, 0, 1], port));
                    wait_accepting(&mut proc, addr, &name)?;
                    addr
                }
            };
            deliver_addrs.push(addr);
            topo.delivers.push(announce(Member {
                name,
                tier: Tier::Deliver,
                proc,
                api: None,
            }));
        }

        for i in 1..=plan.agents {
            let name = format!("agent-{i}");
            let tail = dir.join(format!("{name}.log"));
            std::fs::write(&tail, "").map_err(|e| format!("{}: {e}", tail.display()))?;
            let downstream = match plan.shape {
                Shape::Peer => &deliver_addrs[i - 1..i],
                Shape::RoundRobin => &deliver_addrs[..],
            };
            let tail_path = tail.display().to_string();
            let servers = template::logferry_servers(downstream);
            let config = render(
                template::LOGFERRY_AGENT,
                &[
                    ("tail_path", tail_path.as_str()),
                    ("forward_to", servers.as_str()),
                ],
            )
            .map_err(|e| format!("agent template: {e}"))?;
            let proc = spawn_logferry(&exe, dir, &name, &config)?;
            topo.tail_paths.push(tail);
            topo.agents.push(announce(Member {
                name,
                tier: Tier::Agent,
                proc,
                api: None,
            }));
        }
        Ok(topo)
    }
}

fn announce(m: Member) -> Member {
    use std::io::Write;
    println!("started {} pid={}", m.name, m.proc.pid());
    let _ = std::io::stdout().flush();
    m
}

pub(super) fn spawn_logferry(
    exe: &Path,
    dir: &Path,
    name: &str,
    config: &str,
) -> Result<Proc, String> {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(["run", "--config"])
        .arg(&path)
        .env("LOGFERRY_LOG", "info")
        .stdout(Stdio::null());
    spawn(cmd, name)
}

/// Starts a member in its own process group (a Ctrl-C in the terminal
/// reaches the benchmark only, which then stops the topology in order),
/// asking the kernel to stop it should the benchmark die without
/// cleaning up.
pub(super) fn spawn(mut cmd: Command, name: &str) -> Result<Proc, String> {
    cmd.process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork
    // and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            Ok(())
        });
    }
    Proc::spawn(cmd, name)
}

/// The file a foreign system's stdout goes to (`NAME.out` in the run's
/// directory): Fluentd and Fluent Bit log there.
pub(super) fn output_log(dir: &Path, name: &str) -> Result<std::fs::File, String> {
    let path = dir.join(format!("{name}.out"));
    std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A port that was free a moment ago, for systems that cannot report the
/// port they bound.
pub(super) fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// Waits until `addr` accepts connections, failing if `proc` exits.
pub(super) fn wait_accepting(proc: &mut Proc, addr: SocketAddr, name: &str) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Some(status) = proc.exited() {
            return Err(format!(
                "{name} exited ({status}) before listening on {addr}: see {name}.out in the run's directory (--dir)"
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{name} does not accept connections on {addr} after {START_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
