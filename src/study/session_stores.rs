//! Study `session-stores` (seed 003): session records added in batches up to a limit, each
//! batch timed against the records already stored, on every store the machine offers: files
//! in one folder (FS), in 256 shard folders (FS2 no_sync) and the same with a sync of the
//! file system after each batch (FS2 sync), a dbm store opened for each record, SQLite,
//! MariaDB and PostgreSQL with a new connection per record and with one, Redis and memcached; then
//! FS and FS2 again on a filesystem without directory indexing (an ext4 image made with
//! `-O ^dir_index` and loop-mounted when root, or `--fs-root PATH`), where one folder is
//! O(n) as on the seed's machine.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::growth_table::GrowthColumn;
use super::unindexed_fs;
use super::{Backend, Column, GrowthTable, Request, Slot, StudyRecord, StudyTable};
use crate::error::InputError;
use crate::plan::RunPlan;
use crate::targets::redact;

const WORKLOAD: &str = include_str!("session-stores.toml");
/// Where the seed gave its upper bounds.
const BOUNDS_AT: [u64; 2] = [1000, 50_000];

/// A column: its name, the target URL (or why it cannot run), whether every record
/// opens its own connection and whether it lives on the unindexed filesystem.
struct Store {
    name: &'static str,
    slug: &'static str,
    url: Result<String, String>,
    per_op: bool,
    unindexed: bool,
}

/// Where the unindexed-filesystem columns store: `--fs-root PATH` (checked to be a folder),
/// or the image the study mounts in its folder (root only).
fn unindexed_root(req: &Request, dir: &Path) -> Result<Result<String, String>, InputError> {
    let Some(root) = &req.fs_root else {
        // SAFETY: geteuid has no preconditions and cannot fail.
        return Ok(if unsafe { libc::geteuid() } == 0 {
            Ok(dir.join(unindexed_fs::MOUNT_DIR).display().to_string())
        } else {
            Err("needs root to mount, or --fs-root".into())
        });
    };
    if !root.is_dir() {
        return Err(InputError::new(format!(
            "--fs-root {}: not a folder",
            root.display()
        ))
        .help("name a folder on the mounted filesystem to test, e.g. --fs-root /mnt/ext4-nodirindex"));
    }
    Ok(Ok(root.display().to_string()))
}

/// The sizes: the seed's, `--quick`'s, or `--set batch=` / `--set records_max=`.
fn sizes(req: &Request) -> Result<(u64, u64), InputError> {
    let (mut batch, mut max) = if req.quick {
        (100, 1000)
    } else {
        (1000, 50_000)
    };
    for (name, value) in &req.sets {
        let n = value
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                InputError::new(format!(
                    "--set {name}={value}: expected a whole number of records, at least 1"
                ))
            })?;
        match name.as_str() {
            "batch" => batch = n,
            "records_max" => max = n,
            other => {
                return Err(InputError::new(format!(
                    "--set {other}: the session-stores study has no such setting"
                ))
                .help("it takes --set batch=N and --set records_max=N"))
            }
        }
    }
    if batch > max {
        return Err(InputError::new(format!(
            "batch {batch} is above records_max {max}: not even one batch would be timed"
        )));
    }
    if max / batch > 1000 {
        return Err(InputError::new(format!(
            "records_max {max} in batches of {batch} makes more than 1000 batches"
        ))
        .help("raise --set batch="));
    }
    Ok((batch, max))
}

fn backends(req: &Request, dir: &Path, batch: u64) -> Result<Vec<Store>, InputError> {
    let servers = super::servers(
        &req.targets,
        &[
            Slot::postgres("postgres"),
            Slot::mysql(),
            Slot::redis(),
            Slot::new("memcached", "LOADRIG_MEMCACHED_URL", |u| {
                u.scheme == "memcached" || u.scheme == "memcacheds"
            }),
        ],
        "postgres, mysql, redis, memcached",
    )?;
    let d = dir.display();
    let server = |kind: &str| {
        servers
            .get(kind)
            .cloned()
            .ok_or_else(|| "no URL".to_string())
    };
    let dbm = if super::has_scheme("dbm") {
        Ok(format!("dbm://{d}/dbm/sessions.db?reopen=each"))
    } else {
        Err("no dbm target in this build".to_string())
    };
    let b = |name, slug, url, per_op| Store {
        name,
        slug,
        url,
        per_op,
        unindexed: false,
    };
    let mut all = vec![
        b("FS", "fs", Ok(format!("fs://{d}/fs")), false),
        b(
            "FS2 no_sync",
            "fs2",
            Ok(format!("fs://{d}/fs2?shards=256")),
            false,
        ),
        b(
            "FS2 sync",
            "fs2-sync",
            Ok(format!(
                "fs://{d}/fs2-sync?shards=256&sync=batch&batch={batch}"
            )),
            false,
        ),
        b("Dbm", "dbm", dbm, false),
        b(
            "SQLite",
            "sqlite",
            Ok(format!("sqlite://{d}/sqlite/sessions.db")),
            false,
        ),
        b("mysql", "mysql", server("mysql"), true),
        b("mysql2", "mysql2", server("mysql"), false),
        b("pg", "pg", server("postgres"), true),
        b("pg2", "pg2", server("postgres"), false),
        b("Redis", "redis", server("redis"), false),
        b("memcached", "memcached", server("memcached"), false),
    ];
    let root = unindexed_root(req, dir)?;
    for (name, slug, url) in [
        ("FS noindex", "fs-noindex", "fs://{root}/loadrig_fs"),
        (
            "FS2 noindex",
            "fs2-noindex",
            "fs://{root}/loadrig_fs2?shards=256",
        ),
    ] {
        all.push(Store {
            unindexed: true,
            ..b(
                name,
                slug,
                root.clone().map(|r| url.replace("{root}", &r)),
                false,
            )
        });
    }
    req.leave_out_unchosen(&mut all, |r| (r.name, r.slug), |r| &mut r.url)?;
    Ok(all)
}

