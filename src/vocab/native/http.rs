//! `http`: one request.

use super::{OpFamily, Piece};
use crate::vocab::StatementKind;

/// An HTTP request: `expect`, the status that counts as success (else any below 400).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOp<A> {
    pub method: String,
    pub path: A,
    pub headers: Vec<(String, A)>,
    pub body: Option<A>,
    pub expect: Option<u16>,
}

impl<A> OpFamily<A> for HttpOp<A> {
    type With<B> = HttpOp<B>;

    fn label(&self) -> &'static str {
        "http"
    }

    /// The path, the header values, the body.
    fn map_args<B>(self, f: &mut impl FnMut(A) -> B) -> HttpOp<B> {
        let path = f(self.path);
        let headers = self.headers.into_iter().map(|(k, v)| (k, f(v))).collect();
        HttpOp {
            method: self.method,
            path,
            headers,
            body: self.body.map(f),
            expect: self.expect,
        }
    }

    /// `POST /path name=value body=...`.
    fn pieces(self) -> Vec<Piece<A>> {
        let mut pieces = vec![Piece::Arg(format!("{} ", self.method), self.path)];
        for (name, value) in self.headers {
            pieces.push(Piece::Arg(format!("{name}="), value));
        }
        pieces.extend(self.body.map(|b| Piece::Arg("body=".into(), b)));
        pieces
    }

    /// By the method.
    fn statement_kind(&self, _: impl Fn(&A) -> Option<String>) -> StatementKind {
        match self.method.to_ascii_uppercase().as_str() {
            "GET" | "HEAD" => StatementKind::Read,
            "OPTIONS" => StatementKind::Other,
            _ => StatementKind::Write,
        }
    }

    /// One value, the response body.
    fn check_capture(&self, names: usize) -> Result<(), String> {
        if names <= 1 {
            Ok(())
        } else {
            Err(format!(
                "http captures one value, the response body: {names} names"
            ))
        }
    }
}
