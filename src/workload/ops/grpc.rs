//! `grpc = { method = "package.Service/Method", request = { ... }, reply = ["path", ...] }`:
//! one call of a method of the services that `[grpc] proto` describes.
//!
//! `request` is the request message in its JSON mapping, written as TOML: a field by its
//! name in the `.proto` file (or its JSON name), a nested message as a table, a repeated
//! field as a list, a map as a table. Text values are templates of the workload language,
//! checked against their field's type here: a generated value that cannot fit (text where a
//! number goes) is an error at its place. `bytes` fields take their text as it is, not in
//! base64. `reply` names the values `capture` takes from the reply (`kvs[0].value`).

use std::collections::HashMap;
use std::sync::Arc;

use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, MethodDescriptor, Value,
};
use serde::Deserialize;
use toml::Spanned;

use super::compiler::OpCompiler;
use crate::error::InputError;
use crate::vocab::grpc::{a_type, type_name, value_of};
use crate::vocab::{GrpcCall, GrpcOp, GrpcSlot, ReplyPath, Step, ValueKind};
use crate::workload::grpc::{Node, Protos};
use crate::workload::template::Template;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GrpcArgs {
    method: Spanned<String>,
    request: Option<Spanned<Node>>,
    reply: Option<Vec<Spanned<String>>>,
}

/// The generated values of a request, as they are found.
#[derive(Default)]
struct Slots {
    slots: Vec<GrpcSlot>,
    templates: Vec<Template>,
}

/// A request table's fields as written.
type Fields = [(Spanned<String>, Spanned<Node>)];

