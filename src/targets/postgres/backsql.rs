//! The schema the directory study (seed 002) makes for slapd's back-sql. back-sql reads its
//! metadata from tables with fixed names (`ldap_oc_mappings`, `ldap_attr_mappings`,
//! `ldap_entries`, `ldap_entry_objclasses`; slapd-sql(5)), which cannot carry the `loadrig_`
//! prefix, so they live in a schema named for loadrig; `loadrig cleanup` drops exactly those
//! tables and that schema.

/// The schema's name.
pub const SCHEMA: &str = "loadrig_backsql";

/// back-sql's metadata tables, in an order that drops the referring ones first.
pub const TABLES: [&str; 4] = [
    "ldap_entry_objclasses",
    "ldap_entries",
    "ldap_attr_mappings",
    "ldap_oc_mappings",
];

/// One text row when the schema exists, none when not.
pub const EXISTS: &str = "SELECT nspname::text FROM pg_namespace WHERE nspname = 'loadrig_backsql'";

/// Drop the metadata tables, then the schema: without CASCADE, so an object of someone
/// else's that was put in the schema stops the drop instead of going with it.
pub fn drop_statement() -> String {
    let tables: Vec<String> = TABLES.iter().map(|t| format!("{SCHEMA}.{t}")).collect();
    format!(
        "DROP TABLE IF EXISTS {}; DROP SCHEMA {SCHEMA}",
        tables.join(", ")
    )
}
