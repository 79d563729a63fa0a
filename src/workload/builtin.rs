//! Workloads embedded in the binary: `loadrig list` names them, `loadrig init NAME` prints one.

use std::path::Path;

use crate::error::InputError;

/// (name, file text) of every built-in workload.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "session-store",
        include_str!("../../workloads/session-store.toml"),
    ),
    ("noop", include_str!("../../workloads/noop.toml")),
    (
        "pgbench-tpcb",
        include_str!("../../workloads/pgbench-tpcb.toml"),
    ),
    (
        "pgbench-simple-update",
        include_str!("../../workloads/pgbench-simple-update.toml"),
    ),
    (
        "pgbench-select-only",
        include_str!("../../workloads/pgbench-select-only.toml"),
    ),
    (
        "order-entry",
        include_str!("../../workloads/order-entry.toml"),
    ),
    (
        "oltp_point_select",
        include_str!("../../workloads/oltp_point_select.toml"),
    ),
    (
        "oltp_read_only",
        include_str!("../../workloads/oltp_read_only.toml"),
    ),
    (
        "oltp_read_write",
        include_str!("../../workloads/oltp_read_write.toml"),
    ),
    (
        "oltp_write_only",
        include_str!("../../workloads/oltp_write_only.toml"),
    ),
    (
        "oltp_update_index",
        include_str!("../../workloads/oltp_update_index.toml"),
    ),
    (
        "oltp_update_non_index",
        include_str!("../../workloads/oltp_update_non_index.toml"),
    ),
    (
        "oltp_insert",
        include_str!("../../workloads/oltp_insert.toml"),
    ),
    ("ycsb-a", include_str!("../../workloads/ycsb-a.toml")),
    ("ycsb-b", include_str!("../../workloads/ycsb-b.toml")),
    ("ycsb-c", include_str!("../../workloads/ycsb-c.toml")),
    ("ycsb-d", include_str!("../../workloads/ycsb-d.toml")),
    ("ycsb-e", include_str!("../../workloads/ycsb-e.toml")),
    ("ycsb-f", include_str!("../../workloads/ycsb-f.toml")),
    (
        "oltp_delete",
        include_str!("../../workloads/oltp_delete.toml"),
    ),
    ("tpcc", include_str!("../../workloads/tpcc.toml")),
    ("etcd-kv", include_str!("../../workloads/etcd-kv.toml")),
];

/// The text of a built-in workload.
pub fn text(name: &str) -> Option<&'static str> {
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Find a workload by file path or built-in name: (name for messages, file text).
pub fn resolve(arg: &str) -> Result<(String, String), InputError> {
    let path = Path::new(arg);
    if path.is_file() || arg.ends_with(".toml") {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(format!("cannot read workload file '{arg}': {e}")))?;
        return Ok((arg.to_string(), text));
    }
    match text(arg) {
        Some(t) => Ok((format!("<builtin {arg}>"), t.to_string())),
        None => Err(InputError::new(format!(
            "no workload file or built-in workload named '{arg}'"
        ))
        .help(format!(
            "built-in workloads: {}; `loadrig list` describes them",
            BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
