//! `loadrig ops`: bound operations as text lines (`CLIENT OP: …`) or JSON objects.
//!
//! Text shows keys, statements and short text in full; text longer than [`TEXT_SHOWN`]
//! bytes is cut and its length given, and bytes that are not text show only their length
//! (`<512 bytes>`). JSON keeps every argument in full up to [`JSON_TEXT_MAX`] bytes of
//! text, so keys and parameters can be counted. Bind passwords show as `***` in both.

use std::time::Duration;

use serde::Serialize;

use crate::vocab::{NativeOp, Op, Piece, ValueKind};

/// Text arguments up to this many bytes are shown whole in the text lines.
pub const TEXT_SHOWN: usize = 64;
/// Text arguments up to this many bytes are kept whole in JSON; longer ones as their length.
pub const JSON_TEXT_MAX: usize = 1024;
/// Where a bound prefix of long text is cut, in characters.
const PREFIX_CHARS: usize = 32;

/// One argument as JSON holds it: a number (integer and float arguments), text, or the
/// length of anything longer than [`JSON_TEXT_MAX`] or not text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Arg {
    Number(serde_json::Number),
    Text(String),
    Bytes { bytes: usize },
}

impl Arg {
    fn of(value: &[u8], kind: ValueKind) -> Arg {
        match as_text(value) {
            Some(s) if kind != ValueKind::Bytes => s
                .parse()
                .map_or_else(|_| Arg::Text(s.to_string()), Arg::Number),
            Some(s) if s.len() <= JSON_TEXT_MAX => Arg::Text(s.to_string()),
            _ => Arg::Bytes { bytes: value.len() },
        }
    }
}

/// One bound operation (or a transaction's step) as `loadrig ops` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    /// `kv.get`, `sql`, `redis`, `ldap.search`, `http`, `tx`, `steps`, `nop`, `connect`, ...
    pub kind: &'static str,
    /// kv operations: the key (also the first of `args`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// SQL: the statement; its parameters are `args`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The bound arguments in the order a target receives them (kv: key, then value).
    pub args: Vec<Arg>,
    /// The steps of a transaction or of `steps`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Shown>,
    /// The operation as one line of text.
    pub text: String,
    /// An operation's `pause`: the keying time a closed-loop client waits before it and the
    /// mean of the think time after it. Not sent, but part of what the client does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause: Option<ShownPause>,
}

/// Keying and mean think time, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShownPause {
    pub keying_s: f64,
    pub think_s: f64,
}

impl Shown {
    fn plain(kind: &'static str, text: String, args: Vec<Arg>) -> Shown {
        Shown {
            kind,
            key: None,
            query: None,
            args,
            steps: Vec::new(),
            text,
            pause: None,
        }
    }

    /// The operation with its `pause`, also written after its text: `(keying 18s, think
    /// 12s mean)`.
    pub fn with_pause(mut self, keying: Duration, think: Duration) -> Shown {
        let mut parts = Vec::new();
        if !keying.is_zero() {
            parts.push(format!("keying {}", humantime::format_duration(keying)));
        }
        if !think.is_zero() {
            parts.push(format!("think {} mean", humantime::format_duration(think)));
        }
        if !parts.is_empty() {
            self.text = format!("{} ({})", self.text, parts.join(", "));
        }
        self.pause = Some(ShownPause {
            keying_s: keying.as_secs_f64(),
            think_s: think.as_secs_f64(),
        });
        self
    }

    fn kv(kind: &'static str, key: &str, value: Option<&[u8]>) -> Shown {
        let mut text = format!("{kind} {}", shown(key.as_bytes(), ValueKind::Bytes));
        let mut args = vec![Arg::Text(key.to_string())];
        if let Some(v) = value {
            text = format!("{text} {}", shown(v, ValueKind::Bytes));
            args.push(Arg::of(v, ValueKind::Bytes));
        }
        Shown {
            key: Some(key.to_string()),
            ..Shown::plain(kind, text, args)
        }
    }
}

/// What a session receives, shown. A transaction's first `Begin` and last `Commit` (or
/// `Rollback`, at a rollback step) are left to [`operation`], which writes them around the
/// steps; those between (a commit point) stay as steps of kind `commit` and `begin`.
pub fn step(op: &Op<'_>) -> Option<Shown> {
    Some(match op {
        Op::Nop => Shown::plain("nop", "nop".into(), Vec::new()),
        Op::Put { key, value } => Shown::kv("kv.put", key, Some(value)),
        Op::Update { key, value } => Shown::kv("kv.update", key, Some(value)),
        Op::Get { key } => Shown::kv("kv.get", key, None),
        Op::Delete { key } => Shown::kv("kv.delete", key, None),
        Op::Native { op, args, .. } => native(op, args),
        Op::Begin => Shown::plain("begin", "BEGIN".into(), Vec::new()),
        Op::Commit => Shown::plain("commit", "COMMIT".into(), Vec::new()),
        Op::Rollback => Shown::plain("rollback", "ROLLBACK".into(), Vec::new()),
    })
}

