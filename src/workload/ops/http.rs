//! `http = { method, path, headers, body, expect }`: one request.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::compiler::OpCompiler;
use crate::error::InputError;
use crate::vocab::HttpOp;
use crate::workload::template::Template;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HttpArgs {
    method: Option<String>,
    path: Spanned<String>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    body: Option<Spanned<String>>,
    expect: Option<u16>,
}

impl OpCompiler<'_> {
    /// `http = { ... }`: a request with the methods loadrig sends, a path from `/`.
    pub(super) fn http(
        &mut self,
        h: &Spanned<HttpArgs>,
        captures: &[(String, usize)],
    ) -> Result<HttpOp<Template>, InputError> {
        let a = h.get_ref();
        let method = a
            .method
            .clone()
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase();
        if ![
            "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND", "MKCOL",
        ]
        .contains(&method.as_str())
        {
            return Err(self.source.error(
                h.span(),
                format!("http method '{method}' is not one loadrig sends"),
            ));
        }
        if !a.path.get_ref().starts_with('/') {
            return Err(self.source.error(
                a.path.span(),
                "an http path starts with /, like \"/static/hello.txt\"",
            ));
        }
        if a.expect.is_some_and(|s| !(100..=599).contains(&s)) {
            return Err(self
                .source
                .error(h.span(), "expect is an HTTP status from 100 to 599"));
        }
        let headers = a
            .headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.template(v, captures)?)))
            .collect::<Result<_, InputError>>()?;
        let body = match &a.body {
            Some(b) => Some(self.template(b, captures)?),
            None => None,
        };
        Ok(HttpOp {
            method,
            path: self.template(&a.path, captures)?,
            headers,
            body,
            expect: a.expect,
        })
    }
}
