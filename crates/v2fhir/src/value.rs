//! v2 primitive values to FHIR primitives: DTM to `date`/`dateTime`/`instant`, NM to `decimal`, ID `Y`/`N` to
//! `boolean`. A value that does not fit its FHIR type is not written; the caller reports it with its path.

use crate::tree::Node;
use bumpalo::Bump;
use bumpalo::collections::String as BString;
use fhir::{JsonKind, TypeShape};

/// Why a value could not be written.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unfit {
    /// Not a value of the type at all.
    Invalid,
    /// A time without a zone: FHIR requires one, so only the date is kept.
    TimeWithoutZone,
}

/// The FHIR primitive for `text` as `ty`, or why it does not fit. A `TimeWithoutZone` still yields the date.
/// `text` lives as long as the arena (the message's own text, or a copy in the arena), so that a value written as
/// it is needs no copy.
pub(crate) fn convert<'b>(
    bump: &'b Bump,
    text: &'b str,
    ty: TypeShape,
) -> (Option<Node<'b>>, Option<Unfit>) {
    let text = text.trim();
    if text.is_empty() {
        return (None, None);
    }
    match ty.name() {
        "date" => match dtm(text) {
            Some(d) => (Some(Node::Str(d.date(bump))), None),
            None => (None, Some(Unfit::Invalid)),
        },
        "dateTime" => match dtm(text) {
            Some(d) => match d.date_time(bump) {
                Some(s) => (Some(Node::Str(s)), None),
                None => (Some(Node::Str(d.date(bump))), Some(Unfit::TimeWithoutZone)),
            },
            None => (None, Some(Unfit::Invalid)),
        },
        "xhtml" => {
            // Narrative: the text, escaped, in the XHTML div FHIR requires.
            let escaped = text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            (
                Some(Node::Str(bump.alloc_str(&format!(
                    "<div xmlns=\"http://www.w3.org/1999/xhtml\">{escaped}</div>"
                )))),
                None,
            )
        }
        "instant" => match dtm(text).and_then(|d| d.instant(bump)) {
            Some(s) => (Some(Node::Str(s)), None),
            None => (None, Some(Unfit::Invalid)),
        },
        "time" => match time(text) {
            Some(t) => (Some(Node::Str(bump.alloc_str(&t))), None),
            None => (None, Some(Unfit::Invalid)),
        },
        "boolean" => match text {
            "Y" | "y" | "T" | "true" => (Some(Node::Bool(true)), None),
            "N" | "n" | "F" | "false" => (Some(Node::Bool(false)), None),
            _ => (None, Some(Unfit::Invalid)),
        },
        "decimal" => match decimal(bump, text) {
            Some(d) => (Some(Node::Num(d)), None),
            None => (None, Some(Unfit::Invalid)),
        },
        "integer" | "positiveInt" | "unsignedInt" => {
            let ok = text.parse::<i64>().is_ok_and(|n| match ty.name() {
                "positiveInt" => n > 0,
                "unsignedInt" => n >= 0,
                _ => i32::try_from(n).is_ok(),
            });
            if ok {
                (Some(Node::Num(text.trim_start_matches('+'))), None)
            } else {
                (None, Some(Unfit::Invalid))
            }
        }
        "code" | "id" => {
            // A code has no leading/trailing or repeated whitespace; an id is [A-Za-z0-9.-]{1,64}.
            let ok = if ty.name() == "id" {
                text.len() <= 64
                    && text
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
            } else {
                !text.contains("  ")
            };
            if ok {
                (Some(Node::Str(text)), None)
            } else {
                (None, Some(Unfit::Invalid))
            }
        }
        _ if ty.json_kind() == JsonKind::String => (Some(Node::Str(text)), None),
        _ => (None, Some(Unfit::Invalid)),
    }
}

/// A parsed DTM: `YYYY[MM[DD[HH[MM[SS[.S+]]]]]][+/-ZZZZ]`.
struct Dtm<'a> {
    digits: &'a str,
    fraction: &'a str,
    zone: Option<&'a str>,
}

