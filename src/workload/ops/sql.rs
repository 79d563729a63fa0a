//! `sql`: a statement with bound parameters; the setup statements; statements whose text
//! names a `let` value, written once per value.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::compiled::StatementTexts;
use super::compiler::OpCompiler;
use crate::error::InputError;
use crate::vocab::{NativeOp, SqlOp, ValueKind};
use crate::workload::template::Template;

/// `sql = { query = "...", params = [...] }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SqlArgs {
    query: Spanned<String>,
    #[serde(default)]
    params: Vec<Spanned<String>>,
}

/// `sql = "STATEMENT"` (no parameters) or `sql = { query = "...", params = [...] }`.
#[derive(Debug)]
pub(super) enum SqlForm {
    Text(String),
    Table(SqlArgs),
}

impl SqlForm {
    /// As a table; the text form's query spans the whole value.
    fn args(&self, span: Range<usize>) -> SqlArgs {
        match self {
            SqlForm::Text(query) => SqlArgs {
                query: Spanned::new(span, query.clone()),
                params: Vec::new(),
            },
            SqlForm::Table(a) => SqlArgs {
                query: a.query.clone(),
                params: a.params.clone(),
            },
        }
    }
}

impl<'de> Deserialize<'de> for SqlForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting = "a statement, or a table { query = \"...\", params = [...] }";
        crate::workload::string_or_table(d, expecting, SqlForm::Text, SqlForm::Table)
    }
}

/// A setup statement, borrowed from the workload file.
pub(in crate::workload) struct SqlArgsRef<'a> {
    pub query: &'a Spanned<String>,
}

/// What a statement whose text names a `let` value compiles to, before its step exists:
/// the let's slot, its lowest value, and each value's statement id and text.
pub(super) type PendingTexts = (usize, i64, Vec<(usize, String)>);

/// At most this many statements are written for one step whose text names a `let` value.
const MAX_TEXTS: i64 = 1000;

impl OpCompiler<'_> {
    /// A setup statement: SQL without bound parameters, where `{NAME}` is replaced by the
    /// workload parameter NAME (`{{` and `}}` are braces), and `{iteration}` by the pass of
    /// the setup group it is in.
    pub fn setup_sql(
        &mut self,
        s: &SqlArgsRef<'_>,
        pass: Option<u64>,
    ) -> Result<NativeOp<ValueKind>, InputError> {
        let mut slots = 0;
        let template =
            Template::compile(s.query.get_ref(), self.params, &mut slots).map_err(|e| {
                InputError::new(format!("in \"{}\": {}", s.query.get_ref(), e.message))
                    .at(self.source.at(s.query.span().start + 1 + e.offset))
            })?;
        let text = match pass {
            Some(pass) => template.constant_text_at(pass),
            None => template.constant_text(),
        };
        let Some(query) = text else {
            return Err(self
                .source
                .error(s.query.span(), "setup statements may use {parameters} but no generators: they run once, before the load ({iteration} only in a repeat group)")
                .help("draw values in the operations, or generate rows in SQL (generate_series, a recursive CTE)"));
        };
        self.statements += 1;
        Ok(NativeOp::Sql(SqlOp {
            id: self.statements - 1,
            query,
            params: Vec::new(),
        }))
    }

    /// `sql = ...`: the statement, numbered, with its parameters.
    pub(super) fn sql(
        &mut self,
        form: &Spanned<SqlForm>,
        captures: &[(String, usize)],
    ) -> Result<SqlOp<Template>, InputError> {
        let s = &form.get_ref().args(form.span());
        if s.query.get_ref().trim().is_empty() {
            return Err(self.source.error(s.query.span(), "the query is empty"));
        }
        let params = s
            .params
            .iter()
            .map(|p| self.template(p, captures))
            .collect::<Result<_, _>>()?;
        self.statements += 1;
        let id = self.statements - 1;
        if let Some(texts) = self.statement_texts(&s.query, captures)? {
            self.pending_texts.insert(id, texts);
        }
        Ok(SqlOp {
            id,
            query: s.query.get_ref().clone(),
            params,
        })
    }

    /// `{NAME}` in a statement's text, NAME a `let` value of the operation drawn by one
    /// `{uniform A..B}`: the statement is written once per value (at most [`MAX_TEXTS`]),
    /// each prepared on its own, so a drawn number names an object (sysbench's
    /// `sbtest{t}`) without a drawn string ever being spliced into SQL. Other braces are
    /// the statement's own text.
    fn statement_texts(
        &mut self,
        query: &Spanned<String>,
        visible: &[(String, usize)],
    ) -> Result<Option<PendingTexts>, InputError> {
        let text = query.get_ref();
        let at = |offset: usize| self.source.at(query.span().start + 1 + offset);
        let mut bound: Option<(&str, usize)> = None;
        let mut from = 0;
        while let Some(open) = text[from..].find('{').map(|i| from + i) {
            let Some(close) = text[open..].find('}').map(|i| open + i) else {
                break;
            };
            from = close + 1;
            let name = &text[open + 1..close];
            let Some((_, slot)) = visible.iter().find(|(n, _)| n == name) else {
                continue;
            };
            if bound.is_some_and(|(b, _)| b != name) {
                return Err(InputError::new(format!("in \"{text}\": a statement's text may name one let value; '{name}' is a second")).at(at(open)));
            }
            if !self.let_ranges.contains_key(slot) {
                return Err(InputError::new(format!("in \"{text}\": '{{{name}}}' in a statement's text must be a let value drawn by {{uniform A..B}}, so that the statement can be written for each value"))
                    .at(at(open))
                    .help("bind other values as parameters: $1 with params = [\"{value}\"]"));
            }
            bound = Some((name, *slot));
        }
        let Some((name, slot)) = bound else {
            return Ok(None);
        };
        let (lo, hi) = self.let_ranges[&slot];
        if hi - lo > MAX_TEXTS {
            return Err(InputError::new(format!("in \"{text}\": '{{{name}}}' takes {} values; a statement's text may name a let value of at most {MAX_TEXTS}", hi - lo))
                .at(at(text.find('{').unwrap_or(0))));
        }
        let placeholder = format!("{{{name}}}");
        let texts = (lo..hi)
            .map(|v| {
                self.statements += 1;
                (
                    self.statements - 1,
                    text.replace(&placeholder, &v.to_string()),
                )
            })
            .collect();
        Ok(Some((slot, lo, texts)))
    }

    /// The statements written for each value of the `let` value a SQL step's text names,
    /// when it names one.
    pub(super) fn texts_of(&mut self, op: &NativeOp<ValueKind>) -> Option<Box<StatementTexts>> {
        let NativeOp::Sql(SqlOp { id, params, .. }) = op else {
            return None;
        };
        let (slot, lo, texts) = self.pending_texts.remove(id)?;
        let ops = texts
            .into_iter()
            .map(|(id, query)| {
                NativeOp::Sql(SqlOp {
                    id,
                    query,
                    params: params.clone(),
                })
            })
            .collect();
        Some(Box::new(StatementTexts { slot, lo, ops }))
    }
}
