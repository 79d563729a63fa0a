//! `ldap://HOST[:PORT]?bind_dn=DN&password=PW&base=DN`: an LDAP directory (ldap3), one
//! connection per client. TLS (rustls): `ldaps://HOST[:PORT]` (port 636 by default), or
//! StartTLS on the plain port with `starttls=true`; options `ca=PATH`, `insecure=true`
//! (see [`super::tls`]).
//!
//! Options come from the URL query or from workload parameters of the same name (a
//! parameter's `${VAR}` is read from the environment, so a password need not appear in the
//! workload). With `bind_dn`, every session binds (simple bind) as it connects; without,
//! it stays anonymous. Option values are taken literally (no percent-decoding).
//!
//! - kv operations use entries `cn=KEY,ou=loadrig,BASE` (the key DN-escaped), of object
//!   class `inetOrgPerson` with `sn: loadrig` and the value, any bytes, in the attribute
//!   `audio` (octet-string syntax, so binary values round-trip). put = add, or replace the
//!   value if the entry exists; get = base search (rows 1, or 0 when there is no such
//!   entry); update = modify-replace (rows 0 when absent); delete (rows 0 when absent).
//!   The setup creates `ou=loadrig,BASE` if it is missing (a session that may not write
//!   there is left to fail on its writes).
//! - native `ldap.search` (rows = entries returned; with `capture`, the first entry's DN,
//!   then the first value of each listed attribute in `attrs` order, empty when absent),
//!   `ldap.bind` (the session then runs as that DN), `ldap.add`, `ldap.modify` (replace)
//!   and `ldap.delete`; a missing entry (noSuchObject, 32) gives rows 0 for search,
//!   modify and delete, and is an error for add (missing parent).
//! - `authenticate` binds again with the session's credentials (anonymous without
//!   `bind_dn`); `connect` opens a connection and binds.
//! - `load` adds a batch's entries 16 at a time on the one connection (LDAP has no bulk
//!   add, but the protocol lets several requests be outstanding).
//! - `--pipeline P`: P streams share each connection through clones of ldap3's handle,
//!   which multiplexes requests by message id (no stream waits for another's reply). Binds,
//!   `authenticate` and `tx` are refused with it: they change the connection's state.
//! - `cleanup` deletes the `ou=loadrig,BASE` subtree, deepest entries first, and returns
//!   the number of entries removed (the `ou` included); nothing outside it is touched.
//! - The server version: `vendorName`/`vendorVersion` from the root DSE when present,
//!   else "OpenLDAP" for an `OpenLDAProotDSE`, with the highest `supportedLDAPVersion`.
//! - `tx` is an LDAP transaction (RFC 5805, OpenLDAP 2.5+ with back-mdb): Start
//!   Transaction, each add, modify and delete step sent with the transaction's control (the
//!   server applies them together at the end, or none), End Transaction to commit or abort.
//!   Searches run outside it: they see what is committed, not the transaction's own changes.
//!
//! Errors: result codes 49 (invalidCredentials), 50 (insufficientAccessRights), 48, 8 and
//! 13 → `auth`; 3 (timeLimitExceeded) → `timeout`; 68 (entryAlreadyExists), 19 and 20 →
//! `constraint`; 2 → `protocol`; others, 51 (busy), 52 (unavailable) and 53
//! (unwillingToPerform) among them → `other`, with the code's name in the message. A lost
//! connection or an I/O failure → `connect` (the engine reconnects). Connecting and the
//! first bind must finish within 5 s.

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ldap3::controls::TxnSpec;
use ldap3::exop::{EndTxn, StartTxn};
use ldap3::{
    Ldap as Conn, LdapConnAsync, LdapConnSettings, LdapError, LdapResult, Mod, Scope, StdStream,
};
use tokio::task::JoinHandle;

use super::socket;
use super::tls::Tls;
use super::{Session, Target, TargetUrl};
use crate::error::InputError;
use crate::stats::connect_phases::{ConnectPhases, PhaseClock, PhaseTimes};
use crate::vocab::{self, ErrorClass, Family, LdapOp, NativeOp, Op, OpError, Outcome, ValueKind};

/// How long connecting and the first bind may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Requests kept outstanding on one connection by `load` and `cleanup`.
const IN_FLIGHT: usize = 16;
/// The object class and attributes of a kv entry.
const CLASS: &str = "inetOrgPerson";
const VALUE_ATTR: &str = "audio";