fn dtm(text: &str) -> Option<Dtm<'_>> {
    let (main, zone) = match text.find(['+', '-']) {
        Some(i) if i >= 4 => (&text[..i], Some(&text[i..])),
        _ => (text, None),
    };
    let (digits, fraction) = match main.split_once('.') {
        Some((d, f)) => (d, f),
        None => (main, ""),
    };
    let ok_len = matches!(digits.len(), 4 | 6 | 8 | 10 | 12 | 14);
    if !ok_len
        || !digits.bytes().all(|c| c.is_ascii_digit())
        || !fraction.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    if let Some(z) = zone
        && (z.len() != 5 || !z[1..].bytes().all(|c| c.is_ascii_digit()))
    {
        return None;
    }
    // Two digits at `a` (all are ASCII digits, checked above), when the value is that long.
    let d = digits.as_bytes();
    let two = |a: usize| {
        (d.len() >= a + 2).then(|| u32::from(d[a] - b'0') * 10 + u32::from(d[a + 1] - b'0'))
    };
    // The day must exist in its month (`20170229` is no date).
    let days = |y: u32, m: u32| match m {
        2 if y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let year = two(0).unwrap_or(0) * 100 + two(2).unwrap_or(0); // at least 4 digits
    if two(4).is_some_and(|m| !(1..=12).contains(&m))
        || two(6).is_some_and(|d| d < 1 || d > days(year, two(4).unwrap_or(1)))
        || two(8).is_some_and(|h| h > 23)
        || two(10).is_some_and(|m| m > 59)
        || two(12).is_some_and(|s| s > 59)
    {
        return None;
    }
    Some(Dtm {
        digits,
        fraction,
        zone,
    })
}

impl Dtm<'_> {
    fn date<'b>(&self, bump: &'b Bump) -> &'b str {
        // Written piece by piece into the arena (`format!` costs more than the date): `YYYY`, `YYYY-MM`,
        // `YYYY-MM-DD`.
        let mut s = BString::with_capacity_in(10, bump);
        self.push_date(&mut s);
        s.into_bump_str()
    }

    fn push_date(&self, s: &mut BString<'_>) {
        let d = self.digits;
        match d.len() {
            4 => s.push_str(d),
            6 => {
                s.push_str(&d[..4]);
                s.push('-');
                s.push_str(&d[4..6]);
            }
            _ => {
                s.push_str(&d[..4]);
                s.push('-');
                s.push_str(&d[4..6]);
                s.push('-');
                s.push_str(&d[6..8]);
            }
        }
    }

    /// `None` when the value has a time but no zone.
    fn date_time<'b>(&self, bump: &'b Bump) -> Option<&'b str> {
        if self.digits.len() <= 8 {
            return Some(self.date(bump));
        }
        let zone = self.zone?;
        Some(self.with_time(zone, bump))
    }

    /// An instant needs a zone and at least minutes (seconds default to 00: the v2 value said no more).
    fn instant<'b>(&self, bump: &'b Bump) -> Option<&'b str> {
        (self.digits.len() >= 12).then_some(())?;
        Some(self.with_time(self.zone?, bump))
    }

    fn with_time<'b>(&self, zone: &str, bump: &'b Bump) -> &'b str {
        let d = self.digits;
        let mm = d.get(10..12).unwrap_or("00");
        let ss = d.get(12..14).unwrap_or("00");
        // `{date}T{hh}:{mm}:{ss}`, written piece by piece.
        let mut s = BString::with_capacity_in(32, bump);
        self.push_date(&mut s);
        s.push('T');
        s.push_str(&d[8..10]);
        s.push(':');
        s.push_str(mm);
        s.push(':');
        s.push_str(ss);
        if !self.fraction.is_empty() && d.len() == 14 {
            s.push('.');
            s.push_str(self.fraction);
        }
        s.push_str(&zone[..3]);
        s.push(':');
        s.push_str(&zone[3..]);
        s.into_bump_str()
    }
}

