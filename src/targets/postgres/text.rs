//! PostgreSQL's text output of a value, rendered from the binary form the server sends:
//! the text its output functions print (psql's), for the captures of native statements.
//! Dates and times render for DateStyle ISO, IntervalStyle postgres and, for timestamptz,
//! a UTC TimeZone; another setting, or a type without an exact rendering here, is an error
//! saying so (the caller suggests a `::text` cast).

use tokio_postgres::types::{Kind, Type};

/// The session settings that decide how dates and times print, as the server reported them
/// when the connection opened.
#[derive(Debug, Clone, Default)]
pub(super) struct Styles {
    pub timezone: String,
    pub datestyle: String,
    pub intervalstyle: String,
}

impl Styles {
    fn utc(&self) -> bool {
        let tz = self.timezone.to_ascii_lowercase();
        let tz = tz.strip_prefix("etc/").unwrap_or(&tz);
        [
            "utc",
            "uct",
            "gmt",
            "gmt0",
            "gmt+0",
            "gmt-0",
            "z",
            "zulu",
            "universal",
            "greenwich",
        ]
        .contains(&tz)
    }

    /// Dates print by DateStyle: only ISO renders here.
    fn iso_dates(&self, ty: &Type) -> Result<(), String> {
        if self.datestyle.starts_with("ISO") {
            Ok(())
        } else {
            Err(format!(
                "{} prints by DateStyle, which is '{}' in this session (loadrig renders ISO)",
                ty.name(),
                self.datestyle
            ))
        }
    }
}

/// The types whose binary form is their text.
pub(super) fn is_text_type(ty: &Type) -> bool {
    [
        Type::TEXT,
        Type::VARCHAR,
        Type::BPCHAR,
        Type::NAME,
        Type::UNKNOWN,
        Type::CHAR,
    ]
    .contains(ty)
}

type Rendered = Result<Vec<u8>, String>;

/// A column value, sent in binary, as the text the server prints for it (psql's output);
/// bytea stays raw. A type rendered here in no exact way is an error saying so.
pub(super) fn to_text(ty: &Type, raw: &[u8], st: &Styles) -> Rendered {
    match ty.kind() {
        Kind::Array(member) => return array_text(member, raw, st).map(String::into_bytes),
        Kind::Domain(base) => return to_text(base, raw, st),
        Kind::Enum(_) => return Ok(raw.to_vec()),
        Kind::Simple => {}
        _ => return Err(no_rendering(ty)),
    }
    if *ty == Type::BYTEA || is_text_type(ty) || [Type::JSON, Type::XML, Type::CHAR].contains(ty) {
        return Ok(raw.to_vec());
    }
    scalar_text(ty, raw, st).map(String::into_bytes)
}

fn no_rendering(ty: &Type) -> String {
    format!("type {} has no text rendering here", ty.name())
}

/// A binary value of type `ty` that is the whole of `raw`.
struct Wire<'a> {
    ty: &'a Type,
    raw: &'a [u8],
}

impl<'a> Wire<'a> {
    fn malformed(&self) -> String {
        format!("malformed {} value", self.ty.name())
    }

    /// The value, which must be exactly `n` bytes long.
    fn exact(&self, n: usize) -> Result<&'a [u8], String> {
        self.raw
            .get(..n)
            .filter(|_| self.raw.len() == n)
            .ok_or_else(|| self.malformed())
    }

    /// The value as a big-endian signed integer of exactly `n` bytes.
    fn int(&self, n: usize) -> Result<i64, String> {
        Ok(signed(self.exact(n)?))
    }
}

/// Big-endian two's complement bytes (1 to 8 of them) as an integer.
fn signed(b: &[u8]) -> i64 {
    b.iter().fold(i64::from(b[0] as i8) >> 8, |acc, x| {
        (acc << 8) | i64::from(*x)
    })
}

fn scalar_text(ty: &Type, raw: &[u8], st: &Styles) -> Result<String, String> {
    let w = Wire { ty, raw };
    Ok(match *ty {
        Type::BOOL => if w.exact(1)? == [1] { "t" } else { "f" }.to_string(),
        Type::INT2 => w.int(2)?.to_string(),
        Type::INT4 => w.int(4)?.to_string(),
        Type::INT8 => w.int(8)?.to_string(),
        Type::OID => (w.int(4)? as u32).to_string(),
        Type::FLOAT4 => {
            let v = f32::from_bits(w.int(4)? as u32);
            float_text(f64::from(v), &format!("{v:e}"), 6)
        }
        Type::FLOAT8 => {
            let v = f64::from_bits(w.int(8)? as u64);
            float_text(v, &format!("{v:e}"), 15)
        }
        Type::NUMERIC => numeric_text(raw).ok_or_else(|| w.malformed())?,
        Type::UUID => uuid_text(w.exact(16)?),
        // jsonb's binary form is a version byte, then the text.
        Type::JSONB if raw.first() == Some(&1) => String::from_utf8_lossy(&raw[1..]).into_owned(),
        Type::DATE
        | Type::TIME
        | Type::TIMETZ
        | Type::TIMESTAMP
        | Type::TIMESTAMPTZ
        | Type::INTERVAL => datetime_text(&w, st)?,
        _ => return Err(no_rendering(ty)),
    })
}