struct Directory {
    /// `ldap://HOST:PORT` or `ldaps://HOST:PORT` for ldap3 (no query, no secrets).
    url: String,
    tls: Tls,
    starttls: bool,
    /// HOST:PORT, for messages.
    shown: String,
    /// HOST:PORT with the scheme's port when the URL has none, to connect to.
    addr: String,
    bind_dn: Option<String>,
    password: String,
    /// `ou=loadrig,BASE`, when a base was given.
    namespace: Option<String>,
    /// Every connection's TCP, TLS (StartTLS's request included) and bind times.
    phases: PhaseClock,
}

pub struct Ldap {
    dir: Arc<Directory>,
}

impl Ldap {
    pub fn open(
        url: &TargetUrl,
        params: &BTreeMap<String, toml::Value>,
    ) -> Result<Ldap, InputError> {
        url.check_options(&["bind_dn", "password", "base", "starttls", "ca", "insecure"])?;
        let starttls = match url.options.get("starttls").map(String::as_str) {
            None | Some("false") => false,
            Some("true") if url.scheme == "ldap" => true,
            Some("true") => {
                return Err(InputError::new(
                    "starttls=true is for ldap:// URLs; ldaps:// is TLS from the first byte",
                ))
            }
            Some(other) => {
                return Err(InputError::new(format!(
                    "starttls={other}: expected true or false"
                )))
            }
        };
        let tls = Tls::from_url(url, starttls || url.scheme == "ldaps")?;
        let authority = url.location.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || authority.contains('@') {
            return Err(InputError::new(
                "ldap:// needs HOST[:PORT] only, like ldap://127.0.0.1:389?bind_dn=cn=admin,dc=example,dc=org&password=${LDAP_PASSWORD}&base=dc=example,dc=org",
            ));
        }
        // A parameter may say "${VAR}"; the URL's own ${VAR}s were expanded already.
        let option = |name: &str| -> Result<Option<String>, InputError> {
            match (url.options.get(name), url.option(name, params)) {
                (Some(v), _) => Ok(Some(v.clone())),
                (None, Some(v)) => super::expand_env(&v).map(Some),
                (None, None) => Ok(None),
            }
        };
        let bind_dn = option("bind_dn")?.filter(|d| !d.is_empty());
        let password = option("password")?.unwrap_or_default();
        if bind_dn.is_none() && !password.is_empty() {
            return Err(InputError::new(
                "ldap:// has a password but no bind_dn: add bind_dn=DN",
            ));
        }
        let base = option("base")?.filter(|b| !b.is_empty());
        let has_port = authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>().is_ok());
        let addr = match (has_port, url.scheme.as_str()) {
            (true, _) => authority.to_string(),
            (false, "ldaps") => format!("{authority}:636"),
            (false, _) => format!("{authority}:389"),
        };
        Ok(Ldap {
            dir: Arc::new(Directory {
                url: format!("{}://{authority}", url.scheme),
                tls,
                starttls,
                shown: authority.to_string(),
                addr,
                bind_dn,
                password,
                namespace: base.map(|b| format!("ou=loadrig,{b}")),
                phases: PhaseClock::default(),
            }),
        })
    }
}

impl Target for Ldap {
    fn from_url(url: &TargetUrl, params: &super::Params) -> Result<Self, InputError> {
        Self::open(url, params)
    }

    type Session = LdapSession;

    fn blocking(&self) -> bool {
        false
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        None
    }

    async fn connect_shared(&self, n: usize) -> Result<Vec<LdapSession>, OpError> {
        Ok(self.connect().await?.share(n))
    }

    fn families(&self) -> &'static [Family] {
        &[Family::Ldap]
    }

    fn connect_phases(&self) -> Option<ConnectPhases> {
        self.dir.phases.snapshot()
    }

    fn connect(&self) -> impl Future<Output = Result<LdapSession, OpError>> {
        let dir = Arc::clone(&self.dir);
        async move {
            let shown = dir.shown.clone();
            super::connect_within(CONNECT_TIMEOUT, &shown, LdapSession::open(dir)).await
        }
    }
}

pub struct LdapSession {
    conn: Conn,
    /// Shared by the streams of one connection (`--pipeline`).
    driver: Rc<Driver>,
    dir: Arc<Directory>,
    /// The identifier of the open transaction, between `Begin` and its end.
    txn: Option<String>,
}

