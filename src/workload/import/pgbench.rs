//! `loadrig import pgbench`: a pgbench custom script as a workload file. Each `\set` becomes
//! a `let` value (drawn once per transaction, as pgbench draws it once per script), each
//! `:name` a statement parameter, BEGIN … END a `tx`. What the workload language cannot
//! express is refused with the script's line and column, never approximated.

use std::collections::BTreeMap;

use crate::error::InputError;

const SUPPORTED: &str = "supported: \\set NAME with random(a, b), random_zipfian(a, b, s), random_gaussian(a, b, p), random_exponential(a, b, p) (plus or minus constants after the call) or integer arithmetic (+ - * and constant / %) on numbers, :scale and earlier \\set constants; :NAME in SQL (:scale, :client_id, \\set names); SELECT … \\gset [prefix] or \\aset; \\if/\\elif :NAME (or NOT :NAME, !:NAME), \\else, \\endif around statements of a transaction; BEGIN; … END; (or COMMIT;) around the statements, or statements without it (each commits on its own); \\startpipeline … \\endpipeline around statements without BEGIN (loadrig's `pipeline`); \\sleep N [us|ms|s] as the script's last command";

/// An integer polynomial: a sum of coefficient × product of parameters, which is what a
/// generator's bounds accept (`100000*scale+1`).
#[derive(Debug, Clone, PartialEq)]
struct Poly(BTreeMap<Vec<String>, i64>);

impl Poly {
    fn constant(n: i64) -> Poly {
        Poly(BTreeMap::from([(Vec::new(), n)]))
    }
    fn param(name: &str) -> Poly {
        Poly(BTreeMap::from([(vec![name.to_string()], 1)]))
    }
    fn as_constant(&self) -> Option<i64> {
        self.0
            .iter()
            .all(|(k, _)| k.is_empty())
            .then(|| self.0.values().sum())
    }
    fn add(mut self, other: &Poly, sign: i64) -> Poly {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_insert(0) += sign * v;
        }
        self.0.retain(|_, v| *v != 0);
        self
    }
    fn mul(&self, other: &Poly) -> Poly {
        let mut out = Poly(BTreeMap::new());
        for (ka, va) in &self.0 {
            for (kb, vb) in &other.0 {
                let mut k: Vec<String> = ka.iter().chain(kb).cloned().collect();
                k.sort();
                let term = Poly(BTreeMap::from([(k, va * vb)]));
                out = out.add(&term, 1);
            }
        }
        out
    }
    fn render(&self) -> String {
        if self.0.is_empty() {
            return "0".into();
        }
        // Parameter terms first, the constant last: `100000*scale+1`.
        let terms: Vec<String> = self
            .0
            .iter()
            .filter(|(k, _)| !k.is_empty())
            .chain(self.0.iter().filter(|(k, _)| k.is_empty()))
            .map(|(k, v)| match (k.is_empty(), *v) {
                (true, v) => v.to_string(),
                (false, 1) => k.join("*"),
                (false, v) => format!("{v}*{}", k.join("*")),
            })
            .collect();
        terms.join("+")
    }
}

/// A script variable: a `\set` constant expression or random draw (its template), or a
/// column a `\gset` fetched (a capture of the transaction).
#[derive(Debug, Clone)]
enum Var {
    Constant(Poly),
    Random(String),
    Fetched,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Float(String),
    Var(String),
    Ident(String),
    Sym(char),
}

/// Where the script is: its name and the current line, for errors.
struct Place<'a> {
    script: &'a str,
    line: usize,
}

impl Place<'_> {
    fn error(&self, col: usize, message: impl Into<String>) -> InputError {
        InputError::new(message)
            .at(format!("{}:{}:{}", self.script, self.line, col))
            .help(SUPPORTED)
    }
}

fn tokenize(text: &str, col0: usize, at: &Place) -> Result<Vec<(usize, Tok)>, InputError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word_end = |mut j: usize| {
        while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
            j += 1;
        }
        j
    };
    while i < chars.len() {
        let c = chars[i];
        let col = col0 + i;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let s: String = chars[i..j].iter().collect();
            let tok = match s.parse::<i64>() {
                Ok(n) => Tok::Int(n),
                Err(_) if s.parse::<f64>().is_ok() => Tok::Float(s),
                Err(_) => return Err(at.error(col, format!("'{s}' is not a number"))),
            };
            out.push((col, tok));
            i = j;
        } else if c == ':' {
            let j = word_end(i + 1);
            out.push((col, Tok::Var(chars[i + 1..j].iter().collect())));
            i = j;
        } else if c.is_alphabetic() || c == '_' {
            let j = word_end(i);
            out.push((col, Tok::Ident(chars[i..j].iter().collect())));
            i = j;
        } else if "()+-*/%,".contains(c) {
            out.push((col, Tok::Sym(c)));
            i += 1;
        } else {
            return Err(at.error(col, format!("'{c}' in an expression is not supported")));
        }
    }
    Ok(out)
}

