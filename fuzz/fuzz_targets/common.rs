//! Shared by the fuzz targets.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, OnceLock};

/// Stack the code under test runs on. logferry decodes on tokio worker
/// threads (2 MiB stacks) and accepts frames of up to 16 MiB, so anything
/// whose stack use grows with the input (recursion on nesting depth) can be
/// driven into a stack overflow that aborts the whole server. The inputs the
/// fuzzer tries are small (a few KiB), so the targets run on a much smaller
/// stack to make such growth show up as a crash at a depth the fuzzer reaches.
/// Code that uses a bounded amount of stack needs far less than this, even
/// with AddressSanitizer's larger frames.
pub const STACK_BYTES: usize = 256 * 1024;

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Worker {
    jobs: SyncSender<Job>,
    done: Receiver<()>,
}

/// Runs `f` on a long-lived thread with a [`STACK_BYTES`] stack and waits for
/// it to finish. A panic there aborts the process (libfuzzer-sys installs a
/// panic hook that aborts), so libFuzzer records it like any other crash.
pub fn on_small_stack<F: FnOnce() + Send>(f: F) {
    static WORKER: OnceLock<Mutex<Worker>> = OnceLock::new();
    let worker = WORKER.get_or_init(|| {
        let (jobs, job_rx) = sync_channel::<Job>(0);
        let (done_tx, done) = sync_channel(0);
        std::thread::Builder::new()
            .name("fuzz-small-stack".into())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                for job in job_rx {
                    job();
                    let _ = done_tx.send(());
                }
            })
            .expect("cannot spawn the fuzzing thread");
        Mutex::new(Worker { jobs, done })
    });
    let worker = worker.lock().unwrap_or_else(|e| e.into_inner());
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(f);
    // SAFETY: only the lifetime is changed. The job borrows from the caller's
    // frame, and this function does not return until the worker has finished
    // running it (or the process has aborted), so the borrow outlives its use.
    let job: Job = unsafe { std::mem::transmute(job) };
    worker.jobs.send(job).expect("fuzzing thread is gone");
    worker.done.recv().expect("fuzzing thread is gone");
}