/// A connection's I/O task, stopped when its last stream lets go.
struct Driver(JoinHandle<()>);

impl Drop for Driver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn code_name(rc: u32) -> &'static str {
    match rc {
        1 => "operationsError",
        2 => "protocolError",
        3 => "timeLimitExceeded",
        4 => "sizeLimitExceeded",
        7 => "authMethodNotSupported",
        8 => "strongerAuthRequired",
        11 => "adminLimitExceeded",
        13 => "confidentialityRequired",
        16 => "noSuchAttribute",
        17 => "undefinedAttributeType",
        19 => "constraintViolation",
        20 => "attributeOrValueExists",
        21 => "invalidAttributeSyntax",
        32 => "noSuchObject",
        34 => "invalidDNSyntax",
        48 => "inappropriateAuthentication",
        49 => "invalidCredentials",
        50 => "insufficientAccessRights",
        51 => "busy",
        52 => "unavailable",
        53 => "unwillingToPerform",
        64 => "namingViolation",
        65 => "objectClassViolation",
        66 => "notAllowedOnNonLeaf",
        67 => "notAllowedOnRDN",
        68 => "entryAlreadyExists",
        80 => "other",
        _ => "error",
    }
}

/// A result code other than success as an operation error.
fn result_error(r: &LdapResult) -> OpError {
    let class = match r.rc {
        8 | 13 | 48 | 49 | 50 => ErrorClass::Auth,
        3 => ErrorClass::Timeout,
        19 | 20 | 68 => ErrorClass::Constraint,
        2 => ErrorClass::Protocol,
        _ => ErrorClass::Other,
    };
    let mut message = format!("{} ({})", code_name(r.rc), r.rc);
    if !r.text.is_empty() {
        message.push_str(": ");
        message.push_str(&r.text);
    }
    if matches!(r.rc, 48 | 49) {
        message = format!("authentication failed: {message}");
    }
    OpError::new(class, message)
}

fn error(shown: &str, e: LdapError) -> OpError {
    match e {
        LdapError::LdapResult { result } => result_error(&result),
        LdapError::Timeout { .. } => OpError::new(ErrorClass::Timeout, format!("{shown}: {e}")),
        LdapError::Io { .. }
        | LdapError::EndOfStream
        | LdapError::OpSend { .. }
        | LdapError::ResultRecv { .. }
        | LdapError::IdScrubSend { .. }
        | LdapError::MiscSend { .. } => OpError::new(ErrorClass::Connect, format!("{shown}: {e}")),
        other => OpError::new(ErrorClass::Other, other.to_string()),
    }
}

/// The outcome of a result: success → `rows`, noSuchObject → 0 when `absent_ok`.
fn rows_of(
    shown: &str,
    r: Result<LdapResult, LdapError>,
    rows: u64,
    absent_ok: bool,
) -> Result<u64, OpError> {
    match r {
        Ok(r) if r.rc == 0 => Ok(rows),
        Ok(r) if r.rc == 32 && absent_ok => Ok(0),
        Ok(r) => Err(result_error(&r)),
        Err(e) => Err(error(shown, e)),
    }
}

fn text(arg: &[u8]) -> Result<&str, OpError> {
    std::str::from_utf8(arg)
        .map_err(|_| OpError::new(ErrorClass::Other, "a DN or filter is not UTF-8 text"))
}

/// The DN and attributes of a search result entry, without the panics of
/// `SearchEntry::construct` on a malformed one.
/// Attribute names with their values.
type Attrs = Vec<(String, Vec<Vec<u8>>)>;

fn entry_parts(entry: ldap3::ResultEntry) -> Option<(Vec<u8>, Attrs)> {
    let mut tags = entry.0.match_id(4)?.expect_constructed()?.into_iter();
    let dn = tags.next()?.expect_primitive()?;
    let mut attrs = Vec::new();
    for attr in tags.next()?.expect_constructed()? {
        let mut parts = attr.expect_constructed()?.into_iter();
        let name = String::from_utf8(parts.next()?.expect_primitive()?).ok()?;
        let values = parts
            .next()?
            .expect_constructed()?
            .into_iter()
            .map(|v| v.expect_primitive())
            .collect::<Option<Vec<_>>>()?;
        attrs.push((name, values));
    }
    Some((dn, attrs))
}