/// Recursive descent over one `\set` expression.
struct Expr<'a> {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end_col: usize,
    vars: &'a BTreeMap<String, Var>,
    at: &'a Place<'a>,
}

impl Expr<'_> {
    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end_col, |t| t.0)
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.1)
    }
    fn expect(&mut self, c: char) -> Result<(), InputError> {
        if self.peek() == Some(&Tok::Sym(c)) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.at.error(self.col(), format!("expected '{c}'")))
        }
    }
    fn sum(&mut self) -> Result<Poly, InputError> {
        let first = self.product()?;
        self.more_terms(first)
    }
    /// `acc` followed by the `+ term` and `- term` that come next.
    fn more_terms(&mut self, mut acc: Poly) -> Result<Poly, InputError> {
        while let Some(Tok::Sym(c @ ('+' | '-'))) = self.peek().cloned() {
            self.pos += 1;
            let rhs = self.product()?;
            acc = acc.add(&rhs, if c == '+' { 1 } else { -1 });
        }
        Ok(acc)
    }
    fn product(&mut self) -> Result<Poly, InputError> {
        let mut acc = self.factor()?;
        while let Some(Tok::Sym(c @ ('*' | '/' | '%'))) = self.peek().cloned() {
            let col = self.col();
            self.pos += 1;
            let rhs = self.factor()?;
            acc = match (c, acc.as_constant(), rhs.as_constant()) {
                ('*', _, _) => acc.mul(&rhs),
                (_, _, Some(0)) => return Err(self.at.error(col, "division by zero")),
                ('/', Some(a), Some(b)) => Poly::constant(a / b),
                ('%', Some(a), Some(b)) => Poly::constant(a % b),
                _ => {
                    return Err(self.at.error(
                        col,
                        format!("'{c}' on a parameter: a generator's bounds are sums of products"),
                    ))
                }
            };
        }
        Ok(acc)
    }
    fn factor(&mut self) -> Result<Poly, InputError> {
        let col = self.col();
        let tok = self.peek().cloned();
        self.pos += 1;
        match tok {
            Some(Tok::Int(n)) => Ok(Poly::constant(n)),
            Some(Tok::Sym('-')) => Ok(Poly::constant(0).add(&self.factor()?, -1)),
            Some(Tok::Sym('(')) => {
                let p = self.sum()?;
                self.expect(')')?;
                Ok(p)
            }
            Some(Tok::Var(name)) if name == "scale" => Ok(Poly::param("scale")),
            Some(Tok::Var(name)) => match self.vars.get(&name) {
                Some(Var::Constant(p)) => Ok(p.clone()),
                Some(Var::Random(_)) => Err(self.at.error(col, format!(":{name} is a random value: arithmetic on a drawn value cannot be expressed in a generator's bounds"))),
                Some(Var::Fetched) => Err(self.at.error(col, format!(":{name} comes from \\gset: arithmetic on a fetched value cannot be expressed; use it in SQL instead"))),
                None => Err(self.at.error(col, format!(":{name} is not set: \\set it earlier, or use :scale"))),
            },
            Some(Tok::Ident(f)) => Err(self.at.error(col, format!("function {f}() is not supported here"))),
            Some(Tok::Float(s)) => Err(self.at.error(col, format!("{s}: only integers in arithmetic"))),
            _ => Err(self.at.error(col, "expected a number, :variable or '('")),
        }
    }
    fn done(&self) -> Result<(), InputError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self
                .at
                .error(self.col(), "unexpected text after the expression")),
        }
    }
}

/// `\set NAME EXPR`: a random draw (its template) or a constant.
fn set_value(expr: &mut Expr) -> Result<Var, InputError> {
    let (col, func) = match (expr.toks.first(), expr.toks.get(1)) {
        (Some((col, Tok::Ident(f))), Some((_, Tok::Sym('(')))) => (*col, f.clone()),
        _ => {
            let p = expr.sum()?;
            expr.done()?;
            return Ok(Var::Constant(p));
        }
    };
    // The generator each function becomes; all but `random` take a parameter. pgbench
    // matches function names in any case (`RANDOM(1, 10)`).
    let generator = match func.to_ascii_lowercase().as_str() {
        "random" => "uniform",
        "random_zipfian" => "zipf",
        "random_gaussian" => "gaussian",
        "random_exponential" => "exponential",
        _ => {
            return Err(expr.at.error(
                col,
                format!("function {func}() is not supported: loadrig has no generator for it"),
            ))
        }
    };
    expr.pos = 2;
    let lo = expr.sum()?;
    expr.expect(',')?;
    let hi = expr.sum()?.add(&Poly::constant(1), 1);
    let param = if generator == "uniform" {
        None
    } else {
        expr.expect(',')?;
        let s = match expr.peek().cloned() {
            Some(Tok::Float(s)) => s,
            Some(Tok::Int(n)) => n.to_string(),
            _ => {
                return Err(expr.at.error(
                    expr.col(),
                    format!("{func}'s parameter must be a number literal"),
                ))
            }
        };
        let value: f64 = s.parse().unwrap_or(f64::NAN);
        // pgbench's own limits: it stops the run on a parameter outside them.
        let need = match generator {
            "gaussian" if value < 2.0 => Some("pgbench needs at least 2.0"),
            "exponential" if value <= 0.0 => Some("pgbench needs above 0"),
            "zipf" if !(1.001..=1000.0).contains(&value) => Some("pgbench stops with \"zipfian parameter must be in range [1.001, 1000]\" (since PostgreSQL 12); use a parameter in that range"),
            _ => None,
        };
        if let Some(need) = need {
            return Err(expr.at.error(
                expr.col(),
                format!("{func}'s parameter {s} is out of range: {need}"),
            ));
        }
        expr.pos += 1;
        Some(s)
    };
    expr.expect(')')?;
    // `random(1, 10) + 1`: each of pgbench's draws is its minimum plus an offset that
    // depends only on the range's width, so a constant added after the call moves both
    // bounds and is the same draw (`random(2, 11)`).
    let offset = drawn_offset(expr, &func)?;
    let (lo, hi) = (lo.add(&offset, 1), hi.add(&offset, 1));
    let range = format!("{}..{}", lo.render(), hi.render());
    Ok(Var::Random(match param {
        None => format!("{{uniform {range}}}"),
        Some(s) => format!("{{{generator} {range} {s}}}"),
    }))
}

