//! `record.insert`, `record.read`, `record.update`, `record.scan`, `record.delete`: YCSB's
//! record operations, on the fields `[records]` declares.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::compiler::OpCompiler;
use crate::error::InputError;
use crate::vocab::{RecordOp, ValueKind};
use crate::workload::template::Template;

/// `record.insert`, `record.read`, `record.update`, `record.scan`, `record.delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordSection {
    insert: Option<Spanned<RecordArgs>>,
    read: Option<Spanned<RecordArgs>>,
    update: Option<Spanned<RecordArgs>>,
    scan: Option<Spanned<RecordArgs>>,
    delete: Option<Spanned<RecordArgs>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordArgs {
    key: Spanned<String>,
    /// Each field's value (insert, update): drawn once per field.
    value: Option<Spanned<String>>,
    /// One field's number (read, update, scan); without it, every field.
    field: Option<Spanned<String>>,
    /// How many records a scan reads.
    count: Option<Spanned<String>>,
}

impl OpCompiler<'_> {
    /// The record operations named in one table, in the order insert, read, update, scan,
    /// delete. A value template is drawn once per field; `[records]` says how many.
    pub(super) fn record(
        &mut self,
        r: &RecordSection,
        captures: &[(String, usize)],
    ) -> Result<Vec<RecordOp<Template>>, InputError> {
        let mut out = Vec::new();
        let verbs = [
            ("insert", &r.insert),
            ("read", &r.read),
            ("update", &r.update),
            ("scan", &r.scan),
            ("delete", &r.delete),
        ];
        for (verb, args) in verbs {
            let Some(a) = args else { continue };
            let Some(layout) = self.records else {
                return Err(self
                    .source
                    .error(
                        a.span(),
                        format!(
                            "record.{verb} needs the record's fields: declare them in [records]"
                        ),
                    )
                    .help("[records]\nfields = 10   # or \"{fieldcount}\""));
            };
            let args = a.get_ref();
            let wants_value = matches!(verb, "insert" | "update");
            let takes_field = matches!(verb, "read" | "update" | "scan");
            let wants_count = verb == "scan";
            let refuse = |c: &Self, what: &str, at: Range<usize>| {
                Err(c.source.error(at, format!("record.{verb} takes no {what}")))
            };
            match (&args.value, wants_value) {
                (Some(v), false) => return refuse(self, "value", v.span()),
                (None, true) => {
                    return Err(self.source.error(
                        a.span(),
                        format!("record.{verb} needs a value, drawn for each field: record.{verb} = {{ key = \"...\", value = \"{{string 100}}\" }}"),
                    ))
                }
                _ => {}
            }
            if let (Some(f), false) = (&args.field, takes_field) {
                return refuse(self, "field", f.span());
            }
            match (&args.count, wants_count) {
                (Some(c), false) => return refuse(self, "count", c.span()),
                (None, true) => {
                    return Err(self.source.error(
                        a.span(),
                        "record.scan needs a count: record.scan = { key = \"...\", count = \"{uniform 1..101}\" }",
                    ))
                }
                _ => {}
            }
            let key = self.key_with(&args.key, captures)?;
            let field = match &args.field {
                Some(f) => Some(self.number(f, captures, "field", "{uniform 0..fieldcount}")?),
                None => None,
            };
            let values = match &args.value {
                Some(v) => {
                    let t = self.template(v, captures)?;
                    let n = if field.is_some() { 1 } else { layout.fields };
                    vec![t; n]
                }
                None => Vec::new(),
            };
            out.push(match verb {
                "insert" => RecordOp::Insert { key, values },
                "read" => RecordOp::Read { key, field },
                "update" => RecordOp::Update { key, field, values },
                "scan" => {
                    let count = args.count.as_ref().expect("checked above");
                    RecordOp::Scan {
                        key,
                        count: self.number(count, captures, "count", "{uniform 1..101}")?,
                        field,
                    }
                }
                _ => RecordOp::Delete { key },
            });
        }
        Ok(out)
    }

    /// A template that draws a whole number: a literal, an integer parameter or a number
    /// generator.
    fn number(
        &mut self,
        text: &Spanned<String>,
        captures: &[(String, usize)],
        what: &str,
        example: &str,
    ) -> Result<Template, InputError> {
        let t = self.template(text, captures)?;
        let whole = match t.constant_text() {
            Some(c) => c.trim().parse::<u64>().is_ok(),
            None => t.kind() == ValueKind::Integer,
        };
        if !whole {
            return Err(self
                .source
                .error(
                    text.span(),
                    format!("{what} = \"{}\": expected a whole number", text.get_ref()),
                )
                .help(format!(
                    "a number, an integer parameter or a number generator such as {example}"
                )));
        }
        Ok(t)
    }
}