/// Depth of a DN: its number of unescaped commas.
fn depth(dn: &[u8]) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for &b in dn {
        match (escaped, b) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b',') => n += 1,
            _ => {}
        }
    }
    n
}

impl LdapSession {
    /// Connect (TCP here, so that its time is told apart; TLS or StartTLS in ldap3) and
    /// bind when the URL has a bind DN, recording each phase's time.
    async fn open(dir: Arc<Directory>) -> Result<LdapSession, OpError> {
        let cannot = |e: &dyn std::fmt::Display| {
            OpError::new(
                ErrorClass::Connect,
                format!("cannot connect to {}: {e}", dir.shown),
            )
        };
        let started = Instant::now();
        let tcp = socket::connect(&dir.addr)
            .await
            .and_then(|t| t.into_std())
            .map_err(|e| cannot(&e))?;
        let tcp_time = started.elapsed();
        let mut settings = LdapConnSettings::new().set_std_stream(StdStream::Tcp(tcp));
        if let Some(config) = dir.tls.config() {
            settings = settings.set_config(config).set_starttls(dir.starttls);
        }
        let (driver, conn) = LdapConnAsync::with_settings(settings, &dir.url)
            .await
            .map_err(|e| {
                dir.tls
                    .rustls_failure(&dir.shown, &e)
                    .unwrap_or_else(|| cannot(&e))
            })?;
        let tls = dir.tls.is_on().then(|| started.elapsed() - tcp_time);
        let driver = tokio::spawn(async move {
            let _ = driver.drive().await;
        });
        let mut session = LdapSession {
            conn,
            driver: Rc::new(Driver(driver)),
            dir,
            txn: None,
        };
        let before_auth = started.elapsed();
        let bound = session.dir.bind_dn.is_some();
        if bound {
            session.bind().await?;
        }
        session.dir.phases.record(PhaseTimes {
            tcp: tcp_time,
            tls,
            auth: bound.then(|| started.elapsed() - before_auth),
        });
        Ok(session)
    }

    /// This session's (bound) connection as `n` sessions that share it.
    fn share(self, n: usize) -> Vec<LdapSession> {
        (0..n)
            .map(|_| LdapSession {
                conn: self.conn.clone(),
                driver: Rc::clone(&self.driver),
                dir: Arc::clone(&self.dir),
                txn: None,
            })
            .collect()
    }

    async fn bind(&mut self) -> Result<u64, OpError> {
        let dn = self.dir.bind_dn.as_deref().unwrap_or("");
        let result = self.conn.simple_bind(dn, &self.dir.password).await;
        rows_of(&self.dir.shown, result, 1, false)
    }

    fn namespace(&self) -> Result<&str, OpError> {
        self.dir.namespace.as_deref().ok_or_else(|| {
            OpError::new(
                ErrorClass::Other,
                "ldap:// kv operations need base=DN (URL option or workload parameter)",
            )
        })
    }

    fn entry_dn(&self, key: &str) -> Result<String, OpError> {
        Ok(format!(
            "cn={},{}",
            ldap3::dn_escape(key),
            self.namespace()?
        ))
    }

    /// Add the kv entry for `key`, or replace its value if it exists.
    async fn put(
        conn: &mut Conn,
        shown: &str,
        dn: &str,
        key: &str,
        value: &[u8],
    ) -> Result<u64, OpError> {
        let attrs: Vec<(&[u8], HashSet<&[u8]>)> = vec![
            (b"objectClass", HashSet::from([CLASS.as_bytes()])),
            (b"cn", HashSet::from([key.as_bytes()])),
            (b"sn", HashSet::from([b"loadrig".as_slice()])),
            (VALUE_ATTR.as_bytes(), HashSet::from([value])),
        ];
        match conn.add(dn, attrs).await {
            Ok(r) if r.rc == 68 => {
                let mods = vec![Mod::Replace(VALUE_ATTR.as_bytes(), HashSet::from([value]))];
                rows_of(shown, conn.modify(dn, mods).await, 1, false)
            }
            other => rows_of(shown, other, 1, false),
        }
    }

