//! An experiment's file (`loadrig experiment WORKLOAD --design FILE`): its factors, and
//! optionally its fraction, replicates, responses, scale and settings URL (the command
//! line's flags win). A mistake is reported at its file:line:column.
//!
//! ```toml
//! replicates = 3
//! fraction = ["D=ABC"]
//! responses = ["throughput", "insert.p99"]
//! scale = "log"
//! settings_url = "${LOADRIG_PG_SUPER_URL}"
//!
//! [[factor]]
//! name = "clients"
//! levels = [4, 16]
//!
//! [[factor]]
//! name = "server.synchronous_commit"
//! levels = ["on", "off"]
//! apply = ["ALTER SYSTEM SET synchronous_commit = '{value}'", "SELECT pg_reload_conf()"]
//! ```

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{FactorInput, Inputs};
use crate::analysis::experiment::Scale;
use crate::error::InputError;
use crate::workload::Source;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSection {
    #[serde(default)]
    factor: Vec<FactorSection>,
    fraction: Option<Spanned<Vec<String>>>,
    replicates: Option<Spanned<i64>>,
    responses: Option<Vec<String>>,
    scale: Option<Spanned<String>>,
    pool: Option<Spanned<i64>>,
    settings_url: Option<String>,
    seed: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FactorSection {
    name: Spanned<String>,
    levels: Spanned<Vec<toml::Value>>,
    #[serde(default)]
    apply: Vec<String>,
}

/// A level as text: strings as they are, numbers and booleans as TOML writes them.
fn level_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Read the file into `inputs` (what it gives replaces the defaults; the flags are applied
/// after, by the caller).
pub fn read_file(path: &Path, inputs: &mut Inputs) -> Result<(), InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(format!("--design {}: {e}", path.display())))?;
    let name = path.display().to_string();
    let source = Source {
        path: &name,
        text: &text,
    };
    let file: FileSection = toml::from_str(&text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        InputError::new(e.message().trim().to_string())
            .at(source.at(at))
            .help("an experiment file holds [[factor]] tables (name, levels, apply) and replicates, fraction, responses, scale, pool, settings_url, seed (docs/experiment.md)")
    })?;
    for f in file.factor {
        let mut levels = Vec::new();
        for v in f.levels.get_ref() {
            levels.push(level_text(v).ok_or_else(|| {
                source.error(
                    f.levels.span(),
                    "a level is a string, a number or true/false",
                )
            })?);
        }
        inputs.factors.push(FactorInput {
            name: f.name.get_ref().trim().to_string(),
            levels,
            apply: f.apply,
            at: Some(source.at(f.name.span().start)),
        });
        if inputs.factors.last().is_some_and(|f| f.levels.len() < 2) {
            // Said where the levels are, before the design says it without a place.
            let last = inputs.factors.last().expect("pushed");
            return Err(source.error(
                f.levels.span(),
                format!(
                    "factor {} has {} level: a factor needs at least two levels to have an effect",
                    last.name,
                    last.levels.len()
                ),
            ).help("give it two or more levels, like levels = [\"on\", \"off\"], or leave the factor out"));
        }
    }
    if let Some(fraction) = file.fraction {
        inputs.fraction_at = Some(source.at(fraction.span().start));
        inputs.fraction = fraction.into_inner();
    }
    if let Some(r) = file.replicates {
        inputs.replicates = usize::try_from(*r.get_ref())
            .ok()
            .filter(|r| *r >= 1)
            .ok_or_else(|| {
                source.error(
                    r.span(),
                    "replicates: expected a whole number of at least 1",
                )
            })?;
    }
    if let Some(responses) = file.responses {
        inputs.responses = responses;
    }
    if let Some(scale) = file.scale {
        inputs.scale =
            parse_scale(scale.get_ref()).map_err(|e| e.at(source.at(scale.span().start)))?;
    }
    if let Some(pool) = file.pool {
        inputs.pool = Some(
            usize::try_from(*pool.get_ref())
                .ok()
                .filter(|p| *p >= 2)
                .ok_or_else(|| {
                    source.error(
                        pool.span(),
                        "pool: expected the order of the interactions to pool, 2 or more",
                    )
                })?,
        );
    }
    if file.settings_url.is_some() {
        inputs.settings_url = file.settings_url;
    }
    if file.seed.is_some() {
        inputs.seed = file.seed;
    }
    Ok(())
}

pub fn parse_scale(text: &str) -> Result<Scale, InputError> {
    match text {
        "linear" => Ok(Scale::Linear),
        "log" => Ok(Scale::Log),
        other => Err(
            InputError::new(format!("scale '{other}': expected linear or log"))
                .help("linear when effects add (the default), log when they multiply"),
        ),
    }
}
