//! Every rule of resolving flags and `[load]` into a plan, and every conflict, in-process.

use std::time::Duration;

use clap::Parser;

use super::*;
use crate::engine::{Arrivals, Connection, Mode};

/// `loadrig run`'s flags alone.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    run: RunArgs,
}

fn args(flags: &[&str]) -> RunArgs {
    let mut argv = vec!["loadrig"];
    argv.extend_from_slice(flags);
    Flags::try_parse_from(argv).expect("flags parse").run
}

/// A workload file with `load` as its `[load]` section, and the flags after it.
fn with_load(load: &str, flags: &[&str]) -> (tempfile::TempDir, RunArgs) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("w.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"w\"\ntarget = \"noop://\"\n\n[load]\n{load}\n\n[[op]]\nname = \"nop\"\nnop = {{}}\n"
        ),
    )
    .expect("write workload");
    let mut all = vec![path.to_str().expect("utf-8 path")];
    all.extend_from_slice(flags);
    let a = args(&all);
    (dir, a)
}

fn plan(flags: &[&str]) -> Result<RunPlan, InputError> {
    resolve(&args(flags))
}

fn err(flags: &[&str]) -> InputError {
    plan(flags).expect_err("should be refused")
}

fn file_err(load: &str, flags: &[&str]) -> InputError {
    let (_dir, a) = with_load(load, flags);
    resolve(&a).expect_err("should be refused")
}

fn file_plan(load: &str, flags: &[&str]) -> RunPlan {
    let (_dir, a) = with_load(load, flags);
    resolve(&a).expect("valid")
}

#[test]
fn defaults_of_a_bare_run() {
    let p = plan(&["noop", "--seed", "7"]).unwrap();
    assert!(matches!(
        p.load.mode,
        Mode::Closed { clients: 1, think } if think.is_zero()
    ));
    assert_eq!(p.load.duration, Some(Duration::from_secs(10)));
    assert_eq!(p.load.interval, Duration::from_secs(1));
    assert_eq!((p.load.ops, p.load.samples), (None, None));
    assert_eq!(p.load.seed, 7);
    assert_eq!(p.load.connection, Connection::Persistent);
    assert_eq!(p.target.scheme(), "noop");
    assert_eq!(p.ops.len(), 1);
    assert!(p.outputs.result.starts_with("loadrig-results"));
}

#[test]
fn flags_win_over_the_file() {
    let p = file_plan(
        "clients = 3\nduration = \"5s\"\ninterval = \"2s\"\nseed = 1",
        &["--clients", "5", "--interval", "500ms", "--seed", "9"],
    );
    assert!(matches!(p.load.mode, Mode::Closed { clients: 5, .. }));
    assert_eq!(p.load.interval, Duration::from_millis(500));
    assert_eq!(p.load.duration, Some(Duration::from_secs(5)));
    assert_eq!(p.load.seed, 9);
}

#[test]
fn stop_flags_replace_the_files_as_a_whole() {
    let p = file_plan("duration = \"5s\"", &["--ops", "100"]);
    assert_eq!((p.load.duration, p.load.ops), (None, Some(100)));
    let p = file_plan("ops = 50", &[]);
    assert_eq!((p.load.duration, p.load.ops), (None, Some(50)));
    let p = file_plan("duration = \"3s\"\nops = 50", &[]);
    assert_eq!(
        (p.load.duration, p.load.ops),
        (Some(Duration::from_secs(3)), Some(50))
    );
}

#[test]
fn samples_set_the_duration_to_whole_intervals() {
    let p = plan(&["noop", "--samples", "4", "--interval", "250ms"]).unwrap();
    assert_eq!(p.load.samples, Some(4));
    assert_eq!(p.load.duration, Some(Duration::from_secs(1)));
}

#[test]
fn stop_conditions_that_conflict() {
    let e = err(&["noop", "--samples", "3", "--duration", "1s"]);
    assert!(e
        .message
        .contains("--samples and --duration cannot be used together"));
    let e = err(&["noop", "--samples", "3", "--ops", "10"]);
    assert!(e.message.contains("--samples and --ops cannot be used"));
    assert!(err(&["noop", "--ops", "0"]).message.contains("at least 1"));
    assert!(err(&["noop", "--samples", "0"])
        .message
        .contains("at least 1"));
    assert!(err(&["noop", "--duration", "0s"])
        .message
        .contains("--duration must be above zero"));
}

