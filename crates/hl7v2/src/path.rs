//! Terser-style paths, in HAPI's syntax and meaning: `PID-5-1`, `PID-3(1)-1`, `OBX(2)-5`, and group paths such as
//! `/PATIENT_RESULT/ORDER_OBSERVATION(1)/OBX(2)-5-1` or `/.OBX-5`.
//!
//! Repetition indexes in parentheses are 0-based, as in HAPI's Terser (`PID-3(1)` is the second repetition);
//! indexes in brackets are 1-based, as other tools write them (`PID-3[2]` is the same repetition). Field,
//! component and subcomponent numbers are 1-based, as in the standard.

use std::fmt;
use std::str::FromStr;

/// A parsed path to a value: segment (with occurrence, or a group path to it), field (with repetition),
/// component, subcomponent.
///
/// Two forms:
/// - **flat** (`PID-5-1`, `OBX(2)-5`, `OBX[3]-5`): the segment is the n-th with that identifier in the whole
///   message, counted in message order; no message structure is needed, so this is the fast path.
/// - **rooted** (`/PID-5`, `/OBX(2)-5`): as in HAPI, a segment directly under the message; when the message has no
///   such position (PID sits in a group), the flat reading is used instead.
/// - **group** (`/PATIENT_RESULT/ORDER_OBSERVATION(1)/OBX(2)-5`): groups and segment named as HAPI names them in
///   the message structure of the message's version; a step that starts with `.` searches below the current
///   group for the first group or segment position of that name (`/.OBX-5`, `/.ORDER_OBSERVATION(1)/OBX-5`), as
///   HAPI's Terser does. A group path is resolved against the message's group tree
///   ([`Message::group_tree`](crate::Message::group_tree)).
///
/// The index fields hold 1-based counts whatever syntax was used.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    /// Group steps before the segment, outermost first; empty for a flat path.
    pub groups: Vec<Step>,
    /// For a group path, the segment step (its name may carry HAPI's numeral: `ROL2`); `None` for a flat path.
    pub segment_step: Option<Step>,
    /// Segment identifier, e.g. `*b"PID"` (upper case; for a group path, the first three characters of its name).
    pub segment: [u8; 3],
    /// Which occurrence of the segment (1 = first); for a group path, the segment step's repetition.
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

/// One step of a group path: a group or segment name, its repetition (1 = first) and whether it searches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The name as HAPI gives it (`ORDER_OBSERVATION`, `ROL2`), upper case.
    pub name: Box<str>,
    /// Which repetition (1 = first).
    pub repetition: usize,
    /// Written with a leading `.`: search below the current group instead of naming a direct child.
    pub search: bool,
}

/// Why a path could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path does not follow `[/GROUP[(n)]/...]SEG[(n)]-field[(n)][-component[-subcomponent]]`.
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

/// Longest path text accepted: a real path is a few dozen characters; a bound keeps hostile input cheap.
const MAX_PATH_LEN: usize = 1024;
/// Most group steps a path may have (real structures nest at most five or six levels).
const MAX_GROUP_STEPS: usize = 32;

impl Path {
    /// The segment identifier as text.
    pub fn segment_id(&self) -> &str {
        // Always ASCII alphanumerics: `parse` accepts nothing else.
        std::str::from_utf8(&self.segment).unwrap_or("???")
    }

    /// True when the path names groups or searches (it needs the message structure to be resolved).
    pub fn is_group_path(&self) -> bool {
        self.segment_step.is_some()
    }

