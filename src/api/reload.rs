//! The handle `POST /reload` (and SIGHUP) ask the running pipeline to
//! reload through; the pipeline answers on the other end of its channel.

use tokio::sync::{mpsc, oneshot};

/// One reload request, answered with a summary or the reason it failed.
pub struct Request {
    /// Where the outcome goes.
    pub reply: oneshot::Sender<Result<String, String>>,
}

/// Asks a running pipeline to reload; cheap to clone.
#[derive(Clone)]
pub struct ReloadHandle(mpsc::Sender<Request>);

/// A handle and the receiving end the pipeline answers on.
pub fn channel() -> (ReloadHandle, mpsc::Receiver<Request>) {
    let (tx, rx) = mpsc::channel(4);
    (ReloadHandle(tx), rx)
}

impl ReloadHandle {
    /// Reloads and waits for the outcome: a summary of what changed, or
    /// why the running configuration was kept.
    pub async fn reload(&self) -> Result<String, String> {
        let (reply, answer) = oneshot::channel();
        self.0
            .send(Request { reply })
            .await
            .map_err(|_| "the pipeline is stopping".to_string())?;
        answer
            .await
            .map_err(|_| "the pipeline stopped during the reload".to_string())?
    }
}

/// `POST /reload`: the HTTP status and body (200 with a summary, or 422
/// with every reason the new configuration was refused).
pub async fn http(handle: &ReloadHandle) -> (u16, String) {
    match handle.reload().await {
        Ok(summary) => (200, format!("{summary}\n")),
        Err(reason) => (422, format!("{reason}\n")),
    }
}
