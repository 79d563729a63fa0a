//! The order-entry study's factorial experiment: each of the seed's fixes as a factor of its
//! own (`isolation`, `chopping`, `lock_order`, `po_sending`: out of the box against the fix)
//! at one Ir on MariaDB, run through the shared experiment engine (`crate::experiment`), so
//! that each fix gets its effect with an interval and its share of the variation.
//! `--quick` runs the half fraction (`po_sending` = the product of the other three), once
//! per cell; the full study every cell twice.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analysis::experiment::record::ExperimentRecord;
use crate::experiment::{Experiment, FactorInput, Inputs};
use crate::plan::RunPlan;
use crate::report::experiment as table;

/// The fixes, out of the box first. `po_sending=agent` (not `queue`) needs no Redis.
const FIXES: [(&str, [&str; 2]); 4] = [
    ("isolation", ["serializable", "read-committed"]),
    ("chopping", ["off", "on"]),
    ("lock_order", ["arbitrary", "sorted"]),
    ("po_sending", ["inline", "agent"]),
];

/// What each run is measured by: the clients' throughput and the p90 of the transaction
/// that holds the locks (the seed's limit is a p90).
const RESPONSES: [&str; 2] = ["throughput", "schedule-work-order.p90"];

/// The design: the half fraction once (`--quick`), or every cell `replicates` times.
pub struct Design {
    pub quick: bool,
    pub replicates: usize,
}

/// Run the experiment with `base` (out of the box at the chosen Ir) into `dir`; the
/// record, or why it did not run (said, never an error of the study).
pub fn run(base: RunPlan, design: &Design, dir: &Path) -> Result<Option<ExperimentRecord>> {
    let inputs = Inputs {
        factors: FIXES
            .iter()
            .map(|(name, levels)| FactorInput {
                name: name.to_string(),
                levels: levels.iter().map(|l| l.to_string()).collect(),
                apply: Vec::new(),
                at: None,
            })
            .collect(),
        fraction: if design.quick {
            vec!["D=ABC".to_string()]
        } else {
            Vec::new()
        },
        replicates: if design.quick { 1 } else { design.replicates },
        responses: RESPONSES.iter().map(|r| r.to_string()).collect(),
        // The same order of runs when the study is run again.
        seed: Some(1),
        ..Inputs::default()
    };
    let dir: PathBuf = dir.join("experiment");
    let experiment = match Experiment::prepare(base, inputs, dir.clone()) {
        Ok(e) => e,
        Err(e) => {
            println!("experiment: not run: {e:#}");
            return Ok(None);
        }
    };
    let (record, _complete) = experiment.run(&mut |line| println!("  {line}"))?;
    crate::result::write_atomic(
        &dir.join("experiment.html"),
        crate::report::html::render_experiment(&record)?.as_bytes(),
    )?;
    Ok(Some(record))
}

/// The tables the study prints: each response's effects and shares.
pub fn render(record: &ExperimentRecord, dir: &Path) -> String {
    format!(
        "{}experiment: {}\n",
        table::render(record),
        dir.join("experiment")
            .join(crate::experiment::RECORD)
            .display()
    )
}
