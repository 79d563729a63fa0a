//! MySQL's client/server protocol spoken directly, on plain TCP or TLS (rustls, after the
//! protocol's SSLRequest): one socket owned by the session, one write per statement, the reply read in place from one buffer (no
//! connection task, no `Value` per column, no row allocation). Profiling found the gap to
//! sysbench's C client in mysql_async's per-statement state machine and row decoding.
//!
//! On plain TCP the socket is written with `try_write` and read with `try_read` into the
//! [`ReadBuf`] the other own clients use, and a reply's packets are walked synchronously
//! over what was read (one await per read, not per packet): tokio's `read_buf`/`write_all`
//! futures and a future per packet were a third of the session's instructions.
//!
//! - The login is mysql_common's packets (handshake, handshake response, auth switch) with
//!   the capabilities mysql_async asks for; mysql_native_password and caching_sha2_password's
//!   fast path, and its full authentication over TLS (the password in clear, as the
//!   protocol allows on a secure connection), and MariaDB's ed25519. Anything else (the
//!   full exchange over RSA on plain TCP, ...) answers `None`, and the caller connects
//!   through mysql_async.
//! - Statements are prepared once per connection (COM_STMT_PREPARE) and run with
//!   COM_STMT_EXECUTE, arguments typed as mysql_async types them ([`super::param`]);
//!   transactions and setup are text queries (COM_QUERY).
//! - Rows are counted without decoding; a `capture` decodes the first row's values with
//!   mysql_common's binary-value reader, into the text [`super::to_text`] prints.
//!
//! Packet layouts: MySQL Source Code Documentation, "Client/Server Protocol"
//! (dev.mysql.com/doc/dev/mysql-server/latest/PAGE_PROTOCOL.html); MariaDB's metadata
//! caching: mariadb.com/kb/en/result-set-packets.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use mysql_common::constants::{
    CapabilityFlags, ColumnFlags, ColumnType, MariadbCapabilities, StatusFlags,
};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{
    AuthPlugin, AuthSwitchRequest, Column, HandshakePacket, HandshakeResponse, SslRequest,
};
use mysql_common::proto::MySerialize;
use mysql_common::value::{BinValue, ValueDeserializer};

use super::Param;
use crate::stats::connect_phases::{PhaseClock, PhaseTimes};
use crate::targets::readbuf::ReadBuf;
use crate::targets::socket;
use crate::targets::tls::{NetStream, Tls};
use crate::vocab::{ErrorClass, OpError, Outcome, ValueKind};

/// A packet's largest payload; a longer one comes in pieces of this size.
const MAX_PACKET: usize = 0xff_ffff;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_CHANGE_USER: u8 = 0x11;
/// The server's largest packet as mysql_async announces it (its `max_allowed_packet`).
const MAX_ALLOWED: u32 = 64 << 20;

/// What the login needs: mysql_async's options for the same URL.
pub struct Login<'a> {
    pub host: &'a str,
    pub port: u16,
    pub user: &'a str,
    pub password: Option<&'a str>,
    pub db: Option<&'a str>,
    /// Statements run after every login (the isolation level).
    pub setup: &'a [String],
}

/// A result column's type and flags.
type Col = (ColumnType, ColumnFlags);

/// A statement prepared on this connection.
#[derive(Clone)]
pub struct Stmt {
    id: u32,
    params: u16,
    /// Its result columns' types, for reading a captured row: from the prepare, then (as
    /// MariaDB sends them only when they change) from the last execution that sent them.
    columns: Rc<RefCell<Vec<Col>>>,
}

impl Stmt {
    pub fn num_params(&self) -> usize {
        usize::from(self.params)
    }
}

/// One logged-in connection.
pub struct Wire {
    tcp: NetStream,
    /// Received bytes; the next packet starts at the front of the unread ones.
    inbuf: ReadBuf,
    /// The command being written, behind 4 bytes for its header.
    out: Vec<u8>,
    /// `out` holds a COM_STMT_EXECUTE of this statement with this many arguments: the next
    /// one rewrites only the arguments' types and values.
    shaped: Option<(u32, usize)>,
    /// The sequence number of the last packet read.
    seq: u8,
    caps: CapabilityFlags,
    /// MariaDB sends a statement's columns again only when they change.
    cache_metadata: bool,
    nonce: Vec<u8>,
    /// The connection is TLS: caching_sha2_password may take the password in clear.
    secure: bool,
}

