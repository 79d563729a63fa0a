//! Study `documents` (seed 001, `nshload -t30 -w100 -a FILE`): T clients each create W
//! documents with an attachment, then a search phase finds every document and reads its
//! attachment back, checked byte for byte. Each phase is one closed-loop run (`--clients T
//! --ops T*W`, so client c takes the keys c, c+T, ... in both). Rows are backends: files on
//! tmpfs (the seed's "no network" reference), files on disk, SQLite, PostgreSQL, HTTP
//! PUT/GET on WebDAV; and the seed's finding (delays in fixed quanta, gone with a fix) on a
//! real mechanism: the same WebDAV server with a client that keeps Nagle's algorithm on
//! (`nodelay=off`) and writes an attachment's head and body separately, so the body waits
//! for the server's delayed ACK (40 ms at least on Linux), against the same client with
//! TCP_NODELAY (the fix). The latency-mode finder reports the quantum in the first. Domino's
//! own delay came from its thread pool's coordination; this one is a different mechanism.
//! Per phase, the store's I/O per document: bytes its processes read and wrote and their
//! block-I/O wait, from the run's observer of the server (PostgreSQL, nginx) or from
//! loadrig's own process for the stores inside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use super::{
    batch_failure, clean, BackendRow, BackendTable, Measure, MeasureCell, Request, RunOutcome,
    Slot, StudyRecord, StudyTable,
};
use crate::error::InputError;
use crate::observe::{ProcessFigures, ServerProcesses};
use crate::plan::RunPlan;
use crate::result::RunResult;
use crate::targets::attachment::Attachment;
use crate::targets::{with_target_type, Target};
use crate::vocab::ErrorClass;

const WORKLOAD: &str = include_str!("documents.toml");

/// The phases: the workload's operation and the name in the table.
const PHASES: [&str; 2] = ["create", "search"];

/// The columns: per phase elapsed seconds, mean, p50 and p99 response time; then the
/// slowest latency mode of the create phase; then per phase the store's I/O per operation.
/// A row whose documents hold more attachment bytes than this is emptied once measured (the
/// seed's sizes store 6 GB per backend); smaller ones stay for inspection.
const KEEP_AT_MOST: u64 = 1 << 30;

fn measures() -> Vec<Measure> {
    let mut m = Vec::new();
    for phase in PHASES {
        let what = if phase == "create" {
            "creating every document with its attachment"
        } else {
            "finding every document and reading its attachment back, checked byte for byte"
        };
        m.push(Measure {
            name: format!("{phase} s"),
            unit: "s".into(),
            what: format!("elapsed time of the {phase} phase: {what}"),
        });
        for (stat, words) in [
            ("mean", "mean"),
            ("p50", "median"),
            ("p99", "99th percentile"),
        ] {
            m.push(Measure {
                name: format!("{phase} {stat}"),
                unit: "ms".into(),
                what: format!("client response time per {phase} operation, {words}"),
            });
        }
    }
    m.push(Measure {
        name: "slowest mode".into(),
        unit: "ms".into(),
        what: "the slowest latency mode of the create phase (analysis::modes), every mode and the finder's verdict in its note".into(),
    });
    for phase in PHASES {
        for (name, unit, what) in [
            ("rd KB", "KB", "KiB the store's processes read from storage (read_bytes of /proc/PID/io: page-cache hits are not reads)"),
            ("wr KB", "KB", "KiB the store's processes wrote to storage (write_bytes of /proc/PID/io: pages dirtied for a disk; tmpfs has none)"),
            ("io ms", "ms", "time the store's threads waited for block I/O (delayacct_blkio_ticks of /proc/PID/task/TID/stat; empty while the kernel's delay accounting is off: sysctl kernel.task_delayacct=1)"),
        ] {
            // Whose processes, said once: under the first I/O column.
            let whose = if m.len() == IO {
                format!("; {IO_WHOSE}")
            } else {
                String::new()
            };
            m.push(Measure {
                name: format!("{phase} {name}"),
                unit: unit.into(),
                what: format!(
                    "{what}, per {phase} operation (one document with its attachment){whose}"
                ),
            });
        }
    }
    m
}

/// Whose I/O the I/O columns are, said once under the table.
const IO_WHOSE: &str = "the store's processes are the server's process tree (PostgreSQL's backends and background processes, nginx's master and workers) as the run's observer read it from /proc, or loadrig's own process for the stores inside it (tmpfs, files, SQLite; its own interval stream included)";
const MODES: usize = 8;
/// The first of each phase's three I/O columns: read, written, waited.
const IO: usize = 9;

/// The study's sizes.
struct Sizes {
    threads: u64,
    docs: u64,
    attachment: Attachment,
}

