//! Paging SNOMED CT expansions without listing them: concepts in expansion order (codes as text, as
//! tx.fhir.org lists them), and a page of a concept set in that order.

use snomed::ecl_eval::RoaringBitmap;
use snomed::{ConceptIdx, Store};

/// Every concept's position when codes are ordered as text, and the concepts in that order.
pub(super) struct TextOrder {
    /// `rank[idx]`: the position of concept `idx`.
    rank: Vec<u32>,
    /// `order[rank]`: the concept at a position.
    order: Vec<u32>,
}

/// A key that orders SCTIDs as their decimal text orders: the digits left-aligned in 19 places, then the
/// number of digits ("1" < "10" < "100" < "11" < "2").
fn text_key(id: u64) -> (u64, u32) {
    let digits = id.checked_ilog10().map_or(1, |d| d + 1);
    // u64 holds 19-digit numbers below 10^19 scaled from fewer digits; SCTIDs have at most 18.
    let scaled = (id as u128 * 10u128.pow(19 - digits.min(19))).min(u64::MAX as u128) as u64;
    (scaled, digits)
}

impl TextOrder {
    pub(super) fn new(store: &Store) -> TextOrder {
        let n = store.concept_count();
        let mut keyed: Vec<((u64, u32), u32)> = (0..n)
            .map(|i| (text_key(store.id_of(ConceptIdx(i)).get()), i))
            .collect();
        keyed.sort_unstable();
        let order: Vec<u32> = keyed.into_iter().map(|(_, i)| i).collect();
        let mut rank = vec![0u32; n as usize];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        TextOrder { rank, order }
    }

    /// The concepts of `set` at positions `offset..offset + count` in expansion order.
    pub(super) fn page(&self, set: &RoaringBitmap, offset: usize, count: usize) -> Vec<ConceptIdx> {
        let len = set.len() as usize;
        let need = offset.saturating_add(count).min(len);
        if need <= offset {
            return Vec::new();
        }
        let n = self.order.len().max(1);
        // Walking the whole order and testing membership costs about need * n / len probes; ranking the
        // set and selecting the first `need` costs about len. Take the cheaper.
        if (need as u128) * (n as u128) < (len as u128) * (len as u128) {
            self.order
                .iter()
                .filter(|&&i| set.contains(i))
                .skip(offset)
                .take(need - offset)
                .map(|&i| ConceptIdx(i))
                .collect()
        } else {
            let mut ranks: Vec<u32> = set
                .iter()
                .filter_map(|i| self.rank.get(i as usize).copied())
                .collect();
            if need < ranks.len() {
                ranks.select_nth_unstable(need);
                ranks.truncate(need);
            }
            ranks.sort_unstable();
            ranks
                .into_iter()
                .skip(offset)
                .map(|r| ConceptIdx(self.order[r as usize]))
                .collect()
        }
    }
}

/// An include evaluated for an expansion: the concepts it keeps, and how many it selected.
#[derive(Debug)]
pub(super) struct Matched {
    /// The concepts of the expansion (after `activeOnly` and the text filter).
    pub set: RoaringBitmap,
    /// The include's selection before the text filter and `activeOnly`.
    pub selected: usize,
    pub unclosed: Option<Option<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keys_order_as_decimal_text() {
        let mut ids = vec![
            2u64, 10, 1, 100, 11, 9, 138875005, 1388750051, 404684003, 40468400,
        ];
        let mut as_text: Vec<String> = ids.iter().map(u64::to_string).collect();
        as_text.sort();
        ids.sort_by_key(|&i| text_key(i));
        let got: Vec<String> = ids.iter().map(u64::to_string).collect();
        assert_eq!(got, as_text);
        assert!(text_key(999_999_999_999_999_999) > text_key(99_999_999_999_999_999));
    }
}
