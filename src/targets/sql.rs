//! What the SQL targets (postgres://, mysql://, sqlite://) share: the kv table, the text of
//! its statements in each dialect and of the queries cleanup runs; for the two servers,
//! the statement cache of a session, the handshake's errors and the SQLSTATE classes.

use std::future::Future;
use std::time::Duration;

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use super::{Params, TargetUrl};
use crate::error::InputError;
use crate::vocab::{ErrorClass, OpError, Outcome, RecordOp, RunStep, ValueKind, RECORD_TABLE};

/// The kv table's name, as a literal for `concat!`: the one place that names it.
macro_rules! kv_table {
    () => {
        "loadrig_kv"
    };
}
pub(crate) use kv_table;

/// Whose SQL a statement is written in: placeholders, upserts, types and catalogs differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    Mysql,
    Sqlite,
}

/// A kv operation, each with a statement of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kv {
    Put,
    Get,
    Update,
    Delete,
}

impl Dialect {
    /// Create the kv table where it is missing (setup): a key of up to 255 characters
    /// and a value of bytes. On PostgreSQL, two sessions running `CREATE TABLE IF NOT
    /// EXISTS` at once can both miss the table and one then fails on the catalog's unique
    /// index (two rigs started together on a fresh database), so the statement first takes
    /// a transaction-level advisory lock of loadrig's own; both go as one simple query, one
    /// implicit transaction, which releases it.
    pub const fn create_kv(self) -> &'static str {
        match self {
            Dialect::Postgres => concat!(
                // The lock's key is "load" in ASCII.
                "SELECT pg_advisory_xact_lock(1819238756); CREATE TABLE IF NOT EXISTS ",
                kv_table!(),
                " (k VARCHAR(255) PRIMARY KEY, v BYTEA NOT NULL)"
            ),
            Dialect::Mysql => concat!(
                "CREATE TABLE IF NOT EXISTS ",
                kv_table!(),
                " (k VARCHAR(255) PRIMARY KEY, v LONGBLOB NOT NULL)"
            ),
            Dialect::Sqlite => concat!(
                "CREATE TABLE IF NOT EXISTS ",
                kv_table!(),
                " (k TEXT PRIMARY KEY, v BLOB NOT NULL)"
            ),
        }
    }

    /// The statement of a kv operation: put is an upsert. Its parameters are the key,
    /// then the value, except in MySQL's update, whose value comes first (`?` bind in
    /// order of appearance).
    pub const fn kv(self, op: Kv) -> &'static str {
        match (self, op) {
            (Dialect::Postgres, Kv::Put) => concat!(
                "INSERT INTO ",
                kv_table!(),
                " (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
            ),
            (Dialect::Postgres, Kv::Get) => concat!("SELECT v FROM ", kv_table!(), " WHERE k = $1"),
            (Dialect::Postgres, Kv::Update) => {
                concat!("UPDATE ", kv_table!(), " SET v = $2 WHERE k = $1")
            }
            (Dialect::Postgres, Kv::Delete) => {
                concat!("DELETE FROM ", kv_table!(), " WHERE k = $1")
            }
            (Dialect::Mysql, Kv::Put) => concat!(
                "INSERT INTO ",
                kv_table!(),
                " (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)"
            ),
            (Dialect::Mysql, Kv::Get) => concat!("SELECT v FROM ", kv_table!(), " WHERE k = ?"),
            (Dialect::Mysql, Kv::Update) => {
                concat!("UPDATE ", kv_table!(), " SET v = ? WHERE k = ?")
            }
            (Dialect::Mysql, Kv::Delete) => concat!("DELETE FROM ", kv_table!(), " WHERE k = ?"),
            (Dialect::Sqlite, Kv::Put) => concat!(
                "INSERT INTO ",
                kv_table!(),
                "(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v"
            ),
            // The length only: a get need not copy the value out.
            (Dialect::Sqlite, Kv::Get) => {
                concat!("SELECT length(v) FROM ", kv_table!(), " WHERE k = ?1")
            }
            (Dialect::Sqlite, Kv::Update) => {
                concat!("UPDATE ", kv_table!(), " SET v = ?2 WHERE k = ?1")
            }
            (Dialect::Sqlite, Kv::Delete) => concat!("DELETE FROM ", kv_table!(), " WHERE k = ?1"),
        }
    }

    /// The names of loadrig's tables (`loadrig_` and more) in the current schema or
    /// database, which cleanup drops.
    pub const fn list_tables(self) -> &'static str {
        match self {
            Dialect::Postgres => {
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
                 AND tablename LIKE 'loadrig|_%' ESCAPE '|' ORDER BY 1"
            }
            Dialect::Mysql => {
                "SELECT table_name FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' \
                 AND table_name LIKE 'loadrig|_%' ESCAPE '|' ORDER BY 1"
            }
            Dialect::Sqlite => {
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'loadrig\\_%' ESCAPE '\\'"
            }
        }
    }

    /// The statement that carries out a `before_run` step, or `None` where the server has
    /// nothing to do: MariaDB's InnoDB purges old row versions by itself, and an SQLite
    /// update leaves no dead rows behind.
    pub fn run_step(self, step: &RunStep) -> Option<String> {
        match (self, step) {
            (Dialect::Postgres, RunStep::Vacuum(t)) => Some(format!(
                "VACUUM {}",
                self.table_list(std::slice::from_ref(t))
            )),
            (Dialect::Mysql | Dialect::Sqlite, RunStep::Vacuum(_)) => None,
            (Dialect::Postgres | Dialect::Mysql, RunStep::Empty(t)) => Some(format!(
                "TRUNCATE TABLE {}",
                self.table_list(std::slice::from_ref(t))
            )),
            // SQLite has no TRUNCATE; a DELETE without WHERE empties the table at once.
            (Dialect::Sqlite, RunStep::Empty(t)) => Some(format!(
                "DELETE FROM {}",
                self.table_list(std::slice::from_ref(t))
            )),
            (_, RunStep::Sql(statement)) => Some(statement.clone()),
        }
    }

    /// One `DROP TABLE` of all the tables named (SQLite takes one at a time), each name
    /// quoted as an identifier.
    pub fn drop_tables(self, names: &[String]) -> String {
        format!("DROP TABLE {}", self.table_list(names))
    }

    /// Table names quoted as identifiers, separated by commas.
    pub fn table_list(self, names: &[String]) -> String {
        let list: Vec<String> = names
            .iter()
            .map(|n| match self {
                Dialect::Mysql => format!("`{}`", n.replace('`', "``")),
                Dialect::Postgres | Dialect::Sqlite => format!("\"{}\"", n.replace('"', "\"\"")),
            })
            .collect();
        list.join(", ")
    }
}