/// 16 bytes as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn uuid_text(b: &[u8]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// date, time, timetz, timestamp, timestamptz and interval, checking the session's
/// settings before the value.
fn datetime_text(w: &Wire<'_>, st: &Styles) -> Result<String, String> {
    let ty = w.ty;
    Ok(match *ty {
        Type::DATE => {
            st.iso_dates(ty)?;
            match w.int(4)? {
                d if d == i64::from(i32::MAX) => "infinity".into(),
                d if d == i64::from(i32::MIN) => "-infinity".into(),
                d => date_text(d),
            }
        }
        Type::TIME => time_text(w.int(8)?),
        Type::TIMETZ => {
            let b = w.exact(12)?;
            // The zone is stored in seconds west of Greenwich.
            time_text(signed(&b[..8])) + &offset_text(-signed(&b[8..]))
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            st.iso_dates(ty)?;
            let zone = if *ty == Type::TIMESTAMPTZ {
                if !st.utc() {
                    return Err(format!(
                        "timestamptz prints in the session's TimeZone, which is '{}' (loadrig renders UTC only)",
                        st.timezone
                    ));
                }
                "+00"
            } else {
                ""
            };
            timestamp_text(w.int(8)?, zone)
        }
        Type::INTERVAL => {
            if st.intervalstyle != "postgres" {
                return Err(format!(
                    "interval prints by IntervalStyle, which is '{}' in this session (loadrig renders postgres)",
                    st.intervalstyle
                ));
            }
            // Microseconds, then days, then months.
            let b = w.exact(16)?;
            interval_text(signed(&b[..8]), signed(&b[8..12]), signed(&b[12..]))
        }
        _ => return Err(no_rendering(ty)),
    })
}

/// Microseconds since 2000-01-01 00:00 as `YYYY-MM-DD HH:MM:SS[.f]`, then `zone`.
fn timestamp_text(us: i64, zone: &str) -> String {
    match us {
        i64::MAX => "infinity".into(),
        i64::MIN => "-infinity".into(),
        us => {
            const DAY: i64 = 86_400_000_000;
            // ` BC` goes after the time and zone.
            let date = date_text(us.div_euclid(DAY));
            let (ymd, bc) = date.split_at(date.find(' ').unwrap_or(date.len()));
            format!("{ymd} {}{zone}{bc}", time_text(us.rem_euclid(DAY)))
        }
    }
}

