//! Load writers.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;

use crate::protocol::forward::{write_message_entry, write_packed_forward};

/// One PackedForward frame of `records` entries, each
/// `[time, {"message": <size bytes>}]`.
pub fn packed_frame(tag: &str, records: usize, size: usize) -> Vec<u8> {
    let mut entries = Vec::with_capacity(records * (size + 24));
    let mut message = vec![b'x'; size];
    for i in 0..records {
        // a distinct prefix per record, so lines are not all identical
        let digits = format!("{i:08}");
        let n = digits.len().min(size);
        message[..n].copy_from_slice(&digits.as_bytes()[digits.len() - n..]);
        write_message_entry(&mut entries, 1_700_000_000, i as u32, &message);
    }
    let mut frame = Vec::with_capacity(entries.len() + 64);
    write_packed_forward(&mut frame, tag, &entries, records, None);
    frame
}

/// Connects to `addr` (over TLS if `ca` is given) and writes `times`
/// frames, taking `frames` in turn.
pub fn send_frames(
    addr: SocketAddr,
    frames: &[&[u8]],
    times: usize,
    ca: Option<&Path>,
) -> Result<(), String> {
    let tcp = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let send = |out: &mut dyn Write| -> std::io::Result<()> {
        for frame in frames.iter().cycle().take(times) {
            out.write_all(frame)?;
        }
        out.flush()
    };
    let mut tcp = match ca {
        None => {
            let mut tcp = tcp;
            send(&mut tcp).map_err(|e| format!("send: {e}"))?;
            tcp
        }
        Some(ca) => {
            let mut tls = tls_client(tcp, ca)?;
            send(&mut tls).map_err(|e| format!("send: {e}"))?;
            tls.conn.send_close_notify();
            tls.flush().map_err(|e| format!("send: {e}"))?;
            tls.sock
        }
    };
    // a clean close: the server reads everything before it sees the end
    let _ = tcp.shutdown(std::net::Shutdown::Write);
    let _ = std::io::copy(&mut tcp, &mut std::io::sink());
    Ok(())
}

pub fn tls_client(
    tcp: TcpStream,
    ca: &Path,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, String> {
    let pem = std::fs::read(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").map_err(|e| e.to_string())?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}
