//! The server's named figures over the measured part (`server.figures`): stable names that
//! the bottleneck verdict, `compare`, `ab` and the report read, and that an experiment may
//! name as a response. docs/results.md lists them; only those the server let the observer
//! see are present.

use std::collections::BTreeMap;

use crate::result::server::ServerRecord;
use crate::result::RunResult;

/// The operations' time as the clients measured it, ms: each operation's count times its
/// mean (failures by their own mean).
pub fn client_time_ms(r: &RunResult) -> f64 {
    r.operations
        .iter()
        .map(|o| {
            let failed = o.failed_latency.as_ref().map_or(0.0, |f| f.mean_ns);
            o.ok as f64 * o.latency.mean_ns + o.errors as f64 * failed
        })
        .sum::<f64>()
        / 1e6
}

/// Every figure the record's measured totals give.
pub fn figures(r: &RunResult, s: &ServerRecord) -> BTreeMap<String, f64> {
    let mut f = BTreeMap::new();
    let t = &s.measured;
    let secs = if t.seconds > 0.0 {
        t.seconds
    } else {
        r.measured_s
    };
    let done = (r.total.ok + r.total.errors) as f64;
    let per_op = |x: f64| (done > 0.0).then(|| x / done);
    let mut put = |name: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            f.insert(name.to_string(), v);
        }
    };
    let figs = &t.figures;
    if let Some(p) = &figs.processes {
        let cpu = p.cpu_s();
        put("cpu_s", Some(cpu));
        put("cpu_cores", (secs > 0.0).then(|| cpu / secs));
        put(
            "cpu_share",
            (secs > 0.0 && r.host.cores > 0).then(|| cpu / secs / r.host.cores as f64),
        );
        put("run_queue_s", Some(p.run_queue_s));
        put(
            "run_queue_per_cpu_s",
            (cpu > 0.0).then(|| p.run_queue_s / cpu),
        );
        put("cpu_ms_per_op", per_op(cpu * 1e3));
        put(
            "context_switches_per_op",
            per_op((p.voluntary_switches + p.involuntary_switches) as f64),
        );
        put("processes_started", Some(p.started as f64));
        put(
            "read_bytes_per_op",
            p.read_bytes.and_then(|b| per_op(b as f64)),
        );
        put(
            "write_bytes_per_op",
            p.write_bytes.and_then(|b| per_op(b as f64)),
        );
    }
    if let Some(w) = &figs.waits {
        let backends = w.backends.max(1) as f64;
        put("backend_active_share", Some(w.active as f64 / backends));
        put(
            "idle_in_transaction_share",
            Some(w.idle_in_transaction as f64 / backends),
        );
        if w.active > 0 {
            for (class, share) in w.by_class() {
                put(&format!("wait_share.{class}"), Some(share));
            }
            let share_of = |keep: &dyn Fn(&str, &str) -> bool| {
                w.waits
                    .iter()
                    .filter(|x| keep(&x.class, &x.event))
                    .map(|x| x.samples)
                    .sum::<u64>() as f64
                    / w.active as f64
            };
            put("lock_wait_share", Some(share_of(&|c, _| c == "Lock")));
            put("io_wait_share", Some(share_of(&|c, _| c == "IO")));
            put(
                "wal_wait_share",
                Some(share_of(&|c, e| {
                    (c == "IO" || c == "LWLock") && e.starts_with("WAL")
                })),
            );
            put("cpu_wait_share", Some(share_of(&|c, _| c == "CPU")));
        }
    }
    // Other roles' statements, summed by the observer into `hidden`, are not the run's.
    let run_statements: Vec<f64> = figs
        .statements
        .iter()
        .filter(|x| x.id != "hidden")
        .map(|x| x.time_ms)
        .collect();
    // MySQL's time of every statement, prepared ones included (the digests leave those
    // out on MariaDB), where performance_schema has it.
    let all_ms = figs
        .counters
        .get(crate::observe::ALL_STATEMENT_TIME)
        .copied();
    let server_ms =
        all_ms.or_else(|| (!run_statements.is_empty()).then(|| run_statements.iter().sum::<f64>()));
    let client_ms = client_time_ms(r);
    put("server_time_ms", server_ms);
    put("server_ms_per_op", server_ms.and_then(per_op));
    put(
        "server_time_share",
        server_ms.filter(|_| client_ms > 0.0).map(|s| s / client_ms),
    );
    counters(&mut put, figs, secs, &per_op, server_ms);
    // The sampled lock waits, over all operations and by operation (`lock_wait_ms.OP`).
    let waited: Vec<(&str, f64)> = s
        .decomposition
        .iter()
        .filter_map(|o| Some((o.op.as_str(), o.lock_wait_ms? * o.ops as f64)))
        .collect();
    if !waited.is_empty() {
        put(
            "lock_wait_ms_per_op",
            per_op(waited.iter().map(|w| w.1).sum()),
        );
    }
    for o in &s.decomposition {
        put(&format!("lock_wait_ms.{}", o.op), o.lock_wait_ms);
    }
    f
}