#[test]
fn open_and_closed_loop_flags_do_not_mix() {
    let e = err(&["noop", "--rate", "10", "--clients", "2"]);
    assert!(e
        .message
        .contains("--rate and --clients cannot be used together"));
    for (flag, value) in [
        ("--max-in-flight", "2"),
        ("--arrivals", "poisson"),
        ("--late-after", "2ms"),
    ] {
        let e = err(&["noop", flag, value]);
        assert!(e.message.contains("applies to open loops only"), "{flag}");
    }
    let e = err(&["noop", "--rate", "10", "--think-time", "1ms"]);
    assert!(e
        .message
        .contains("--think-time applies to closed loops only"));
}

#[test]
fn open_loop_settings() {
    let p = plan(&[
        "noop",
        "--rate",
        "200",
        "--arrivals",
        "poisson",
        "--max-in-flight",
        "4",
        "--late-after",
        "5ms",
    ])
    .unwrap();
    match p.load.mode {
        Mode::Open {
            rate,
            arrivals,
            workers,
            late_after,
        } => {
            assert_eq!(rate, 200.0);
            assert_eq!(arrivals, Arrivals::Poisson);
            assert_eq!(workers, 4);
            assert_eq!(late_after, Duration::from_millis(5));
        }
        Mode::Closed { .. } => panic!("expected an open loop"),
    }
    // A closed-loop workload run with --rate keeps its clients as its concurrency.
    let p = file_plan("clients = 6", &["--rate", "100"]);
    assert!(matches!(p.load.mode, Mode::Open { workers: 6, .. }));
    // The file's rate makes an open loop unless --clients says otherwise.
    let p = file_plan("rate = 50\nmax_in_flight = 2", &[]);
    assert!(matches!(p.load.mode, Mode::Open { workers: 2, .. }));
    let p = file_plan("rate = 50", &["--clients", "3"]);
    assert!(matches!(p.load.mode, Mode::Closed { clients: 3, .. }));
}

#[test]
fn bad_rates_and_counts() {
    let e = err(&["noop", "--rate=-5"]);
    assert!(e.message.contains("--rate -5") && e.message.contains("above zero"));
    let e = err(&["noop", "--rate", "0.001", "--max-in-flight", "100"]);
    assert!(e.message.contains("under one operation per 1000 s"));
    let e = err(&["noop", "--clients", "0"]);
    assert_eq!(e.message, "--clients 0: expected 1 to 10000");
    assert!(err(&["noop", "--clients", "10001"])
        .message
        .contains("expected 1 to 10000"));
    assert!(err(&["noop", "--threads", "0"])
        .message
        .contains("--threads 0"));
    let e = err(&["noop", "--arrivals", "bursty", "--rate", "5"]);
    assert!(e
        .message
        .contains("--arrivals bursty: expected constant or poisson"));
    let e = err(&["noop", "--connection", "pooled"]);
    assert!(e.message.contains("expected persistent or per-op"));
    assert!(err(&["noop", "--interval", "10us"])
        .message
        .contains("at least 1ms"));
    assert!(err(&["noop", "--op-timeout", "0s"])
        .message
        .contains("--op-timeout must be above zero"));
    assert!(err(&["noop", "--warmup", "soon"])
        .message
        .contains("--warmup: 'soon' is not a duration"));
}

#[test]
fn client_slice_is_what_the_kernel_takes_and_bad_ones_are_refused() {
    use crate::engine::slice;
    // This kernel takes custom slices or it does not; the plan records only what it takes.
    let custom = slice::takes(slice::DEFAULT);
    let given = |d: Duration| custom.then_some(d);
    assert_eq!(
        plan(&["noop"]).unwrap().load.client_slice,
        given(slice::DEFAULT)
    );
    assert_eq!(
        plan(&["noop", "--client-slice", "1ms"])
            .unwrap()
            .load
            .client_slice,
        given(Duration::from_millis(1))
    );
    assert_eq!(
        plan(&["noop", "--client-slice", "kernel"])
            .unwrap()
            .load
            .client_slice,
        None
    );
    for (bad, says) in [
        (
            "50us",
            "--client-slice 50us: the kernel takes slices from 100us to 100ms",
        ),
        (
            "1s",
            "--client-slice 1s: the kernel takes slices from 100us to 100ms",
        ),
        ("short", "--client-slice: 'short' is not a duration"),
    ] {
        let e = err(&["noop", "--client-slice", bad]);
        assert!(e.message.contains(says), "{bad}: {}", e.message);
    }
}

