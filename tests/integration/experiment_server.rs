//! A server setting as a factor, on the throwaway PostgreSQL: `synchronous_commit` applied
//! around its cells and restored after the experiment, after Ctrl-C, and by `loadrig
//! cleanup` after a SIGKILL (the journal); a setting with an explicit value in
//! postgresql.auto.conf comes back as that value, one without as no value. And the target
//! on PostgreSQL's Unix socket, as libpq takes it, which is how scripts/services.sh gives
//! its superuser.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use loadrig::analysis::experiment::record::{ExperimentRecord, ExperimentStatus};
use loadrig::result::RunResult;
use loadrig::targets::postgres::admin::Admin;
use loadrig::targets::{expand_env, TargetUrl};

/// The worked example's workload (docs/experiment.md).
const WORKLOAD: &str = include_str!("../../docs/examples/insert.toml");

fn admin(url: &str) -> Admin {
    Admin::connect(&TargetUrl::parse(&expand_env(url).unwrap()).unwrap()).unwrap()
}

fn show(a: &Admin) -> String {
    a.query("SHOW synchronous_commit").unwrap()[0][0]
        .clone()
        .unwrap()
}

/// Its value in postgresql.auto.conf, if any.
fn explicit(a: &Admin) -> Option<String> {
    a.query("SELECT setting FROM pg_file_settings WHERE name = 'synchronous_commit' AND sourcefile LIKE '%postgresql.auto.conf'")
        .unwrap()
        .first()
        .and_then(|r| r[0].clone())
}

fn args<'a>(target: &'a str, super_url: &'a str, duration: &'a str) -> Vec<&'a str> {
    vec![
        "experiment",
        "insert.toml",
        "--target",
        target,
        "--factor",
        "server.synchronous_commit=on,off",
        "--factor",
        "clients=1,2",
        "--replicates",
        "2",
        "--duration",
        duration,
        "--warmup",
        "0s",
        "--response",
        "insert.throughput",
        "--settings-url",
        super_url,
        "--seed",
        "5",
        "-o",
        "exp",
    ]
}

fn command(d: &Dir, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_loadrig"));
    c.current_dir(d.path())
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", d.join("state"))
        .args(args);
    c
}

fn output(d: &Dir, args: &[&str]) -> Output {
    command(d, args).output().unwrap()
}

