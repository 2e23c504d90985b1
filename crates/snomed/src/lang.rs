//! Accept-Language: from an HTTP language range to the installed language refsets to use, best first.

use crate::consts;
use crate::id::SctId;
use crate::store::Store;

/// Parses an `Accept-Language` header (`en-GB,en;q=0.8,fr;q=0.5`) into language tags ordered by quality.
pub fn parse_accept_language(header: &str) -> Vec<String> {
    let mut tags: Vec<(f32, usize, String)> = header
        .split(',')
        .enumerate()
        .filter_map(|(i, part)| {
            let mut bits = part.split(';');
            let tag = bits.next()?.trim().to_ascii_lowercase();
            if tag.is_empty() {
                return None;
            }
            let q = bits
                .find_map(|b| {
                    b.trim()
                        .strip_prefix("q=")
                        .and_then(|v| v.parse::<f32>().ok())
                })
                .unwrap_or(1.0);
            (q > 0.0).then_some((q, i, tag))
        })
        .collect();
    tags.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    tags.into_iter().map(|(_, _, t)| t).collect()
}

/// Well-known dialect refsets for language tags with a region.
fn dialect_refset(tag: &str) -> Option<SctId> {
    match tag {
        "en-us" => Some(consts::US_ENGLISH),
        "en-gb" => Some(consts::GB_ENGLISH),
        "en-nz" => Some(SctId::new_unchecked(271000210107)),
        "en-au" => Some(SctId::new_unchecked(32570271000036106)),
        "en-ie" => Some(SctId::new_unchecked(21000220103)),
        "en-ca" => Some(SctId::new_unchecked(19491000087109)),
        _ => None,
    }
}

impl Store {
    /// The installed language refsets that match an `Accept-Language` header, best first; the defaults
    /// (en-US, en-GB, others) when nothing matches or no header was sent.
    pub fn language_refsets_for(&self, accept_language: Option<&str>) -> Vec<SctId> {
        let Some(accept_language) = accept_language else {
            return self.default_refsets();
        };
        let installed = self.language_refsets();
        let mut out: Vec<SctId> = Vec::new();
        for tag in parse_accept_language(accept_language) {
            let primary = tag.split('-').next().unwrap_or("");
            if let Some(r) = dialect_refset(&tag)
                && installed.iter().any(|(i, _)| *i == r)
            {
                out.push(r);
                continue;
            }
            // A refset id given directly as an extension: `en-x-900000000000508004`.
            if let Some(id) = tag.rsplit("-x-").next().and_then(|s| SctId::parse(s).ok())
                && installed.iter().any(|(i, _)| *i == id)
            {
                out.push(id);
                continue;
            }
            for (r, lang) in &installed {
                if lang == primary && !out.contains(r) {
                    out.push(*r);
                }
            }
        }
        for r in self.default_refsets() {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_orders_by_quality() {
        assert_eq!(
            parse_accept_language("fr;q=0.5, en-GB ,en;q=0.8,de;q=0"),
            vec!["en-gb", "en", "fr"]
        );
        assert!(parse_accept_language("").is_empty());
    }
}
