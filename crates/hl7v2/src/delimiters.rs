//! The five (or six) separator characters a message declares in MSH-1 and MSH-2.

/// The delimiters of one message, read from MSH-1 (field separator) and MSH-2 (encoding characters).
///
/// MSH-2 lists, in order: component, repetition, escape, subcomponent and (since v2.7) truncation characters.
/// The escape, subcomponent and truncation characters may be absent; they are `None` then and never split or
/// escape anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Delimiters {
    /// Separates fields (MSH-1), `|` by convention.
    pub field: u8,
    /// Separates components, `^` by convention.
    pub component: u8,
    /// Separates repetitions of a field, `~` by convention.
    pub repetition: u8,
    /// Starts and ends an escape sequence, `\` by convention.
    pub escape: Option<u8>,
    /// Separates subcomponents, `&` by convention.
    pub subcomponent: Option<u8>,
    /// Marks a truncated value (v2.7 and later), `#` by convention.
    pub truncation: Option<u8>,
}

impl Default for Delimiters {
    /// `|^~\&`, the delimiters nearly every message uses (no truncation character).
    fn default() -> Self {
        Delimiters {
            field: b'|',
            component: b'^',
            repetition: b'~',
            escape: Some(b'\\'),
            subcomponent: Some(b'&'),
            truncation: None,
        }
    }
}

/// Why a header's delimiters could not be used as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DelimiterProblem {
    /// MSH-2 is empty or shorter than two characters; defaults were filled in.
    Missing,
    /// A delimiter is a letter, digit, space, CR, LF or NUL, which real content contains.
    Unusable,
    /// Two delimiters are the same character.
    Duplicate,
}

impl Delimiters {
    /// Reads the delimiters from a header segment (`MSH`, `FHS` or `BHS` followed by MSH-1 and MSH-2).
    ///
    /// Returns the delimiters, the end offset of MSH-2 within `header` (where MSH-3's separator, or the segment end,
    /// is) and the problem found, if any. Missing characters are filled in from the defaults when that does not
    /// create a duplicate.
    pub(crate) fn read(header: &[u8]) -> (Delimiters, usize, Option<DelimiterProblem>) {
        let default = Delimiters::default();
        let Some(&field) = header.get(3) else {
            return (default, header.len(), Some(DelimiterProblem::Missing));
        };
        let rest = &header[4..];
        let len = rest
            .iter()
            .position(|&b| b == field || b == b'\r' || b == b'\n')
            .unwrap_or(rest.len());
        let enc = &rest[..len];
        let end = 4 + len;
        let mut problem = None;
        let mut d = Delimiters {
            field,
            component: enc.first().copied().unwrap_or(default.component),
            repetition: enc.get(1).copied().unwrap_or(default.repetition),
            escape: enc
                .get(2)
                .copied()
                .or(if enc.len() < 2 { default.escape } else { None }),
            subcomponent: enc.get(3).copied().or(if enc.len() < 2 {
                default.subcomponent
            } else {
                None
            }),
            truncation: enc.get(4).copied(),
        };
        if enc.len() < 2 {
            problem = Some(DelimiterProblem::Missing);
        }
        let all = d.all();
        if all.iter().flatten().any(|&b| unusable(b)) {
            problem = Some(DelimiterProblem::Unusable);
        }
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                if a.is_some() && a == b {
                    problem = Some(DelimiterProblem::Duplicate);
                }
            }
        }
        if matches!(problem, Some(DelimiterProblem::Duplicate)) {
            // Keep the field separator (the message cannot be split without it) and drop the clashing optional
            // characters so that splitting stays well defined; the diagnostic tells the user.
            if d.escape == Some(d.field)
                || d.escape == Some(d.component)
                || d.escape == Some(d.repetition)
            {
                d.escape = None;
            }
            if d.subcomponent.is_some()
                && [
                    Some(d.field),
                    Some(d.component),
                    Some(d.repetition),
                    d.escape,
                ]
                .contains(&d.subcomponent)
            {
                d.subcomponent = None;
            }
            if d.truncation.is_some()
                && [
                    Some(d.field),
                    Some(d.component),
                    Some(d.repetition),
                    d.escape,
                    d.subcomponent,
                ]
                .contains(&d.truncation)
            {
                d.truncation = None;
            }
        }
        (d, end, problem)
    }

    fn all(&self) -> [Option<u8>; 6] {
        [
            Some(self.field),
            Some(self.component),
            Some(self.repetition),
            self.escape,
            self.subcomponent,
            self.truncation,
        ]
    }

    /// MSH-2 as written for these delimiters, e.g. `^~\&` or `^~\&#`.
    pub fn encoding_characters(&self) -> Vec<u8> {
        let mut v = vec![self.component, self.repetition];
        v.extend(self.escape);
        v.extend(self.subcomponent);
        v.extend(self.truncation);
        v
    }

    /// True when `b` is any delimiter of this message (field, component, repetition, escape, subcomponent,
    /// truncation).
    pub fn is_delimiter(&self, b: u8) -> bool {
        self.all().contains(&Some(b))
    }
}

fn unusable(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b' ' || b == b'\r' || b == b'\n' || b == 0
}
