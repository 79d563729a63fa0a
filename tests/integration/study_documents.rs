//! `loadrig study documents` (seed 001) end to end: --quick (2 clients × 5 documents × 64 KiB)
//! on every backend the machine offers (PostgreSQL and nginx WebDAV from scripts/services.sh,
//! required under LOADRIG_REQUIRE_ALL=1), every attachment read back and checked, cells
//! recomputed from the run files they name, the seed's quantised delay on a real mechanism
//! (Nagle's algorithm meeting nginx's delayed ACK: a latency mode at the 40 ms quantum, gone
//! with TCP_NODELAY), the store's bytes read and written per operation on every row (an
//! attachment on disk is written, one on tmpfs is not), an attachment changed between the
//! phases read back as a `protocol` error, the report in headless Chromium, and bad input
//! exiting 2 before anything runs.

use crate::common::browser;
use crate::common::study;

use crate::common::locks::{hold, Shared};
use crate::common::{server_url, Dir};
use browser::{check_page, Browser};
use loadrig::study::BackendRow;
use study::{record, row};

/// Row name and the variable its URL comes from (none: embedded or simulated).
const ROWS: [(&str, Option<&str>); 7] = [
    ("no network (files on tmpfs)", None),
    ("files", None),
    ("SQLite", None),
    ("PostgreSQL", Some("LOADRIG_PG_URL")),
    ("HTTP WebDAV", Some("LOADRIG_HTTP_URL")),
    (
        "Nagle + delayed ACK (without fix)",
        Some("LOADRIG_HTTP_URL"),
    ),
    ("TCP_NODELAY (fix)", Some("LOADRIG_HTTP_URL")),
];
const NAGLE: usize = 5;
const NODELAY: usize = 6;

/// Both phases ran `ops` operations without an error, each touching `rows` rows (one
/// document), and every cell holds what the run file it names says:
/// elapsed seconds, then mean, p50 and p99 in ms.
fn check_row(d: &Dir, dir: &str, r: &BackendRow, ops: u64, rows: u64) {
    let name = &r.backend.name;
    assert_eq!(
        r.backend.state.words(),
        "ran",
        "{name}: {:?}",
        r.backend.note
    );
    let phases = ["create", "search"];
    assert_eq!(r.backend.runs.len(), 2, "{name}");
    for (k, phase) in phases.iter().enumerate() {
        let run = &r.backend.runs[k];
        assert!(run.ends_with(&format!("-{phase}.json")), "{run}");
        let file = loadrig::result::read(&d.join(dir).join(run)).expect("run file");
        let op = &file.operations[0];
        assert_eq!(op.name, *phase);
        assert_eq!(
            (op.ok, op.errors),
            (ops, 0),
            "{name} {phase}: {:?}",
            op.error_messages
        );
        assert_eq!(op.rows, rows, "{name} {phase}: one document each");
        let cells = &r.cells[4 * k..4 * k + 4];
        assert!(cells.iter().all(|c| c.run.as_deref() == Some(run.as_str())));
        // Equal but for the last bit the JSON text may lose.
        let same = |cell: Option<f64>, want: f64| {
            let got = cell.expect("a value");
            assert!(
                (got - want).abs() <= 1e-12 * want.abs(),
                "{name} {phase}: {got} {want}"
            );
        };
        same(cells[0].value, file.elapsed_s);
        same(cells[1].value, op.latency.mean_ns / 1e6);
        same(cells[2].value, op.latency.p50_ns as f64 / 1e6);
        same(cells[3].value, op.latency.p99_ns as f64 / 1e6);
    }
}

/// The first I/O column (create rd KB); per phase: KiB read, KiB written, I/O wait ms.
const IO: usize = 9;

/// Every row has its store's bytes read and written per operation in both phases; a
/// server's are its processes' figures in the run file divided by the operations.
fn check_io(d: &Dir, dir: &str, r: &BackendRow, server: bool) {
    let name = &r.backend.name;
    for k in 0..2 {
        let (read, written) = (&r.cells[IO + 3 * k], &r.cells[IO + 3 * k + 1]);
        assert!(
            read.value.is_some_and(|v| v >= 0.0) && written.value.is_some_and(|v| v >= 0.0),
            "{name}: {:?} {:?}",
            read.note,
            written.note
        );
        let run = &r.backend.runs[k];
        assert_eq!(written.run.as_ref(), Some(run), "{name}");
        if server {
            let file = loadrig::result::read(&d.join(dir).join(run)).unwrap();
            let p = file.server.unwrap().measured.figures.processes.unwrap();
            let per_op = p.write_bytes.unwrap() as f64 / 1024.0 / file.operations[0].ok as f64;
            assert!(
                (written.value.unwrap() - per_op).abs() <= 1e-9 * per_op.max(1.0),
                "{name}"
            );
        }
    }
}

/// Whether `path` is on a tmpfs (whose writes reach no disk).
fn on_tmpfs(path: &std::path::Path) -> bool {
    let out = std::process::Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(path)
        .output()
        .expect("stat");
    String::from_utf8_lossy(&out.stdout).trim() == "tmpfs"
}

