//! Paging SNOMED CT expansions without listing them: concepts in expansion order (codes as text, as
//! tx.fhir.org lists them), and a page of a concept set in that order.

use snomed::ecl_eval::RoaringBitmap;
use snomed::{ConceptIdx, Store};
use std::sync::OnceLock;

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
        let ids = (0..store.concept_count()).map(|i| store.id_of(ConceptIdx(i)).get());
        TextOrder::of_ids(ids)
    }

    /// The order of the concepts whose ids are `ids`, concept `i` being the `i`th.
    fn of_ids(ids: impl Iterator<Item = u64>) -> TextOrder {
        let mut keyed: Vec<((u64, u32), u32)> = ids
            .enumerate()
            .map(|(i, id)| (text_key(id), i as u32))
            .collect();
        keyed.sort_unstable();
        let order: Vec<u32> = keyed.into_iter().map(|(_, i)| i).collect();
        let mut rank = vec![0u32; order.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i as usize] = r as u32;
        }
        TextOrder { rank, order }
    }

    /// The concepts of `set` at positions `offset..offset + count` in expansion order.
    pub(super) fn page(&self, set: &RoaringBitmap, offset: usize, count: usize) -> Vec<ConceptIdx> {
        let len = set.len() as usize;
        let Some(need) = page_end(len, offset, count) else {
            return Vec::new();
        };
        // Walking the whole order and testing membership costs about need * n / len probes; ranking the
        // set and selecting the first `need` costs about len. Take the cheaper.
        let n = self.order.len().max(1);
        if (need as u128) * (n as u128) < (len as u128) * (len as u128) {
            self.walk(set, offset, need)
        } else {
            let mut ranks = self.ranks(set);
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

    /// The positions of the members of `set`, unordered.
    fn ranks(&self, set: &RoaringBitmap) -> Vec<u32> {
        set.iter()
            .filter_map(|i| self.rank.get(i as usize).copied())
            .collect()
    }

    /// The members of `set` at positions `offset..need`, found by walking the order.
    fn walk(&self, set: &RoaringBitmap, offset: usize, need: usize) -> Vec<ConceptIdx> {
        self.order
            .iter()
            .filter(|&&i| set.contains(i))
            .skip(offset)
            .take(need - offset)
            .map(|&i| ConceptIdx(i))
            .collect()
    }
}

impl Matched {
    pub(super) fn new(
        set: RoaringBitmap,
        selected: usize,
        unclosed: Option<Option<String>>,
    ) -> Matched {
        Matched {
            set,
            selected,
            unclosed,
            in_order: OnceLock::new(),
        }
    }

    /// What the cache holds for this include: the bitmap and, once made, the set in expansion order.
    pub(super) fn cache_size(&self) -> usize {
        self.set.serialized_size() + 4 * self.set.len() as usize
    }

    /// The concepts at positions `offset..offset + count` in expansion order, as [`TextOrder::page`] gives
    /// them. A cached include is paged again and again (the same type-ahead search from many users, the next
    /// page): unless the set is so dense that walking the order finds a page within a few probes per concept,
    /// it is put in order once, and every later page is a slice of it instead of a walk or a ranking of the
    /// whole set (tens of microseconds for a set of a few thousand concepts).
    pub(super) fn page(&self, order: &TextOrder, offset: usize, count: usize) -> Vec<ConceptIdx> {
        let len = self.set.len() as usize;
        let Some(need) = page_end(len, offset, count) else {
            return Vec::new();
        };
        if self.in_order.get().is_none() && 4 * len >= order.order.len() {
            return order.walk(&self.set, offset, need);
        }
        let in_order = self.in_order.get_or_init(|| {
            let mut ranks = order.ranks(&self.set);
            ranks.sort_unstable();
            ranks.into_iter().map(|r| order.order[r as usize]).collect()
        });
        // `in_order` holds every member (all are concepts of the store), so the page is inside it.
        in_order
            .get(offset..need)
            .unwrap_or_default()
            .iter()
            .map(|&i| ConceptIdx(i))
            .collect()
    }
}

/// The end of the page `offset..offset + count` of a set of `len` concepts, cut at `len`; `None` for an empty
/// page.
fn page_end(len: usize, offset: usize, count: usize) -> Option<usize> {
    let need = offset.saturating_add(count).min(len);
    (need > offset).then_some(need)
}

/// An include evaluated for an expansion: the concepts it keeps, and how many it selected.
#[derive(Debug)]
pub(super) struct Matched {
    /// The concepts of the expansion (after `activeOnly` and the text filter).
    pub set: RoaringBitmap,
    /// The include's selection before the text filter and `activeOnly`.
    pub selected: usize,
    pub unclosed: Option<Option<String>>,
    /// `set` in expansion order, made by the first page that needs it (see [`Matched::page`]).
    in_order: OnceLock<Vec<u32>>,
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

    /// A cached include's pages (the set put in order once) are the pages of the set, for sets small and large
    /// (both ways of paging), every offset and count, past the end included.
    #[test]
    fn cached_pages_are_the_pages_of_the_set() {
        // A deterministic stream of numbers (an LCG): ids of every length, sets of every density.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 17
        };
        let n = 20_000u32;
        let order = TextOrder::of_ids((0..n).map(|_| next() % 10u64.pow(1 + (next() % 12) as u32)));
        for every in [1u64, 3, 40, 900, 5_000] {
            let set: RoaringBitmap = (0..n).filter(|_| next() % every == 0).collect();
            let matched = Matched::new(set.clone(), set.len() as usize, None);
            let len = set.len() as usize;
            for (offset, count) in [
                (0, 10),
                (0, len),
                (7, 3),
                (len / 2, 25),
                (len, 10),
                (len + 5, 1),
                (0, 0),
            ] {
                assert_eq!(
                    matched.page(&order, offset, count),
                    order.page(&set, offset, count),
                    "one in {every}, offset {offset}, count {count}"
                );
            }
        }
    }
}