/// Open (TLS after the greeting when `tls` is on) and log in, or `None` when the server
/// asks for an authentication this client does not speak; the TCP connect's, the TLS
/// handshake's and the login's times go to `phases`.
pub async fn connect(
    login: &Login<'_>,
    tls: &Tls,
    phases: &PhaseClock,
) -> Result<Option<Wire>, OpError> {
    let started = Instant::now();
    let tcp = socket::connect((login.host, login.port))
        .await
        .map_err(io)?;
    let tcp_time = started.elapsed();
    let mut w = Wire {
        tcp: NetStream::Plain(tcp),
        inbuf: ReadBuf::new(16 << 10),
        out: Vec::with_capacity(4 << 10),
        shaped: None,
        seq: 0,
        caps: CapabilityFlags::empty(),
        cache_metadata: false,
        nonce: Vec::new(),
        secure: tls.is_on(),
    };
    let len = w.packet().await?;
    if w.payload(len)[0] == 0xff {
        return Err(server_error(w.payload(len)));
    }
    let (plugin, version, mariadb, server_tls) = {
        let hs: HandshakePacket = ParseBuf(&w.inbuf.unread()[4..4 + len])
            .parse(())
            .map_err(malformed)?;
        w.nonce = hs.scramble_1_ref().to_vec();
        w.nonce
            .extend_from_slice(hs.scramble_2_ref().unwrap_or_default());
        w.nonce.resize(20, 0);
        w.caps = hs.capabilities() & wanted();
        let is_mariadb = hs.maria_db_server_version_parsed().is_some();
        let version = hs
            .maria_db_server_version_parsed()
            .or_else(|| hs.server_version_parsed())
            .unwrap_or((0, 0, 0));
        // MariaDB clears the first capability bit to say it sends extended ones.
        let mariadb = if is_mariadb
            && !hs
                .capabilities()
                .contains(CapabilityFlags::CLIENT_LONG_PASSWORD)
        {
            hs.mariadb_ext_capabilities() & MariadbCapabilities::MARIADB_CLIENT_CACHE_METADATA
        } else {
            MariadbCapabilities::empty()
        };
        let plugin = match hs.auth_plugin() {
            Some(AuthPlugin::CachingSha2Password) => AuthPlugin::CachingSha2Password,
            _ => AuthPlugin::MysqlNativePassword,
        };
        let server_tls = hs.capabilities().contains(CapabilityFlags::CLIENT_SSL);
        (plugin, version, mariadb, server_tls)
    };
    w.inbuf.consume(4 + len);
    w.cache_metadata = !mariadb.is_empty();
    let tls_time = if tls.is_on() {
        if !server_tls {
            return Err(OpError::new(
                ErrorClass::Connect,
                format!(
                    "{}:{} does not offer TLS: the server has no certificate (have_ssl), or drop ssl-mode",
                    login.host, login.port
                ),
            ));
        }
        let greeted = started.elapsed();
        w = w.start_tls(login, tls, version, mariadb).await?;
        Some(started.elapsed() - greeted)
    } else {
        None
    };
    let data = plugin.gen_data(login.password, &w.nonce);
    let response = HandshakeResponse::new(
        data.as_deref(),
        version,
        Some(login.user.as_bytes()),
        login.db.map(str::as_bytes),
        Some(plugin.borrow()),
        w.caps,
        None,
        MAX_ALLOWED,
    )
    .with_mariadb_ext_capabilities(mariadb);
    w.out.clear();
    w.out.extend_from_slice(&[0; 4]);
    response.serialize(&mut w.out);
    let seq = w.seq.wrapping_add(1);
    w.send(seq).await?;
    if !w.authenticate(login.password).await? {
        return Ok(None);
    }
    phases.record(PhaseTimes {
        tcp: tcp_time,
        tls: tls_time,
        auth: Some(started.elapsed() - tcp_time - tls_time.unwrap_or_default()),
    });
    for statement in login.setup {
        w.query(statement, |_| ()).await?;
    }
    Ok(Some(w))
}

/// The capabilities mysql_async asks for on plain TCP, with CLIENT_FOUND_ROWS.
fn wanted() -> CapabilityFlags {
    CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_DEPRECATE_EOF
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB
        | CapabilityFlags::CLIENT_FOUND_ROWS
}