#[test]
fn documents_quick_reads_every_attachment_back_on_every_backend() {
    let present: Vec<bool> = ROWS
        .iter()
        .map(|(_, var)| var.is_none_or(|v| server_url(v).is_some()))
        .collect();
    // The Nagle rows are judged by their latencies: nobody else's load beside them.
    let _servers = hold(&[Shared::Postgres, Shared::Dav, Shared::Cpu]);
    let d = Dir::new();
    let out = d.ok(&["study", "documents", "--quick", "-o", "ds"]);
    for (name, _) in ROWS {
        assert!(out.contains(name), "{name} in the printed table:\n{out}");
    }
    let s = record(&d, "ds");
    assert_eq!(
        (
            s.sizes["threads"],
            s.sizes["documents"],
            s.sizes["attachment_bytes"]
        ),
        (2, 5, 65536)
    );
    for (i, ((name, _), present)) in ROWS.iter().zip(&present).enumerate() {
        let r = row(&s, name);
        if !present {
            assert_eq!(r.backend.note.as_deref(), Some("not run: no URL"));
            continue;
        }
        // The reproduction rows take 100 operations a phase, so the modes have samples.
        if i >= NAGLE {
            check_row(&d, "ds", r, 100, 100);
        } else {
            check_row(&d, "ds", r, 10, 10);
        }
        check_io(&d, "ds", r, i >= 3);
    }
    // Every attachment of the files row went to a disk, unless the folder is on tmpfs; the
    // tmpfs row's went to none (what it wrote is loadrig's own interval stream).
    let written = |name: &str| row(&s, name).cells[IO + 1].value.unwrap();
    if !on_tmpfs(&d.join("ds")) {
        assert!(written("files") >= 64.0, "{} KiB", written("files"));
    }
    assert!(written(ROWS[0].0) < 32.0, "{} KiB", written(ROWS[0].0));
    // What the files and SQLite rows hold: 10 documents, each with its 64 KiB attachment.
    let kv = d.join("ds/fs/loadrig_kv");
    let atts: Vec<u64> = std::fs::read_dir(&kv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "att"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .collect();
    assert_eq!(atts, vec![65536; 10]);
    let db = rusqlite::Connection::open(d.join("ds/sqlite/documents.db")).unwrap();
    let (docs, bytes): (u64, u64) = db
        .query_row(
            "SELECT (SELECT count(*) FROM loadrig_kv), (SELECT sum(length(chunk)) FROM loadrig_attachment)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((docs, bytes), (10, 10 * 65536));
    let local = row(&s, ROWS[0].0).backend.target.clone().unwrap();
    let local = local.trim_start_matches("fs://");
    assert!(
        !std::path::Path::new(local).exists(),
        "the tmpfs files are given back: {local}"
    );

    // The seed's finding on a real mechanism: the attachment's body, written after its
    // head without TCP_NODELAY, waits for nginx's delayed ACK (40 ms at least on Linux;
    // the first requests of a connection may be quick-ACKed), so the create phase has a
    // latency mode at that quantum; with TCP_NODELAY no request waits for it.
    if present[NAGLE] {
        let modes_of = |name: &str| {
            let r = row(&s, name);
            let file = loadrig::result::read(&d.join("ds").join(&r.backend.runs[0])).unwrap();
            (r.cells[8].value, file)
        };
        let (slowest, nagle) = modes_of(ROWS[NAGLE].0);
        let modes = nagle.latency_modes.expect("modes");
        let quantum = |at_ns: f64| (38e6..90e6).contains(&at_ns);
        assert!(modes.modes.iter().any(|m| quantum(m.at_ns)), "{modes:?}");
        let last = modes.modes.last().unwrap().at_ns / 1e6;
        assert!(
            (slowest.unwrap() - last).abs() < 1e-9 * last,
            "{slowest:?} {last}"
        );
        assert!(
            nagle.operations[0].latency.p50_ns >= 38_000_000,
            "most requests stall"
        );
        let (_, fixed) = modes_of(ROWS[NODELAY].0);
        let modes = fixed.latency_modes.expect("modes");
        assert!(!modes.modes.iter().any(|m| quantum(m.at_ns)), "{modes:?}");
        // A median a quarter of the quantum: the median request did not stall (under a
        // millisecond on an idle machine, docs/studies/documents.md).
        let p50 = fixed.operations[0].latency.p50_ns;
        assert!(p50 < 10_000_000, "p50 {p50} ns");
    }

    let page = d.join("ds/report.html");
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &page, 0, 1);
    for (name, _) in ROWS {
        assert!(text.contains(name), "{name} in the report");
    }
}

#[test]
fn an_attachment_changed_between_the_phases_is_a_protocol_error() {
    let d = Dir::new();
    d.ok(&["study", "documents", "--quick", "--only", "fs", "-o", "ds"]);
    let kv = d.join("ds/fs/loadrig_kv");
    let mut atts: Vec<_> = std::fs::read_dir(&kv)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "att"))
        .collect();
    atts.sort();
    // One attachment with a byte changed, one cut short.
    let mut bytes = std::fs::read(&atts[0]).unwrap();
    bytes[1234] ^= 0xff;
    std::fs::write(&atts[0], &bytes).unwrap();
    let other = std::fs::read(&atts[1]).unwrap();
    std::fs::write(&atts[1], &other[..1000]).unwrap();
    let target = format!("fs://{}", d.join("ds/fs").display());
    d.ok(&[
        "run",
        "ds/documents.toml",
        "--target",
        &target,
        "--op",
        "search",
        "--clients",
        "2",
        "--ops",
        "10",
        "--warmup",
        "0s",
        "--set",
        "attachment_size=65536",
        "-o",
        "search.json",
    ]);
    let r = d.result("search.json");
    let op = &r.operations[0];
    assert_eq!((op.ok, op.errors), (8, 2), "{:?}", op.error_messages);
    assert_eq!(
        op.errors_by_class
            .get(&loadrig::vocab::ErrorClass::Protocol),
        Some(&2)
    );
    let messages: Vec<&str> = op
        .error_messages
        .iter()
        .map(|m| m.message.as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("differs from what was written at byte 1234")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("1000 bytes read back of the 65536")),
        "{messages:?}"
    );
}

