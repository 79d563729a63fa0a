//! `grpc`: one call of a method that a `.proto` file describes.
//!
//! The workload compiles the request once ([`GrpcCall`]: the method, the request message with
//! its constant fields filled in, and where each generated value goes); a target receives the
//! call and the rendered values, and [`GrpcCall::request`] puts them in place, each converted
//! to its field's type. What a reply's fields capture is read with [`GrpcCall::captured`].

use std::sync::Arc;

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MapKey, MethodDescriptor, Value};

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// One gRPC call: what it is ([`GrpcCall`], shared) and its generated request fields, in
/// [`GrpcCall::slots`] order.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcOp<A> {
    pub call: Arc<GrpcCall>,
    pub args: Vec<A>,
}

/// A method and its request as the workload wrote them.
#[derive(Debug, PartialEq)]
pub struct GrpcCall {
    pub method: MethodDescriptor,
    /// `/package.Service/Method`, the HTTP/2 path of the call.
    pub path: String,
    /// The request with its constant fields set, and a placeholder where each slot goes.
    pub request: DynamicMessage,
    /// Where each generated value goes.
    pub slots: Vec<GrpcSlot>,
    /// What `capture` takes from the reply: each path's value, or (`None`) the whole reply
    /// in its JSON mapping.
    pub reply: Option<Vec<ReplyPath>>,
}

/// The place of one generated value in the request.
#[derive(Debug, PartialEq)]
pub struct GrpcSlot {
    /// As written, for messages: `key`, `range.end`, `keys[1]`.
    pub name: String,
    pub at: Vec<Step>,
    /// The type of the value that goes there.
    pub kind: Kind,
}

/// One step of a path into a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Field(FieldDescriptor),
    /// An element of a repeated field.
    Index(usize),
    /// A value of a map field.
    Key(MapKey),
}

/// A path into the reply, as written (`kvs[0].value`) and as steps, with the kind of what it
/// reaches.
#[derive(Debug, PartialEq)]
pub struct ReplyPath {
    pub name: String,
    pub at: Vec<Step>,
    pub kind: Kind,
}

impl GrpcCall {
    /// The request for one call: the constants, and each rendered value converted to its
    /// field's type. A value that does not convert (a captured word where a number goes)
    /// fails the call, naming the field.
    pub fn request(&self, args: &[Vec<u8>]) -> Result<DynamicMessage, String> {
        let mut message = self.request.clone();
        for (slot, arg) in self.slots.iter().zip(args) {
            let value =
                value_of(&slot.kind, arg).map_err(|why| format!("request.{}: {why}", slot.name))?;
            let place = place_mut(&mut message, &slot.at)
                .ok_or_else(|| format!("request.{}: no such place", slot.name))?;
            *place = value;
        }
        Ok(message)
    }

    /// What a reply gives `capture`: each path's value as text (bytes as they are, numbers
    /// in decimal, enums by name, messages in JSON), empty where the reply has none (an
    /// index past a list's end); or the whole reply in JSON.
    pub fn captured(&self, reply: &DynamicMessage) -> Vec<Vec<u8>> {
        match &self.reply {
            None => vec![serde_json::to_vec(reply).unwrap_or_default()],
            Some(paths) => paths
                .iter()
                .map(|p| place(reply, &p.at).map_or_else(Vec::new, |v| text_of(&v, &p.kind)))
                .collect(),
        }
    }
}

/// The value a path reaches in a message, if it has one (a field never set has its default).
fn place(message: &DynamicMessage, at: &[Step]) -> Option<Value> {
    let (Step::Field(first), rest) = at.split_first()? else {
        return None;
    };
    let mut value = message.get_field(first).into_owned();
    for step in rest {
        value = match (step, value) {
            (Step::Field(f), Value::Message(m)) => m.get_field(f).into_owned(),
            (Step::Index(i), Value::List(mut l)) if *i < l.len() => l.swap_remove(*i),
            (Step::Key(k), Value::Map(mut m)) => m.remove(k)?,
            _ => return None,
        };
    }
    Some(value)
}

/// The place a path names in a request that holds a placeholder there.
fn place_mut<'a>(message: &'a mut DynamicMessage, at: &[Step]) -> Option<&'a mut Value> {
    let (Step::Field(first), rest) = at.split_first()? else {
        return None;
    };
    let mut value = message.get_field_mut(first);
    for step in rest {
        value = match (step, value) {
            (Step::Field(f), Value::Message(m)) => m.get_field_mut(f),
            (Step::Index(i), Value::List(l)) => l.get_mut(*i)?,
            (Step::Key(k), Value::Map(m)) => m.get_mut(k)?,
            _ => return None,
        };
    }
    Some(value)
}

