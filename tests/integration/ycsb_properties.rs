//! YCSB's property files with the YCSB built-ins: `--properties FILE` (`-P FILE`, as YCSB's
//! own), each property set as `--set NAME=VALUE` sets it, `--set` winning over the files, and
//! the properties loadrig takes at YCSB's values only. On SQLite, so no server is needed.

use crate::common::Dir;
use loadrig::result::workload::ParamValue;

/// A header laid out as YCSB's files lay theirs out (comment lines ending in spaces, a
/// blank line, a comment line that is only `#`).
const HEADER: &str = "# A YCSB core workload property file, as YCSB 0.17 ships them.      \n#   \n# Its comments are lines starting with a hash.   \n\n";

/// The properties of YCSB 0.17.0's workloads/workloada, in its order and spacing.
const WORKLOADA_PROPERTIES: &str = "
recordcount=1000
operationcount=1000
workload=site.ycsb.workloads.CoreWorkload

readallfields=true

readproportion=0.5
updateproportion=0.5
scanproportion=0
insertproportion=0

requestdistribution=zipfian

";

/// The properties of YCSB 0.17.0's workloads/workloade, in its order and spacing.
const WORKLOADE_PROPERTIES: &str = "
recordcount=1000
operationcount=1000
workload=site.ycsb.workloads.CoreWorkload

readallfields=true

readproportion=0
updateproportion=0
scanproportion=0.95
insertproportion=0.05

requestdistribution=zipfian

maxscanlength=100

scanlengthdistribution=uniform


";

/// YCSB's workloada: the header, then its properties.
fn workloada() -> String {
    format!("{HEADER}{WORKLOADA_PROPERTIES}")
}

fn workloade() -> String {
    format!("{HEADER}{WORKLOADE_PROPERTIES}")
}

/// The NAME=VALUE lines of a property file (YCSB's own use only `=`).
fn properties(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_once('=').expect("NAME=VALUE"))
        .collect()
}

/// A parameter as the result file records it, written as a property file writes it.
fn same(recorded: &ParamValue, written: &str) -> bool {
    match recorded {
        ParamValue::Integer(n) => written.parse() == Ok(*n),
        ParamValue::Float(x) => written.parse() == Ok(*x),
        ParamValue::Bool(b) => written.parse() == Ok(*b),
        ParamValue::String(s) => s == written,
    }
}

/// `loadrig run BUILTIN` on SQLite for 20 operations with `args`: the result's parameters,
/// and the records the run inserted.
fn run_params(d: &Dir, builtin: &str, args: &[&str]) -> (Vec<(String, ParamValue)>, i64) {
    let target = format!("sqlite://{}", d.join("t.db").display());
    let mut all = vec![
        "run", builtin, "--target", &target, "--ops", "20", "--seed", "1", "-o", "r.json",
    ];
    all.extend_from_slice(args);
    d.ok(&all);
    let r = d.result("r.json");
    for op in &r.operations {
        assert_eq!(op.errors, 0, "{builtin} {}", op.name);
    }
    let inserted = r
        .operations
        .iter()
        .find(|o| o.name == "insert")
        .map_or(0, |o| o.ok as i64);
    (r.workload.params.into_iter().collect(), inserted)
}

fn param<'a>(params: &'a [(String, ParamValue)], name: &str) -> &'a ParamValue {
    &params.iter().find(|(n, _)| n == name).expect(name).1
}

#[test]
fn ycsbs_workloada_and_workloade_carry_over() {
    for (builtin, file, text) in [
        ("ycsb-a", "workloada", workloada()),
        ("ycsb-e", "workloade", workloade()),
    ] {
        let d = Dir::new();
        d.write(file, &text);
        let (params, inserted) = run_params(&d, builtin, &["-P", file]);
        for (name, value) in properties(&text) {
            let got = param(&params, name);
            assert!(
                same(got, value),
                "{builtin}: {name}={value}, recorded {got:?}"
            );
        }
        // The file's recordcount, loaded.
        assert_eq!(
            d.sqlite_count("SELECT COUNT(*) FROM loadrig_usertable"),
            1000 + inserted,
            "{builtin}"
        );
    }
}

#[test]
fn later_files_and_then_set_win() {
    let d = Dir::new();
    d.write("workloada", &workloada());
    d.write(
        "mine",
        "recordcount: 100\nrequestdistribution uniform\nreadproportion=0.9\n",
    );
    let (params, _) = run_params(
        &d,
        "ycsb-a",
        &[
            "--set",
            "readproportion=0.7",
            "--properties",
            "workloada",
            "-P",
            "mine",
            "--set",
            "updateproportion=0.3",
        ],
    );
    assert_eq!(*param(&params, "recordcount"), ParamValue::Integer(100));
    assert_eq!(
        *param(&params, "requestdistribution"),
        ParamValue::String("uniform".into())
    );
    // --set beats both files, wherever it is on the command line.
    assert_eq!(*param(&params, "readproportion"), ParamValue::Float(0.7));
    assert_eq!(*param(&params, "updateproportion"), ParamValue::Float(0.3));
    assert_eq!(
        d.sqlite_count("SELECT COUNT(*) FROM loadrig_usertable"),
        100
    );
}

