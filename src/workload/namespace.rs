//! Setup statements may only create, change or drop objects in loadrig's namespace: the
//! names a DDL or DML statement acts on must begin with `loadrig_`. A name outside it (an
//! index called `k_1` beside a peer tool's own `k_1`) would collide with, or drop, objects
//! loadrig did not create.

/// The first object name the statement acts on that is outside the `loadrig_` namespace.
pub fn outside_namespace(sql: &str) -> Option<String> {
    let words: Vec<&str> = sql
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';'))
        .filter(|w| !w.is_empty())
        .collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let is = |i: usize, k: &str| upper.get(i).is_some_and(|w| w == k);
    let mut named = Vec::new();
    let mut i = 1;
    match upper.first().map(String::as_str) {
        Some("CREATE") => {
            while ["OR", "REPLACE", "UNIQUE", "TEMPORARY", "TEMP", "UNLOGGED"]
                .iter()
                .any(|k| is(i, k))
            {
                i += 1;
            }
            let index = is(i, "INDEX");
            i = skip_if_exists(&upper, i + 1);
            // PostgreSQL's CREATE INDEX may leave out the name: `CREATE INDEX ON t (k)`.
            if !(index && is(i, "ON")) {
                named.push(i);
            }
            if index {
                named.extend(upper.iter().position(|w| w == "ON").map(|on| on + 1));
            }
        }
        Some("DROP") => {
            i = skip_if_exists(&upper, i + 1);
            let ends = ["CASCADE", "RESTRICT", "ON"];
            while i < words.len() && !ends.contains(&upper[i].as_str()) {
                named.push(i);
                i += 1;
            }
            named.extend(upper.iter().position(|w| w == "ON").map(|on| on + 1));
        }
        Some("ALTER") | Some("TRUNCATE") => {
            named.push(skip_if_exists(&upper, i + usize::from(is(i, "TABLE"))));
        }
        Some("INSERT") | Some("REPLACE") | Some("DELETE") => {
            named.extend(
                upper
                    .iter()
                    .position(|w| w == "INTO" || w == "FROM")
                    .map(|p| p + 1),
            );
        }
        Some("UPDATE") => named.push(i),
        _ => {}
    }
    named
        .into_iter()
        .filter_map(|i| words.get(i))
        .map(|w| w.trim_matches(|c| c == '"' || c == '`'))
        .find(|w| !object_name(w).to_ascii_lowercase().starts_with("loadrig_"))
        .map(str::to_string)
}

/// The object's own name, after any schema: `public.loadrig_x` is `loadrig_x`.
fn object_name(qualified: &str) -> &str {
    let name = qualified.rsplit('.').next().unwrap_or(qualified);
    name.trim_matches(|c| c == '"' || c == '`')
}

/// The index past an optional `IF [NOT] EXISTS` that starts at `i`.
fn skip_if_exists(upper: &[String], i: usize) -> usize {
    let at = |k: usize, w: &str| upper.get(k).is_some_and(|u| u == w);
    if !at(i, "IF") {
        return i;
    }
    let not = usize::from(at(i + 1, "NOT"));
    if at(i + 1 + not, "EXISTS") {
        i + 2 + not
    } else {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::outside_namespace;

    #[test]
    fn names_in_the_namespace_pass() {
        for sql in [
            "CREATE TABLE IF NOT EXISTS loadrig_a (id INTEGER PRIMARY KEY)",
            "CREATE UNIQUE INDEX loadrig_a_k ON loadrig_a (k)",
            "CREATE INDEX ON loadrig_a (k)",
            "DROP TABLE IF EXISTS loadrig_a, public.loadrig_b CASCADE",
            "DROP INDEX loadrig_a_k ON loadrig_a",
            "INSERT OR IGNORE INTO loadrig_a VALUES (1)",
            "INSERT INTO loadrig_a (id) WITH RECURSIVE n(i) AS (SELECT 1) SELECT i FROM n",
            "UPDATE loadrig_a SET k = 1",
            "DELETE FROM \"loadrig_a\"",
            "TRUNCATE TABLE loadrig_a",
            "ALTER TABLE loadrig_a ADD COLUMN c INTEGER",
            "CREATE OR REPLACE VIEW loadrig_v AS SELECT * FROM loadrig_a",
        ] {
            assert_eq!(outside_namespace(sql), None, "{sql}");
        }
    }

    #[test]
    fn a_name_outside_the_namespace_is_named() {
        for (sql, name) in [
            ("CREATE INDEX k_1 ON loadrig_sbtest1 (k)", "k_1"),
            ("CREATE INDEX loadrig_k ON sbtest1 (k)", "sbtest1"),
            ("CREATE TABLE mine (x INT) -- loadrig_", "mine"),
            ("DROP TABLE IF EXISTS loadrig_a, accounts", "accounts"),
            (
                "DROP INDEX loadrig_k ON pgbench_accounts",
                "pgbench_accounts",
            ),
            (
                "INSERT INTO pgbench_history SELECT * FROM loadrig_h",
                "pgbench_history",
            ),
            (
                "UPDATE public.accounts SET x = 1 -- loadrig_",
                "public.accounts",
            ),
            ("TRUNCATE mine -- loadrig_", "mine"),
        ] {
            assert_eq!(outside_namespace(sql).as_deref(), Some(name), "{sql}");
        }
    }
}
