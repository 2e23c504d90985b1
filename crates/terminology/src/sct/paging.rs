//! Paging SNOMED CT expansions without listing them: concepts in expansion order (codes as text, as
//! tx.fhir.org lists them), a page of a concept set in that order, and a bounded cache of evaluated includes.

use snomed::ecl_eval::RoaringBitmap;
use snomed::{ConceptIdx, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    /// The selection before the display test and `activeOnly` (what the too-costly rule counts).
    pub selected: usize,
    pub unclosed: Option<Option<String>>,
}

/// Evaluated includes by their definition (filters, text filter, activeOnly, languages): ECL and a text
/// search over the whole edition cost milliseconds, a page of a cached set microseconds. Entries depend on
/// the immutable store alone, so they are never stale. Bounded by entries and by the bitmaps' bytes; the
/// least recently used go first.
pub(super) struct MatchCache {
    inner: Mutex<CacheInner>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct CacheInner {
    map: HashMap<String, (Arc<Matched>, u64, usize)>,
    clock: u64,
    bytes: usize,
}

impl MatchCache {
    pub(super) fn new(max_entries: usize, max_bytes: usize) -> MatchCache {
        MatchCache {
            inner: Mutex::new(CacheInner::default()),
            max_entries,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        // A panic while holding the lock leaves a consistent map (every update is one insert or remove).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn get(&self, key: &str) -> Option<Arc<Matched>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.map.get_mut(key)?;
        entry.1 = now;
        Some(entry.0.clone())
    }

    pub(super) fn put(&self, key: String, value: Arc<Matched>) {
        let bytes = value.set.serialized_size() + key.len() + 64;
        if bytes > self.max_bytes || self.max_entries == 0 {
            return;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        if let Some(old) = inner.map.insert(key, (value, now, bytes)) {
            inner.bytes -= old.2;
        }
        inner.bytes += bytes;
        while inner.map.len() > self.max_entries || inner.bytes > self.max_bytes {
            let Some(oldest) = inner
                .map
                .iter()
                .min_by_key(|(_, v)| v.1)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(v) = inner.map.remove(&oldest) {
                inner.bytes -= v.2;
            }
        }
    }

    /// Entries and bytes held.
    #[cfg(test)]
    pub(super) fn usage(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.map.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keys_order_as_decimal_text() {
        let mut ids = vec![2u64, 10, 1, 100, 11, 9, 138875005, 1388750051, 404684003, 40468400];
        let mut as_text: Vec<String> = ids.iter().map(u64::to_string).collect();
        as_text.sort();
        ids.sort_by_key(|&i| text_key(i));
        let got: Vec<String> = ids.iter().map(u64::to_string).collect();
        assert_eq!(got, as_text);
        assert!(text_key(999_999_999_999_999_999) > text_key(99_999_999_999_999_999));
    }

    #[test]
    fn cache_evicts_least_recently_used_within_its_bounds() {
        let entry = |n: u32| {
            Arc::new(Matched {
                set: (0..n).collect(),
                selected: n as usize,
                unclosed: None,
            })
        };
        let cache = MatchCache::new(2, 1 << 20);
        cache.put("a".into(), entry(1));
        cache.put("b".into(), entry(2));
        assert!(cache.get("a").is_some());
        cache.put("c".into(), entry(3));
        assert!(cache.get("b").is_none(), "b was least recently used");
        assert_eq!(cache.get("a").unwrap().selected, 1);
        assert_eq!(cache.get("c").unwrap().selected, 3);
        assert_eq!(cache.usage().0, 2);
        // By bytes: a set larger than the whole budget is not kept, and it evicts nothing.
        let small = MatchCache::new(10, 200);
        small.put("x".into(), entry(1));
        small.put("huge".into(), Arc::new(Matched { set: (0..100_000).step_by(3).collect(), selected: 0, unclosed: None }));
        assert!(small.get("huge").is_none());
        assert!(small.get("x").is_some());
        assert!(small.usage().1 <= 200);
    }
}