#[test]
fn a_workload_sets_its_client_slice_and_the_flag_overrides_it() {
    use crate::engine::slice;
    let custom = slice::takes(slice::DEFAULT);
    let given = |d: Duration| custom.then_some(d);
    let kernel = "client_slice = \"kernel\"";
    assert_eq!(file_plan(kernel, &[]).load.client_slice, None);
    assert_eq!(
        file_plan(kernel, &["--client-slice", "300us"])
            .load
            .client_slice,
        given(Duration::from_micros(300))
    );
    assert_eq!(
        file_plan("client_slice = \"2ms\"", &[]).load.client_slice,
        given(Duration::from_millis(2))
    );
    assert_eq!(
        file_plan("client_slice = \"2ms\"", &["--client-slice", "kernel"])
            .load
            .client_slice,
        None
    );
    // Refused at its place in the file, by its name there.
    let e = file_err("client_slice = \"10us\"", &[]);
    assert!(
        e.message
            .contains("[load] client_slice 10us: the kernel takes slices from 100us to 100ms"),
        "{e}"
    );
    assert!(e.location.unwrap().ends_with("w.toml:5:16"));
    let e = file_err("client_slice = \"soon\"", &[]);
    assert!(
        e.message
            .contains("[load] client_slice: 'soon' is not a duration"),
        "{e}"
    );
    assert!(e.location.unwrap().ends_with("w.toml:5:16"));
}

#[test]
fn threads_per_client_gives_each_connection_one() {
    let threads = |flags: &[&str]| plan(flags).unwrap().load.threads;
    assert_eq!(
        threads(&["noop", "--clients", "6", "--threads", "per-client"]),
        6
    );
    assert_eq!(threads(&["noop", "--clients", "6", "--threads", "3"]), 3);
    // Up to the open-loop workers' cap, then shared as a count would be.
    assert_eq!(
        threads(&["noop", "--clients", "1000", "--threads", "per-client"]),
        crate::engine::THREAD_PER_CONNECTION_MAX
    );
    // A shard counts its own share of the connections.
    assert_eq!(
        threads(&[
            "noop",
            "--clients",
            "8",
            "--shard",
            "1/2",
            "--threads",
            "per-client"
        ]),
        4
    );
    // In a workload file, and the flag over it both ways.
    let per_client = "clients = 5\nthreads = \"per-client\"";
    assert_eq!(file_plan(per_client, &[]).load.threads, 5);
    assert_eq!(file_plan(per_client, &["--threads", "2"]).load.threads, 2);
    assert_eq!(
        file_plan("clients = 5\nthreads = 2", &["--threads", "per-client"])
            .load
            .threads,
        5
    );
    assert_eq!(file_plan("clients = 5\nthreads = 2", &[]).load.threads, 2);
    // Anything else is refused: by the flag's name, or at its place in the file.
    let e = err(&["noop", "--threads", "many"]);
    assert!(
        e.message
            .contains("--threads many: expected a number of threads or per-client"),
        "{e}"
    );
    let e = file_err("threads = \"each\"", &[]);
    assert!(
        e.message
            .contains("[load] threads each: expected a number of threads or per-client"),
        "{e}"
    );
    assert!(e.location.unwrap().ends_with("w.toml:5:11"));
    let e = file_err("threads = 0", &[]);
    assert!(e.message.contains("[load] threads 0"), "{e}");
    assert!(e.location.unwrap().ends_with("w.toml:5:11"));
}

#[test]
fn warmup_auto_runs_without_one_and_cuts_it_later() {
    let p = plan(&["noop", "--warmup", "auto"]).unwrap();
    assert!(p.warmup_auto);
    assert_eq!(p.load.warmup, Duration::ZERO);
    let p = plan(&["noop", "--warmup", "2s"]).unwrap();
    assert!(!p.warmup_auto);
    assert_eq!(p.load.warmup, Duration::from_secs(2));
}

