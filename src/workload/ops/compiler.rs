//! The operation compiler's state, and what every operation shares: templates, keys,
//! captures, `let` values, weight, `only`, `on`, `retry` and `pause`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::compiled::{Let, OpKind, OpSpec, Pause, Retry, Step};
use super::sections::{Natives, OneOrMany, OpSection, PauseSection, RetrySection};
use super::sql::PendingTexts;
use crate::duration;
use crate::error::InputError;
use crate::vocab::{ErrorClass, NativeOp, RecordLayout, ValueKind, CAPTURES};
use crate::workload::template::Template;
use crate::workload::{Peer, Source};

/// Capture names as written, with their place in the file.
type CaptureNames = (Vec<String>, Range<usize>);

/// An operation's `let` values (slot, template) and their names with their slots.
type LetSlots = (Vec<Let>, Vec<(String, usize)>);

/// Compiles ops, numbering SQL statements and capture slots across the workload.
pub(in crate::workload) struct OpCompiler<'a> {
    pub source: &'a Source<'a>,
    pub params: &'a BTreeMap<String, toml::Value>,
    /// `[switches]`, for `only`.
    pub switches: &'a BTreeMap<String, Vec<String>>,
    /// `[peers]`, for `on`.
    pub peers: &'a [Peer],
    pub seq_slots: usize,
    pub statements: usize,
    pub capture_slots: usize,
    /// The kind of each `let` value's generator, by capture slot.
    pub let_kinds: BTreeMap<usize, ValueKind>,
    /// The range of each `let` value that is one `{uniform A..B}`, by capture slot.
    pub let_ranges: BTreeMap<usize, (i64, i64)>,
    /// Statements whose text names a `let` value, by the statement id of the text as
    /// written, until their step is made.
    pub pending_texts: BTreeMap<usize, PendingTexts>,
    /// Compiling the steps of a `repeat` group, where `{iteration}` has a value.
    pub in_repeat: bool,
    /// `[records]`: the fields of a record, for `record.*`.
    pub records: Option<RecordLayout>,
    /// `[grpc]`: the compiled `.proto` files, for `grpc`.
    pub protos: Option<&'a crate::workload::grpc::Protos>,
}

