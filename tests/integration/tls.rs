//! Every network target over TLS, against the throwaway servers' TLS ports
//! (scripts/services.sh makes their CA): kv workloads with exact counts, a certificate from
//! another CA refused as a `connect` error that names the failed verification, `insecure=true`
//! connecting without the CA and recorded as such, and the phases of TLS connections.

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};

/// The records a kv run loads and then reads back one by one.
const RECORDS: u64 = 40;

/// Loads `RECORDS` records `PREFIX{seq}` and reads each back once, in order.
fn load_then_read(prefix: &str) -> String {
    format!(
        r#"
name = "tls-kv"
[data]
count = {RECORDS}
key = "{prefix}{{seq}}"
value = "{{bytes 64}}"
[[op]]
name = "get"
kv.get = {{ key = "{prefix}{{seq}}" }}
"#
    )
}

const CONNECT: &str = r#"
name = "tls-connect"
[[op]]
name = "connect"
connect = {}
"#;

/// The LDAP options a kv run needs, from the environment.
fn ldap_options() -> String {
    let var = |v: &str| std::env::var(v).unwrap_or_default();
    format!(
        "&bind_dn={}&password={}&base={}",
        var("LOADRIG_LDAP_BIND_DN"),
        var("LOADRIG_LDAP_PASSWORD"),
        var("LOADRIG_LDAP_BASE")
    )
}

/// Every target's TLS URL (with `ca=` the throwaway CA), by name; None when not set.
fn tls_urls() -> Option<Vec<(&'static str, String)>> {
    let ldap = server_url("LOADRIG_LDAP_URL")?;
    let ca = server_url("LOADRIG_CA_FILE")?;
    Some(vec![
        ("postgres", server_url("LOADRIG_PG_TLS_URL")?),
        ("mysql", server_url("LOADRIG_MYSQL_TLS_URL")?),
        (
            "mysql_async",
            server_url("LOADRIG_MYSQL_TLS_URL")? + "&client=mysql_async",
        ),
        (
            "redis",
            server_url("LOADRIG_REDIS_TLS_URL")?.replace("/0?", "/7?"),
        ),
        ("https", server_url("LOADRIG_HTTPS_URL")?),
        ("ldaps", server_url("LOADRIG_LDAPS_URL")? + &ldap_options()),
        (
            "starttls",
            format!("{ldap}?starttls=true&ca={ca}{}", ldap_options()),
        ),
    ])
}

/// What a kv run on every target of [`tls_urls`] writes to: PostgreSQL's and MariaDB's
/// `loadrig_kv`, Redis's database 7, nginx's default WebDAV collection, slapd's default subtree.
const KV_ON_EVERY_TARGET: [Shared; 5] = [
    Shared::Postgres,
    Shared::Mariadb,
    Shared::Redis(7),
    Shared::Dav,
    Shared::SlapdAlone,
];

/// The secrets the output must never show.
fn secrets() -> Vec<String> {
    [
        "LOADRIG_PG_PASSWORD",
        "LOADRIG_MYSQL_PASSWORD",
        "LOADRIG_REDIS_PASSWORD",
        "LOADRIG_LDAP_PASSWORD",
    ]
    .iter()
    .filter_map(|v| std::env::var(v).ok())
    .filter(|p| p.len() >= 8)
    .collect()
}

fn assert_no_secret(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(&s), "{what}: a password leaked:\n{text}");
    }
}

#[test]
fn kv_loads_and_reads_back_over_tls_on_every_target() {
    let Some(urls) = tls_urls() else { return };
    let _servers = hold(&KV_ON_EVERY_TARGET);
    for (name, url) in urls {
        let d = Dir::new();
        d.write("w.toml", &load_then_read(&format!("tls_{name}_")));
        let ops = RECORDS.to_string();
        let (stdout, stderr) = d.code(
            0,
            &[
                "run",
                "w.toml",
                "--target",
                &url,
                "--clients",
                "1",
                "--ops",
                &ops,
                "-o",
                "r.json",
            ],
        );
        assert_no_secret(name, &(stdout + &stderr));
        assert_no_secret(name, &std::fs::read_to_string(d.join("r.json")).unwrap());
        let r = d.result("r.json");
        assert_eq!(r.target.tls.as_deref(), Some("verified"), "{name}");
        let get = &r.operations[0];
        // Every key loaded over TLS was found and read back over TLS.
        assert_eq!(
            (get.ok, get.errors, get.rows),
            (RECORDS, 0, RECORDS),
            "{name}: {:?}",
            get.error_messages
        );
        assert_eq!(
            r.data_load.as_ref().map(|l| l.records),
            Some(RECORDS),
            "{name}"
        );
    }
}