#[test]
fn file_values_are_reported_at_their_place() {
    // Line 5 is the first line of [load] in the generated file.
    let e = file_err("clients = 0", &[]);
    assert_eq!(
        e.location.as_deref().map(|l| l.ends_with("w.toml:5:11")),
        Some(true),
        "{e}"
    );
    assert!(e.message.contains("[load] clients 0: expected 1 to 10000"));
    let e = file_err("interval = \"0s\"", &[]);
    assert!(e.location.unwrap().ends_with("w.toml:5:12"));
    let e = file_err("rate = 10\nclients = 2", &[]);
    assert!(e.message.contains("[load] sets both rate and clients"));
    assert!(e.location.unwrap().ends_with("w.toml:5:8"));
    let e = file_err("rate = -1", &[]);
    assert!(e.message.contains("[load] rate -1"), "{e}");
    assert!(e.location.is_some());
    let e = file_err("connection = \"sometimes\"", &[]);
    assert!(e.message.contains("[load] connection sometimes"));
    assert!(e.location.unwrap().ends_with("w.toml:5:14"));
    let e = file_err("samples = 2\nops = 3", &[]);
    assert!(e.location.is_some(), "{e}");
    let e = file_err("think_time = \"later\"", &[]);
    assert!(e.message.contains("[load] think_time"));
    assert!(e.location.is_some());
}

#[test]
fn targets_and_outputs() {
    let e = err(&["noop", "--target", "gopher://x"]);
    assert!(e.message.contains("unknown target scheme") || e.message.contains("gopher"));
    let p = plan(&["noop", "--target", "sleep://?latency=1ms", "-o", "r.json"]).unwrap();
    assert_eq!(p.target.scheme(), "sleep");
    assert_eq!(p.outputs.result, std::path::PathBuf::from("r.json"));
    let e = err(&["noop", "-o", "r.json", "--report", "r.json"]);
    assert!(e.message.contains("that is where the result goes"));
    let e = err(&["noop", "-o", "r.json", "--report", "r.jsonl"]);
    assert!(e.message.contains("that is where the result goes"));
}

#[test]
fn passwords_are_not_shown() {
    let p = plan(&["noop", "--target", "redis://:s3cret@127.0.0.1:1/0"]).unwrap();
    assert!(p.target.url.contains("s3cret"));
    assert!(!p.target.shown().contains("s3cret"));
}

#[test]
fn operations_and_checks() {
    let e = err(&["noop", "--op", "missing"]);
    assert!(e.message.contains("--op missing"));
    assert!(e.help.unwrap().contains("nop"));
    let p = plan(&[
        "noop",
        "--check",
        "p99 < 20ms",
        "--check",
        "nop.errors < 1%",
    ])
    .unwrap();
    assert_eq!(p.checks.len(), 2);
    assert!(err(&["noop", "--check", "other.p99 < 1ms"])
        .message
        .contains("other"));
    assert!(err(&["noop", "--check", "p99 <"])
        .to_string()
        .contains("p99"));
}

fn load(setting: LoadSetting) -> Factor {
    Factor::Load(setting)
}

#[test]
fn varying_follows_the_same_rules_as_the_flags() {
    let base = plan(&["noop", "--think-time", "2ms"]).unwrap();
    let p = base
        .vary(&load(LoadSetting::Clients), &Value::Count(8))
        .unwrap();
    assert!(matches!(
        p.load.mode,
        Mode::Closed { clients: 8, think } if think == Duration::from_millis(2)
    ));
    assert_eq!(
        base.vary(&load(LoadSetting::Clients), &Value::Count(0))
            .unwrap_err()
            .message,
        "--clients 0: expected 1 to 10000"
    );
    // A closed plan's clients given as a flag cannot be joined by a rate, as on the
    // command line; a rate alone opens the loop.
    let e = plan(&["noop", "--clients", "2"])
        .unwrap()
        .vary(&load(LoadSetting::Rate), &Value::Number(100.0))
        .unwrap_err();
    assert!(e
        .message
        .contains("--rate and --clients cannot be used together"));
    let p = plan(&["noop"])
        .unwrap()
        .vary(&load(LoadSetting::Rate), &Value::Number(100.0))
        .unwrap();
    assert!(matches!(p.load.mode, Mode::Open { rate, workers: 1, .. } if rate == 100.0));
    for bad in [0.0, f64::NAN] {
        assert!(p
            .vary(&load(LoadSetting::Rate), &Value::Number(bad))
            .is_err());
    }
    let open = plan(&[
        "noop",
        "--rate",
        "10",
        "--max-in-flight",
        "3",
        "--arrivals",
        "poisson",
    ])
    .unwrap()
    .vary(&load(LoadSetting::Rate), &Value::Number(20.0))
    .unwrap();
    assert!(matches!(
        open.load.mode,
        Mode::Open {
            workers: 3,
            arrivals: Arrivals::Poisson,
            ..
        }
    ));
    // The seed drawn from the clock stays with the plan.
    assert_eq!(open.load.seed, plan_seed(&open));
}

