//! Terser-style paths: `PID-5-1`, `PID-3(2)-1`, `OBX(3)-5`, `MSH-9-2`, `PID-5-1-2`.

use std::fmt;
use std::str::FromStr;

/// A parsed path to a value: segment (with occurrence), field (with repetition), component, subcomponent.
///
/// Syntax (all indexes 1-based, as in HAPI's Terser): `SEG[(occurrence)]-field[(repetition)][-component[-sub]]`.
/// A dot may be used instead of a dash (`PID.5.1`). A leading `/` is accepted and ignored; group names are not
/// supported (segments are addressed by occurrence in the whole message).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    /// Segment identifier, e.g. `*b"PID"` (upper case).
    pub segment: [u8; 3],
    /// Which occurrence of the segment (1 = first).
    pub occurrence: usize,
    /// Field number (MSH-1 is the field separator).
    pub field: usize,
    /// Field repetition (1 = first).
    pub repetition: usize,
    /// Component, when the path names one.
    pub component: Option<usize>,
    /// Subcomponent, when the path names one.
    pub subcomponent: Option<usize>,
}

/// Why a path could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path does not follow `SEG[(n)]-field[(n)][-component[-subcomponent]]`.
    #[error("invalid path {path:?} at character {at}: {why}")]
    Syntax {
        /// The path as given.
        path: String,
        /// 0-based character position of the problem.
        at: usize,
        /// What was expected.
        why: &'static str,
    },
}

impl Path {
    /// The segment identifier as text.
    pub fn segment_id(&self) -> &str {
        // Always ASCII alphanumerics: `parse` accepts nothing else.
        std::str::from_utf8(&self.segment).unwrap_or("???")
    }

    /// Parses a path such as `PID-3(2)-1`.
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let err = |at: usize, why: &'static str| PathError::Syntax {
            path: text.to_owned(),
            at,
            why,
        };
        let s = text.trim();
        let s = s.strip_prefix('/').unwrap_or(s);
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i != 3 {
            return Err(err(i, "a three-character segment identifier"));
        }
        let segment = [bytes[0], bytes[1], bytes[2]].map(|b| b.to_ascii_uppercase());
        let (occurrence, mut i) =
            index_in_parens(bytes, 3).ok_or_else(|| err(3, "a number in parentheses"))?;
        let mut numbers = [0usize; 3];
        let mut repetition = 1;
        let mut n = 0;
        while i < bytes.len() {
            if !matches!(bytes[i], b'-' | b'.') {
                return Err(err(i, "'-' or '.'"));
            }
            i += 1;
            let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || n == 3 {
                return Err(err(
                    i,
                    if n == 3 {
                        "the end of the path"
                    } else {
                        "a number"
                    },
                ));
            }
            let v: usize = s[i..i + digits]
                .parse()
                .map_err(|_| err(i, "a smaller number"))?;
            if v == 0 {
                return Err(err(i, "a number from 1"));
            }
            numbers[n] = v;
            i += digits;
            if n == 0 {
                let (rep, j) =
                    index_in_parens(bytes, i).ok_or_else(|| err(i, "a number in parentheses"))?;
                repetition = rep;
                i = j;
            }
            n += 1;
        }
        if n == 0 {
            return Err(err(i, "a field number"));
        }
        Ok(Path {
            segment,
            occurrence,
            field: numbers[0],
            repetition,
            component: (n > 1).then_some(numbers[1]),
            subcomponent: (n > 2).then_some(numbers[2]),
        })
    }
}

/// Reads `(n)` at `i` if present: returns `(n, index after it)`, or `(1, i)` when there are no parentheses.
fn index_in_parens(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    if bytes.get(i) != Some(&b'(') {
        return Some((1, i));
    }
    let digits = bytes[i + 1..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || bytes.get(i + 1 + digits) != Some(&b')') {
        return None;
    }
    let v: usize = std::str::from_utf8(&bytes[i + 1..i + 1 + digits])
        .ok()?
        .parse()
        .ok()?;
    (v > 0).then_some((v, i + digits + 2))
}

impl FromStr for Path {
    type Err = PathError;
    fn from_str(s: &str) -> Result<Path, PathError> {
        Path::parse(s)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.segment_id())?;
        if self.occurrence != 1 {
            write!(f, "({})", self.occurrence)?;
        }
        write!(f, "-{}", self.field)?;
        if self.repetition != 1 {
            write!(f, "({})", self.repetition)?;
        }
        if let Some(c) = self.component {
            write!(f, "-{c}")?;
        }
        if let Some(s) = self.subcomponent {
            write!(f, "-{s}")?;
        }
        Ok(())
    }
}

/// Anything a path can be read from: a `&str` (parsed on each call; an invalid path reads as nothing, use
/// [`Path::parse`] to learn why) or an already parsed [`Path`].
pub trait AsPath {
    /// The parsed path, or `None` when the text is not a valid path.
    fn as_path(&self) -> Option<std::borrow::Cow<'_, Path>>;
}

impl AsPath for str {
    fn as_path(&self) -> Option<std::borrow::Cow<'_, Path>> {
        Path::parse(self).ok().map(std::borrow::Cow::Owned)
    }
}

impl AsPath for &str {
    fn as_path(&self) -> Option<std::borrow::Cow<'_, Path>> {
        Path::parse(self).ok().map(std::borrow::Cow::Owned)
    }
}

impl AsPath for String {
    fn as_path(&self) -> Option<std::borrow::Cow<'_, Path>> {
        Path::parse(self).ok().map(std::borrow::Cow::Owned)
    }
}

impl AsPath for Path {
    fn as_path(&self) -> Option<std::borrow::Cow<'_, Path>> {
        Some(std::borrow::Cow::Borrowed(self))
    }
}

impl AsPath for &Path {
    fn as_path(&self) -> Option<std::borrow::Cow<'_, Path>> {
        Some(std::borrow::Cow::Borrowed(*self))
    }
}
