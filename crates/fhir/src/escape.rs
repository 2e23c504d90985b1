//! Byte-level escaping shared by the JSON and XML writers.

/// Copies `s` into `out`, replacing each ASCII byte for which `esc` returns a replacement.
#[inline]
pub(crate) fn escape_into(out: &mut Vec<u8>, s: &str, esc: impl Fn(u8) -> Option<&'static [u8]>) {
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if let Some(rep) = esc(c) {
            out.extend_from_slice(&b[start..i]);
            out.extend_from_slice(rep);
            start = i + 1;
        }
    }
    out.extend_from_slice(&b[start..]);
}
