//! `loadrig study directory` (seed 002) end to end on the seed's system: slapd's back-sql
//! over the throwaway PostgreSQL through ODBC (the study starts one slapd per mapping; Debian's
//! slapd, unixodbc and odbc-postgresql) beside the throwaway slapd's back-mdb, both required
//! under LOADRIG_REQUIRE_ALL=1. The seed's finding is asserted from PostgreSQL's own plans:
//! the search back-sql sends reaches the people through an index only with both of the seed's
//! changes (upper-cased columns and indexes), and scans with either alone; the statements
//! back-sql sends per LDAP search are counted by the server. Every row finds the generator's
//! entries, every search cell is its run file's, and the study leaves no slapd, schema or
//! password behind. `loadrig gen ldif` is deterministic and parseable. Bad input exits 2
//! before anything runs. Nothing here asserts a timing.

use crate::common::browser;
use crate::common::study;

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::locks::{hold, Shared};
use crate::common::needs::needs;
use crate::common::{server_url, Dir};
use browser::{check_page, Browser};
use study::{record, rows};

/// Row name and the plan of the statement that finds the people (none: back-mdb, no SQL).
const ROWS: [(&str, Option<&str>); 5] = [
    ("slapd back-mdb", None),
    ("back-sql naive", Some("scan")),
    ("back-sql upper-cased", Some("scan")),
    ("back-sql indexed", Some("scan")),
    ("back-sql upper+indexed", Some("index")),
];
const SEARCHES: u64 = 40;
/// The entries `(cn=fname21*)` finds among 1,000: user21 and user210..user219.
const MATCHING: u64 = 11;

/// slapd's back_sql module and psqlODBC, where Debian puts them.
fn backsql_installed() -> Option<()> {
    let module = Path::new("/usr/lib/ldap/back_sql.so").exists();
    let driver = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("odbc/psqlodbcw.so").exists());
    needs(
        "slapd's back_sql and psqlODBC",
        "apt-get install slapd unixodbc odbc-postgresql",
        (module && driver).then_some(()),
    )
}

