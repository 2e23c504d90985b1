//! v2 primitive values to FHIR primitives: DTM to `date`/`dateTime`/`instant`, NM to `decimal`, ID `Y`/`N` to
//! `boolean`. A value that does not fit its FHIR type is not written; the caller reports it with its path.

use crate::tree::Node;
use bumpalo::Bump;
use bumpalo::collections::String as BString;
use fhir::{JsonKind, TypeShape};
use jiff::tz::{AmbiguousOffset, TimeZone};

/// Why a value could not be written.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unfit {
    /// Not a value of the type at all.
    Invalid,
    /// A time without a zone: FHIR requires one, so a `dateTime` keeps only its date and an `instant` is left
    /// out.
    TimeWithoutZone,
}

/// How a value is converted to a FHIR type: the primitives read in their own way, by name, once per type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Date,
    DateTime,
    Instant,
    Time,
    Xhtml,
    Boolean,
    Decimal,
    Integer,
    PositiveInt,
    UnsignedInt,
    Code,
    Id,
    /// Any other primitive that JSON writes as a string (`string`, `uri`, `markdown`...): the text as it is.
    Text,
    /// Not a primitive written as a string: nothing fits.
    None,
}

/// How values of `ty` are converted, from a table made once by [`TypeShape::index`] rather than by comparing the
/// type's name for each value (a dozen string comparisons for `string`, the commonest, which came last).
fn kind_of(ty: TypeShape) -> Kind {
    static TABLE: std::sync::OnceLock<Vec<Kind>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        (0..)
            .map_while(TypeShape::from_index)
            .map(|t| match t.name() {
                "date" => Kind::Date,
                "dateTime" => Kind::DateTime,
                "instant" => Kind::Instant,
                "time" => Kind::Time,
                "xhtml" => Kind::Xhtml,
                "boolean" => Kind::Boolean,
                "decimal" => Kind::Decimal,
                "integer" => Kind::Integer,
                "positiveInt" => Kind::PositiveInt,
                "unsignedInt" => Kind::UnsignedInt,
                "code" => Kind::Code,
                "id" => Kind::Id,
                _ if t.json_kind() == JsonKind::String => Kind::Text,
                _ => Kind::None,
            })
            .collect()
    });
    table.get(ty.index()).copied().unwrap_or(Kind::None)
}

/// The FHIR primitive for `text` as `ty`, or why it does not fit. A `TimeWithoutZone` still yields the date.
/// `text` lives as long as the arena (the message's own text, or a copy in the arena), so that a value written as
/// it is needs no copy. `zone`: where a time sent without an offset was read (v2: the sender's local time).
pub(crate) fn convert<'b>(
    bump: &'b Bump,
    text: &'b str,
    ty: TypeShape,
    zone: Option<&TimeZone>,
) -> (Option<Node<'b>>, Option<Unfit>) {
    // Most values are trimmed already (an ASCII letter or digit at each end): `trim`, which decodes characters
    // from both ends, only for the others.
    let bytes = text.as_bytes();
    let trimmed = matches!((bytes.first(), bytes.last()), (Some(a), Some(z)) if a.is_ascii_graphic() && z.is_ascii_graphic());
    let text = if trimmed { text } else { text.trim() };
    if text.is_empty() {
        return (None, None);
    }
    match kind_of(ty) {
        Kind::Date => match dtm(text) {
            Some(d) => (Some(Node::Str(d.date(bump))), None),
            None => (None, Some(Unfit::Invalid)),
        },
        Kind::DateTime => match dtm(text) {
            Some(d) => match d.date_time(bump, zone) {
                Some(s) => (Some(Node::Str(s)), None),
                None => (Some(Node::Str(d.date(bump))), Some(Unfit::TimeWithoutZone)),
            },
            None => (None, Some(Unfit::Invalid)),
        },
        Kind::Xhtml => {
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
        Kind::Instant => match dtm(text) {
            Some(d) => match d.instant(bump, zone) {
                Some(s) => (Some(Node::Str(s)), None),
                None if d.digits.len() >= 12 && d.zone.is_none() => {
                    (None, Some(Unfit::TimeWithoutZone))
                }
                None => (None, Some(Unfit::Invalid)),
            },
            None => (None, Some(Unfit::Invalid)),
        },
        Kind::Time => match time(text) {
            Some(t) => (Some(Node::Str(bump.alloc_str(&t))), None),
            None => (None, Some(Unfit::Invalid)),
        },
        Kind::Boolean => match text {
            "Y" | "y" | "T" | "true" => (Some(Node::Bool(true)), None),
            "N" | "n" | "F" | "false" => (Some(Node::Bool(false)), None),
            _ => (None, Some(Unfit::Invalid)),
        },
        Kind::Decimal => match decimal(bump, text) {
            Some(d) => (Some(Node::Num(d)), None),
            None => (None, Some(Unfit::Invalid)),
        },
        kind @ (Kind::Integer | Kind::PositiveInt | Kind::UnsignedInt) => {
            let n = text.parse::<i64>().ok().filter(|&n| match kind {
                Kind::PositiveInt => n > 0,
                Kind::UnsignedInt => n >= 0,
                _ => i32::try_from(n).is_ok(),
            });
            match n {
                // Written as sent when FHIR (and JSON) would write it so; `002`, `+5`, `-0` as the number they
                // are: JSON has no leading zeros or plus sign, and a Bundle with them is not JSON.
                Some(_) if canonical_integer(text) => (Some(Node::Num(text)), None),
                Some(n) => (Some(Node::Num(bump.alloc_str(&n.to_string()))), None),
                None => (None, Some(Unfit::Invalid)),
            }
        }
        kind @ (Kind::Code | Kind::Id) => {
            // A code has no leading/trailing or repeated whitespace; an id is [A-Za-z0-9.-]{1,64}.
            let ok = if kind == Kind::Id {
                text.len() <= 64
                    && text
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
            } else {
                // Not `contains("  ")`: a substring searcher costs more to set up than these few bytes.
                !text.as_bytes().windows(2).any(|w| w == b"  ")
            };
            if ok {
                (Some(Node::Str(text)), None)
            } else {
                (None, Some(Unfit::Invalid))
            }
        }
        Kind::Text => (Some(Node::Str(text)), None),
        Kind::None => (None, Some(Unfit::Invalid)),
    }
}

/// A parsed DTM: `YYYY[MM[DD[HH[MM[SS[.S+]]]]]][+/-ZZZZ]`.
struct Dtm<'a> {
    digits: &'a str,
    fraction: &'a str,
    zone: Option<&'a str>,
}

