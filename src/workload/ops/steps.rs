//! `tx = [...]` and `steps = [...]`: native steps run in order, with or without a
//! transaction, their commit points, rollback steps, `repeat` groups and `when` conditions.

use std::ops::Range;

use toml::Spanned;

use super::compiled::{OpKind, Repeat, Step, When};
use super::compiler::OpCompiler;
use super::sections::{StepSection, WhenForm};
use crate::error::InputError;
use crate::vocab::{Family, LdapOp, NativeOp, ValueKind};

impl OpCompiler<'_> {
    /// `tx = [...]` (`transaction`) or `steps = [...]`: the same steps, compiled alike; only
    /// a transaction has commit points and rollback steps.
    pub(super) fn tx(
        &mut self,
        tx: &Spanned<Vec<Spanned<StepSection>>>,
        mut visible: Vec<(String, usize)>,
        transaction: bool,
    ) -> Result<OpKind, InputError> {
        let form = if transaction { "tx" } else { "steps" };
        if tx.get_ref().is_empty() {
            return Err(self.source.error(
                tx.span(),
                format!("{form} has no steps: {form} = [ {{ sql = {{ query = \"...\" }} }}, ... ]"),
            ));
        }
        let mut steps: Vec<Step> = Vec::new();
        let mut commit_point = false;
        // The last thing compiled was a repeat group: a rollback step cannot ride on it.
        let mut after_group = false;
        for step in tx.get_ref() {
            if !self.keeps(&step.get_ref().only)? {
                continue;
            }
            if !transaction {
                self.check_no_transaction(step)?;
            }
            if step.get_ref().commit.is_some() {
                self.check_commit_point(step)?;
                // At the start of a tx there is nothing to commit yet.
                commit_point = !steps.is_empty();
                continue;
            }
            if step.get_ref().rollback.is_some() {
                let after = if commit_point || after_group {
                    None
                } else {
                    steps.last_mut()
                };
                self.rollback_step(step, after, &visible)?;
                continue;
            }
            after_group = step.get_ref().repeat.is_some();
            let mut compiled = match &step.get_ref().repeat {
                Some(count) => self.repeat_group(step, count, &mut visible, transaction)?,
                None => vec![self.tx_step(step, &mut visible)?],
            };
            if let Some(first) = compiled.first_mut() {
                first.commit_before = std::mem::take(&mut commit_point);
            }
            steps.append(&mut compiled);
        }
        if steps.is_empty() {
            return Err(self.source.error(
                tx.span(),
                format!("`only` leaves out every step of this {form} for these switch values"),
            ));
        }
        let families: Vec<_> = steps
            .iter()
            .filter(|s| s.peer.is_none())
            .map(|s| s.op.family())
            .collect();
        if families.windows(2).any(|w| w[0] != w[1]) {
            return Err(self.source.error(
                tx.span(),
                format!("a {form} runs on one system: its steps are all sql, all record, all redis, all ldap or all memcached (steps with on = \"PEER\" aside)"),
            ));
        }
        Ok(if transaction {
            OpKind::Tx(steps)
        } else {
            OpKind::Steps(steps)
        })
    }

    /// `steps = [...]` sends each statement on its own: a commit point or a rollback step
    /// (in it or in one of its groups) would need a transaction to act on.
    fn check_no_transaction(&self, step: &Spanned<StepSection>) -> Result<(), InputError> {
        let s = step.get_ref();
        let what = match (&s.commit, &s.rollback) {
            (Some(_), _) => "a commit point",
            (_, Some(_)) => "a rollback step",
            _ => return Ok(()),
        };
        Err(self
            .source
            .error(
                step.span(),
                format!("{what} needs a transaction: the steps of steps = [...] run without one, each statement committed on its own"),
            )
            .help("write tx = [ ... ] for one transaction, or leave it out"))
    }

    /// `{ repeat = "COUNT", steps = [...] }`: the group's steps, the first carrying the
    /// count; nothing when `only` leaves out every one. No commit point or group inside.
    fn repeat_group(
        &mut self,
        group: &Spanned<StepSection>,
        count: &Spanned<String>,
        visible: &mut Vec<(String, usize)>,
        transaction: bool,
    ) -> Result<Vec<Step>, InputError> {
        let g = group.get_ref();
        let alone = g.natives().is_empty()
            && g.capture.is_none()
            && g.when.is_none()
            && g.on.is_none()
            && g.commit.is_none()
            && g.rollback.is_none();
        let Some(inner) = g.steps.as_ref().filter(|_| alone) else {
            return Err(self
                .source
                .error(group.span(), "a repeat group is { repeat = \"COUNT\", steps = [ ... ] } (it may carry only = { ... })"));
        };
        let count_template = self.template(count, visible)?;
        let countable = match count_template.constant_text() {
            Some(text) => text.trim().parse::<u64>().is_ok(),
            None => count_template.kind() == ValueKind::Integer,
        };
        if !countable {
            return Err(self
                .source
                .error(count.span(), format!("repeat = \"{}\": expected a whole number of passes", count.get_ref()))
                .help("a number, an integer parameter, a number generator such as {uniform 5..16}, or a let value"));
        }
        let outer = std::mem::replace(&mut self.in_repeat, true);
        let mut steps = Vec::new();
        for step in inner.get_ref() {
            if !self.keeps(&step.get_ref().only)? {
                continue;
            }
            let s = step.get_ref();
            if !transaction {
                if let Err(e) = self.check_no_transaction(step) {
                    self.in_repeat = outer;
                    return Err(e);
                }
            }
            if s.rollback.is_some() {
                if let Err(e) = self.rollback_step(step, steps.last_mut(), visible) {
                    self.in_repeat = outer;
                    return Err(e);
                }
                continue;
            }
            if s.commit.is_some() || s.repeat.is_some() || s.steps.is_some() {
                self.in_repeat = outer;
                return Err(self.source.error(
                    step.span(),
                    "a repeat group holds native steps only: no commit point and no group inside it",
                ));
            }
            match self.tx_step(step, visible) {
                Ok(compiled) => steps.push(compiled),
                Err(e) => {
                    self.in_repeat = outer;
                    return Err(e);
                }
            }
        }
        self.in_repeat = outer;
        let len = steps.len();
        if let Some(first) = steps.first_mut() {
            first.repeat = Some(Repeat {
                count: count_template,
                len,
            });
        }
        Ok(steps)
    }

    /// One native step of a tx; its captures become visible to the steps after it.
    fn tx_step(
        &mut self,
        step: &Spanned<StepSection>,
        visible: &mut Vec<(String, usize)>,
    ) -> Result<Step, InputError> {
        let s = step.get_ref();
        let mut ops = self.natives(&s.natives(), visible)?;
        if ops.len() != 1 {
            return Err(self.source.error(
                step.span(),
                "each tx step has exactly one of sql, record.*, redis, memcached.*, http (on a peer), ldap.search, ldap.add, ldap.modify, ldap.delete, or is a commit point { commit = {} } or a group { repeat = \"COUNT\", steps = [...] }",
            ));
        }
        let op = ops.remove(0);
        if let NativeOp::Ldap(LdapOp::Bind { .. }) = op {
            return Err(self.source.error(
                step.span(),
                "ldap.bind cannot be a tx step: a bind ends an LDAP transaction",
            ));
        }
        let peer = self.peer(&s.on, &op)?;
        if peer.is_none() && op.family() == Family::Http {
            return Err(self.source.error(
                step.span(),
                "an http step of a tx runs on a peer: add on = \"NAME\" naming one of [peers]",
            ));
        }
        if let Some(w) = s.when.as_ref().filter(|w| w.get_ref().names().is_empty()) {
            return Err(self.source.error(
                w.span(),
                "when = [] names no value: leave when out, or name one: when = [\"NAME\"]",
            ));
        }
        let when = match &s.when {
            Some(w) => w
                .get_ref()
                .names()
                .into_iter()
                .map(|name| self.when_slot(name, &w.span(), visible))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let capture = match self.capture_names(&s.capture)? {
            Some((names, cspan)) => {
                self.check_capture(&op, &names, &cspan)?;
                let slots = self.slots(&names);
                visible.extend(names.into_iter().zip(slots.iter().copied()));
                slots
            }
            None => Vec::new(),
        };
        let mut compiled = self.new_step(op, capture);
        compiled.when = when;
        compiled.peer = peer;
        Ok(compiled)
    }

    /// A commit point is `{ commit = {} }`, with at most `only` beside it.
    fn check_commit_point(&self, step: &Spanned<StepSection>) -> Result<(), InputError> {
        let s = step.get_ref();
        let alone = s.natives().is_empty()
            && s.capture.is_none()
            && s.when.is_none()
            && s.on.is_none()
            && s.repeat.is_none()
            && s.steps.is_none()
            && s.rollback.is_none()
            && s.commit.as_ref().is_some_and(|c| c.is_empty());
        if alone {
            Ok(())
        } else {
            Err(self.source.error(
                step.span(),
                "a commit point is { commit = {} } alone (it may carry only = { ... })",
            ))
        }
    }

    /// `{ rollback = {} }`, with at most `when` and `only` beside it, right after a native
    /// step of the same tx or group (`after`), which carries it.
    fn rollback_step(
        &self,
        step: &Spanned<StepSection>,
        after: Option<&mut Step>,
        visible: &[(String, usize)],
    ) -> Result<(), InputError> {
        let s = step.get_ref();
        let alone = s.natives().is_empty()
            && s.capture.is_none()
            && s.on.is_none()
            && s.commit.is_none()
            && s.repeat.is_none()
            && s.steps.is_none()
            && s.rollback.as_ref().is_some_and(|r| r.is_empty());
        if !alone {
            return Err(self.source.error(
                step.span(),
                "a rollback step is { rollback = {}, when = \"NAME\" } (it may carry when and only, nothing else)",
            ));
        }
        let when = match s.when.as_ref().map(|w| (w.get_ref(), w.span())) {
            Some((WhenForm::One(name), span)) => Some(self.when_slot(name, &span, visible)?),
            Some((WhenForm::All(_), span)) => {
                return Err(self.source.error(
                    span,
                    "a rollback step's when names one value: when = \"NAME\" or \"!NAME\"",
                ))
            }
            None => None,
        };
        match after {
            Some(prev) if prev.rollback_after.is_none() => {
                prev.rollback_after = Some(when);
                Ok(())
            }
            _ => Err(self
                .source
                .error(
                    step.span(),
                    "a rollback step follows a native step of its tx or repeat group (not another rollback step, a commit point, a repeat group or the start)",
                )
                .help("tx = [ { sql = \"SELECT ...\", capture = [\"found\"] }, { rollback = {}, when = \"!found\" }, ... ]")),
        }
    }

    /// `when = "NAME"` (or `"!NAME"`, negated): the slot of a `let` value or of a capture of
    /// an earlier step.
    fn when_slot(
        &self,
        when: &str,
        span: &Range<usize>,
        visible: &[(String, usize)],
    ) -> Result<When, InputError> {
        let written = when.trim();
        let (name, negate) = match written.strip_prefix('!') {
            Some(rest) => (rest.trim(), true),
            None => (written, false),
        };
        match visible.iter().rev().find(|(n, _)| n == name) {
            Some((_, slot)) => Ok(When {
                slot: *slot,
                negate,
            }),
            None => Err(self
                .source
                .error(
                    span.clone(),
                    format!("when = \"{name}\": no earlier step of this op captures '{name}' and the op has no let of that name"),
                )
                .help("capture = [\"NAME\"] on an earlier step, or let = { NAME = \"...\" } on the op")),
        }
    }
}