/// The per-search calls and PostgreSQL execution time (µs) of the study's SQL lines
/// ("     286.2 µs   1.00 × base lookup: SELECT ..."), by what each statement is.
fn per_search(plan: &str) -> BTreeMap<String, (f64, f64)> {
    let mut out = BTreeMap::new();
    for line in plan.lines() {
        let Some((n, rest)) = line.trim().split_once(" × ") else {
            continue;
        };
        let (us, calls) = n.split_once(" µs ").expect("µs, then calls");
        let what = rest.split(": ").next().unwrap().to_string();
        let e = out.entry(what).or_insert((0.0, 0.0));
        e.0 += calls.trim().parse::<f64>().unwrap();
        e.1 += us.trim().parse::<f64>().unwrap();
    }
    out
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn directory_backsql_plans_as_the_seed_says_and_counts_its_sql() {
    let (Some(pg), Some(_), Some(())) = (
        server_url("LOADRIG_PG_URL"),
        server_url("LOADRIG_LDAP_URL"),
        backsql_installed(),
    ) else {
        return;
    };
    let _servers = hold(&[Shared::Postgres, Shared::SlapdAlone]);
    let d = Dir::new();
    let searches = format!("searches={SEARCHES}");
    let out = d.ok(&[
        "study",
        "directory",
        "--quick",
        "--set",
        &searches,
        "-o",
        "dir",
    ]);
    // 1,000 entries: the seed's 210100 cut to "21".
    assert!(out.contains("(cn=fname21*)"), "{out}");
    assert!(out.contains(&format!("{MATCHING} matching")), "{out}");
    let s = record(&d, "dir");
    assert_eq!((s.sizes["entries"], s.sizes["searches"]), (1000, SEARCHES));
    assert_eq!(rows(&s).len(), ROWS.len());
    let mut sql_per_search = Vec::new();
    let mut candidates_us = Vec::new();
    for (r, (name, plan)) in rows(&s).iter().zip(ROWS) {
        assert_eq!(r.backend.name, name);
        assert!(out.contains(name), "{name} in the printed table");
        // Ran means slapd returned exactly the generator's entries (else class protocol).
        assert_eq!(
            r.backend.state.words(),
            "ran",
            "{name}: {:?}",
            r.backend.note
        );
        assert!(r.cells[0].value.unwrap() > 0.0, "{name}: a load time");
        let cell = &r.cells[1];
        let run = cell.run.as_ref().expect("the search cell names its run");
        let file = loadrig::result::read(&d.join("dir").join(run)).expect("run file");
        let op = &file.operations[0];
        assert_eq!(cell.value, Some(op.throughput_per_s), "{name}: {run}");
        assert_eq!((op.ok, op.errors), (SEARCHES, 0), "{name}");
        assert_eq!(op.rows, SEARCHES * MATCHING, "{name}: entries per search");
        assert_eq!(r.cells[3].label.as_deref(), plan, "{name}: {:?}", r.plan);
        // The server's time per search: slapd's CPU in every row, from the search run's own
        // observation (a clock-tick count: it may be 0 for a few quick searches).
        let cpu = &r.cells[4];
        assert_eq!(
            cpu.run.as_deref(),
            Some(run.as_str()),
            "{name}: {:?}",
            cpu.note
        );
        let measured = file.server.as_ref().expect("the search run observed slapd");
        let procs = measured
            .measured
            .figures
            .processes
            .as_ref()
            .expect("slapd's processes");
        let want = procs.cpu_s() * 1e6 / SEARCHES as f64;
        assert!(
            (cpu.value.unwrap() - want).abs() <= 1e-9 * want.max(1.0),
            "{name}"
        );
        let Some(_) = plan else {
            assert!(r.cells[2].value.is_none() && r.plan.is_none(), "{name}");
            assert!(
                r.cells[5].value.is_none() && r.cells[6].value.is_none(),
                "{name}"
            );
            continue;
        };
        // The statements back-sql sent, as PostgreSQL counted them: one lookup of the base,
        // one candidate query per object class (the organizational units' cannot match the
        // filter, and is sent anyway), and statements per entry found.
        let text = r.plan.as_deref().unwrap();
        let kinds = per_search(text);
        assert_eq!(kinds["base lookup"].0, 1.0, "{name}: {text}");
        assert_eq!(
            kinds["candidates of inetOrgPerson"].0, 1.0,
            "{name}: {text}"
        );
        assert_eq!(
            kinds["candidates of organizationalUnit (1=0"].0, 1.0,
            "{name}: {text}"
        );
        let per_entry = kinds["per entry"].0;
        assert!(per_entry >= MATCHING as f64, "{name}: {text}");
        let total: f64 = kinds.values().map(|k| k.0).sum();
        assert_eq!(r.cells[2].value, Some(total), "{name}: {text}");
        // PostgreSQL's execution time per search is its statements' (rounded to 0.1 µs in
        // the lines), and its processes' CPU is read.
        let exec: f64 = kinds.values().map(|k| k.1).sum();
        let cell = r.cells[5].value.expect("PostgreSQL's execution time");
        // Each statement's line is rounded on its own: half a 0.1 µs step a line.
        let lines = text.lines().filter(|l| l.contains(" × ")).count();
        assert!(
            cell > 0.0 && (cell - exec).abs() <= 0.05 * lines as f64 + 1e-6,
            "{name}: {cell} {text}"
        );
        assert!(
            r.cells[6].value.is_some_and(|v| v >= 0.0),
            "{name}: {:?}",
            r.cells[6].note
        );
        candidates_us.push(kinds["candidates of inetOrgPerson"].1);
        let observed = r.cells[2].run.as_ref().expect("the observation file");
        assert!(d.join("dir").join(observed).is_file(), "{observed}");
        sql_per_search.push(total);
        // The plan explained is of the statement back-sql sent, its literals put back.
        assert!(text.contains("LIKE 'FNAME21%'"), "{name}: {text}");
        let column = if name.contains("upper") { "cn_u" } else { "cn" };
        if plan == Some("index") {
            assert!(
                text.contains(&format!("Index Cond: ((({column})::text ~>=~ 'FNAME21'")),
                "{text}"
            );
        } else {
            assert!(
                !text.contains(&format!("Index Cond: ((({column})")),
                "{name}: {text}"
            );
        }
    }
    // The seed's changes change how PostgreSQL answers each statement, not how many are sent.
    assert!(
        sql_per_search.windows(2).all(|w| w[0] == w[1]),
        "{sql_per_search:?}"
    );
    // And what the people's query costs PostgreSQL: the naive mapping's scan of every entry
    // takes more execution time than the index scan of both changes (about 7× at 1,000
    // entries; a busy machine's preemptions stretch both alike).
    assert!(
        candidates_us[0] > candidates_us[3],
        "naive against upper+indexed, µs per search: {candidates_us:?}"
    );
    // Each mapping's slapd read its ODBC data source from the study's folder, which holds no
    // password (libpq takes it from slapd's environment), and is stopped.
    let odbc = std::fs::read_to_string(d.join("dir/backsql/backsql/odbc.ini")).unwrap();
    assert!(
        odbc.contains("Driver") && odbc.contains("UseServerSidePrepare = 0"),
        "{odbc}"
    );
    for var in ["LOADRIG_PG_PASSWORD", "LOADRIG_LDAP_PASSWORD"] {
        let secret = std::env::var(var).unwrap();
        for f in files_under(d.path()) {
            let text = std::fs::read(&f).unwrap();
            let found = text.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{var} in {}", f.display());
        }
    }
    let backsql = rows(&s)[1].backend.target.clone().unwrap();
    let port = backsql.rsplit(':').next().unwrap();
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "the study's back-sql slapd is stopped"
    );
    // back-sql's schema and the people's tables are gone: cleanup finds nothing left.
    let cleaned = d.ok(&["cleanup", "--target", &pg]);
    assert!(cleaned.contains("removed 0 loadrig object(s)"), "{cleaned}");
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &d.join("dir/report.html"), 0, 1);
    for (name, _) in ROWS {
        assert!(text.contains(name), "{name} in the report");
    }
}

