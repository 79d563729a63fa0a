//! etcd through its gRPC API, for what the grpc target does without a workload's `.proto`:
//! the kv operations (keys under [`PREFIX`]), `cleanup` (one DeleteRange of that prefix) and
//! the server's version (Maintenance/Status). The messages come from the `.proto` files
//! loadrig ships (`workloads/etcd/`), compiled once.
//!
//! - put = `KV/Put`; rows 1.
//! - get = `KV/Range` of the key; rows = the keys found (0 or 1).
//! - update = `KV/Txn`: if the key's version is above 0 (it exists), `Put`; rows 1 if it
//!   did, else 0. One round trip, as the other stores' updates.
//! - delete = `KV/DeleteRange` of the key; rows = the keys deleted.

use std::sync::OnceLock;

use bytes::Bytes;
use prost_reflect::{DynamicMessage, MessageDescriptor, MethodDescriptor, Value};

use crate::vocab::{ErrorClass, Op, OpError};
use crate::workload::grpc::proto;

/// Every key loadrig stores in etcd begins with it; cleanup deletes exactly that range.
pub const PREFIX: &str = "loadrig/";
/// The most operations etcd takes in one Txn unless started with a higher
/// `--max-txn-ops`.
pub const TXN_OPS: usize = 128;
/// The end of the prefix's range: the prefix with its last byte plus one (`/` + 1 = `0`).
pub const PREFIX_END: &str = "loadrig0";

/// One call of etcd's API: the method, its request, and how its reply counts rows.
pub struct Call {
    pub method: &'static MethodDescriptor,
    pub path: &'static str,
    pub request: DynamicMessage,
    pub rows: fn(&DynamicMessage) -> u64,
}

/// etcd's methods that the target calls by itself.
pub struct Etcd {
    range: (MethodDescriptor, String),
    put: (MethodDescriptor, String),
    delete_range: (MethodDescriptor, String),
    txn: (MethodDescriptor, String),
    status: (MethodDescriptor, String),
}

/// The shipped descriptors, compiled on first use.
pub fn etcd() -> Result<&'static Etcd, OpError> {
    static ETCD: OnceLock<Result<Etcd, String>> = OnceLock::new();
    ETCD.get_or_init(compile)
        .as_ref()
        .map_err(|e| OpError::new(ErrorClass::Other, e.clone()))
}

fn compile() -> Result<Etcd, String> {
    let includes = proto::Includes {
        folders: Vec::new(),
    };
    let pool = proto::compile(&["etcd/rpc.proto".to_string()], &includes, "<shipped>")
        .map_err(|e| format!("the shipped etcd/rpc.proto: {e}"))?;
    let method = |service: &str, name: &str| {
        pool.get_service_by_name(service)
            .and_then(|s| s.methods().find(|m| m.name() == name))
            .map(|m| (m, format!("/{service}/{name}")))
            .ok_or_else(|| format!("the shipped etcd/rpc.proto has no {service}/{name}"))
    };
    Ok(Etcd {
        range: method("etcdserverpb.KV", "Range")?,
        put: method("etcdserverpb.KV", "Put")?,
        delete_range: method("etcdserverpb.KV", "DeleteRange")?,
        txn: method("etcdserverpb.KV", "Txn")?,
        status: method("etcdserverpb.Maintenance", "Status")?,
    })
}

/// A message of `desc` with the given fields.
fn message(desc: &MessageDescriptor, fields: Vec<(&str, Value)>) -> DynamicMessage {
    let mut m = DynamicMessage::new(desc.clone());
    for (name, value) in fields {
        m.set_field_by_name(name, value);
    }
    m
}

fn key(k: &str) -> Value {
    Value::Bytes(Bytes::from(format!("{PREFIX}{k}")))
}

fn bytes(v: &[u8]) -> Value {
    Value::Bytes(Bytes::copy_from_slice(v))
}

/// A field of a reply as a count (an int64 or a bool).
fn count(reply: &DynamicMessage, field: &str) -> u64 {
    match reply.get_field_by_name(field).as_deref() {
        Some(Value::I64(n)) => (*n).max(0) as u64,
        Some(Value::Bool(b)) => u64::from(*b),
        Some(Value::List(l)) => l.len() as u64,
        _ => 0,
    }
}

