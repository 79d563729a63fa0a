//! The TCP sockets listening on a port in this network namespace, with the inode and the
//! owner's uid of each: asked of the kernel's sock_diag netlink interface, which walks its
//! table of listening sockets alone (as `ss -lt` does), else read from /proc/net/tcp and
//! tcp6.
//!
//! Why not /proc/net/tcp alone: reading it walks every bucket of the kernel's table of
//! established connections as well, and on a machine with many connections that walk was
//! most of the observer's CPU in a short run (docs/performance.md, the observer's cost).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A socket listening on the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub inode: u64,
    pub uid: u32,
}

/// The listening TCP sockets (IPv4 and IPv6) on `port`.
pub fn listeners(port: u16) -> Vec<Listener> {
    let mut out = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        match diag(family as u8, port) {
            Some(found) => out.extend(found),
            None => out.extend(proc_net(family, port)),
        }
    }
    out.retain(|l| l.inode != 0);
    out.sort_by_key(|l| l.inode);
    out.dedup();
    out
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const TCP_LISTEN: u32 = 10;
/// nlmsghdr (16 bytes), then inet_diag_msg: family, state, timer, retrans (4), the socket
/// id (sport and dport big-endian, the two addresses, interface, cookie: 48), expires,
/// rqueue, wqueue, uid, inode (u32 each).
const HEADER: usize = 16;
const SPORT: usize = HEADER + 4;
const UID: usize = HEADER + 64;
const INODE: usize = HEADER + 68;

/// The listening sockets of one family on `port` through sock_diag (linux/inet_diag.h's
/// inet_diag_req_v2, asking for listening sockets only); None when the kernel does not
/// answer (no netlink in a sandbox), so that /proc is read instead.
fn diag(family: u8, port: u16) -> Option<Vec<Listener>> {
    // SAFETY: socket() returns a new descriptor or -1; a new one is owned here alone.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd is a new, valid descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = Vec::with_capacity(HEADER + 56);
    req.extend_from_slice(&((HEADER + 56) as u32).to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    req.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    req.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, 0, 0]);
    req.extend_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
    // The socket id stays zero: any socket.
    req.resize(HEADER + 56, 0);
    // SAFETY: req is a live buffer of req.len() bytes.
    let sent = unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent != req.len() as isize {
        return None;
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        // SAFETY: buf is a live, writable buffer of buf.len() bytes.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        let mut msgs = &buf[..n as usize];
        while msgs.len() >= HEADER {
            let u32_at = |at: usize| u32::from_ne_bytes(msgs[at..at + 4].try_into().unwrap());
            let len = u32_at(0) as usize;
            let kind = u16::from_ne_bytes([msgs[4], msgs[5]]);
            if len < HEADER || len > msgs.len() {
                return None;
            }
            match kind as i32 {
                libc::NLMSG_DONE => return Some(out),
                libc::NLMSG_ERROR => return None,
                _ if len >= INODE + 4
                    && u16::from_be_bytes([msgs[SPORT], msgs[SPORT + 1]]) == port =>
                {
                    out.push(Listener {
                        inode: u64::from(u32_at(INODE)),
                        uid: u32_at(UID),
                    });
                }
                _ => {}
            }
            msgs = &msgs[(len + 3) & !3..];
        }
    }
}

/// The listening sockets of one family on `port` from /proc/net/tcp (tcp6). The kernel
/// lists a table's listening sockets first, so the reading stops at the first socket that
/// is not listening, before the walk of the established ones.
fn proc_net(family: i32, port: u16) -> Vec<Listener> {
    let table = if family == libc::AF_INET6 {
        "/proc/net/tcp6"
    } else {
        "/proc/net/tcp"
    };
    let Ok(file) = File::open(table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Small reads: each fills only what it asks for, so the last one walks little further.
    for line in BufReader::with_capacity(512, file)
        .lines()
        .skip(1)
        .map_while(Result::ok)
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || f[3] != "0A" {
            break;
        }
        let local_port = f[1]
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
        if local_port == Some(port) {
            if let (Ok(inode), Ok(uid)) = (f[9].parse(), f[7].parse()) {
                out.push(Listener { inode, uid });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Both ways find this process's listening socket, with its inode and uid.
    #[test]
    fn a_listening_socket_is_found_both_ways() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let fd = listener.as_raw_fd();
        let inode = std::fs::metadata(format!("/proc/self/fd/{fd}"))
            .unwrap()
            .ino();
        // SAFETY: geteuid only reads this process's credentials.
        let uid = unsafe { libc::geteuid() };
        let want = vec![Listener { inode, uid }];
        assert_eq!(listeners(port), want);
        assert_eq!(diag(libc::AF_INET as u8, port), Some(want.clone()));
        assert_eq!(proc_net(libc::AF_INET, port), want);
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert_eq!(listeners(closed), vec![]);
    }
}
