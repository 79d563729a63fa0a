//! Switches, `only`, `when`, commit points and peers: what compiles and the errors that
//! point at their place in the file.

use super::*;

const HEAD: &str = r#"name = "t"
[switches]
mode = ["inline", "agent", "queue"]
chopping = ["off", "on"]
[peers]
web = "http://127.0.0.1:9"
queue = "redis://127.0.0.1:9"
"#;

fn compiled(body: &str, sets: &[(&str, &str)]) -> Result<Workload, InputError> {
    let text = format!("{HEAD}{body}");
    let sets: Vec<Setting> = sets.iter().map(|(k, v)| Setting::flag(k, v)).collect();
    compile(
        &Source {
            path: "w.toml",
            text: &text,
        },
        &sets,
    )
}

/// The error's message and its `w.toml:LINE:COLUMN`.
fn error(body: &str, sets: &[(&str, &str)]) -> (String, String) {
    let e = compiled(body, sets).expect_err("should not compile");
    (e.message, e.location.unwrap_or_default())
}

const OPS: &str = r#"
[[op]]
name = "order"
only = { mode = "inline" }
nop = {}
[[op]]
name = "order"
only = { mode = ["agent", "queue"], chopping = "on" }
kv.get = { key = "k" }
[[op]]
name = "browse"
nop = {}
"#;

#[test]
fn switches_default_to_their_first_value_and_only_keeps_matching_ops() {
    let w = compiled(OPS, &[]).unwrap();
    assert_eq!(w.params["mode"], toml::Value::String("inline".into()));
    let names: Vec<_> = w
        .ops
        .iter()
        .map(|o| (o.name.as_str(), o.kind.label()))
        .collect();
    assert_eq!(names, [("order", "nop"), ("browse", "nop")]);
    let w = compiled(OPS, &[("mode", "queue"), ("chopping", "on")]).unwrap();
    let names: Vec<_> = w
        .ops
        .iter()
        .map(|o| (o.name.as_str(), o.kind.label()))
        .collect();
    assert_eq!(names, [("order", "kv.get"), ("browse", "nop")]);
    let w = compiled(OPS, &[("mode", "queue")]).unwrap();
    assert_eq!(w.ops.len(), 1);
}

#[test]
fn a_bad_switch_value_names_the_switch_and_its_values() {
    let (message, _) = error(OPS, &[("mode", "bogus")]);
    assert_eq!(
        message,
        "--set mode=bogus: switch 'mode' is one of inline, agent, queue"
    );
}

#[test]
fn a_switch_may_say_why_it_has_only_its_values_and_takes_java_booleans() {
    let text = "name = \"t\"\n[params]\nverbose = false\n[switches]\nall = [\"true\", \"false\"]\n\
                table = { values = [\"usertable\"], help = \"the table is loadrig_usertable\" }\n\
                [[op]]\nname = \"a\"\nnop = {}\n";
    let with = |sets: &[Setting]| {
        compile(
            &Source {
                path: "w.toml",
                text,
            },
            sets,
        )
    };
    let property = Setting {
        name: "table".into(),
        value: "t2".into(),
        at: Some("p.properties:3:1".into()),
    };
    assert_eq!(
        with(&[property]).unwrap_err().to_string(),
        "p.properties:3:1: property table=t2: switch 'table' is one of usertable\n  help: the table is loadrig_usertable"
    );
    let w = with(&[
        Setting::flag("all", "FALSE"),
        Setting::flag("verbose", "True"),
    ])
    .unwrap();
    assert_eq!(w.params["all"], toml::Value::String("false".into()));
    assert_eq!(w.params["verbose"], toml::Value::Boolean(true));
    // Java would read "yes" as false; it is refused instead.
    assert_eq!(
        with(&[Setting::flag("all", "yes")]).unwrap_err().message,
        "--set all=yes: switch 'all' is one of true, false"
    );
}