/// A float as PostgreSQL prints it (extra_float_digits 1, the default): the shortest text
/// that reads back exactly, in exponent form when the decimal exponent is below -4 or at
/// least `digits` (15 for float8, 6 for float4). `sci` is Rust's shortest `{:e}` form.
fn float_text(v: f64, sci: &str, digits: i32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let (sign, sci) = match sci.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", sci),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let d: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let body = if (-4..digits).contains(&exp) {
        if exp < 0 {
            format!("0.{}{d}", "0".repeat((-exp - 1) as usize))
        } else if d.len() <= exp as usize + 1 {
            format!("{d}{}", "0".repeat(exp as usize + 1 - d.len()))
        } else {
            format!("{}.{}", &d[..=exp as usize], &d[exp as usize + 1..])
        }
    } else {
        let rest = if d.len() > 1 {
            format!(".{}", &d[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{}{rest}e{esign}{:02}", &d[..1], exp.abs())
    };
    format!("{sign}{body}")
}

/// Days since 2000-01-01 as `YYYY-MM-DD`, with ` BC` for years before 1 (proleptic
/// Gregorian, as PostgreSQL counts).
fn date_text(days: i64) -> String {
    // Howard Hinnant's civil_from_days, from 1970-01-01.
    let z = days + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year <= 0 {
        format!("{:04}-{month:02}-{day:02} BC", 1 - year)
    } else {
        format!("{year:04}-{month:02}-{day:02}")
    }
}

/// Microseconds as `HH:MM:SS` with the fraction, trailing zeros dropped; negative for
/// interval parts.
fn time_text(us: i64) -> String {
    let sign = if us < 0 { "-" } else { "" };
    let us = us.unsigned_abs();
    let secs = us / 1_000_000;
    format!(
        "{sign}{:02}:{:02}:{:02}{}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        fraction(us % 1_000_000)
    )
}

fn fraction(us: u64) -> String {
    if us == 0 {
        String::new()
    } else {
        format!(".{us:06}").trim_end_matches('0').to_string()
    }
}

/// A UTC offset in seconds as `+HH`, `+HH:MM` or `+HH:MM:SS`.
fn offset_text(secs: i64) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let s = secs.unsigned_abs();
    let mut out = format!("{sign}{:02}", s / 3600);
    if !s.is_multiple_of(3600) {
        out.push_str(&format!(":{:02}", s / 60 % 60));
    }
    if !s.is_multiple_of(60) {
        out.push_str(&format!(":{:02}", s % 60));
    }
    out
}

/// An interval in IntervalStyle postgres: `1 year 2 mons -3 days +04:05:06.5`.
fn interval_text(us: i64, days: i64, months: i64) -> String {
    let mut out = String::new();
    // Each part after a negative one carries an explicit sign, as PostgreSQL writes them.
    let mut before = false;
    for (n, unit) in [(months / 12, "year"), (months % 12, "mon"), (days, "day")] {
        if n != 0 {
            let plus = if before && n > 0 { "+" } else { "" };
            let s = if n == 1 { "" } else { "s" };
            let space = if out.is_empty() { "" } else { " " };
            out.push_str(&format!("{space}{plus}{n} {unit}{s}"));
            before = n < 0;
        }
    }
    if out.is_empty() || us != 0 {
        let space = if out.is_empty() { "" } else { " " };
        let plus = if before && us >= 0 { "+" } else { "" };
        out.push_str(&format!("{space}{plus}{}", time_text(us)));
    }
    out
}

/// A binary array as PostgreSQL's text: `{1,2,NULL}`, `{{1,2},{3,4}}`, `[0:1]={7,8}`.
fn array_text(member: &Type, raw: &[u8], st: &Styles) -> Result<String, String> {
    let mut r = Reader { raw, at: 0 };
    let dims = r.header()?;
    if dims.is_empty() {
        return Ok("{}".into());
    }
    let mut out = String::new();
    if dims.iter().any(|&(_, lower)| lower != 1) {
        for &(len, lower) in &dims {
            out.push_str(&format!("[{lower}:{}]", i64::from(lower) + len as i64 - 1));
        }
        out.push('=');
    }
    let total: usize = dims.iter().map(|d| d.0).product();
    for i in 0..total {
        // Open a brace for every dimension that starts here, close for every one that ends.
        let mut stride = total;
        for &(len, _) in &dims {
            stride /= len.max(1);
            if i % (stride * len) == 0 {
                out.push('{');
            }
        }
        match r.element()? {
            None => out.push_str("NULL"),
            Some(bytes) => quote_element(&element_text(member, bytes, st)?, &mut out),
        }
        let mut stride = 1;
        let mut ends = 0;
        for &(len, _) in dims.iter().rev() {
            stride *= len;
            if (i + 1) % stride == 0 {
                ends += 1;
            } else {
                break;
            }
        }
        out.extend(std::iter::repeat_n('}', ends));
        if i + 1 < total {
            out.push(',');
        }
    }
    Ok(out)
}

fn malformed_array() -> String {
    "malformed array value".to_string()
}

/// Reads a binary array from its start.
struct Reader<'a> {
    raw: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let b = self
            .raw
            .get(self.at..self.at + n)
            .ok_or_else(malformed_array)?;
        self.at += n;
        Ok(b)
    }

    fn word(&mut self) -> Result<i32, String> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().map_err(|_| malformed_array())?,
        ))
    }

    /// The header: the length and lower bound of each dimension (none for an empty array).
    fn header(&mut self) -> Result<Vec<(usize, i32)>, String> {
        let ndim = usize::try_from(self.word()?).map_err(|_| malformed_array())?;
        self.word()?; // has nulls
        self.word()?; // element type, known from the column
        let mut dims = Vec::with_capacity(ndim);
        for _ in 0..ndim {
            let (len, lower) = (self.word()?, self.word()?);
            dims.push((usize::try_from(len).map_err(|_| malformed_array())?, lower));
        }
        Ok(dims)
    }

    /// The next element's bytes, `None` for NULL.
    fn element(&mut self) -> Result<Option<&'a [u8]>, String> {
        let len = self.word()?;
        if len < 0 {
            return Ok(None);
        }
        self.take(len as usize).map(Some)
    }
}

/// An array element's text before quoting: bytea in hex, as bytea's output function
/// prints it, where a column of bytea is captured raw.
fn element_text(member: &Type, bytes: &[u8], st: &Styles) -> Result<String, String> {
    if *member == Type::BYTEA {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("\\x{hex}"))
    } else {
        String::from_utf8(to_text(member, bytes, st)?).map_err(|_| malformed_array())
    }
}

/// An array element, in double quotes when it is empty, NULL, or holds a character that
/// has a meaning in array text.
fn quote_element(text: &str, out: &mut String) {
    let needs = text.is_empty()
        || text.eq_ignore_ascii_case("null")
        || text.chars().any(|c| {
            matches!(
                c,
                '"' | '\\' | '{' | '}' | ',' | ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'
            )
        });
    if !needs {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// NUMERIC's binary form (base-10000 digits) as decimal text.
fn numeric_text(raw: &[u8]) -> Option<String> {
    use std::fmt::Write;
    let word =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes(raw.get(i..i + 2)?.try_into().ok()?)) };
    let ndigits = word(0)? as usize;
    let weight = word(2)? as i16 as i32;
    let sign = word(4)?;
    let dscale = word(6)? as usize;
    let digits: Vec<u16> = (0..ndigits)
        .map(|d| word(8 + 2 * d))
        .collect::<Option<_>>()?;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digit = |i: i32| -> u16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            let _ = if i == 0 {
                write!(s, "{}", digit(i))
            } else {
                write!(s, "{:04}", digit(i))
            };
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        s.push('.');
        s.push_str(&frac);
    }
    Some(s)
}

