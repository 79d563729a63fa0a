//! Watching a run as it goes (docs/live.md):
//!
//! - [`dashboard`]: `--dashboard ADDR`, one page served by hyper on its own thread, fed each
//!   finished interval and updated by server-sent events; every asset in the binary. The
//!   runner feeds it for every run it executes (`run`, `sweep`, `study`, `experiment`, …);
//!   the collector feeds it the whole sharded run.
//! - [`link`]: a shard's side of `run --shard I/N --collect ADDR`: its finished intervals
//!   and its final result sent to the collector on a thread of their own, resent after a
//!   reconnection, never holding the run up.
//! - [`collector`]: `loadrig collect`: the shards' streams taken in, each interval merged
//!   across the shards as it arrives (`assemble::merge`'s merge), the whole run written as
//!   `loadrig merge` would write it from the shards' files.
//! - [`wire`]: the stream between them (JSON lines, versioned, with a shared token).
//!
//! Above `report` (the dashboard offers the HTML report) and `assemble` (the collector
//! merges); below `runner`, which starts the dashboard and the link for a plan.

pub mod collector;
pub mod cpu;
pub mod dashboard;
pub mod link;
pub mod wire;