fn dtm(text: &str) -> Option<Dtm<'_>> {
    // By bytes (all three are ASCII): a `char` pattern's searcher costs more than these few digits.
    let (main, zone) = match text.bytes().position(|b| b == b'+' || b == b'-') {
        Some(i) if i >= 4 => (&text[..i], Some(&text[i..])),
        _ => (text, None),
    };
    let (digits, fraction) = match main.bytes().position(|b| b == b'.') {
        Some(i) => (&main[..i], &main[i + 1..]),
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

    /// `None` when the value has a time but no zone, its own or `local`'s.
    fn date_time<'b>(&self, bump: &'b Bump, local: Option<&TimeZone>) -> Option<&'b str> {
        if self.digits.len() <= 8 {
            return Some(self.date(bump));
        }
        let zone = self.offset(local)?;
        Some(self.with_time(zone.as_str(), bump))
    }

    /// An instant needs a zone and at least minutes (seconds default to 00: the v2 value said no more).
    fn instant<'b>(&self, bump: &'b Bump, local: Option<&TimeZone>) -> Option<&'b str> {
        (self.digits.len() >= 12).then_some(())?;
        let zone = self.offset(local)?;
        Some(self.with_time(zone.as_str(), bump))
    }

    /// The value's own offset (`+HHMM`), else the offset `local` had at the value's clock time. A time that
    /// a change to summer time skipped, or that its change back repeats, takes the offset in effect before the
    /// change (the earlier instant; RFC 5545's and Temporal's "compatible" choice). The clock digits are kept
    /// as sent either way.
    fn offset(&self, local: Option<&TimeZone>) -> Option<Offset> {
        if let Some(z) = self.zone {
            return Offset::parse(z);
        }
        let local = local?;
        let d = self.digits.as_bytes();
        let num = |a: usize, len: usize| {
            d.get(a..a + len).map_or(0, |s| {
                s.iter().fold(0i32, |n, b| n * 10 + i32::from(b - b'0'))
            })
        };
        let civil = jiff::civil::DateTime::new(
            i16::try_from(num(0, 4)).ok()?,
            i8::try_from(num(4, 2)).ok()?,
            i8::try_from(num(6, 2)).ok()?,
            i8::try_from(num(8, 2)).ok()?,
            i8::try_from(num(10, 2)).ok()?,
            i8::try_from(num(12, 2)).ok()?,
            0,
        )
        .ok()?;
        let offset = match local.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => offset,
            AmbiguousOffset::Gap { before, .. } | AmbiguousOffset::Fold { before, .. } => before,
        };
        Some(Offset::from_seconds(offset.seconds()))
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

/// A UTC offset as v2 writes it, `+HHMM`, kept on the stack.
struct Offset([u8; 5]);

impl Offset {
    fn parse(z: &str) -> Option<Offset> {
        // `dtm` checked the form: a sign and four digits.
        Some(Offset(z.as_bytes().try_into().ok()?))
    }

    /// Whole minutes: FHIR's offsets have no seconds (only local mean times before about 1900 had them).
    fn from_seconds(seconds: i32) -> Offset {
        let sign = if seconds < 0 { b'-' } else { b'+' };
        let minutes = seconds.unsigned_abs() / 60;
        let (h, m) = (minutes / 60, minutes % 60);
        let digit = |n: u32| b'0' + (n % 10) as u8;
        Offset([sign, digit(h / 10), digit(h), digit(m / 10), digit(m)])
    }