    /// Parses a path such as `PID-3(1)-1`, `PID-3[2]-1` or `/PATIENT_RESULT/ORDER_OBSERVATION(1)/OBX(2)-5`.
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let err = |at: usize, why: &'static str| PathError::Syntax {
            path: text.chars().take(80).collect(),
            at,
            why,
        };
        if text.len() > MAX_PATH_LEN {
            return Err(err(MAX_PATH_LEN, "a shorter path"));
        }
        let lead = text.len() - text.trim_start().len();
        let s = text.trim();
        let rooted = s.starts_with('/');
        let base = lead + usize::from(rooted);
        let s = s.strip_prefix('/').unwrap_or(s);
        let bytes = s.as_bytes();

        // Steps separated by '/': all but the last name groups; the last names the segment and carries the fields.
        // Steps are kept as spans so that a flat path allocates nothing.
        let mut steps: Vec<(usize, usize, usize, bool)> = Vec::new();
        let mut i = 0;
        let last = loop {
            let search = bytes.get(i) == Some(&b'.');
            let start = i + usize::from(search);
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            if end == start {
                return Err(err(base + end, "a group or segment name"));
            }
            let (repetition, after) = index(bytes, end).map_err(|(at, why)| err(base + at, why))?;
            if bytes.get(after) == Some(&b'/') {
                if steps.len() == MAX_GROUP_STEPS {
                    return Err(err(base + after, "fewer groups"));
                }
                steps.push((start, end, repetition, search));
                i = after + 1;
                continue;
            }
            i = after;
            break (start, end, repetition, search);
        };
        let (seg_start, seg_end, seg_rep, seg_search) = last;
        let name = &bytes[seg_start..seg_end];
        // A flat path's segment is a 3-character identifier; a group path's may carry HAPI's numeral (ROL2).
        let plain = name.len() == 3 && !seg_search && steps.is_empty() && !rooted;
        if name.len() < 3
            || !name[..3].iter().all(u8::is_ascii_alphanumeric)
            || !name[3..].iter().all(u8::is_ascii_digit)
        {
            return Err(err(
                base + seg_start,
                "a three-character segment identifier",
            ));
        }
        let segment = [name[0], name[1], name[2]].map(|b| b.to_ascii_uppercase());
        let step = |(start, end, repetition, search): (usize, usize, usize, bool)| Step {
            name: s[start..end].to_ascii_uppercase().into_boxed_str(),
            repetition,
            search,
        };

        let mut numbers = [0usize; 3];
        let mut repetition = 1;
        let mut n = 0;
        while i < bytes.len() {
            if !matches!(bytes[i], b'-' | b'.') {
                return Err(err(base + i, "'-' or '.'"));
            }
            i += 1;
            let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 || n == 3 {
                return Err(err(
                    base + i,
                    if n == 3 {
                        "the end of the path"
                    } else {
                        "a number"
                    },
                ));
            }
            let v: usize = s[i..i + digits]
                .parse()
                .map_err(|_| err(base + i, "a smaller number"))?;
            if v == 0 {
                return Err(err(base + i, "a number from 1"));
            }
            numbers[n] = v;
            i += digits;
            if n == 0 {
                let (rep, j) = index(bytes, i).map_err(|(at, why)| err(base + at, why))?;
                repetition = rep;
                i = j;
            }
            n += 1;
        }
        if n == 0 {
            return Err(err(base + i, "a field number"));
        }
        Ok(Path {
            occurrence: seg_rep,
            segment_step: (!plain).then(|| step((seg_start, seg_end, seg_rep, seg_search))),
            groups: steps.into_iter().map(step).collect(),
            segment,
            field: numbers[0],
            repetition,
            component: (n > 1).then_some(numbers[1]),
            subcomponent: (n > 2).then_some(numbers[2]),
        })
    }
}

/// Reads a repetition index at `i`: `(n)` is 0-based (HAPI), `[n]` 1-based. Returns `(1-based index, index after
/// it)`, or `(1, i)` when there is none.
fn index(bytes: &[u8], i: usize) -> Result<(usize, usize), (usize, &'static str)> {
    let close = match bytes.get(i) {
        Some(b'(') => b')',
        Some(b'[') => b']',
        _ => return Ok((1, i)),
    };
    let digits = bytes[i + 1..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || bytes.get(i + 1 + digits) != Some(&close) {
        return Err((
            i + 1,
            if close == b')' {
                "a 0-based number in parentheses"
            } else {
                "a 1-based number in brackets"
            },
        ));
    }
    let v: usize = std::str::from_utf8(&bytes[i + 1..i + 1 + digits])
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or((i + 1, "a smaller number"))?;
    let one_based = if close == b')' {
        v.checked_add(1).ok_or((i + 1, "a smaller number"))?
    } else if v == 0 {
        return Err((
            i + 1,
            "a number from 1 in brackets (parentheses are 0-based)",
        ));
    } else {
        v
    };
    Ok((one_based, i + digits + 2))
}

impl FromStr for Path {
    type Err = PathError;
    fn from_str(s: &str) -> Result<Path, PathError> {
        Path::parse(s)
    }
}

/// Written in HAPI's syntax: 0-based parentheses, omitted when 0.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rep = |f: &mut fmt::Formatter<'_>, n: usize| {
            if n != 1 {
                write!(f, "({})", n - 1)
            } else {
                Ok(())
            }
        };
        match &self.segment_step {
            None => f.write_str(self.segment_id())?,
            Some(seg) => {
                for step in self.groups.iter().chain(std::iter::once(seg)) {
                    f.write_str(if step.search { "/." } else { "/" })?;
                    f.write_str(&step.name)?;
                    rep(f, step.repetition)?;
                }
            }
        }
        if self.segment_step.is_none() {
            rep(f, self.occurrence)?;
        }
        write!(f, "-{}", self.field)?;
        rep(f, self.repetition)?;
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