/// The seed's (30 × 100, 2 MB), `--quick`'s (2 × 5, 64 KiB), or `--set`.
fn sizes(req: &Request) -> Result<Sizes, InputError> {
    let (mut threads, mut docs, mut size) = if req.quick {
        (2, 5, 64 << 10)
    } else {
        (30, 100, 2 << 20)
    };
    let mut file = None;
    for (name, value) in &req.sets {
        let count = |max: u64| {
            value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| {
                    InputError::new(format!(
                        "--set {name}={value}: expected a whole number from 1 to {max}"
                    ))
                })
        };
        match name.as_str() {
            "threads" => threads = count(1000)?,
            "documents" => docs = count(1_000_000)?,
            "attachment_size" => size = count(64 << 20)?,
            "attachment" => file = Some(Attachment::file(PathBuf::from(value))?),
            other => return Err(InputError::new(format!(
                "--set {other}: the documents study has no such setting"
            ))
            .help(
                "it takes --set threads=T, documents=W, attachment=PATH or attachment_size=BYTES",
            )),
        }
    }
    Ok(Sizes {
        threads,
        docs,
        attachment: file.unwrap_or(Attachment::Generated { size }),
    })
}

/// The reproduction rows run at least this many operations per phase, so that the mode
/// finder (which gives no verdict under 50 samples) has twice that.
const REPRO_MIN_OPS: u64 = 100;
/// Their attachment: shorter than a segment, so Nagle holds it back whole.
const REPRO_ATTACHMENT: u64 = 512;

struct Row {
    name: &'static str,
    slug: &'static str,
    url: Result<String, String>,
    /// A reproduction row: a small attachment, at least REPRO_MIN_OPS operations.
    repro: bool,
}

/// Where the "no network" row keeps its files: tmpfs when the machine has one.
fn tmpfs_dir(dir: &Path) -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.join(format!("loadrig-documents-{}", std::process::id()))
    } else {
        dir.join("local")
    }
}

fn rows(req: &Request, dir: &Path) -> Result<Vec<Row>, InputError> {
    let servers = super::servers(
        &req.targets,
        &[
            Slot::postgres("postgres"),
            Slot::new("http", "LOADRIG_HTTP_URL", |u| u.scheme == "http"),
        ],
        "postgres, http",
    )?;
    let server = |kind: &str| {
        servers
            .get(kind)
            .cloned()
            .ok_or_else(|| "no URL".to_string())
    };
    let d = dir.display();
    let http = server("http").map(|u| {
        let sep = if u.contains('?') { '&' } else { '?' };
        format!("{u}{sep}kv_path=/dav/loadrig-documents")
    });
    let row = |name, slug, url, repro| Row {
        name,
        slug,
        url,
        repro,
    };
    let mut all = vec![
        row(
            "no network (files on tmpfs)",
            "local",
            Ok(format!("fs://{}", tmpfs_dir(dir).display())),
            false,
        ),
        row("files", "fs", Ok(format!("fs://{d}/fs")), false),
        row(
            "SQLite",
            "sqlite",
            Ok(format!("sqlite://{d}/sqlite/documents.db")),
            false,
        ),
        row("PostgreSQL", "pg", server("postgres"), false),
        row("HTTP WebDAV", "http", http.clone(), false),
        row(
            "Nagle + delayed ACK (without fix)",
            "nagle",
            http.clone().map(|u| format!("{u}&nodelay=off")),
            true,
        ),
        row("TCP_NODELAY (fix)", "nodelay", http.clone(), true),
    ];
    req.leave_out_unchosen(&mut all, |r| (r.name, r.slug), |r| &mut r.url)?;
    Ok(all)
}

/// The plans of one row's two phases, resolved before anything runs.
fn row_plans(
    row: &Row,
    url: &str,
    workload: &Path,
    dir: &Path,
    s: &Sizes,
) -> Result<Vec<RunPlan>, InputError> {
    let (threads, docs, attachment) = if row.repro {
        let docs = s.docs.max(REPRO_MIN_OPS.div_ceil(s.threads));
        (
            s.threads,
            docs,
            format!("attachment_size={REPRO_ATTACHMENT}"),
        )
    } else {
        let attachment = match &s.attachment {
            Attachment::File { path, .. } => format!("attachment={}", path.display()),
            Attachment::Generated { size } => format!("attachment_size={size}"),
        };
        (s.threads, s.docs, attachment)
    };
    PHASES
        .iter()
        .map(|phase| {
            let flags: Vec<String> = vec![
                "--op".into(),
                (*phase).into(),
                "--clients".into(),
                threads.to_string(),
                "--ops".into(),
                (threads * docs).to_string(),
                "--warmup".into(),
                "0s".into(),
                "--seed".into(),
                "1".into(),
                "--set".into(),
                attachment.clone(),
                "-o".into(),
                dir.join("runs/plan.json").to_string_lossy().into_owned(),
            ];
            let mut plan = super::plan_with_flags(workload, url, &flags)?;
            if !in_process(&plan) {
                // The server's I/O per attachment comes from the run's observer (HTTP is
                // not observed by default).
                let mut observed = flags;
                observed.extend(["--observe".into(), "on".into()]);
                plan = super::plan_with_flags(workload, url, &observed)?;
            }
            Ok(plan)
        })
        .collect()
}

