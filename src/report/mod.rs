//! Outputs computed from a run: the console view and summary, and what is computed from
//! result files alone (HTML report with SVG plots, CSV, HdrHistogram log and YCSB exports, the
//! sweep's table and summary), the operations `loadrig ops` shows, plus the live OpenMetrics
//! endpoint. The files themselves
//! are [`crate::result`].

pub mod comparison;
pub mod console;
pub mod experiment;
pub mod export;
pub mod history;
pub mod host;
pub mod html;
pub mod metrics;
pub mod ops;
pub mod plot;
pub mod server;
pub mod sweep;
pub mod ycsb;