impl Wire {
    /// SSLRequest, then the TLS handshake on the same socket; the login goes over TLS.
    async fn start_tls(
        mut self,
        login: &Login<'_>,
        tls: &Tls,
        version: (u16, u16, u16),
        mariadb: MariadbCapabilities,
    ) -> Result<Wire, OpError> {
        let shown = format!("{}:{}", login.host, login.port);
        self.caps.insert(CapabilityFlags::CLIENT_SSL);
        // The collation HandshakeResponse picks for this server version.
        let collation = if version >= (5, 5, 3) { 45 } else { 33 };
        self.out.clear();
        self.out.extend_from_slice(&[0; 4]);
        // MariaDB takes the capabilities from this packet: the same as the login's.
        SslRequest::new(self.caps, MAX_ALLOWED, collation)
            .with_mariadb_capabilities(mariadb)
            .serialize(&mut self.out);
        let seq = self.seq.wrapping_add(1);
        self.send(seq).await?;
        self.seq = seq;
        let NetStream::Plain(tcp) = self.tcp else {
            return Err(OpError::new(
                ErrorClass::Protocol,
                "TLS started twice on one connection",
            ));
        };
        let tcp = tls.wrap(login.host, tcp, &shown).await?;
        Ok(Wire { tcp, ..self })
    }

    /// The server's answers after a login or change-user packet, until OK: `false` when it
    /// asks for what this client does not speak.
    async fn authenticate(&mut self, password: Option<&str>) -> Result<bool, OpError> {
        let mut switched = false;
        loop {
            let len = self.packet().await?;
            let p = self.payload(len);
            let reply: Option<Vec<u8>> = match (p[0], p.get(1)) {
                (0x00, _) => {
                    self.inbuf.consume(4 + len);
                    return Ok(true);
                }
                (0xff, _) => return Err(self.failed(len)),
                // caching_sha2_password: the fast path's hash matched (an OK follows).
                (0x01, Some(0x03)) => None,
                // ... or the server wants the password: in clear over TLS; over RSA on
                // plain TCP, which mysql_async does.
                (0x01, Some(0x04)) if self.secure => {
                    let mut clear = password.unwrap_or_default().as_bytes().to_vec();
                    clear.push(0);
                    Some(clear)
                }
                (0x01, Some(0x04)) => return Ok(false),
                (0xfe, _) if !switched && p.len() > 1 => {
                    switched = true;
                    let switch: AuthSwitchRequest = ParseBuf(p).parse(()).map_err(malformed)?;
                    let plugin = match switch.auth_plugin() {
                        AuthPlugin::MysqlNativePassword => AuthPlugin::MysqlNativePassword,
                        AuthPlugin::CachingSha2Password => AuthPlugin::CachingSha2Password,
                        // MariaDB's client_ed25519: the nonce signed with a key from the
                        // password (mysql_common's `client_ed25519`).
                        AuthPlugin::Ed25519 => AuthPlugin::Ed25519,
                        _ => return Ok(false),
                    };
                    self.nonce = switch.plugin_data().to_vec();
                    if plugin == AuthPlugin::Ed25519 {
                        // Its nonce is 32 random bytes without a terminator: a last byte
                        // that happens to be 0 was taken for one and must come back.
                        self.nonce.resize(32, 0);
                    } else if self.nonce.last() == Some(&0) {
                        self.nonce.pop();
                    }
                    let mut data = Vec::new();
                    if let Some(d) = plugin.gen_data(password, &self.nonce) {
                        d.serialize(&mut data);
                    }
                    Some(data)
                }
                _ => return Err(unexpected(p)),
            };
            self.inbuf.consume(4 + len);
            if let Some(data) = reply {
                self.out.clear();
                self.out.extend_from_slice(&[0; 4]);
                self.out.extend_from_slice(&data);
                let seq = self.seq.wrapping_add(1);
                self.send(seq).await?;
            }
        }
    }

    /// COM_CHANGE_USER: log in again on this connection (the server forgets its prepared
    /// statements), then the setup statements again.
    pub async fn change_user(&mut self, login: &Login<'_>) -> Result<(), OpError> {
        let plugin = AuthPlugin::MysqlNativePassword;
        let data = plugin.gen_data(login.password, &self.nonce);
        let mut scramble = Vec::new();
        if let Some(d) = data {
            d.serialize(&mut scramble);
        }
        self.command(COM_CHANGE_USER);
        self.out.extend_from_slice(login.user.as_bytes());
        self.out.push(0);
        self.out.push(scramble.len() as u8);
        self.out.extend_from_slice(&scramble);
        self.out
            .extend_from_slice(login.db.unwrap_or_default().as_bytes());
        self.out.push(0);
        // utf8mb4_general_ci, as in the login.
        self.out.extend_from_slice(&45u16.to_le_bytes());
        self.out.extend_from_slice(b"mysql_native_password\0");
        self.send(0).await?;
        if !self.authenticate(login.password).await? {
            return Err(OpError::new(
                ErrorClass::Auth,
                "the server asks for an authentication the own client does not speak on a change of user (use client=mysql_async)",
            ));
        }
        for statement in login.setup {
            self.query(statement, |_| ()).await?;
        }
        Ok(())
    }

