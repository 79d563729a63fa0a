//! Whether and how a run observes its server (docs/observe.md): `--observe`,
//! `--observe-rate`, `--observe-behind` and the workload's `[[observe]]` queries made into
//! the observer's configuration, checked before anything connects.

use super::RunPlan;
use crate::error::InputError;
use crate::observe::{self, ObserveConfig, Sessions, DEFAULT_SESSION_RATE};

impl RunPlan {
    /// Whether the run observes its server: as `--observe` (or `[load] observe`) says,
    /// else when a server behind it is named or the target is observed by default.
    pub fn observes(&self) -> bool {
        self.load.observe.unwrap_or_else(|| {
            // Naming a server behind the target asks for observation.
            self.load.observe_behind.is_some() || observe::observed_by_default(self.target.scheme())
        })
    }

    /// On a target whose server is observed only when asked, and was not asked about: the
    /// console's note saying so, and how to ask (the runner prints it once).
    pub fn unobserved_note(&self) -> Option<String> {
        let scheme = self.target.scheme();
        let asked = self.load.observe.is_some() || self.load.observe_behind.is_some();
        (!asked && observe::observable(scheme) && !observe::observed_by_default(scheme)).then(|| {
            format!(
                "note: the server is not observed: on {scheme}:// targets observing it cost more than 1 % of the rig's CPU on the standard workloads (docs/performance.md); --observe on (or observe = true in [load]) observes it"
            )
        })
    }

    /// Whether this process is the one that observes: under `--shard`, shard 0 alone reads
    /// the server's counters, so that `loadrig merge` does not add them once per shard.
    pub fn observes_here(&self) -> bool {
        self.observes() && self.load.shard.is_none_or(|s| s.index == 0)
    }

    /// The observer's configuration: the target (its password kept: the observer logs in),
    /// the server behind it, the run's own sessions at the rate asked, the workload's
    /// queries.
    pub fn observe_config(&self) -> ObserveConfig {
        let mut config = ObserveConfig::new(self.target.url.clone());
        config.behind = self.load.observe_behind.clone();
        config.sessions = Sessions::Run;
        config.session_rate = self.load.observe_rate.unwrap_or(DEFAULT_SESSION_RATE);
        config.queries = self.workload.observe.clone();
        config
    }
}

/// `--observe on` on a target with no server, `--observe-behind` or `[[observe]]` queries
/// on a run that does not observe, or a URL the observer cannot read: refused now.
pub(super) fn check(plan: &RunPlan) -> Result<(), InputError> {
    let scheme = plan.target.scheme();
    if plan.load.observe == Some(true) && !observe::observable(scheme) {
        return Err(given(plan, format!(
            "{} on: {scheme}:// targets have no server to observe",
            flag_name(plan)
        ))
        .help("observation is for network targets (postgres, mysql, redis, ldap, http); leave --observe out"));
    }
    if !plan.observes() {
        if plan.load.observe_behind.is_some() {
            return Err(InputError::new(format!(
                "--observe-behind: this run does not observe its server ({scheme}:// targets are not observed unless --observe on)"
            ))
            .help("add --observe on, or drop --observe-behind"));
        }
        return Ok(());
    }
    observe::check(&plan.observe_config())
}

fn flag_name(plan: &RunPlan) -> String {
    plan.given(crate::plan::LoadSetting::Observe)
        .map_or_else(|| "--observe".to_string(), |g| g.name())
}

fn given(plan: &RunPlan, message: String) -> InputError {
    match plan.given(crate::plan::LoadSetting::Observe) {
        Some(g) => g.error(message),
        None => InputError::new(message),
    }
}