impl Etcd {
    fn call(
        &'static self,
        (method, path): &'static (MethodDescriptor, String),
        fields: Vec<(&str, Value)>,
        rows: fn(&DynamicMessage) -> u64,
    ) -> Call {
        Call {
            method,
            path,
            request: message(&method.input(), fields),
            rows,
        }
    }

    /// The call that carries out a kv operation on loadrig's keys; `None` for the others.
    pub fn kv(&'static self, op: &Op<'_>) -> Option<Call> {
        Some(match *op {
            Op::Put { key: k, value } => self.call(
                &self.put,
                vec![("key", key(k)), ("value", bytes(value))],
                |_| 1,
            ),
            Op::Get { key: k } => {
                self.call(&self.range, vec![("key", key(k))], |r| count(r, "kvs"))
            }
            Op::Delete { key: k } => self.call(&self.delete_range, vec![("key", key(k))], |r| {
                count(r, "deleted")
            }),
            Op::Update { key: k, value } => {
                let (txn, _) = &self.txn;
                let compare_desc = txn.input().get_field_by_name("compare")?.kind();
                let op_desc = txn.input().get_field_by_name("success")?.kind();
                let (compare_desc, op_desc) = (compare_desc.as_message()?, op_desc.as_message()?);
                let put_desc = self.put.0.input();
                // version(key) > 0: the key exists.
                let exists = message(
                    compare_desc,
                    vec![
                        ("result", Value::EnumNumber(1)),
                        ("target", Value::EnumNumber(0)),
                        ("key", key(k)),
                        ("version", Value::I64(0)),
                    ],
                );
                let put = message(&put_desc, vec![("key", key(k)), ("value", bytes(value))]);
                let success = message(op_desc, vec![("request_put", Value::Message(put))]);
                self.call(
                    &self.txn,
                    vec![
                        ("compare", Value::List(vec![Value::Message(exists)])),
                        ("success", Value::List(vec![Value::Message(success)])),
                    ],
                    |r| count(r, "succeeded"),
                )
            }
            _ => return None,
        })
    }

    /// One Txn that puts every pair (keys under [`PREFIX`]) with no condition: a batch
    /// of the data load in one round trip and one commit of etcd's log, instead of one
    /// each. At most [`TXN_OPS`] pairs (etcd's `--max-txn-ops` default).
    pub fn load(&'static self, records: &[(String, Vec<u8>)]) -> Option<Call> {
        let op_desc = self.txn.0.input().get_field_by_name("success")?.kind();
        let op_desc = op_desc.as_message()?;
        let put_desc = self.put.0.input();
        let puts = records.iter().map(|(k, v)| {
            let put = message(&put_desc, vec![("key", key(k)), ("value", bytes(v))]);
            Value::Message(message(op_desc, vec![("request_put", Value::Message(put))]))
        });
        Some(self.call(
            &self.txn,
            vec![("success", Value::List(puts.collect()))],
            |r| count(r, "responses"),
        ))
    }

    /// DeleteRange of every key under [`PREFIX`]; rows = the keys deleted.
    pub fn cleanup(&'static self) -> Call {
        self.call(
            &self.delete_range,
            vec![
                ("key", Value::Bytes(Bytes::from_static(PREFIX.as_bytes()))),
                (
                    "range_end",
                    Value::Bytes(Bytes::from_static(PREFIX_END.as_bytes())),
                ),
            ],
            |r| count(r, "deleted"),
        )
    }

    /// Maintenance/Status, whose reply names the member's version.
    pub fn status(&'static self) -> Call {
        self.call(&self.status, Vec::new(), |_| 1)
    }
}

/// The version in a Status reply.
pub fn version(reply: &DynamicMessage) -> Option<String> {
    match reply.get_field_by_name("version").as_deref() {
        Some(Value::String(v)) if !v.is_empty() => Some(format!("etcd {v}")),
        _ => None,
    }
}
