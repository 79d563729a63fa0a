//! The ldap:// target against a real slapd (scripts/services.sh): kv entries, native
//! search/add/modify/delete with exact counts, binds, errors, cleanup of ou=loadrig only.
//! Each test works under its own base `ou=NAME,BASE`, which it creates and removes.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use crate::common::locks::{hold, Held, Shared};
use crate::common::{server_url, Dir};
use base64::Engine;
use loadrig::vocab::ErrorClass;

struct Server {
    url: String,
    bind_dn: String,
    password: String,
    base: String,
    _turn: Held,
}

impl Server {
    /// The server, with a fresh base `ou=NAME,BASE` for this test.
    fn get(name: &str) -> Option<Server> {
        let url = server_url("LOADRIG_LDAP_URL")?;
        let var = |v: &str| server_url(v).unwrap_or_default();
        let root = var("LOADRIG_LDAP_BASE");
        // The transaction test has slapd to itself (see `Shared::SlapdAlone`); the other
        // tests, each in a base of its own, run side by side.
        let _turn = hold(&[if name == "txn" {
            Shared::SlapdAlone
        } else {
            Shared::Slapd
        }]);
        let s = Server {
            url,
            bind_dn: var("LOADRIG_LDAP_BIND_DN"),
            password: var("LOADRIG_LDAP_PASSWORD"),
            base: format!("ou={name},{root}"),
            _turn,
        };
        s.delete_tree(&s.base);
        s.add(&format!(
            "dn: {}\nobjectClass: organizationalUnit\nou: {name}\n",
            s.base
        ));
        Some(s)
    }

    /// The target URL; the password is taken from the environment by loadrig itself.
    fn target(&self) -> String {
        format!(
            "{}?bind_dn={}&password=${{LOADRIG_LDAP_PASSWORD}}&base={}",
            self.url, self.bind_dn, self.base
        )
    }

