//! The read buffer of loadrig's own protocol clients (Redis, HTTP/1.1, MySQL, PostgreSQL,
//! the batch driver, the shared pipelined connection): replies are read into one reused
//! buffer and decoded where they lie, so an operation costs no allocation or copy. Bytes
//! `pos..filled` are read and not yet consumed; ranges handed out index the buffer until the
//! next [`ReadBuf::spare`].

use std::ops::{Index, Range};

pub struct ReadBuf {
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
}

impl ReadBuf {
    pub fn new(capacity: usize) -> ReadBuf {
        ReadBuf {
            buf: vec![0; capacity],
            pos: 0,
            filled: 0,
        }
    }

    /// The bytes read and not consumed yet.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    /// Consume the next `n` unread bytes; returns where they lie.
    pub fn consume(&mut self, n: usize) -> Range<usize> {
        debug_assert!(self.pos + n <= self.filled);
        self.pos += n;
        self.pos - n..self.pos
    }

    /// How many bytes were read into the buffer since it was last emptied or compacted: a
    /// reader compares it before and after a read to tell whether anything arrived.
    pub fn filled(&self) -> usize {
        self.filled
    }

    /// Forget what is left, read or not (a connection replaced).
    pub fn clear(&mut self) {
        (self.pos, self.filled) = (0, 0);
    }

    /// Start again at the front once everything read is consumed, so that the common case
    /// (a reply read whole, then decoded) never moves a byte.
    pub fn rewind_if_drained(&mut self) {
        if self.pos == self.filled {
            self.clear();
        }
    }

    /// Room to read into at the end of what was read: the unread bytes are moved to the
    /// front when the buffer is full, and the buffer doubles when they fill it alone (a
    /// reply longer than the buffer). Ranges handed out before are void after this.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.filled == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.filled, 0);
                (self.filled, self.pos) = (self.filled - self.pos, 0);
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        &mut self.buf[self.filled..]
    }

    /// `n` bytes were read into [`ReadBuf::spare`].
    pub fn advance(&mut self, n: usize) {
        self.filled += n;
    }

    /// Remove `n` unread bytes that begin `at` bytes into them (the headers inside a frame
    /// sent in pieces), moving the rest forward.
    pub fn cut(&mut self, at: usize, n: usize) {
        let start = self.pos + at;
        debug_assert!(start + n <= self.filled);
        self.buf.copy_within(start + n..self.filled, start);
        self.filled -= n;
    }
}

impl Index<Range<usize>> for ReadBuf {
    type Output = [u8];

    fn index(&self, r: Range<usize>) -> &[u8] {
        &self.buf[r]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(b: &mut ReadBuf, bytes: &[u8]) {
        let room = b.spare();
        room[..bytes.len()].copy_from_slice(bytes);
        b.advance(bytes.len());
    }

    #[test]
    fn compacts_when_full_and_doubles_when_one_reply_fills_it() {
        let mut b = ReadBuf::new(4);
        read(&mut b, b"abcd");
        assert_eq!(b.filled(), 4);
        let r = b.consume(3);
        assert_eq!(&b[r], b"abc");
        // Full with one unread byte: moved to the front, three bytes of room.
        assert_eq!(b.spare().len(), 3);
        read(&mut b, b"efg");
        assert_eq!(b.unread(), b"defg");
        // Full of unread bytes: doubled, nothing lost.
        assert_eq!(b.spare().len(), 4);
        read(&mut b, b"h");
        assert_eq!(b.unread(), b"defgh");
        // Two bytes cut from inside the unread ones.
        b.cut(1, 2);
        assert_eq!(b.unread(), b"dgh");
        b.consume(3);
        b.rewind_if_drained();
        assert_eq!((b.filled(), b.unread()), (0, &b""[..]));
    }
}
