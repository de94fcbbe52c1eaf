//! The processes of a deliver scenario on loopback: receivers first, then
//! the deliver tier (the target system), then the agents, each from a
//! rendered template of the system in its role (logferry, Fluent Bit,
//! Fluentd; Vector can deliver and receive but not be an agent: it has no
//! forward sink). Each receiver writes a line per record into a file of its
//! own, which `arrivals.rs` follows. Dropping a [`Topology`] stops them in
//! the opposite order (agents, delivers, receivers), so each tier can hand
//! on what it holds; a process that does not stop in time is killed (see
//! `Proc`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::arrivals::Arrivals;
use super::peers;
use super::template::{self, render, Target};
use crate::bench::process::Proc;

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

/// A role's system and where its program and template come from.
#[derive(Debug, Clone)]
pub struct Role {
    pub system: Target,
    /// Its program (default: see `peers.rs`).
    pub bin: Option<PathBuf>,
    /// A config template to use instead of the built-in one.
    pub template: Option<PathBuf>,
}

impl Role {
    /// The built-in template of this role, or the one given.
    fn template(&self, built_in: &str) -> Result<String, String> {
        match &self.template {
            Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display())),
            None => Ok(built_in.to_string()),
        }
    }
}

/// What to start.
pub struct Plan {
    pub shape: Shape,
    pub agents: usize,
    pub delivers: usize,
    pub receivers: usize,
    /// The system following each agent's file and forwarding it.
    pub agent: Role,
    /// The measured system, in the middle (`--target`).
    pub deliver: Role,
    /// The system counting at the end: a line per record in a file.
    pub receiver: Role,
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
        self.agent.system.agent_template()?;
        if self.deliver.system == Target::Vector {
            if self.shape == Shape::RoundRobin && self.receivers > 1 {
                return Err(format!(
                    "vector has no forward sink and its socket sink sends to one address: a vector \
                     deliver process cannot balance over {} receivers (use --receivers 1)",
                    self.receivers
                ));
            }
            if self.receiver.system != Target::Logferry {
                return Err(format!(
                    "vector has no forward sink: a vector deliver process sends lines over TCP, \
                     which only the logferry receiver takes (got --receiver {})",
                    self.receiver.system.name()
                ));
            }
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
    /// The system it runs.
    pub system: Target,
    pub proc: Proc,
}

/// The running topology. Fields drop in order: agents, delivers,
/// receivers, then the followers of the receivers' files.
pub struct Topology {
    pub agents: Vec<Member>,
    pub delivers: Vec<Member>,
    pub receivers: Vec<Member>,
    /// What arrives at each receiver (its output file, followed).
    pub arrivals: Vec<Arrivals>,
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

    /// A member that has exited, with its status, or a follower that
    /// stopped.
    pub fn exited(&mut self) -> Option<String> {
        self.agents
            .iter_mut()
            .chain(&mut self.delivers)
            .chain(&mut self.receivers)
            .find_map(|m| m.proc.exited().map(|s| format!("{} exited ({s})", m.name)))
            .or_else(|| {
                self.arrivals
                    .iter()
                    .enumerate()
                    .find_map(|(i, a)| a.error().map(|e| format!("receiver-{}: {e}", i + 1)))
            })
    }

    /// Lines each receiver has written so far.
    pub fn received(&self) -> Vec<u64> {
        self.arrivals.iter().map(Arrivals::lines).collect()
    }