    /// Start a command packet.
    fn command(&mut self, command: u8) {
        self.shaped = None;
        self.out.clear();
        self.out.extend_from_slice(&[0, 0, 0, 0, command]);
    }

    /// Send `out` as one packet (pieces if 16 MiB or longer), the first with number `seq`.
    async fn send(&mut self, mut seq: u8) -> Result<(), OpError> {
        let len = self.out.len() - 4;
        if len < MAX_PACKET {
            self.out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
            self.out[3] = seq;
            return write_all(&mut self.tcp, &self.out).await;
        }
        let mut rest = &self.out[4..];
        loop {
            let n = rest.len().min(MAX_PACKET);
            let mut head = (n as u32).to_le_bytes();
            head[3] = seq;
            write_all(&mut self.tcp, &head).await?;
            write_all(&mut self.tcp, &rest[..n]).await?;
            rest = &rest[n..];
            seq = seq.wrapping_add(1);
            if n < MAX_PACKET {
                return Ok(());
            }
        }
    }

    /// Read what the server has sent (waiting for at least one byte) into `inbuf`.
    async fn fill(&mut self) -> Result<(), OpError> {
        let n = self.tcp.fill(&mut self.inbuf).await.map_err(io)?;
        if n == 0 {
            return Err(OpError::new(
                ErrorClass::Connect,
                "the server closed the connection",
            ));
        }
        Ok(())
    }

    /// Wait for a whole packet at the front of `inbuf` and return its payload's length.
    async fn packet(&mut self) -> Result<usize, OpError> {
        loop {
            if let Some(len) = self.buffered_packet()? {
                return Ok(len);
            }
            self.fill().await?;
        }
    }

    /// The payload length of the packet at the front of the unread bytes if it is all read,
    /// else `None`; see [`whole_packet`].
    fn buffered_packet(&mut self) -> Result<Option<usize>, OpError> {
        whole_packet(&mut self.inbuf, &mut self.seq)
    }

    /// The payload of the whole packet (of `len`) at the front of the unread bytes.
    fn payload(&self, len: usize) -> &[u8] {
        &self.inbuf.unread()[4..4 + len]
    }

    /// Read and drop `n` packets (column definitions).
    async fn skip(&mut self, n: u64) -> Result<(), OpError> {
        for _ in 0..n {
            let len = self.packet().await?;
            self.inbuf.consume(4 + len);
        }
        Ok(())
    }

    /// The ERR packet (of `len`) at the front of `inbuf`, read: the reply ends with it.
    fn failed(&mut self, len: usize) -> OpError {
        let e = server_error(self.payload(len));
        self.inbuf.consume(4 + len);
        e
    }

