//! Byte-stream helpers shared by the forward source and sink.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use crate::protocol::msgpack;

/// A plain or TLS connection.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Reads until `buf` starts with one complete msgpack value and splits it
/// off. Errors are phrased for logs: `what` names the expected message.
pub async fn read_value<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    limit: usize,
    what: &str,
) -> Result<BytesMut, String> {
    loop {
        match msgpack::skip(buf, 0) {
            Ok(end) => return Ok(buf.split_to(end)),
            Err(msgpack::Error::Invalid { reason, .. }) => {
                return Err(format!("{what} is not msgpack: {reason}"))
            }
            Err(msgpack::Error::Incomplete { needed }) if needed > limit => {
                return Err(format!("{what} larger than {limit} bytes"))
            }
            Err(msgpack::Error::Incomplete { .. }) => {
                buf.reserve(4096);
                match rd.read_buf(buf).await {
                    Ok(0) => return Err(format!("connection closed while waiting for {what}")),
                    Ok(_) => {}
                    Err(e) => return Err(format!("reading {what}: {e}")),
                }
            }
        }
    }
}
