//! Bad input: every case exits 2 with a message that says what and where, and writes nothing.

use crate::common::Dir;

const GOOD: &str = r#"name = "w"
target = "noop://"

[params]
records = 100

[[op]]
name = "get"
kv.get = { key = "k{uniform 0..records}" }
"#;

/// What the case is, the workload file (None: a built-in), the arguments after
/// `run WORKLOAD`, and fragments the error message must contain.
type Case = (
    &'static str,
    Option<String>,
    Vec<&'static str>,
    Vec<&'static str>,
);

fn cases() -> Vec<Case> {
    let with = |from: &str, to: &str| Some(GOOD.replace(from, to));
    vec![
        (
            "unknown flag",
            None,
            vec!["--bogus"],
            vec!["unexpected argument '--bogus'"],
        ),
        (
            "unknown scheme",
            None,
            vec!["--target", "foo://x"],
            vec![
                "unknown target scheme 'foo://'",
                "known targets: noop, sleep, sqlite, fs",
            ],
        ),
        (
            "unknown scheme in the file",
            with("target = \"noop://\"", "target = \"foo://x\""),
            vec![],
            vec!["w.toml:2:11: unknown target scheme 'foo://'"],
        ),
        (
            "target not a URL",
            None,
            vec!["--target", "nowhere"],
            vec!["is not a URL", "SCHEME://LOCATION"],
        ),
        (
            "unknown target option",
            None,
            vec!["--target", "sqlite://x.db?foo=1"],
            vec![
                "unknown option 'foo' for sqlite:// targets",
                "known options: sync",
            ],
        ),
        (
            "bad sqlite sync",
            None,
            vec!["--target", "sqlite://x.db?sync=maybe"],
            vec!["sync=maybe", "off, normal or full"],
        ),
        (
            "bad fs shards",
            None,
            vec!["--target", "fs://./s?shards=100"],
            vec!["shards=100", "1, 16, 256, 4096 or 65536"],
        ),
        (
            "bad dbm reopen",
            None,
            vec!["--target", "dbm://./s.redb?reopen=sometimes"],
            vec!["reopen=sometimes", "expected each", "or never"],
        ),
        (
            "bad dbm sync",
            None,
            vec!["--target", "dbm://./s.redb?sync=full"],
            vec!["sync=full", "expected each", "or none"],
        ),
        (
            "unknown dbm option",
            None,
            vec!["--target", "dbm://./s.redb?shards=4"],
            vec!["unknown option 'shards' for dbm:// targets", "reopen, sync"],
        ),
        (
            "unreachable dbm",
            None,
            vec!["--target", "dbm:///nonexistent-dir/x/y.redb?reopen=each"],
            vec!["target dbm:///nonexistent-dir/x/y.redb", "cannot open"],
        ),
        (
            "bad sleep latency",
            None,
            vec!["--target", "sleep://?latency=soon"],
            vec!["sleep:// latency 'soon'", "uniform(1ms..3ms)"],
        ),
        (
            "bad sleep stall",
            None,
            vec!["--target", "sleep://?stall=1s"],
            vec!["stall '1s'", "LENGTH@START"],
        ),
        (
            "unset variable",
            None,
            vec!["--target", "sqlite://${LOADRIG_TEST_UNSET_VAR}"],
            vec!["${LOADRIG_TEST_UNSET_VAR}", "not set"],
        ),
        (
            "unreachable sqlite",
            None,
            vec!["--target", "sqlite:///nonexistent-dir/x/y.db"],
            vec!["target sqlite:///nonexistent-dir/x/y.db", "cannot open"],
        ),
        (
            "unknown workload",
            None,
            vec![],
            vec![
                "no workload file or built-in workload named 'nosuch'",
                "session-store",
            ],
        ),
        (
            "malformed TOML",
            Some("name = \"w\"\n[load\nclients = 1\n".into()),
            vec![],
            vec!["w.toml:2:6", "expected"],
        ),
        (
            "unknown load field",
            with("[params]", "[load]\nclinets = 4\n\n[params]"),
            vec![],
            vec!["w.toml:5:1", "unknown field `clinets`", "clients"],
        ),
        (
            "missing name",
            with("name = \"w\"\n", ""),
            vec![],
            vec!["w.toml:1:1", "missing field `name`"],
        ),
        (
            "ill-typed load field",
            with("[params]", "[load]\nclients = \"four\"\n\n[params]"),
            vec![],
            vec!["w.toml:5:11", "invalid type"],
        ),
        (
            "a load field that is a number or a string, given neither",
            with("[params]", "[load]\nops = true\n\n[params]"),
            vec![],
            vec![
                "w.toml:5:7",
                "invalid type: boolean `true`, expected a number of operations, or \"{param}\"",
            ],
        ),
        (
            "settle given as a word",
            with("[params]", "settle = \"no\"\n\n[params]"),
            vec![],
            vec!["w.toml:4:10", "invalid type: string \"no\", expected a boolean"],
        ),
        (
            "a negative operation count",
            with("[params]", "[load]\nops = -3\n\n[params]"),
            vec![],
            vec!["w.toml:5:7", "invalid value: integer `-3`, expected a number of operations"],
        ),
        (
            "a pipeline refill that is neither a number nor a word",
            with("[params]", "[load]\npipeline_refill = 1.5\n\n[params]"),
            vec![],
            vec![
                "w.toml:5:19",
                "invalid type: floating point `1.5`, expected a number of streams, or \"each\" or \"all\"",
            ],
        ),
        (
            "a switch's values in only that are not strings",
            Some(format!("{GOOD}only = {{ mode = 3 }}\n[switches]\nmode = [\"a\", \"b\"]\n")),
            vec![],
            vec!["w.toml:10:17", "invalid type: integer `3`, expected a string, or a list of strings"],
        ),
        (
            "unknown generator",
            with("k{uniform 0..records}", "k{unform 0..records}"),
            vec![],
            vec!["w.toml:9:21", "unknown generator 'unform'"],
        ),
        (
            "unknown parameter in range",
            with("0..records", "0..recs"),
            vec![],
            vec!["w.toml:9:32", "found 'recs'", "records"],
        ),
        (
            "empty range",
            with("0..records", "5..5"),
            vec![],
            vec!["empty range 5..5"],
        ),
        (
            "YCSB hotspot fraction outside (0, 1)",
            with("k{uniform 0..records}", "k{ycsb_hotspot 0..records 0.2 1}"),
            vec![],
            vec![
                "w.toml:9:49",
                "hot operation fraction must lie between 0 and 1",
            ],
        ),
        (
            "YCSB latest without its record count",
            with("k{uniform 0..records}", "k{ycsb_latest}"),
            vec![],
            vec!["w.toml:9:21", "'ycsb_latest' takes the number of records loaded"],
        ),
        (
            "unclosed brace",
            with("k{uniform 0..records}", "k{seq"),
            vec![],
            vec!["w.toml:9:20", "unclosed '{'"],
        ),
        (
            "bytes in a key",
            with("k{uniform 0..records}", "{bytes 4}"),
            vec![],
            vec!["a key cannot hold {bytes N}", "{string N}"],
        ),
        (
            "put without value",
            with("kv.get", "kv.put"),
            vec![],
            vec!["kv.put needs a value"],
        ),
        (
            "op without kind",
            with("kv.get = { key = \"k{uniform 0..records}\" }", "weight = 2"),
            vec![],
            vec!["operation 'get' says nothing to do"],
        ),
        (
            "two kinds in one op",
            with("kv.get = { key", "nop = {}\nkv.get = { key"),
            vec![],
            vec!["has 2 operations"],
        ),
        (
            "duplicate op",
            Some(format!("{GOOD}\n[[op]]\nname = \"get\"\nnop = {{}}\n")),
            vec![],
            vec!["w.toml:12:8", "operation 'get' is defined twice"],
        ),
        (
            "negative weight",
            with("name = \"get\"", "name = \"get\"\nweight = -1"),
            vec![],
            vec!["w.toml:9:10", "weight -1 must be a number of at least 0"],
        ),
        (
            "weight naming no parameter",
            with("name = \"get\"", "name = \"get\"\nweight = \"{nope}\""),
            vec![],
            vec![
                "w.toml:9:10",
                "weight \"{nope}\" must name a number parameter",
            ],
        ),
        (
            "every weight 0",
            with("name = \"get\"", "name = \"get\"\nweight = 0"),
            vec![],
            vec!["leaves out every operation"],
        ),
        (
            "record operation without [records]",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "record.read = { key = \"k1\" }",
            ),
            vec![],
            vec![
                "w.toml:9:",
                "record.read needs the record's fields: declare them in [records]",
            ],
        ),
        (
            "record scan without count",
            Some(
                "name = \"w\"\ntarget = \"noop://\"\n[records]\nfields = 3\n[[op]]\nname = \"s\"\nrecord.scan = { key = \"k\" }\n"
                    .into(),
            ),
            vec![],
            vec!["w.toml:7:", "record.scan needs a count"],
        ),
        (
            "record fields 0",
            Some(
                "name = \"w\"\ntarget = \"noop://\"\n[records]\nfields = 0\n[[op]]\nname = \"s\"\nnop = {}\n"
                    .into(),
            ),
            vec![],
            vec!["w.toml:4:10", "[records] fields is 0"],
        ),
        (
            "select without the value's alternative",
            with("k{uniform 0..records}", "k{select records 5: seq | 6: seq}"),
            vec![],
            vec![
                "w.toml:9:28",
                "select records: no alternative for its value '100' (the alternatives: 5, 6)",
            ],
        ),
        (
            "no operations",
            Some("name = \"w\"\n".into()),
            vec![],
            vec!["the workload has no operations", "[[op]]"],
        ),
        (
            "unknown --set",
            None,
            vec!["--set", "nope=1"],
            vec!["--set nope=1", "has no parameter 'nope'"],
        ),
        (
            "ill-typed --set",
            Some(GOOD.into()),
            vec!["--set", "records=many"],
            vec!["--set records=many", "expected an integer"],
        ),
        (
            "malformed --set",
            None,
            vec!["--set", "records"],
            vec!["expected NAME=VALUE"],
        ),
        (
            "rate with clients",
            None,
            vec!["--rate", "100", "--clients", "2"],
            vec![
                "--rate and --clients cannot be used together",
                "--max-in-flight",
            ],
        ),
        (
            "samples with duration",
            None,
            vec!["--samples", "3", "--duration", "1s"],
            vec!["--samples and --duration cannot be used together"],
        ),
        (
            "bad duration",
            None,
            vec!["--duration", "ten"],
            vec!["--duration: 'ten' is not a duration", "30s"],
        ),
        (
            "zero op timeout",
            None,
            vec!["--op-timeout", "0s"],
            vec!["--op-timeout must be above zero"],
        ),
        (
            "bad op timeout",
            None,
            vec!["--op-timeout", "soon"],
            vec!["--op-timeout: 'soon' is not a duration", "500ms"],
        ),
        (
            "bad workload op_timeout",
            with("target = \"noop://\"\n", "target = \"noop://\"\nop_timeout = \"abc\"\n"),
            vec![],
            vec!["w.toml:3:14", "op_timeout: 'abc' is not a duration"],
        ),
        (
            "zero workload op_timeout",
            with("target = \"noop://\"\n", "target = \"noop://\"\nop_timeout = \"0ms\"\n"),
            vec![],
            vec!["w.toml:3:14", "op_timeout must be above zero"],
        ),
        (
            "capture on an ldap add",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "ldap.add = { dn = \"cn=x\", attrs = { cn = \"x\" } }\ncapture = [\"a\"]",
            ),
            vec![],
            vec!["w.toml:10:11", "capture applies to sql, redis and ldap.search"],
        ),
        (
            "ldap capture beyond the attributes",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "ldap.search = { base = \"dc=x\", attrs = [\"cn\"] }\ncapture = [\"dn\", \"cn\", \"mail\"]",
            ),
            vec![],
            vec!["w.toml:10:11", "3 name(s) for 2 value(s)"],
        ),
        (
            "ldap bind in a tx",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "tx = [ { ldap.bind = { dn = \"cn=x\", password = \"p\" } } ]",
            ),
            vec![],
            vec!["w.toml:9:8", "ldap.bind cannot be a tx step"],
        ),
        (
            "rollback step first in a tx",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "tx = [ { rollback = {} }, { sql = \"SELECT 1\" } ]",
            ),
            vec![],
            vec!["w.toml:9:8", "a rollback step follows a native step"],
        ),
        (
            "commit point in steps (no transaction)",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "steps = [ { sql = \"SELECT 1\" }, { commit = {} } ]",
            ),
            vec![],
            vec![
                "w.toml:9:33: a commit point needs a transaction",
                "help: write tx = [ ... ] for one transaction",
            ],
        ),
        (
            "rollback step in a repeat group of steps",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "steps = [ { repeat = \"2\", steps = [ { sql = \"SELECT 1\" }, { rollback = {} } ] } ]",
            ),
            vec![],
            vec![
                "w.toml:9:59: a rollback step needs a transaction",
                "help: write tx = [ ... ] for one transaction",
            ],
        ),
        (
            "figure of an unknown operation",
            with(
                "kv.get = { key = \"k{uniform 0..records}\" }",
                "kv.get = { key = \"k{uniform 0..records}\" }\n[[figure]]\nname = \"f\"\nops = [\"put\"]\nper = \"minute\"",
            ),
            vec![],
            vec!["w.toml:12:8", "figure 'f': no operation 'put'", "the operations are: get"],
        ),
        (
            "zero clients",
            None,
            vec!["--clients", "0"],
            vec!["--clients 0: expected 1 to 10000"],
        ),
        (
            "negative rate",
            None,
            vec!["--rate=-5"],
            vec!["--rate -5", "above zero"],
        ),
        (
            "max-in-flight without rate",
            None,
            vec!["--max-in-flight", "4"],
            vec!["--max-in-flight applies to open loops only"],
        ),
        (
            "think time with rate",
            None,
            vec!["--rate", "10", "--think-time", "1ms"],
            vec!["--think-time applies to closed loops only"],
        ),
        (
            "bad arrivals",
            None,
            vec!["--rate", "10", "--arrivals", "bursty"],
            vec!["--arrivals bursty", "constant or poisson"],
        ),
        (
            "unknown --op",
            None,
            vec!["--op", "fetch"],
            vec!["--op fetch", "its operations are: nop"],
        ),
        (
            "zero interval",
            None,
            vec!["--interval", "0s"],
            vec!["interval must be at least 1ms"],
        ),
    ]
}