/// The drop and create statements of the record table with `fields` fields: YCSB's JDBC
/// layout (`YCSB_KEY` primary key, `FIELD0` ... as text), the same text on every dialect.
pub fn create_records(fields: usize) -> [String; 2] {
    let columns: String = (0..fields).map(|i| format!(", FIELD{i} TEXT")).collect();
    [
        format!("DROP TABLE IF EXISTS {RECORD_TABLE}"),
        format!("CREATE TABLE {RECORD_TABLE} (YCSB_KEY VARCHAR(255) PRIMARY KEY{columns})"),
    ]
}

/// A record to load: its key and its fields' values.
pub type Record = (String, Vec<Vec<u8>>);

/// One multi-row INSERT of `rows` records of `fields` fields into the record table
/// (placeholders `$1`, ... row after row: key, then the fields).
pub fn insert_rows(fields: usize, rows: usize) -> String {
    let columns: String = (0..fields).map(|i| format!(", FIELD{i}")).collect();
    let mut values = Vec::with_capacity(rows);
    for r in 0..rows {
        let marks: Vec<String> = (1..=fields + 1)
            .map(|c| format!("${}", r * (fields + 1) + c))
            .collect();
        values.push(format!("({})", marks.join(", ")));
    }
    format!(
        "INSERT INTO {RECORD_TABLE} (YCSB_KEY{columns}) VALUES {}",
        values.join(", ")
    )
}