fn plan_seed(p: &RunPlan) -> u64 {
    p.load_source.clock_seed
}

#[test]
fn any_load_setting_varies_through_its_reader() {
    let base = plan(&["noop", "--clients", "4", "--seed", "1"]).unwrap();
    let think = base
        .vary(&load(LoadSetting::ThinkTime), &Value::Text("5ms".into()))
        .unwrap();
    assert!(matches!(
        think.load.mode,
        Mode::Closed { clients: 4, think } if think == Duration::from_millis(5)
    ));
    let think = base
        .vary(
            &load(LoadSetting::ThinkTime),
            &Value::Duration(Duration::from_millis(7)),
        )
        .unwrap();
    assert!(
        matches!(think.load.mode, Mode::Closed { think, .. } if think == Duration::from_millis(7))
    );
    let per_op = base
        .vary(
            &load(LoadSetting::Connection),
            &Value::Text("per-op".into()),
        )
        .unwrap();
    assert_eq!(per_op.load.connection, Connection::PerOp);
    // Checks between settings hold for a varied one too.
    let e = per_op
        .vary(&load(LoadSetting::Pipeline), &Value::Count(4))
        .unwrap_err();
    assert!(
        e.message
            .contains("cannot be used with --connection per-op"),
        "{e}"
    );
    let threads = base
        .vary(
            &load(LoadSetting::Threads),
            &Value::Text("per-client".into()),
        )
        .unwrap();
    assert_eq!(threads.load.threads, 4);
    // A varied stop condition replaces the file's as a flag does.
    let ops = file_plan("duration = \"5s\"", &[])
        .vary(&load(LoadSetting::Ops), &Value::Count(10))
        .unwrap();
    assert_eq!((ops.load.duration, ops.load.ops), (None, Some(10)));
    // A value of the wrong kind is refused by the setting's name.
    let e = base
        .vary(&load(LoadSetting::Interval), &Value::Count(3))
        .unwrap_err();
    assert_eq!(e.message, "--interval 3: expected a duration");
    assert_eq!(
        Factor::named("think_time", &base.workload),
        Some(load(LoadSetting::ThinkTime))
    );
    assert_eq!(
        Factor::named("late-after", &base.workload),
        Some(load(LoadSetting::LateAfter))
    );
    assert_eq!(Factor::named("nothing", &base.workload), None);
}

#[test]
fn a_parameter_recompiles_the_workload() {
    let base = plan(&["session-store", "--set", "records=10", "--op", "create"]).unwrap();
    let records = Factor::named("records", &base.workload).unwrap();
    assert_eq!(records, Factor::Param("records".into()));
    let p = base.vary(&records, &Value::Count(20)).unwrap();
    assert_eq!(p.workload.params["records"].as_integer(), Some(20));
    assert_eq!(p.workload.data.as_ref().map(|d| d.count), Some(20));
    assert_eq!(p.ops.len(), 1);
    assert_eq!(p.ops[0].name, "create");
    assert!(base.vary(&records, &Value::Text("many".into())).is_err());
}

