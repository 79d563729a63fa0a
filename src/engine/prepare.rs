//! The sessions outside the measured run: preparing the target (setup statements, data
//! load, settling, `before_run` steps), verifying after the run, and cleaning up.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::{client, runtime};
use crate::targets::{Session, Target};
use crate::vocab::{NativeOp, Op, OpError, RunStep, ValueKind};
use crate::workload::{DataSpec, GenState, VerifySpec};

/// What happened before the measured run: setup, server version, data load.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub server_version: Option<String>,
    pub loaded: Option<(u64, Duration)>,
    /// The setup statements: how many, the rows they changed, and their time.
    pub setup: Option<(usize, u64, Duration)>,
    /// After the setup or load: the tables the target settled ([`Session::settle`]), and
    /// the time it took.
    pub settled: Option<(u64, Duration)>,
    /// The workload's `before_run` steps: what they did, and the time.
    pub before_run: Option<BeforeRun>,
}

/// The `before_run` steps of a run, as carried out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeforeRun {
    /// Tables vacuumed (steps the server had nothing to do for are not counted).
    pub vacuumed: u64,
    pub emptied: u64,
    /// `{ sql = "..." }` steps run.
    pub statements: u64,
    pub took: Duration,
}

/// How far [`prepare`] is, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadProgress {
    /// `done` of `of` setup statements ran, changing `rows` rows so far.
    Setup { done: u64, of: u64, rows: u64 },
    /// `done` of `of` data records loaded.
    Data { done: u64, of: u64 },
}

/// Connect once, create the namespace, read the server version, load the data and, unless
/// `settle` is false, settle what the setup and load wrote ([`Session::settle`]).
pub fn prepare<T: Target>(
    target: &T,
    setup: &[NativeOp<ValueKind>],
    before_run: &[RunStep],
    settle: bool,
    data: Option<&DataSpec>,
    seed: u64,
    progress: &mut dyn FnMut(LoadProgress),
) -> Result<Prepared> {
    runtime()?.block_on(async {
        let mut session = connect(target).await?;
        session
            .setup()
            .await
            .map_err(|e| anyhow!("setting up: {}", e.message))?;
        let setup = run_setup(&mut session, setup, progress).await?;
        let server_version = session.server_version().await;
        let loaded = match data {
            Some(d) => Some(load_data(&mut session, d, seed, progress).await?),
            None => None,
        };
        let settled = if settle && (setup.is_some() || loaded.is_some()) {
            let started = Instant::now();
            let n = session
                .settle()
                .await
                .map_err(|e| anyhow!("settling the loaded tables: {}", e.message))?;
            (n > 0).then(|| (n, started.elapsed()))
        } else {
            None
        };
        let before_run = run_before(&mut session, before_run).await?;
        Ok(Prepared {
            server_version,
            loaded,
            setup,
            settled,
            before_run,
        })
    })
}

/// The setup statements, one after the other: how many, the rows they changed, their time.
async fn run_setup<S: Session>(
    session: &mut S,
    setup: &[NativeOp<ValueKind>],
    progress: &mut dyn FnMut(LoadProgress),
) -> Result<Option<(usize, u64, Duration)>> {
    let started = Instant::now();
    let mut rows = 0;
    if !setup.is_empty() {
        progress(LoadProgress::Setup {
            done: 0,
            of: setup.len() as u64,
            rows,
        });
    }
    for (i, statement) in setup.iter().enumerate() {
        let op = Op::Native {
            op: statement,
            args: &[],
            capture: false,
        };
        rows += session
            .execute(&op)
            .await
            .map_err(|e| anyhow!("setup statement failed: {}", e.message))?
            .rows;
        progress(LoadProgress::Setup {
            done: i as u64 + 1,
            of: setup.len() as u64,
            rows,
        });
    }
    Ok((!setup.is_empty()).then(|| (setup.len(), rows, started.elapsed())))
}