/// Operation `kind` (its label) from the steps its session received: a transaction's
/// between `BEGIN` and `COMMIT`, `steps` without them (one after the other, each committed
/// on its own), `connect` and `authenticate` with none.
pub fn operation(kind: &'static str, mut steps: Vec<Shown>) -> Shown {
    if kind == "steps" {
        let inner: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
        let text = inner.join("; ");
        return Shown {
            steps,
            ..Shown::plain("steps", text, Vec::new())
        };
    }
    if kind == "tx" {
        if steps.first().is_some_and(|s| s.kind == "begin") {
            steps.remove(0);
        }
        let end = match steps.last().map(|s| s.kind) {
            Some("commit") => "COMMIT",
            Some("rollback") => "ROLLBACK",
            _ => "",
        };
        if !end.is_empty() {
            steps.pop();
        }
        let inner: Vec<&str> = steps.iter().map(|s| s.text.as_str()).collect();
        let text = format!("BEGIN; {}; {end}", inner.join("; "));
        return Shown {
            steps,
            ..Shown::plain("tx", text, Vec::new())
        };
    }
    match steps.pop() {
        Some(one) if steps.is_empty() => one,
        _ => Shown::plain(kind, kind.to_string(), Vec::new()),
    }
}

/// `CLIENT OP: TEXT`.
pub fn text_line(client: u64, op: &str, shown: &Shown) -> String {
    format!("{client} {op}: {}", shown.text)
}

/// One JSON object: `client`, `index` (from 0, per client), `op` (its name) and the
/// fields of [`Shown`].
pub fn json_line(client: u64, index: u64, op: &str, shown: &Shown) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct Line<'a> {
        client: u64,
        index: u64,
        op: &'a str,
        #[serde(flatten)]
        shown: &'a Shown,
    }
    serde_json::to_string(&Line {
        client,
        index,
        op,
        shown,
    })
}

/// An argument rendered with its kind, for text and JSON together.
struct Bound {
    text: String,
    arg: Arg,
}

/// A native operation: its arguments paired with their kinds (in `map_args` order), then
/// laid out as its family's pieces say.
fn native(op: &NativeOp<ValueKind>, args: &[Vec<u8>]) -> Shown {
    let mut values = args.iter();
    let bound = op.clone().map_args(|kind| {
        let v = values.next().map_or(&[][..], Vec::as_slice);
        Bound {
            text: shown(v, kind),
            arg: Arg::of(v, kind),
        }
    });
    let label = op.label();
    let mut out = Shown::plain(label, String::new(), Vec::new());
    let mut words = vec![label.to_string()];
    for piece in bound.pieces() {
        match piece {
            Piece::Arg(name, b) => {
                words.push(format!("{name}{}", b.text));
                out.args.push(b.arg);
            }
            Piece::Secret(name, _) => {
                words.push(format!("{name}***"));
                out.args.push(Arg::Text("***".into()));
            }
            Piece::Key(b) => {
                out.key = Some(b.text.clone());
                words.push(b.text);
                out.args.push(b.arg);
            }
            Piece::Statement(query) => {
                words.push(quote(&query));
                out.query = Some(query);
            }
            Piece::List(list) if list.is_empty() => {}
            Piece::List(list) => {
                let texts: Vec<&str> = list.iter().map(|b| b.text.as_str()).collect();
                words.push(format!("[{}]", texts.join(", ")));
                out.args.extend(list.into_iter().map(|b| b.arg));
            }
            Piece::Word(word) => words.push(word),
        }
    }
    out.text = words.join(" ");
    out
}

/// A value as the text lines show it: numbers and short text as they are (quoted, escaped
/// as JSON escapes, when they hold spaces, quotes, control characters or nothing), long text
/// cut with its length, bytes that are not text as their length.
pub fn shown(value: &[u8], kind: ValueKind) -> String {
    let Some(s) = as_text(value) else {
        return format!("<{} bytes>", value.len());
    };
    if kind != ValueKind::Bytes {
        return s.to_string();
    }
    if s.len() > TEXT_SHOWN {
        let prefix: String = s.chars().take(PREFIX_CHARS).collect();
        return format!("<{} bytes: {}>", value.len(), quote(&format!("{prefix}…")));
    }
    let bare = !s.is_empty()
        && !s.starts_with('<')
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\\');
    if bare {
        s.to_string()
    } else {
        quote(s)
    }
}

/// `value` if it is text: UTF-8 without control characters other than tab and line ends
/// (random bytes almost never are).
fn as_text(value: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(value).ok()?;
    let binary = s
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'));
    (!binary).then_some(s)
}

