//! The `[api]` endpoint: `GET /metrics` (Prometheus text format),
//! `GET /health` and `POST /reload`. A deliberately tiny HTTP/1.1 server: one request per
//! connection, requests over 8 KiB or slower than 5 s are dropped.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::metrics::Registry;
use crate::net::AcceptErrors;
use crate::sources::Shutdown;
use crate::topology::reload::ReloadHandle;

const MAX_REQUEST: usize = 8 * 1024;

/// Binds the endpoint; the returned future serves it until shutdown.
pub async fn start(
    address: &str,
    metrics: Registry,
    mut shutdown: Shutdown,
    reload: ReloadHandle,
) -> Result<impl std::future::Future<Output = ()>, String> {
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("api: cannot listen on {address}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(address = %local, "api listening (GET /metrics, /health)");
    let accept_errors = AcceptErrors::new(&metrics, "api");
    Ok(async move {
        loop {
            tokio::select! {
                _ = shutdown.wait() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let metrics = metrics.clone();
                        let reload = reload.clone();
                        tokio::spawn(async move {
                            let _ = serve(stream, metrics, reload).await;
                        });
                    }
                    // a pending connection keeps the listener readable:
                    // without a pause, EMFILE would spin this loop
                    Err(e) => accept_errors.handle(&e).await,
                }
            }
        }
    })
}

async fn serve(
    mut stream: TcpStream,
    metrics: Registry,
    reload: ReloadHandle,
) -> std::io::Result<()> {
    let mut req = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let read = async {
        while !req.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut chunk).await?;
            if n == 0 || req.len() + n > MAX_REQUEST {
                return Ok(false);
            }
            req.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(true)
    };
    if !matches!(
        tokio::time::timeout(Duration::from_secs(5), read).await,
        Ok(Ok(true))
    ) {
        return Ok(());
    }
    let line = req.split(|b| *b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    // routing ignores the query string (`/metrics?x=1` is `/metrics`)
    let path = path.split(|b| *b == b'?').next().unwrap_or_default();
    let (status, ctype, body) = match (method, path) {
        (b"GET", b"/metrics") => ("200 OK", "text/plain; version=0.0.4", metrics.render()),
        (b"GET", b"/health") => ("200 OK", "text/plain", "ok\n".to_string()),
        // a reload waits for replaced sinks to drain: no time limit here
        (b"POST", b"/reload") => match crate::topology::reload::http(&reload).await {
            (200, body) => ("200 OK", "text/plain", body),
            (_, body) => ("422 Unprocessable Entity", "text/plain", body),
        },
        (b"GET", _) => ("404 Not Found", "text/plain", "not found\n".to_string()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "method not allowed\n".to_string(),
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    };
    tokio::time::timeout(Duration::from_secs(5), write)
        .await
        .unwrap_or(Ok(()))
}