/// The constant terms added to or taken from a random draw after its call (`+ 1`,
/// `- :scale`), up to the end of the expression.
fn drawn_offset(expr: &mut Expr, func: &str) -> Result<Poly, InputError> {
    let offset = expr.more_terms(Poly::constant(0))?;
    match expr.peek() {
        Some(Tok::Sym(c @ ('*' | '/' | '%'))) => Err(expr.at.error(
            expr.col(),
            format!(
                "'{c}' on {func}()'s draw: the values it makes are not a range a generator \
                 draws from; do the arithmetic in the SQL that uses the variable (:NAME {c} ...)"
            ),
        )),
        _ => expr.done().map(|()| offset),
    }
}

/// One SQL statement with `:name` as `$n`, the parameters' templates and where each
/// `:name` is (line, column), the names `\gset` stores its columns under, the values that
/// must hold for it to run (the `\if` branches it is in, as `when` names) and where it
/// starts (line, column).
struct Statement {
    query: String,
    params: Vec<String>,
    uses: Vec<(usize, usize)>,
    capture: Vec<String>,
    when: Vec<String>,
    at: (usize, usize),
}

/// An open `\if`: where it is, the negated conditions of the branches before the current
/// one, the current branch's condition (none after `\else`).
struct Branch {
    line: usize,
    col: usize,
    before: Vec<String>,
    current: Option<String>,
}

/// `!NAME` for `NAME`, and `NAME` for `!NAME`.
fn negated(when: &str) -> String {
    match when.strip_prefix('!') {
        Some(name) => name.to_string(),
        None => format!("!{when}"),
    }
}

/// What the script says, gathered line by line.
#[derive(Default)]
struct Script {
    vars: BTreeMap<String, Var>,
    statements: Vec<Statement>,
    /// Line of BEGIN, and whether END came.
    tx: Option<(usize, bool)>,
    /// First statement outside BEGIN … END (line, column).
    outside: Vec<(usize, usize)>,
    think_time: Option<(String, usize)>,
    /// Inside `\startpipeline`: its line and the index of its first statement.
    pipe_open: Option<(usize, usize)>,
    /// After `\endpipeline`: the statements it held (loadrig's `pipeline`).
    pipelined: Option<usize>,
    /// The `\if` blocks open at the current line, outermost first.
    branches: Vec<Branch>,
}

impl Script {
    fn line(
        &mut self,
        text: &str,
        at: &Place,
        sql: &mut Option<Statement>,
    ) -> Result<(), InputError> {
        let trimmed = text.trim_start();
        let indent = text.chars().count() - trimmed.chars().count();
        if sql.is_none() && (trimmed.is_empty() || trimmed.starts_with("--")) {
            return Ok(());
        }
        if self.think_time.is_some() {
            return Err(at.error(indent + 1, "\\sleep must be the script's last command: loadrig pauses only between transactions (think_time)"));
        }
        if sql.is_none() && trimmed.starts_with('\\') {
            return self.meta(trimmed, indent + 1, at);
        }
        let when = self.conditions();
        let stmt = sql.get_or_insert_with(|| Statement {
            query: String::new(),
            params: Vec::new(),
            uses: Vec::new(),
            capture: Vec::new(),
            when,
            at: (at.line, indent + 1),
        });
        if stmt.query.is_empty() {
            self.note_statement(trimmed, at.line, indent + 1, at)?;
        }
        // `SELECT … \gset [prefix]` (or `\aset`) ends the statement in place of `;`.
        let gset = gset_at(text);
        let line_text = text;
        let text = gset.map_or(text, |(i, _)| &text[..i]);
        substitute(text, &self.vars, stmt, at)?;
        if let Some((i, prefix)) = gset {
            let col = text[..i].chars().count() + 1;
            if self.pipe_open.is_some() {
                return Err(at.error(
                    col,
                    format!("{} inside \\startpipeline … \\endpipeline: pgbench does not allow it either, since the results are not there yet when the next command needs them; drop it or the pipeline", text_meta(line_text, i)),
                ));
            }
            let names = select_names(&stmt.query)
                .map_err(|e| at.error(col, format!("{}: {e}", &text_meta(line_text, i))))?;
            stmt.capture = names.iter().map(|n| format!("{prefix}{n}")).collect();
            for name in &stmt.capture {
                self.vars.insert(name.clone(), Var::Fetched);
            }
        }
        if gset.is_some() || text.trim_end().ends_with(';') {
            let mut done = sql.take().expect("a statement");
            done.query = done
                .query
                .trim()
                .trim_end_matches(';')
                .trim_end()
                .to_string();
            if !is_tx_control(&done.query) {
                self.statements.push(done);
            }
        }
        Ok(())
    }

