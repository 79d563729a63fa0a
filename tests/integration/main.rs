//! The integration tests, one test crate (`cargo test --test integration`): each module is one
//! concern's tests, run against the real `loadrig` binary, its library, and the throwaway
//! servers of scripts/services.sh. One crate links the library and `common` once, where a
//! binary per file linked them 56 times.
//!
//! One module's tests: `cargo test --test integration schema::`; one test: add its name.
//! Tests of different modules run side by side in this one process: what they share (a
//! server's tables, a Redis database, the machine's CPU) each test takes with
//! [`common::locks::hold`], one lock per shared thing; what a test needs from outside (a
//! server, a program, root) it asks for with [`common::needs`].

mod common;

mod ab;
mod bad_input;
mod builtin_pgbench;
mod builtin_sysbench;
mod builtin_tpcc;
mod builtin_ycsb;
mod checks;
mod collect;
mod collect_netns;
mod compare;
mod compare_report;
mod connect_failures;
mod embedded_targets;
mod emulate;
mod engine;
mod experiment;
mod experiment_analysis;
mod experiment_server;
mod exports;
mod faults;
mod faults_netns;
mod full_disk;
mod fuzz_corpus;
mod history;
mod hostile_results;
mod import_pgbench;
mod kube;
mod kube_cluster;
mod kube_collector;
mod layers;
mod live_dashboard;
mod mysql_wire;
mod observe;
mod observe_run;
mod observe_truth;
mod ops;
mod pg_pipeline;
mod pg_session;
mod pg_wire;
mod pipeline;
mod recover;
mod report;
mod results;
mod scale;
mod scaling;
mod schema;
mod server_grpc;
mod server_http;
mod server_http2;
mod server_http_pipeline;
mod server_isolation;
mod server_ldap;
mod server_memcached;
mod server_peers;
mod server_redis;
mod server_sql;
mod shards;
mod shards_netns;
mod shift;
mod soak;
mod stages;
mod study;
mod study_connections;
mod study_directory;
mod study_documents;
mod study_order_entry;
mod study_unindexed_fs;
mod tls;
mod validity;
mod value_size_limit;
mod workload_flow;
mod ycsb_properties;
