//! A directory of people (seed 002): entry `i` is `uid=user<i>,ou=people,BASE` with
//! cn `fname<i> lname<i>`, sn, givenName, mail, uid and a telephone number. `loadrig gen ldif`
//! writes it as LDIF (RFC 2849); the `directory` study loads the same entries everywhere.
//! Everything but the telephone number follows from `i`; the number is a hash of the seed
//! and `i`, so a seed gives the same file on every machine and in every version.

use std::io::{self, Write};

use base64::Engine as _;

use crate::error::InputError;

/// One person's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub dn: String,
    pub uid: String,
    pub cn: String,
    pub sn: String,
    pub given_name: String,
    pub mail: String,
    pub telephone_number: String,
}

/// The object classes of a person's entry.
pub const PERSON_CLASSES: [&str; 4] = ["top", "person", "organizationalPerson", "inetOrgPerson"];

impl Person {
    /// Person `i` under `people` (the DN of `ou=people,BASE`).
    pub fn new(i: u64, people: &str, seed: u64) -> Person {
        let h = splitmix64(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        Person {
            dn: format!("uid=user{i},{people}"),
            uid: format!("user{i}"),
            cn: format!("fname{i} lname{i}"),
            sn: format!("lname{i}"),
            given_name: format!("fname{i}"),
            mail: format!("fname{i}.lname{i}@example.com"),
            telephone_number: format!("+1 555 {:03} {:04}", h % 1000, (h >> 20) % 10_000),
        }
    }

    /// The attributes in LDIF order (objectClass first), LDAP names.
    pub fn attributes(&self) -> Vec<(&'static str, &str)> {
        let mut a: Vec<(&'static str, &str)> =
            PERSON_CLASSES.iter().map(|c| ("objectClass", *c)).collect();
        a.extend([
            ("uid", self.uid.as_str()),
            ("cn", self.cn.as_str()),
            ("sn", self.sn.as_str()),
            ("givenName", self.given_name.as_str()),
            ("mail", self.mail.as_str()),
            ("telephoneNumber", self.telephone_number.as_str()),
        ]);
        a
    }

    /// The value of an attribute by its LDAP name (any case), if a person has it.
    pub fn value(&self, attr: &str) -> Option<&str> {
        self.attributes()
            .into_iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(attr) && *name != "objectClass")
            .map(|(_, v)| v)
    }
}

/// SplitMix64's finaliser: a fixed, well-mixed hash (no crate's RNG, whose streams may
/// change between versions).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The DN of the people's folder under `base`.
pub fn people_dn(base: &str) -> String {
    format!("ou=people,{base}")
}

/// Check that `base` is a DN: RDNs `attr=value` separated by commas (a `\` escapes the next
/// character), each attribute a name or an OID, each value not empty. Returns it trimmed.
pub fn check_base(base: &str) -> Result<String, InputError> {
    let bad = |why: &str| {
        InputError::new(format!("--base '{base}' is not a DN: {why}"))
            .help("expected attr=value pairs separated by commas, like dc=example,dc=com")
    };
    let base = base.trim();
    if base.is_empty() {
        return Err(bad("it is empty"));
    }
    if base.contains(['\n', '\r', '\0']) {
        return Err(bad("it holds a line break or NUL"));
    }
    for rdn in split_rdns(base) {
        let Some((attr, value)) = rdn.split_once('=') else {
            return Err(bad(&format!("'{rdn}' has no '='")));
        };
        let attr = attr.trim();
        let name_ok = attr.starts_with(|c: char| c.is_ascii_alphabetic())
            && attr.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        let oid_ok = !attr.is_empty()
            && attr
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        if !name_ok && !oid_ok {
            return Err(bad(&format!("'{attr}' is not an attribute name")));
        }
        if value.trim().is_empty() {
            return Err(bad(&format!("'{rdn}' has an empty value")));
        }
    }
    Ok(base.to_string())
}

/// The RDNs of a DN: split at commas that no backslash escapes.
fn split_rdns(dn: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in dn.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                parts.push(&dn[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&dn[start..]);
    parts
}

/// Write the directory as LDIF: the `ou=people` entry, then `entries` people.
pub fn write(out: &mut impl Write, base: &str, entries: u64, seed: u64) -> io::Result<()> {
    let people = people_dn(base);
    writeln!(out, "version: 1\n")?;
    line(out, "dn", &people)?;
    line(out, "objectClass", "top")?;
    line(out, "objectClass", "organizationalUnit")?;
    line(out, "ou", "people")?;
    for i in 0..entries {
        let p = Person::new(i, &people, seed);
        writeln!(out)?;
        line(out, "dn", &p.dn)?;
        for (name, value) in p.attributes() {
            line(out, name, value)?;
        }
    }
    Ok(())
}

/// `name: value`, or `name:: base64` when the value is not a safe LDIF string.
fn line(out: &mut impl Write, name: &str, value: &str) -> io::Result<()> {
    let safe = value
        .bytes()
        .all(|b| (1..0x80).contains(&b) && b != b'\n' && b != b'\r')
        && !value.starts_with([' ', ':', '<'])
        && !value.ends_with(' ');
    if safe {
        writeln!(out, "{name}: {value}")
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        writeln!(out, "{name}:: {encoded}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases() {
        assert!(check_base("dc=example,dc=com").is_ok());
        assert!(check_base("cn=a\\,b,dc=x").is_ok());
        assert!(check_base("2.5.4.3=x").is_ok());
        for bad in ["", "example.com", "dc=", "=x", "dc=x,,dc=y", "d c=x"] {
            assert!(check_base(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn same_seed_same_file_and_unsafe_values_in_base64() {
        let text = |seed| {
            let mut v = Vec::new();
            write(&mut v, "dc=x", 5, seed).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(text(1), text(1));
        assert_ne!(text(1), text(2));
        assert!(text(1).contains("dn: uid=user4,ou=people,dc=x\n"));
        let mut v = Vec::new();
        line(&mut v, "dn", "o=Zürich").unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "dn:: bz1aw7xyaWNo\n");
    }
}
