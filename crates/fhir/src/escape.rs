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

/// The position of the first control character XML 1.0 cannot carry (anything below 0x20 but tab, LF, CR),
/// raw or as a character reference's result.
pub(crate) fn xml_forbidden(b: &[u8]) -> Option<usize> {
    b.iter()
        .position(|&c| c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r'))
}