/// Text converted to a field's type: `bytes` take the text as it is (not base64 as in the
/// JSON mapping: keys and values are written as they are stored), `string` takes UTF-8
/// text, numbers and booleans their decimal or word, enums a value's name or number.
pub fn value_of(kind: &Kind, text: &[u8]) -> Result<Value, String> {
    if let Kind::Bytes = kind {
        return Ok(Value::Bytes(bytes::Bytes::copy_from_slice(text)));
    }
    let shown = String::from_utf8_lossy(text);
    let Ok(word) = std::str::from_utf8(text) else {
        return Err(format!(
            "{} takes UTF-8 text, not these bytes",
            type_name(kind)
        ));
    };
    let bad = || format!("'{shown}' is not {}", a_type(kind));
    Ok(match kind {
        Kind::String => Value::String(word.to_string()),
        Kind::Bool => match word {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            _ => return Err(bad()),
        },
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(word.parse().map_err(|_| bad())?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(word.parse().map_err(|_| bad())?),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(word.parse().map_err(|_| bad())?),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(word.parse().map_err(|_| bad())?),
        Kind::Float => Value::F32(word.parse().map_err(|_| bad())?),
        Kind::Double => Value::F64(word.parse().map_err(|_| bad())?),
        Kind::Enum(e) => match e.get_value_by_name(word) {
            Some(v) => Value::EnumNumber(v.number()),
            None => Value::EnumNumber(word.parse().map_err(|_| bad())?),
        },
        Kind::Message(_) | Kind::Bytes => return Err(bad()),
    })
}

/// A value as `capture` keeps it.
fn text_of(value: &Value, kind: &Kind) -> Vec<u8> {
    match value {
        Value::Bytes(b) => b.to_vec(),
        Value::String(s) => s.clone().into_bytes(),
        Value::Bool(b) => b.to_string().into_bytes(),
        Value::I32(n) => n.to_string().into_bytes(),
        Value::I64(n) => n.to_string().into_bytes(),
        Value::U32(n) => n.to_string().into_bytes(),
        Value::U64(n) => n.to_string().into_bytes(),
        Value::F32(x) => x.to_string().into_bytes(),
        Value::F64(x) => x.to_string().into_bytes(),
        Value::EnumNumber(n) => match kind {
            Kind::Enum(e) => e
                .get_value(*n)
                .map_or_else(|| n.to_string(), |v| v.name().to_string())
                .into_bytes(),
            _ => n.to_string().into_bytes(),
        },
        Value::Message(m) => serde_json::to_vec(m).unwrap_or_default(),
        // A path ends at a single value: the compiler refuses one that ends at a list or map.
        Value::List(_) | Value::Map(_) => Vec::new(),
    }
}

/// A field type's name as a `.proto` file writes it.
pub fn type_name(kind: &Kind) -> String {
    match kind {
        Kind::Double => "double".into(),
        Kind::Float => "float".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Uint32 => "uint32".into(),
        Kind::Uint64 => "uint64".into(),
        Kind::Sint32 => "sint32".into(),
        Kind::Sint64 => "sint64".into(),
        Kind::Fixed32 => "fixed32".into(),
        Kind::Fixed64 => "fixed64".into(),
        Kind::Sfixed32 => "sfixed32".into(),
        Kind::Sfixed64 => "sfixed64".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "bytes".into(),
        Kind::Message(m) => format!("message {}", m.full_name()),
        Kind::Enum(e) => format!("enum {}", e.full_name()),
    }
}

/// What a field of a kind takes, for messages: "an int64 (a whole number)".
pub fn a_type(kind: &Kind) -> String {
    let what = match kind {
        Kind::Double | Kind::Float => " (a number)",
        Kind::Bool => " (true or false)",
        Kind::String | Kind::Bytes => " (text)",
        Kind::Message(_) => " (a table of its fields)",
        Kind::Enum(_) => " (one of its values' names, or a number)",
        _ => " (a whole number)",
    };
    let name = type_name(kind);
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}{what}")
}

/// The field a path names, if its first step is one.
pub fn field_of(step: &Step) -> Option<&FieldDescriptor> {
    match step {
        Step::Field(f) => Some(f),
        _ => None,
    }
}

impl<A> OpFamily<A> for GrpcOp<A> {
    type With<B> = GrpcOp<B>;

    fn label(&self) -> &'static str {
        "grpc"
    }

    /// The generated request fields, in the order the request names them.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> GrpcOp<B> {
        GrpcOp {
            call: self.call,
            args: self.args.into_iter().map(f).collect(),
        }
    }

    /// `package.Service/Method key=... value=...`.
    fn pieces(self) -> Vec<Piece<A>> {
        let method = self.call.path.trim_start_matches('/').to_string();
        let mut pieces = vec![Piece::Word(method)];
        for (slot, arg) in self.call.slots.iter().zip(self.args) {
            pieces.push(Piece::Arg(format!("{}=", slot.name), arg));
        }
        pieces
    }

    /// By the method's name: reading verbs (`Get`, `List`, `Range`, ...) read, the rest
    /// writes.
    fn statement_kind(&self, _: impl Fn(&A) -> Option<String>) -> StatementKind {
        const READS: [&str; 12] = [
            "Get", "List", "Range", "Read", "Search", "Query", "Find", "Lookup", "Fetch", "Count",
            "Describe", "Watch",
        ];
        const OTHER: [&str; 3] = ["Ping", "Health", "Check"];
        let name = self.call.method.name();
        let starts = |verbs: &[&str]| verbs.iter().any(|v| name.starts_with(v));
        if starts(&READS) {
            StatementKind::Read
        } else if starts(&OTHER) {
            StatementKind::Other
        } else {
            StatementKind::Write
        }
    }

    /// One value per `reply` path, or one (the whole reply) without them.
    fn check_capture(&self, names: usize) -> Result<(), String> {
        match &self.call.reply {
            None if names <= 1 => Ok(()),
            None => Err(format!(
                "grpc captures the whole reply as one value, or one value per path of its reply = [...]: {names} names and no reply paths"
            )),
            Some(paths) if paths.len() == names => Ok(()),
            Some(paths) => Err(format!(
                "grpc captures one value per path of its reply = [...]: {} paths and {names} names",
                paths.len()
            )),
        }
    }
}