pub fn run(req: &Request) -> Result<ExitCode> {
    let s = sizes(req)?;
    let dir = super::out_dir(req);
    let rows = rows(req, &dir)?;
    let plans = super::prepare(
        &dir,
        "documents.toml",
        WORKLOAD,
        &["fs", "sqlite"],
        |workload| {
            rows.iter()
                .map(|r| match &r.url {
                    Ok(url) => row_plans(r, url, workload, &dir, &s).map(Some),
                    Err(_) => Ok(None),
                })
                .collect::<Result<Vec<_>, InputError>>()
        },
    )?;
    let (mut record, attachment) = new_record(req, &s);
    println!(
        "loadrig {} study documents: {} clients × {} documents, attachment {attachment}, {} backends; into {}",
        env!("CARGO_PKG_VERSION"),
        s.threads,
        s.docs,
        rows.len(),
        dir.display()
    );
    let table = BackendTable {
        measures: measures(),
        rows: Vec::new(),
    };
    let drop_after = s.threads * s.docs * s.attachment.size() > KEEP_AT_MOST;
    let each = rows
        .iter()
        .zip(plans)
        .map(|(r, plans)| (r.name, &r.url, plans.map(|p| (r, p))))
        .collect();
    let (table, complete) =
        super::backend_table::run_rows(&mut record, &dir, table, each, |row, _, (r, plans)| {
            let scheme = plans[0].target.scheme().to_string();
            let go_on = with_target_type!(scheme.as_str(), T => {
                row_on::<T>(row, &plans, &dir, r.slug, drop_after)
            })?;
            if r.slug == "local" {
                // Its files are in memory: give it back.
                let _ = std::fs::remove_dir_all(tmpfs_dir(&dir));
            }
            if r.slug == "sqlite" && drop_after {
                // Dropped tables leave their pages in the file: remove the study's own file.
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(dir.join(format!("sqlite/documents.db{suffix}")));
                }
            }
            Ok(go_on)
        })?;
    record.table = StudyTable::Backends(table);
    super::finish(&mut record, &dir, complete)
}

/// The study file as it starts, and the attachment in words.
fn new_record(req: &Request, s: &Sizes) -> (StudyRecord, String) {
    let attachment = match &s.attachment {
        Attachment::File { path, size } => format!("{} ({size} bytes)", path.display()),
        Attachment::Generated { size } => format!("{size} generated bytes"),
    };
    let record = StudyRecord::start(
        "documents",
        req,
        BTreeMap::from([
            ("threads".into(), s.threads),
            ("documents".into(), s.docs),
            ("attachment_bytes".into(), s.attachment.size()),
        ]),
        format!(
            "seconds per phase and milliseconds per operation; {} clients × {} documents, attachment {attachment}",
            s.threads, s.docs
        ),
        StudyTable::Backends(BackendTable::default()),
    );
    (record, attachment)
}

/// Run one row's phases on one target, created once; false when interrupted. A failure
/// to connect fails the row; a phase whose every operation failed leaves its cells empty
/// with the reason; an attachment read back wrong fails the row as `protocol`, its cells
/// kept.
fn row_on<T: Target>(
    row: &mut BackendRow,
    plans: &[RunPlan],
    dir: &Path,
    slug: &str,
    drop_after: bool,
) -> Result<bool> {
    let Some(target) = super::open_clean::<T>(&mut row.backend, &plans[0]) else {
        return Ok(true);
    };
    for (k, plan) in plans.iter().enumerate() {
        let run = format!("runs/{slug}-{}.json", PHASES[k]);
        // A store inside loadrig does its I/O in loadrig's process: read it around the run.
        let mut own = in_process(plan).then(|| ServerProcesses::new(std::process::id()));
        if let Some(p) = &mut own {
            let _ = p.sample();
        }
        let mut own_figures = None;
        let ended = || own_figures = own.as_mut().and_then(|p| p.sample().ok().flatten());
        match super::run_one_then(&target, plan, dir, &run, &mut row.backend, ended)? {
            RunOutcome::Interrupted => return Ok(false),
            RunOutcome::Failed(class, message) => {
                row.backend.fail(class, message);
                return Ok(true);
            }
            RunOutcome::Done(r) => {
                fill(row, k, &r, &run);
                fill_io(row, k, &r, &run, own_figures);
            }
        }
    }
    if drop_after {
        // Gigabytes per backend: the next one must not run out of disk.
        match clean(&*target) {
            Ok(n) => println!("  emptied after its row: {n} documents"),
            Err(e) => println!("  could not empty it after its row: {}", e.message),
        }
    }
    Ok(true)
}

