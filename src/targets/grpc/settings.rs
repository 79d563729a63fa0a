//! The server's side of HTTP/2's settings exchange, read off the bytes hyper reads: hyper
//! neither waits for it nor tells the stream limit the server set, and the gRPC target
//! reports both as the HTTP/2 target does (the connection's `http2` phase and its
//! SETTINGS_MAX_CONCURRENT_STREAMS). The frames are only looked at, never changed; once the
//! server's SETTINGS and its acknowledgement of the client's have passed, bytes go through
//! untouched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// HTTP/2's frame header: length (3 bytes), type, flags, stream (4 bytes).
const HEADER: usize = 9;
const SETTINGS: u8 = 0x4;
const ACK: u8 = 0x1;
const MAX_CONCURRENT_STREAMS: u16 = 0x3;

/// What the server's SETTINGS said: its stream limit (`None`: it set none).
pub type Allowed = Option<u64>;

/// The frames read so far, until the exchange is over.
struct Frames {
    header: [u8; HEADER],
    have: usize,
    /// Bytes of the current frame's payload still to come.
    left: usize,
    /// The payload of the server's SETTINGS as it arrives.
    settings: Option<Vec<u8>>,
    allowed: Option<Allowed>,
    acked: bool,
    done: Option<oneshot::Sender<Allowed>>,
}

impl Frames {
    /// Look at `bytes`, the next ones the server sent; whether the exchange is over.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.have < HEADER {
                let n = (HEADER - self.have).min(bytes.len());
                self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                bytes = &bytes[n..];
                if self.have == HEADER {
                    self.start_frame();
                }
            } else {
                let n = self.left.min(bytes.len());
                if let Some(payload) = &mut self.settings {
                    payload.extend_from_slice(&bytes[..n]);
                }
                self.left -= n;
                bytes = &bytes[n..];
            }
            if self.have == HEADER && self.left == 0 {
                self.end_frame();
            }
            if self.allowed.is_some() && self.acked {
                if let (Some(done), Some(allowed)) = (self.done.take(), self.allowed) {
                    let _ = done.send(allowed);
                }
                return true;
            }
        }
        false
    }

    fn start_frame(&mut self) {
        let h = &self.header;
        self.left = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let settings = h[3] == SETTINGS;
        if settings && h[4] & ACK != 0 {
            self.acked = true;
        } else if settings && self.allowed.is_none() {
            self.settings = Some(Vec::with_capacity(self.left));
        }
    }

    fn end_frame(&mut self) {
        if let Some(payload) = self.settings.take() {
            let limit = payload.chunks_exact(6).find_map(|p| {
                (u16::from_be_bytes([p[0], p[1]]) == MAX_CONCURRENT_STREAMS)
                    .then(|| u64::from(u32::from_be_bytes([p[2], p[3], p[4], p[5]])))
            });
            self.allowed = Some(limit);
        }
        self.have = 0;
    }
}

/// A connection's socket whose first frames from the server are watched.
pub struct Watched<IO> {
    io: IO,
    frames: Option<Box<Frames>>,
}

/// `io` watched; the receiver hears the server's stream limit once the server has sent its
/// SETTINGS and acknowledged the client's, and is dropped unanswered if the connection
/// ends first.
pub fn watch<IO>(io: IO) -> (Watched<IO>, oneshot::Receiver<Allowed>) {
    let (done, heard) = oneshot::channel();
    let frames = Frames {
        header: [0; HEADER],
        have: 0,
        left: 0,
        settings: None,
        allowed: None,
        acked: false,
        done: Some(done),
    };
    let watched = Watched {
        io,
        frames: Some(Box::new(frames)),
    };
    (watched, heard)
}

impl<IO: AsyncRead + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Some(frames) = &mut this.frames {
            if frames.feed(&buf.filled()[before..]) {
                this.frames = None;
            }
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, flags, 0, 0, 0, 0]);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn hears_the_limit_once_settings_and_their_ack_passed() {
        let (mut watched, _heard) = watch(());
        let mut f = *watched.frames.take().unwrap();
        // Window size 65535, then max concurrent streams 100; a WINDOW_UPDATE; the ACK.
        let mut bytes = frame(SETTINGS, 0, &[0, 4, 0, 0, 255, 255, 0, 3, 0, 0, 0, 100]);
        bytes.extend(frame(0x8, 0, &[0, 0, 1, 0]));
        bytes.extend(frame(SETTINGS, ACK, &[]));
        bytes.extend(frame(0x6, 0, &[0; 8]));
        // Fed a byte at a time, as reads may cut anywhere.
        let (tx, rx) = oneshot::channel();
        f.done = Some(tx);
        let over: Vec<bool> = bytes[..bytes.len() - 17]
            .iter()
            .map(|b| f.feed(&[*b]))
            .collect();
        assert_eq!(over.iter().filter(|o| **o).count(), 1);
        assert!(*over.last().unwrap());
        assert_eq!(rx.blocking_recv(), Ok(Some(100)));

        // A server that sets no limit.
        let (tx, rx) = oneshot::channel();
        f = Frames {
            done: Some(tx),
            allowed: None,
            acked: false,
            have: 0,
            ..f
        };
        let mut bytes = frame(SETTINGS, 0, &[0, 4, 0, 0, 255, 255]);
        bytes.extend(frame(SETTINGS, ACK, &[]));
        assert!(f.feed(&bytes));
        assert_eq!(rx.blocking_recv(), Ok(None));
    }
}
