//! `redis = ["COMMAND", "ARG", ...]`: a command as an array of templates.

use toml::Spanned;

use super::compiler::OpCompiler;
use crate::error::InputError;
use crate::vocab::RedisOp;
use crate::workload::template::Template;

impl OpCompiler<'_> {
    /// `redis = [...]`: the command's name and arguments, each a template.
    pub(super) fn redis(
        &mut self,
        r: &Spanned<Vec<Spanned<String>>>,
        captures: &[(String, usize)],
    ) -> Result<RedisOp<Template>, InputError> {
        if r.get_ref().is_empty() {
            return Err(self.source.error(
                r.span(),
                "redis needs a command: redis = [\"GET\", \"loadrig:k1\"]",
            ));
        }
        let args = r
            .get_ref()
            .iter()
            .map(|a| self.template(a, captures))
            .collect::<Result<_, _>>()?;
        Ok(RedisOp { args })
    }
}