#[test]
fn growth_batches() {
    let base = plan(&["session-store", "--duration", "5s", "--warmup", "1s"]).unwrap();
    let b0 = base.growth_batch(100, 0).unwrap();
    assert_eq!(
        (b0.load.ops, b0.load.duration, b0.load.samples),
        (Some(100), None, None)
    );
    assert!(b0.load.warmup.is_zero());
    assert_eq!(
        b0.data,
        DataPolicy {
            skip_load: false,
            seq_offset: 0,
            skip_setup: false,
            marker: None,
        }
    );
    let b3 = base.growth_batch(100, 3).unwrap();
    assert_eq!(
        b3.data,
        DataPolicy {
            skip_load: true,
            seq_offset: 300,
            skip_setup: true,
            marker: None,
        }
    );
}

#[test]
fn a_plan_serialises_without_its_password() {
    let p = plan(&[
        "session-store",
        "--target",
        "redis://:s3cret@127.0.0.1:1/0",
        "--set",
        "records=5",
        "--rate",
        "50",
        "--check",
        "p99 < 5ms",
    ])
    .unwrap();
    let json = serde_json::to_value(&p).unwrap();
    let text = json.to_string();
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(json["target"], "redis://:***@127.0.0.1:1/0");
    assert_eq!(json["workload"]["name"], "session-store");
    assert_eq!(json["workload"]["params"]["records"], 5);
    assert_eq!(json["load"]["mode"], "open");
    assert_eq!(json["load"]["rate"], 50.0);
    assert_eq!(json["checks"][0], "p99 < 5ms");
    // The load reads back as the engine's own type.
    let load: crate::engine::LoadPlan = serde_json::from_value(json["load"].clone()).unwrap();
    assert!(matches!(load.mode, Mode::Open { rate, .. } if rate == 50.0));
}

#[test]
fn the_file_is_read_in_its_settings_syntax() {
    // An unknown key is refused at its place, naming every key of [load].
    let e = file_err("clinets = 4", &[]);
    assert!(e.location.unwrap().ends_with("w.toml:5:1"));
    assert!(e
        .message
        .starts_with("unknown field `clinets`, expected one of `clients`"));
    for spec in &load::SPECS {
        if let Some(key) = spec.key {
            assert!(e.message.contains(&format!("`{key}`")), "{key}");
        }
    }
    // Problems are reported in the order of the file, as serde's are.
    let e = file_err("clients = \"four\"\nclinets = 1", &[]);
    assert_eq!(e.message, "invalid type: string \"four\", expected u64");
    let e = file_err("clinets = 1\nclients = \"four\"", &[]);
    assert!(e.message.starts_with("unknown field `clinets`"));
    // `ops` may name an integer parameter.
    let (_dir, a) = with_load("ops = \"{n}\"", &[]);
    let text = std::fs::read_to_string(&a.workload)
        .unwrap()
        .replace("[load]", "[params]\nn = 7\n\n[load]");
    std::fs::write(&a.workload, text).unwrap();
    assert_eq!(resolve(&a).unwrap().load.ops, Some(7));
    let e = file_err("ops = \"{nope}\"", &[]);
    assert_eq!(
        e.message,
        "ops \"{nope}\" must name an integer parameter, like \"{operationcount}\""
    );
}

#[test]
fn where_a_setting_came_from_is_kept() {
    let p = file_plan("pipeline = 2\nclients = 3", &["--clients", "4"]);
    assert!(!p.given(LoadSetting::Pipeline).unwrap().is_flag());
    assert!(p.given(LoadSetting::Clients).unwrap().is_flag());
    assert_eq!(p.given(LoadSetting::Clients).unwrap().name(), "--clients");
    assert!(p.given(LoadSetting::Seed).is_none());
}

#[test]
fn the_flags_are_written_back_as_given() {
    let a = args(&[
        "noop",
        "-c",
        "3",
        "--rate",
        "2.5",
        "--think-time",
        "5ms",
        "--seed",
        "9",
    ]);
    let written: Vec<String> = a
        .load
        .iter()
        .flat_map(|(s, v)| [s.spec().flag.to_string(), v.to_string()])
        .collect();
    assert_eq!(
        written,
        [
            "--clients",
            "3",
            "--think-time",
            "5ms",
            "--rate",
            "2.5",
            "--seed",
            "9"
        ]
    );
}

