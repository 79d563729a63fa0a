//! `noop://`: does nothing, successfully. What a run costs here is the harness itself.

use std::future::{ready, Future};

use super::{Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::vocab::{Family, Op, OpError, Outcome};

pub struct Noop;

impl Noop {
    pub fn open(url: &TargetUrl) -> Result<Noop, InputError> {
        url.check_options(&[])?;
        Ok(Noop)
    }
}

pub struct NoopSession;

impl Target for Noop {
    fn from_url(url: &TargetUrl, _params: &Params) -> Result<Self, InputError> {
        Self::open(url)
    }

    type Session = NoopSession;

    fn blocking(&self) -> bool {
        true
    }

    fn cannot_pipeline(&self) -> Option<&'static str> {
        Some("it does nothing, so there is nothing in flight to overlap")
    }

    /// Nothing is opened.
    fn files_per_client(&self) -> usize {
        0
    }

    /// Every native family: a native workload dry-runs on noop:// to measure the harness.
    fn families(&self) -> &'static [Family] {
        &Family::ALL
    }

    fn connect(&self) -> impl Future<Output = Result<NoopSession, OpError>> {
        ready(Ok(NoopSession))
    }
}

impl Session for NoopSession {
    #[inline(always)]
    fn execute(&mut self, _op: &Op<'_>) -> impl Future<Output = Result<Outcome, OpError>> {
        ready(Ok(Outcome::default()))
    }
}