    /// BEGIN/END/COMMIT open and close the transaction; other statements must be in it.
    fn note_statement(
        &mut self,
        text: &str,
        line: usize,
        col: usize,
        at: &Place,
    ) -> Result<(), InputError> {
        let word = text
            .split(|c: char| !c.is_alphabetic())
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let control = ["BEGIN", "START", "END", "COMMIT", "ROLLBACK", "ABORT"];
        if !self.branches.is_empty() && control.contains(&word.as_str()) {
            return Err(at.error(
                col,
                format!("{word} inside \\if: a loadrig operation begins and ends its transaction unconditionally"),
            ));
        }
        match (word.as_str(), self.tx) {
            ("BEGIN" | "START", None) if self.pipe_open.is_some() => {
                return Err(at.error(col, "a transaction inside \\startpipeline: loadrig pipelines operations of separate client streams, and a transaction's state belongs to its connection"))
            }
            ("BEGIN" | "START", None) => self.tx = Some((line, false)),
            ("BEGIN" | "START", Some(_)) => {
                return Err(at.error(col, "a second BEGIN: one transaction per script"))
            }
            ("END" | "COMMIT", Some((l, false))) => self.tx = Some((l, true)),
            ("END" | "COMMIT", _) => return Err(at.error(col, format!("{word} without BEGIN"))),
            ("ROLLBACK" | "ABORT", _) => {
                return Err(at.error(
                    col,
                    format!("{word} is not supported: a loadrig tx commits"),
                ))
            }
            (_, Some((_, false))) => {}
            _ if self.pipe_open.is_some() => {}
            _ => self.outside.push((line, col)),
        }
        Ok(())
    }

    fn meta(&mut self, text: &str, col: usize, at: &Place) -> Result<(), InputError> {
        let mut words = text.split_whitespace();
        let command = words.next().unwrap_or("");
        if !self.branches.is_empty() && matches!(command, "\\set" | "\\sleep") {
            return Err(at.error(col, format!("{command} inside \\if: loadrig draws its values (and pauses) once per transaction, not per branch; move it before the \\if")));
        }
        match command {
            "\\if" | "\\elif" | "\\else" | "\\endif" => self.conditional(command, text, col, at),
            "\\set" => {
                let name = words
                    .next()
                    .ok_or_else(|| at.error(col, "\\set needs a name and an expression"))?;
                if name == "scale" || name == "client_id" {
                    return Err(at.error(
                        col + 5,
                        format!("\\set {name}: loadrig sets :{name} itself (--set scale=N)"),
                    ));
                }
                let start = 4 + text[4..].find(name).unwrap_or(0) + name.len();
                let rest = &text[start..];
                let toks = tokenize(rest, col + text[..start].chars().count(), at)?;
                let end_col = col + text.chars().count();
                let mut expr = Expr {
                    toks,
                    pos: 0,
                    end_col,
                    vars: &self.vars,
                    at,
                };
                let value = set_value(&mut expr)?;
                self.vars.insert(name.to_string(), value);
                Ok(())
            }
            "\\sleep" => {
                if matches!(self.tx, Some((_, false))) {
                    return Err(at.error(
                        col,
                        "\\sleep inside a transaction: loadrig pauses only between transactions",
                    ));
                }
                let n = words
                    .next()
                    .and_then(|w| w.parse::<u64>().ok())
                    .ok_or_else(|| {
                        at.error(col + 7, "\\sleep takes a whole number (not a :variable)")
                    })?;
                let unit = match words.next().unwrap_or("s") {
                    u @ ("us" | "ms" | "s") => u,
                    other => {
                        return Err(
                            at.error(col, format!("\\sleep unit '{other}': expected us, ms or s"))
                        )
                    }
                };
                self.think_time = Some((format!("{n}{unit}"), at.line));
                Ok(())
            }
            "\\startpipeline" | "\\endpipeline" => self.pipeline_meta(command, col, at),
            other => Err(at.error(
                col,
                format!("{other} is not supported by loadrig's workload language"),
            )),
        }
    }
}