#[test]
fn malformed_inputs_exit_2_with_a_clear_message_and_write_nothing() {
    let cases = cases();
    assert!(cases.len() >= 20);
    for (what, file, extra, expected) in cases {
        let d = Dir::new();
        let workload = match &file {
            Some(text) => {
                d.write("w.toml", text);
                "w.toml"
            }
            None if what == "unknown workload" => "nosuch",
            None => "noop",
        };
        let mut args = vec!["run", workload];
        args.extend(extra.iter().copied());
        let out = d.loadrig(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{what}: exit status, stderr:\n{stderr}"
        );
        for fragment in expected {
            assert!(
                stderr.contains(fragment),
                "{what}: expected {fragment:?} in:\n{stderr}"
            );
        }
        assert!(!stderr.contains("panicked"), "{what}: panic:\n{stderr}");
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "w.toml")
            .collect();
        assert!(left.is_empty(), "{what}: wrote {left:?}");
    }
}

#[test]
fn list_and_init_work_and_init_output_runs() {
    let d = Dir::new();
    let list = d.ok(&["list"]);
    assert!(
        list.contains("session-store")
            && list.contains("noop")
            && list.contains("sqlite://")
            && list.contains("fs://")
    );
    let text = d.ok(&["init", "session-store"]);
    d.write("my.toml", &text);
    d.ok(&[
        "run",
        "my.toml",
        "--set",
        "records=100",
        "--ops",
        "50",
        "-o",
        "r.json",
    ]);
    assert_eq!(
        d.result("r.json").total.ok + d.result("r.json").total.errors,
        50
    );
    let out = d.loadrig(&["init", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
}