/// Load the data in batches: whole records (`value` drawn once per field) into a record
/// store made empty first when the workload has `[records]`, else key-value pairs. Returns
/// the records loaded and the time.
async fn load_data<S: Session>(
    session: &mut S,
    d: &DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(LoadProgress),
) -> Result<(u64, Duration)> {
    let started = Instant::now();
    let mut rng = SmallRng::seed_from_u64(client::mix_seed(seed, u64::MAX));
    let mut gen = GenState::new(0, 1, 8);
    let draw = |rng: &mut SmallRng, gen: &mut GenState| {
        let mut value = Vec::new();
        d.value.render_bytes(rng, gen, &mut value);
        value
    };
    let (mut pairs, mut records) = (Vec::new(), Vec::new());
    let mut done = 0;
    progress(LoadProgress::Data { done, of: d.count });
    if let Some(layout) = d.records {
        session
            .create_records(layout)
            .await
            .map_err(|e| anyhow!("making the record store: {}", e.message))?;
    }
    while done < d.count {
        let n = (d.count - done).min(d.batch as u64);
        let stored = match d.records {
            Some(layout) => {
                records.clear();
                for _ in 0..n {
                    let mut key = String::new();
                    d.key.render_str(&mut rng, &mut gen, &mut key);
                    let values = (0..layout.fields).map(|_| draw(&mut rng, &mut gen));
                    records.push((key, values.collect()));
                }
                let stored = session.load_records(&records).await;
                stored.map_err(|e| anyhow!("loading records after {done}: {}", e.message))
            }
            None => {
                pairs.clear();
                for _ in 0..n {
                    let mut key = String::new();
                    d.key.render_str(&mut rng, &mut gen, &mut key);
                    pairs.push((key, draw(&mut rng, &mut gen)));
                }
                let stored = session.load(&pairs).await;
                stored.map_err(|e| anyhow!("loading data after {done} records: {}", e.message))
            }
        };
        stored?;
        done += n;
        progress(LoadProgress::Data { done, of: d.count });
    }
    Ok((done, started.elapsed()))
}

/// The workload's `before_run` steps, in order; `None` when it has none.
async fn run_before<S: Session>(session: &mut S, steps: &[RunStep]) -> Result<Option<BeforeRun>> {
    if steps.is_empty() {
        return Ok(None);
    }
    let started = Instant::now();
    let (mut vacuumed, mut emptied, mut statements) = (0, 0, 0);
    for step in steps {
        let done = session
            .before_run(step)
            .await
            .map_err(|e| anyhow!("before the run, {}: {}", step.describe(), e.message))?;
        match step {
            RunStep::Vacuum(_) => vacuumed += u64::from(done),
            RunStep::Empty(_) => emptied += u64::from(done),
            RunStep::Sql(_) => statements += u64::from(done),
        }
    }
    Ok(Some(BeforeRun {
        vacuumed,
        emptied,
        statements,
        took: started.elapsed(),
    }))
}

/// Run each `[[verify]]`'s queries on one session after the run: per check, the first row of
/// each query as text (its columns joined by `,`).
pub fn verify<T: Target>(target: &T, checks: &[VerifySpec]) -> Result<Vec<Vec<String>>> {
    if checks.is_empty() {
        // No session: some targets (redb) allow only one open at a time.
        return Ok(Vec::new());
    }
    runtime()?.block_on(async {
        let mut session = connect(target).await?;
        let mut out = Vec::new();
        for check in checks {
            let mut rows = Vec::new();
            for query in &check.queries {
                let op = Op::Native {
                    op: query,
                    args: &[],
                    capture: true,
                };
                let got = session
                    .execute(&op)
                    .await
                    .map_err(|e| anyhow!("verify '{}' query failed: {}", check.name, e.message))?;
                let text: Vec<String> = got
                    .captured
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect();
                rows.push(text.join(","));
            }
            out.push(rows);
        }
        Ok(out)
    })
}

/// A connect failure's message with its error class, unless the target's message has it.
pub(super) fn with_class(e: &OpError) -> String {
    let tag = format!("({})", e.class.name());
    if e.message.contains(&tag) {
        e.message.clone()
    } else {
        format!("{} {tag}", e.message)
    }
}

/// One session outside the measured run (setup, data load, cleanup).
async fn connect<T: Target>(target: &T) -> Result<T::Session> {
    target
        .connect()
        .await
        .map_err(|e| anyhow!("{}", with_class(&e)))
}

/// Remove loadrig's namespace from the target; returns how many objects went.
pub fn cleanup<T: Target>(target: &T) -> Result<u64> {
    runtime()?.block_on(async {
        let mut session = connect(target).await?;
        session
            .cleanup()
            .await
            .map_err(|e| anyhow!("cleanup: {}", e.message))
    })
}