impl Script {
    /// `\startpipeline` … `\endpipeline`: its statements become operations kept in flight
    /// together, `pipeline` of them per connection.
    fn pipeline_meta(&mut self, command: &str, col: usize, at: &Place) -> Result<(), InputError> {
        match (command, self.pipe_open, self.pipelined) {
            ("\\startpipeline", None, None) if self.tx.is_none() => {
                self.pipe_open = Some((at.line, self.statements.len()));
                Ok(())
            }
            ("\\startpipeline", ..) if self.tx.is_some() => Err(at.error(col, "\\startpipeline beside BEGIN: a transaction's state belongs to its connection, which loadrig's pipelined streams share")),
            ("\\startpipeline", ..) => Err(at.error(col, "a second \\startpipeline: one pipeline per script")),
            ("\\endpipeline", Some((_, first)), None) => {
                let depth = self.statements.len() - first;
                if depth == 0 {
                    return Err(at.error(col, "an empty pipeline: put the statements between \\startpipeline and \\endpipeline"));
                }
                self.pipe_open = None;
                self.pipelined = Some(depth);
                Ok(())
            }
            _ => Err(at.error(col, "\\endpipeline without \\startpipeline")),
        }
    }

    /// The conditions a statement needs now: every open branch's earlier branches false
    /// and its own condition true.
    fn conditions(&self) -> Vec<String> {
        self.branches
            .iter()
            .flat_map(|b| b.before.iter().chain(b.current.as_ref()).cloned())
            .collect()
    }

    /// `\if COND`, `\elif COND`, `\else`, `\endif`: a stack of branches whose
    /// conditions become the `when` of the statements inside them.
    fn conditional(
        &mut self,
        command: &str,
        text: &str,
        col: usize,
        at: &Place,
    ) -> Result<(), InputError> {
        let rest = &text[command.len()..];
        let rest_col = col + command.chars().count();
        let open = self.branches.last_mut();
        match (command, open) {
            ("\\if", _) => {
                let cond = condition(rest, rest_col, &self.vars, at)?;
                self.branches.push(Branch {
                    line: at.line,
                    col,
                    before: Vec::new(),
                    current: Some(cond),
                });
            }
            ("\\elif", Some(b)) if b.current.is_some() => {
                let cond = condition(rest, rest_col, &self.vars, at)?;
                let done = b.current.replace(cond).map(|c| negated(&c));
                b.before.extend(done);
            }
            ("\\else", Some(b)) if b.current.is_some() => {
                if !rest.trim().is_empty() {
                    return Err(at.error(rest_col, "\\else takes no expression"));
                }
                let done = b.current.take().map(|c| negated(&c));
                b.before.extend(done);
            }
            ("\\endif", Some(_)) => {
                if !rest.trim().is_empty() {
                    return Err(at.error(rest_col, "\\endif takes no expression"));
                }
                self.branches.pop();
            }
            (_, Some(_)) => return Err(at.error(col, format!("{command} after \\else"))),
            (_, None) => return Err(at.error(col, format!("{command} without \\if"))),
        }
        Ok(())
    }
}

/// An `\if`/`\elif` condition as a `when` name: `:NAME`, `NOT :NAME` or `!:NAME`, NAME a
/// `\set` value or one fetched by `\gset`/`\aset`. Comparisons and other expressions are
/// refused: the workload language tests a value's truth, nothing else.
fn condition(
    text: &str,
    col0: usize,
    vars: &BTreeMap<String, Var>,
    at: &Place,
) -> Result<String, InputError> {
    const ONLY: &str = "\\if takes :NAME, NOT :NAME or !:NAME: compute a comparison in SQL (SELECT abalance < 0 AS negative … \\gset) and test the fetched value";
    let lead = text.chars().take_while(|c| c.is_whitespace()).count();
    let (bang, body, body_col) = match text.trim_start().strip_prefix('!') {
        Some(rest) => (true, rest, col0 + lead + 1),
        None => (false, text, col0),
    };
    let toks = tokenize(body, body_col, at).map_err(|_| {
        // The first character an expression cannot hold (`<`, `=`, ...).
        let bad = body
            .chars()
            .position(|c| !(c.is_alphanumeric() || c.is_whitespace() || "_:.()+-*/%,".contains(c)))
            .unwrap_or(0);
        at.error(body_col + bad, ONLY)
    })?;
    let (negate, c, name) = match toks.as_slice() {
        [(c, Tok::Var(v))] => (bang, *c, v),
        [(_, Tok::Ident(not)), (c, Tok::Var(v))] if !bang && not.eq_ignore_ascii_case("not") => {
            (true, *c, v)
        }
        [] => return Err(at.error(col0 + lead, "\\if needs a condition: \\if :NAME")),
        [(c, _), ..] => return Err(at.error(*c, ONLY)),
    };
    if !vars.contains_key(name) {
        return Err(at.error(
            c,
            format!(":{name} is not set: \\set it, or fetch it with \\gset, before the \\if"),
        ));
    }
    Ok(if negate {
        format!("!{name}")
    } else {
        name.clone()
    })
}