/// The counters that say most about each kind of server.
fn counters(
    put: &mut impl FnMut(&str, Option<f64>),
    figs: &crate::observe::ServerInterval,
    secs: f64,
    per_op: &dyn Fn(f64) -> Option<f64>,
    server_ms: Option<f64>,
) {
    let c = |name: &str| figs.counters.get(name).copied();
    let g = |name: &str| figs.gauges.get(name).copied();
    let per_s = |v: Option<f64>| v.filter(|_| secs > 0.0).map(|v| v / secs);
    // PostgreSQL.
    put("commits_per_s", per_s(c("pg_stat_database.xact_commit")));
    put(
        "rollbacks_per_s",
        per_s(c("pg_stat_database.xact_rollback")),
    );
    put("deadlocks", c("pg_stat_database.deadlocks"));
    put(
        "blocks_read_per_op",
        c("pg_stat_database.blks_read").and_then(per_op),
    );
    if let (Some(hit), Some(read)) = (
        c("pg_stat_database.blks_hit"),
        c("pg_stat_database.blks_read"),
    ) {
        put(
            "cache_hit_ratio",
            (hit + read > 0.0).then(|| hit / (hit + read)),
        );
    }
    put(
        "wal_bytes_per_op",
        c("pg_stat_wal.wal_bytes").and_then(per_op),
    );
    put("temp_bytes", c("pg_stat_database.temp_bytes"));
    // MySQL and MariaDB.
    put("questions_per_s", per_s(c("global_status.Questions")));
    put("row_lock_waits", c("global_status.Innodb_row_lock_waits"));
    let lock_ms = c("global_status.Innodb_row_lock_time");
    put("row_lock_time_ms", lock_ms);
    if figs.waits.is_none() {
        // Without session samples, the share of the statements' time spent in row locks.
        if let (Some(lock), Some(total)) = (lock_ms, server_ms.filter(|t| *t > 0.0)) {
            put("lock_wait_share", Some((lock / total).min(1.0)));
        }
        let io_ms: f64 = figs
            .timed_waits
            .iter()
            // Files only: the table I/O instruments time each row access, lock waits
            // included, and the socket ones the idle wait for the client.
            .filter(|w| w.event.starts_with("wait/io/file/"))
            .map(|w| w.time_ms)
            .sum();
        if let Some(total) = server_ms.filter(|t| *t > 0.0 && !figs.timed_waits.is_empty()) {
            put("io_wait_share", Some((io_ms / total).min(1.0)));
        }
    }
    put("deadlocks", c("global_status.Innodb_deadlocks"));
    put(
        "buffer_pool_reads_per_op",
        c("global_status.Innodb_buffer_pool_reads").and_then(per_op),
    );
    put(
        "log_fsyncs_per_op",
        c("global_status.Innodb_os_log_fsyncs").and_then(per_op),
    );
    put("threads_running", g("global_status.Threads_running"));
    // Redis.
    put("commands_per_s", per_s(c("stats.total_commands_processed")));
    // OpenLDAP.
    put("threads_active", g("threads.active"));
    put("threads_pending", g("threads.pending"));
    put("threads_max", g("threads.max"));
    // nginx.
    put("requests_per_s", per_s(c("stub_status.requests")));
    put("active_connections", g("stub_status.active"));
}