    async fn search(
        &mut self,
        base: &str,
        scope: Scope,
        filter: &str,
        attrs: &[String],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let found = self.conn.search(base, scope, filter, attrs).await;
        let ldap3::SearchResult(entries, result) = match found {
            Ok(r) => r,
            Err(e) => return Err(error(&self.dir.shown, e)),
        };
        match result.rc {
            0 => {}
            32 => return Ok(Outcome::rows(0)),
            _ => return Err(result_error(&result)),
        }
        let mut out = Outcome::rows(entries.len() as u64);
        if capture {
            if let Some(first) = entries.into_iter().next() {
                let (dn, mut values) = entry_parts(first).ok_or_else(|| {
                    OpError::new(ErrorClass::Protocol, "malformed search result entry")
                })?;
                out.captured.push(dn);
                for wanted in attrs {
                    let value = values
                        .iter_mut()
                        .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
                        .and_then(|(_, v)| (!v.is_empty()).then(|| v.swap_remove(0)));
                    out.captured.push(value.unwrap_or_default());
                }
            }
        }
        Ok(out)
    }

    /// Send the next update inside the open transaction, if there is one.
    fn in_txn(&mut self) {
        if let Some(txn_id) = &self.txn {
            self.conn.with_controls(TxnSpec { txn_id });
        }
    }

    async fn begin(&mut self) -> Result<Outcome, OpError> {
        let ldap3::result::ExopResult(exop, result) = self
            .conn
            .extended(StartTxn)
            .await
            .map_err(|e| error(&self.dir.shown, e))?;
        if result.rc != 0 {
            return Err(result_error(&result));
        }
        // Parsed here: ldap3's own parser panics on an identifier that is not UTF-8.
        let id = exop.val.and_then(|v| String::from_utf8(v).ok());
        self.txn = Some(id.ok_or_else(|| {
            OpError::new(
                ErrorClass::Protocol,
                "no usable transaction identifier in the reply",
            )
        })?);
        Ok(Outcome::default())
    }

    /// End the open transaction: commit or abort (nothing to do when none is open).
    async fn end(&mut self, commit: bool) -> Result<Outcome, OpError> {
        let Some(txn_id) = self.txn.take() else {
            return Ok(Outcome::default());
        };
        let ldap3::result::ExopResult(_, result) = self
            .conn
            .extended(EndTxn {
                txn_id: &txn_id,
                commit,
            })
            .await
            .map_err(|e| error(&self.dir.shown, e))?;
        if result.rc != 0 {
            return Err(result_error(&result));
        }
        Ok(Outcome::default())
    }

    async fn native(
        &mut self,
        op: &LdapOp<ValueKind>,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        let shown = self.dir.shown.clone();
        let arg = |i: usize| args.get(i).map_or(Ok(""), |a| text(a));
        match op {
            LdapOp::Search { scope, attrs, .. } => {
                let scope = match scope {
                    vocab::Scope::Base => Scope::Base,
                    vocab::Scope::One => Scope::OneLevel,
                    vocab::Scope::Sub => Scope::Subtree,
                };
                self.search(arg(0)?, scope, arg(1)?, attrs, capture).await
            }
            LdapOp::Bind { .. } => {
                let password = args
                    .get(1)
                    .map(|p| String::from_utf8_lossy(p))
                    .unwrap_or_default();
                let result = self.conn.simple_bind(arg(0)?, &password).await;
                rows_of(&shown, result, 1, false).map(Outcome::rows)
            }
            LdapOp::Add { attrs, .. } | LdapOp::Modify { replace: attrs, .. } => {
                let mut values = args.get(1..).unwrap_or(&[]).iter();
                let mut sets: Vec<(&[u8], HashSet<&[u8]>)> = Vec::with_capacity(attrs.len());
                for (name, templates) in attrs {
                    let set = values
                        .by_ref()
                        .take(templates.len())
                        .map(Vec::as_slice)
                        .collect();
                    sets.push((name.as_bytes(), set));
                }
                let dn = arg(0)?;
                self.in_txn();
                let result = if matches!(op, LdapOp::Add { .. }) {
                    self.conn.add(dn, sets).await
                } else {
                    let mods = sets.into_iter().map(|(n, v)| Mod::Replace(n, v)).collect();
                    return rows_of(&shown, self.conn.modify(dn, mods).await, 1, true)
                        .map(Outcome::rows);
                };
                rows_of(&shown, result, 1, false).map(Outcome::rows)
            }
            LdapOp::Delete { .. } => {
                let dn = arg(0)?;
                self.in_txn();
                let result = self.conn.delete(dn).await;
                rows_of(&shown, result, 1, true).map(Outcome::rows)
            }
        }
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let shown = self.dir.shown.clone();
        let rows = match *op {
            Op::Nop => 0,
            Op::Put { key, value } => {
                let dn = self.entry_dn(key)?;
                Self::put(&mut self.conn, &shown, &dn, key, value).await?
            }
            Op::Get { key } => {
                let dn = self.entry_dn(key)?;
                let attrs = [VALUE_ATTR.to_string()];
                return self
                    .search(&dn, Scope::Base, "(objectClass=*)", &attrs, false)
                    .await;
            }
            Op::Update { key, value } => {
                let dn = self.entry_dn(key)?;
                let mods = vec![Mod::Replace(VALUE_ATTR.as_bytes(), HashSet::from([value]))];
                rows_of(&shown, self.conn.modify(&dn, mods).await, 1, true)?
            }
            Op::Delete { key } => {
                let dn = self.entry_dn(key)?;
                rows_of(&shown, self.conn.delete(&dn).await, 1, true)?
            }
            Op::Native {
                op: NativeOp::Ldap(ldap),
                args,
                capture,
            } => return self.native(ldap, args, capture).await,
            // Every other family: the runner refuses them before anything runs.
            Op::Native { op: other, .. } => {
                return Err(OpError::new(
                    ErrorClass::Other,
                    format!("ldap:// targets do not run {}", other.label()),
                ))
            }
            Op::Begin => return self.begin().await,
            Op::Commit => return self.end(true).await,
            Op::Rollback => return self.end(false).await,
        };
        Ok(Outcome::rows(rows))
    }