/// The plan of one column: one operation per batch (the growth loop sets the count).
fn column_plan(
    workload: &Path,
    url: &str,
    per_op: bool,
    dir: &Path,
) -> Result<RunPlan, InputError> {
    let mut flags: Vec<String> = ["--ops", "1", "--seed", "3", "-o"].map(String::from).into();
    flags.push(dir.join("runs/plan.json").to_string_lossy().into_owned());
    if per_op {
        flags.extend(["--connection", "per-op"].map(String::from));
    }
    super::plan_with_flags(workload, url, &flags)
}

pub fn run(req: &Request) -> Result<ExitCode> {
    let (batch, max) = sizes(req)?;
    let dir = super::out_dir(req);
    let backends = backends(req, &dir, batch)?;
    // Every plan is resolved before the first run: a bad URL exits 2 with nothing run.
    let plans = super::prepare(
        &dir,
        "session-stores.toml",
        WORKLOAD,
        &["fs", "fs2", "fs2-sync", "dbm", "sqlite"],
        |workload| {
            backends
                .iter()
                .map(|b| match &b.url {
                    Ok(url) => column_plan(workload, url, b.per_op, &dir).map(Some),
                    Err(_) => Ok(None),
                })
                .collect::<Result<Vec<_>, InputError>>()
        },
    )?;
    let mut record = StudyRecord::start(
        "session-stores",
        req,
        BTreeMap::from([("batch".into(), batch), ("records_max".into(), max)]),
        "seconds per 1000 records added, against the records already stored".into(),
        StudyTable::Growth(GrowthTable::default()),
    );
    println!(
        "loadrig {} study session-stores: batches of {batch} up to {max} records, {} backends; into {}",
        env!("CARGO_PKG_VERSION"),
        backends.len(),
        dir.display()
    );
    let mut complete = true;
    let mut table = GrowthTable::default();
    // The image is mounted before the first unindexed column and unmounted when this drops.
    let mut mounted: Option<Result<unindexed_fs::Mounted, String>> = None;
    for (b, plan) in backends.iter().zip(plans) {
        let mount_failed = match (
            b.unindexed && req.fs_root.is_none() && b.url.is_ok(),
            complete,
        ) {
            (true, true) => mounted
                .get_or_insert_with(|| unindexed_fs::mount(&dir, max))
                .as_ref()
                .err()
                .cloned(),
            _ => None,
        };
        let (Ok(url), Some(plan), true, None) = (&b.url, plan, complete, &mount_failed) else {
            let why = match (&b.url, complete, &mount_failed) {
                (Err(why), _, _) => why.clone(),
                (_, false, _) => "interrupted before it started".into(),
                (_, _, Some(why)) => format!("could not mount the unindexed image: {why}"),
                _ => "no plan".into(),
            };
            table.push(Column::new(Backend::not_run(b.name, &why)));
            continue;
        };
        let mut col = Column::new(Backend::new(b.name, Some(redact(url))));
        println!("{}: {}", b.name, redact(url));
        let g = GrowthColumn {
            plan,
            batch,
            limit: max,
            dir: &dir,
            slug: b.slug.to_string(),
            bounds_at: &BOUNDS_AT,
        };
        complete &= super::growth_table::run_growth_column(&mut col, &g)?;
        if let Some(note) = &col.backend.note {
            println!("  {note}");
        }
        table.push(col);
        record.table = StudyTable::Growth(table.clone());
        super::write_record(&record, &dir)?;
    }
    drop(mounted);
    record.table = StudyTable::Growth(table);
    super::finish(&mut record, &dir, complete)
}