/// The meta-command (`\gset` or `\aset`) at byte `i` of a line.
fn text_meta(text: &str, i: usize) -> &str {
    &text[i..i + 5]
}

/// Where a trailing `\gset` (with its optional prefix) or `\aset` starts in a line, and
/// the prefix (`\aset` has none: it names variables after the columns).
fn gset_at(text: &str) -> Option<(usize, &str)> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    if let Some(i) = text.rfind("\\aset") {
        if text[i + 5..].trim().is_empty() {
            return Some((i, ""));
        }
    }
    let i = text.rfind("\\gset")?;
    let mut rest = text[i + 5..].split_whitespace();
    let prefix = rest.next().unwrap_or("");
    (rest.next().is_none() && prefix.chars().all(word) && !text[i + 5..].starts_with(word))
        .then_some((i, prefix))
}

/// The names of a SELECT's columns, as PostgreSQL names them for `\gset`: an alias (`AS
/// name` or a trailing word), else the column of a plain reference (`t.c` is `c`); an
/// expression without an alias has no name loadrig can know, so it needs one.
fn select_names(query: &str) -> Result<Vec<String>, String> {
    let q = query.trim_start();
    if !q.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("select")) {
        return Err("it must follow a SELECT".into());
    }
    let mut items = vec![String::new()];
    let (mut depth, mut quoted) = (0, false);
    let chars: Vec<char> = q[6..].chars().collect();
    for (k, &c) in chars.iter().enumerate() {
        let at_word = k == 0 || !(chars[k - 1].is_alphanumeric() || chars[k - 1] == '_');
        let from = depth == 0
            && !quoted
            && at_word
            && chars[k..]
                .iter()
                .take(4)
                .collect::<String>()
                .eq_ignore_ascii_case("from")
            && !chars
                .get(k + 4)
                .is_some_and(|n| n.is_alphanumeric() || *n == '_');
        if from {
            break;
        }
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            ',' if depth == 0 && !quoted => {
                items.push(String::new());
                continue;
            }
            _ => {}
        }
        items.last_mut().expect("an item").push(c);
    }
    let ident = |w: &str| {
        !w.is_empty()
            && !w.starts_with(|c: char| c.is_ascii_digit())
            && w.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    items
        .iter()
        .map(|item| {
            let item = item.trim();
            let words: Vec<&str> = item.split_whitespace().collect();
            let name = match words.as_slice() {
                [.., kw, alias] if kw.eq_ignore_ascii_case("as") && ident(alias) => alias,
                [one] if one.split('.').all(ident) => one.rsplit('.').next().unwrap_or(one),
                [_, .., alias] if ident(alias) && !item.ends_with(')') => alias,
                _ => {
                    return Err(format!(
                        "the column '{item}' has no name loadrig can know: write '{item} AS name'"
                    ))
                }
            };
            Ok(name.to_ascii_lowercase())
        })
        .collect()
}

