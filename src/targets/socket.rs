//! The plain-TCP reads and writes of loadrig's own protocol clients (the batch driver,
//! MySQL's and PostgreSQL's clients): `try_read` and `try_write` first, which for a request
//! or a reply is one system call and no future, waiting on the socket only when it has
//! nothing to read or no room to write.

use std::future::poll_fn;
use std::io;

use tokio::io::Interest;
use tokio::net::{TcpStream, ToSocketAddrs};

use super::readbuf::ReadBuf;

/// A TCP connection to `addr` with Nagle's algorithm off, as every target opens them: its
/// requests are small and each waits for its reply, so a write held back until the
/// previous segment's ACK waits for the server's delayed ACK (40 ms on Linux). Over TLS
/// that hit the first request after the handshake's last flight: an LDAP bind took 42 ms.
pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

/// Read what `tcp` holds into the room at the end of `buf` (waiting for at least one byte):
/// the bytes read, 0 when the peer closed. A read that did not fill the room drained the
/// socket, and a server sends more only after the next request (or on its own schedule
/// mid-reply), so the socket's readiness is forgotten then: the next read waits for the
/// poller's edge instead of making a system call that finds nothing.
pub async fn fill(tcp: &TcpStream, buf: &mut ReadBuf) -> io::Result<usize> {
    buf.rewind_if_drained();
    loop {
        let spare = buf.spare();
        let room = spare.len();
        match tcp.try_read(spare) {
            Ok(n) => {
                buf.advance(n);
                if n > 0 && n < room {
                    let _ = tcp.try_io(Interest::READABLE, || {
                        Err::<(), _>(io::ErrorKind::WouldBlock.into())
                    });
                }
                return Ok(n);
            }
            // poll_read_ready keeps the waker in the socket's reader slot: cheaper than
            // readable()'s future, which joins a list of waiters.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                poll_fn(|cx| tcp.poll_read_ready(cx)).await?
            }
            Err(e) => return Err(e),
        }
    }
}

/// Write all of `bytes`, waiting for room only when the socket's buffer is full.
pub async fn write_all(tcp: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match tcp.try_write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                poll_fn(|cx| tcp.poll_write_ready(cx)).await?
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_opened_without_nagle() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let tcp = rt.block_on(connect(addr)).unwrap();
        assert!(tcp.nodelay().unwrap());
    }
}
