//! What loadrig reads from other tools' files and writes for them: pgbench custom scripts
//! turned into workload files (`loadrig import pgbench`), YCSB property files (`-P`) as
//! parameter settings, and seed 002's directory of people as LDIF (`loadrig gen ldif`).

pub mod ldif;
pub mod pgbench;
pub mod properties;
