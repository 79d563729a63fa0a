//! Outputs computed from a run: the console view and summary, and the result file.

pub mod console;
pub mod host;
pub mod result;