    /// Starts every process of `plan` in `dir`, announcing each one
    /// (`started NAME pid=PID`) on stdout.
    pub fn start(plan: &Plan, dir: &Path) -> Result<Topology, String> {
        let mut topo = Topology {
            agents: Vec::new(),
            delivers: Vec::new(),
            receivers: Vec::new(),
            arrivals: Vec::new(),
            tail_paths: Vec::new(),
        };
        let receiver = &plan.receiver;
        let receiver_template =
            receiver.template(match (plan.deliver.system, receiver.system) {
                // what a vector deliver sends: lines over TCP
                (Target::Vector, Target::Logferry) => template::LOGFERRY_RECEIVER_TCP,
                (_, r) => r.receiver_template(),
            })?;
        let mut receiver_addrs = Vec::new();
        for i in 1..=plan.receivers {
            let name = format!("receiver-{i}");
            let out_dir = dir.join(&name);
            std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
            let output_file = receiver.system.output_file();
            let output_path = out_dir.join(output_file).display().to_string();
            let output_dir = out_dir.display().to_string();
            let (member, addr) = start_member(
                dir,
                &name,
                Tier::Receiver,
                receiver,
                &receiver_template,
                &[
                    ("output_dir", output_dir.as_str()),
                    ("output_file", output_file),
                    ("output_path", output_path.as_str()),
                ],
            )?;
            topo.arrivals.push(Arrivals::follow(&out_dir)?);
            receiver_addrs.push(addr);
            topo.receivers.push(member);
        }

        let deliver = &plan.deliver;
        let deliver_template = deliver.template(deliver.system.deliver_template())?;
        let mut deliver_addrs = Vec::new();
        for i in 1..=plan.delivers {
            let name = format!("deliver-{i}");
            let downstream = match plan.shape {
                Shape::Peer => &receiver_addrs[i - 1..i],
                Shape::RoundRobin => &receiver_addrs[..],
            };
            let forward_to = template::forward_to(
                deliver.system,
                downstream,
                &dir.join(format!("{name}.upstream.conf")),
            )?;
            let (member, addr) = start_member(
                dir,
                &name,
                Tier::Deliver,
                deliver,
                &deliver_template,
                &[("forward_to", forward_to.as_str())],
            )?;
            deliver_addrs.push(addr);
            topo.delivers.push(member);
        }

        let agent = &plan.agent;
        let agent_template = agent.template(agent.system.agent_template()?)?;
        for i in 1..=plan.agents {
            let name = format!("agent-{i}");
            let tail = dir.join(format!("{name}.log"));
            std::fs::write(&tail, "").map_err(|e| format!("{}: {e}", tail.display()))?;
            let downstream = match plan.shape {
                Shape::Peer => &deliver_addrs[i - 1..i],
                Shape::RoundRobin => &deliver_addrs[..],
            };
            let tail_path = tail.display().to_string();
            let forward_to = template::forward_to(
                agent.system,
                downstream,
                &dir.join(format!("{name}.upstream.conf")),
            )?;
            let (member, _) = start_member(
                dir,
                &name,
                Tier::Agent,
                agent,
                &agent_template,
                &[
                    ("tail_path", tail_path.as_str()),
                    ("forward_to", forward_to.as_str()),
                ],
            )?;
            topo.tail_paths.push(tail);
            topo.agents.push(member);
        }
        Ok(topo)
    }
}

/// Renders `template` with `values` (and `{{listen_port}}`) into
/// `dir/NAME.EXT`, starts `role`'s system on it and announces it. A
/// receiver or deliver process listens: its forward (or TCP) address,
/// read from logferry's log or, for the other systems, a free port picked
/// here that it must accept connections on; an agent's address is unused.
fn start_member(
    dir: &Path,
    name: &str,
    tier: Tier,
    role: &Role,
    template: &str,
    values: &[(&str, &str)],
) -> Result<(Member, SocketAddr), String> {
    let system = role.system;
    let listens = tier != Tier::Agent;
    let port = if system.reports_its_port() || !listens {
        0
    } else {
        free_port()?
    };
    let port_text = port.to_string();
    let mut all = vec![("listen_port", port_text.as_str())];
    all.extend_from_slice(values);
    let config = render(template, &all)
        .map_err(|e| format!("{} {} template: {e}", system.name(), tier.name()))?;
    let path = dir.join(format!("{name}.{}", system.config_ext()));
    std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
    let bin = peers::program(system, role.bin.as_deref())?;
    let mut cmd = Command::new(&bin);
    cmd.args(system.args(&path)).env("LOGFERRY_LOG", "info");
    if system == Target::Logferry {
        cmd.stdout(Stdio::null());
    } else {
        cmd.stdout(output_log(dir, name)?);
    }
    let mut proc = spawn(cmd, name)?;
    let addr = if !listens {
        SocketAddr::from(([127, 0, 0, 1], 0))
    } else if system.reports_its_port() {
        proc.address("source=in ")?
    } else {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_accepting(&mut proc, addr, name)?;
        addr
    };
    let member = announce(Member {
        name: name.to_string(),
        tier,
        system,
        proc,
    });
    Ok((member, addr))
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