#[test]
fn an_unknown_property_exits_2_at_its_line_naming_the_known_ones() {
    let d = Dir::new();
    d.write("w.properties", "# mine\nrecordcount=10\nthreadcount=4\n");
    let (_, err) = d.code(2, &["ops", "ycsb-a", "-P", "w.properties"]);
    let first = err.lines().next().unwrap();
    assert_eq!(
        first,
        "error: w.properties:3:1: property threadcount=4: the workload 'ycsb-a' has no parameter 'threadcount'"
    );
    assert!(
        err.contains("help: its parameters are: ")
            && err.contains("recordcount, requestdistribution"),
        "{err}"
    );
    let (_, err) = d.code(2, &["ops", "ycsb-a", "-P", "missing.properties"]);
    assert!(
        err.contains("--properties missing.properties: cannot read it"),
        "{err}"
    );
}

#[test]
fn a_line_that_is_no_property_exits_2_at_its_line_and_column() {
    let d = Dir::new();
    d.write("w.properties", "recordcount=10\n\n  readallfields\n");
    let (_, err) = d.code(2, &["run", "ycsb-a", "-P", "w.properties"]);
    assert!(
        err.starts_with("error: w.properties:3:16: expected a property NAME=VALUE, NAME: VALUE or NAME VALUE, found 'readallfields' with no value"),
        "{err}"
    );
    assert!(!d.join("loadrig-ycsb.db").exists(), "nothing ran");
}

#[test]
fn only_core_workload_and_ycsbs_defaults_of_what_loadrig_does_not_vary() {
    let d = Dir::new();
    // YCSB's workload_template's values, and the class's old name.
    d.write(
        "ok.properties",
        "workload=com.yahoo.ycsb.workloads.CoreWorkload\ntable=usertable\n\
         fieldlengthdistribution=constant\nminscanlength=1\n",
    );
    d.ok(&["ops", "ycsb-e", "-P", "ok.properties", "--count", "1"]);
    for (line, why) in [
        (
            "workload=site.ycsb.workloads.OtherWorkload",
            "help: loadrig's YCSB built-ins (ycsb-a .. ycsb-f) are YCSB's CoreWorkload only",
        ),
        (
            "table=accounts",
            "help: loadrig's records go in loadrig_usertable",
        ),
        (
            "fieldlengthdistribution=zipfian",
            "help: loadrig's YCSB built-ins write every field with exactly fieldlength characters",
        ),
    ] {
        d.write("bad.properties", &format!("# one\n{line}\n"));
        let (_, err) = d.code(2, &["ops", "ycsb-a", "-P", "bad.properties"]);
        let name = line.split('=').next().unwrap();
        assert!(
            err.starts_with(&format!(
                "error: bad.properties:2:1: property {line}: switch '{name}' is one of "
            )),
            "{err}"
        );
        assert!(err.contains(why), "{err}");
    }
}

/// The scans' lengths with these properties: (smallest, largest) of 200 scans.
fn scan_lengths(d: &Dir, props: &str) -> (u64, u64) {
    d.write("scan.properties", props);
    let out = d.ok(&[
        "ops",
        "ycsb-e",
        "-P",
        "scan.properties",
        "--count",
        "200",
        "--json",
        "--seed",
        "3",
    ]);
    let counts: Vec<u64> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|op| op["op"] == "scan")
        .map(|op| op["args"][1].as_u64().unwrap())
        .collect();
    (*counts.iter().min().unwrap(), *counts.iter().max().unwrap())
}

#[test]
fn scans_are_minscanlength_to_maxscanlength_long() {
    let d = Dir::new();
    // 190-odd uniform draws of 4 values: all of them come up.
    assert_eq!(
        scan_lengths(&d, "minscanlength=5\nmaxscanlength=8\n"),
        (5, 8)
    );
    assert_eq!(
        scan_lengths(
            &d,
            "minscanlength=5\nmaxscanlength=8\nscanlengthdistribution=zipfian\n"
        ),
        (5, 8)
    );
    assert_eq!(
        scan_lengths(&d, "minscanlength=3\nmaxscanlength=3\n"),
        (3, 3)
    );
}

#[test]
fn booleans_take_any_case_as_javas_parse_boolean() {
    let d = Dir::new();
    let first_read = |value: &str| {
        d.write("b.properties", &format!("readallfields={value}\n"));
        let out = d.ok(&[
            "ops",
            "ycsb-c",
            "-P",
            "b.properties",
            "--count",
            "1",
            "--json",
        ]);
        let op: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        op["text"].as_str().unwrap().to_string()
    };
    assert!(first_read("TRUE").ends_with("fields=all"));
    assert!(first_read("False").contains(" field="));
    d.write("b.properties", "readallfields=yes\n");
    let (_, err) = d.code(2, &["ops", "ycsb-c", "-P", "b.properties"]);
    assert!(
        err.contains("property readallfields=yes: switch 'readallfields' is one of true, false"),
        "{err}"
    );
}