/// A load batch cut into multi-row INSERTs: each at most 30,000 parameters (PostgreSQL and
/// MySQL take 65,535) and 4 MiB of values (below MariaDB's default max_allowed_packet).
pub fn insert_chunks(records: &[Record]) -> Vec<&[Record]> {
    const PARAMS: usize = 30_000;
    const BYTES: usize = 4 << 20;
    let mut chunks = Vec::new();
    let (mut start, mut params, mut bytes) = (0, 0, 0);
    for (i, (key, values)) in records.iter().enumerate() {
        let p = values.len() + 1;
        let b = key.len() + values.iter().map(Vec::len).sum::<usize>();
        if i > start && (params + p > PARAMS || bytes + b > BYTES) {
            chunks.push(&records[start..i]);
            (start, params, bytes) = (i, 0, 0);
        }
        params += p;
        bytes += b;
    }
    if start < records.len() {
        chunks.push(&records[start..]);
    }
    chunks
}

/// A record operation as SQL on the record table: the statement (placeholders `$1`, `$2`,
/// ... in order of appearance, which every SQL target accepts), its parameters' kinds and
/// its arguments in placeholder order. `args` are the operation's arguments in
/// [`crate::vocab::NativeOp::map_args`] order.
pub fn record_statement(
    op: &RecordOp<ValueKind>,
    args: &[Vec<u8>],
) -> Result<RecordStatement, OpError> {
    let field = |at: usize| -> Result<String, OpError> {
        let text = args
            .get(at)
            .map(|a| String::from_utf8_lossy(a))
            .unwrap_or_default();
        match text.trim().parse::<usize>() {
            Ok(n) => Ok(format!("FIELD{n}")),
            Err(_) => Err(OpError::new(
                ErrorClass::Other,
                format!("record field '{text}' is not a field number"),
            )),
        }
    };
    let text = |n: usize| vec![ValueKind::Bytes; n];
    let t = RECORD_TABLE;
    Ok(match op {
        RecordOp::Insert { values, .. } => {
            let columns: String = (0..values.len()).map(|i| format!(", FIELD{i}")).collect();
            let marks: String = (2..=values.len() + 1).map(|i| format!(", ${i}")).collect();
            RecordStatement {
                query: format!("INSERT INTO {t} (YCSB_KEY{columns}) VALUES ($1{marks})"),
                kinds: text(values.len() + 1),
                args: args.to_vec(),
            }
        }
        RecordOp::Read { field: f, .. } => {
            let columns = match f {
                Some(_) => field(1)?,
                None => "*".to_string(),
            };
            RecordStatement {
                query: format!("SELECT {columns} FROM {t} WHERE YCSB_KEY = $1"),
                kinds: text(1),
                args: args[..1].to_vec(),
            }
        }
        RecordOp::Update {
            field: f, values, ..
        } => {
            let (set, first) = match f {
                Some(_) => (format!("{} = $1", field(1)?), 2),
                None => (
                    (0..values.len())
                        .map(|i| format!("FIELD{i} = ${}", i + 1))
                        .collect::<Vec<_>>()
                        .join(", "),
                    1,
                ),
            };
            let mut ordered = args[first..].to_vec();
            ordered.push(args[0].clone());
            RecordStatement {
                query: format!(
                    "UPDATE {t} SET {set} WHERE YCSB_KEY = ${}",
                    values.len() + 1
                ),
                kinds: text(values.len() + 1),
                args: ordered,
            }
        }
        RecordOp::Scan { field: f, .. } => {
            let columns = match f {
                Some(_) => format!("YCSB_KEY, {}", field(2)?),
                None => "*".to_string(),
            };
            RecordStatement {
                query: format!(
                    "SELECT {columns} FROM {t} WHERE YCSB_KEY >= $1 ORDER BY YCSB_KEY LIMIT $2"
                ),
                kinds: vec![ValueKind::Bytes, ValueKind::Integer],
                args: args[..2].to_vec(),
            }
        }
        RecordOp::Delete { .. } => RecordStatement {
            query: format!("DELETE FROM {t} WHERE YCSB_KEY = $1"),
            kinds: text(1),
            args: args[..1].to_vec(),
        },
    })
}

