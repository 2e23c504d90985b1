//! Escape sequences (HL7 v2 chapter 2.7): decoding a raw value into text, and escaping text into a raw value.

use std::borrow::Cow;

use crate::{Charset, Delimiters};

/// Decodes a raw value (escape sequences, then the character set) into text.
///
/// - `\F\ \S\ \T\ \R\ \E\` become the field, component, subcomponent, repetition and escape characters, `\P\` the
///   truncation character (when the message has one);
/// - `\Xhh..\` becomes the bytes it spells (decoded with the message's character set);
/// - `\.br\` and `\.sp\` become a line feed, `\.ce\` too; `\.in\`, `\.ti\`, `\.sk\`, `\.fi\`, `\.nf\` and the
///   highlighting pair `\H\`/`\N\` are dropped (they format, they carry no characters);
/// - `\Cxxyy\` and `\Mxxyyzz\` (ISO 2022 character set switches) are dropped;
/// - anything else, including an escape character without a closing one, is kept as written.
///
/// Borrows when the value has no escape character and is valid text in its character set.
pub fn decode<'a>(raw: &'a [u8], delims: &Delimiters, charset: Charset) -> Cow<'a, str> {
    let Some(esc) = delims.escape else {
        return charset.decode(raw);
    };
    if memchr::memchr(esc, raw).is_none() {
        return charset.decode(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != esc {
            out.push(b);
            i += 1;
            continue;
        }
        let Some(len) = memchr::memchr(esc, &raw[i + 1..]) else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        let seq = &raw[i + 1..i + 1 + len];
        if !expand(seq, delims, &mut out) {
            out.extend_from_slice(&raw[i..i + len + 2]);
        }
        i += len + 2;
    }
    Cow::Owned(charset.decode(&out).into_owned())
}

/// Appends what an escape sequence's body stands for; false when the sequence is unknown (kept as written).
fn expand(seq: &[u8], d: &Delimiters, out: &mut Vec<u8>) -> bool {
    match seq {
        b"F" => out.push(d.field),
        b"S" => out.push(d.component),
        b"R" => out.push(d.repetition),
        b"T" => match d.subcomponent {
            Some(s) => out.push(s),
            None => return false,
        },
        b"E" => match d.escape {
            Some(e) => out.push(e),
            None => return false,
        },
        b"P" => match d.truncation {
            Some(t) => out.push(t),
            None => return false,
        },
        b"H" | b"N" => {}
        [b'X', hex @ ..] => match hex_bytes(hex) {
            Some(bytes) => out.extend(bytes),
            None => return false,
        },
        [b'C', hex @ ..] if hex.len() == 4 && hex.iter().all(u8::is_ascii_hexdigit) => {}
        [b'M', hex @ ..] if matches!(hex.len(), 4 | 6) && hex.iter().all(u8::is_ascii_hexdigit) => {
        }
        [b'.', cmd @ ..] => {
            let (name, arg) = cmd.split_at(cmd.len().min(2));
            let numeric = arg.is_empty()
                || arg
                    .iter()
                    .all(|b| b.is_ascii_digit() || *b == b'+' || *b == b'-');
            match name {
                b"br" | b"ce" if arg.is_empty() => out.push(b'\n'),
                b"sp" if numeric => {
                    let n = std::str::from_utf8(arg)
                        .ok()
                        .and_then(|s| s.trim_start_matches('+').parse().ok());
                    out.extend(std::iter::repeat_n(b'\n', n.unwrap_or(1).min(100)));
                }
                b"fi" | b"nf" if arg.is_empty() => {}
                b"in" | b"ti" | b"sk" if numeric => {}
                _ => return false,
            }
        }
        _ => return false,
    }
    true
}

fn hex_bytes(hex: &[u8]) -> Option<impl Iterator<Item = u8> + '_> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    Some(
        hex.chunks_exact(2)
            .map(|p| (nibble(p[0]) << 4) | nibble(p[1])),
    )
}

fn nibble(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// Escapes text for use as one leaf value: every delimiter becomes its escape sequence, CR and LF become
/// `\X0D\` and `\X0A\`. The result is in the given character set; `None` when a character cannot be represented.
pub fn encode<'a>(text: &'a str, delims: &Delimiters, charset: Charset) -> Option<Cow<'a, [u8]>> {
    let bytes = charset.encode(text)?;
    let needs = bytes
        .iter()
        .any(|&b| delims.is_delimiter(b) || b == b'\r' || b == b'\n');
    if !needs {
        return Some(bytes);
    }
    let esc = delims.escape.unwrap_or(b'\\');
    let mut out = Vec::with_capacity(bytes.len() + 8);
    for &b in bytes.iter() {
        let code: &[u8] = if b == delims.field {
            b"F"
        } else if b == delims.component {
            b"S"
        } else if b == delims.repetition {
            b"R"
        } else if Some(b) == delims.escape {
            b"E"
        } else if Some(b) == delims.subcomponent {
            b"T"
        } else if Some(b) == delims.truncation {
            b"P"
        } else if b == b'\r' {
            b"X0D"
        } else if b == b'\n' {
            b"X0A"
        } else {
            out.push(b);
            continue;
        };
        out.push(esc);
        out.extend_from_slice(code);
        out.push(esc);
    }
    Some(Cow::Owned(out))
}