fn spawn(d: &Dir, args: &[&str]) -> Child {
    command(d, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait until the server reads synchronous_commit = off (a cell with it has begun).
fn wait_for_off(a: &Admin, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while show(a) != "off" {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the experiment ended before a cell set it off"
        );
        assert!(
            Instant::now() < deadline,
            "no cell set synchronous_commit = off"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pointers(d: &Dir) -> usize {
    std::fs::read_dir(d.join("state/loadrig/settings-journals")).map_or(0, |r| r.count())
}

fn record(dir: &Path) -> ExperimentRecord {
    serde_json::from_str(&std::fs::read_to_string(dir.join("experiment.json")).unwrap()).unwrap()
}

#[test]
fn synchronous_commit_is_applied_per_cell_and_restored_after_the_experiment() {
    let Some(target) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let Some(super_url) = server_url("LOADRIG_PG_SUPER_URL") else {
        return;
    };
    let _lock = hold(&[Shared::Postgres]);
    let a = admin(&super_url);
    // An explicit value before: it must come back as that value, not as a reset.
    // One statement per call: a simple query of several is one transaction, and ALTER
    // SYSTEM refuses to run inside one.
    a.query("ALTER SYSTEM SET synchronous_commit = 'local'")
        .unwrap();
    a.query("SELECT pg_reload_conf()").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let d = Dir::new();
    d.write("insert.toml", WORKLOAD);
    let out = output(&d, &args(&target, &super_url, "300ms"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = (admin(&super_url), ());
    let value = show(&after.0);
    let file = explicit(&after.0);
    a.query("ALTER SYSTEM RESET synchronous_commit").unwrap();
    a.query("SELECT pg_reload_conf()").unwrap();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        (value.as_str(), file.as_deref()),
        ("local", Some("local")),
        "restored as it was"
    );
    assert!(
        stdout.contains("synchronous_commit = local read and journalled"),
        "{stdout}"
    );
    let r = record(&d.join("exp"));
    assert_eq!(r.status, ExperimentStatus::Complete);
    assert_eq!(r.server_settings[0].explicit.as_deref(), Some("local"));
    assert!(r.server_settings[0].restored);
    // Each cell ran with its level: `async` finds a row only when commits do not wait.
    for run in &r.runs {
        let result: RunResult = loadrig::result::read(&d.join("exp").join(&run.file)).unwrap();
        let op = result
            .operations
            .iter()
            .find(|o| o.name == "async")
            .unwrap();
        let off = r.design.cells[run.cell][0] == "off";
        assert_eq!(op.rows, if off { op.ok } else { 0 }, "run {}", run.run);
    }
    assert!(!d.join("exp/settings-journal.json").exists());
    assert_eq!(pointers(&d), 0);
    let a = &r.analyses[0];
    assert_eq!(a.effects[0].name, "server.synchronous_commit");
}

#[test]
fn ctrl_c_restores_and_a_sigkill_leaves_a_journal_that_cleanup_restores() {
    let Some(target) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let Some(super_url) = server_url("LOADRIG_PG_SUPER_URL") else {
        return;
    };
    let _lock = hold(&[Shared::Postgres]);
    let a = admin(&super_url);
    let before = show(&a);
    assert_eq!(
        explicit(&a),
        None,
        "the server's synchronous_commit is its default"
    );

    // Ctrl-C while a cell runs with the setting off: restored before it exits.
    let d = Dir::new();
    d.write("insert.toml", WORKLOAD);
    let mut child = spawn(&d, &args(&target, &super_url, "3s"));
    wait_for_off(&a, &mut child);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(show(&a), before);
    assert_eq!(explicit(&a), None, "reset, not set to the value read");
    assert_eq!(record(&d.join("exp")).status, ExperimentStatus::Interrupted);
    assert!(!d.join("exp/settings-journal.json").exists());
    assert_eq!(pointers(&d), 0);

    // SIGKILL: nothing restores, the journal stays; a new experiment on the server refuses
    // to read the changed value as its prior, and cleanup puts it back.
    let d = Dir::new();
    d.write("insert.toml", WORKLOAD);
    let mut child = spawn(&d, &args(&target, &super_url, "3s"));
    wait_for_off(&a, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(show(&a), "off");
    assert!(d.join("exp/settings-journal.json").exists());
    assert_eq!(pointers(&d), 1);
    let mut again = args(&target, &super_url, "300ms");
    *again.last_mut().unwrap() = "exp2";
    let refused = output(&d, &again);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("loadrig cleanup --target"), "{stderr}");
    let out = output(&d, &["cleanup", "--target", &super_url]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("restored synchronous_commit to on (ALTER SYSTEM RESET)"),
        "{stdout}"
    );
    assert_eq!(show(&admin(&super_url)), before);
    assert_eq!(explicit(&a), None);
    assert!(!d.join("exp/settings-journal.json").exists());
    assert_eq!(pointers(&d), 0);
}

#[test]
fn a_unix_socket_host_is_a_postgres_target() {
    let Some(super_url) = server_url("LOADRIG_PG_SUPER_URL") else {
        return;
    };
    let _lock = hold(&[Shared::Postgres]);
    // postgres://postgres@%2FDIR:PORT/loadrig, and the same as ?host=/DIR.
    let (user, rest) = super_url.split_once('@').unwrap();
    let (host, port_db) = rest.split_once(':').unwrap();
    let dir = host.replace("%2F", "/");
    let query_form = format!("{user}@:{port_db}?host={dir}");
    let query_form = query_form.replacen("@:", "@localhost:", 1);
    let d = Dir::new();
    for url in [super_url.as_str(), query_form.as_str()] {
        let out = d.run_ops(
            "session-store",
            url,
            "200",
            "2",
            &["--set", "records=100", "-o", "r.json"],
        );
        assert!(out.contains("200"), "{out}");
        let r = d.result("r.json");
        assert_eq!(r.total.ok, 200, "{url}");
        assert_eq!(r.total.errors, 0, "{url}");
    }
    let tls = format!("{super_url}?sslmode=require");
    let out = d.loadrig(&["run", "session-store", "--target", &tls, "--ops", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unix socket"));
    d.ok(&["cleanup", "--target", &super_url]);
}

#[test]
fn a_failed_run_restores_the_setting_and_leaves_the_experiment_to_continue() {
    let Some(target) = server_url("LOADRIG_PG_URL") else {
        return;
    };
    let Some(super_url) = server_url("LOADRIG_PG_SUPER_URL") else {
        return;
    };
    let _lock = hold(&[Shared::Postgres]);
    let a = admin(&super_url);
    let before = show(&a);
    let d = Dir::new();
    d.write("insert.toml", WORKLOAD);
    // Seed 5 runs cell 1 (off, no TLS), then cell 3 (off, TLS verified against the
    // system's CAs, which fails to connect) while the server has synchronous_commit off.
    let out = output(
        &d,
        &[
            "experiment",
            "insert.toml",
            "--target",
            &target,
            "--factor",
            "server.synchronous_commit=on,off",
            "--factor",
            "url.sslmode=disable,verify-full",
            "--replicates",
            "1",
            "--duration",
            "300ms",
            "--warmup",
            "0s",
            "--response",
            "insert.throughput",
            "--settings-url",
            &super_url,
            "--seed",
            "5",
            "-o",
            "exp",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The run's error decides the exit status (a certificate refused is the user's to fix: 2).
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("run 2 (server.synchronous_commit=off, url.sslmode=verify-full)"),
        "{stderr}"
    );
    assert_eq!(show(&a), before);
    assert_eq!(explicit(&a), None);
    let r = record(&d.join("exp"));
    assert_eq!(r.status, ExperimentStatus::Interrupted);
    assert!(r.server_settings[0].restored);
    assert_eq!(
        r.runs.iter().map(|x| (x.cell, x.done)).collect::<Vec<_>>(),
        [(1, true), (3, false), (2, false), (0, false)]
    );
    assert!(!d.join("exp/settings-journal.json").exists());
    assert_eq!(pointers(&d), 0);
}
