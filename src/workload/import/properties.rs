//! Property files, YCSB's `-P FILE` (`--properties FILE`): the part of the
//! java.util.Properties syntax that YCSB's files use, each property a [`Setting`] that sets
//! a workload parameter as `--set NAME=VALUE` does.
//!
//! Read: `#` and `!` comment lines, blank lines, `NAME=VALUE`, `NAME: VALUE` and
//! `NAME VALUE`, whitespace around names and values dropped. Not read: backslash escapes
//! and continued lines, which YCSB's files do not use; a backslash is refused rather than
//! taken as it stands.

use std::path::Path;

use crate::error::InputError;
use crate::workload::{Setting, Source};

/// The properties of the file at `path`, in the order written.
pub fn read(path: &Path) -> Result<Vec<Setting>, InputError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        InputError::new(format!("--properties {name}: cannot read it: {e}"))
            .help("give the path of a YCSB property file, such as YCSB's workloads/workloada")
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
        Source {
            path: &name,
            text: &text,
        }
        .error(
            valid..valid,
            "expected UTF-8 text, found a byte that is not",
        )
        .help("save the file as UTF-8 (ASCII, as YCSB's own files are, is UTF-8)")
    })?;
    parse(&name, &text)
}

/// The properties of `text`, read from the file `name` (for the places in messages).
pub fn parse(name: &str, text: &str) -> Result<Vec<Setting>, InputError> {
    let source = Source { path: name, text };
    let mut settings = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let at = start;
        start += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let content = body.trim();
        if content.is_empty() || content.starts_with(['#', '!']) {
            continue;
        }
        let at = at + indent;
        if let Some(i) = content.find('\\') {
            return Err(source
                .error(at + i..at + i, "a backslash: escapes and continued lines of Java properties are not read")
                .help("write the value as it is, without backslashes (YCSB's core workload properties need none)"));
        }
        let name_end = content
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(content.len());
        let expected = "expected a property NAME=VALUE, NAME: VALUE or NAME VALUE";
        if name_end == 0 {
            return Err(source
                .error(
                    at..at,
                    format!("{expected}, found no name before '{}'", &content[..1]),
                )
                .help("write the property's name first, as in recordcount=1000"));
        }
        let rest = content[name_end..].trim_start();
        let value = match rest.strip_prefix(['=', ':']) {
            Some(value) => value.trim_start(),
            None if rest.is_empty() => {
                let end = at + name_end;
                return Err(source
                    .error(
                        end..end,
                        format!("{expected}, found '{content}' with no value"),
                    )
                    .help(format!(
                        "give it a value, as in {content}=VALUE, or make the line a comment with #"
                    )));
            }
            None => rest,
        };
        settings.push(Setting {
            name: content[..name_end].to_string(),
            value: value.to_string(),
            at: Some(source.at(at)),
        });
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Vec<(String, String, String)> {
        parse("w.properties", text)
            .unwrap()
            .into_iter()
            .map(|s| (s.name, s.value, s.at.unwrap()))
            .collect()
    }

    fn error(text: &str) -> (String, String) {
        let e = parse("w.properties", text).unwrap_err();
        (e.location.unwrap(), e.message)
    }

    #[test]
    fn reads_the_three_separators_comments_and_blank_lines() {
        let text = "# YCSB\n! also a comment\n\n   \nrecordcount=1000\r\n  operationcount : 50 \n\
                    requestdistribution\tzipfian\nworkload = site.ycsb.workloads.CoreWorkload\n\
                    table=\nreadallfields=TRUE";
        let own = |n: &str, v: &str, at: &str| (n.to_string(), v.to_string(), at.to_string());
        assert_eq!(
            props(text),
            [
                own("recordcount", "1000", "w.properties:5:1"),
                own("operationcount", "50", "w.properties:6:3"),
                own("requestdistribution", "zipfian", "w.properties:7:1"),
                own(
                    "workload",
                    "site.ycsb.workloads.CoreWorkload",
                    "w.properties:8:1"
                ),
                own("table", "", "w.properties:9:1"),
                own("readallfields", "TRUE", "w.properties:10:1"),
            ]
        );
        // Later lines win when applied in order, as in Java: both are kept here.
        assert_eq!(props("a=1\na=2\n").len(), 2);
        assert_eq!(props("# only comments\n"), []);
        // `=` after a space-separated name is the separator, as in Java.
        assert_eq!(props("a = = b")[0].1, "= b");
    }

    #[test]
    fn a_line_that_is_no_property_is_refused_at_its_place() {
        let (at, message) = error("# c\nrecordcount=10\n  =5\n");
        assert_eq!(at, "w.properties:3:3");
        assert!(message.contains("found no name before '='"), "{message}");
        let (at, message) = error("readallfields\n");
        assert_eq!(at, "w.properties:1:14");
        assert_eq!(
            message,
            "expected a property NAME=VALUE, NAME: VALUE or NAME VALUE, found 'readallfields' with no value"
        );
        let (at, message) = error("a=1\nb=C:\\\\dir\n");
        assert_eq!(at, "w.properties:2:5");
        assert!(message.starts_with("a backslash"), "{message}");
    }
}
