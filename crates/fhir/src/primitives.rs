//! Primitive values checked against the lexical rules of their FHIR R4 type (the `regex` of each primitive's
//! definition, plus what the regexes cannot say: a date must exist, integers have ranges).
//!
//! Reading stays lossless and does not check: a converter must be able to carry a resource as it came. Callers
//! that want valid data ask [`Resource::invalid_primitives`](crate::Resource::invalid_primitives) and decide to
//! refuse or warn; the answer names each value by its path, so the same issue reads the same in every format.

use crate::model::{NodeId, PrimValue, Tree, UNKNOWN_ELEM, Value};
use crate::schema::{Kind, PrimKind};

/// A primitive value that its type does not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrimitiveIssue {
    /// FHIRPath-like location: `Patient.birthDate`, `Bundle.entry[2].resource.valueQuantity.value`.
    pub path: String,
    /// The FHIR type (`date`, `dateTime`, `id`, ...).
    pub type_name: &'static str,
    /// The value as written.
    pub value: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl std::fmt::Display for PrimitiveIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {:?} is not a valid {}: {}",
            self.path, self.value, self.type_name, self.problem
        )
    }
}

/// Every invalid primitive under `node`, in document order.
pub(crate) fn check(tree: &Tree, node: NodeId, path: &mut String, out: &mut Vec<PrimitiveIssue>) {
    let n = tree.node(node);
    for f in tree.fields(n) {
        if f.elem == UNKNOWN_ELEM {
            continue;
        }
        let def = n.elem_def(f);
        let ty = def.types[f.alt as usize];
        let ty_def = ty.def();
        let values = tree.values(f);
        let len = path.len();
        path.push('.');
        path.push_str(def.name);
        if def.choice {
            let mut name = ty_def.name.chars();
            if let Some(first) = name.next() {
                path.extend(first.to_uppercase());
                path.push_str(name.as_str());
            }
        }
        let base = path.len();
        for (i, v) in values.iter().enumerate() {
            if def.many {
                path.truncate(base);
                path.push_str(&format!("[{i}]"));
            }
            match v {
                Value::Node(child) => check(tree, *child, path, out),
                Value::Prim(p) => {
                    let Kind::Primitive(kind) = ty_def.kind else {
                        continue;
                    };
                    let Some(value) = &p.value else { continue };
                    if let Some(problem) = problem(ty_def.name, kind, tree, value) {
                        out.push(PrimitiveIssue {
                            path: path.clone(),
                            type_name: ty_def.name,
                            value: tree.text(value).into_owned(),
                            problem,
                        });
                    }
                }
            }
        }
        path.truncate(len);
    }
}

fn problem(
    type_name: &str,
    kind: PrimKind,
    tree: &Tree,
    value: &PrimValue,
) -> Option<&'static str> {
    match (kind, value) {
        (PrimKind::Integer, PrimValue::Int(i)) => match type_name {
            "positiveInt" if *i < 1 => Some("a positiveInt is 1 or more"),
            "unsignedInt" if *i < 0 => Some("an unsignedInt is 0 or more"),
            _ if *i < i64::from(i32::MIN) || *i > i64::from(i32::MAX) => {
                Some("out of the 32-bit range FHIR integers have")
            }
            _ => None,
        },
        (PrimKind::Decimal, PrimValue::Str(s)) => decimal(tree.str(*s)),
        (PrimKind::String, PrimValue::Str(s)) => lexical(type_name, tree.str(*s)),
        _ => None,
    }
}

/// The rule of a string-valued primitive type.
fn lexical(type_name: &str, v: &str) -> Option<&'static str> {
    match type_name {
        "date" => date(v, DateForm::Date),
        "dateTime" => date(v, DateForm::DateTime),
        "instant" => date(v, DateForm::Instant),
        "time" => (!time(v.as_bytes())).then_some("expected hh:mm:ss[.fff]"),
        "id" => (v.is_empty()
            || v.len() > 64
            || !v
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
        .then_some("1 to 64 of A-Z, a-z, 0-9, '-' and '.'"),
        // `[^\s]+(\s[^\s]+)*`, where `\s` is XML Schema's: space, tab, CR and LF only (not NBSP).
        "code" => (v.is_empty()
            || v.starts_with(xsd_space)
            || v.ends_with(xsd_space)
            || v.split(xsd_space).any(str::is_empty))
        .then_some("no leading, trailing or repeated whitespace"),
        "uri" | "url" | "canonical" => v.contains(xsd_space).then_some("a URI has no whitespace"),
        "oid" => (!oid(v)).then_some("expected urn:oid: and dotted numbers"),
        "uuid" => (!uuid(v)).then_some("expected urn:uuid: and a lower-case UUID"),
        "base64Binary" => (!base64(v)).then_some("not base64"),
        "string" | "markdown" => v.is_empty().then_some("a string is never empty"),
        _ => None,
    }
}