/// `$1`, `$2`, ... as `?` (MySQL's placeholders), for record statements, whose
/// placeholders come in order and which hold no quotes.
pub fn question_marks(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// A record operation as one SQL statement ([`record_statement`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordStatement {
    pub query: String,
    pub kinds: Vec<ValueKind>,
    pub args: Vec<Vec<u8>>,
}

/// A record statement ready to run: its number, text and parameter kinds, and where its
/// arguments come from in the operation's.
#[derive(Debug, Clone)]
pub struct RecordPlan {
    pub id: usize,
    pub query: Rc<str>,
    pub kinds: Rc<[ValueKind]>,
    /// Without `key_last`: the first `prefix` arguments as they are.
    prefix: usize,
    /// An update: its arguments from this one on (the values), then the key.
    key_last: Option<usize>,
}

impl RecordPlan {
    /// The arguments in placeholder order, borrowed unless an update reorders them.
    pub fn args<'a>(&self, args: &'a [Vec<u8>]) -> Cow<'a, [Vec<u8>]> {
        match self.key_last {
            None => Cow::Borrowed(&args[..self.prefix.min(args.len())]),
            Some(first) => {
                let mut out = args[first.min(args.len())..].to_vec();
                out.extend(args.first().cloned());
                Cow::Owned(out)
            }
        }
    }
}

/// Record statements by shape (operation, field, number of values), so an operation
/// writes no SQL text once its shape has been seen: the statement numbers and texts of a
/// session.
#[derive(Debug, Default)]
pub struct RecordCache {
    plans: HashMap<(u8, Option<usize>, usize), RecordPlan>,
}

impl RecordCache {
    /// The plan of record operation `op` with its arguments; `question_marks` writes `?`
    /// placeholders (MySQL).
    pub fn plan(
        &mut self,
        op: &RecordOp<ValueKind>,
        args: &[Vec<u8>],
        question_marks: bool,
    ) -> Result<RecordPlan, OpError> {
        // The field's number, if the operation names one (a field that is not a number
        // fails in record_statement, with its message).
        let number = |field: Option<&ValueKind>, at: usize| match field {
            None => Ok(None),
            Some(_) => args
                .get(at)
                .and_then(|a| std::str::from_utf8(a).ok())
                .and_then(|t| t.trim().parse::<usize>().ok())
                .map(Some)
                .ok_or(()),
        };
        let key = match op {
            RecordOp::Insert { values, .. } => Ok((0, None, values.len())),
            RecordOp::Read { field, .. } => number(field.as_ref(), 1).map(|f| (1, f, 0)),
            RecordOp::Update { field, values, .. } => {
                number(field.as_ref(), 1).map(|f| (2, f, values.len()))
            }
            RecordOp::Scan { field, .. } => number(field.as_ref(), 2).map(|f| (3, f, 0)),
            RecordOp::Delete { .. } => Ok((4, None, 0)),
        };
        let Ok(key) = key else {
            return Err(record_statement(op, args).err().unwrap_or_else(|| {
                OpError::new(ErrorClass::Other, "record field is not a field number")
            }));
        };
        if let Some(plan) = self.plans.get(&key) {
            return Ok(plan.clone());
        }
        let st = record_statement(op, args)?;
        let query = if question_marks {
            self::question_marks(&st.query)
        } else {
            st.query
        };
        let (prefix, key_last) = match op {
            RecordOp::Update { field, .. } => (0, Some(if field.is_some() { 2 } else { 1 })),
            _ => (st.args.len(), None),
        };
        let plan = RecordPlan {
            id: RECORD_IDS + self.plans.len(),
            query: query.into(),
            kinds: st.kinds.into(),
            prefix,
            key_last,
        };
        self.plans.insert(key, plan.clone());
        Ok(plan)
    }
}

/// Where the statement numbers of record operations start: above any workload's own, so
/// they share [`Prepared::native`]'s cache without meeting them.
pub const RECORD_IDS: usize = 1 << 40;

