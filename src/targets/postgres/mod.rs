//! `postgres://USER:PASSWORD@HOST:PORT/DB`: PostgreSQL through tokio-postgres, plain TCP
//! (no TLS: loadrig puts load on servers it can reach directly, normally on loopback).
//!
//! - Options: `connect_timeout` (default 5 s, a duration or plain seconds) bounds the TCP
//!   connect and the whole handshake (SCRAM included); `application_name`.
//! - kv operations use `loadrig_kv (k VARCHAR(255) PRIMARY KEY, v BYTEA NOT NULL)`, created
//!   by setup: put is an upsert (`ON CONFLICT (k) DO UPDATE`), get reads the value (rows
//!   1 or 0), update and delete count the rows they touched.
//! - Native `sql` statements are prepared once per session, on first use, and cached by
//!   their workload-wide number. Arguments are converted to the parameter types the server
//!   declared: bool, int2/int4/int8, oid, float4/float8 and bytea are sent in binary;
//!   text types as they are; every other type (numeric, date, timestamp, uuid, json, ...)
//!   as text for the server to parse. An empty argument binds NULL for non-text types. A
//!   value that does not parse fails the operation (class other) naming the parameter.
//!   Rows are the rows returned, or for statements that return none the rows affected.
//!   `capture` takes the first row's values as the server's output functions print them
//!   (psql's text), rendered here from the binary results: NULL as empty, bytea raw; dates
//!   and times for the session's DateStyle ISO, IntervalStyle postgres and, for
//!   timestamptz, a UTC TimeZone; another type or setting fails the operation, saying to
//!   cast the column with `::text`. A parameterless statement the server cannot prepare (several
//!   commands in one string, as setup statements may be) runs as a simple query.
//! - Transactions: BEGIN / COMMIT / ROLLBACK. Data loading: binary COPY into a temporary
//!   table, then one upsert into `loadrig_kv`, so loading the same keys again replaces them.
//! - Cleanup drops every table of the current schema whose name starts with `loadrig_`.
//! - `authenticate` is not possible on an open PostgreSQL connection: use the `connect`
//!   operation (or `--connection per-op`) to measure the handshake.
//!
//! Errors by SQLSTATE: 40P01 → deadlock, 40001 → serialization, 57014 (statement timeout
//! or cancel) and 55P03 (lock not available) → timeout, 23xxx → constraint, 28xxx → auth,
//! 08xxx, 57P0x (server shutting down) and any error that leaves the connection closed
//! (I/O, end of stream) → connect, so the engine reconnects; a malformed reply → protocol;
//! everything else → other. Messages never contain the password.

use std::collections::HashMap;
use std::error::Error as _;
use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use tokio_postgres::types::{FromSql, IsNull, Kind, ToSql, Type};
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage, Statement};

use super::endpoint::Endpoint;
use super::{unsupported, Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::spec::NativeOp;
use crate::vocab::{ErrorClass, Op, OpError, Outcome};

const CREATE_KV: &str =
    "CREATE TABLE IF NOT EXISTS loadrig_kv (k VARCHAR(255) PRIMARY KEY, v BYTEA NOT NULL)";
const KV_SQL: [&str; 4] = [
    "INSERT INTO loadrig_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
    "SELECT v FROM loadrig_kv WHERE k = $1",
    "UPDATE loadrig_kv SET v = $2 WHERE k = $1",
    "DELETE FROM loadrig_kv WHERE k = $1",
];
const PUT: usize = 0;
const GET: usize = 1;
const UPDATE: usize = 2;
const DELETE: usize = 3;

/// A PostgreSQL server and how to log in to it.
pub struct Postgres {
    config: Config,
    timeout: Duration,
}

impl Postgres {
    pub fn open(url: &TargetUrl) -> Result<Postgres, InputError> {
        url.check_options(&["connect_timeout", "application_name"])?;
        let ep = Endpoint::parse(url)?;
        let timeout = Endpoint::connect_timeout(url, Duration::from_secs(5))?;
        let mut config = Config::new();
        config
            .host(&ep.host)
            .port(ep.port.unwrap_or(5432))
            .connect_timeout(timeout)
            .application_name(
                url.options
                    .get("application_name")
                    .map_or("loadrig", String::as_str),
            );
        if let Ok(ip) = ep.host.parse::<IpAddr>() {
            // No name lookup (which would run on a blocking thread) for an address.
            config.hostaddr(ip);
        }
        let user = ep.user.clone().unwrap_or_else(|| "postgres".to_string());
        config.user(&user);
        config.dbname(if ep.path.is_empty() { &user } else { &ep.path });
        if let Some(p) = &ep.password {
            config.password(p.as_bytes());
        }
        Ok(Postgres { config, timeout })
    }
}

/// One connection: the client half of tokio-postgres (its I/O half runs as a task on the
/// client's runtime) and the statements prepared on it.
pub struct PgSession {
    client: Client,
    kv: [Option<Statement>; 4],
    /// Native statements by their workload-wide number; `None` until first used.
    sql: Vec<Option<Statement>>,
    /// The connection's I/O task.
    io: tokio::task::JoinHandle<()>,
    styles: Styles,
}

impl Drop for PgSession {
    /// Close the socket at once, even with a reply still due (an operation that timed out).
    fn drop(&mut self) {
        self.io.abort();
    }
}

impl Target for Postgres {
    fn from_url(url: &TargetUrl, _params: &Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    type Session = PgSession;

    fn blocking(&self) -> bool {
        false
    }

    fn families(&self) -> &'static [&'static str] {
        &["sql"]
    }

    async fn connect(&self) -> Result<PgSession, OpError> {
        let connected = tokio::time::timeout(self.timeout, self.config.connect(NoTls)).await;
        let (client, connection) = match connected {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                let mut err = classify(&e);
                if err.class != ErrorClass::Auth {
                    err.class = ErrorClass::Connect;
                }
                err.message = format!(
                    "{} ({}): {}",
                    if err.class == ErrorClass::Auth {
                        "authentication failed"
                    } else {
                        "connection failed"
                    },
                    err.class.name(),
                    err.message
                );
                return Err(err);
            }
            Err(_) => {
                return Err(OpError::new(
                    ErrorClass::Connect,
                    format!(
                        "connection failed (connect): no complete handshake within {:?} (option connect_timeout)",
                        self.timeout
                    ),
                ))
            }
        };
        // The connection's I/O half: it ends when the client is dropped or the server
        // goes away (then every call on the client fails as closed).
        let setting = |name: &str| connection.parameter(name).unwrap_or_default().to_string();
        let styles = Styles {
            timezone: setting("TimeZone"),
            datestyle: setting("DateStyle"),
            intervalstyle: setting("IntervalStyle"),
        };
        let io = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(PgSession {
            client,
            kv: Default::default(),
            sql: Vec::new(),
            io,
            styles,
        })
    }
}