/// `s` in double quotes, escaped as JSON escapes it.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{HttpOp, LdapOp, RecordOp, RedisOp, SqlOp};

    #[test]
    fn values_show_whole_cut_or_as_their_length() {
        let b = ValueKind::Bytes;
        assert_eq!(shown(b"session:42", b), "session:42");
        assert_eq!(shown(b"a b", b), "\"a b\"");
        assert_eq!(shown(b"", b), "\"\"");
        assert_eq!(shown(b"<x>", b), "\"<x>\"");
        assert_eq!(shown(&[0, 159, 146, 150], b), "<4 bytes>");
        assert_eq!(shown(&[7; 3], b), "<3 bytes>", "valid UTF-8, but not text");
        assert_eq!(shown(b"a\tb", b), "\"a\\tb\"");
        assert_eq!(shown(b"42", ValueKind::Integer), "42");
        let long = "x".repeat(100);
        assert_eq!(
            shown(long.as_bytes(), b),
            format!("<100 bytes: \"{}…\">", "x".repeat(32))
        );
        assert_eq!(Arg::of(b"42", ValueKind::Integer), Arg::Number(42.into()));
        assert_eq!(Arg::of(b"42", b), Arg::Text("42".into()));
        assert_eq!(Arg::of(&[0xff; 3], b), Arg::Bytes { bytes: 3 });
        let text = "y".repeat(JSON_TEXT_MAX + 1);
        assert_eq!(
            Arg::of(text.as_bytes(), b),
            Arg::Bytes {
                bytes: JSON_TEXT_MAX + 1
            }
        );
    }

    #[test]
    fn records_show_their_key_and_redis_its_arguments() {
        let b = ValueKind::Bytes;
        let arg = |t: &str| t.as_bytes().to_vec();
        let insert = NativeOp::Record(RecordOp::Insert {
            key: b,
            values: vec![b, b],
        });
        let s = native(&insert, &[arg("user1"), arg("a"), arg("b")]);
        assert_eq!(s.text, "record.insert user1 field0=a field1=b");
        assert_eq!(s.key.as_deref(), Some("user1"));
        assert_eq!(s.args.len(), 3);
        let read = NativeOp::Record(RecordOp::Read {
            key: b,
            field: None,
        });
        assert_eq!(
            native(&read, &[arg("user1")]).text,
            "record.read user1 fields=all"
        );
        let update = NativeOp::Record(RecordOp::Update {
            key: b,
            field: Some(ValueKind::Integer),
            values: vec![b],
        });
        let s = native(&update, &[arg("user1"), arg("3"), arg("v")]);
        assert_eq!(s.text, "record.update user1 field=3 value=v");
        let scan = NativeOp::Record(RecordOp::Scan {
            key: b,
            count: ValueKind::Integer,
            field: Some(ValueKind::Integer),
        });
        let s = native(&scan, &[arg("user1"), arg("10"), arg("2")]);
        assert_eq!(s.text, "record.scan user1 count=10 field=2");
        assert_eq!(serde_json::to_string(&s.args).unwrap(), "[\"user1\",10,2]");
        let set = NativeOp::Redis(RedisOp {
            args: vec![b, b, b],
        });
        let s = native(&set, &[arg("SET"), arg("k"), arg("v")]);
        assert_eq!((s.text.as_str(), s.key), ("redis SET k v", None));
    }

    #[test]
    fn native_operations_are_laid_out_by_family() {
        let b = ValueKind::Bytes;
        let search = NativeOp::Ldap(LdapOp::Search {
            base: b,
            scope: crate::vocab::Scope::Sub,
            filter: b,
            attrs: vec!["cn".into(), "mail".into()],
        });
        let args = [b"ou=people".to_vec(), b"(uid=u1)".to_vec()];
        let s = native(&search, &args);
        assert_eq!(
            s.text,
            "ldap.search base=ou=people scope=sub filter=(uid=u1) attrs=cn,mail"
        );
        assert_eq!(s.args.len(), 2);
        let bind = NativeOp::Ldap(LdapOp::Bind { dn: b, password: b });
        let s = native(&bind, &[b"cn=a".to_vec(), b"secret".to_vec()]);
        assert_eq!(s.text, "ldap.bind dn=cn=a password=***");
        assert!(!serde_json::to_string(&s).unwrap().contains("secret"));
        let http = NativeOp::Http(HttpOp {
            method: "POST".into(),
            path: b,
            headers: vec![("content-type".into(), b)],
            body: Some(b),
            expect: Some(201),
        });
        let args = [b"/items/4".to_vec(), b"text/plain".to_vec(), vec![7; 600]];
        let s = native(&http, &args);
        assert_eq!(
            s.text,
            "http POST /items/4 content-type=text/plain body=<600 bytes>"
        );
        let sql = NativeOp::Sql(SqlOp {
            id: 0,
            query: "SELECT v FROM loadrig_t WHERE k = ? AND n > ?".into(),
            params: vec![b, ValueKind::Integer],
        });
        let s = native(&sql, &[b"k 1".to_vec(), b"7".to_vec()]);
        assert_eq!(
            s.text,
            "sql \"SELECT v FROM loadrig_t WHERE k = ? AND n > ?\" [\"k 1\", 7]"
        );
        assert_eq!(
            serde_json::to_string(&s.args).unwrap(),
            "[\"k 1\",7]",
            "an integer parameter is a JSON number"
        );
    }
}