    fn deprecate_eof(&self) -> bool {
        self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF)
    }

    /// COM_STMT_PREPARE.
    pub async fn prepare(&mut self, sql: &str) -> Result<Stmt, OpError> {
        self.command(COM_STMT_PREPARE);
        self.out.extend_from_slice(sql.as_bytes());
        self.send(0).await?;
        let len = self.packet().await?;
        let p = self.payload(len);
        if p[0] == 0xff {
            return Err(self.failed(len));
        }
        if p[0] != 0x00 || len < 9 {
            return Err(unexpected(p));
        }
        let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
        let columns = u16::from_le_bytes([p[5], p[6]]);
        let params = u16::from_le_bytes([p[7], p[8]]);
        self.inbuf.consume(4 + len);
        let eof = u64::from(!self.deprecate_eof());
        if params > 0 {
            self.skip(u64::from(params) + eof).await?;
        }
        let mut types = Vec::with_capacity(usize::from(columns));
        for _ in 0..columns {
            let len = self.packet().await?;
            types.push(column(self.payload(len))?);
            self.inbuf.consume(4 + len);
        }
        if columns > 0 {
            self.skip(eof).await?;
        }
        Ok(Stmt {
            id,
            params,
            columns: Rc::new(RefCell::new(types)),
        })
    }

    /// COM_STMT_EXECUTE with `args` (bound in the order of `order`, else as given), typed by
    /// `kinds`; rows counted, the first one's values as text when `capture`.
    pub async fn execute<A: AsRef<[u8]>>(
        &mut self,
        st: &Stmt,
        args: &[A],
        kinds: Option<&[ValueKind]>,
        order: Option<&[usize]>,
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let n = order.map_or(args.len(), <[usize]>::len);
        // The header, the NULL bitmap (no NULLs) and room for the types, once per shape.
        let types = 4 + 1 + 4 + 5 + n.div_ceil(8) + 1;
        if self.shaped == Some((st.id, n)) {
            self.out.truncate(types + 2 * n);
        } else {
            self.command(COM_STMT_EXECUTE);
            self.out.extend_from_slice(&st.id.to_le_bytes());
            // No cursor; one iteration.
            self.out.extend_from_slice(&[0, 1, 0, 0, 0]);
            if n > 0 {
                self.out.resize(types - 1, 0);
                // The types follow.
                self.out.push(1);
                self.out.resize(types + 2 * n, 0);
            }
            self.shaped = Some((st.id, n));
        }
        for j in 0..n {
            let i = order.map_or(j, |o| o[j]);
            let kind = kinds.map_or(ValueKind::Bytes, |k| k[i]);
            let (t, unsigned) = encode(&mut self.out, Param::of(args[i].as_ref(), kind));
            self.out[types + 2 * j] = t as u8;
            self.out[types + 2 * j + 1] = if unsigned { 0x80 } else { 0 };
        }
        self.send(0).await?;
        self.results(Some(&st.columns), capture, &mut |_| ()).await
    }

    /// COM_QUERY, rows handed to `row` (text protocol).
    pub async fn query(&mut self, sql: &str, mut row: impl FnMut(&[u8])) -> Result<(), OpError> {
        self.command(COM_QUERY);
        self.out.extend_from_slice(sql.as_bytes());
        self.send(0).await?;
        self.results(None, false, &mut row).await.map(|_| ())
    }

    /// Every result of a reply (several while the server says more exist); the outcome is
    /// the first's, as mysql_async's iterator gives it. `binary`: binary rows of a
    /// statement with these columns (None: text rows, each handed to `row`).
    async fn results(
        &mut self,
        binary: Option<&RefCell<Vec<Col>>>,
        capture: bool,
        row: &mut dyn FnMut(&[u8]),
    ) -> Result<Outcome, OpError> {
        let mut walk = Walk {
            phase: Phase::Head,
            binary,
            capture,
            first: None,
            want: false,
            keep: false,
            out: Outcome::default(),
            types: Vec::new(),
            unread: None,
        };
        loop {
            if let Some(out) = self.walk(&mut walk, row)? {
                return Ok(out);
            }
            self.fill().await?;
        }
    }

    /// Take the reply's packets that are read whole; the outcome once its last is taken.
    fn walk(
        &mut self,
        w: &mut Walk<'_>,
        row: &mut dyn FnMut(&[u8]),
    ) -> Result<Option<Outcome>, OpError> {
        loop {
            if let Phase::Columns {
                left: 0,
                eof: false,
            } = w.phase
            {
                if let Some(columns) = w.binary.filter(|_| self.cache_metadata) {
                    columns.borrow_mut().clone_from(&w.types);
                }
                w.phase = Phase::Rows;
            }
            let Some(len) = self.buffered_packet()? else {
                return Ok(None);
            };
            let end = match w.phase {
                Phase::Head => self.head(w, len)?,
                Phase::Columns { left, eof } => {
                    if left > 0 {
                        if w.keep {
                            w.types.push(column(self.payload(len))?);
                        }
                        w.phase = Phase::Columns {
                            left: left - 1,
                            eof,
                        };
                    } else {
                        w.phase = Phase::Columns { left, eof: false };
                    }
                    self.inbuf.consume(4 + len);
                    None
                }
                Phase::Rows => self.row(w, len, row)?,
            };
            if let Some((out, status)) = end {
                w.first.get_or_insert(out);
                if !status.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS) {
                    return Ok(Some(w.first.take().unwrap_or_default()));
                }
                w.phase = Phase::Head;
            }
        }
    }

    /// A result's first packet: OK (the result), ERR, or the column count of a result set.
    fn head(&mut self, w: &mut Walk<'_>, len: usize) -> Result<End, OpError> {
        let p = self.payload(len);
        match p[0] {
            0x00 => {
                let (affected, status) = ok_packet(p)?;
                self.inbuf.consume(4 + len);
                let out = crate::targets::sql::affected(affected, w.capture);
                return Ok(Some((out, status)));
            }
            0xff => return Err(self.failed(len)),
            _ => {}
        }
        let mut at = 0;
        let count = lenenc(p, &mut at)?;
        // MariaDB with metadata caching says whether the column definitions follow.
        let metadata = !self.cache_metadata || p.get(at).is_some_and(|&m| m != 0);
        self.inbuf.consume(4 + len);
        w.want = w.capture && w.first.is_none();
        w.out = Outcome::default();
        w.types.clear();
        w.unread = None;
        if metadata {
            w.keep = w.binary.is_some() && (w.want || self.cache_metadata);
            let eof = !self.deprecate_eof();
            w.phase = Phase::Columns { left: count, eof };
        } else {
            if let Some(columns) = w.binary.filter(|_| w.want) {
                w.types.clone_from(&columns.borrow());
            }
            w.phase = Phase::Rows;
        }
        Ok(None)
    }

    /// A packet of a result set's rows: a row, or the packet that ends them.
    fn row(
        &mut self,
        w: &mut Walk<'_>,
        len: usize,
        row: &mut dyn FnMut(&[u8]),
    ) -> Result<End, OpError> {
        let p = self.payload(len);
        match p[0] {
            0xfe if len < MAX_PACKET => {
                let status = end_status(p, self.deprecate_eof())?;
                self.inbuf.consume(4 + len);
                return match w.unread.take() {
                    Some(e) => Err(e),
                    None => Ok(Some((std::mem::take(&mut w.out), status))),
                };
            }
            // Neither a binary row (0x00) nor a text one (a length) starts with 0xff.
            0xff => return Err(self.failed(len)),
            _ => {}
        }
        if w.binary.is_none() {
            row(p);
        } else if w.want && w.out.rows == 0 {
            match binary_row(p, &w.types) {
                Ok(values) => w.out.captured = values,
                Err(e) => w.unread = Some(e),
            }
        }
        w.out.rows += 1;
        self.inbuf.consume(4 + len);
        Ok(None)
    }
}

