//! A user's own query on the server under test (`[[observe]]` in a workload file): what the
//! workload compiler checks (`workload::observe`) and the observer runs (`observe`), here so
//! that both layers share it without importing each other.

use std::time::Duration;

/// A checked `[[observe]]` query.
#[derive(Debug, Clone, PartialEq)]
pub struct UserQuery {
    pub name: String,
    /// One statement, without a trailing `;`.
    pub sql: String,
    /// How often it runs: at the first interval boundary at least this long after its last
    /// run (None: at every boundary).
    pub every: Option<Duration>,
}
