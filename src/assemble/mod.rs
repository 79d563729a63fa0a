//! A run's result file made from its parts: built from what the engine measured as a run
//! ends ([`build()`]), merged from the files of a run's shards ([`merge()`],
//! docs/distributed.md), or recovered from the interval stream of a run that died
//! ([`recover()`]).
//!
//! Above `analysis`: it finds the latency modes (`analysis::modes`) and judges the run's
//! validity by calling them directly; `result` below holds only the types and their reading
//! and writing.

pub mod build;
pub mod merge;
mod merge_stages;
pub mod recover;
pub mod stages;

pub use build::{build, stream_header, RunFacts};
pub use merge::{merge, ShardFile};
pub use recover::recover;
