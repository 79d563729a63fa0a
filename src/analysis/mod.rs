//! Analysis of measured results: the models that explain a sweep and the shape of a
//! latency distribution. Pure functions on numbers; the commands feed them from result files.
//!
//! - [`usl`]: the Universal Scalability Law fitted to a concurrency sweep.
//! - [`growth`]: the complexity class of a cost that grows with the data (O(1) … O(n log n)).
//! - [`knee`]: latency objectives and the highest rate that meets one.
//! - [`modes`]: clusters in a latency distribution, and whether they repeat at a period.
//! - [`fit`]: least squares and goodness of fit shared by the models.

pub mod fit;
pub mod growth;
pub mod knee;
pub mod modes;
pub mod usl;