#[test]
fn a_named_file_is_every_documents_attachment() {
    let d = Dir::new();
    let file: Vec<u8> = (0..150_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.join("big.bin"), &file).unwrap();
    let out = d.ok(&[
        "study",
        "documents",
        "--quick",
        "--only",
        "fs,sqlite",
        "--set",
        "attachment=big.bin",
        "-o",
        "ds",
    ]);
    assert!(out.contains("big.bin (150000 bytes)"), "{out}");
    let s = record(&d, "ds");
    for name in ["files", "SQLite"] {
        check_row(&d, "ds", row(&s, name), 10, 10);
    }
    for e in std::fs::read_dir(d.join("ds/fs/loadrig_kv")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "att") {
            assert!(std::fs::read(&p).unwrap() == file, "{}", p.display());
        }
    }
}

#[test]
fn bad_input_exits_2_before_anything_runs() {
    let d = Dir::new();
    std::fs::create_dir(d.join("folder")).unwrap();
    let locked = d.write("locked.bin", "x");
    let mut cases = vec![
        (
            vec!["--set", "attachment=missing.bin"],
            "attachment missing.bin",
        ),
        (vec!["--set", "attachment=folder"], "not a regular file"),
        (vec!["--set", "attachment_size=0"], "attachment_size=0"),
        (vec!["--set", "attachment_size=-5"], "attachment_size=-5"),
        (vec!["--set", "threads=0"], "threads=0"),
        (vec!["--set", "documents=many"], "documents=many"),
        (vec!["--set", "records=10"], "no such setting"),
        (vec!["--only", "tape"], "--only tape"),
        (
            vec!["--target", "redis://127.0.0.1:1"],
            "cannot use redis://",
        ),
    ];
    // Root reads any file: the unreadable case only where permissions hold.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&locked).is_err() {
        cases.push((
            vec!["--set", "attachment=locked.bin"],
            "attachment locked.bin",
        ));
    }
    for (args, says) in cases {
        let mut full = vec!["study", "documents", "--quick", "-o", "x"];
        full.extend(args);
        let (_, err) = d.code(2, &full);
        assert!(err.contains(says), "{full:?}: {err}");
        assert!(
            !d.join("x").exists(),
            "{full:?}: nothing is written for bad input"
        );
    }
}

#[test]
fn an_attachment_changed_on_the_webdav_server_is_a_protocol_error() {
    let Some(url) = server_url("LOADRIG_HTTP_URL") else {
        return;
    };
    let _servers = hold(&[Shared::Dav]);
    let d = Dir::new();
    d.ok(&[
        "study",
        "documents",
        "--quick",
        "--only",
        "http",
        "-o",
        "ds",
    ]);
    // doc:0's attachment, replaced by as many other bytes.
    let att = format!("{url}/dav/loadrig-documents/doc~3a0.att");
    ureq::put(&att).send(&vec![7u8; 65536][..]).expect("PUT");
    let target = format!("{url}?kv_path=/dav/loadrig-documents");
    d.ok(&[
        "run",
        "ds/documents.toml",
        "--target",
        &target,
        "--op",
        "search",
        "--clients",
        "2",
        "--ops",
        "10",
        "--warmup",
        "0s",
        "--set",
        "attachment_size=65536",
        "-o",
        "search.json",
    ]);
    let op = &d.result("search.json").operations[0];
    assert_eq!((op.ok, op.errors), (9, 1), "{:?}", op.error_messages);
    assert_eq!(
        op.errors_by_class
            .get(&loadrig::vocab::ErrorClass::Protocol),
        Some(&1)
    );
    assert!(op.error_messages[0]
        .message
        .contains("attachment of doc:0: differs"));
}
