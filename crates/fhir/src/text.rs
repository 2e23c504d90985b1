//! [`Str`]: a string value that is either owned or a slice of the buffer it was read from.
//!
//! Readers that see strings verbatim in their input (the binary decoder) copy the input once into a shared
//! buffer and hand out slices of it, so a resource with thousands of strings costs one allocation instead of
//! thousands (see docs/PERFORMANCE.md, "FHIR formats"). The buffer lives as long as any string of it.
//! Short strings (codes, dates, most ids) are stored inline instead: no allocation and no reference count.

use std::ops::Deref;
use std::sync::Arc;

/// A string value of the element tree; dereferences to `str`.
#[derive(Clone)]
pub(crate) struct Str(Repr);

/// Longest string kept inline: fills the enum to the 24 bytes the other variants take anyway.
const INLINE: usize = 22;

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]`, UTF-8 (copied from a `&str`).
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Owned(Box<str>),
    /// `buf[start..start + len]`, checked to be UTF-8 when made ([`Str::shared`]).
    Shared {
        buf: Arc<Vec<u8>>,
        start: u32,
        len: u32,
    },
}

impl Str {
    /// A slice of a shared buffer, if it is UTF-8 (`None` otherwise). Buffers past 4 GiB get owned copies.
    pub(crate) fn shared(buf: &Arc<Vec<u8>>, start: usize, end: usize) -> Option<Str> {
        let s = std::str::from_utf8(buf.get(start..end)?).ok()?;
        if s.len() <= INLINE {
            return Some(Str::inline(s));
        }
        match (u32::try_from(start), u32::try_from(end - start)) {
            (Ok(start), Ok(len)) => Some(Str(Repr::Shared {
                buf: Arc::clone(buf),
                start,
                len,
            })),
            _ => Some(Str(Repr::Owned(s.into()))),
        }
    }
}

impl Str {
    fn inline(s: &str) -> Str {
        let mut bytes = [0; INLINE];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        Str(Repr::Inline {
            len: s.len() as u8,
            bytes,
        })
    }
}

impl Deref for Str {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                // SAFETY: `Str::inline` copied exactly `len` bytes of a `&str` (UTF-8); never mutated since.
                unsafe { std::str::from_utf8_unchecked(&bytes[..*len as usize]) }
            }
            Repr::Owned(s) => s,
            Repr::Shared { buf, start, len } => {
                let bytes = &buf[*start as usize..(*start + *len) as usize];
                // SAFETY: `Str::shared` checked that exactly this range is UTF-8, and the buffer behind an
                // `Arc<Vec<u8>>` is never mutated while shared (no `&mut` to it is ever taken).
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
        }
    }
}

impl From<&str> for Str {
    fn from(s: &str) -> Str {
        if s.len() <= INLINE {
            return Str::inline(s);
        }
        Str(Repr::Owned(s.into()))
    }
}

impl From<String> for Str {
    fn from(s: String) -> Str {
        if s.len() <= INLINE {
            return Str::inline(&s);
        }
        Str(Repr::Owned(s.into_boxed_str()))
    }
}

impl From<Box<str>> for Str {
    fn from(s: Box<str>) -> Str {
        if s.len() <= INLINE {
            return Str::inline(&s);
        }
        Str(Repr::Owned(s))
    }
}

impl From<std::borrow::Cow<'_, str>> for Str {
    fn from(s: std::borrow::Cow<'_, str>) -> Str {
        match s {
            std::borrow::Cow::Borrowed(b) => Str::from(b),
            std::borrow::Cow::Owned(o) => Str::from(o),
        }
    }
}

impl PartialEq for Str {
    fn eq(&self, other: &Str) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Str {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_slices_are_checked_and_compare_by_content() {
        let buf = Arc::new(b"ab\xffcd".to_vec());
        let a = Str::shared(&buf, 0, 2).expect("ASCII");
        assert_eq!(&*a, "ab");
        assert_eq!(a, Str::from("ab"));
        assert!(Str::shared(&buf, 1, 3).is_none(), "0xFF is not UTF-8");
        assert!(Str::shared(&buf, 3, 9).is_none(), "out of range");
        assert_eq!(&*Str::shared(&buf, 3, 5).expect("ASCII"), "cd");
        assert_eq!(std::mem::size_of::<Str>(), 24);
        for s in ["", "é", &"x".repeat(INLINE), &"y".repeat(INLINE + 1)] {
            assert_eq!(&*Str::from(s), s);
            assert_eq!(&*Str::from(s.to_string()), s);
        }
    }
}