    fn as_str(&self) -> &str {
        // A sign and ASCII digits.
        std::str::from_utf8(&self.0).unwrap_or("+0000")
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
/// Whether an integer's text is as FHIR writes it (`[0]|-?[1-9][0-9]*`), so that it can be written as it is.
fn canonical_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (!digits.starts_with('0') || text == "0")
}

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
        convert(
            bump,
            bump.alloc_str(text),
            TypeShape::named(ty).unwrap(),
            None,
        )
    }

    fn conv_in(text: &str, ty: &str, zone: &str) -> Option<Node<'static>> {
        let bump: &'static Bump = Box::leak(Box::new(Bump::new()));
        let zone = TimeZone::get(zone).unwrap();
        let (node, unfit) = convert(
            bump,
            bump.alloc_str(text),
            TypeShape::named(ty).unwrap(),
            Some(&zone),
        );
        assert_eq!(unfit, None, "{text} as {ty}");
        node
    }

    #[test]
    fn a_time_without_offset_takes_the_offset_its_zone_had_then() {
        // New York: EST (-05:00) in winter, EDT (-04:00) from 2024-03-10 02:00 (skipped to 03:00) to 2024-11-03
        // 02:00 (01:00-02:00 repeated).
        for (v2, fhir) in [
            ("202401151200", "2024-01-15T12:00:00-05:00"),
            ("20240715123456", "2024-07-15T12:34:56-04:00"),
            ("20240310013000", "2024-03-10T01:30:00-05:00"),
            // Skipped by the change: the offset before it (the same instant as 03:30-04:00).
            ("20240310023000", "2024-03-10T02:30:00-05:00"),
            ("20240310033000", "2024-03-10T03:30:00-04:00"),
            // Repeated: the earlier of the two.
            ("20241103013000", "2024-11-03T01:30:00-04:00"),
            ("20241103023000", "2024-11-03T02:30:00-05:00"),
            // The value's own offset wins.
            ("20240715123456+0200", "2024-07-15T12:34:56+02:00"),
            ("20240715123456.25", "2024-07-15T12:34:56.25-04:00"),
        ] {
            assert_eq!(
                conv_in(v2, "dateTime", "America/New_York"),
                Some(Node::Str(fhir)),
                "{v2}"
            );
        }
        assert_eq!(
            conv_in("202407151234", "instant", "America/New_York"),
            Some(Node::Str("2024-07-15T12:34:00-04:00"))
        );
        // Half-hour zones and zones east of UTC; a date alone stays a date.
        assert_eq!(
            conv_in("202401151200", "dateTime", "Asia/Kolkata"),
            Some(Node::Str("2024-01-15T12:00:00+05:30"))
        );
        assert_eq!(
            conv_in("202401151200", "dateTime", "Europe/Berlin"),
            Some(Node::Str("2024-01-15T12:00:00+01:00"))
        );
        assert_eq!(
            conv_in("20240115", "dateTime", "Europe/Berlin"),
            Some(Node::Str("2024-01-15"))
        );
        // Without a zone an instant needs the value's own offset.
        assert_eq!(
            conv("202407151234", "instant"),
            (None, Some(Unfit::TimeWithoutZone))
        );
        assert_eq!(conv("2024071512", "instant"), (None, Some(Unfit::Invalid)));
    }

    #[test]
    fn each_type_is_read_as_its_kind() {
        for (name, kind) in [
            ("date", Kind::Date),
            ("dateTime", Kind::DateTime),
            ("instant", Kind::Instant),
            ("time", Kind::Time),
            ("xhtml", Kind::Xhtml),
            ("boolean", Kind::Boolean),
            ("decimal", Kind::Decimal),
            ("integer", Kind::Integer),
            ("positiveInt", Kind::PositiveInt),
            ("unsignedInt", Kind::UnsignedInt),
            ("code", Kind::Code),
            ("id", Kind::Id),
            // The other primitives are their text; complex types and resources fit no text.
            ("string", Kind::Text),
            ("uri", Kind::Text),
            ("url", Kind::Text),
            ("canonical", Kind::Text),
            ("oid", Kind::Text),
            ("uuid", Kind::Text),
            ("markdown", Kind::Text),
            ("base64Binary", Kind::Text),
            ("CodeableConcept", Kind::None),
            ("Quantity", Kind::None),
            ("Patient", Kind::None),
            ("Reference", Kind::None),
        ] {
            assert!(kind_of(TypeShape::named(name).unwrap()) == kind, "{name}");
        }
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
        // Integers too (PID-25 `002` became `"multipleBirthInteger":002`, which is not JSON: found by the fuzz
        // target `v2fhir_convert`).
        for (v2, ty, fhir) in [
            ("2", "integer", "2"),
            ("002", "integer", "2"),
            ("+5", "integer", "5"),
            ("-0", "integer", "0"),
            ("-07", "integer", "-7"),
            ("0", "integer", "0"),
            ("0010", "positiveInt", "10"),
            ("00", "unsignedInt", "0"),
        ] {
            assert_eq!(conv(v2, ty).0, Some(Node::Num(fhir)), "{v2} {ty}");
        }
        assert_eq!(conv("000", "positiveInt"), (None, Some(Unfit::Invalid)));
        assert_eq!(conv("2147483648", "integer"), (None, Some(Unfit::Invalid)));
    }
}