/// The statements a session has prepared: the kv ones by operation, native ones by their
/// workload-wide number; each prepared on first use.
pub struct Prepared<S> {
    dialect: Dialect,
    kv: [Option<S>; 4],
    native: Vec<Option<S>>,
    /// Record statements by their number (from [`Prepared::records`]).
    record: HashMap<usize, S>,
    pub records: RecordCache,
    /// Numbers of other statements on the record table (the load's multi-row INSERTs).
    record_ids: HashMap<String, usize>,
}

impl<S: Clone> Prepared<S> {
    pub fn new(dialect: Dialect) -> Self {
        Prepared {
            dialect,
            kv: Default::default(),
            native: Vec::new(),
            record: HashMap::new(),
            records: RecordCache::default(),
            record_ids: HashMap::new(),
        }
    }

    /// The statement number of a load statement's text, the same for the same text (above
    /// the numbers of [`Prepared::records`]).
    pub fn record_id(&mut self, query: &str) -> usize {
        if let Some(id) = self.record_ids.get(query) {
            return *id;
        }
        let id = RECORD_IDS + (1 << 20) + self.record_ids.len();
        self.record_ids.insert(query.to_string(), id);
        id
    }

    /// The statement of `op` if it is prepared.
    pub fn kv_ready(&self, op: Kv) -> Option<S> {
        self.kv[op as usize].clone()
    }

    /// Native statement `id` if it is prepared.
    pub fn native_ready(&self, id: usize) -> Option<S> {
        if id >= RECORD_IDS {
            return self.record.get(&id).cloned();
        }
        self.native.get(id)?.clone()
    }

    /// The statement of `op`, from `prepare` (given its text) the first time.
    pub async fn kv<E, F>(
        &mut self,
        op: Kv,
        prepare: impl FnOnce(&'static str) -> F,
    ) -> Result<S, E>
    where
        F: Future<Output = Result<S, E>>,
    {
        let slot = &mut self.kv[op as usize];
        if let Some(st) = slot {
            return Ok(st.clone());
        }
        let st = prepare(self.dialect.kv(op)).await?;
        *slot = Some(st.clone());
        Ok(st)
    }

    /// Native statement `id`, from `prepare` the first time (and again after a failure).
    pub async fn native<E, F>(&mut self, id: usize, prepare: impl FnOnce() -> F) -> Result<S, E>
    where
        F: Future<Output = Result<S, E>>,
    {
        if id >= RECORD_IDS {
            if let Some(st) = self.record.get(&id) {
                return Ok(st.clone());
            }
            let st = prepare().await?;
            self.record.insert(id, st.clone());
            return Ok(st);
        }
        if self.native.len() <= id {
            self.native.resize(id + 1, None);
        }
        if let Some(st) = &self.native[id] {
            return Ok(st.clone());
        }
        let st = prepare().await?;
        self.native[id] = Some(st.clone());
        Ok(st)
    }

    /// Forget every statement (the server has dropped them).
    pub fn clear(&mut self) {
        self.kv = Default::default();
        self.native.clear();
        self.record.clear();
    }
}

/// A native statement's placeholders and the operation's arguments must agree in number.
pub fn check_arity(query: &str, placeholders: usize, args: usize) -> Result<(), OpError> {
    if placeholders == args {
        return Ok(());
    }
    Err(OpError::new(
        ErrorClass::Other,
        format!(
            "the query has {placeholders} parameter(s) but the operation gives {args}: {query}"
        ),
    ))
}

/// Connect within `limit` (the option connect_timeout). A driver's error is class auth
/// where `classify` says so and connect otherwise (a server refusing the session is not
/// worth retrying as another class), with a message that says which.
pub async fn handshake<C, E>(
    limit: Duration,
    connecting: impl Future<Output = Result<C, E>>,
    classify: impl FnOnce(&E) -> OpError,
) -> Result<C, OpError> {
    match tokio::time::timeout(limit, connecting).await {
        Ok(Ok(connection)) => Ok(connection),
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
            Err(err)
        }
        Err(_) => Err(OpError::new(
            ErrorClass::Connect,
            format!(
                "connection failed (connect): no complete handshake within {limit:?} (option connect_timeout)"
            ),
        )),
    }
}

