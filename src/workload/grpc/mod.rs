//! `[grpc]`: the `.proto` files that describe the services a workload's `grpc` operations
//! call, compiled with the workload (see [`proto`]); and the request tables of those
//! operations as written, with the place of every value (see [`Node`]).

pub mod proto;

use std::path::Path;

use prost_reflect::DescriptorPool;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use crate::error::InputError;
use crate::workload::Source;

/// `[grpc] proto = "FILE" | ["FILE", ...], include = ["FOLDER", ...]`: paths from the
/// workload file's folder.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcSection {
    proto: Spanned<Files>,
    #[serde(default)]
    include: Vec<Spanned<String>>,
}

/// One file name or a list of them.
#[derive(Debug)]
struct Files(Vec<String>);

impl<'de> Deserialize<'de> for Files {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let one = |s| Files(vec![s]);
        crate::workload::string_or_list(d, "a .proto file, or a list of them", one, Files)
    }
}

/// The compiled `.proto` files: every service, method and message they describe.
#[derive(Debug, Clone)]
pub struct Protos {
    pub pool: DescriptorPool,
}

impl Protos {
    /// Compile `[grpc]`'s files. A workload file's paths are relative to its folder; a
    /// built-in workload (`<builtin NAME>`) reads only the files loadrig ships.
    pub fn compile(source: &Source<'_>, section: &GrpcSection) -> Result<Protos, InputError> {
        let mut folders = Vec::new();
        if !source.path.starts_with("<builtin") {
            let folder = Path::new(source.path)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let folder = if folder.as_os_str().is_empty() {
                Path::new(".").to_path_buf()
            } else {
                folder
            };
            for include in &section.include {
                let path = folder.join(include.get_ref());
                if !path.is_dir() {
                    return Err(source
                        .error(
                            include.span(),
                            format!("[grpc] include: '{}' is not a folder", path.display()),
                        )
                        .help("give folders relative to the workload file's folder"));
                }
                folders.push(path);
            }
            folders.insert(0, folder);
        }
        let at = source.at(section.proto.span().start);
        let includes = proto::Includes { folders };
        let pool = proto::compile(&section.proto.get_ref().0, &includes, &at)?;
        Ok(Protos { pool })
    }
}

/// A value of a request table as written, with the place of every value inside it (a
/// `toml::Value` keeps only the outer one).
#[derive(Debug)]
pub enum Node {
    Text(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    List(Vec<Spanned<Node>>),
    Table(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl Node {
    /// What it is, for messages.
    pub fn what(&self) -> &'static str {
        match self {
            Node::Text(_) => "text",
            Node::Integer(_) => "a whole number",
            Node::Float(_) => "a number",
            Node::Bool(_) => "a boolean",
            Node::List(_) => "a list",
            Node::Table(_) => "a table",
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a value of the request message: text, a number, a boolean, a list or a table",
                )
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Node, E> {
                Ok(Node::Text(s.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Node, E> {
                Ok(Node::Integer(n))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Node, E> {
                i64::try_from(n)
                    .map(Node::Integer)
                    .map_err(|_| E::custom("a number too large for TOML: write it as text"))
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Node, E> {
                Ok(Node::Float(x))
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Node, E> {
                Ok(Node::Bool(b))
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<Node, S::Error> {
                let mut items = Vec::new();
                while let Some(item) = s.next_element()? {
                    items.push(item);
                }
                Ok(Node::List(items))
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Node, M::Error> {
                let mut fields = Vec::new();
                while let Some(key) = m.next_key::<Spanned<String>>()? {
                    fields.push((key, m.next_value()?));
                }
                Ok(Node::Table(fields))
            }
        }
        d.deserialize_any(NodeVisitor)
    }
}