#[test]
fn a_certificate_from_another_ca_is_refused_as_a_connect_error() {
    let (Some(urls), Some(ca), Some(wrong)) = (
        tls_urls(),
        server_url("LOADRIG_CA_FILE"),
        server_url("LOADRIG_WRONG_CA_FILE"),
    ) else {
        return;
    };
    // The modes that do not name verification verify too (loadrig's default), so the
    // wrong CA fails them the same way.
    let mut urls = urls;
    let weaker: Vec<(&str, String)> = urls
        .iter()
        .flat_map(|(name, url)| {
            [
                ("sslmode=verify-full", "sslmode=require"),
                ("sslmode=verify-full", "sslmode=verify-ca"),
                ("ssl-mode=VERIFY_IDENTITY", "ssl-mode=REQUIRED"),
                ("ssl-mode=VERIFY_IDENTITY", "ssl-mode=VERIFY_CA"),
            ]
            .into_iter()
            .filter(|(strict, _)| url.contains(strict))
            .map(|(strict, mode)| (*name, url.replace(strict, mode)))
            .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        weaker.len(),
        6,
        "postgres, mysql and mysql_async in two modes each"
    );
    urls.extend(weaker);
    for (name, url) in urls {
        let url = url.replace(&ca, &wrong);
        let d = Dir::new();
        d.write("w.toml", &load_then_read("tls_wrong_"));
        let (_, stderr) = d.code(
            2,
            &[
                "run", "w.toml", "--target", &url, "--ops", "5", "-o", "r.json",
            ],
        );
        assert!(
            stderr.contains("(connect)")
                && stderr.contains("TLS certificate verification failed")
                && stderr.contains(&format!("not signed by the CA in ca={wrong}")),
            "{name}: {stderr}"
        );
        assert_no_secret(name, &stderr);
        assert!(!d.join("r.json").exists(), "{name}: a result was written");
    }
}

#[test]
fn insecure_connects_without_the_ca_and_the_result_says_so() {
    let Some(urls) = tls_urls() else { return };
    let ca = server_url("LOADRIG_CA_FILE").unwrap();
    let _servers = hold(&KV_ON_EVERY_TARGET);
    for (name, url) in urls {
        let url = url.replace(&format!("ca={ca}"), "insecure=true");
        let d = Dir::new();
        d.write("w.toml", &load_then_read(&format!("tls_insecure_{name}_")));
        d.code(
            0,
            &[
                "run", "w.toml", "--target", &url, "--ops", "10", "-o", "r.json",
            ],
        );
        let r = d.result("r.json");
        assert_eq!(r.target.tls.as_deref(), Some("insecure"), "{name}");
        assert_eq!(r.operations[0].ok, 10, "{name}");
    }
}

/// A connect workload's 30 connections (2 clients, `--ops 30`) on `url`: the phases the
/// result gives, after checking every connection has its TCP phase, and that the console
/// and the report show the phases the result has.
fn phases_of_connect_run(name: &str, url: &str) -> loadrig::result::ConnectPhasesRecord {
    let d = Dir::new();
    d.write("c.toml", CONNECT);
    let (stdout, _) = d.code(
        0,
        &[
            "run",
            "c.toml",
            "--target",
            url,
            "--clients",
            "2",
            "--ops",
            "30",
            "-o",
            "r.json",
            "--report",
            "r.html",
        ],
    );
    let r = d.result("r.json");
    assert_eq!(r.operations[0].ok, 30, "{name}");
    let phases = r.connect.and_then(|c| c.phases).expect("connect phases");
    // The 30 operations' connections, and the clients' own (at least one each).
    assert!(phases.tcp.count >= 32, "{name}: {phases:?}");
    assert!(phases.tcp.min_ns > 0, "{name}: {phases:?}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("connection phases: tcp p50 "))
        .unwrap_or_else(|| panic!("{name}: no phases line in\n{stdout}"));
    let count = format!(" over {} connections", phases.tcp.count);
    assert!(line.ends_with(&count), "{name}: {line}");
    assert_eq!(line.contains(", tls p50 "), phases.tls.is_some(), "{line}");
    assert_eq!(
        line.contains(", auth p50 "),
        phases.auth.is_some(),
        "{line}"
    );
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("<h3>Connections</h3>"), "{name}");
    assert!(html.contains("<th>connection phases</th>"), "{name}");
    phases
}

/// Whether `phases` has an authentication phase for every connection, and it took time.
fn authenticated_each(phases: &loadrig::result::ConnectPhasesRecord) -> bool {
    phases
        .auth
        .as_ref()
        .is_some_and(|a| a.count == phases.tcp.count && a.min_ns > 0)
}

#[test]
fn a_connect_workload_over_tls_reports_each_phase() {
    let (Some(pg), Some(redis), Some(https), Some(urls)) = (
        server_url("LOADRIG_PG_TLS_URL"),
        server_url("LOADRIG_REDIS_TLS_URL"),
        server_url("LOADRIG_HTTPS_URL"),
        tls_urls(),
    ) else {
        return;
    };
    let url_of = |n: &str| urls.iter().find(|(name, _)| *name == n).unwrap().1.clone();
    for (name, url, auth) in [
        ("postgres", pg, true),
        ("redis", redis, true),
        ("https", https, false),
        ("mysql", url_of("mysql"), true),
        ("ldaps", url_of("ldaps"), true),
        ("starttls", url_of("starttls"), true),
    ] {
        let phases = phases_of_connect_run(name, &url);
        let tls = phases.tls.clone().expect("a TLS phase");
        assert_eq!(tls.count, phases.tcp.count, "{name}");
        assert!(tls.min_ns > 0, "{name}");
        assert_eq!(authenticated_each(&phases), auth, "{name}: {phases:?}");
        assert!(auth || phases.auth.is_none(), "{name}: {phases:?}");
    }
}

#[test]
fn plain_connections_have_no_tls_phase_and_say_off() {
    let (Some(redis), Some(mysql), Some(ldap)) = (
        server_url("LOADRIG_REDIS_URL"),
        server_url("LOADRIG_MYSQL_URL"),
        server_url("LOADRIG_LDAP_URL"),
    ) else {
        return;
    };
    let d = Dir::new();
    d.write("c.toml", CONNECT);
    d.code(
        0,
        &[
            "run", "c.toml", "--target", &redis, "--ops", "5", "-o", "r.json",
        ],
    );
    let r = d.result("r.json");
    assert_eq!(r.target.tls.as_deref(), Some("off"));
    let phases = r.connect.and_then(|c| c.phases).expect("connect phases");
    assert!(phases.tls.is_none() && phases.auth.is_some(), "{phases:?}");
    // MySQL's own client and LDAP (bound) time TCP and the login apart too.
    let ldap = format!("{ldap}?{}", &ldap_options()[1..]);
    for (name, url) in [("mysql", mysql), ("ldap", ldap)] {
        let phases = phases_of_connect_run(name, &url);
        assert!(phases.tls.is_none(), "{name}: {phases:?}");
        assert!(authenticated_each(&phases), "{name}: {phases:?}");
    }
}

#[test]
fn tls_options_that_cannot_apply_are_input_errors() {
    let d = Dir::new();
    d.write("c.toml", CONNECT);
    for (url, says) in [
        (
            "redis://127.0.0.1:1/0?insecure=true",
            "apply to TLS connections",
        ),
        (
            "rediss://127.0.0.1:1/0?ca=/nonexistent/ca.pem",
            "ca=/nonexistent/ca.pem: cannot read it",
        ),
        (
            "rediss://127.0.0.1:1/0?ca=/x&insecure=true",
            "drop one of them",
        ),
        (
            "postgres://u:pw@127.0.0.1:1/db?sslmode=prefer",
            "sslmode=prefer",
        ),
        (
            "mysql://u:pw@127.0.0.1:1/db?ssl-mode=PREFERRED",
            "ssl-mode=PREFERRED",
        ),
        (
            "ldaps://127.0.0.1:1?starttls=true",
            "starttls=true is for ldap://",
        ),
    ] {
        let (_, stderr) = d.code(
            2,
            &[
                "run", "c.toml", "--target", url, "--ops", "1", "-o", "r.json",
            ],
        );
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(!d.join("r.json").exists());
    }
    // A file that holds no certificate.
    d.write("empty.pem", "not a certificate\n");
    let url = format!("https://127.0.0.1:1?ca={}", d.join("empty.pem").display());
    let (_, stderr) = d.code(2, &["run", "c.toml", "--target", &url, "--ops", "1"]);
    assert!(stderr.contains("holds no certificate"), "{stderr}");
}