/// sysbench 1.0 takes a flag as on, off, true, false, 1 or 0 (and nothing else, `On`
/// included): an `["off", "on"]` switch such as the sysbench built-ins' `skip_trx` does too.
#[test]
fn an_on_off_switch_takes_sysbenchs_spellings() {
    let text = r#"name = "t"
[switches]
skip_trx = ["off", "on"]
[[op]]
name = "a"
nop = {}
"#;
    let with = |value: &str| {
        compile(
            &Source {
                path: "w.toml",
                text,
            },
            &[Setting::flag("skip_trx", value)],
        )
    };
    for (given, kept) in [
        ("true", "on"),
        ("1", "on"),
        ("false", "off"),
        ("0", "off"),
        ("on", "on"),
    ] {
        let w = with(given).unwrap();
        assert_eq!(
            w.params["skip_trx"],
            toml::Value::String(kept.into()),
            "{given}"
        );
    }
    assert_eq!(
        with("yes").unwrap_err().message,
        "--set skip_trx=yes: switch 'skip_trx' is one of off, on"
    );
}

#[test]
fn a_name_is_a_parameter_or_a_switch() {
    let (message, at) = error("[params]\nmode = 1\n[[op]]\nname = \"a\"\nnop = {}\n", &[]);
    assert!(
        message.contains("'mode' is both a parameter and a switch"),
        "{message}"
    );
    assert_eq!(at, "w.toml:3:8");
}

#[test]
fn only_names_known_switches_and_values() {
    let (message, at) = error(
        "[[op]]\nname = \"a\"\nonly = { speed = \"x\" }\nnop = {}\n",
        &[],
    );
    assert!(message.contains("'speed' is not a switch"), "{message}");
    assert_eq!(at, "w.toml:10:8");
    let (message, at) = error(
        "[[op]]\nname = \"a\"\nonly = { mode = [\"inline\", \"mail\"] }\nnop = {}\n",
        &[],
    );
    assert!(
        message.contains("'mail' is not a value of switch 'mode'"),
        "{message}"
    );
    assert_eq!(at, "w.toml:10:8");
    let (message, _) = error(
        "[[op]]\nname = \"a\"\nonly = { mode = \"agent\" }\nnop = {}\n",
        &[],
    );
    assert!(message.contains("leaves out every operation"), "{message}");
}

#[test]
fn a_tx_keeps_its_steps_for_the_switches_and_marks_commit_points() {
    let tx = r#"[[op]]
name = "a"
tx = [
  { sql = { query = "SELECT 1" }, capture = ["one"] },
  { commit = {}, only = { chopping = "on" } },
  { sql = { query = "SELECT 2" }, only = { mode = "agent" } },
  { sql = { query = "SELECT 3" }, when = "one" },
  { commit = {} },
]
"#;
    let steps = |w: Workload| match &w.ops[0].kind {
        OpKind::Tx(steps) => steps
            .iter()
            .map(|s| (s.commit_before, !s.when.is_empty()))
            .collect::<Vec<_>>(),
        _ => panic!("not a tx"),
    };
    let w = compiled(tx, &[]).unwrap();
    assert_eq!(steps(w), [(false, false), (false, true)]);
    let w = compiled(tx, &[("chopping", "on"), ("mode", "agent")]).unwrap();
    assert_eq!(steps(w), [(false, false), (true, false), (false, true)]);
    let all_out = "[[op]]\nname = \"a\"\ntx = [ { sql = { query = \"SELECT 1\" }, only = { mode = \"queue\" } } ]\n";
    let (message, at) = error(all_out, &[]);
    assert!(message.contains("every step of this tx"), "{message}");
    assert_eq!(at, "w.toml:10:6");
    let (message, _) = error(
        "[[op]]\nname = \"a\"\ntx = [ { commit = {}, when = \"x\" } ]\n",
        &[],
    );
    assert!(
        message.contains("a commit point is { commit = {} } alone"),
        "{message}"
    );
}

#[test]
fn when_names_an_earlier_capture_or_a_let() {
    let later = r#"[[op]]
name = "a"
let = { n = "{uniform 0..2}" }
tx = [
  { sql = { query = "SELECT 1" }, when = "n" },
  { sql = { query = "SELECT 1" }, when = "later" },
  { sql = { query = "SELECT 1" }, capture = ["later"] },
]
"#;
    let (message, at) = error(later, &[]);
    assert!(
        message.contains("when = \"later\": no earlier step"),
        "{message}"
    );
    assert_eq!(at, "w.toml:13:42");
}

