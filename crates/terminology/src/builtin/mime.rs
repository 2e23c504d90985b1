//! MIME media types (`urn:ietf:bcp:13`): every well-formed media type is a code, `type/subtype` with optional
//! `; name=value` parameters (RFC 6838 section 4.2 for the names, RFC 2045 section 5.1 for parameters: a
//! value is a token or a quoted string). BCP 13 defines a grammar and a registration procedure, not a closed
//! list, and tx.fhir.org accepts any well-formed type (registered or not, `x-` and vendor trees alike), so no
//! registry of known types is consulted. Type, subtype and parameter names are case-insensitive (RFC 2045):
//! `Text/HTML` is valid as written. A code's display is the code itself, as tx.fhir.org gives it.

use crate::codesystem::{CodeSystem, Concept};
use crate::error::{ErrorKind, Issue, Severity, TxError};
use crate::provider::{CodeSystemProvider, Detail, MapTarget, ProviderShell, Selection};
use serde_json::{Value, json};
use std::sync::Arc;

/// The canonical URL of MIME media types.
pub const MIME_URL: &str = "urn:ietf:bcp:13";

/// The longest type or subtype name RFC 6838 allows.
const MAX_NAME: usize = 127;

/// Whether `code` is a well-formed media type: `type "/" subtype *( OWS ";" OWS name "=" value )`.
pub fn valid_media_type(code: &str) -> bool {
    let (head, mut rest) = match code.find(';') {
        Some(i) => code.split_at(i),
        None => (code, ""),
    };
    let Some((ty, subtype)) = head.trim_end_matches(OWS).split_once('/') else {
        return false;
    };
    // Whitespace may surround the separators of parameters, never the type and subtype themselves.
    if !restricted_name(ty) || !restricted_name(subtype) {
        return false;
    }
    // Each parameter: `;`, a name, `=`, then a token or a quoted string (which may hold `;`).
    while !rest.is_empty() {
        let Some(after) = rest.strip_prefix(';') else {
            return false;
        };
        let Some((name, value)) = after.trim_start_matches(OWS).split_once('=') else {
            return false;
        };
        if !token(name) {
            return false;
        }
        let len = if value.starts_with('"') {
            match quoted_len(value) {
                Some(n) => n,
                None => return false,
            }
        } else {
            value.find([';', ' ', '\t']).unwrap_or(value.len())
        };
        if !value[..len].starts_with('"') && !token(&value[..len]) {
            return false;
        }
        rest = value[len..].trim_start_matches(OWS);
    }
    true
}

/// Optional whitespace around parameter separators.
const OWS: [char; 2] = [' ', '\t'];

/// RFC 6838 `restricted-name`: a letter or digit, then up to 126 of letters, digits and `!#$&-^_.+`.
fn restricted_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_NAME
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(c))
}

/// RFC 2045 `token`: one or more printable ASCII characters other than space and `tspecials`.
fn token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&c))
}

/// The length of the RFC 822 `quoted-string` (as RFC 2045 uses it) at the start of `s`: printable text and tabs
/// in double quotes, `\` escaping the next character. None when `s` does not start with a closed one.
fn quoted_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            c if c.is_ascii_control() && c != b'\t' => return None,
            _ => i += 1,
        }
    }
    None
}

/// MIME media types for the terminology operations.
pub struct MimeProvider {
    shell: ProviderShell,
}

impl std::fmt::Debug for MimeProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MimeProvider").finish()
    }
}

impl MimeProvider {
    /// The provider (it needs no content).
    pub fn new() -> Arc<MimeProvider> {
        // tx.fhir.org names no version of BCP 13.
        let shell = Arc::new(json!({
            "resourceType": "CodeSystem",
            "id": "mimetypes",
            "url": MIME_URL,
            "name": "Mime Types",
            "status": "active",
            "caseSensitive": true,
            "content": "not-present",
        }));
        Arc::new_cyclic(|me| MimeProvider {
            shell: ProviderShell::new(shell, me),
        })
    }

    fn concept(code: &str) -> Concept {
        Concept::new(code, Some(code.to_string()))
    }
}

impl CodeSystemProvider for MimeProvider {
    fn system(&self) -> &str {
        MIME_URL
    }

    fn version(&self) -> &str {
        ""
    }

    fn code_system(&self) -> Arc<CodeSystem> {
        self.shell.empty()
    }

    fn compile(&self, codes: &[&str], _languages: Option<&str>, _detail: Detail) -> CodeSystem {
        let concepts = codes
            .iter()
            .filter(|c| valid_media_type(c))
            .map(|c| MimeProvider::concept(c))
            .collect();
        self.shell.with(concepts)
    }

    fn select(
        &self,
        filters: &[Value],
        only: Option<&[String]>,
        path: &str,
    ) -> Result<Selection, TxError> {
        // BCP 13 defines no properties to filter on: refused, rather than selecting nothing without a word.
        if let Some((i, f)) = filters.iter().enumerate().next() {
            let part = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            return Err(TxError::new(
                ErrorKind::NotSupported,
                Issue::new(
                    Severity::Error,
                    "not-supported",
                    Some("vs-invalid"),
                    format!(
                        "The filter '{} {} {}' is not supported for the code system {MIME_URL}: media types have no properties to filter on",
                        part("property"),
                        part("op"),
                        part("value")
                    ),
                )
                .at(format!("{path}.filter[{i}]")),
            ));
        }
        // A grammar has no list of members: an expansion of the whole system lists none and says why.
        let codes = only
            .map(|codes| {
                codes
                    .iter()
                    .filter(|c| valid_media_type(c))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Ok(Selection {
            codes,
            unclosed: Some(Some(format!(
                "The code System '{MIME_URL}' has a grammar and so has infinite members"
            ))),
        })
    }

    fn quiet_inactive(&self) -> bool {
        false
    }

    fn subsumes(&self, a: &str, b: &str) -> Result<&'static str, String> {
        for c in [a, b] {
            if !valid_media_type(c) {
                return Err(c.to_string());
            }
        }
        Ok(if a == b { "equivalent" } else { "not-subsumed" })
    }

    fn lookup_codes(&self, code: &str) -> Option<Vec<String>> {
        Some(vec![code.to_string()])
    }

    fn lookup(&self, code: &str, _languages: Option<&str>, properties: &[String]) -> Option<Value> {
        let cs = self.compile(&[code], None, Detail::Validation);
        let i = cs.find(code)?;
        let display = cs.concepts[i].display.clone();
        Some(crate::lookup::concept_answer(&cs, i, display, properties))
    }

    fn implicit_value_set(&self, _url: &str) -> Option<Arc<Value>> {
        None
    }

    fn implicit_map(&self, _url: &str, _code: &str, _reverse: bool) -> Option<Vec<MapTarget>> {
        None
    }
}