    /// Delete `dns` with up to `IN_FLIGHT` requests outstanding; returns how many went.
    async fn delete_all(&mut self, dns: &[Vec<u8>]) -> Result<u64, OpError> {
        let shown = self.dir.shown.clone();
        let mut removed = 0;
        for chunk in dns.chunks(IN_FLIGHT) {
            let deletes = chunk.iter().map(|dn| {
                let mut conn = self.conn.clone();
                let shown = shown.as_str();
                async move {
                    let dn = text(dn)?;
                    rows_of(shown, conn.delete(dn).await, 1, true)
                }
            });
            for r in futures_util::future::join_all(deletes).await {
                removed += r?;
            }
        }
        Ok(removed)
    }
}

impl Session for LdapSession {
    /// Create `ou=loadrig,BASE` if it is missing.
    async fn setup(&mut self) -> Result<(), OpError> {
        let Some(ns) = self.dir.namespace.clone() else {
            return Ok(());
        };
        let attrs: Vec<(&[u8], HashSet<&[u8]>)> = vec![
            (
                b"objectClass",
                HashSet::from([b"organizationalUnit".as_slice()]),
            ),
            (b"ou", HashSet::from([b"loadrig".as_slice()])),
        ];
        match self.conn.add(&ns, attrs).await {
            // Created, already there, or not ours to create (read-only workloads; an
            // anonymous session: OpenLDAP answers strongerAuthRequired).
            Ok(r) if matches!(r.rc, 0 | 68 | 50 | 8) => Ok(()),
            Ok(r) => {
                let e = result_error(&r);
                Err(OpError::new(
                    e.class,
                    format!("creating {ns}: {}", e.message),
                ))
            }
            Err(e) => Err(error(&self.dir.shown, e)),
        }
    }

    async fn server_version(&mut self) -> Option<String> {
        let attrs = [
            "vendorName",
            "vendorVersion",
            "supportedLDAPVersion",
            "objectClass",
        ];
        let ldap3::SearchResult(entries, _) = self
            .conn
            .search("", Scope::Base, "(objectClass=*)", &attrs[..])
            .await
            .ok()?;
        let (_, values) = entry_parts(entries.into_iter().next()?)?;
        let get = |name: &str| -> Vec<String> {
            values
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .flat_map(|(_, v)| v.iter().map(|x| String::from_utf8_lossy(x).into_owned()))
                .collect()
        };
        let versions = get("supportedLDAPVersion");
        let protocol = versions.iter().filter_map(|v| v.parse::<u32>().ok()).max();
        let vendor = match (get("vendorName").first(), get("vendorVersion").first()) {
            (_, Some(version)) => version.clone(),
            (Some(name), None) => name.clone(),
            (None, None)
                if get("objectClass")
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case("OpenLDAProotDSE")) =>
            {
                "OpenLDAP".to_string()
            }
            (None, None) => "LDAP server".to_string(),
        };
        Some(match protocol {
            Some(p) => format!("{vendor} (LDAPv{p})"),
            None => vendor,
        })
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    async fn authenticate(&mut self) -> Result<Outcome, OpError> {
        self.bind().await.map(Outcome::rows)
    }