fn is_tx_control(query: &str) -> bool {
    let word = query
        .split(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or("");
    ["BEGIN", "START", "END", "COMMIT"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// Append one SQL line with each `:name` as the next `$n` and pgbench's tables renamed
/// into loadrig's namespace (`pgbench_accounts` -> `loadrig_pgbench_accounts`).
fn substitute(
    text: &str,
    vars: &BTreeMap<String, Var>,
    stmt: &mut Statement,
    at: &Place,
) -> Result<(), InputError> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut out = String::new();
    while i < chars.len() {
        let c = chars[i];
        let prev = if i > 0 { chars[i - 1] } else { ' ' };
        if c == '\\' {
            return Err(at.error(
                i + 1,
                "a meta-command inside an SQL statement (\\gset, \\aset, ...) is not supported",
            ));
        }
        if c == ':'
            && prev != ':'
            && chars
                .get(i + 1)
                .is_some_and(|n| n.is_alphabetic() || *n == '_')
        {
            let mut j = i + 1;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let name: String = chars[i + 1..j].iter().collect();
            let template = match name.as_str() {
                "scale" => "{scale}".to_string(),
                "client_id" => "{client}".to_string(),
                _ if vars.contains_key(&name) => format!("{{{name}}}"),
                _ => {
                    return Err(at.error(
                        i + 1,
                        format!(":{name} is not set: \\set it before the statement"),
                    ))
                }
            };
            stmt.params.push(template);
            stmt.uses.push((at.line, i + 1));
            out.push_str(&format!("${}", stmt.params.len()));
            i = j;
            continue;
        }
        let word_start = !(prev.is_alphanumeric() || prev == '_');
        if word_start && chars[i..].starts_with(&"pgbench_".chars().collect::<Vec<_>>()) {
            out.push_str("loadrig_");
        }
        out.push(c);
        i += 1;
    }
    stmt.query.push_str(&out);
    stmt.query.push(' ');
    Ok(())
}

/// Translate pgbench script `text` (named `script` in errors) into a workload file.
pub fn translate(script: &str, name: &str, text: &str) -> Result<String, InputError> {
    let mut s = Script::default();
    let mut sql = None;
    let mut at = Place { script, line: 0 };
    for (i, line) in text.lines().enumerate() {
        at.line = i + 1;
        s.line(line, &at, &mut sql)?;
    }
    at.line = text.lines().count().max(1);
    if sql.is_some() {
        return Err(at.error(1, "the last SQL statement has no ';'"));
    }
    if let Some((line, _)) = s.pipe_open {
        return Err(Place { script, line }.error(1, "\\startpipeline without \\endpipeline"));
    }
    if let Some(b) = s.branches.first() {
        return Err(Place {
            script,
            line: b.line,
        }
        .error(b.col, "\\if without \\endif"));
    }
    match s.tx {
        _ if s.pipelined.is_some() && !s.outside.is_empty() => {
            let (line, col) = s.outside[0];
            return Err(Place { script, line }.error(col, "a statement outside \\startpipeline … \\endpipeline beside a pipeline: loadrig runs the pipelined statements as operations of their own, and this one would be another"));
        }
        Some((line, false)) => {
            return Err(Place { script, line }.error(1, "BEGIN without END or COMMIT"))
        }
        Some(_) if !s.outside.is_empty() => {
            let (line, col) = s.outside[0];
            return Err(Place { script, line }.error(col, "a statement outside BEGIN … END beside a transaction: pgbench runs it in its own transaction, which one loadrig operation cannot"));
        }
        _ => {}
    }
    if s.pipelined.is_some() {
        shared_draws_in_pipeline(script, &s)?;
    }
    if s.statements.is_empty() {
        return Err(at.error(1, "the script has no SQL statement"));
    }
    Ok(render(script, name, &s))
}

/// Refuses a drawn `\set` value that two statements of a pipeline use. pgbench sends
/// them one value, in script order; loadrig runs each pipelined statement as an operation
/// of its own, which draws its own values, in an order of its own.
fn shared_draws_in_pipeline(script: &str, s: &Script) -> Result<(), InputError> {
    // Each value's first statement: its index and line.
    let mut first: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (k, st) in s.statements.iter().enumerate() {
        for (param, &(line, col)) in st.params.iter().zip(&st.uses) {
            let Some(var) = param.strip_prefix('{').and_then(|p| p.strip_suffix('}')) else {
                continue;
            };
            if !matches!(s.vars.get(var), Some(Var::Random(_))) {
                continue;
            }
            match first.get(var) {
                Some(&(index, earlier)) if index != k => {
                    return Err(Place { script, line }.error(col, format!(
                        ":{var} is drawn once and the statement on line {earlier} of this pipeline uses it too: loadrig runs each pipelined statement as an operation of its own, with its own draw and in an order of its own, so they would not share the value; to keep them together, replace \\startpipeline … \\endpipeline with BEGIN; … END; (one transaction), or \\set a variable for each statement if separate draws are what you mean"
                    )));
                }
                Some(_) => {}
                None => {
                    first.insert(var, (k, st.at.0));
                }
            }
        }
    }
    Ok(())
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn step(st: &Statement) -> String {
    let params: Vec<String> = st.params.iter().map(|p| quote(p)).collect();
    let mut out = format!(
        "sql = {{ query = {}, params = [{}] }}",
        quote(&st.query),
        params.join(", ")
    );
    if !st.capture.is_empty() {
        let names: Vec<String> = st.capture.iter().map(|n| quote(n)).collect();
        out += &format!(", capture = [{}]", names.join(", "));
    }
    match st.when.as_slice() {
        [] => {}
        [one] => out += &format!(", when = {}", quote(one)),
        all => {
            let names: Vec<String> = all.iter().map(|n| quote(n)).collect();
            out += &format!(", when = [{}]", names.join(", "));
        }
    }
    out
}

/// The workload file: `scale` as its parameter, one operation, `\sleep` as think time.
fn render(script: &str, name: &str, s: &Script) -> String {
    let mut out =
        format!("# Translated from the pgbench script {script} by `loadrig import pgbench`.\n");
    out += &format!("name = {}\n", quote(name));
    out += &format!(
        "description = {}\n",
        quote(&format!("pgbench script {script}"))
    );
    // pgbench's pipelines need a server target; so does loadrig's.
    let target = match s.pipelined {
        Some(_) => "postgres://loadrig:${PGPASSWORD}@127.0.0.1:5432/loadrig",
        None => "sqlite://./loadrig-pgbench.db",
    };
    out += &format!(
        "target = \"{target}\"\n\n[params]\nscale = 1                # pgbench -s / :scale\n"
    );
    let batch = s.pipelined.is_some() && pipeline_inlines(s);
    if batch {
        out += "pipeline_sync = \"batch\"   # \\endpipeline: one Sync per batch, as pgbench sends it (docs/targets.md)\n";
    }
    out += "\n[load]\nclients = 1\nduration = \"10s\"\n";
    if let Some(p) = s.pipelined {
        out += &format!("pipeline = {p}             # \\startpipeline … \\endpipeline: statements in flight per connection\n");
        if !batch {
            out += "# a Sync per statement: a \\set value used twice in one statement needs a `let`, which\n# pipeline_sync = \"batch\" cannot run\n";
        }
    }
    if let Some((t, _)) = &s.think_time {
        out += &format!("think_time = {}       # \\sleep\n", quote(t));
    }
    let lets: Vec<String> = s
        .vars
        .iter()
        .filter_map(|(k, v)| {
            let t = match v {
                Var::Random(t) => t.clone(),
                Var::Constant(p) => format!(
                    "{{uniform {}..{}}}",
                    p.render(),
                    p.clone().add(&Poly::constant(1), 1).render()
                ),
                Var::Fetched => return None,
            };
            Some(format!("{k} = {}", quote(&t)))
        })
        .collect();
    let lets = if lets.is_empty() {
        String::new()
    } else {
        format!("let = {{ {} }}\n", lets.join(", "))
    };
    if s.pipelined.is_some() {
        let lets = if batch { "" } else { lets.as_str() };
        return out + &pipelined_ops(name, s, lets);
    }
    out += &format!("\n[[op]]\nname = {}\n", quote(name));
    out += &lets;
    // Several statements, or one under \if, without BEGIN: each commits on its own, as
    // pgbench runs them (autocommit), in `steps`.
    let group = match s.tx {
        Some(_) => Some("tx"),
        None if s.statements.len() > 1 || !s.statements[0].when.is_empty() => Some("steps"),
        None => None,
    };
    if let Some(group) = group {
        out += &format!("{group} = [\n");
        for st in &s.statements {
            out += &format!("  {{ {} }},\n", step(st));
        }
        out += "]\n";
    } else {
        // One statement alone: what it fetches has no later statement to use it.
        let mut alone = step(&s.statements[0]);
        if let Some(i) = alone.find(", capture = [") {
            alone.truncate(i);
        }
        out += &format!("{alone}\n");
    }
    out
}

/// The generator a pipeline statement's parameter `{NAME}` stands for, when NAME is a
/// `\set` value: drawn in place, it needs no `let` (which the batch driver cannot run).
fn drawn(s: &Script, t: &str) -> String {
    let var = t.strip_prefix('{').and_then(|t| t.strip_suffix('}'));
    match var.and_then(|v| s.vars.get(v)) {
        Some(Var::Random(g)) => g.clone(),
        Some(Var::Constant(p)) => format!(
            "{{uniform {}..{}}}",
            p.render(),
            p.clone().add(&Poly::constant(1), 1).render()
        ),
        _ => t.to_string(),
    }
}

/// Whether every pipelined statement uses each `\set` value at most once, so that drawing
/// it in place is the same as drawing it once for the statement.
fn pipeline_inlines(s: &Script) -> bool {
    s.statements.iter().all(|st| {
        let mut seen = std::collections::HashSet::new();
        st.params.iter().all(|p| {
            let set = p.strip_prefix('{').and_then(|t| t.strip_suffix('}'));
            !set.is_some_and(|v| s.vars.contains_key(v)) || seen.insert(p)
        })
    })
}

/// A pipeline's statements as operations, one per distinct statement (the same query with
/// parameters drawn alike counts once, weighted by how often the script sends it): each
/// client stream sends one at a time, `pipeline` streams per connection. Without `lets`
/// the `\set` values are drawn in place.
fn pipelined_ops(name: &str, s: &Script, lets: &str) -> String {
    let mut groups: Vec<(String, &Statement, usize)> = Vec::new();
    for st in &s.statements {
        let key = format!(
            "{}|{:?}",
            st.query,
            st.params.iter().map(|p| drawn(s, p)).collect::<Vec<_>>()
        );
        match groups.iter_mut().find(|(k, ..)| *k == key) {
            Some(g) => g.2 += 1,
            None => groups.push((key, st, 1)),
        }
    }
    let mut out = String::new();
    for (i, (_, st, weight)) in groups.iter().enumerate() {
        let inline;
        let st = if lets.is_empty() {
            inline = Statement {
                query: st.query.clone(),
                params: st.params.iter().map(|p| drawn(s, p)).collect(),
                uses: Vec::new(),
                capture: Vec::new(),
                when: Vec::new(),
                at: st.at,
            };
            &inline
        } else {
            st
        };
        let mut step = step(st);
        if let Some(at) = step.find(", capture = [") {
            step.truncate(at);
        }
        out += "\n[[op]]\n";
        out += &match groups.len() {
            1 => format!("name = {}\n", quote(name)),
            _ => format!(
                "name = {}\nweight = {weight}\n",
                quote(&format!("{name}-{}", i + 1))
            ),
        };
        out += lets;
        out += &format!("{step}\n");
    }
    out
}
