//! The FUSE source: a mounted directory where writing a file ships it.
//!
//! Applications write into the mount with ordinary tools (`cat data >
//! /mnt/logs/app.log`, `echo line >> /mnt/logs/x.log`); every complete line
//! becomes a record `{"message": line, "file": "app.log"}` tagged
//! `tag_prefix` + the path with `/` turned into `.`. A write returns only
//! once its records are in every matching sink's queue, so a full pipeline
//! slows the writers down instead of losing their bytes.
//!
//! Split by role: `config` (settings), `mount` (stale mounts, unmounting),
//! `tree` (names and sizes), `fs` (the kernel's requests), `write` (a
//! descriptor's writes and unfinished line), `request` (requests that wait
//! run as tasks), `room` (memory for unfinished lines and waiting
//! requests), `encode` (bytes → entries), `pipeline` (into the router,
//! acknowledgements), `mirror` (`mirror_dir`), `telemetry` (counters and
//! their log lines).

mod config;
/// Public for the `fuse_lines` fuzz target.
pub mod encode;
mod fs;
mod mirror;
pub(crate) mod mount;
mod pipeline;
mod request;
mod room;
mod telemetry;
mod tree;
mod write;

pub use config::{FuseMode, FuseSourceConfig};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fs::{FuseFs, Shared};
use mount::{Found, Unmounted};
use pipeline::Pipeline;
use telemetry::FuseMetrics;

use crate::component::SourceContext;

/// A mounted FUSE source.
pub struct FuseSource {
    name: Arc<str>,
    shared: Arc<Shared>,
    /// Unmounts on drop, whatever way the source ends.
    mounted: MountGuard,
    /// The thread running the FUSE session; ends once unmounted.
    session: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    shutdown: crate::component::Shutdown,
}

impl FuseSource {
    /// Cleans a stale mount if there is one, then mounts. Must be called
    /// inside the runtime (request threads use its handle).
    pub fn mount(config: FuseSourceConfig, cx: SourceContext) -> Result<Self, String> {
        let metrics = Arc::new(FuseMetrics::new(&cx.metrics, &cx.name));
        if mount::prepare(&config.mountpoint)? == Found::StaleMountCleaned {
            metrics.stale_mounts.inc();
            tracing::warn!(source = %cx.name, mountpoint = %config.mountpoint.display(),
                "stale mount found on the mountpoint (a process died without unmounting); detached it");
        }
        let mountpoint = std::fs::canonicalize(&config.mountpoint)
            .map_err(|e| format!("mountpoint {}: {e}", config.mountpoint.display()))?;
        let pipeline = Pipeline::new(
            cx.name.clone(),
            cx.router,
            tokio::runtime::Handle::current(),
            cx.shutdown.clone(),
            cx.memory.clone(),
            config.write_timeout,
            metrics,
        );
        let threads = config.threads;
        let (max_open_files, max_inodes) = (config.max_open_files, config.max_inodes);
        let allow_other = config.allow_other;
        let max_write = config.max_write;
        let shared = Arc::new(Shared::new(config, pipeline, cx.memory, cx.name.clone())?);
        let mut options = fuser::Config::default();
        options.mount_options = vec![
            fuser::MountOption::FSName(format!("logferry-{}", cx.name)),
            fuser::MountOption::Subtype("logferry".into()),
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
            fuser::MountOption::NoAtime,
        ];
        if allow_other {
            options.acl = fuser::SessionACL::All;
        }
        options.n_threads = Some(threads);
        options.clone_fd = threads > 1;
        let session = fuser::Session::new(FuseFs(shared.clone()), &mountpoint, &options)
            .map_err(|e| {
                format!(
                    "cannot mount {}: {e} (is /dev/fuse there, and is logferry root or allowed to mount?)",
                    mountpoint.display()
                )
            })?;
        let mut session = session;
        let mounted = MountGuard {
            unmounter: session.unmount_callable(),
            path: mountpoint.clone(),
            source: cx.name.clone(),
            metrics: shared.pipeline.metrics.clone(),
            done: false,
        };
        let session = std::thread::Builder::new()
            .name(format!("fuse-{}", cx.name))
            .spawn(move || session.run())
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        tracing::info!(source = %cx.name, mountpoint = %mountpoint.display(), threads, max_write,
            max_open_files, max_inodes, unfinished_line_room = shared.lines.limit(),
            "fuse source mounted");
        Ok(FuseSource {
            name: cx.name,
            shared,
            mounted,
            session: Some(session),
            shutdown: cx.shutdown,
        })
    }

    pub async fn run(mut self) {
        self.shutdown.wait().await;
        // blocking work: shipping the last lines, unmount, joining threads
        let _ = tokio::task::spawn_blocking(move || self.stop()).await;
    }

    /// Refuses new writes, unmounts, ships every unfinished last line, and
    /// lets go of the router so the sinks' queues can drain. Unmounting
    /// comes first (the lines are in memory, not in the mount), so a second
    /// stop signal, which exits at once, cannot leave a mount behind.
    fn stop(&mut self) {
        let p = &self.shared.pipeline;
        p.begin_close();
        let how = self.mounted.unmount();
        self.shared.flush_all();
        p.close();
        if how == Some(Unmounted::Clean) {
            if let Some(t) = self.session.take() {
                // the session ends once the kernel has let go of the mount
                let deadline = Instant::now() + Duration::from_secs(5);
                while !t.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if t.is_finished() {
                    let _ = t.join();
                }
            }
        }
        tracing::info!(source = %self.name, unmounted = ?how, "fuse source stopped");
    }
}

/// Unmounts once, at stop or on drop.
struct MountGuard {
    /// fuser's own unmount (it then knows not to try again).
    unmounter: fuser::SessionUnmounter,
    path: PathBuf,
    source: Arc<str>,
    metrics: Arc<FuseMetrics>,
    done: bool,
}

impl MountGuard {
    /// Unmounts; when a process still has a file open in the mount
    /// (EBUSY), detaches it instead, so it leaves the mount table at once
    /// and the kernel ends it when the last file is closed or logferry
    /// exits.
    fn unmount(&mut self) -> Option<Unmounted> {
        if std::mem::replace(&mut self.done, true) {
            return None;
        }
        let result = match self.unmounter.unmount() {
            Ok(()) => Ok(Unmounted::Clean),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                mount::detach(&self.path).map(|()| Unmounted::Detached)
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(Unmounted::NotMounted),
            Err(e) => Err(e),
        };
        match result {
            Ok(how) => {
                if how == Unmounted::Detached {
                    self.metrics.lazy_unmounts.inc();
                    tracing::warn!(source = %self.source, mountpoint = %self.path.display(),
                        "a process still had a file open in the mount: detached it (its next writes fail)");
                }
                Some(how)
            }
            Err(e) => {
                self.metrics.unmount_errors.inc();
                tracing::error!(source = %self.source, mountpoint = %self.path.display(), error = %e,
                    "cannot unmount; run `umount -l` on the mountpoint as root");
                None
            }
        }
    }
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        self.unmount();
    }
}