    /// Adds (or value replacements), `IN_FLIGHT` outstanding at a time.
    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        let shown = self.dir.shown.clone();
        let dns = records
            .iter()
            .map(|(k, _)| self.entry_dn(k))
            .collect::<Result<Vec<_>, _>>()?;
        for (chunk, dns) in records.chunks(IN_FLIGHT).zip(dns.chunks(IN_FLIGHT)) {
            let adds = chunk.iter().zip(dns).map(|((key, value), dn)| {
                let mut conn = self.conn.clone();
                let shown = shown.as_str();
                async move { Self::put(&mut conn, shown, dn, key, value).await }
            });
            for r in futures_util::future::join_all(adds).await {
                r?;
            }
        }
        Ok(())
    }

    /// Delete the `ou=loadrig,BASE` subtree, children first; returns the entries removed.
    async fn cleanup(&mut self) -> Result<u64, OpError> {
        let ns = self
            .namespace()
            .map_err(|_| {
                OpError::new(
                    ErrorClass::Other,
                    "ldap:// cleanup needs base=DN in the URL, like ldap://HOST:PORT?base=dc=example,dc=org&bind_dn=...&password=...",
                )
            })?
            .to_string();
        let mut removed = 0;
        // Servers with a size limit return part of the subtree: repeat until it is gone.
        loop {
            let found = self
                .conn
                .search(&ns, Scope::Subtree, "(objectClass=*)", vec!["1.1"])
                .await;
            let ldap3::SearchResult(entries, result) =
                found.map_err(|e| error(&self.dir.shown, e))?;
            if result.rc == 32 || entries.is_empty() {
                return Ok(removed);
            }
            if !matches!(result.rc, 0 | 4 | 11) {
                return Err(result_error(&result));
            }
            let mut dns: Vec<Vec<u8>> = entries
                .into_iter()
                .filter_map(|e| entry_parts(e).map(|(dn, _)| dn))
                .collect();
            dns.sort_by_key(|dn| std::cmp::Reverse(depth(dn)));
            let mut round = 0;
            let mut start = 0;
            while start < dns.len() {
                let level = depth(&dns[start]);
                let end = dns[start..]
                    .iter()
                    .position(|dn| depth(dn) != level)
                    .map_or(dns.len(), |n| start + n);
                round += self.delete_all(&dns[start..end]).await?;
                start = end;
            }
            if round == 0 {
                return Err(OpError::new(
                    ErrorClass::Other,
                    format!("cleanup could not delete anything under {ns}"),
                ));
            }
            removed += round;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_unescaped_commas() {
        assert_eq!(depth(b"dc=test"), 0);
        assert_eq!(depth(b"cn=a\\,b,ou=loadrig,dc=test"), 2);
        assert_eq!(depth(b"cn=a\\\\,ou=loadrig,dc=test"), 2);
    }

    #[test]
    fn options_and_errors() {
        let params = BTreeMap::new();
        let url = |s: &str| TargetUrl::parse(s).unwrap();
        let l = Ldap::open(
            &url("ldap://127.0.0.1:1?bind_dn=cn=a,dc=x&password=p&base=dc=x"),
            &params,
        )
        .unwrap();
        assert_eq!(l.dir.namespace.as_deref(), Some("ou=loadrig,dc=x"));
        assert_eq!(l.dir.url, "ldap://127.0.0.1:1");
        assert!(Ldap::open(&url("ldap://127.0.0.1:1?nope=1"), &params).is_err());
        assert!(Ldap::open(&url("ldap://127.0.0.1:1?password=p"), &params).is_err());
        let e = result_error(&LdapResult {
            rc: 49,
            matched: String::new(),
            text: String::new(),
            refs: Vec::new(),
            ctrls: Vec::new(),
        });
        assert_eq!(e.class, ErrorClass::Auth);
        assert!(e.message.contains("authentication failed"));
    }
}
