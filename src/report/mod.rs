//! Outputs computed from a run: the console view and summary, the result file, and the
//! sweep file that gathers many runs.

pub mod console;
pub mod host;
pub mod result;
pub mod sweep;
