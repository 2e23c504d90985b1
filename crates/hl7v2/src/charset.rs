//! MSH-18 character sets: naming them and turning bytes into text (and back).

use std::borrow::Cow;

/// A character set a message's bytes are written in (MSH-18, first repetition).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Charset {
    /// `ASCII` / `ISO IR6`. Decoded leniently as UTF-8, which is a superset, so stray bytes are not lost.
    Ascii,
    /// `UNICODE UTF-8`.
    Utf8,
    /// `8859/n` / `ISO IRnnn`: ISO 8859 part `n` (1..=16, except 12 which does not exist).
    Iso8859(u8),
}

impl Default for Charset {
    /// UTF-8: it reads ASCII unchanged and is what v2.8 recommends.
    fn default() -> Self {
        Charset::Utf8
    }
}

impl Charset {
    /// The character set named by an MSH-18 value (`ASCII`, `8859/1`, `UNICODE UTF-8`, `ISO IR100`, ...), or
    /// `None` when the name is unknown. Case and surrounding spaces are ignored; common spellings such as
    /// `UTF-8` and `ISO-8859-1` are accepted too.
    pub fn from_msh18(name: &[u8]) -> Option<Charset> {
        let name = String::from_utf8_lossy(name).trim().to_ascii_uppercase();
        let name = name.as_str();
        Some(match name {
            "ASCII" | "ISO IR6" | "US-ASCII" => Charset::Ascii,
            "UNICODE UTF-8" | "UTF-8" | "UTF8" | "UNICODE" => Charset::Utf8,
            "ISO IR100" => Charset::Iso8859(1),
            "ISO IR101" => Charset::Iso8859(2),
            "ISO IR109" => Charset::Iso8859(3),
            "ISO IR110" => Charset::Iso8859(4),
            "ISO IR144" => Charset::Iso8859(5),
            "ISO IR127" => Charset::Iso8859(6),
            "ISO IR126" => Charset::Iso8859(7),
            "ISO IR138" => Charset::Iso8859(8),
            "ISO IR148" => Charset::Iso8859(9),
            _ => {
                let part = name
                    .strip_prefix("8859/")
                    .or_else(|| name.strip_prefix("ISO-8859-"))
                    .or_else(|| name.strip_prefix("ISO8859-"))
                    .or_else(|| name.strip_prefix("ISO 8859-"))?;
                let n: u8 = part.parse().ok()?;
                if !(1..=16).contains(&n) || n == 12 {
                    return None;
                }
                Charset::Iso8859(n)
            }
        })
    }

    /// The MSH-18 name of this character set (`ASCII`, `UNICODE UTF-8`, `8859/n`).
    pub fn msh18_name(&self) -> String {
        match self {
            Charset::Ascii => "ASCII".into(),
            Charset::Utf8 => "UNICODE UTF-8".into(),
            Charset::Iso8859(n) => format!("8859/{n}"),
        }
    }

    /// Decodes bytes of this character set into text. Borrows when the bytes are already valid UTF-8 text in
    /// this character set (always for ASCII content). Invalid sequences become U+FFFD.
    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Cow<'a, str> {
        match self {
            // `from_utf8` first: `from_utf8_lossy` gives the same borrowed text for valid input, more slowly.
            Charset::Ascii | Charset::Utf8 => std::str::from_utf8(bytes)
                .map_or_else(|_| String::from_utf8_lossy(bytes), Cow::Borrowed),
            Charset::Iso8859(n) => {
                if bytes.is_ascii() {
                    // ASCII is valid UTF-8, and every ISO 8859 part reads it as itself.
                    return std::str::from_utf8(bytes)
                        .map_or_else(|_| String::from_utf8_lossy(bytes), Cow::Borrowed);
                }
                match encoding(*n) {
                    // Latin-1 maps every byte to the code point of the same value; encoding_rs would read it as
                    // windows-1252, which differs in 0x80..=0x9F.
                    None => Cow::Owned(bytes.iter().map(|&b| b as char).collect()),
                    Some(enc) => enc.decode_without_bom_handling(bytes).0,
                }
            }
        }
    }

    /// Encodes text into this character set; `None` when a character has no representation in it.
    pub fn encode<'a>(&self, text: &'a str) -> Option<Cow<'a, [u8]>> {
        match self {
            Charset::Ascii | Charset::Utf8 => Some(Cow::Borrowed(text.as_bytes())),
            Charset::Iso8859(n) => {
                if text.is_ascii() {
                    return Some(Cow::Borrowed(text.as_bytes()));
                }
                match encoding(*n) {
                    None => text
                        .chars()
                        .map(|c| u8::try_from(u32::from(c)).ok())
                        .collect::<Option<Vec<u8>>>()
                        .map(Cow::Owned),
                    Some(enc) => {
                        let (bytes, _, unmappable) = enc.encode(text);
                        (!unmappable).then(|| Cow::Owned(bytes.into_owned()))
                    }
                }
            }
        }
    }
}

/// The encoding_rs encoding of ISO 8859 part `n`, or `None` for part 1 (decoded by hand). Parts 9 and 11 map to
/// their WHATWG supersets windows-1254 and windows-874, which agree on every printable character.
fn encoding(n: u8) -> Option<&'static encoding_rs::Encoding> {
    use encoding_rs::*;
    Some(match n {
        2 => ISO_8859_2,
        3 => ISO_8859_3,
        4 => ISO_8859_4,
        5 => ISO_8859_5,
        6 => ISO_8859_6,
        7 => ISO_8859_7,
        8 => ISO_8859_8,
        9 => WINDOWS_1254,
        10 => ISO_8859_10,
        11 => WINDOWS_874,
        13 => ISO_8859_13,
        14 => ISO_8859_14,
        15 => ISO_8859_15,
        16 => ISO_8859_16,
        _ => return None,
    })
}