/// Whitespace as the FHIR regexes (XML Schema's `\s`) mean it.
fn xsd_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn decimal(v: &str) -> Option<&'static str> {
    let b = v.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let int = digits(&mut i);
    let ok_int = int == 1 || (int > 1 && b[i - int] != b'0');
    let mut ok = ok_int;
    if ok && b.get(i) == Some(&b'.') {
        i += 1;
        ok = digits(&mut i) > 0;
    }
    if ok && matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        ok = digits(&mut i) > 0;
    }
    (!(ok && i == b.len())).then_some("expected a decimal number such as 12, -0.5 or 1.5e3")
}

#[derive(Clone, Copy, PartialEq)]
enum DateForm {
    Date,
    DateTime,
    Instant,
}

/// `YYYY`, `YYYY-MM`, `YYYY-MM-DD` (a date that exists), then for dateTime and instant `Thh:mm:ss[.f+]` and a
/// zone (`Z` or `±hh:mm`), which instant requires.
fn date(v: &str, form: DateForm) -> Option<&'static str> {
    let b = v.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let s = b.get(r)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| s.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let expected = match form {
        DateForm::Date => "expected YYYY, YYYY-MM or YYYY-MM-DD",
        DateForm::DateTime => {
            "expected YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm:ss with a time zone"
        }
        DateForm::Instant => "expected YYYY-MM-DDThh:mm:ss[.fff] with a time zone",
    };
    let Some(year) = num(0..4) else {
        return Some(expected);
    };
    if year == 0 {
        return Some("there is no year 0000");
    }
    if b.len() == 4 {
        return (form == DateForm::Instant).then_some(expected);
    }
    let (Some(b'-'), Some(month)) = (b.get(4), num(5..7)) else {
        return Some(expected);
    };
    if !(1..=12).contains(&month) {
        return Some("the month is not 01 to 12");
    }
    if b.len() == 7 {
        return (form == DateForm::Instant).then_some(expected);
    }
    let (Some(b'-'), Some(day)) = (b.get(7), num(8..10)) else {
        return Some(expected);
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day == 0 || day > days {
        return Some("that day does not exist");
    }
    if b.len() == 10 {
        return (form == DateForm::Instant).then_some(expected);
    }
    if form == DateForm::Date || b.get(10) != Some(&b'T') {
        return Some(expected);
    }
    let rest = &b[11..];
    let zone_at = rest
        .iter()
        .position(|c| matches!(c, b'Z' | b'+' | b'-'))
        .unwrap_or(rest.len());
    let (clock, zone) = rest.split_at(zone_at);
    if !time(clock) {
        return Some(expected);
    }
    let zone_ok = match zone {
        b"Z" => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            let all = [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit());
            let hours = u32::from(h1.wrapping_sub(b'0')) * 10 + u32::from(h2.wrapping_sub(b'0'));
            let minutes = u32::from(m1.wrapping_sub(b'0')) * 10 + u32::from(m2.wrapping_sub(b'0'));
            all && (hours < 14 && minutes < 60 || hours == 14 && minutes == 0)
        }
        _ => false,
    };
    (!zone_ok).then_some("a time needs a zone: Z or +hh:mm / -hh:mm")
}