/// Where the walk through a reply is.
enum Phase {
    /// The next packet begins a result: OK, ERR, or a result set's column count.
    Head,
    /// `left` column definitions to come, then an EOF packet when `eof`.
    Columns {
        left: u64,
        eof: bool,
    },
    Rows,
}

/// A reply being walked: what [`Wire::results`] was asked for and what was read so far.
struct Walk<'a> {
    phase: Phase,
    /// The statement's columns (binary rows), or `None` (text rows).
    binary: Option<&'a RefCell<Vec<Col>>>,
    capture: bool,
    /// The first result's outcome.
    first: Option<Outcome>,
    /// This result set's first row is captured.
    want: bool,
    /// This result set's column types are kept.
    keep: bool,
    out: Outcome,
    types: Vec<Col>,
    /// A row that does not read is the operation's error once the reply is read.
    unread: Option<OpError>,
}

/// A result's outcome and status once its last packet is read.
type End = Option<(Outcome, StatusFlags)>;

/// One column definition's type and flags.
fn column(p: &[u8]) -> Result<Col, OpError> {
    let column: Column = ParseBuf(p).parse(()).map_err(malformed)?;
    Ok((column.column_type(), column.flags()))
}

/// The payload length of the packet at the front of `inbuf`'s unread bytes if it is all
/// read (the pieces of a payload of 16 MiB or more joined in place, their headers cut), else
/// `None`; its (last piece's) sequence number goes to `seq`. The payload is then
/// `inbuf.unread()[4..4 + len]`.
fn whole_packet(inbuf: &mut ReadBuf, seq: &mut u8) -> Result<Option<usize>, OpError> {
    let read = inbuf.unread();
    let (mut at, mut total, mut pieces) = (0, 0, 0);
    loop {
        let Some(h) = read.get(at..at + 4) else {
            return Ok(None);
        };
        let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        if read.len() < at + 4 + n {
            return Ok(None);
        }
        *seq = h[3];
        total += n;
        pieces += 1;
        if n < MAX_PACKET {
            break;
        }
        at += 4 + n;
    }
    // Piece k's header lies at 4 + k * MAX_PACKET once the k - 1 before it are cut.
    for k in 1..pieces {
        inbuf.cut(4 + k * MAX_PACKET, 4);
    }
    if total == 0 {
        return Err(OpError::new(ErrorClass::Protocol, "an empty packet"));
    }
    Ok(Some(total))
}

/// Write all of `bytes`: on plain TCP with `try_write`, which for a statement is one system
/// call and no future, waiting for writability only when the socket's buffer is full.
async fn write_all(tcp: &mut NetStream, bytes: &[u8]) -> Result<(), OpError> {
    tcp.send_all(bytes).await.map_err(io)
}