    /// Run an OpenLDAP client tool as the admin; `input` goes to its standard input.
    fn tool(&self, tool: &str, args: &[&str], input: Option<&str>) -> String {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = Command::new(tool)
            .args([
                "-x",
                "-H",
                &self.url,
                "-D",
                &self.bind_dn,
                "-w",
                &self.password,
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ldap tool");
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.unwrap_or("").as_bytes()).unwrap();
        }
        let out = child.wait_with_output().expect("ldap tool");
        if input.is_some() {
            assert!(
                out.status.success(),
                "{tool}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every DN at or under `base`.
    fn dns(&self, base: &str) -> Vec<String> {
        self.tool(
            "ldapsearch",
            &["-LLL", "-o", "ldif-wrap=no", "-b", base, "1.1"],
            None,
        )
        .lines()
        .filter_map(|l| l.strip_prefix("dn: ").map(str::to_string))
        .collect()
    }

    fn add(&self, ldif: &str) {
        self.tool("ldapadd", &[], Some(ldif));
    }

    fn delete_tree(&self, dn: &str) {
        self.tool("ldapdelete", &["-r", dn], None);
    }

    /// Entries with a cn under `base` (one level): cn → the sizes of the attribute's values.
    fn entries(&self, base: &str, attr: &str) -> BTreeMap<String, Vec<usize>> {
        let out = self.tool(
            "ldapsearch",
            &[
                "-LLL",
                "-o",
                "ldif-wrap=no",
                "-b",
                base,
                "-s",
                "one",
                "(objectClass=*)",
                "cn",
                attr,
            ],
            None,
        );
        let mut entries = BTreeMap::new();
        for block in out.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let mut cn = String::new();
            let mut sizes = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("cn: ") {
                    cn = v.to_string();
                } else if let Some(v) = line.strip_prefix(&format!("{attr}:: ")) {
                    sizes.push(
                        base64::engine::general_purpose::STANDARD
                            .decode(v)
                            .unwrap()
                            .len(),
                    );
                } else if let Some(v) = line.strip_prefix(&format!("{attr}: ")) {
                    sizes.push(v.len());
                }
            }
            if !cn.is_empty() {
                entries.insert(cn, sizes);
            }
        }
        entries
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.delete_tree(&self.base);
    }
}

impl Server {
    /// `loadrig run w.toml --op OP --ops N` on this test's subtree (`{dir}` in the
    /// workload), which must succeed without showing the password; its result.
    fn run_op(&self, d: &Dir, op: &str, ops: &str, extra: &[&str]) -> loadrig::result::RunResult {
        let dir = format!("dir={}", self.base);
        let target = self.target();
        let mut args = vec![
            "run", "w.toml", "--target", &target, "--set", &dir, "--op", op,
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--ops", ops, "-o", "r.json"]);
        let out = d.loadrig(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        no_secret(self, d, &out, Some("r.json"));
        d.result("r.json")
    }
}

fn no_secret(s: &Server, d: &Dir, out: &std::process::Output, result: Option<&str>) {
    assert!(s.password.len() >= 8);
    for text in [&out.stdout, &out.stderr] {
        assert!(
            !String::from_utf8_lossy(text).contains(&s.password),
            "password leaked"
        );
    }
    if let Some(name) = result {
        let file = std::fs::read_to_string(d.join(name)).unwrap();
        assert!(!file.contains(&s.password), "password in the result file");
    }
}

#[test]
fn load_and_mixed_kv_leave_exactly_the_expected_entries() {
    let Some(s) = Server::get("kv") else { return };
    let d = Dir::new();
    d.write("w.toml", &common::mixed_kv(400, 64, true));
    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &s.target(),
        "--clients",
        "2",
        "--ops",
        "200",
        "-o",
        "r.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    no_secret(&s, &d, &out, Some("r.json"));
    let r = d.result("r.json");
    let op = |n: &str| r.operations.iter().find(|o| o.name == n).unwrap();
    assert_eq!((r.total.ok, r.total.errors), (200, 0));
    let (gets, puts, updates, deletes) = (op("get"), op("put"), op("update"), op("delete"));
    assert_eq!(gets.rows, gets.ok);
    assert_eq!(op("missing").rows, 0, "noSuchObject is a get without rows");
    assert_eq!(puts.rows, puts.ok);
    assert_eq!(updates.rows, updates.ok);
    assert_eq!(deletes.rows, deletes.ok);

    let entries = s.entries(&format!("ou=loadrig,{}", s.base), "audio");
    let k: BTreeMap<u64, usize> = entries
        .iter()
        .filter_map(|(cn, v)| Some((cn.strip_prefix('k')?.parse().ok()?, v[0])))
        .collect();
    assert!(
        entries.values().all(|v| v.len() == 1),
        "one value per entry"
    );
    let n: Vec<usize> = entries
        .iter()
        .filter(|(cn, _)| cn.starts_with('n'))
        .map(|(_, v)| v[0])
        .collect();
    assert_eq!(n.len() as u64, puts.ok);
    assert!(!n.is_empty(), "some puts ran");
    assert!(n.iter().all(|l| *l == 50));
    assert_eq!(k.len() as u64, 400 - deletes.ok);
    assert!((0..200).filter(|i| !k.contains_key(i)).count() as u64 == deletes.ok);
    let updated = k.iter().filter(|(i, l)| **l == 70 && **i >= 200).count();
    assert_eq!(updated as u64, updates.ok);
    assert_eq!(
        k.values().filter(|l| **l == 100).count() as u64,
        400 - deletes.ok - updates.ok
    );
    assert_eq!(entries.len(), k.len() + n.len());
    assert!(r
        .target
        .server_version
        .as_deref()
        .is_some_and(|v| v.starts_with("OpenLDAP")));
}

#[test]
fn native_add_search_modify_delete_count_exactly() {
    let Some(s) = Server::get("native") else {
        return;
    };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "native"
[params]
dir = "-"
[[op]]
name = "add"
ldap.add = { dn = "cn=u{seq},{dir}", attrs = { objectClass = "inetOrgPerson", cn = "u{seq}", sn = "before", userPassword = "pw-{seq}" } }
[[op]]
name = "search"
ldap.search = { base = "{dir}", scope = "one", filter = "(sn=before)", attrs = ["cn"] }
[[op]]
name = "modify"
ldap.modify = { dn = "cn=u{seq},{dir}", replace = { sn = ["after", "again"] } }
[[op]]
name = "bind"
ldap.bind = { dn = "cn=u{seq},{dir}", password = "pw-{seq}" }
[[op]]
name = "delete"
ldap.delete = { dn = "cn=u{seq},{dir}" }
"#,
    );
    let base = s.base.clone();
    let run = |op: &str, ops: &str| s.run_op(&d, op, ops, &["--clients", "2"]);
    let r = run("add", "50");
    assert_eq!((r.total.ok, r.total.errors, r.total.rows), (50, 0, 50));
    assert_eq!(s.entries(&base, "sn").len(), 50);
    let r = run("search", "10");
    assert_eq!(
        (r.total.ok, r.total.rows),
        (10, 500),
        "each search returns the 50 entries"
    );
    let r = run("bind", "50");
    assert_eq!(
        (r.total.ok, r.total.errors),
        (50, 0),
        "each new entry binds with its password"
    );
    let r = run("modify", "50");
    assert_eq!((r.total.ok, r.total.rows), (50, 50));
    let entries = s.entries(&base, "sn");
    assert_eq!(entries.len(), 50);
    assert!(entries.values().all(|v| v.len() == 2), "{entries:?}");
    let r = run("search", "3");
    assert_eq!(r.total.rows, 0, "no entry has sn=before any more");
    // Adding them again: entryAlreadyExists is a constraint error.
    let r = run("add", "5");
    assert_eq!(
        r.total.errors_by_class.get(&ErrorClass::Constraint),
        Some(&5)
    );
    let r = run("delete", "60");
    assert_eq!(
        (r.total.ok, r.total.rows),
        (60, 50),
        "ten deletes found nothing"
    );
    assert!(s.entries(&base, "sn").is_empty());
}

#[test]
fn connect_authenticate_and_per_op_connections_count() {
    let Some(s) = Server::get("handshakes") else {
        return;
    };
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "handshakes"
[[op]]
name = "connect"
connect = {}
[[op]]
name = "auth"
authenticate = {}
[[op]]
name = "put"
kv.put = { key = "p{seq}", value = "{bytes 10}" }
"#,
    );
    let target = s.target();
    for (op, extra) in [("connect", None), ("auth", None), ("put", Some("per-op"))] {
        let mut args = vec![
            "run",
            "w.toml",
            "--target",
            &target,
            "--op",
            op,
            "--clients",
            "2",
            "--ops",
            "100",
            "-o",
            "r.json",
        ];
        if let Some(c) = extra {
            args.extend(["--connection", c]);
        }
        let out = d.loadrig(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = d.result("r.json");
        assert_eq!((r.total.ok, r.total.errors), (100, 0), "{op}");
    }
    assert_eq!(
        s.entries(&format!("ou=loadrig,{}", s.base), "audio").len(),
        100
    );
}

#[test]
fn wrong_password_and_closed_port_fail_fast_without_secrets() {
    let Some(s) = Server::get("failures") else {
        return;
    };
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    let wrong = format!(
        "{}?bind_dn={}&password=not-the-password-x&base={}",
        s.url, s.bind_dn, s.base
    );
    let out = d.loadrig(&["run", "w.toml", "--target", &wrong, "--ops", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("authentication"), "{err}");
    assert!(!err.contains("not-the-password-x"), "{err}");
    assert!(err.contains("password=***"), "{err}");

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let closed = format!(
        "ldap://127.0.0.1:{port}?bind_dn={}&password=${{LOADRIG_LDAP_PASSWORD}}",
        s.bind_dn
    );
    let out = d.loadrig(&["run", "w.toml", "--target", &closed, "--ops", "5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("ldap://127.0.0.1:{port}?")), "{err}");
    assert!(err.contains("connect"), "{err}");
    no_secret(&s, &d, &out, None);

    let out = d.loadrig(&["run", "w.toml", "--target", &format!("{}?basedn=x", s.url)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option 'basedn'"));
}

#[test]
fn cleanup_removes_only_the_loadrig_subtree() {
    let Some(s) = Server::get("cleanup") else {
        return;
    };
    s.add(&format!(
        "dn: cn=mine,{}\nobjectClass: device\ncn: mine\n",
        s.base
    ));
    let d = Dir::new();
    d.write("w.toml", common::PUT_ONLY);
    let out = d.loadrig(&[
        "run",
        "w.toml",
        "--target",
        &s.target(),
        "--ops",
        "120",
        "-o",
        "r.json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.entries(&format!("ou=loadrig,{}", s.base), "audio").len(),
        120
    );
    let out = d.loadrig(&["cleanup", "--target", &s.target()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    no_secret(&s, &d, &out, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("removed 121 loadrig object(s)"),
        "120 entries and the ou: {text}"
    );
    let left = s.dns(&s.base);
    assert_eq!(left, [s.base.clone(), format!("cn=mine,{}", s.base)]);
    let out = d.loadrig(&["cleanup", "--target", &s.target()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 0 loadrig object(s)"));
}

#[test]
fn a_transaction_searches_then_modifies_with_the_captured_dn_and_value() {
    let Some(s) = Server::get("txn") else {
        return;
    };
    let base = s.base.clone();
    let mut ldif = String::new();
    for n in 0..4 {
        ldif.push_str(&format!(
            "dn: cn=u{n},{base}\nobjectClass: inetOrgPerson\ncn: u{n}\nsn: before\nmail: u{n}@example.org\n\n"
        ));
    }
    s.add(&ldif);
    let d = Dir::new();
    d.write(
        "w.toml",
        r#"
name = "txn"
[params]
dir = "-"
[[op]]
name = "copy"
tx = [
  { ldap.search = { base = "{dir}", scope = "one", filter = "(cn=u{seq})", attrs = ["mail", "title"] }, capture = ["who", "mail", "title"] },
  { ldap.modify = { dn = "{who}", replace = { description = "was {mail}{title}" } } },
]
[[op]]
name = "all-or-nothing"
tx = [
  { ldap.modify = { dn = "cn=u0,{dir}", replace = { sn = "changed" } } },
  { ldap.add = { dn = "cn=u1,{dir}", attrs = { objectClass = "inetOrgPerson", cn = "u1", sn = "again" } } },
]
"#,
    );
    let run = |op: &str, ops: &str| s.run_op(&d, op, ops, &[]);
    let values = |attr: &str| -> Vec<String> {
        s.tool(
            "ldapsearch",
            &[
                "-LLL",
                "-o",
                "ldif-wrap=no",
                "-b",
                &base,
                "-s",
                "one",
                "(cn=u*)",
                attr,
            ],
            None,
        )
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{attr}: ")).map(str::to_string))
        .collect()
    };
    let r = run("copy", "4");
    assert_eq!(
        (r.total.ok, r.total.errors),
        (4, 0),
        "{:?}",
        r.total.error_messages
    );
    // A search (1 entry) and a modify (1 entry) per transaction.
    assert_eq!(r.total.rows, 8);
    let mut copied = values("description");
    copied.sort();
    assert_eq!(
        copied,
        (0..4)
            .map(|n| format!("was u{n}@example.org"))
            .collect::<Vec<_>>(),
        "each entry, found by the search, got its own mail; the absent title is empty"
    );
    // The add of an existing entry fails the transaction, so the modify before it is
    // never applied either.
    let r = run("all-or-nothing", "1");
    assert_eq!((r.total.ok, r.total.errors), (0, 1));
    assert_eq!(
        r.total.errors_by_class.get(&ErrorClass::Constraint),
        Some(&1),
        "{:?}",
        r.total.error_messages
    );
    assert_eq!(values("sn"), ["before"; 4]);
}
