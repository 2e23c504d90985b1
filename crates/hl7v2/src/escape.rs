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
/// - `\Cxxyy\` and `\Mxxyyzz\` (ISO 2022 character set switches, the hex digits of the designation's escape
///   sequence) decode the text after them in the character set they name, until the next switch: the ISO 8859
///   parts (`\C2D41\` = ISO-IR 100 ... `\C2D4D\` = ISO-IR 148), JIS X 0201 (`\C284A\`, `\C2949\`), JIS X 0208
///   (`\M2442\`), KS X 1001 (`\M242943\`) and GB 2312 (`\M242941\`); `\C2842\` returns to the message's own
///   character set. Designations Thoth does not know are kept as written;
/// - anything else, including an escape character without a closing one, is kept as written.
///
/// Borrows when the value has no escape character and is valid text in its character set.
pub fn decode<'a>(raw: &'a [u8], delims: &Delimiters, charset: Charset) -> Cow<'a, str> {
    let Some(esc) = delims.escape else {
        return charset.decode(raw);
    };
    let escaped = if raw.len() < 64 {
        // Values read by path are a few bytes long and nearly always plain ASCII, which every character set
        // reads as itself: one pass (no early exit, so it vectorises) finds both, sooner than `memchr`'s set-up
        // would find the escape character alone.
        let (escaped, ascii) = raw.iter().fold((false, true), |(e, a), &b| {
            (e | (b == esc), a & b.is_ascii())
        });
        if !escaped && ascii {
            return std::str::from_utf8(raw).map_or_else(|_| charset.decode(raw), Cow::Borrowed);
        }
        escaped
    } else {
        memchr::memchr(esc, raw).is_some()
    };
    if !escaped {
        return charset.decode(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    // Text of the runs before the last character set switch, if there was one.
    let mut done = String::new();
    let mut mode = Designation::Base;
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
        if let Some(next) = Designation::from_escape(seq) {
            done.push_str(&mode.decode(&out, charset));
            out.clear();
            mode = next;
        } else if !expand(seq, delims, &mut out) {
            out.extend_from_slice(&raw[i..i + len + 2]);
        }
        i += len + 2;
    }
    if done.is_empty() {
        return Cow::Owned(mode.decode(&out, charset).into_owned());
    }
    done.push_str(&mode.decode(&out, charset));
    Cow::Owned(done)
}

/// The character set an ISO 2022 switch (`\Cxxyy\`, `\Mxxyyzz\`) selects for the text that follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Designation {
    /// The message's own character set (MSH-18), before any switch and after `\C2842\` (ISO-IR 6, ASCII).
    Base,
    /// An ISO 8859 part in the upper half (G1), ASCII in the lower.
    Iso8859(u8),
    /// JIS X 0201 katakana (ISO-IR 13) in the upper half, ASCII in the lower.
    JisKatakana,
    /// JIS X 0208 (ISO-IR 87): two 7-bit bytes per character.
    Jis0208,
    /// KS X 1001 (ISO-IR 149) in the upper half: the bytes of EUC-KR.
    Ksc5601,
    /// GB 2312 (ISO-IR 58) in the upper half: the bytes of EUC-CN.
    Gb2312,
}

impl Designation {
    /// The switch a `C`/`M` escape body names, or `None` for any other sequence or an unknown designation.
    fn from_escape(seq: &[u8]) -> Option<Designation> {
        let (kind, hex) = seq.split_first()?;
        if !matches!(kind, b'C' | b'M') || !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let hex = hex.to_ascii_uppercase();
        Some(match (kind, hex.as_slice()) {
            (b'C', b"2842" | b"284A") => Designation::Base,
            (b'C', b"2D41") => Designation::Iso8859(1),
            (b'C', b"2D42") => Designation::Iso8859(2),
            (b'C', b"2D43") => Designation::Iso8859(3),
            (b'C', b"2D44") => Designation::Iso8859(4),
            (b'C', b"2D4C") => Designation::Iso8859(5),
            (b'C', b"2D47") => Designation::Iso8859(6),
            (b'C', b"2D46") => Designation::Iso8859(7),
            (b'C', b"2D48") => Designation::Iso8859(8),
            (b'C', b"2D4D") => Designation::Iso8859(9),
            (b'C', b"2949") => Designation::JisKatakana,
            (b'M', b"2442") => Designation::Jis0208,
            (b'M', b"242943") => Designation::Ksc5601,
            (b'M', b"242941") => Designation::Gb2312,
            _ => return None,
        })
    }

    fn decode<'a>(&self, bytes: &'a [u8], base: Charset) -> Cow<'a, str> {
        match self {
            Designation::Base => base.decode(bytes),
            Designation::Iso8859(n) => Charset::Iso8859(*n).decode(bytes),
            Designation::JisKatakana => Cow::Owned(
                bytes
                    .iter()
                    .map(|&b| match b {
                        // Halfwidth katakana U+FF61..=U+FF9F, coded 0xA1..=0xDF in the upper half.
                        0xA1..=0xDF => {
                            char::from_u32(0xFF61 + u32::from(b - 0xA1)).unwrap_or('\u{FFFD}')
                        }
                        0x00..=0x7F => b as char,
                        _ => '\u{FFFD}',
                    })
                    .collect(),
            ),
            Designation::Jis0208 => {
                // encoding_rs reads JIS X 0208 as ISO-2022-JP: frame the run with its own designations.
                let mut framed = Vec::with_capacity(bytes.len() + 6);
                framed.extend_from_slice(b"\x1b$B");
                framed.extend_from_slice(bytes);
                framed.extend_from_slice(b"\x1b(B");
                let (text, _) = encoding_rs::ISO_2022_JP.decode_without_bom_handling(&framed);
                Cow::Owned(text.into_owned())
            }
            Designation::Ksc5601 => encoding_rs::EUC_KR.decode_without_bom_handling(bytes).0,
            Designation::Gb2312 => encoding_rs::GBK.decode_without_bom_handling(bytes).0,
        }
    }
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