fn time(text: &str) -> Option<String> {
    let digits = text.split(['+', '-']).next()?;
    let (d, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if !matches!(d.len(), 2 | 4 | 6) || !d.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut s = format!(
        "{}:{}:{}",
        &d[..2],
        d.get(2..4).unwrap_or("00"),
        d.get(4..6).unwrap_or("00")
    );
    if !frac.is_empty() && frac.bytes().all(|c| c.is_ascii_digit()) {
        s.push('.');
        s.push_str(frac);
    }
    Some(s)
}

/// FHIR's decimal grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; v2 NM allows a leading `+` and
/// leading zeros, which are dropped.
fn decimal<'b>(bump: &'b Bump, text: &'b str) -> Option<&'b str> {
    let (neg, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Most values are written as FHIR writes them (`7.5`, `452`, `0.9`): the text itself, not a copy.
    let canonical = !text.starts_with('+')
        && !int.is_empty()
        && (int == "0" || !int.starts_with('0'))
        && (!frac.is_empty() || !rest.contains('.'));
    if canonical {
        return Some(text);
    }
    let int = int.trim_start_matches('0');
    let mut s = BString::with_capacity_in(text.len() + 1, bump);
    if neg {
        s.push('-');
    }
    s.push_str(if int.is_empty() { "0" } else { int });
    if !frac.is_empty() {
        s.push('.');
        s.push_str(frac);
    }
    Some(s.into_bump_str())
}

/// A UUID in its text form: 8-4-4-4-12 hexadecimal digits.
pub(crate) fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_told_from_other_text() {
        assert!(is_uuid("426d2726-51fc-00fe-a946-8596e80a80eb"));
        assert!(!is_uuid("426d2726-51fc-00fe-a946-8596e80a80e"));
        assert!(!is_uuid("426d2726-51fc-00fe-a946-8596e80a80eg"));
    }

    fn conv(text: &str, ty: &str) -> (Option<Node<'static>>, Option<Unfit>) {
        // A leaked arena per call: a handful of small values in a test.
        let bump: &'static Bump = Box::leak(Box::new(Bump::new()));
        convert(bump, bump.alloc_str(text), TypeShape::named(ty).unwrap())
    }

    #[test]
    fn dates_follow_fhir() {
        assert_eq!(conv("19800315", "date").0, Some(Node::Str("1980-03-15")));
        assert_eq!(
            conv("198003151200", "date").0,
            Some(Node::Str("1980-03-15"))
        );
        assert_eq!(
            conv("20240315143000+0100", "dateTime").0,
            Some(Node::Str("2024-03-15T14:30:00+01:00"))
        );
        assert_eq!(
            conv("20240315143000", "dateTime"),
            (Some(Node::Str("2024-03-15")), Some(Unfit::TimeWithoutZone))
        );
        assert_eq!(conv("20241315", "date"), (None, Some(Unfit::Invalid)));
        assert_eq!(conv("20170229", "date"), (None, Some(Unfit::Invalid)));
        assert_eq!(conv("20000229", "date").0, Some(Node::Str("2000-02-29")));
        assert_eq!(conv("+007.50", "decimal").0, Some(Node::Num("7.50")));
        // Written as they are when FHIR writes them so, rewritten otherwise.
        for (v2, fhir) in [
            ("7.5", "7.5"),
            ("452", "452"),
            ("0.9", "0.9"),
            ("-0.5", "-0.5"),
            ("0", "0"),
            ("5.", "5"),
            (".5", "0.5"),
            ("-.5", "-0.5"),
            ("00", "0"),
            ("-05", "-5"),
            ("+3", "3"),
        ] {
            assert_eq!(conv(v2, "decimal").0, Some(Node::Num(fhir)), "{v2}");
        }
        assert_eq!(conv("1e", "decimal"), (None, Some(Unfit::Invalid)));
        assert_eq!(conv("Y", "boolean").0, Some(Node::Bool(true)));
        assert_eq!(conv("0", "positiveInt"), (None, Some(Unfit::Invalid)));
    }
}
