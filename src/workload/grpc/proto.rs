//! A workload's `.proto` files compiled when the workload is, with protox (a protobuf
//! compiler in Rust: no protoc), into the descriptors that `grpc` operations are checked
//! against and that build their messages.
//!
//! Files are looked up as protoc looks up imports: in the workload file's folder, then in
//! each `include` folder, then among the files loadrig ships (`etcd/rpc.proto`,
//! `etcd/kv.proto`, so `loadrig init etcd-kv > my.toml` runs anywhere), then protobuf's
//! well-known types (`google/protobuf/*.proto`). A built-in workload sees only the shipped
//! files and the well-known types.

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use prost_reflect::DescriptorPool;
use protox::file::{
    ChainFileResolver, File, FileResolver, GoogleFileResolver, IncludeFileResolver,
};

use crate::error::{line_col, InputError};

/// The `.proto` files loadrig ships, by the name an import or `proto =` gives them.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "etcd/rpc.proto",
        include_str!("../../../workloads/etcd/rpc.proto"),
    ),
    (
        "etcd/kv.proto",
        include_str!("../../../workloads/etcd/kv.proto"),
    ),
];

/// The shipped files, found by name.
struct Shipped;

impl FileResolver for Shipped {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match SHIPPED.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => File::from_source(n, text),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// Where a workload's `.proto` files are looked for, in order.
pub struct Includes {
    /// The workload's folder, then its `include` folders; none for a built-in workload.
    pub folders: Vec<PathBuf>,
}

impl Includes {
    fn resolver(&self) -> ChainFileResolver {
        let mut chain = ChainFileResolver::new();
        for folder in &self.folders {
            chain.add(IncludeFileResolver::new(folder.clone()));
        }
        chain.add(Shipped);
        chain.add(GoogleFileResolver::new());
        chain
    }

    /// Where a file of that name was read from, for messages: its path, or `<shipped NAME>`.
    fn shown(&self, name: &str) -> String {
        match self
            .folders
            .iter()
            .map(|f| f.join(name))
            .find(|p| p.is_file())
        {
            Some(path) => path.display().to_string(),
            None => format!("<shipped {name}>"),
        }
    }

    /// The text of a file of that name, as the compiler read it.
    fn text(&self, name: &str) -> Option<String> {
        match self
            .folders
            .iter()
            .map(|f| f.join(name))
            .find(|p| p.is_file())
        {
            Some(path) => std::fs::read_to_string(path).ok(),
            None => SHIPPED
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| t.to_string()),
        }
    }
}

/// Compile `files` (names relative to the include folders) and what they import. A file
/// that does not parse or check is an error at its `file:line:column`; `at` is where the
/// workload names the files, for a file that cannot be found.
pub fn compile(
    files: &[String],
    includes: &Includes,
    at: &str,
) -> Result<DescriptorPool, InputError> {
    let mut compiler = protox::Compiler::with_file_resolver(includes.resolver());
    compiler.include_imports(true);
    for file in files {
        if let Err(e) = compiler.open_file(Path::new(file)) {
            return Err(describe(&e, file, includes, at));
        }
    }
    Ok(compiler.descriptor_pool())
}

/// protox's error as an input error: at its place in the `.proto` file when it has one.
fn describe(e: &protox::Error, file: &str, includes: &Includes, at: &str) -> InputError {
    let searched = || {
        let mut places: Vec<String> = includes
            .folders
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        places.push("the .proto files loadrig ships (etcd/rpc.proto, etcd/kv.proto)".into());
        places.join(", ")
    };
    let offset = e
        .labels()
        .and_then(|mut labels| labels.next())
        .map(|label| label.offset());
    match (e.file(), offset) {
        (Some(name), Some(offset)) => {
            let place = match includes.text(name) {
                Some(text) => {
                    let (line, col) = line_col(&text, offset);
                    format!("{}:{line}:{col}", includes.shown(name))
                }
                None => includes.shown(name),
            };
            let mut error = InputError::new(e.to_string()).at(place);
            if e.is_file_not_found() {
                error = error.help(format!(
                    "an import is looked for in {}; add its folder to [grpc] include = [...]",
                    searched()
                ));
            } else {
                error = error.help(
                    "fix the .proto file: loadrig compiles it with protox, which reads what protoc reads",
                );
            }
            error
        }
        _ if e.is_file_not_found() => InputError::new(format!("[grpc] proto: cannot find '{file}'"))
            .at(at)
            .help(format!(
                "a .proto file is looked for in {}; give its path from the workload file's folder, or add its folder to include = [...]",
                searched()
            )),
        (name, _) => {
            let mut error = InputError::new(format!("[grpc] proto '{file}': {e}")).at(at);
            if let Some(name) = name {
                error = error.help(format!("in {}", includes.shown(name)));
            }
            error
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped_only() -> Includes {
        Includes {
            folders: Vec::new(),
        }
    }

    #[test]
    fn the_shipped_etcd_files_compile() {
        let pool = compile(&["etcd/rpc.proto".into()], &shipped_only(), "w:1:1").unwrap();
        let kv = pool.get_service_by_name("etcdserverpb.KV").unwrap();
        let names: Vec<String> = kv.methods().map(|m| m.name().to_string()).collect();
        assert_eq!(names, ["Range", "Put", "DeleteRange", "Txn"]);
        assert!(pool.get_message_by_name("mvccpb.KeyValue").is_some());
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_at_its_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bad.proto"),
            "syntax = \"proto3\";\nmessage A {\n  int32 x = 1\n}\n",
        )
        .unwrap();
        let includes = Includes {
            folders: vec![dir.path().to_path_buf()],
        };
        let e = compile(&["bad.proto".into()], &includes, "w.toml:3:9").unwrap_err();
        let place = e.location.clone().unwrap();
        assert!(place.ends_with("bad.proto:4:1"), "{e}");
        assert!(e.message.contains("expected"), "{e}");
        let missing = compile(&["nope.proto".into()], &includes, "w.toml:3:9").unwrap_err();
        assert_eq!(missing.location.as_deref(), Some("w.toml:3:9"));
        assert!(
            missing.message.contains("cannot find 'nope.proto'"),
            "{missing}"
        );
    }
}