impl OpCompiler<'_> {
    /// `grpc = { ... }`: the method, its request with every value checked against its
    /// field's type, and the reply's paths.
    pub(super) fn grpc(
        &mut self,
        g: &Spanned<GrpcArgs>,
        captures: &[(String, usize)],
    ) -> Result<GrpcOp<Template>, InputError> {
        let a = g.get_ref();
        let Some(protos) = self.protos else {
            return Err(self
                .source
                .error(
                    g.span(),
                    "grpc operations need the .proto file that describes the service",
                )
                .help(
                    "add [grpc] proto = \"service.proto\" (a path from the workload file's folder)",
                ));
        };
        let method = self.method(protos, &a.method)?;
        let mut slots = Slots::default();
        let request = match &a.request {
            None => DynamicMessage::new(method.input()),
            Some(r) => match r.get_ref() {
                Node::Table(fields) => {
                    self.message(&method.input(), fields, &[], "", &mut slots, captures)?
                }
                other => {
                    return Err(self.source.error(
                        r.span(),
                        format!(
                            "request is a table of the fields of {}, not {}",
                            method.input().full_name(),
                            other.what()
                        ),
                    ))
                }
            },
        };
        let reply = match &a.reply {
            None => None,
            Some(paths) => Some(
                paths
                    .iter()
                    .map(|p| self.reply_path(&method.output(), p))
                    .collect::<Result<_, _>>()?,
            ),
        };
        let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
        Ok(GrpcOp {
            call: Arc::new(GrpcCall {
                method,
                path,
                request,
                slots: slots.slots,
                reply,
            }),
            args: slots.templates,
        })
    }

    /// `method = "package.Service/Method"`: one the `.proto` files describe, unary or server
    /// streaming.
    fn method(&self, protos: &Protos, m: &Spanned<String>) -> Result<MethodDescriptor, InputError> {
        let text = m.get_ref().trim().trim_start_matches('/');
        let err = |message: String| self.source.error(m.span(), message);
        let Some((service, name)) = text.rsplit_once('/').or_else(|| text.rsplit_once('.')) else {
            return Err(err(format!("method '{text}' is SERVICE/METHOD"))
                .help("like method = \"etcdserverpb.KV/Range\": the service's full name (its package first), a slash, the method"));
        };
        let Some(svc) = protos.pool.get_service_by_name(service) else {
            let known: Vec<String> = protos
                .pool
                .services()
                .map(|s| s.full_name().to_string())
                .collect();
            return Err(err(format!("no service '{service}' in the .proto files"))
                .help(format!("they describe: {}", list_or_none(&known))));
        };
        let Some(method) = svc.methods().find(|x| x.name() == name) else {
            let known: Vec<String> = svc.methods().map(|x| x.name().to_string()).collect();
            return Err(err(format!("service {service} has no method '{name}'"))
                .help(format!("its methods: {}", list_or_none(&known))));
        };
        if method.is_client_streaming() {
            let kind = if method.is_server_streaming() {
                "bidirectional streaming"
            } else {
                "client streaming"
            };
            return Err(err(format!(
                "{service}/{name} is {kind}: loadrig calls unary and server-streaming methods"
            ))
            .help("each call sends one request: pick a method that takes one"));
        }
        Ok(method)
    }

    /// A message from its table: each field found by name, its value checked and placed.
    fn message(
        &mut self,
        desc: &MessageDescriptor,
        fields: &Fields,
        at: &[Step],
        prefix: &str,
        slots: &mut Slots,
        captures: &[(String, usize)],
    ) -> Result<DynamicMessage, InputError> {
        let mut message = DynamicMessage::new(desc.clone());
        let mut oneofs: Vec<(String, String)> = Vec::new();
        for (key, node) in fields {
            let f = self.field_named(desc, key)?;
            if let Some(oneof) = f.containing_oneof() {
                if let Some((_, other)) = oneofs.iter().find(|(o, _)| o == oneof.name()) {
                    return Err(self.source.error(
                        key.span(),
                        format!(
                            "{} and {other} are of one oneof, {}: give one of them",
                            f.name(),
                            oneof.name()
                        ),
                    ));
                }
                oneofs.push((oneof.name().to_string(), f.name().to_string()));
            }
            let name = match prefix {
                "" => f.name().to_string(),
                p => format!("{p}.{}", f.name()),
            };
            let mut here = at.to_vec();
            here.push(Step::Field(f.clone()));
            let value = self.field(&f, node, here, name, slots, captures)?;
            message.set_field(&f, value);
        }
        Ok(message)
    }

    /// A field of a message by its `.proto` name or its JSON name.
    fn field_named(
        &self,
        desc: &MessageDescriptor,
        key: &Spanned<String>,
    ) -> Result<FieldDescriptor, InputError> {
        let name = key.get_ref();
        desc.get_field_by_name(name)
            .or_else(|| desc.get_field_by_json_name(name))
            .ok_or_else(|| {
                let known: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
                self.source
                    .error(
                        key.span(),
                        format!("{} has no field '{name}'", desc.full_name()),
                    )
                    .help(format!("its fields: {}", list_or_none(&known)))
            })
    }

    /// A field's value: a list for a repeated field, a table for a map, else one element.
    fn field(
        &mut self,
        f: &FieldDescriptor,
        node: &Spanned<Node>,
        at: Vec<Step>,
        name: String,
        slots: &mut Slots,
        captures: &[(String, usize)],
    ) -> Result<Value, InputError> {
        if f.is_map() {
            let Kind::Message(entry) = f.kind() else {
                unreachable!("a map field's entries are messages")
            };
            let (key_kind, value_kind) = (
                entry.map_entry_key_field().kind(),
                entry.map_entry_value_field().kind(),
            );
            let Node::Table(entries) = node.get_ref() else {
                return Err(self.source.error(
                    node.span(),
                    format!(
                        "request.{name} is a map<{}, {}>: write a table, not {}",
                        type_name(&key_kind),
                        type_name(&value_kind),
                        node.get_ref().what()
                    ),
                ));
            };
            let mut map = HashMap::new();
            for (k, v) in entries {
                let key = value_of(&key_kind, k.get_ref().as_bytes())
                    .ok()
                    .and_then(map_key)
                    .ok_or_else(|| {
                        self.source.error(
                            k.span(),
                            format!(
                                "request.{name}: '{}' is not a key of this map, which takes {}",
                                k.get_ref(),
                                a_type(&key_kind)
                            ),
                        )
                    })?;
                let mut here = at.clone();
                here.push(Step::Key(key.clone()));
                let shown = format!("{name}[\"{}\"]", k.get_ref());
                let value = self.element(&value_kind, v, here, shown, slots, captures)?;
                map.insert(key, value);
            }
            return Ok(Value::Map(map));
        }
        if f.is_list() {
            let Node::List(items) = node.get_ref() else {
                return Err(self.source.error(
                    node.span(),
                    format!(
                        "request.{name} is a repeated {}: write a list, like [ ... ], not {}",
                        type_name(&f.kind()),
                        node.get_ref().what()
                    ),
                ));
            };
            let mut values = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let mut here = at.clone();
                here.push(Step::Index(i));
                let shown = format!("{name}[{i}]");
                values.push(self.element(&f.kind(), item, here, shown, slots, captures)?);
            }
            return Ok(Value::List(values));
        }
        self.element(&f.kind(), node, at, name, slots, captures)
    }

    /// One value of a field's type: a nested message's table, a constant, or a template
    /// whose values fit the type (a slot filled per call).
    fn element(
        &mut self,
        kind: &Kind,
        node: &Spanned<Node>,
        at: Vec<Step>,
        name: String,
        slots: &mut Slots,
        captures: &[(String, usize)],
    ) -> Result<Value, InputError> {
        let span = node.span();
        let mismatch = |what: &str| {
            self.source
                .error(
                    span.clone(),
                    format!("request.{name} is {}, not {what}", a_type(kind)),
                )
                .help("write the request in the message's JSON mapping: numbers for numbers, text for strings and bytes, a table for a message, a list for a repeated field")
        };
        let value = match (node.get_ref(), kind) {
            (Node::Table(fields), Kind::Message(m)) => {
                Value::Message(self.message(m, fields, &at, &name, slots, captures)?)
            }
            (Node::Text(text), _) => {
                let text = Spanned::new(span.clone(), text.clone());
                return self.text(kind, &text, at, name, slots, captures);
            }
            (Node::Integer(n), _) => match integer(kind, *n) {
                Some(v) => v,
                None => return Err(mismatch(&format!("the number {n}"))),
            },
            (Node::Float(x), Kind::Double) => Value::F64(*x),
            (Node::Float(x), Kind::Float) => Value::F32(*x as f32),
            (Node::Bool(b), Kind::Bool) => Value::Bool(*b),
            (other, _) => return Err(mismatch(other.what())),
        };
        Ok(value)
    }

    /// Text for a field: a constant converted now (a well-known message such as a
    /// Timestamp in its JSON form too), or a template whose values fit the field's type.
    fn text(
        &mut self,
        kind: &Kind,
        text: &Spanned<String>,
        at: Vec<Step>,
        name: String,
        slots: &mut Slots,
        captures: &[(String, usize)],
    ) -> Result<Value, InputError> {
        let t = self.template(text, captures)?;
        let here = |message: String| {
            self.source
                .error(text.span(), format!("request.{name}: {message}"))
        };
        if let Some(constant) = t.constant_text() {
            if let Kind::Message(m) = kind {
                let json = serde_json::Value::String(constant);
                return DynamicMessage::deserialize(m.clone(), json)
                    .map(Value::Message)
                    .map_err(|e| {
                        here(format!("{} does not take this text: {e}", m.full_name()))
                            .help("write the message as a table of its fields")
                    });
            }
            return value_of(kind, constant.as_bytes())
                .map_err(|why| here(why).help(format!("give {}", a_type(kind))));
        }
        let fits = match kind {
            Kind::Bytes => true,
            Kind::String => !t.has_bytes(),
            Kind::Message(_) => false,
            Kind::Float | Kind::Double => {
                t.kind() != ValueKind::Bytes || t.single_capture().is_some()
            }
            _ => t.kind() == ValueKind::Integer || t.single_capture().is_some(),
        };
        if !fits {
            let help = match kind {
                Kind::String => "{bytes N} makes raw bytes; use {string N} for random text".to_string(),
                Kind::Message(_) => "write the message as a table of its fields".to_string(),
                _ => "write one number generator alone, like \"{uniform 1..100}\", or one captured or let value".to_string(),
            };
            return Err(here(format!(
                "\"{}\" does not make {}",
                text.get_ref(),
                a_type(kind)
            ))
            .help(help));
        }
        slots.slots.push(GrpcSlot {
            name,
            at,
            kind: kind.clone(),
        });
        slots.templates.push(t);
        Ok(Value::default_value(kind))
    }

    /// `reply = ["kvs[0].value", "header.revision"]`: fields by name, an element of a list
    /// by its index, a map's value by its key; ending at one value.
    fn reply_path(
        &self,
        desc: &MessageDescriptor,
        p: &Spanned<String>,
    ) -> Result<ReplyPath, InputError> {
        let err = |message: String| {
            self.source
                .error(p.span(), format!("reply path '{}': {message}", p.get_ref()))
                .help("a reply path names fields from the reply down to one value, like kvs[0].value or header.revision")
        };
        let mut at = Vec::new();
        let mut kind = Kind::Message(desc.clone());
        for segment in p.get_ref().split('.') {
            let (field, index) = match segment.split_once('[') {
                Some((f, rest)) => match rest.strip_suffix(']') {
                    Some(i) => (f, Some(i)),
                    None => return Err(err(format!("'{segment}' opens [ without closing it"))),
                },
                None => (segment, None),
            };
            let Kind::Message(m) = &kind else {
                return Err(err(format!(
                    "'{field}' is past {}, which has no fields",
                    type_name(&kind)
                )));
            };
            let Some(f) = m
                .get_field_by_name(field)
                .or_else(|| m.get_field_by_json_name(field))
            else {
                let known: Vec<String> = m.fields().map(|f| f.name().to_string()).collect();
                return Err(err(format!("{} has no field '{field}'", m.full_name()))
                    .help(format!("its fields: {}", list_or_none(&known))));
            };
            at.push(Step::Field(f.clone()));
            kind = match (f.is_map(), f.is_list(), index) {
                (true, _, Some(key)) => {
                    let Kind::Message(entry) = f.kind() else {
                        unreachable!("map entries are messages")
                    };
                    let key_kind = entry.map_entry_key_field().kind();
                    let key = value_of(&key_kind, key.trim_matches('"').as_bytes())
                        .ok()
                        .and_then(map_key)
                        .ok_or_else(|| err(format!("{key} is not a key of map {}", f.name())))?;
                    at.push(Step::Key(key));
                    entry.map_entry_value_field().kind()
                }
                (false, true, Some(i)) => {
                    let i = i
                        .parse()
                        .map_err(|_| err(format!("[{i}] is not an index: write [0], [1], ...")))?;
                    at.push(Step::Index(i));
                    f.kind()
                }
                (false, false, None) => f.kind(),
                (true, _, None) => {
                    return Err(err(format!(
                        "{} is a map: name one value, like {}[\"key\"]",
                        f.name(),
                        f.name()
                    )))
                }
                (false, true, None) => {
                    return Err(err(format!(
                        "{} is a repeated field: name one element, like {}[0]",
                        f.name(),
                        f.name()
                    )))
                }
                (false, false, Some(_)) => {
                    return Err(err(format!(
                        "{} is one {}, not a list or map",
                        f.name(),
                        type_name(&f.kind())
                    )))
                }
            };
        }
        Ok(ReplyPath {
            name: p.get_ref().clone(),
            at,
            kind,
        })
    }
}

/// A whole number as a value of a field's type, if it fits.
fn integer(kind: &Kind, n: i64) -> Option<Value> {
    Some(match kind {
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(i32::try_from(n).ok()?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(n),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(u32::try_from(n).ok()?),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(u64::try_from(n).ok()?),
        Kind::Double => Value::F64(n as f64),
        Kind::Float => Value::F32(n as f32),
        Kind::Enum(_) => Value::EnumNumber(i32::try_from(n).ok()?),
        _ => return None,
    })
}

/// A map key from a value of the key's type (maps are keyed by integers, booleans or
/// strings).
fn map_key(value: Value) -> Option<MapKey> {
    Some(match value {
        Value::Bool(b) => MapKey::Bool(b),
        Value::I32(n) => MapKey::I32(n),
        Value::I64(n) => MapKey::I64(n),
        Value::U32(n) => MapKey::U32(n),
        Value::U64(n) => MapKey::U64(n),
        Value::String(s) => MapKey::String(s),
        _ => return None,
    })
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
