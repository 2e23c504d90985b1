//! Term matching for description filters, string concrete values and refset string fields.
//!
//! `match` (the default): every word of the search term is a prefix of some word of the text, in any order,
//! ignoring case; words are runs of letters and digits. `wild`: the whole text matches the pattern, ignoring
//! case, where `*` is any run of characters and `\*` a literal star.

/// Lower-cased words of `text` (runs of alphanumeric characters).
pub(super) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `match` semantics with the search words already split and lower-cased.
pub(super) fn match_words(text: &str, search: &[String]) -> bool {
    if search.is_empty() {
        return false;
    }
    let have = words(text);
    search
        .iter()
        .all(|s| have.iter().any(|w| w.starts_with(s.as_str())))
}

/// `wild` semantics: `pattern` is the unescaped search term (`\*` still escaped).
pub(super) fn wild_match(text: &str, pattern: &str) -> bool {
    // `None` is a star, `Some(c)` a literal character (lower-cased).
    let mut pat: Vec<Option<char>> = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => pat.extend(chars.next().unwrap_or('\\').to_lowercase().map(Some)),
            '*' => pat.push(None),
            c => pat.extend(c.to_lowercase().map(Some)),
        }
    }
    let text: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
    // Greedy matching that backtracks only to the last star: O(text × pattern) at worst.
    let (mut t, mut p) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pat.get(p) {
            Some(Some(c)) if *c == text[t] => {
                t += 1;
                p += 1;
            }
            Some(None) => {
                last_star = Some((p, t));
                p += 1;
            }
            _ => match last_star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    last_star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(Option::is_none)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_is_word_prefix_in_any_order() {
        let s = words("att heart");
        assert!(match_words("Heart attack", &s));
        assert!(!match_words("Heartburn", &words("heart att")));
        assert!(match_words(
            "Myocardial infarction (disorder)",
            &words("infarc")
        ));
    }

    #[test]
    fn wild_patterns() {
        assert!(wild_match("Cardiomyopathy", "cardi*opathy"));
        assert!(wild_match("Gastritis", "*itis"));
        assert!(!wild_match("Gastritis chronic", "*itis"));
        assert!(wild_match("a*b", "a\\*b"));
        assert!(!wild_match("axb", "a\\*b"));
        assert!(wild_match("J45.9", "J*"));
        assert!(wild_match("", "*"));
    }
}