/// Values in PostgreSQL's binary wire format, built here as its send functions write them
/// (the hex fixtures are the output of `int8send`, `numeric_send`, `array_send`, ...), and
/// the text its output functions print for the same values.
#[cfg(test)]
mod tests {
    use super::*;

    fn styles() -> Styles {
        Styles {
            timezone: "Etc/UTC".into(),
            datestyle: "ISO, MDY".into(),
            intervalstyle: "postgres".into(),
        }
    }

    fn text(ty: &Type, raw: &[u8]) -> String {
        String::from_utf8(to_text(ty, raw, &styles()).unwrap()).unwrap()
    }

    fn hex(h: &str) -> Vec<u8> {
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    }

    fn numeric(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b
    }

    /// An interval: microseconds, days, months.
    fn interval(us: i64, days: i32, months: i32) -> Vec<u8> {
        let mut b = us.to_be_bytes().to_vec();
        b.extend(days.to_be_bytes());
        b.extend(months.to_be_bytes());
        b
    }

    /// An array of element type `oid`: each dimension's (length, lower bound), then the
    /// elements in row-major order, `None` for NULL.
    fn array(oid: u32, dims: &[(i32, i32)], items: &[Option<&[u8]>]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend((dims.len() as i32).to_be_bytes());
        b.extend(i32::from(items.iter().any(Option::is_none)).to_be_bytes());
        b.extend(oid.to_be_bytes());
        for (len, lower) in dims {
            b.extend(len.to_be_bytes());
            b.extend(lower.to_be_bytes());
        }
        for item in items {
            match item {
                Some(v) => {
                    b.extend((v.len() as i32).to_be_bytes());
                    b.extend(*v);
                }
                None => b.extend((-1i32).to_be_bytes()),
            }
        }
        b
    }

    const DAY_US: i64 = 86_400_000_000;
    const HOUR_US: i64 = 3_600_000_000;

    #[test]
    fn bools_and_integers() {
        assert_eq!(text(&Type::BOOL, &[1]), "t");
        assert_eq!(text(&Type::BOOL, &[0]), "f");
        assert_eq!(text(&Type::INT2, &hex("8000")), "-32768");
        assert_eq!(text(&Type::INT2, &(-2i16).to_be_bytes()), "-2");
        assert_eq!(text(&Type::INT4, &i32::MAX.to_be_bytes()), "2147483647");
        assert_eq!(text(&Type::INT4, &(-1i32).to_be_bytes()), "-1");
        assert_eq!(
            text(&Type::INT8, &hex("8000000000000000")),
            "-9223372036854775808"
        );
        assert_eq!(text(&Type::INT8, &(-7i64).to_be_bytes()), "-7");
        assert_eq!(text(&Type::OID, &hex("ffffffff")), "4294967295");
        // A value of the wrong size is malformed, not misread.
        let e = to_text(&Type::INT4, &[0, 0, 1], &styles()).unwrap_err();
        assert_eq!(e, "malformed int4 value");
        assert!(to_text(&Type::BOOL, &[], &styles()).is_err());
    }

    #[test]
    fn float4_values() {
        let f4 = |v: f32| text(&Type::FLOAT4, &v.to_be_bytes());
        assert_eq!(text(&Type::FLOAT4, &hex("4996b438")), "1.234567e+06");
        assert_eq!(f4(123456.0), "123456");
        assert_eq!(f4(0.1), "0.1");
        assert_eq!(f4(f32::NAN), "NaN");
        assert_eq!(text(&Type::FLOAT4, &hex("ff800000")), "-Infinity");
        assert_eq!(f4(f32::INFINITY), "Infinity");
        assert_eq!(f4(-0.0), "-0");
        assert_eq!(f4(3.402_823_5e38), "3.4028235e+38");
        assert_eq!(text(&Type::FLOAT4, &hex("00000001")), "1e-45");
    }