impl OpCompiler<'_> {
    pub fn template(
        &mut self,
        text: &Spanned<String>,
        captures: &[(String, usize)],
    ) -> Result<Template, InputError> {
        let t = Template::compile_with(text.get_ref(), self.params, captures, &mut self.seq_slots)
            .map_err(|e| {
                InputError::new(format!("in \"{}\": {}", text.get_ref(), e.message))
                    .at(self.source.at(text.span().start + 1 + e.offset))
            })?;
        self.check_iteration(&t, text.get_ref(), &text.span())?;
        // `"{aid}"` alone binds as the number its `let` draws, not as text.
        Ok(
            match t.single_capture().and_then(|s| self.let_kinds.get(&s)) {
                Some(kind) => t.with_kind(*kind),
                None => t,
            },
        )
    }

    /// A template from a string without its own position: errors point at `span`.
    pub(super) fn template_at(
        &mut self,
        text: &str,
        span: &Range<usize>,
        captures: &[(String, usize)],
    ) -> Result<Template, InputError> {
        let t = Template::compile_with(text, self.params, captures, &mut self.seq_slots).map_err(
            |e| {
                self.source
                    .error(span.clone(), format!("in \"{text}\": {}", e.message))
            },
        )?;
        self.check_iteration(&t, text, span)?;
        Ok(t)
    }

    /// `{iteration}` counts the passes of a `repeat` group: outside one it has no value.
    fn check_iteration(
        &self,
        t: &Template,
        text: &str,
        span: &Range<usize>,
    ) -> Result<(), InputError> {
        if self.in_repeat || !t.uses_iteration() {
            return Ok(());
        }
        Err(self
            .source
            .error(span.clone(), format!("in \"{text}\": {{iteration}} has a value only in the steps of a repeat group"))
            .help("tx = [ { repeat = \"10\", steps = [ { sql = ..., params = [\"{iteration}\"] } ] } ]"))
    }

    pub fn key(&mut self, text: &Spanned<String>) -> Result<Template, InputError> {
        self.key_with(text, &[])
    }

    /// A key that may use an operation's `let` values.
    pub(super) fn key_with(
        &mut self,
        text: &Spanned<String>,
        lets: &[(String, usize)],
    ) -> Result<Template, InputError> {
        let key = self.template(text, lets)?;
        if key.has_bytes() {
            return Err(self
                .source
                .error(text.span(), "a key cannot hold {bytes N}: keys are text")
                .help("use {string N} for random text in keys"));
        }
        Ok(key)
    }

    pub fn op(&mut self, op: &Spanned<OpSection>) -> Result<OpSpec, InputError> {
        let span = op.span();
        let op = op.get_ref();
        let name = op.name.get_ref().trim().to_string();
        let weight = self.weight(&op.weight)?;
        if weight == 0.0 {
            return Err(self
                .source
                .error(
                    op.name.span(),
                    format!("operation '{name}' has weight 0: it would never run"),
                )
                .help("give it a weight above 0, or leave it out"));
        }
        let (lets, visible) = self.lets(&op.lets)?;
        let mut kinds = Vec::new();
        if op.nop.is_some() {
            kinds.push(OpKind::Nop);
        }
        if op.connect.is_some() {
            kinds.push(OpKind::Connect);
        }
        if op.authenticate.is_some() {
            kinds.push(OpKind::Authenticate);
        }
        if let Some(kv) = &op.kv {
            self.kv(kv, &visible, &mut kinds)?;
        }
        let capture = self.capture_names(&op.capture)?;
        for native in self.natives(&op.natives(), &visible)? {
            let mut step = self.new_step(native, Vec::new());
            step.peer = self.peer(&op.on, &step.op)?;
            kinds.push(OpKind::Native(step));
        }
        if let (Some(on), false) = (&op.on, matches!(kinds.last(), Some(OpKind::Native(_)))) {
            return Err(self.source.error(
                on.span(),
                "on = \"PEER\" goes with one sql, redis or http operation, or on a step of a tx",
            ));
        }
        if let Some(tx) = &op.tx {
            kinds.push(self.tx(tx, visible.clone(), true)?);
        }
        if let Some(steps) = &op.steps {
            kinds.push(self.tx(steps, visible, false)?);
        }
        let mut kind = match kinds.len() {
            1 => kinds.remove(0),
            0 => {
                return Err(self.source.error(
                    span,
                    format!("operation '{name}' says nothing to do: add one of kv.put, kv.get, kv.update, kv.delete, record.*, sql, redis, ldap.*, http, memcached.*, tx, steps, connect, authenticate or nop = {{}}"),
                ))
            }
            n => return Err(self.source.error(span, format!("operation '{name}' has {n} operations: give each its own [[op]]"))),
        };
        if let Some((names, cspan)) = capture {
            match &mut kind {
                OpKind::Native(step) => {
                    self.check_capture(&step.op, &names, &cspan)?;
                    step.capture = self.slots(&names);
                }
                _ => return Err(self.source.error(cspan, CAPTURES)),
            }
        }
        let retry = match &op.retry {
            Some(r) => Some(self.retry(r)?),
            None => None,
        };
        let pause = match &op.pause {
            Some(p) => self.pause(p)?,
            None => None,
        };
        Ok(OpSpec {
            name,
            weight,
            lookup: kind.is_lookup(),
            kind,
            retry,
            lets,
            pause,
        })
    }

    /// `weight`: a number, or `"{param}"` naming a number parameter, at least 0 (0 leaves
    /// the op out); 1 when not given.
    pub fn weight(&self, w: &Option<Spanned<toml::Value>>) -> Result<f64, InputError> {
        let Some(w) = w else { return Ok(1.0) };
        let value = match w.get_ref() {
            toml::Value::Integer(n) => Some(*n as f64),
            toml::Value::Float(x) => Some(*x),
            toml::Value::String(s) => {
                let name = s
                    .trim()
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .trim();
                match self.params.get(name) {
                    Some(toml::Value::Integer(n)) => Some(*n as f64),
                    Some(toml::Value::Float(x)) => Some(*x),
                    _ => {
                        return Err(self.source.error(
                            w.span(),
                            format!("weight \"{s}\" must name a number parameter, like \"{{readproportion}}\""),
                        ))
                    }
                }
            }
            _ => None,
        };
        match value {
            Some(x) if x >= 0.0 && x.is_finite() => Ok(x),
            _ => Err(self.source.error(
                w.span(),
                format!(
                    "weight {} must be a number of at least 0 (0 leaves the operation out)",
                    w.get_ref()
                ),
            )),
        }
    }

    /// `let = { aid = "{uniform 1..100001}" }`: each name gets a capture slot that every
    /// template of the operation may use as `{aid}`. The values may use parameters, not
    /// each other.
    fn lets(
        &mut self,
        lets: &Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    ) -> Result<LetSlots, InputError> {
        let Some(lets) = lets else {
            return Ok((Vec::new(), Vec::new()));
        };
        let names: Vec<String> = lets.get_ref().keys().cloned().collect();
        self.capture_names(&Some(Spanned::new(lets.span(), names.clone())))?;
        let mut compiled = Vec::new();
        let mut visible = Vec::new();
        for (name, text) in lets.get_ref() {
            let template = self.template(text, &[])?;
            let slot = self.slots(std::slice::from_ref(name))[0];
            self.let_kinds.insert(slot, template.kind());
            if let Some(range) = template.uniform_range() {
                self.let_ranges.insert(slot, range);
            }
            compiled.push(Let {
                name: name.clone(),
                slot,
                template,
            });
            visible.push((name.clone(), slot));
        }
        Ok((compiled, visible))
    }

    /// Only operations that return values capture, each family says how many
    /// ([`NativeOp::check_capture`]).
    pub(super) fn check_capture<A>(
        &self,
        op: &NativeOp<A>,
        names: &[String],
        span: &Range<usize>,
    ) -> Result<(), InputError> {
        op.check_capture(names.len())
            .map_err(|message| self.source.error(span.clone(), message))
    }

    pub(super) fn slots(&mut self, names: &[String]) -> Vec<usize> {
        names
            .iter()
            .map(|_| {
                self.capture_slots += 1;
                self.capture_slots - 1
            })
            .collect()
    }

    pub(super) fn capture_names(
        &self,
        c: &Option<Spanned<Vec<String>>>,
    ) -> Result<Option<CaptureNames>, InputError> {
        let Some(c) = c else { return Ok(None) };
        for name in c.get_ref() {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            {
                return Err(self.source.error(
                    c.span(),
                    format!("capture name '{name}' must be letters, digits and _"),
                ));
            }
            if self.params.contains_key(name) {
                return Err(self.source.error(
                    c.span(),
                    format!("capture name '{name}' is also a parameter: rename one"),
                ));
            }
        }
        Ok(Some((c.get_ref().clone(), c.span())))
    }

    /// The native operations named in one table (an op or a tx step), each compiled by its
    /// family's file.
    pub(super) fn natives(
        &mut self,
        named: &Natives<'_>,
        captures: &[(String, usize)],
    ) -> Result<Vec<NativeOp<Template>>, InputError> {
        let mut out = Vec::new();
        if let Some(s) = named.sql {
            out.push(NativeOp::Sql(self.sql(s, captures)?));
        }
        if let Some(r) = named.redis {
            out.push(NativeOp::Redis(self.redis(r, captures)?));
        }
        if let Some(l) = named.ldap {
            out.extend(self.ldap(l, captures)?.into_iter().map(NativeOp::Ldap));
        }
        if let Some(h) = named.http {
            out.push(NativeOp::Http(self.http(h, captures)?));
        }
        if let Some(r) = named.record {
            out.extend(self.record(r, captures)?.into_iter().map(NativeOp::Record));
        }
        if let Some(g) = named.grpc {
            out.push(NativeOp::Grpc(self.grpc(g, captures)?));
        }
        if let Some(m) = named.memcached {
            out.extend(
                self.memcached(m, captures)?
                    .into_iter()
                    .map(NativeOp::Memcached),
            );
        }
        Ok(out)
    }

    /// A step of `op`, with the statements its text names (see `statement_texts`).
    pub(super) fn new_step(&mut self, op: NativeOp<Template>, capture: Vec<usize>) -> Step {
        let mut step = Step::new(op, capture);
        step.texts = self.texts_of(&step.op);
        step
    }

    /// `on = "NAME"`: the index of that peer, which must run `op`'s family.
    pub(super) fn peer<A>(
        &self,
        on: &Option<Spanned<String>>,
        op: &NativeOp<A>,
    ) -> Result<Option<usize>, InputError> {
        let Some(on) = on else { return Ok(None) };
        let Some(i) = self.peers.iter().position(|p| &p.name == on.get_ref()) else {
            let known: Vec<&str> = self.peers.iter().map(|p| p.name.as_str()).collect();
            return Err(self
                .source
                .error(
                    on.span(),
                    format!("on = \"{}\": no such peer", on.get_ref()),
                )
                .help(if known.is_empty() {
                    "declare it in [peers]: NAME = \"http://...\" or \"redis://...\"".to_string()
                } else {
                    format!("the peers are: {}", known.join(", "))
                }));
        };
        let peer = &self.peers[i];
        if peer.family.is_some_and(|f| f != op.family()) {
            return Err(self.source.error(
                on.span(),
                format!(
                    "peer '{}' is a {}:// system and does not run {} steps",
                    peer.name,
                    peer.family.map_or("", |f| f.name()),
                    op.family().name()
                ),
            ));
        }
        Ok(Some(i))
    }

    /// `only = { SWITCH = "value" | ["a", "b"], ... }`: whether every named switch has one
    /// of the listed values.
    pub fn keeps(
        &self,
        only: &Option<Spanned<BTreeMap<String, OneOrMany>>>,
    ) -> Result<bool, InputError> {
        let Some(only) = only else { return Ok(true) };
        let mut keep = true;
        for (name, listed) in only.get_ref() {
            let Some(choices) = self.switches.get(name) else {
                return Err(self.source.error(
                    only.span(),
                    format!("only: '{name}' is not a switch: declare it in [switches]"),
                ));
            };
            let listed: Vec<&String> = listed.0.iter().collect();
            if let Some(bad) = listed.iter().find(|v| !choices.contains(v)) {
                return Err(self.source.error(
                    only.span(),
                    format!(
                        "only: '{bad}' is not a value of switch '{name}' (one of {})",
                        choices.join(", ")
                    ),
                ));
            }
            let value = match self.params.get(name) {
                Some(toml::Value::String(v)) => v,
                _ => &choices[0],
            };
            keep &= listed.contains(&value);
        }
        Ok(keep)
    }

    /// `pause = { keying = "D", think = "D", only = { ... } }`: nothing when `only` leaves
    /// it out.
    fn pause(&self, p: &Spanned<PauseSection>) -> Result<Option<Pause>, InputError> {
        let a = p.get_ref();
        if !self.keeps(&a.only)? {
            return Ok(None);
        }
        let time = |d: &Option<Spanned<String>>, what: &str| match d {
            Some(d) => duration::parse(d.get_ref(), what).map_err(|e| InputError {
                location: Some(self.source.at(d.span().start)),
                ..e
            }),
            None => Ok(Duration::ZERO),
        };
        Ok(Some(Pause {
            keying: time(&a.keying, "pause keying")?,
            think: time(&a.think, "pause think")?,
        }))
    }

    fn retry(&self, r: &Spanned<RetrySection>) -> Result<Retry, InputError> {
        let a = r.get_ref();
        let mut on = Vec::new();
        for class in &a.on {
            match ErrorClass::ALL.iter().find(|c| c.name() == class.get_ref()) {
                Some(c) => on.push(*c),
                None => {
                    return Err(self.source.error(
                        class.span(),
                        format!(
                            "unknown error class '{}': expected {}",
                            class.get_ref(),
                            ErrorClass::ALL
                                .iter()
                                .map(|c| c.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
            }
        }
        let backoff = match &a.backoff {
            Some(b) => duration::parse(b.get_ref(), "retry backoff").map_err(|e| InputError {
                location: Some(self.source.at(b.span().start)),
                ..e
            })?,
            None => Duration::from_millis(1),
        };
        Ok(Retry {
            on,
            max: a.max.unwrap_or(3),
            backoff,
        })
    }
}