/// The first column of a text row (NULL as empty).
pub fn first_text(row: &[u8]) -> String {
    let mut at = 0;
    match lenenc(row, &mut at) {
        Ok(len) => row
            .get(at..at + len as usize)
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Append one argument's value in the binary protocol; its type and whether unsigned.
fn encode(out: &mut Vec<u8>, param: Param<'_>) -> (ColumnType, bool) {
    match param {
        Param::Int(i) => {
            out.extend_from_slice(&i.to_le_bytes());
            (ColumnType::MYSQL_TYPE_LONGLONG, false)
        }
        Param::UInt(u) => {
            out.extend_from_slice(&u.to_le_bytes());
            (ColumnType::MYSQL_TYPE_LONGLONG, true)
        }
        Param::Double(d) => {
            out.extend_from_slice(&d.to_le_bytes());
            (ColumnType::MYSQL_TYPE_DOUBLE, false)
        }
        Param::Bytes(b) => {
            put_lenenc(out, b.len() as u64);
            out.extend_from_slice(b);
            (ColumnType::MYSQL_TYPE_VAR_STRING, false)
        }
    }
}

fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfa => out.push(n as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// A length-encoded integer at `*at`, moving past it.
fn lenenc(p: &[u8], at: &mut usize) -> Result<u64, OpError> {
    let short = || OpError::new(ErrorClass::Protocol, "a packet ends inside a number");
    let first = *p.get(*at).ok_or_else(short)?;
    let width = match first {
        0..=0xfa => {
            *at += 1;
            return Ok(u64::from(first));
        }
        0xfc => 2,
        0xfd => 3,
        0xfe => 8,
        _ => return Err(unexpected(p)),
    };
    let bytes = p.get(*at + 1..*at + 1 + width).ok_or_else(short)?;
    *at += 1 + width;
    Ok(bytes
        .iter()
        .rev()
        .fold(0u64, |n, &b| (n << 8) | u64::from(b)))
}

/// An OK packet's rows affected and status.
fn ok_packet(p: &[u8]) -> Result<(u64, StatusFlags), OpError> {
    let mut at = 1;
    let affected = lenenc(p, &mut at)?;
    lenenc(p, &mut at)?; // the last insert id
    let status = p
        .get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]));
    Ok((affected, StatusFlags::from_bits_truncate(status)))
}

/// The status in the packet that ends a result set's rows: an OK packet headed 0xfe, or
/// (without CLIENT_DEPRECATE_EOF) an EOF packet of warnings then status.
fn end_status(p: &[u8], deprecate_eof: bool) -> Result<StatusFlags, OpError> {
    if deprecate_eof {
        return ok_packet(p).map(|(_, s)| s);
    }
    let status = p.get(3..5).map_or(0, |s| u16::from_le_bytes([s[0], s[1]]));
    Ok(StatusFlags::from_bits_truncate(status))
}

/// A binary row's values as text (NULL as empty).
fn binary_row(p: &[u8], types: &[Col]) -> Result<Vec<Vec<u8>>, OpError> {
    // The NULL bitmap of a binary row starts at bit 2.
    let bitmap_len = (types.len() + 9) / 8;
    let bitmap = p.get(1..1 + bitmap_len).ok_or_else(|| unexpected(p))?;
    let mut values = ParseBuf(&p[1 + bitmap_len..]);
    let mut row = Vec::with_capacity(types.len());
    for (i, &(t, flags)) in types.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            row.push(Vec::new());
            continue;
        }
        let value: ValueDeserializer<BinValue> = values.parse((t, flags)).map_err(malformed)?;
        row.push(super::to_text(&value.0));
    }
    Ok(row)
}

/// An ERR packet as the operation's error, classed as [`super::classify`] classes the
/// server's errors.
fn server_error(p: &[u8]) -> OpError {
    let code = p.get(1..3).map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let (state, message) = match p.get(3..9) {
        Some([b'#', state @ ..]) => (String::from_utf8_lossy(state), &p[9..]),
        _ => ("HY000".into(), p.get(3..).unwrap_or_default()),
    };
    OpError::new(
        super::server_class(code, &state),
        format!("{code} ({state}): {}", String::from_utf8_lossy(message)),
    )
}

fn io(e: std::io::Error) -> OpError {
    OpError::new(ErrorClass::Connect, format!("I/O error: {e}"))
}

fn malformed(e: std::io::Error) -> OpError {
    OpError::new(ErrorClass::Protocol, format!("malformed packet: {e}"))
}