/// The entries of an LDIF file: each a map of attribute to values, with its `dn`.
fn parse_ldif(text: &str) -> Vec<BTreeMap<String, Vec<String>>> {
    let mut blocks = text.split("\n\n");
    assert_eq!(blocks.next(), Some("version: 1"));
    blocks
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            let mut e: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for line in b.lines() {
                let (k, v) = line.split_once(": ").expect("attr: value");
                e.entry(k.to_string()).or_default().push(v.to_string());
            }
            e
        })
        .collect()
}

#[test]
fn gen_ldif_is_deterministic_and_parseable() {
    let d = Dir::new();
    d.ok(&[
        "gen",
        "ldif",
        "--entries",
        "50",
        "--base",
        "dc=t,dc=x",
        "-o",
        "a.ldif",
    ]);
    let a = std::fs::read_to_string(d.join("a.ldif")).unwrap();
    let stdout = d.ok(&["gen", "ldif", "--entries", "50", "--base", "dc=t,dc=x"]);
    assert_eq!(a, stdout, "the same seed gives the same file");
    let other = d.ok(&[
        "gen",
        "ldif",
        "--entries",
        "50",
        "--base",
        "dc=t,dc=x",
        "--seed",
        "2",
    ]);
    assert_ne!(a, other, "another seed, other telephone numbers");
    let entries = parse_ldif(&a);
    assert_eq!(entries.len(), 51);
    assert_eq!(entries[0]["dn"], ["ou=people,dc=t,dc=x"]);
    let mut uids = std::collections::BTreeSet::new();
    for (i, e) in entries[1..].iter().enumerate() {
        assert_eq!(e["dn"], [format!("uid=user{i},ou=people,dc=t,dc=x")]);
        assert_eq!(e["cn"], [format!("fname{i} lname{i}")]);
        assert_eq!(e["sn"], [format!("lname{i}")]);
        assert_eq!(e["givenName"], [format!("fname{i}")]);
        assert!(e["mail"][0].contains('@') && e["telephoneNumber"][0].starts_with("+1 555 "));
        assert!(e["objectClass"].contains(&"inetOrgPerson".to_string()));
        assert!(uids.insert(e["uid"][0].clone()));
    }
}

#[test]
fn bad_input_exits_2_before_anything_runs() {
    let d = Dir::new();
    for (args, says) in [
        (vec!["--entries", "0"], "--entries 0"),
        (vec!["--base", "example.com"], "not a DN"),
        (vec!["--base", "dc=x,,dc=y"], "not a DN"),
    ] {
        let mut full = vec!["gen", "ldif"];
        full.extend(args);
        let (_, err) = d.code(2, &full);
        assert!(err.contains(says), "{full:?}: {err}");
    }
    for (args, says) in [
        (
            vec!["--set", "filter=(|(cn=a)(sn=b))"],
            "cannot translate '|'",
        ),
        (vec!["--set", "filter=(cn=a*b*)"], "cannot translate 'a*b'"),
        (vec!["--set", "filter=(description=x)"], "'description'"),
        (vec!["--set", "entries=0"], "entries=0"),
        (vec!["--set", "searches=lots"], "searches=lots"),
        (vec!["--set", "records=10"], "no such setting"),
        (
            vec!["--target", "redis://127.0.0.1:1"],
            "cannot use redis://",
        ),
        (vec!["--only", "tape"], "--only tape"),
    ] {
        let mut full = vec!["study", "directory", "--quick", "-o", "x"];
        full.extend(args);
        let (_, err) = d.code(2, &full);
        assert!(err.contains(says), "{full:?}: {err}");
        assert!(
            !d.join("x").exists(),
            "{full:?}: nothing is written for bad input"
        );
    }
}
