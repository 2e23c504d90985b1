//! A small bounded cache (by entries and by bytes, least recently used first out) shared by the expansion
//! caches: the service's cache of evaluated value sets and a provider's cache of evaluated includes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Values by string key, bounded by `max_entries` and by `max_bytes` of the sizes given with them.
pub(crate) struct Lru<V> {
    inner: Mutex<Inner<V>>,
    max_entries: usize,
    max_bytes: usize,
}

struct Inner<V> {
    /// key -> (value, last use, bytes).
    map: HashMap<String, (Arc<V>, u64, usize)>,
    clock: u64,
    bytes: usize,
}

impl<V> std::fmt::Debug for Lru<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (entries, bytes) = self.usage();
        f.debug_struct("Lru")
            .field("entries", &entries)
            .field("bytes", &bytes)
            .finish()
    }
}

impl<V> Lru<V> {
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Lru<V> {
        Lru {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                clock: 0,
                bytes: 0,
            }),
            max_entries,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        // Every update leaves the map consistent, so a panic elsewhere while it was held changes nothing.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`, marked as just used.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<V>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.map.get_mut(key)?;
        entry.1 = now;
        Some(entry.0.clone())
    }

    /// Keeps `value` (of about `bytes`) under `key`, evicting the least recently used beyond the bounds. A
    /// value larger than the whole byte budget is not kept.
    pub(crate) fn put(&self, key: String, value: Arc<V>, bytes: usize) {
        let bytes = bytes + key.len() + 64;
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
            // A linear scan: evictions are rare next to hits, and the maps hold a few thousand entries.
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
    pub(crate) fn usage(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.map.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_within_both_bounds() {
        let cache: Lru<u32> = Lru::new(2, 1 << 20);
        cache.put("a".into(), Arc::new(1), 10);
        cache.put("b".into(), Arc::new(2), 10);
        assert!(cache.get("a").is_some());
        cache.put("c".into(), Arc::new(3), 10);
        assert!(cache.get("b").is_none(), "b was least recently used");
        assert_eq!(*cache.get("a").unwrap(), 1);
        assert_eq!(*cache.get("c").unwrap(), 3);
        assert_eq!(cache.usage().0, 2);

        let small: Lru<u32> = Lru::new(10, 400);
        small.put("x".into(), Arc::new(1), 10);
        small.put("huge".into(), Arc::new(2), 10_000);
        assert!(
            small.get("huge").is_none(),
            "larger than the budget: not kept"
        );
        assert!(small.get("x").is_some(), "and it evicted nothing");
        small.put("y".into(), Arc::new(3), 200);
        small.put("z".into(), Arc::new(4), 200);
        assert!(small.usage().1 <= 400);
        assert!(small.get("x").is_none(), "evicted by bytes");
        // Replacing a key does not count it twice.
        small.put("z".into(), Arc::new(5), 200);
        assert_eq!(*small.get("z").unwrap(), 5);
        assert!(small.usage().1 <= 400);
    }
}