fn unexpected(p: &[u8]) -> OpError {
    OpError::new(
        ErrorClass::Protocol,
        format!(
            "unexpected packet (first byte {:#04x})",
            p.first().unwrap_or(&0)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_encoded_integers_round_trip() {
        for n in [
            0,
            250,
            251,
            0xffff,
            0x1_0000,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, n);
            let mut at = 0;
            assert_eq!(lenenc(&out, &mut at).unwrap(), n);
            assert_eq!(at, out.len());
        }
        assert!(lenenc(&[0xfc, 1], &mut 0).is_err(), "cut short");
        assert!(lenenc(&[0xff], &mut 0).is_err());
    }

    #[test]
    fn server_errors_are_classed_by_code_and_state() {
        let err = |code: u16, state: &str| {
            let mut p = vec![0xff];
            p.extend_from_slice(&code.to_le_bytes());
            p.push(b'#');
            p.extend_from_slice(state.as_bytes());
            p.extend_from_slice(b"the message");
            server_error(&p)
        };
        assert_eq!(err(1213, "40001").class, ErrorClass::Deadlock);
        assert_eq!(err(1205, "HY000").class, ErrorClass::Timeout);
        assert_eq!(err(1062, "23000").class, ErrorClass::Constraint);
        assert_eq!(err(1045, "28000").class, ErrorClass::Auth);
        assert_eq!(err(1927, "70100").class, ErrorClass::Connect);
        assert_eq!(err(1064, "42000").class, ErrorClass::Other);
        assert_eq!(err(1062, "23000").message, "1062 (23000): the message");
        // Before the login completes, an error has no SQLSTATE.
        let e = server_error(&[0xff, 0x15, 0x04, b'n', b'o']);
        assert_eq!(
            (e.class, e.message.as_str()),
            (ErrorClass::Auth, "1045 (HY000): no")
        );
    }

    /// `bytes` as read from the socket, in reads of at most `chunk` bytes, into a buffer
    /// smaller than the packets; every whole packet's (payload length, sequence number).
    fn packets(bytes: &[u8], chunk: usize) -> Vec<(usize, u8, Vec<u8>)> {
        let (mut inbuf, mut seq, mut got) = (ReadBuf::new(1024), 0, Vec::new());
        for piece in bytes.chunks(chunk) {
            let mut piece = piece;
            while !piece.is_empty() {
                let room = inbuf.spare();
                let n = room.len().min(piece.len());
                room[..n].copy_from_slice(&piece[..n]);
                inbuf.advance(n);
                piece = &piece[n..];
                while let Some(len) = whole_packet(&mut inbuf, &mut seq).unwrap() {
                    let payload = inbuf.unread()[4..4 + len].to_vec();
                    inbuf.consume(4 + len);
                    got.push((len, seq, payload));
                }
            }
        }
        assert!(inbuf.unread().is_empty());
        got
    }

    #[test]
    fn packets_in_pieces_are_joined_whatever_the_reads() {
        // A 3-byte packet, a payload of MAX_PACKET + 5 (two pieces, numbered 1 and 2), one of
        // exactly MAX_PACKET (a second, empty piece), then one of 1 byte.
        let mut bytes = vec![3, 0, 0, 0, b'a', b'b', b'c'];
        let big: Vec<u8> = (0..MAX_PACKET + 5).map(|i| (i % 251) as u8).collect();
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 1]);
        bytes.extend_from_slice(&big[..MAX_PACKET]);
        bytes.extend_from_slice(&[5, 0, 0, 2]);
        bytes.extend_from_slice(&big[MAX_PACKET..]);
        bytes.extend_from_slice(&[0xff, 0xff, 0xff, 3]);
        bytes.extend_from_slice(&big[..MAX_PACKET]);
        bytes.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 5, b'z']);
        for chunk in [bytes.len(), 70_001] {
            let got = packets(&bytes, chunk);
            let shape: Vec<(usize, u8)> = got.iter().map(|g| (g.0, g.1)).collect();
            assert_eq!(
                shape,
                [(3, 0), (MAX_PACKET + 5, 2), (MAX_PACKET, 4), (1, 5)],
                "reads of {chunk}"
            );
            assert_eq!(got[1].2, big, "reads of {chunk}");
            assert_eq!(got[2].2, big[..MAX_PACKET], "reads of {chunk}");
        }
        let mut inbuf = ReadBuf::new(16);
        inbuf.spare()[..4].copy_from_slice(&[0, 0, 0, 0]);
        inbuf.advance(4);
        assert!(whole_packet(&mut inbuf, &mut 0).is_err(), "an empty packet");
    }

    #[test]
    fn a_binary_row_reads_as_text() {
        let types = [
            (ColumnType::MYSQL_TYPE_LONGLONG, ColumnFlags::empty()),
            (ColumnType::MYSQL_TYPE_VAR_STRING, ColumnFlags::empty()),
            (ColumnType::MYSQL_TYPE_LONG, ColumnFlags::empty()),
        ];
        // Header, NULL bitmap (the third column: bit 4), -5, "ab".
        let mut p = vec![0, 0b1_0000];
        p.extend_from_slice(&(-5i64).to_le_bytes());
        p.extend_from_slice(&[2, b'a', b'b']);
        let row = binary_row(&p, &types).unwrap();
        assert_eq!(row, [b"-5".to_vec(), b"ab".to_vec(), Vec::new()]);
        assert!(binary_row(&p[..5], &types).is_err(), "cut short");
    }
}
