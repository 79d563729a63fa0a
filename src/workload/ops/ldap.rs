//! `ldap.search`, `ldap.bind`, `ldap.add`, `ldap.modify`, `ldap.delete`.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::compiler::OpCompiler;
use super::sections::OneOrMany;
use crate::error::InputError;
use crate::vocab::{LdapOp, Scope};
use crate::workload::template::Template;

/// `ldap.search = {...}`, `ldap.bind`, `ldap.add`, `ldap.modify`, `ldap.delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LdapSection {
    search: Option<Spanned<SearchArgs>>,
    bind: Option<Spanned<BindArgs>>,
    add: Option<Spanned<EntryArgs>>,
    modify: Option<Spanned<ModifyArgs>>,
    delete: Option<Spanned<DnArgs>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    base: Spanned<String>,
    scope: Option<Spanned<String>>,
    filter: Option<Spanned<String>>,
    #[serde(default)]
    attrs: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BindArgs {
    dn: Spanned<String>,
    password: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryArgs {
    dn: Spanned<String>,
    attrs: Spanned<BTreeMap<String, OneOrMany>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModifyArgs {
    dn: Spanned<String>,
    replace: Spanned<BTreeMap<String, OneOrMany>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DnArgs {
    dn: Spanned<String>,
}

impl OpCompiler<'_> {
    /// The LDAP operations named in one table, in the order search, bind, add, modify, delete.
    pub(super) fn ldap(
        &mut self,
        l: &LdapSection,
        captures: &[(String, usize)],
    ) -> Result<Vec<LdapOp<Template>>, InputError> {
        let mut out = Vec::new();
        if let Some(s) = &l.search {
            let a = s.get_ref();
            let scope = match a.scope.as_ref().map(|s| s.get_ref().as_str()) {
                None | Some("sub") => Scope::Sub,
                Some("one") => Scope::One,
                Some("base") => Scope::Base,
                Some(other) => {
                    let at = a.scope.as_ref().map_or(s.span(), |s| s.span());
                    return Err(self
                        .source
                        .error(at, format!("scope '{other}': expected base, one or sub")));
                }
            };
            let filter = match &a.filter {
                Some(f) => self.template(f, captures)?,
                None => self.template_at("(objectClass=*)", &s.span(), captures)?,
            };
            out.push(LdapOp::Search {
                base: self.template(&a.base, captures)?,
                scope,
                filter,
                attrs: a.attrs.clone(),
            });
        }
        if let Some(b) = &l.bind {
            let a = b.get_ref();
            out.push(LdapOp::Bind {
                dn: self.template(&a.dn, captures)?,
                password: self.template(&a.password, captures)?,
            });
        }
        if let Some(e) = &l.add {
            let a = e.get_ref();
            out.push(LdapOp::Add {
                dn: self.template(&a.dn, captures)?,
                attrs: self.attrs(&a.attrs, captures)?,
            });
        }
        if let Some(m) = &l.modify {
            let a = m.get_ref();
            out.push(LdapOp::Modify {
                dn: self.template(&a.dn, captures)?,
                replace: self.attrs(&a.replace, captures)?,
            });
        }
        if let Some(d) = &l.delete {
            out.push(LdapOp::Delete {
                dn: self.template(&d.get_ref().dn, captures)?,
            });
        }
        Ok(out)
    }

    fn attrs(
        &mut self,
        attrs: &Spanned<BTreeMap<String, OneOrMany>>,
        captures: &[(String, usize)],
    ) -> Result<Vec<(String, Vec<Template>)>, InputError> {
        let span = attrs.span();
        let mut out = Vec::new();
        for (name, values) in attrs.get_ref() {
            let compiled = values
                .0
                .iter()
                .map(|v| self.template_at(v, &span, captures))
                .collect::<Result<_, _>>()?;
            out.push((name.clone(), compiled));
        }
        Ok(out)
    }
}