/// `when = [...]`: every value must hold; each name is checked; an empty list or another
/// type is refused at its place.
#[test]
fn when_lists_join_their_conditions() {
    let tx = |when: &str| {
        format!(
            "[[op]]\nname = \"a\"\nlet = {{ n = \"{{uniform 0..2}}\" }}\ntx = [\n  {{ sql = {{ query = \"SELECT 1\" }}, capture = [\"one\"] }},\n  {{ sql = {{ query = \"SELECT 2\" }}, when = {when} }},\n]\n"
        )
    };
    let w = compiled(&tx(r#"["!n", "one"]"#), &[]).unwrap();
    let OpKind::Tx(steps) = &w.ops[0].kind else {
        panic!("not a tx")
    };
    let negated: Vec<bool> = steps[1].when.iter().map(|w| w.negate).collect();
    assert_eq!(negated, [true, false]);
    assert_ne!(steps[1].when[0].slot, steps[1].when[1].slot);
    let (message, at) = error(&tx(r#"["one", "nope"]"#), &[]);
    assert!(message.contains("when = \"nope\""), "{message}");
    assert_eq!(at, "w.toml:13:42");
    let (message, _) = error(&tx("[]"), &[]);
    assert!(message.contains("when = [] names no value"), "{message}");
    let (message, _) = error(&tx("1"), &[]);
    assert!(message.contains("or a list of them"), "{message}");
}

/// `{NAME}` in a statement's text, NAME a `{uniform}` let: one statement per value, each
/// with its own id; other values and too wide ranges are refused at their place.
#[test]
fn a_let_named_in_statement_text_writes_one_statement_per_value() {
    let op = |lets: &str, query: &str| {
        format!("[[op]]\nname = \"a\"\nlet = {{ {lets} }}\nsql = {{ query = \"{query}\" }}\n")
    };
    let w = compiled(
        &op(
            r#"t = "{uniform 2..5}""#,
            "SELECT {x} FROM loadrig_t{t} WHERE v = '{t}'",
        ),
        &[],
    )
    .unwrap();
    let OpKind::Native(step) = &w.ops[0].kind else {
        panic!("not one statement")
    };
    let texts = step.texts.as_ref().expect("statement texts");
    assert_eq!(texts.lo, 2);
    let queries: Vec<(usize, &str)> = texts
        .ops
        .iter()
        .map(|o| match o {
            NativeOp::Sql(SqlOp { id, query, .. }) => (*id, query.as_str()),
            _ => panic!("not sql"),
        })
        .collect();
    assert_eq!(
        queries.iter().map(|q| q.1).collect::<Vec<_>>(),
        [
            "SELECT {x} FROM loadrig_t2 WHERE v = '2'",
            "SELECT {x} FROM loadrig_t3 WHERE v = '3'",
            "SELECT {x} FROM loadrig_t4 WHERE v = '4'"
        ]
    );
    let ids: std::collections::BTreeSet<usize> = queries.iter().map(|q| q.0).collect();
    assert_eq!(ids.len(), 3);
    // The value the let holds picks the statement.
    let values = |v: &str| vec![v.as_bytes().to_vec(); w.capture_slots];
    assert!(
        matches!(step.op_now(&values("3")), NativeOp::Sql(SqlOp { query, .. }) if query.ends_with("'3'"))
    );
    let (message, at) = error(
        &op(r#"t = "{zipf 1..5}""#, "SELECT 1 FROM loadrig_t{t}"),
        &[],
    );
    assert!(
        message.contains("must be a let value drawn by {uniform A..B}"),
        "{message}"
    );
    assert_eq!(at, "w.toml:11:41");
    let (message, _) = error(
        &op(r#"t = "{uniform 0..1001}""#, "SELECT 1 FROM loadrig_t{t}"),
        &[],
    );
    assert!(message.contains("takes 1001 values"), "{message}");
    let (message, _) = error(
        &op(
            r#"a = "{uniform 0..2}", b = "{uniform 0..2}""#,
            "SELECT 1 FROM loadrig_{a}_{b}",
        ),
        &[],
    );
    assert!(message.contains("'b' is a second"), "{message}");
}

#[test]
fn steps_on_peers_are_checked_against_the_peer() {
    let w = compiled(
        "[[op]]\nname = \"a\"\nhttp = { path = \"/x\" }\non = \"web\"\n[[op]]\nname = \"b\"\ntx = [ { sql = { query = \"SELECT 1\" } }, { redis = [\"RPOP\", \"q\"], on = \"queue\", capture = [\"v\"] }, { sql = { query = \"SELECT 2\" }, when = \"v\" } ]\n",
        &[],
    )
    .unwrap();
    assert!(!w.ops[0].kind.is_plain());
    assert!(w.ops[0].kind.families().is_empty());
    assert_eq!(w.ops[1].kind.families().len(), 2);
    let (message, at) = error(
        "[[op]]\nname = \"a\"\nhttp = { path = \"/x\" }\non = \"nope\"\n",
        &[],
    );
    assert!(message.contains("on = \"nope\": no such peer"), "{message}");
    assert_eq!(at, "w.toml:11:6");
    let (message, at) = error(
        "[[op]]\nname = \"a\"\nhttp = { path = \"/x\" }\non = \"queue\"\n",
        &[],
    );
    assert!(
        message.contains("peer 'queue' is a redis:// system and does not run http steps"),
        "{message}"
    );
    assert_eq!(at, "w.toml:11:6");
    let (message, _) = error(
        "[[op]]\nname = \"a\"\ntx = [ { http = { path = \"/x\" } } ]\n",
        &[],
    );
    assert!(
        message.contains("an http step of a tx runs on a peer"),
        "{message}"
    );
    let (message, at) = error("[[op]]\nname = \"a\"\nnop = {}\non = \"web\"\n", &[]);
    assert!(message.contains("on = \"PEER\" goes with"), "{message}");
    assert_eq!(at, "w.toml:11:6");
}

#[test]
fn peers_are_http_or_redis() {
    let text = "name = \"t\"\n[peers]\ndb = \"postgres://x@127.0.0.1/db\"\n[[op]]\nname = \"a\"\nnop = {}\n";
    let e = compile(
        &Source {
            path: "w.toml",
            text,
        },
        &[],
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("expected an http:// or redis:// URL, found postgres://"),
        "{}",
        e.message
    );
    assert_eq!(e.location.as_deref(), Some("w.toml:3:6"));
}

#[test]
fn http_captures_its_body_as_one_value() {
    let one =
        "[[op]]\nname = \"a\"\nhttp = { path = \"/x\" }\non = \"web\"\ncapture = [\"body\"]\n";
    assert!(compiled(one, &[]).is_ok());
    let two = "[[op]]\nname = \"a\"\nhttp = { path = \"/x\" }\ncapture = [\"a\", \"b\"]\n";
    let (message, at) = error(two, &[]);
    assert!(
        message.contains("http captures one value, the response body: 2 names"),
        "{message}"
    );
    assert_eq!(at, "w.toml:11:11");
}

#[test]
fn sql_may_be_a_statement_alone() {
    let w = compiled(
        "[[op]]\nname = \"a\"\nsql = \"SELECT 1\"\n[[op]]\nname = \"b\"\ntx = [ { sql = \"SELECT {mode}\", capture = [\"m\"] } ]\n",
        &[("mode", "agent")],
    )
    .unwrap();
    let query = |k: &OpKind| match k {
        OpKind::Native(s) => format!("{:?}", s.op),
        OpKind::Tx(s) => format!("{:?}", s[0].op),
        _ => String::new(),
    };
    assert!(query(&w.ops[0].kind).contains("query: \"SELECT 1\""));
    assert!(query(&w.ops[1].kind).contains("query: \"SELECT {mode}\""));
    let (message, at) = error(
        "[[op]]\nname = \"a\"\nsql = { querry = \"SELECT 1\" }\n",
        &[],
    );
    assert!(message.contains("unknown field `querry`"), "{message}");
    assert_eq!(at, "w.toml:10:9");
    let (message, _) = error("[[op]]\nname = \"a\"\nsql = 5\n", &[]);
    assert!(
        message.contains("expected a statement, or a table"),
        "{message}"
    );
    let (message, at) = error("[[op]]\nname = \"a\"\nsql = \"  \"\n", &[]);
    assert_eq!(
        (message.as_str(), at.as_str()),
        ("the query is empty", "w.toml:10:7")
    );
}

#[test]
fn a_rollback_step_rides_on_the_native_step_before_it() {
    let tx = r#"[[op]]
name = "a"
let = { n = "{uniform 0..2}" }
tx = [
  { sql = { query = "SELECT 1" }, capture = ["one"] },
  { rollback = {}, when = "!one" },
  { repeat = "2", steps = [
    { sql = { query = "SELECT 2" } },
    { rollback = {}, when = "n", only = { chopping = "on" } },
  ] },
  { sql = { query = "SELECT 3" } },
  { rollback = {} },
]
"#;
    let rollbacks = |w: Workload| match &w.ops[0].kind {
        OpKind::Tx(steps) => steps
            .iter()
            .map(|s| s.rollback_after.map(|w| w.map(|w| w.negate)))
            .collect::<Vec<_>>(),
        _ => panic!("not a tx"),
    };
    let w = compiled(tx, &[]).unwrap();
    assert_eq!(rollbacks(w), [Some(Some(true)), None, Some(None)]);
    let w = compiled(tx, &[("chopping", "on")]).unwrap();
    assert_eq!(
        rollbacks(w),
        [Some(Some(true)), Some(Some(false)), Some(None)]
    );
    for (bad, expect, at) in [
        (
            "tx = [ { rollback = {} }, { sql = \"SELECT 1\" } ]",
            "follows a native step",
            "w.toml:10:8",
        ),
        (
            "tx = [ { sql = \"SELECT 1\" }, { rollback = {} }, { rollback = {} } ]",
            "follows a native step",
            "w.toml:10:49",
        ),
        (
            "tx = [ { repeat = \"2\", steps = [ { sql = \"SELECT 1\" } ] }, { rollback = {} } ]",
            "a repeat group",
            "w.toml:10:60",
        ),
        (
            "tx = [ { sql = \"SELECT 1\" }, { rollback = {}, when = \"!nothing\" } ]",
            "no earlier step of this op captures 'nothing'",
            "w.toml:10:54",
        ),
        (
            "tx = [ { sql = \"SELECT 1\" }, { rollback = {}, sql = \"SELECT 2\" } ]",
            "a rollback step is { rollback = {}",
            "w.toml:10:30",
        ),
        (
            "tx = [ { sql = \"SELECT 1\" }, { rollback = {}, record = { delete = { key = \"k\" } } } ]",
            "a rollback step is { rollback = {}",
            "w.toml:10:30",
        ),
    ] {
        let (message, location) = error(&format!("[[op]]\nname = \"a\"\n{bad}\n"), &[]);
        assert!(message.contains(expect), "{bad}: {message}");
        assert_eq!(location, at, "{bad}");
    }
}

/// `steps = [...]` compiles as a tx's steps do (groups, captures, `when`, `only`) into
/// `OpKind::Steps`; a commit point or a rollback step in it, or in one of its groups, has
/// no transaction to act on and is refused at its place with a help line; one left out by
/// `only` is not there to refuse.
#[test]
fn steps_are_a_tx_without_the_transaction() {
    let body = r#"[[op]]
name = "a"
steps = [
  { sql = { query = "SELECT 1" }, capture = ["one"] },
  { repeat = "2", steps = [ { sql = { query = "SELECT {iteration}" }, when = "one" } ] },
  { commit = {}, only = { chopping = "on" } },
]
"#;
    let w = compiled(body, &[]).unwrap();
    let OpKind::Steps(steps) = &w.ops[0].kind else {
        panic!("not steps: {:?}", w.ops[0].kind)
    };
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[1].repeat.as_ref().map(|r| r.len), Some(1));
    assert_eq!(w.ops[0].kind.label(), "steps");
    assert!(!w.ops[0].kind.is_plain());
    let (message, at) = error(body, &[("chopping", "on")]);
    assert!(
        message.starts_with("a commit point needs a transaction"),
        "{message}"
    );
    assert_eq!(at, "w.toml:13:3");
    for (bad, expect, at) in [
        (
            "steps = [ { sql = \"SELECT 1\" }, { rollback = {} } ]",
            "a rollback step needs a transaction",
            "w.toml:10:33",
        ),
        (
            "steps = [ { repeat = \"2\", steps = [ { sql = \"SELECT 1\" }, { commit = {} } ] } ]",
            "a commit point needs a transaction",
            "w.toml:10:59",
        ),
        ("steps = []", "steps has no steps", "w.toml:10:9"),
    ] {
        let e = compiled(&format!("[[op]]\nname = \"a\"\n{bad}\n"), &[]).unwrap_err();
        assert!(e.message.contains(expect), "{bad}: {}", e.message);
        assert_eq!(e.location.as_deref(), Some(at), "{bad}");
        if !bad.ends_with("[]") {
            assert!(e.help.unwrap().contains("tx = [ ... ]"), "{bad}");
        }
    }
}

#[test]
fn figures_and_pauses_compile_with_their_parameters_and_switches() {
    let body = r#"[params]
w = 4
[[op]]
name = "a"
pause = { keying = "18s", think = "12s", only = { chopping = "on" } }
nop = {}
[[figure]]
name = "tpmC"
ops = ["a"]
per = "minute"
[[figure]]
name = "efficiency"
ops = ["a"]
per = "minute"
divide_by = "12.86*{w}/100"
unit = "%"
"#;
    let w = compiled(body, &[]).unwrap();
    assert_eq!(w.ops[0].pause, None);
    assert_eq!(w.figures[0].unit, "per minute");
    assert_eq!(w.figures[0].per_s, 60.0);
    assert!((w.figures[1].divisor - 12.86 * 4.0 / 100.0).abs() < 1e-12);
    assert!((w.figures[1].value(643, 60.0) - 1250.0).abs() < 1e-9);
    let w = compiled(body, &[("chopping", "on")]).unwrap();
    assert_eq!(
        w.ops[0].pause,
        Some(Pause {
            keying: std::time::Duration::from_secs(18),
            think: std::time::Duration::from_secs(12)
        })
    );
    for (bad, expect) in [
        ("ops = [\"b\"]\nper = \"minute\"", "no operation 'b'"),
        (
            "ops = [\"a\"]\nper = \"day\"",
            "expected second, minute or hour",
        ),
        (
            "ops = [\"a\"]\nper = \"minute\"\ndivide_by = \"12.86*x\"",
            "'x' is not a number",
        ),
        (
            "ops = [\"a\"]\nper = \"minute\"\ndivide_by = \"0\"",
            "above zero",
        ),
        ("ops = []\nper = \"minute\"", "at least one operation"),
    ] {
        let text = format!("[[op]]\nname = \"a\"\nnop = {{}}\n[[figure]]\nname = \"f\"\n{bad}\n");
        let (message, location) = error(&text, &[]);
        assert!(message.contains(expect), "{bad}: {message}");
        assert!(location.starts_with("w.toml:1"), "{bad}: {location}");
    }
}

/// A parameter's floor: `--set` below it exits naming the parameter and the floor, with the
/// workload's help; a declared default below it, or a key the table does not take, at its
/// place in the file.
#[test]
fn a_parameter_below_its_floor_is_refused_by_name() {
    let body = |params: &str| format!("[params]\n{params}\n[[op]]\nname = \"n\"\nnop = {{}}\n");
    let ok = body(r#"scale = { value = 1, min = 1, help = "pgbench takes 1 or more" }"#);
    let w = compiled(&ok, &[("scale", "3")]).unwrap();
    assert_eq!(w.params["scale"], toml::Value::Integer(3));
    let e = compiled(&ok, &[("scale", "0")]).unwrap_err();
    assert_eq!(
        e.message,
        "--set scale=0: the workload 't' needs scale of 1 or more"
    );
    assert_eq!(e.help.as_deref(), Some("pgbench takes 1 or more"));
    let floats = body("ratio = { value = 0.5, min = 0.1 }");
    assert!(compiled(&floats, &[("ratio", "0.05")]).is_err());
    assert!(compiled(&floats, &[("ratio", "0.1")]).is_ok());
    for (params, message) in [
        (
            "n = { value = 0, min = 1 }",
            "defaults to 0, below its min 1",
        ),
        (
            "n = { value = 2, mn = 1 }",
            "has 'mn': expected value, min and help",
        ),
        ("n = { min = 1 }", "needs a value"),
        ("n = { value = \"a\", min = 1 }", "needs a number for both"),
    ] {
        let text = body(params);
        let (got, at) = error(&text, &[]);
        assert!(got.contains(message), "{params}: {got}");
        assert_eq!(at, "w.toml:9:5", "{params}");
    }
}

/// A workload with `before_run` (top-level, before the tables).
fn with_before_run(steps: &str) -> Result<Workload, InputError> {
    let text = format!(
        "name = \"t\"\nbefore_run = [\n{steps}\n]\n[params]\nn = 3\n\
         [[op]]\nname = \"s\"\nsql = \"SELECT 1\"\n"
    );
    compile(
        &Source {
            path: "w.toml",
            text: &text,
        },
        &[],
    )
}

#[test]
fn tables_are_settled_unless_the_workload_says_settle_false() {
    assert!(with_before_run("").unwrap().settle);
    let text = "name = \"t\"\nsettle = false\n[[op]]\nname = \"s\"\nsql = \"SELECT 1\"\n";
    let source = Source {
        path: "w.toml",
        text,
    };
    assert!(!compile(&source, &[]).unwrap().settle);
    let text = text.replace("false", "true");
    let source = Source {
        path: "w.toml",
        text: &text,
    };
    assert!(compile(&source, &[]).unwrap().settle);
}

#[test]
fn before_run_steps_keep_their_order_and_name_loadrig_tables_only() {
    let w = with_before_run(
        "  { vacuum = \"loadrig_b\" },\n  { sql = \"UPDATE loadrig_s SET n = {n}\" },\n  { empty = \"loadrig_h\" },\n  { vacuum = \"loadrig_t\" },",
    )
    .unwrap();
    assert_eq!(
        w.before_run,
        [
            RunStep::Vacuum("loadrig_b".into()),
            RunStep::Sql("UPDATE loadrig_s SET n = 3".into()),
            RunStep::Empty("loadrig_h".into()),
            RunStep::Vacuum("loadrig_t".into()),
        ]
    );
    // A statement names only loadrig's objects, and draws nothing.
    let e = with_before_run("  { sql = \"DELETE FROM accounts\" },").unwrap_err();
    assert!(
        e.message
            .contains("before_run statements may only create objects named loadrig_"),
        "{}",
        e.message
    );
    assert_eq!(e.location.as_deref(), Some("w.toml:3:11"));
    let e = with_before_run("  { sql = \"DELETE FROM loadrig_h WHERE k = {uniform 1..9}\" },")
        .unwrap_err();
    assert!(e.message.contains("no generators"), "{}", e.message);

    // Outside the namespace, or more than a plain name: refused where the name is.
    for (name, column) in [
        ("accounts", 13),
        ("loadrig_", 13),
        ("loadrig_h; DROP TABLE x", 13),
    ] {
        let e = with_before_run(&format!("  {{ empty = \"{name}\" }},")).unwrap_err();
        assert!(
            e.message.contains(&format!("before_run names '{name}'")),
            "{}",
            e.message
        );
        assert_eq!(e.location.as_deref(), Some(&*format!("w.toml:3:{column}")));
    }
    // One key a step, and only the two known ones.
    for step in ["{ vacuum = \"loadrig_a\", empty = \"loadrig_a\" }", "{}"] {
        let e = with_before_run(&format!("  {step},")).unwrap_err();
        assert!(e.message.contains("one key each"), "{step}: {}", e.message);
        assert_eq!(e.location.as_deref(), Some("w.toml:3:3"), "{step}");
    }
    let e = with_before_run("  { analyze = \"loadrig_a\" },").unwrap_err();
    assert!(e.message.contains("analyze"), "{}", e.message);
}
