//! `loadrig study directory` (seed 002) end to end: 1,000 generated people in slapd and in
//! SQLite and PostgreSQL under both schemas (the throwaway servers of scripts/services.sh,
//! required under LOADRIG_REQUIRE_ALL=1), the same entries found everywhere, the optimised
//! schema's plan through an index and the naive one's not, every search cell recomputed from
//! its run file, the report in headless Chromium; and `loadrig gen ldif` deterministic and
//! parseable. Bad input exits 2 before anything runs. Nothing here asserts a timing.

use crate::common::browser;
use crate::common::study;

use std::collections::BTreeMap;

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use browser::{check_page, Browser};
use study::{record, rows};

/// Row name, the variable its server's URL comes from (none: embedded), whether it has a plan.
const ROWS: [(&str, Option<&str>, Option<&str>); 5] = [
    ("OpenLDAP slapd (mdb)", Some("LOADRIG_LDAP_URL"), None),
    ("SQLite naive", None, Some("scan")),
    ("SQLite optimised", None, Some("index")),
    ("PostgreSQL naive", Some("LOADRIG_PG_URL"), Some("scan")),
    (
        "PostgreSQL optimised",
        Some("LOADRIG_PG_URL"),
        Some("index"),
    ),
];

#[test]
fn directory_quick_finds_the_same_entries_everywhere_and_plans_as_the_seed_says() {
    let present: Vec<bool> = ROWS
        .iter()
        .map(|(_, var, _)| var.is_none_or(|v| server_url(v).is_some()))
        .collect();
    let _servers = hold(&[Shared::Postgres, Shared::SlapdAlone]);
    let d = Dir::new();
    let out = d.ok(&["study", "directory", "--quick", "-o", "dir"]);
    // 1,000 entries: the seed's 210100 cut to "21" names user21 and user210..user219.
    assert!(out.contains("(cn=fname21*)"), "{out}");
    assert!(out.contains("11 matching"), "{out}");
    let s = record(&d, "dir");
    assert_eq!((s.sizes["entries"], s.sizes["searches"]), (1000, 200));
    assert_eq!(rows(&s).len(), ROWS.len());
    for ((name, _, plan), present) in ROWS.iter().zip(&present) {
        let r = &rows(&s)[ROWS.iter().position(|x| x.0 == *name).unwrap()];
        assert_eq!(r.backend.name, *name);
        assert!(out.contains(name), "{name} in the printed table");
        if !present {
            assert_eq!(r.backend.note.as_deref(), Some("not run: no URL"));
            continue;
        }
        // Ran means its search found exactly the generator's 11 entries: one that differs
        // fails with class protocol.
        assert_eq!(
            r.backend.state.words(),
            "ran",
            "{name}: {:?}",
            r.backend.note
        );
        assert!(r.cells[0].value.unwrap() > 0.0 && r.cells[1].value.unwrap() > 0.0);
        assert!(
            (r.cells[1].value.unwrap() * r.cells[0].value.unwrap() - 1000.0).abs() < 1e-6,
            "{name}: entries/s is entries over load time"
        );
        let cell = &r.cells[2];
        let run = cell.run.as_ref().expect("the search cell names its run");
        assert_eq!(r.backend.runs, std::slice::from_ref(run));
        let file = loadrig::result::read(&d.join("dir").join(run)).expect("run file");
        let op = &file.operations[0];
        assert_eq!(cell.value, Some(op.throughput_per_s), "{name}: {run}");
        assert_eq!((op.ok, op.errors), (200, 0), "{name}: 200 searches");
        assert_eq!(op.rows, 200 * 11, "{name}: 11 entries per search");
        assert_eq!(r.cells[3].label.as_deref(), *plan, "{name}: {:?}", r.plan);
        assert_eq!(r.plan.is_some(), plan.is_some());
    }
    let page = std::fs::read_to_string(d.join("dir/report.html")).unwrap();
    if present[1] {
        assert!(page.contains("Query plans") && page.contains("SEARCH loadrig_dir_opt"));
        assert!(page.contains("SCAN loadrig_dir_naive"));
    }
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &d.join("dir/report.html"), 0, 1);
    for (name, _, _) in ROWS {
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