/// Map a driver error to a class and a message (SQLSTATE first when there is one).
fn classify(e: &tokio_postgres::Error) -> OpError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let class = match code {
            "40P01" => ErrorClass::Deadlock,
            "40001" => ErrorClass::Serialization,
            "57014" | "55P03" => ErrorClass::Timeout,
            c if c.starts_with("23") => ErrorClass::Constraint,
            c if c.starts_with("28") => ErrorClass::Auth,
            c if c.starts_with("08") || c.starts_with("57P0") => ErrorClass::Connect,
            _ => ErrorClass::Other,
        };
        return OpError::new(class, format!("{code} {}", db.message()));
    }
    // Everything else is the driver's own: an I/O error, a closed connection, bad replies.
    let mut message = e.to_string();
    let mut source = e.source();
    let mut io = false;
    while let Some(s) = source {
        io |= s.is::<std::io::Error>();
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    let class = if io || e.is_closed() {
        ErrorClass::Connect
    } else if message.starts_with("unexpected message") || message.starts_with("error parsing") {
        ErrorClass::Protocol
    } else {
        ErrorClass::Other
    };
    OpError::new(class, message)
}

/// One argument, converted for the type the server declared for its parameter.
#[derive(Debug)]
enum Param<'a> {
    Null,
    Bool(bool),
    I16(i16),
    I32(i32),
    I64(i64),
    Oid(u32),
    F32(f32),
    F64(f64),
    /// Sent as it is in binary format: bytea and the text types.
    Raw(&'a [u8]),
    /// Sent in text format: the server parses it for its type.
    Text(&'a [u8]),
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Bool(b) => out.extend_from_slice(&[u8::from(b)]),
            Param::I16(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::I32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::I64(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::Oid(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::F32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::F64(v) => out.extend_from_slice(&v.to_be_bytes()),
            Param::Raw(b) | Param::Text(b) => out.extend_from_slice(b),
        }
        Ok(IsNull::No)
    }

    /// Conversion already happened against the statement's declared types.
    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn encode_format(&self, _ty: &Type) -> tokio_postgres::types::Format {
        match self {
            Param::Text(_) => tokio_postgres::types::Format::Text,
            _ => tokio_postgres::types::Format::Binary,
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

fn is_text_type(ty: &Type) -> bool {
    [
        Type::TEXT,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::NAME,
        Type::UNKNOWN,
        Type::CHAR,
    ]
    .contains(ty)
}

/// Convert argument `i` (0-based) to the parameter type `ty`.
fn convert<'a>(i: usize, arg: &'a [u8], ty: &Type) -> Result<Param<'a>, OpError> {
    if *ty == Type::BYTEA || is_text_type(ty) {
        return Ok(Param::Raw(arg));
    }
    if arg.is_empty() {
        return Ok(Param::Null);
    }
    let bad = |why: String| {
        let text = String::from_utf8_lossy(arg);
        let shown: String = text.chars().take(40).collect();
        let more = if text.chars().count() > 40 { "..." } else { "" };
        OpError::new(
            ErrorClass::Other,
            format!(
                "parameter ${} ('{shown}{more}') is not a valid {}: {why}",
                i + 1,
                ty.name()
            ),
        )
    };
    let text = || std::str::from_utf8(arg).map(str::trim);
    macro_rules! number {
        ($t:ty, $variant:ident) => {
            match text() {
                Ok(s) => s
                    .parse::<$t>()
                    .map(Param::$variant)
                    .map_err(|e| bad(e.to_string())),
                Err(e) => Err(bad(e.to_string())),
            }
        };
    }
    match *ty {
        Type::BOOL => match text().map(str::to_ascii_lowercase).as_deref() {
            Ok("t" | "true" | "1" | "yes" | "y" | "on") => Ok(Param::Bool(true)),
            Ok("f" | "false" | "0" | "no" | "n" | "off") => Ok(Param::Bool(false)),
            _ => Err(bad("expected true or false".into())),
        },
        Type::INT2 => number!(i16, I16),
        Type::INT4 => number!(i32, I32),
        Type::INT8 => number!(i64, I64),
        Type::OID => number!(u32, Oid),
        Type::FLOAT4 => number!(f32, F32),
        Type::FLOAT8 => number!(f64, F64),
        _ => Ok(Param::Text(arg)),
    }
}

/// A column value as the server sent it (binary format), for captures.
struct RawValue<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for RawValue<'a> {
    fn from_sql(
        _ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(Some(raw)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// The session settings that decide how dates and times print, as the server reported them
/// when the connection opened.
#[derive(Debug, Clone, Default)]
struct Styles {
    timezone: String,
    datestyle: String,
    intervalstyle: String,
}

impl Styles {
    fn utc(&self) -> bool {
        let tz = self.timezone.to_ascii_lowercase();
        let tz = tz.strip_prefix("etc/").unwrap_or(&tz);
        [
            "utc",
            "uct",
            "gmt",
            "gmt0",
            "gmt+0",
            "gmt-0",
            "z",
            "zulu",
            "universal",
            "greenwich",
        ]
        .contains(&tz)
    }
}

type Rendered = Result<Vec<u8>, String>;

/// A column value, sent in binary, as the text the server prints for it (psql's output);
/// bytea stays raw. A type rendered here in no exact way is an error saying so.
fn to_text(ty: &Type, raw: &[u8], st: &Styles) -> Rendered {
    match ty.kind() {
        Kind::Array(member) => return array_text(member, raw, st).map(String::into_bytes),
        Kind::Domain(base) => return to_text(base, raw, st),
        Kind::Enum(_) => return Ok(raw.to_vec()),
        Kind::Simple => {}
        _ => return Err(format!("type {} has no text rendering here", ty.name())),
    }
    if *ty == Type::BYTEA || is_text_type(ty) || [Type::JSON, Type::XML, Type::CHAR].contains(ty) {
        return Ok(raw.to_vec());
    }
    scalar_text(ty, raw, st).map(String::into_bytes)
}

fn scalar_text(ty: &Type, raw: &[u8], st: &Styles) -> Result<String, String> {
    let malformed = || format!("malformed {} value", ty.name());
    let be = |n: usize| -> Result<&[u8], String> {
        raw.get(..n)
            .filter(|_| raw.len() == n)
            .ok_or_else(malformed)
    };
    let int = |n: usize| -> Result<i64, String> {
        let b = be(n)?;
        Ok(b.iter().fold(i64::from(b[0] as i8) >> 8, |acc, x| {
            (acc << 8) | i64::from(*x)
        }))
    };
    let dates = || {
        if st.datestyle.starts_with("ISO") {
            Ok(())
        } else {
            Err(format!(
                "{} prints by DateStyle, which is '{}' in this session (loadrig renders ISO)",
                ty.name(),
                st.datestyle
            ))
        }
    };
    Ok(match *ty {
        Type::BOOL => if be(1)? == [1] { "t" } else { "f" }.to_string(),
        Type::INT2 => int(2)?.to_string(),
        Type::INT4 => int(4)?.to_string(),
        Type::INT8 => int(8)?.to_string(),
        Type::OID => (int(4)? as u32).to_string(),
        Type::FLOAT4 => float_text(
            f64::from(f32::from_bits(int(4)? as u32)),
            &format!("{:e}", f32::from_bits(int(4)? as u32)),
            6,
        ),
        Type::FLOAT8 => float_text(
            f64::from_bits(int(8)? as u64),
            &format!("{:e}", f64::from_bits(int(8)? as u64)),
            15,
        ),
        Type::NUMERIC => numeric_text(raw).ok_or_else(malformed)?,
        Type::UUID => {
            let hex: String = be(16)?.iter().map(|x| format!("{x:02x}")).collect();
            format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            )
        }
        // jsonb's binary form is a version byte, then the text.
        Type::JSONB if raw.first() == Some(&1) => String::from_utf8_lossy(&raw[1..]).into_owned(),
        Type::DATE => {
            dates()?;
            match int(4)? {
                d if d == i64::from(i32::MAX) => "infinity".into(),
                d if d == i64::from(i32::MIN) => "-infinity".into(),
                d => date_text(d),
            }
        }
        Type::TIME => time_text(int(8)?),
        Type::TIMETZ => {
            let (us, zone) = (
                i64::from_be_bytes(be(12)?[..8].try_into().map_err(|_| malformed())?),
                i32::from_be_bytes(raw[8..].try_into().map_err(|_| malformed())?),
            );
            // The zone is stored in seconds west of Greenwich.
            time_text(us) + &offset_text(-i64::from(zone))
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            dates()?;
            let zone = if *ty == Type::TIMESTAMPTZ {
                if !st.utc() {
                    return Err(format!(
                        "timestamptz prints in the session's TimeZone, which is '{}' (loadrig renders UTC only)",
                        st.timezone
                    ));
                }
                "+00"
            } else {
                ""
            };
            match int(8)? {
                i64::MAX => "infinity".into(),
                i64::MIN => "-infinity".into(),
                us => {
                    const DAY: i64 = 86_400_000_000;
                    // ` BC` goes after the time and zone.
                    let date = date_text(us.div_euclid(DAY));
                    let (ymd, bc) = date.split_at(date.find(' ').unwrap_or(date.len()));
                    format!("{ymd} {}{zone}{bc}", time_text(us.rem_euclid(DAY)))
                }
            }
        }
        Type::INTERVAL => {
            if st.intervalstyle != "postgres" {
                return Err(format!(
                    "interval prints by IntervalStyle, which is '{}' in this session (loadrig renders postgres)",
                    st.intervalstyle
                ));
            }
            be(16)?;
            let word = |i: usize, n: usize| {
                i64::from_be_bytes({
                    let mut b = [if raw[i] & 0x80 != 0 { 0xff } else { 0 }; 8];
                    b[8 - n..].copy_from_slice(&raw[i..i + n]);
                    b
                })
            };
            interval_text(word(0, 8), word(8, 4), word(12, 4))
        }
        _ => return Err(format!("type {} has no text rendering here", ty.name())),
    })
}

/// A float as PostgreSQL prints it (extra_float_digits 1, the default): the shortest text
/// that reads back exactly, in exponent form when the decimal exponent is below -4 or at
/// least `digits` (15 for float8, 6 for float4). `sci` is Rust's shortest `{:e}` form.
fn float_text(v: f64, sci: &str, digits: i32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let (sign, sci) = match sci.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", sci),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let d: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let body = if (-4..digits).contains(&exp) {
        if exp < 0 {
            format!("0.{}{d}", "0".repeat((-exp - 1) as usize))
        } else if d.len() <= exp as usize + 1 {
            format!("{d}{}", "0".repeat(exp as usize + 1 - d.len()))
        } else {
            format!("{}.{}", &d[..=exp as usize], &d[exp as usize + 1..])
        }
    } else {
        let rest = if d.len() > 1 {
            format!(".{}", &d[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{}{rest}e{esign}{:02}", &d[..1], exp.abs())
    };
    format!("{sign}{body}")
}

/// Days since 2000-01-01 as `YYYY-MM-DD`, with ` BC` for years before 1 (proleptic
/// Gregorian, as PostgreSQL counts).
fn date_text(days: i64) -> String {
    // Howard Hinnant's civil_from_days, from 1970-01-01.
    let z = days + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year <= 0 {
        format!("{:04}-{month:02}-{day:02} BC", 1 - year)
    } else {
        format!("{year:04}-{month:02}-{day:02}")
    }
}

/// Microseconds as `HH:MM:SS` with the fraction, trailing zeros dropped; negative for
/// interval parts.
fn time_text(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let us = us.unsigned_abs();
    let secs = us / 1_000_000;
    format!(
        "{sign}{:02}:{:02}:{:02}{}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        fraction(us % 1_000_000)
    )
}

fn fraction(us: u64) -> String {
    if us == 0 {
        String::new()
    } else {
        format!(".{us:06}").trim_end_matches('0').to_string()
    }
}

/// A UTC offset in seconds as `+HH`, `+HH:MM` or `+HH:MM:SS`.
fn offset_text(secs: i64) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let s = secs.unsigned_abs();
    let mut out = format!("{sign}{:02}", s / 3600);
    if !s.is_multiple_of(3600) {
        out.push_str(&format!(":{:02}", s / 60 % 60));
    }
    if !s.is_multiple_of(60) {
        out.push_str(&format!(":{:02}", s % 60));
    }
    out
}

/// An interval in IntervalStyle postgres: `1 year 2 mons -3 days +04:05:06.5`.
fn interval_text(us: i64, days: i64, months: i64) -> String {
    let mut out = String::new();
    // Each part after a negative one carries an explicit sign, as PostgreSQL writes them.
    let mut before = false;
    for (n, unit) in [(months / 12, "year"), (months % 12, "mon"), (days, "day")] {
        if n != 0 {
            let plus = if before && n > 0 { "+" } else { "" };
            let s = if n == 1 { "" } else { "s" };
            let space = if out.is_empty() { "" } else { " " };
            out.push_str(&format!("{space}{plus}{n} {unit}{s}"));
            before = n < 0;
        }
    }
    if out.is_empty() || us != 0 {
        let space = if out.is_empty() { "" } else { " " };
        let plus = if before && us >= 0 { "+" } else { "" };
        out.push_str(&format!("{space}{plus}{}", time_text(us)));
    }
    out
}

/// A binary array as PostgreSQL's text: `{1,2,NULL}`, `{{1,2},{3,4}}`, `[0:1]={7,8}`.
fn array_text(member: &Type, raw: &[u8], st: &Styles) -> Result<String, String> {
    let malformed = || "malformed array value".to_string();
    let mut at = 0;
    let mut word = || -> Result<i32, String> {
        let b = raw.get(at..at + 4).ok_or_else(malformed)?;
        at += 4;
        Ok(i32::from_be_bytes(b.try_into().map_err(|_| malformed())?))
    };
    let ndim = usize::try_from(word()?).map_err(|_| malformed())?;
    word()?; // has nulls
    word()?; // element type, known from the column
    let mut dims = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let (len, lower) = (word()?, word()?);
        dims.push((usize::try_from(len).map_err(|_| malformed())?, lower));
    }
    if ndim == 0 {
        return Ok("{}".into());
    }
    let mut out = String::new();
    if dims.iter().any(|&(_, lower)| lower != 1) {
        for &(len, lower) in &dims {
            out.push_str(&format!("[{lower}:{}]", i64::from(lower) + len as i64 - 1));
        }
        out.push('=');
    }
    let total: usize = dims.iter().map(|d| d.0).product();
    let mut pos = 4 * (3 + 2 * ndim);
    for i in 0..total {
        // Open a brace for every dimension that starts here, close for every one that ends.
        let mut stride = total;
        for &(len, _) in &dims {
            stride /= len.max(1);
            if i % (stride * len) == 0 {
                out.push('{');
            }
        }
        let len = i32::from_be_bytes(
            raw.get(pos..pos + 4)
                .ok_or_else(malformed)?
                .try_into()
                .map_err(|_| malformed())?,
        );
        pos += 4;
        if len < 0 {
            out.push_str("NULL");
        } else {
            let bytes = raw.get(pos..pos + len as usize).ok_or_else(malformed)?;
            pos += len as usize;
            let text = if *member == Type::BYTEA {
                let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
                format!("\\x{hex}")
            } else {
                String::from_utf8(to_text(member, bytes, st)?).map_err(|_| malformed())?
            };
            quote_element(&text, &mut out);
        }
        let mut stride = 1;
        let mut ends = 0;
        for &(len, _) in dims.iter().rev() {
            stride *= len;
            if (i + 1) % stride == 0 {
                ends += 1;
            } else {
                break;
            }
        }
        out.push_str(&"}".repeat(ends));
        if i + 1 < total {
            out.push(',');
        }
    }
    Ok(out)
}

/// An array element, in double quotes when it is empty, NULL, or holds a character that
/// has a meaning in array text.
fn quote_element(text: &str, out: &mut String) {
    let needs = text.is_empty()
        || text.eq_ignore_ascii_case("null")
        || text.chars().any(|c| {
            matches!(
                c,
                '"' | '\\' | '{' | '}' | ',' | ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'
            )
        });
    if !needs {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// NUMERIC's binary form (base-10000 digits) as decimal text.
fn numeric_text(raw: &[u8]) -> Option<String> {
    use std::fmt::Write;
    let word =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes(raw.get(i..i + 2)?.try_into().ok()?)) };
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    let dscale = word(6)? as usize;
    let digits: Vec<u16> = (0..ndigits)
        .map(|d| word(8 + 2 * d))
        .collect::<Option<_>>()?;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digit = |i: i32| -> u16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            let _ = if i == 0 {
                write!(s, "{}", digit(i))
            } else {
                write!(s, "{:04}", digit(i))
            };
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        s.push('.');
        s.push_str(&frac);
    }
    Some(s)
}

impl PgSession {
    async fn statement(&mut self, which: usize) -> Result<Statement, OpError> {
        if let Some(st) = &self.kv[which] {
            return Ok(st.clone());
        }
        let st = self
            .client
            .prepare(KV_SQL[which])
            .await
            .map_err(|e| classify(&e))?;
        self.kv[which] = Some(st.clone());
        Ok(st)
    }

    async fn kv(&mut self, which: usize, params: &[Param<'_>]) -> Result<u64, OpError> {
        let st = self.statement(which).await?;
        if which == GET {
            let rows = self
                .client
                .query_raw(&st, params)
                .await
                .map_err(|e| classify(&e))?;
            let mut rows = std::pin::pin!(rows);
            let mut n = 0;
            while let Some(row) = rows.next().await {
                row.map_err(|e| classify(&e))?;
                n += 1;
            }
            Ok(n)
        } else {
            self.client
                .execute_raw(&st, params)
                .await
                .map_err(|e| classify(&e))
        }
    }

    async fn native(
        &mut self,
        id: usize,
        query: &str,
        args: &[Vec<u8>],
        capture: bool,
    ) -> Result<Outcome, OpError> {
        if self.sql.len() <= id {
            self.sql.resize(id + 1, None);
        }
        let st = match &self.sql[id] {
            Some(st) => st.clone(),
            None => match self.client.prepare(query).await {
                Ok(st) => {
                    self.sql[id] = Some(st.clone());
                    st
                }
                Err(e) if args.is_empty() && e.code().is_some_and(|c| c.code() == "42601") => {
                    // "cannot insert multiple commands into a prepared statement".
                    return self.simple(query, capture).await;
                }
                Err(e) => return Err(classify(&e)),
            },
        };
        let types = st.params();
        if types.len() != args.len() {
            return Err(OpError::new(
                ErrorClass::Other,
                format!(
                    "the query has {} parameter(s) but the operation gives {}: {query}",
                    types.len(),
                    args.len()
                ),
            ));
        }
        let params = args
            .iter()
            .zip(types)
            .enumerate()
            .map(|(i, (a, ty))| convert(i, a, ty))
            .collect::<Result<Vec<_>, _>>()?;
        if st.columns().is_empty() {
            let n = self
                .client
                .execute_raw(&st, &params)
                .await
                .map_err(|e| classify(&e))?;
            return Ok(Outcome::rows(n));
        }
        let rows = self
            .client
            .query_raw(&st, &params)
            .await
            .map_err(|e| classify(&e))?;
        let mut rows = std::pin::pin!(rows);
        let mut out = Outcome::default();
        while let Some(row) = rows.next().await {
            let row = row.map_err(|e| classify(&e))?;
            if capture && out.rows == 0 {
                for (c, column) in row.columns().iter().enumerate() {
                    let value = row
                        .try_get::<_, RawValue<'_>>(c)
                        .map_err(|e| classify(&e))?;
                    let text = match value.0 {
                        Some(raw) => to_text(column.type_(), raw, &self.styles).map_err(|why| {
                            OpError::new(
                                ErrorClass::Other,
                                format!(
                                    "cannot capture column '{}': {why}; cast it in the query ({}::text)",
                                    column.name(),
                                    column.name()
                                ),
                            )
                        })?,
                        None => Vec::new(),
                    };
                    out.captured.push(text);
                }
            }
            out.rows += 1;
        }
        Ok(out)
    }

    /// Run text with the simple query protocol (several commands allowed, no parameters).
    async fn simple(&mut self, query: &str, capture: bool) -> Result<Outcome, OpError> {
        let messages = self
            .client
            .simple_query(query)
            .await
            .map_err(|e| classify(&e))?;
        let mut out = Outcome::default();
        for m in messages {
            match m {
                SimpleQueryMessage::Row(row) if capture && out.captured.is_empty() => {
                    out.captured = (0..row.len())
                        .map(|c| row.get(c).unwrap_or("").as_bytes().to_vec())
                        .collect();
                }
                SimpleQueryMessage::CommandComplete(n) => out.rows += n,
                _ => {}
            }
        }
        Ok(out)
    }

    async fn run(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        let rows = match *op {
            Op::Nop => 0,
            Op::Put { key, value } => {
                self.kv(PUT, &[Param::Raw(key.as_bytes()), Param::Raw(value)])
                    .await?
            }
            Op::Get { key } => self.kv(GET, &[Param::Raw(key.as_bytes())]).await?,
            Op::Update { key, value } => {
                self.kv(UPDATE, &[Param::Raw(key.as_bytes()), Param::Raw(value)])
                    .await?
            }
            Op::Delete { key } => self.kv(DELETE, &[Param::Raw(key.as_bytes())]).await?,
            Op::Native {
                op: NativeOp::Sql { id, query, .. },
                args,
                capture,
            } => return self.native(*id, query, args, capture).await,
            Op::Native { .. } => return Err(unsupported(op, "postgres://")),
            Op::Begin => return self.batch("BEGIN").await,
            Op::Commit => return self.batch("COMMIT").await,
            Op::Rollback => return self.batch("ROLLBACK").await,
        };
        Ok(Outcome::rows(rows))
    }

    async fn batch(&mut self, sql: &str) -> Result<Outcome, OpError> {
        self.client
            .batch_execute(sql)
            .await
            .map_err(|e| classify(&e))?;
        Ok(Outcome::default())
    }

    /// Binary COPY of `records` into a temporary table, then one upsert into loadrig_kv.
    async fn copy_batch(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        // A key given twice in one batch keeps its last value (an upsert cannot touch a
        // row twice in one statement).
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(records.len());
        for (i, (k, _)) in records.iter().enumerate() {
            last.insert(k.as_str(), i);
        }
        let mut buf = BytesMut::with_capacity(64 + records.len() * 32);
        buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
        buf.extend_from_slice(&0i32.to_be_bytes()); // flags
        buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
        for (i, (k, v)) in records.iter().enumerate() {
            if last.get(k.as_str()) != Some(&i) {
                continue;
            }
            let (klen, vlen) = match (i32::try_from(k.len()), i32::try_from(v.len())) {
                (Ok(a), Ok(b)) => (a, b),
                _ => {
                    return Err(OpError::new(
                        ErrorClass::Other,
                        "a record is over 2 GiB: PostgreSQL cannot store it",
                    ))
                }
            };
            buf.extend_from_slice(&2i16.to_be_bytes());
            buf.extend_from_slice(&klen.to_be_bytes());
            buf.extend_from_slice(k.as_bytes());
            buf.extend_from_slice(&vlen.to_be_bytes());
            buf.extend_from_slice(v);
        }
        buf.extend_from_slice(&(-1i16).to_be_bytes());

        let c = &self.client;
        let cl = |e: tokio_postgres::Error| classify(&e);
        c.batch_execute(
            "BEGIN; CREATE TEMP TABLE IF NOT EXISTS loadrig_load (k VARCHAR(255), v BYTEA) \
             ON COMMIT DELETE ROWS",
        )
        .await
        .map_err(cl)?;
        let result = async {
            let sink = c
                .copy_in::<_, Bytes>("COPY loadrig_load (k, v) FROM STDIN (FORMAT binary)")
                .await
                .map_err(cl)?;
            let mut sink = std::pin::pin!(sink);
            sink.send(buf.freeze()).await.map_err(cl)?;
            sink.as_mut().finish().await.map_err(cl)?;
            c.batch_execute(
                "INSERT INTO loadrig_kv (k, v) SELECT k, v FROM loadrig_load \
                 ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v; COMMIT",
            )
            .await
            .map_err(cl)
        }
        .await;
        if result.is_err() {
            let _ = c.batch_execute("ROLLBACK").await;
        }
        result
    }

    async fn drop_namespace(&mut self) -> Result<u64, OpError> {
        let rows = self
            .client
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
                 AND tablename LIKE 'loadrig|_%' ESCAPE '|' ORDER BY 1",
                &[],
            )
            .await
            .map_err(|e| classify(&e))?;
        let names: Vec<String> = rows
            .iter()
            .map(|r| r.try_get::<_, String>(0))
            .collect::<Result<_, _>>()
            .map_err(|e| classify(&e))?;
        if names.is_empty() {
            return Ok(0);
        }
        // One statement, so references between loadrig tables do not matter; no CASCADE,
        // so an object of someone else's that depends on them stops the drop instead.
        let list: Vec<String> = names
            .iter()
            .map(|n| format!("\"{}\"", n.replace('"', "\"\"")))
            .collect();
        self.client
            .batch_execute(&format!("DROP TABLE {}", list.join(", ")))
            .await
            .map_err(|e| classify(&e))?;
        Ok(names.len() as u64)
    }
}

impl Session for PgSession {
    async fn setup(&mut self) -> Result<(), OpError> {
        self.client
            .batch_execute(CREATE_KV)
            .await
            .map_err(|e| classify(&e))
    }

    async fn server_version(&mut self) -> Option<String> {
        let messages = self.client.simple_query("SHOW server_version").await.ok()?;
        messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(|v| format!("PostgreSQL {v}")),
            _ => None,
        })
    }

    fn execute(&mut self, op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        self.run(op)
    }

    async fn authenticate(&mut self) -> Result<Outcome, OpError> {
        Err(OpError::new(
            ErrorClass::Other,
            "PostgreSQL cannot authenticate again on an open connection: measure the handshake \
             with the `connect` operation (or --connection per-op)",
        ))
    }

    async fn cleanup(&mut self) -> Result<u64, OpError> {
        self.drop_namespace().await
    }

    async fn load(&mut self, records: &[(String, Vec<u8>)]) -> Result<(), OpError> {
        self.copy_batch(records).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b
    }

    #[test]
    fn numeric_binary_to_text() {
        // 12345.678 = 1|2345|6780, weight 1, dscale 3
        assert_eq!(
            numeric_text(&numeric(3, 1, 0, 3, &[1, 2345, 6780])).unwrap(),
            "12345.678"
        );
        // -0.05 = 0500 at weight -1, dscale 2
        assert_eq!(
            numeric_text(&numeric(1, -1, 0x4000, 2, &[500])).unwrap(),
            "-0.05"
        );
        // 1000000 = 100|0000 with trailing zero groups dropped: 1 digit 100 at weight 1
        assert_eq!(
            numeric_text(&numeric(1, 1, 0, 0, &[100])).unwrap(),
            "1000000"
        );
        assert_eq!(numeric_text(&numeric(0, 0, 0, 2, &[])).unwrap(), "0.00");
        assert_eq!(numeric_text(&numeric(0, 0, 0xC000, 0, &[])).unwrap(), "NaN");
        assert!(numeric_text(&[0, 1]).is_none());
    }

    #[test]
    fn arguments_convert_to_declared_types() {
        assert!(matches!(
            convert(0, b" 42 ", &Type::INT4),
            Ok(Param::I32(42))
        ));
        assert!(matches!(
            convert(0, b"TRUE", &Type::BOOL),
            Ok(Param::Bool(true))
        ));
        assert!(matches!(convert(0, b"", &Type::INT8), Ok(Param::Null)));
        assert!(matches!(convert(0, b"", &Type::TEXT), Ok(Param::Raw(b""))));
        assert!(matches!(
            convert(0, b"1.50", &Type::NUMERIC),
            Ok(Param::Text(_))
        ));
        let e = convert(1, b"12x", &Type::INT2).unwrap_err();
        assert_eq!(e.class, ErrorClass::Other);
        assert!(
            e.message
                .starts_with("parameter $2 ('12x') is not a valid int2"),
            "{}",
            e.message
        );
    }

    #[test]
    fn binary_values_read_as_text() {
        let st = Styles {
            timezone: "Etc/UTC".into(),
            datestyle: "ISO, MDY".into(),
            intervalstyle: "postgres".into(),
        };
        let text =
            |ty: &Type, raw: &[u8]| String::from_utf8(to_text(ty, raw, &st).unwrap()).unwrap();
        assert_eq!(text(&Type::INT8, &(-7i64).to_be_bytes()), "-7");
        assert_eq!(text(&Type::INT2, &(-2i16).to_be_bytes()), "-2");
        assert_eq!(text(&Type::BOOL, &[1]), "t");
        assert_eq!(text(&Type::FLOAT8, &2.5f64.to_be_bytes()), "2.5");
        assert_eq!(text(&Type::TEXT, b"abc"), "abc");
        assert_eq!(text(&Type::JSONB, b"\x01{}"), "{}");
        assert_eq!(text(&Type::DATE, &(-1i32).to_be_bytes()), "1999-12-31");
        assert_eq!(
            text(&Type::TIMESTAMP, &1_500_000i64.to_be_bytes()),
            "2000-01-01 00:00:01.5"
        );
        assert_eq!(
            text(&Type::TIMESTAMPTZ, &0i64.to_be_bytes()),
            "2000-01-01 00:00:00+00"
        );
        let mut iv = 3_723_000_000i64.to_be_bytes().to_vec();
        iv.extend((-1i32).to_be_bytes());
        iv.extend(14i32.to_be_bytes());
        assert_eq!(
            text(&Type::INTERVAL, &iv),
            "1 year 2 mons -1 days +01:02:03"
        );
        let berlin = Styles {
            timezone: "Europe/Berlin".into(),
            ..st.clone()
        };
        let e = to_text(&Type::TIMESTAMPTZ, &0i64.to_be_bytes(), &berlin).unwrap_err();
        assert!(e.contains("'Europe/Berlin'"), "{e}");
        assert!(to_text(&Type::POINT, &[0; 16], &st).is_err());
    }

    #[test]
    fn floats_print_as_postgresql_does() {
        let f8 = |v: f64| float_text(v, &format!("{v:e}"), 15);
        assert_eq!(f8(0.1), "0.1");
        assert_eq!(f8(1e15), "1e+15");
        assert_eq!(f8(123456789012345.0), "123456789012345");
        assert_eq!(f8(0.0001), "0.0001");
        assert_eq!(f8(0.00001), "1e-05");
        assert_eq!(f8(-0.0), "-0");
        assert_eq!(f8(1.5e-300), "1.5e-300");
        assert_eq!(f8(f64::NEG_INFINITY), "-Infinity");
        let f4 = |v: f32| float_text(f64::from(v), &format!("{v:e}"), 6);
        assert_eq!(f4(123456.0), "123456");
        assert_eq!(f4(1234567.0), "1.234567e+06");
        assert_eq!(f4(0.1), "0.1");
    }

    #[test]
    fn dates_count_from_2000_in_the_proleptic_gregorian_calendar() {
        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(-730_119), "0001-01-01");
        assert_eq!(date_text(-730_120), "0001-12-31 BC");
        assert_eq!(date_text(-730_486), "0002-12-31 BC");
        assert_eq!(date_text(8_460), "2023-03-01");
    }
}