/// The transaction isolation a session asks for (option `isolation`); without it the
/// server's default stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    Serializable,
    RepeatableRead,
    ReadCommitted,
}

impl Isolation {
    const NAMES: [(&'static str, Isolation); 3] = [
        ("serializable", Isolation::Serializable),
        ("repeatable-read", Isolation::RepeatableRead),
        ("read-committed", Isolation::ReadCommitted),
    ];

    /// The `isolation` option of the URL or the workload parameters, if given.
    pub fn from_options(url: &TargetUrl, params: &Params) -> Result<Option<Isolation>, InputError> {
        let Some(given) = url.option("isolation", params) else {
            return Ok(None);
        };
        let given = given.trim();
        Isolation::NAMES
            .iter()
            .find(|(name, _)| *name == given)
            .map(|&(_, level)| Some(level))
            .ok_or_else(|| {
                InputError::new(format!(
                    "{}:// isolation={given}: unknown isolation level",
                    url.scheme
                ))
                .help("expected serializable, repeatable-read or read-committed")
            })
    }

    /// As SQL writes it after `ISOLATION LEVEL`.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::Serializable => "SERIALIZABLE",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::ReadCommitted => "READ COMMITTED",
        }
    }

    /// As the option writes it.
    pub fn name(self) -> &'static str {
        Isolation::NAMES
            .iter()
            .find(|(_, level)| *level == self)
            .map_or("serializable", |(name, _)| name)
    }
}

/// The class of the SQLSTATE classes that mean the same on every server: 23 integrity
/// constraint violation, 28 invalid authorization, 08 connection exception.
pub fn sqlstate_class(state: &str) -> Option<ErrorClass> {
    match state.get(..2) {
        Some("23") => Some(ErrorClass::Constraint),
        Some("28") => Some(ErrorClass::Auth),
        Some("08") => Some(ErrorClass::Connect),
        _ => None,
    }
}