#[test]
fn observing_is_a_load_setting_of_its_own() {
    // Redis, HTTP and LDAP targets observe unless told not to; PostgreSQL and MySQL when
    // asked (their observer's cost), with a note; embedded and simulated ones never.
    let pg = plan(&["noop", "-t", "postgres://u@127.0.0.1:5432/db"]).unwrap();
    assert!(!pg.observes() && !pg.observes_here());
    assert_eq!(pg.load.observe, None);
    assert!(pg
        .unobserved_note()
        .is_some_and(|n| n.contains("--observe on")));
    let my = plan(&["noop", "-t", "mysql://u@127.0.0.1:3306/db"]).unwrap();
    assert!(!my.observes() && my.unobserved_note().is_some());
    let asked = plan(&[
        "noop",
        "-t",
        "postgres://u@127.0.0.1:5432/db",
        "--observe",
        "on",
    ]);
    let asked = asked.unwrap();
    assert!(asked.observes() && asked.unobserved_note().is_none());
    let redis = plan(&["noop", "-t", "redis://127.0.0.1:6379/0"]).unwrap();
    assert!(redis.observes() && redis.observes_here() && redis.unobserved_note().is_none());
    let http = plan(&["noop", "-t", "http://127.0.0.1:8080"]).unwrap();
    assert!(http.observes());
    assert!(plan(&["noop", "-t", "ldap://127.0.0.1:389"])
        .unwrap()
        .observes());
    assert!(!plan(&["noop", "-t", "sqlite://x.db"]).unwrap().observes());
    let off = plan(&[
        "noop",
        "-t",
        "postgres://u@127.0.0.1:5432/db",
        "--observe",
        "off",
    ])
    .unwrap();
    assert!(!off.observes());
    let e = err(&["noop", "-t", "noop://", "--observe", "on"]);
    assert!(
        e.message
            .contains("noop:// targets have no server to observe"),
        "{e}"
    );
    // The file's key takes a boolean or the words, at its place.
    let file = file_plan("observe = false\nobserve_rate = 25", &[]);
    assert_eq!(
        (file.load.observe, file.load.observe_rate),
        (Some(false), Some(25.0))
    );
    let e = file_err("observe = \"sometimes\"", &[]);
    assert!(
        e.message
            .contains("[load] observe sometimes: expected on or off"),
        "{e}"
    );
    assert!(
        e.location.as_deref().unwrap_or("").ends_with("w.toml:5:11"),
        "{e:?}"
    );
    // The rate as a flag takes N or N/s; the config carries it and the server behind.
    let p = plan(&[
        "noop",
        "-t",
        "redis://127.0.0.1:6379/0",
        "--observe-rate",
        "20/s",
        "--observe-behind",
        "postgres://u:secret@127.0.0.1:5432/db",
    ])
    .unwrap();
    let config = p.observe_config();
    assert_eq!(config.session_rate, 20.0);
    assert_eq!(
        config.behind.as_deref(),
        Some("postgres://u:secret@127.0.0.1:5432/db")
    );
    let text = serde_json::to_string(&p.load).unwrap();
    assert!(
        text.contains(r#""observe_behind":"postgres://u:***@127.0.0.1:5432/db""#),
        "{text}"
    );
    let e = err(&[
        "noop",
        "-t",
        "redis://127.0.0.1:6379/0",
        "--observe-rate",
        "2000",
    ]);
    assert!(e.message.contains("from 0 (none) to 1000"), "{e}");
    // Varied as any setting is, through the same checks.
    let varied = pg
        .vary(&load(LoadSetting::Observe), &Value::Text("off".into()))
        .unwrap();
    assert!(!varied.observes());
    let varied = redis
        .vary(&load(LoadSetting::Observe), &Value::Text("off".into()))
        .unwrap();
    assert!(!varied.observes());
    let e = plan(&["noop", "-t", "sqlite://x.db"])
        .unwrap()
        .vary(&load(LoadSetting::Observe), &Value::Text("on".into()))
        .unwrap_err();
    assert!(
        e.message
            .contains("sqlite:// targets have no server to observe"),
        "{e}"
    );
    // Under --shard only shard 0 observes.
    let shard = plan(&[
        "noop",
        "-t",
        "postgres://u@127.0.0.1:5432/db",
        "-c",
        "2",
        "--shard",
        "1/2",
        "--observe",
        "on",
    ])
    .unwrap();
    assert!(shard.observes() && !shard.observes_here());
}
