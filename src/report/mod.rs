//! Outputs computed from a run: the console view and summary, the result file, and what is
//! computed from result files alone (HTML report with SVG plots, CSV and HdrHistogram log
//! exports), the sweep file that gathers many runs, plus the live OpenMetrics endpoint.

pub mod comparison;
pub mod console;
pub mod export;
pub mod host;
pub mod html;
pub mod metrics;
pub mod plot;
pub mod result;
pub mod sweep;