    #[test]
    fn float8_values() {
        let f8 = |v: f64| text(&Type::FLOAT8, &v.to_be_bytes());
        assert_eq!(f8(0.1), "0.1");
        assert_eq!(f8(1e15), "1e+15");
        assert_eq!(f8(0.00001), "1e-05");
        assert_eq!(f8(0.0001), "0.0001");
        assert_eq!(text(&Type::FLOAT8, &hex("8000000000000000")), "-0");
        assert_eq!(f8(123_456_789_012_345.0), "123456789012345");
        assert_eq!(f8(1_234_567_890_123_456.0), "1.234567890123456e+15");
        assert_eq!(f8(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(f8(5e-324), "5e-324");
        assert_eq!(f8(100.0), "100");
        assert_eq!(f8(123.456), "123.456");
        assert_eq!(f8(2.5), "2.5");
        assert_eq!(f8(f64::NAN), "NaN");
        assert_eq!(f8(f64::INFINITY), "Infinity");
        assert_eq!(f8(f64::NEG_INFINITY), "-Infinity");
    }

    #[test]
    fn floats_print_as_postgresql_does() {
        let f8 = |v: f64| float_text(v, &format!("{v:e}"), 15);
        assert_eq!(f8(0.1), "0.1");
        assert_eq!(f8(1e15), "1e+15");
        assert_eq!(f8(123456789012345.0), "123456789012345");
        assert_eq!(f8(0.0001), "0.0001");
        assert_eq!(f8(0.00001), "1e-05");
        assert_eq!(f8(-0.0), "-0");
        assert_eq!(f8(1.5e-300), "1.5e-300");
        assert_eq!(f8(f64::NEG_INFINITY), "-Infinity");
        let f4 = |v: f32| float_text(f64::from(v), &format!("{v:e}"), 6);
        assert_eq!(f4(123456.0), "123456");
        assert_eq!(f4(1234567.0), "1.234567e+06");
        assert_eq!(f4(0.1), "0.1");
    }

    #[test]
    fn numeric_binary_to_text() {
        // 12345.678 = 1|2345|6780, weight 1, dscale 3
        assert_eq!(
            numeric_text(&numeric(3, 1, 0, 3, &[1, 2345, 6780])).unwrap(),
            "12345.678"
        );
        // -0.05 = 0500 at weight -1, dscale 2
        assert_eq!(
            numeric_text(&numeric(1, -1, 0x4000, 2, &[500])).unwrap(),
            "-0.05"
        );
        // 1000000 = 100|0000 with trailing zero groups dropped: 1 digit 100 at weight 1
        assert_eq!(
            numeric_text(&numeric(1, 1, 0, 0, &[100])).unwrap(),
            "1000000"
        );
        assert_eq!(numeric_text(&numeric(0, 0, 0, 2, &[])).unwrap(), "0.00");
        assert_eq!(numeric_text(&numeric(0, 0, 0xC000, 0, &[])).unwrap(), "NaN");
        assert!(numeric_text(&[0, 1]).is_none());
    }

    #[test]
    fn numeric_values() {
        let n = |h: &str| text(&Type::NUMERIC, &hex(h));
        assert_eq!(n("0003000100000004000109291a85"), "12345.6789");
        assert_eq!(
            text(&Type::NUMERIC, &numeric(3, 1, 0, 4, &[1, 2345, 6789])),
            "12345.6789"
        );
        assert_eq!(n("0001ffff400000060001"), "-0.000100");
        assert_eq!(n("00040002000000010001000000001388"), "100000000.5");
        assert_eq!(n("0001ffff000000011388"), "0.5");
        assert_eq!(n("0000000000000000"), "0");
        assert_eq!(n("00000000c0000000"), "NaN");
        assert_eq!(n("00000000d0000020"), "Infinity");
        assert_eq!(n("00000000f0000020"), "-Infinity");
        let e = to_text(&Type::NUMERIC, &hex("0002"), &styles()).unwrap_err();
        assert_eq!(e, "malformed numeric value");
    }

    #[test]
    fn uuid_and_json() {
        assert_eq!(
            text(&Type::UUID, &hex("a0eebc999c0b4ef8bb6d6bb9bd380a11")),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        );
        assert_eq!(
            text(&Type::UUID, &[0; 16]),
            "00000000-0000-0000-0000-000000000000"
        );
        assert!(to_text(&Type::UUID, &[0; 15], &styles()).is_err());
        // json is sent as its text; jsonb as a version byte (1), then its text.
        assert_eq!(text(&Type::JSON, br#"{"a": [1, 2]}"#), r#"{"a": [1, 2]}"#);
        assert_eq!(text(&Type::JSON, b"null"), "null");
        assert_eq!(
            text(
                &Type::JSONB,
                &hex("017b2261223a2022782079222c202262223a20317d")
            ),
            r#"{"a": "x y", "b": 1}"#
        );
        assert_eq!(text(&Type::JSONB, b"\x01{}"), "{}");
        // Another jsonb version is not known here.
        assert!(to_text(&Type::JSONB, b"\x02{}", &styles()).is_err());
        assert_eq!(text(&Type::TEXT, b"abc"), "abc");
        // A bytea column is captured raw.
        assert_eq!(
            to_text(&Type::BYTEA, b"\x00\xff", &styles()).unwrap(),
            b"\x00\xff"
        );
    }

    #[test]
    fn dates() {
        let d = |days: i32| text(&Type::DATE, &days.to_be_bytes());
        assert_eq!(text(&Type::DATE, &hex("00002279")), "2024-02-29");
        assert_eq!(d(8_825), "2024-02-29");
        assert_eq!(text(&Type::DATE, &hex("fff49d7b")), "0044-03-15 BC");
        assert_eq!(d(-1), "1999-12-31");
        assert_eq!(d(i32::MAX), "infinity");
        assert_eq!(d(i32::MIN), "-infinity");
    }

    #[test]
    fn dates_count_from_2000_in_the_proleptic_gregorian_calendar() {
        assert_eq!(date_text(0), "2000-01-01");
        assert_eq!(date_text(-730_119), "0001-01-01");
        assert_eq!(date_text(-730_120), "0001-12-31 BC");
        assert_eq!(date_text(-730_486), "0002-12-31 BC");
        assert_eq!(date_text(8_460), "2023-03-01");
    }

    #[test]
    fn times_with_and_without_zone() {
        let t = |us: i64| text(&Type::TIME, &us.to_be_bytes());
        assert_eq!(
            text(&Type::TIME, &hex("000000141dd75fff")),
            "23:59:59.999999"
        );
        assert_eq!(t(0), "00:00:00");
        assert_eq!(t(12 * HOUR_US + 30 * 60_000_000 + 500_000), "12:30:00.5");
        // timetz: microseconds, then the zone in seconds west of Greenwich.
        let tz = |us: i64, west: i32| {
            let mut b = us.to_be_bytes().to_vec();
            b.extend(west.to_be_bytes());
            text(&Type::TIMETZ, &b)
        };
        assert_eq!(
            text(&Type::TIMETZ, &hex("0000000a0eebb000ffffb2a8")),
            "12:00:00+05:30"
        );
        assert_eq!(
            text(&Type::TIMETZ, &hex("00000000dde878c000007080")),
            "01:02:03-08"
        );
        assert_eq!(tz(250_000, 0), "00:00:00.25+00");
        assert_eq!(tz(0, -(5 * 3600 + 45 * 60 + 30)), "00:00:00+05:45:30");
        assert!(to_text(&Type::TIMETZ, &[0; 8], &styles()).is_err());
    }

    #[test]
    fn timestamps() {
        let ts = |us: i64| text(&Type::TIMESTAMP, &us.to_be_bytes());
        let tstz = |us: i64| text(&Type::TIMESTAMPTZ, &us.to_be_bytes());
        let at = |days: i64, secs: i64, us: i64| days * DAY_US + secs * 1_000_000 + us;
        assert_eq!(
            text(&Type::TIMESTAMP, &hex("0002b5843c5d9da0")),
            "2024-02-29 13:45:06.5"
        );
        assert_eq!(
            ts(at(8_825, 13 * 3600 + 45 * 60 + 6, 500_000)),
            "2024-02-29 13:45:06.5"
        );
        assert_eq!(ts(1_500_000), "2000-01-01 00:00:01.5");
        assert_eq!(
            text(&Type::TIMESTAMP, &hex("ff1fc63d1bb12000")),
            "0001-01-01 00:00:00 BC"
        );
        assert_eq!(ts(i64::MIN), "-infinity");
        assert_eq!(ts(i64::MAX), "infinity");
        assert_eq!(tstz(0), "2000-01-01 00:00:00+00");
        assert_eq!(
            tstz(at(8_825, 13 * 3600 + 45 * 60 + 6, 123_456)),
            "2024-02-29 13:45:06.123456+00"
        );
        // '1969-12-31 23:59:59+02'
        assert_eq!(
            text(&Type::TIMESTAMPTZ, &hex("fffca2fd179195c0")),
            "1969-12-31 21:59:59+00"
        );
        // The zone goes before the era.
        assert_eq!(
            text(&Type::TIMESTAMPTZ, &hex("ff1af9e8fb4aa090")),
            "0044-03-15 12:00:00.25+00 BC"
        );
        assert_eq!(tstz(i64::MAX), "infinity");
    }

    #[test]
    fn intervals() {
        assert_eq!(
            interval(((4 * 60 + 5) * 60 + 6) * 1_000_000 + 789_000, 3, 14),
            hex("000000036c97ca88000000030000000e")
        );
        let iv =
            |us: i64, days: i32, months: i32| text(&Type::INTERVAL, &interval(us, days, months));
        assert_eq!(
            text(&Type::INTERVAL, &hex("000000036c97ca88000000030000000e")),
            "1 year 2 mons 3 days 04:05:06.789"
        );
        assert_eq!(
            text(&Type::INTERVAL, &hex("00000001ad274800ffffffff00000000")),
            "-1 days +02:00:00"
        );
        assert_eq!(
            text(&Type::INTERVAL, &hex("ffffffffffe91ca00000000000000000")),
            "-00:00:01.5"
        );
        assert_eq!(
            text(&Type::INTERVAL, &hex("fffffffffff0bdc000000001ffffffff")),
            "-1 mons +1 day -00:00:01"
        );
        assert_eq!(iv(3_723_000_000, -1, 14), "1 year 2 mons -1 days +01:02:03");
        assert_eq!(iv(0, 0, 0), "00:00:00");
        assert_eq!(iv(0, 0, -14), "-1 years -2 mons");
        assert_eq!(iv(0, -1, 1), "1 mon -1 days");
        assert_eq!(iv(0, 1, 0), "1 day");
        assert_eq!(iv(0, 0, 12), "1 year");
        assert_eq!(iv(0, 0, 13), "1 year 1 mon");
        assert_eq!(iv(100 * HOUR_US, 0, 0), "100:00:00");
        assert_eq!(iv(-2 * HOUR_US, -1, 0), "-1 days -02:00:00");
    }

    #[test]
    fn arrays_of_scalars_with_nulls_and_bounds() {
        let int4 = |v: i32| v.to_be_bytes();
        let (one, two) = (int4(1), int4(2));
        let ia = |dims: &[(i32, i32)], items: &[Option<&[u8]>]| {
            text(&Type::INT4_ARRAY, &array(23, dims, items))
        };
        assert_eq!(
            text(
                &Type::INT4_ARRAY,
                &hex("000000010000000100000017000000030000000100000004000000010000000400000002ffffffff")
            ),
            "{1,2,NULL}"
        );
        assert_eq!(ia(&[(3, 1)], &[Some(&one), Some(&two), None]), "{1,2,NULL}");
        // The builder writes what array_send does.
        assert_eq!(
            array(23, &[(3, 1)], &[Some(&one), Some(&two), None]),
            hex("000000010000000100000017000000030000000100000004000000010000000400000002ffffffff")
        );
        assert_eq!(
            text(&Type::INT4_ARRAY, &hex("000000000000000000000017")),
            "{}"
        );
        assert_eq!(
            text(
                &Type::INT4_ARRAY,
                &hex("000000010000000000000017000000020000000000000004000000070000000400000008")
            ),
            "[0:1]={7,8}"
        );
        let mut b = text(
            &Type::BOOL_ARRAY,
            &array(16, &[(3, 1)], &[Some(&[1]), Some(&[0]), None]),
        );
        assert_eq!(b, "{t,f,NULL}");
        b = text(
            &Type::UUID_ARRAY,
            &array(
                2950,
                &[(1, 1)],
                &[Some(&hex("a0eebc999c0b4ef8bb6d6bb9bd380a11"))],
            ),
        );
        assert_eq!(b, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}");
        assert_eq!(
            text(
                &Type::NUMERIC_ARRAY,
                &array(
                    1700,
                    &[(2, 1)],
                    &[Some(&numeric(2, 0, 0, 2, &[1, 5000])), None]
                )
            ),
            "{1.50,NULL}"
        );
        let f8 = |v: f64| v.to_be_bytes();
        assert_eq!(
            text(
                &Type::FLOAT8_ARRAY,
                &array(
                    701,
                    &[(5, 1)],
                    &[
                        Some(&f8(1e15)),
                        Some(&f8(0.00001)),
                        Some(&f8(-0.0)),
                        Some(&f8(f64::NAN)),
                        Some(&f8(f64::NEG_INFINITY))
                    ]
                )
            ),
            "{1e+15,1e-05,-0,NaN,-Infinity}"
        );
    }

    #[test]
    fn nested_arrays_close_every_dimension() {
        let items: Vec<[u8; 4]> = (1..=4i32).map(i32::to_be_bytes).collect();
        let items: Vec<Option<&[u8]>> = items.iter().map(|i| Some(&i[..])).collect();
        assert_eq!(
            text(&Type::INT4_ARRAY, &array(23, &[(2, 1), (2, 1)], &items)),
            "{{1,2},{3,4}}"
        );
        assert_eq!(
            text(
                &Type::INT4_ARRAY,
                &hex("000000020000000000000017000000020000000100000002000000010000000400000001000000040000000200000004000000030000000400000004")
            ),
            "{{1,2},{3,4}}"
        );
        assert_eq!(
            text(
                &Type::INT4_ARRAY,
                &hex("000000020000000000000017000000020000000100000002000000000000000400000001000000040000000200000004000000030000000400000004")
            ),
            "[1:2][0:1]={{1,2},{3,4}}"
        );
        assert_eq!(
            text(
                &Type::INT4_ARRAY,
                &array(23, &[(2, 1), (2, 1), (1, 1)], &items)
            ),
            "{{{1},{2}},{{3},{4}}}"
        );
        let t = |s: &'static str| Some(s.as_bytes());
        assert_eq!(
            text(
                &Type::TEXT_ARRAY,
                &array(25, &[(2, 1), (2, 1)], &[t("a"), None, t(""), t("b c")])
            ),
            r#"{{a,NULL},{"","b c"}}"#
        );
    }

    #[test]
    fn array_elements_are_quoted_where_array_text_needs_it() {
        let t = |s: &'static str| Some(s.as_bytes());
        let ta = |items: &[Option<&[u8]>]| {
            text(
                &Type::TEXT_ARRAY,
                &array(25, &[(items.len() as i32, 1)], items),
            )
        };
        assert_eq!(
            text(
                &Type::TEXT_ARRAY,
                &hex("00000001000000010000001900000006000000010000000361206200000000ffffffff0000000371227800000005706c61696e000000046e756c6c")
            ),
            r#"{"a b","",NULL,"q\"x",plain,"null"}"#
        );
        assert_eq!(
            ta(&[t("a b"), t(""), None, t("q\"x"), t("plain"), t("null")]),
            r#"{"a b","",NULL,"q\"x",plain,"null"}"#
        );
        assert_eq!(ta(&[t("\\x")]), r#"{"\\x"}"#);
        assert_eq!(
            ta(&[t("a,b"), t("{x}"), t("NULL"), t("tab\\there"), t("Null")]),
            r#"{"a,b","{x}","NULL","tab\\there","Null"}"#
        );
        assert_eq!(
            ta(&[t("a\tb"), t(" "), t("x y")]),
            "{\"a\tb\",\" \",\"x y\"}"
        );
        // jsonb elements quote their own quotes.
        assert_eq!(
            text(
                &Type::JSONB_ARRAY,
                &array(3802, &[(1, 1)], &[t("\x01{\"k\": 1}")])
            ),
            r#"{"{\"k\": 1}"}"#
        );
    }

    #[test]
    fn arrays_of_dates_times_and_bytea() {
        assert_eq!(
            text(
                &Type::DATE_ARRAY,
                &array(
                    1082,
                    &[(2, 1)],
                    &[Some(&8_766i32.to_be_bytes()), Some(&i32::MAX.to_be_bytes())]
                )
            ),
            "{2024-01-01,infinity}"
        );
        assert_eq!(
            text(
                &Type::TIMESTAMPTZ_ARRAY,
                &array(1184, &[(1, 1)], &[Some(&(8_766 * DAY_US).to_be_bytes())])
            ),
            r#"{"2024-01-01 00:00:00+00"}"#
        );
        assert_eq!(
            text(
                &Type::INTERVAL_ARRAY,
                &array(
                    1186,
                    &[(2, 1)],
                    &[Some(&interval(0, 1, 0)), Some(&interval(0, 0, 0))]
                )
            ),
            r#"{"1 day",00:00:00}"#
        );
        // bytea elements print in hex, as bytea's output function does.
        assert_eq!(
            text(
                &Type::BYTEA_ARRAY,
                &hex("0000000100000000000000110000000100000001000000020102")
            ),
            r#"{"\\x0102"}"#
        );
    }

    #[test]
    fn malformed_arrays_are_errors() {
        let good = array(23, &[(2, 1)], &[Some(&1i32.to_be_bytes()), None]);
        for cut in [0, 3, 12, 20, good.len() - 1] {
            assert!(
                to_text(&Type::INT4_ARRAY, &good[..cut], &styles()).is_err(),
                "cut at {cut}"
            );
        }
        // An element of the wrong size fails as its own type does.
        let e = to_text(
            &Type::INT4_ARRAY,
            &array(23, &[(1, 1)], &[Some(&[0, 1])]),
            &styles(),
        )
        .unwrap_err();
        assert_eq!(e, "malformed int4 value");
    }

    #[test]
    fn domains_and_enums_print_as_their_base() {
        let domain = Type::new(
            "posint".into(),
            90_001,
            Kind::Domain(Type::INT4),
            "public".into(),
        );
        assert_eq!(text(&domain, &5i32.to_be_bytes()), "5");
        let mood = Type::new(
            "mood".into(),
            90_002,
            Kind::Enum(vec!["happy".into()]),
            "public".into(),
        );
        assert_eq!(text(&mood, b"happy"), "happy");
    }

    #[test]
    fn other_types_and_settings_are_errors_that_say_why() {
        let st = styles();
        assert_eq!(
            to_text(&Type::POINT, &[0; 16], &st).unwrap_err(),
            "type point has no text rendering here"
        );
        assert!(to_text(
            &Type::POINT_ARRAY,
            &array(600, &[(1, 1)], &[Some(&[0; 16])]),
            &st
        )
        .is_err());
        let berlin = Styles {
            timezone: "Europe/Berlin".into(),
            ..st.clone()
        };
        let e = to_text(&Type::TIMESTAMPTZ, &0i64.to_be_bytes(), &berlin).unwrap_err();
        assert!(e.contains("'Europe/Berlin'"), "{e}");
        for zone in ["UTC", "Etc/UTC", "GMT", "Zulu", "Etc/Greenwich"] {
            let st = Styles {
                timezone: zone.into(),
                ..st.clone()
            };
            assert!(
                to_text(&Type::TIMESTAMPTZ, &0i64.to_be_bytes(), &st).is_ok(),
                "{zone}"
            );
        }
        let german = Styles {
            datestyle: "German, DMY".into(),
            ..st.clone()
        };
        let e = to_text(&Type::DATE, &0i32.to_be_bytes(), &german).unwrap_err();
        assert!(
            e.contains("DateStyle") && e.contains("'German, DMY'"),
            "{e}"
        );
        assert!(to_text(&Type::TIMESTAMP, &0i64.to_be_bytes(), &german).is_err());
        // time does not depend on DateStyle.
        assert!(to_text(&Type::TIME, &0i64.to_be_bytes(), &german).is_ok());
        let iso = Styles {
            intervalstyle: "iso_8601".into(),
            ..st.clone()
        };
        let e = to_text(&Type::INTERVAL, &interval(0, 1, 0), &iso).unwrap_err();
        assert!(
            e.contains("IntervalStyle") && e.contains("'iso_8601'"),
            "{e}"
        );
    }
}
