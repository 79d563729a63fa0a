//! `[[figure]]`: figures a workload declares, computed after the run from the measured
//! operation counts (TPC-C's tpmC: New-Order transactions completed per minute).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::template::Template;
use super::Source;
use crate::error::InputError;

/// `[[figure]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FigureSection {
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    /// The operations whose completed (successful) count it is.
    ops: Spanned<Vec<Spanned<String>>>,
    /// `second`, `minute` or `hour`.
    per: Spanned<String>,
    /// A product or quotient of numbers and `{parameters}`: `"12.86*{warehouses}/100"`.
    divide_by: Option<Spanned<String>>,
    unit: Option<String>,
}

/// A compiled `[[figure]]`: completed operations of `ops` per `per_s` seconds of measured
/// time, divided by `divisor`.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureSpec {
    pub name: String,
    pub description: String,
    pub ops: Vec<String>,
    /// `second`, `minute` or `hour`, as written.
    pub per: String,
    pub per_s: f64,
    pub divisor: f64,
    pub unit: String,
}

impl FigureSpec {
    /// Its value from the number of completed operations over `measured_s` seconds.
    pub fn value(&self, completed: u64, measured_s: f64) -> f64 {
        if measured_s > 0.0 {
            completed as f64 / measured_s * self.per_s / self.divisor
        } else {
            0.0
        }
    }
}

pub(super) fn compile(
    source: &Source<'_>,
    params: &BTreeMap<String, toml::Value>,
    op_names: &[&str],
    sections: &[Spanned<FigureSection>],
) -> Result<Vec<FigureSpec>, InputError> {
    let mut out: Vec<FigureSpec> = Vec::new();
    for section in sections {
        let f = section.get_ref();
        let name = f.name.get_ref().trim().to_string();
        if name.is_empty() || out.iter().any(|o| o.name == name) {
            return Err(source.error(
                f.name.span(),
                format!("figure name '{name}' is empty or used twice"),
            ));
        }
        if f.ops.get_ref().is_empty() {
            return Err(source.error(
                f.ops.span(),
                "a figure counts at least one operation: ops = [\"NAME\", ...]",
            ));
        }
        for op in f.ops.get_ref() {
            if !op_names.contains(&op.get_ref().as_str()) {
                return Err(source
                    .error(
                        op.span(),
                        format!("figure '{name}': no operation '{}'", op.get_ref()),
                    )
                    .help(format!("the operations are: {}", op_names.join(", "))));
            }
        }
        let per_s = match f.per.get_ref().as_str() {
            "second" => 1.0,
            "minute" => 60.0,
            "hour" => 3600.0,
            other => {
                return Err(source.error(
                    f.per.span(),
                    format!("per = \"{other}\": expected second, minute or hour"),
                ))
            }
        };
        let divisor = match &f.divide_by {
            Some(d) => divisor(source, params, d)?,
            None => 1.0,
        };
        out.push(FigureSpec {
            name,
            description: f.description.clone(),
            ops: f
                .ops
                .get_ref()
                .iter()
                .map(|o| o.get_ref().clone())
                .collect(),
            per: f.per.get_ref().clone(),
            per_s,
            divisor,
            unit: f
                .unit
                .clone()
                .unwrap_or_else(|| format!("per {}", f.per.get_ref())),
        });
    }
    Ok(out)
}

/// `divide_by`: numbers joined by `*` and `/` after `{parameters}` are replaced; positive
/// and finite.
fn divisor(
    source: &Source<'_>,
    params: &BTreeMap<String, toml::Value>,
    text: &Spanned<String>,
) -> Result<f64, InputError> {
    let fail = |why: String| {
        source
            .error(text.span(), format!("divide_by = \"{}\": {why}", text.get_ref()))
            .help("numbers and {parameters} joined by * and /: divide_by = \"12.86*{warehouses}/100\"")
    };
    let t = Template::compile(text.get_ref(), params, &mut 0).map_err(|e| fail(e.message))?;
    let Some(expr) = t.constant_text() else {
        return Err(fail("generators have no place here".into()));
    };
    let mut value = 1.0;
    let mut op = '*';
    let mut rest = expr.as_str();
    loop {
        let end = rest.find(['*', '/']).unwrap_or(rest.len());
        let number: f64 = rest[..end]
            .trim()
            .parse()
            .map_err(|_| fail(format!("'{}' is not a number", rest[..end].trim())))?;
        value = if op == '*' {
            value * number
        } else {
            value / number
        };
        if end == rest.len() {
            break;
        }
        op = rest.as_bytes()[end] as char;
        rest = &rest[end + 1..];
    }
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(fail(format!("it is {value}; it must be above zero")))
    }
}