/// The cells of phase `k` from its run; a failed read-back fails the row as `protocol`.
fn fill(row: &mut BackendRow, k: usize, r: &RunResult, run: &str) {
    let Some(op) = r.operations.first() else {
        return;
    };
    let base = 4 * k;
    if op.ok == 0 {
        let (class, message) = batch_failure(r);
        row.cells[base] = MeasureCell::empty(format!("failed ({}): {message}", class.name()));
        return;
    }
    let cell = |value: f64| MeasureCell {
        value: Some(value),
        run: Some(run.to_string()),
        ..MeasureCell::default()
    };
    let ms = |ns: f64| ns / 1e6;
    row.cells[base] = cell(r.elapsed_s);
    row.cells[base + 1] = cell(ms(op.latency.mean_ns));
    row.cells[base + 2] = cell(ms(op.latency.p50_ns as f64));
    row.cells[base + 3] = cell(ms(op.latency.p99_ns as f64));
    if op.errors > 0 {
        row.cells[base].note = Some(format!(
            "{} of {} operations failed: {}",
            op.errors,
            op.ok + op.errors,
            op.error_messages.first().map_or("", |m| m.message.as_str())
        ));
        if op.errors_by_class.contains_key(&ErrorClass::Protocol) {
            let (_, message) = batch_failure(r);
            row.backend.fail(ErrorClass::Protocol, message);
        }
    }
    if k == 0 {
        row.cells[MODES] = modes_cell(r, run);
    }
}

/// The slowest latency mode the mode finder reports, with its finding in words.
fn modes_cell(r: &RunResult, run: &str) -> MeasureCell {
    let Some(modes) = &r.latency_modes else {
        return MeasureCell::empty("no latency modes in this run file");
    };
    let words = modes
        .summary_line()
        .unwrap_or_else(|| format!("{}: one cluster", modes.shape.replace('_', " ")));
    MeasureCell {
        value: modes.modes.last().map(|m| m.at_ns / 1e6),
        run: Some(run.to_string()),
        ..MeasureCell::empty(words)
    }
}

/// Whether the row's store runs inside loadrig (files, SQLite): no server to observe.
fn in_process(plan: &RunPlan) -> bool {
    matches!(plan.target.scheme(), "fs" | "sqlite")
}

/// Phase `k`'s I/O columns, per document: the store's bytes read and written and its
/// block-I/O wait, from `own` (loadrig's process, for a store inside it) or the run's
/// observation of the server's processes; each empty with the reason when not readable.
fn fill_io(row: &mut BackendRow, k: usize, r: &RunResult, run: &str, own: Option<ProcessFigures>) {
    let Some(op) = r.operations.first().filter(|op| op.ok > 0) else {
        return;
    };
    let base = IO + 3 * k;
    let from_server = r
        .server
        .as_ref()
        .and_then(|s| s.measured.figures.processes.clone());
    let Some(f) = own.or(from_server) else {
        let why = r
            .server
            .as_ref()
            .and_then(|s| s.unavailable.iter().find(|u| u.what == "processes"))
            .map_or_else(
                || "the server's processes were not observed".to_string(),
                |u| u.to_string(),
            );
        for c in 0..3 {
            row.cells[base + c] = MeasureCell::empty(why.clone());
        }
        return;
    };
    let docs = op.ok as f64;
    let cell = |value: Option<f64>, why: &str| match value {
        Some(v) => MeasureCell {
            value: Some(v / docs),
            run: Some(run.to_string()),
            ..MeasureCell::default()
        },
        None => MeasureCell::empty(why),
    };
    let unreadable = "/proc/PID/io is readable only by the server's user and root";
    row.cells[base] = cell(f.read_bytes.map(|b| b as f64 / 1024.0), unreadable);
    row.cells[base + 1] = cell(f.write_bytes.map(|b| b as f64 / 1024.0), unreadable);
    // Without delay accounting the cell stays empty; the column's words say why.
    if let Some(s) = f.io_wait_s {
        row.cells[base + 2] = cell(Some(s * 1e3), "");
    }
}