/// `hh:mm:ss[.f+]` with hh 00-23, mm 00-59, ss 00-60 (a leap second).
fn time(b: &[u8]) -> bool {
    let two = |i: usize, max: u8| {
        b.get(i..i + 2).is_some_and(|d| {
            d.iter().all(u8::is_ascii_digit) && (d[0] - b'0') * 10 + (d[1] - b'0') <= max
        })
    };
    let whole =
        b.len() >= 8 && two(0, 23) && b[2] == b':' && two(3, 59) && b[5] == b':' && two(6, 60);
    whole
        && match &b[8..] {
            [] => true,
            [b'.', frac @ ..] => !frac.is_empty() && frac.iter().all(u8::is_ascii_digit),
            _ => false,
        }
}

fn oid(v: &str) -> bool {
    let Some(rest) = v.strip_prefix("urn:oid:") else {
        return false;
    };
    let mut arcs = rest.split('.');
    let first_ok = matches!(arcs.next(), Some("0" | "1" | "2"));
    let mut count = 0;
    let others_ok = arcs.all(|a| {
        count += 1;
        !a.is_empty() && a.bytes().all(|d| d.is_ascii_digit()) && (a == "0" || !a.starts_with('0'))
    });
    first_ok && count > 0 && others_ok
}

fn uuid(v: &str) -> bool {
    let Some(rest) = v.strip_prefix("urn:uuid:") else {
        return false;
    };
    let groups: Vec<&str> = rest.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| {
            g.len() == n
                && g.bytes()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        })
}

fn base64(v: &str) -> bool {
    let mut count = 0usize;
    let mut padding = 0usize;
    for c in v.bytes() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            padding += 1;
        } else if padding > 0 || !(c.is_ascii_alphanumeric() || c == b'+' || c == b'/') {
            return false;
        }
        count += 1;
    }
    count.is_multiple_of(4) && padding <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_follow_the_r4_grammar_and_the_calendar() {
        for ok in ["2024", "2024-02", "2024-02-29", "1900-12-31"] {
            assert_eq!(date(ok, DateForm::Date), None, "{ok}");
        }
        for bad in [
            "notadate",
            "2023-02-29",
            "2024-13",
            "2024-1-01",
            "0000",
            "2024-02-30",
            "2024-02-29T10:00:00Z",
        ] {
            assert!(date(bad, DateForm::Date).is_some(), "{bad}");
        }
        for ok in [
            "2024-02-29T23:59:60Z",
            "2015-02-07T13:28:17.239+02:00",
            "2017-01-01T00:00:00-14:00",
            "2018",
        ] {
            assert_eq!(date(ok, DateForm::DateTime), None, "{ok}");
        }
        for bad in [
            "2015-02-07T13:28:17",
            "2015-02-07T24:00:00Z",
            "2015-02-07T13:28Z",
            "2015-02-07T13:28:17+15:00",
        ] {
            assert!(date(bad, DateForm::DateTime).is_some(), "{bad}");
        }
        assert!(date("2015-02-07", DateForm::Instant).is_some());
        assert_eq!(date("2015-02-07T13:28:17.239Z", DateForm::Instant), None);
    }

    #[test]
    fn other_types() {
        assert_eq!(decimal("-0.50"), None);
        assert_eq!(decimal("1.5e3"), None);
        for bad in ["01", "1.", ".5", "1e", "abc", "+1", ""] {
            assert!(decimal(bad).is_some(), "{bad}");
        }
        assert_eq!(lexical("id", "a-B.9"), None);
        assert!(lexical("id", "a b").is_some());
        assert!(lexical("id", &"x".repeat(65)).is_some());
        assert_eq!(lexical("code", "in progress"), None);
        assert!(lexical("code", " lead").is_some() && lexical("code", "two  spaces").is_some());
        assert_eq!(
            lexical("code", "KIDN\u{a0}"),
            None,
            "NBSP is not whitespace to XML Schema"
        );
        assert!(oid("urn:oid:2.16.840.1.113883") && !oid("urn:oid:3.1") && !oid("urn:oid:1.02"));
        assert!(uuid("urn:uuid:c757873d-ec9a-4326-a141-556f43239520"));
        assert!(!uuid("urn:uuid:C757873D-EC9A-4326-A141-556F43239520"));
        assert!(base64("aGVsbG8=") && !base64("aGVsbG8") && !base64("a$=="));
        assert!(time(b"23:59:60.5") && !time(b"23:59") && !time(b"23:59:00."));
        assert!(lexical("uri", "http://a b").is_some());
    }
}