/// The outcome of a statement without a result set; its capture is the affected-row count.
pub fn affected(rows: u64, capture: bool) -> Outcome {
    Outcome {
        rows,
        captured: if capture {
            vec![rows.to_string().into_bytes()]
        } else {
            Vec::new()
        },
        rolled_back: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_name_the_kv_table_with_each_dialects_placeholders() {
        let all = [Kv::Put, Kv::Get, Kv::Update, Kv::Delete];
        for (dialect, first) in [
            (Dialect::Postgres, "$1"),
            (Dialect::Mysql, "?"),
            (Dialect::Sqlite, "?1"),
        ] {
            assert!(dialect.create_kv().contains("loadrig_kv"));
            for op in all {
                let sql = dialect.kv(op);
                assert!(sql.contains("loadrig_kv") && sql.contains(first), "{sql}");
            }
        }
        assert_eq!(
            Dialect::Postgres.kv(Kv::Put),
            "INSERT INTO loadrig_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
        );
        assert_eq!(
            Dialect::Mysql.kv(Kv::Update),
            "UPDATE loadrig_kv SET v = ? WHERE k = ?"
        );
        assert_eq!(
            Dialect::Sqlite.create_kv(),
            "CREATE TABLE IF NOT EXISTS loadrig_kv (k TEXT PRIMARY KEY, v BLOB NOT NULL)"
        );
    }

    #[test]
    fn record_operations_as_sql_with_arguments_in_placeholder_order() {
        use RecordOp::*;
        let b = ValueKind::Bytes;
        let args = |v: &[&str]| v.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
        let sql = |op: RecordOp<ValueKind>, a: &[&str]| record_statement(&op, &args(a)).unwrap();
        let st = sql(
            Insert {
                key: b,
                values: vec![b; 2],
            },
            &["k", "v0", "v1"],
        );
        assert_eq!(
            st.query,
            "INSERT INTO loadrig_usertable (YCSB_KEY, FIELD0, FIELD1) VALUES ($1, $2, $3)"
        );
        assert_eq!(st.args, args(&["k", "v0", "v1"]));
        let st = sql(
            Read {
                key: b,
                field: None,
            },
            &["k"],
        );
        assert_eq!(
            st.query,
            "SELECT * FROM loadrig_usertable WHERE YCSB_KEY = $1"
        );
        let st = sql(
            Read {
                key: b,
                field: Some(ValueKind::Integer),
            },
            &["k", "3"],
        );
        assert_eq!(
            st.query,
            "SELECT FIELD3 FROM loadrig_usertable WHERE YCSB_KEY = $1"
        );
        assert_eq!(st.args, args(&["k"]));
        let st = sql(
            Update {
                key: b,
                field: Some(ValueKind::Integer),
                values: vec![b],
            },
            &["k", "7", "v"],
        );
        assert_eq!(
            st.query,
            "UPDATE loadrig_usertable SET FIELD7 = $1 WHERE YCSB_KEY = $2"
        );
        assert_eq!(st.args, args(&["v", "k"]));
        let st = sql(
            Update {
                key: b,
                field: None,
                values: vec![b; 2],
            },
            &["k", "a", "c"],
        );
        assert_eq!(
            st.query,
            "UPDATE loadrig_usertable SET FIELD0 = $1, FIELD1 = $2 WHERE YCSB_KEY = $3"
        );
        assert_eq!(st.args, args(&["a", "c", "k"]));
        let st = sql(
            Scan {
                key: b,
                count: ValueKind::Integer,
                field: None,
            },
            &["k", "5"],
        );
        assert_eq!(
            st.query,
            "SELECT * FROM loadrig_usertable WHERE YCSB_KEY >= $1 ORDER BY YCSB_KEY LIMIT $2"
        );
        assert_eq!(st.kinds, [ValueKind::Bytes, ValueKind::Integer]);
        assert_eq!(
            question_marks(&st.query),
            "SELECT * FROM loadrig_usertable WHERE YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?"
        );
        let st = sql(Delete { key: b }, &["k"]);
        assert_eq!(
            st.query,
            "DELETE FROM loadrig_usertable WHERE YCSB_KEY = $1"
        );
        let e = record_statement(
            &Read {
                key: b,
                field: Some(b),
            },
            &args(&["k", "x"]),
        )
        .unwrap_err();
        assert_eq!(e.message, "record field 'x' is not a field number");
        assert_eq!(
            create_records(2),
            [
                "DROP TABLE IF EXISTS loadrig_usertable".to_string(),
                "CREATE TABLE loadrig_usertable (YCSB_KEY VARCHAR(255) PRIMARY KEY, FIELD0 TEXT, FIELD1 TEXT)".to_string()
            ]
        );
    }

    #[test]
    fn record_plans_are_kept_by_shape_and_borrow_their_arguments() {
        use RecordOp::*;
        let (b, i) = (ValueKind::Bytes, ValueKind::Integer);
        let args = |v: &[&str]| v.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
        let mut cache = RecordCache::default();
        let read = Read {
            key: b,
            field: Some(i),
        };
        let a = cache.plan(&read, &args(&["k1", "3"]), false).unwrap();
        let again = cache.plan(&read, &args(&["k2", "3"]), false).unwrap();
        assert_eq!((a.id, &*a.query), (again.id, &*again.query));
        let other = cache.plan(&read, &args(&["k1", "4"]), false).unwrap();
        assert_ne!(a.id, other.id);
        assert_eq!(
            &*other.query,
            "SELECT FIELD4 FROM loadrig_usertable WHERE YCSB_KEY = $1"
        );
        let all = Read {
            key: b,
            field: None,
        };
        let plan = cache.plan(&all, &args(&["k1"]), false).unwrap();
        assert!(matches!(plan.args(&args(&["k1"])), Cow::Borrowed(_)));
        // A field that is not a number never runs as another shape.
        let e = cache.plan(&read, &args(&["k1", "x"]), false).unwrap_err();
        assert_eq!(e.message, "record field 'x' is not a field number");
        let update = Update {
            key: b,
            field: Some(i),
            values: vec![b],
        };
        let plan = cache.plan(&update, &args(&["k", "1", "v"]), true).unwrap();
        assert_eq!(
            &*plan.query,
            "UPDATE loadrig_usertable SET FIELD1 = ? WHERE YCSB_KEY = ?"
        );
        assert_eq!(&*plan.args(&args(&["k", "1", "v"])), &args(&["v", "k"])[..]);
        let scan = Scan {
            key: b,
            count: i,
            field: None,
        };
        let plan = cache.plan(&scan, &args(&["k", "7"]), false).unwrap();
        assert_eq!(&*plan.args(&args(&["k", "7"])), &args(&["k", "7"])[..]);
        assert_eq!(&*plan.kinds, [b, i]);
    }

    #[test]
    fn loads_go_in_multi_row_inserts_within_the_servers_limits() {
        assert_eq!(
            insert_rows(2, 2),
            "INSERT INTO loadrig_usertable (YCSB_KEY, FIELD0, FIELD1) VALUES ($1, $2, $3), ($4, $5, $6)"
        );
        let record = |n: usize| ("k".to_string(), vec![vec![b'x'; n]; 10]);
        let small: Vec<_> = (0..5000).map(|_| record(100)).collect();
        let sizes: Vec<usize> = insert_chunks(&small).iter().map(|c| c.len()).collect();
        assert_eq!(
            sizes,
            [2727, 2273],
            "30,000 parameters of 11 per record at most"
        );
        let big: Vec<_> = (0..10).map(|_| record(1 << 20)).collect();
        let sizes: Vec<usize> = insert_chunks(&big).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, vec![1; 10], "4 MiB at most, one record at least");
        assert!(insert_chunks(&[]).is_empty());
    }

    #[test]
    fn drop_tables_quotes_identifiers() {
        let names = ["loadrig_kv".to_string(), "loadrig_a\"`b".to_string()];
        assert_eq!(
            Dialect::Postgres.drop_tables(&names),
            r#"DROP TABLE "loadrig_kv", "loadrig_a""`b""#
        );
        assert_eq!(
            Dialect::Mysql.drop_tables(&names),
            "DROP TABLE `loadrig_kv`, `loadrig_a\"``b`"
        );
        assert_eq!(
            Dialect::Sqlite.drop_tables(&names[..1]),
            r#"DROP TABLE "loadrig_kv""#
        );
    }

    #[test]
    fn arity_and_sqlstate_classes() {
        assert!(check_arity("SELECT 1", 0, 0).is_ok());
        let e = check_arity("SELECT $1", 1, 2).unwrap_err();
        assert_eq!(e.class, ErrorClass::Other);
        assert_eq!(
            e.message,
            "the query has 1 parameter(s) but the operation gives 2: SELECT $1"
        );
        assert_eq!(sqlstate_class("23505"), Some(ErrorClass::Constraint));
        assert_eq!(sqlstate_class("28P01"), Some(ErrorClass::Auth));
        assert_eq!(sqlstate_class("08006"), Some(ErrorClass::Connect));
        assert_eq!(sqlstate_class("40001"), None);
        assert_eq!(sqlstate_class(""), None);
    }

    #[test]
    fn handshake_errors_are_auth_or_connect() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let fail = |class: ErrorClass| {
            rt.block_on(handshake(
                Duration::from_secs(1),
                async { Err::<(), _>(class) },
                |c: &ErrorClass| OpError::new(*c, "refused"),
            ))
            .unwrap_err()
        };
        let e = fail(ErrorClass::Auth);
        assert_eq!(e.class, ErrorClass::Auth);
        assert_eq!(e.message, "authentication failed (auth): refused");
        let e = fail(ErrorClass::Other);
        assert_eq!(e.class, ErrorClass::Connect);
        assert_eq!(e.message, "connection failed (connect): refused");
        let e = rt
            .block_on(handshake(
                Duration::from_millis(10),
                std::future::pending::<Result<(), ErrorClass>>(),
                |c: &ErrorClass| OpError::new(*c, ""),
            ))
            .unwrap_err();
        assert_eq!(e.class, ErrorClass::Connect);
        assert!(
            e.message.contains("no complete handshake within 10ms"),
            "{}",
            e.message
        );
    }
}
