//! Datagrams the kernel dropped for one socket, from `/proc/net/udp` or
//! `/proc/net/udp6`.
//!
//! When a socket's receive buffer (SO_RCVBUF) is full, Linux drops the
//! next datagrams and counts them per socket in the last column (`drops`)
//! of its line in those tables; the line is found by the socket's inode
//! (column 10), which `fstat` on the socket gives. Nothing else tells a
//! receiver what it never got.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// Where one socket's drop count is read.
#[derive(Debug, Clone)]
pub struct KernelDrops {
    /// `/proc/net/udp` or `/proc/net/udp6`, by the socket's family.
    table: &'static str,
    /// The socket's inode: the key of its line.
    inode: u64,
}

impl KernelDrops {
    /// The drop count of `socket`, if `/proc` shows the socket's inode.
    pub fn of(socket: &impl AsRawFd, ipv6: bool) -> std::io::Result<Self> {
        let fd = socket.as_raw_fd();
        let inode = std::fs::metadata(format!("/proc/self/fd/{fd}"))?.ino();
        Ok(KernelDrops {
            table: if ipv6 {
                "/proc/net/udp6"
            } else {
                "/proc/net/udp"
            },
            inode,
        })
    }

    /// The kernel's count of datagrams dropped for the socket since it was
    /// made; `None` if the table cannot be read or has no line for it.
    pub fn read(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.table).ok()?;
        drops_of(&text, self.inode)
    }
}

/// The `drops` column of the line whose `inode` column is `inode`.
fn drops_of(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
        if fields.len() < 13 || fields[9].parse::<u64>().ok()? != inode {
            return None;
        }
        fields.last()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 0100007F:8B5C 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 4242 2 0000000000000000 0
  456: 0100007F:14E9 00000000:0000 07 00000000:00034000 00:00000000 00000000  1000        0 917 2 0000000000000000 31337
";

    #[test]
    fn the_drops_column_of_the_sockets_line() {
        assert_eq!(drops_of(TABLE, 917), Some(31337));
        assert_eq!(drops_of(TABLE, 4242), Some(0));
        assert_eq!(drops_of(TABLE, 5), None);
        assert_eq!(drops_of("header only\n", 917), None);
        assert_eq!(drops_of("h\n1: 2 3\n", 917), None);
    }

    #[test]
    fn a_real_socket_has_a_line_with_no_drops() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let d = KernelDrops::of(&s, false).unwrap();
        assert_eq!(d.read(), Some(0));
    }
}
