//! `loadrig ops WORKLOAD`: the first operations each client would send, bound by the
//! engine's own chooser, without a target.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;

use crate::cli::{OpsArgs, RunArgs};
use crate::engine::client::Chooser;
use crate::engine::{Mode, Slots};
use crate::error::InputError;
use crate::plan::{self, LoadSetting, Value};
use crate::report::ops as view;
use crate::workload::ycsb::InsertCounters;

/// `loadrig ops WORKLOAD [--properties FILE …] [--set …] [--op …] [--clients N] [--count K] [--seed S] [--json]`.
pub fn ops(args: &OpsArgs) -> Result<ExitCode> {
    if args.count == 0 {
        return Err(
            InputError::new("--count 0: expected at least 1 operation per client")
                .help("for example --count 10")
                .into(),
        );
    }
    let (workload, ops, load) = plan::resolve_offline(&RunArgs {
        workload: args.workload.clone(),
        set: args.set.clone(),
        properties: args.properties.clone(),
        only_ops: args.only_ops.clone(),
        load: [
            (LoadSetting::Clients, args.clients),
            (LoadSetting::Seed, args.seed),
        ]
        .into_iter()
        .filter_map(|(setting, n)| Some((setting, Value::Count(n?))))
        .collect(),
        ..RunArgs::default()
    })?;
    let clients = load.clients() as u64;
    let slots = Slots {
        seq: workload.seq_slots,
        capture: workload.capture_slots,
        seq_offset: 0,
    };
    // Shared as in a run; the clients are shown one after another, so each takes its
    // `{ycsb_counter}` keys after the clients before it.
    let counters = Arc::new(InsertCounters::new(slots.seq, 0, 1));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for client in 0..clients {
        let mut chooser = Chooser::new(
            &ops,
            load.seed,
            client,
            clients,
            slots,
            Arc::clone(&counters),
        );
        for index in 0..args.count {
            let mut steps = Vec::new();
            let i = chooser.next_offline(&mut |op| steps.extend(view::step(op)));
            let (name, kind) = (&ops[i].name, ops[i].kind.label());
            let mut shown = view::operation(kind, steps);
            // Only a closed loop pauses: an open loop's arrivals are its schedule.
            if let (Some(p), Mode::Closed { .. }) = (ops[i].pause, &load.mode) {
                shown = shown.with_pause(p.keying, p.think);
            }
            let line = if args.json {
                view::json_line(client, index, name, &shown)?
            } else {
                view::text_line(client, name, &shown)
            };
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    if args.seed.is_none() {
        eprintln!(
            "note: seed {}: `loadrig run --seed {}` sends these operations",
            load.seed, load.seed
        );
    }
    Ok(ExitCode::SUCCESS)
}
