//! `kv.put`, `kv.get`, `kv.update`, `kv.delete`: the operations every target runs.

use serde::Deserialize;
use toml::Spanned;

use super::compiled::OpKind;
use super::compiler::OpCompiler;
use crate::error::InputError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KvSection {
    put: Option<Spanned<KvArgs>>,
    get: Option<Spanned<KvArgs>>,
    update: Option<Spanned<KvArgs>>,
    delete: Option<Spanned<KvArgs>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KvArgs {
    key: Spanned<String>,
    value: Option<Spanned<String>>,
}

impl OpCompiler<'_> {
    pub(super) fn kv(
        &mut self,
        kv: &KvSection,
        lets: &[(String, usize)],
        kinds: &mut Vec<OpKind>,
    ) -> Result<(), InputError> {
        let no_value = |c: &Self, a: &Spanned<KvArgs>, verb: &str| match &a.get_ref().value {
            Some(v) => Err(c
                .source
                .error(v.span(), format!("kv.{verb} takes no value"))),
            None => Ok(()),
        };
        if let Some(a) = &kv.get {
            no_value(self, a, "get")?;
            kinds.push(OpKind::Get {
                key: self.key_with(&a.get_ref().key, lets)?,
            });
        }
        if let Some(a) = &kv.delete {
            no_value(self, a, "delete")?;
            kinds.push(OpKind::Delete {
                key: self.key_with(&a.get_ref().key, lets)?,
            });
        }
        for (verb, args) in [("put", &kv.put), ("update", &kv.update)] {
            let Some(a) = args else { continue };
            let key = self.key_with(&a.get_ref().key, lets)?;
            let Some(v) = &a.get_ref().value else {
                return Err(self.source.error(
                    a.span(),
                    format!("kv.{verb} needs a value: kv.{verb} = {{ key = \"...\", value = \"{{bytes 100}}\" }}"),
                ));
            };
            let value = self.template(v, lets)?;
            kinds.push(if verb == "put" {
                OpKind::Put { key, value }
            } else {
                OpKind::Update { key, value }
            });
        }
        Ok(())
    }
}
