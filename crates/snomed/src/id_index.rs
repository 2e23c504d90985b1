//! Concept id → dense index, built at open.
//!
//! Single-code requests (`$lookup`, `$validate-code`, `$subsumes`) start by resolving an id, and in a store of
//! half a million concepts the memory the resolution touches is not in any cache. A binary search over the sorted
//! concept table costs a miss per step; a general hash table of row numbers costs three dependent misses (its
//! control bytes, the slot, then the concept row to compare the id). Here each slot holds the id beside its
//! row, in an open-addressed table at most two-thirds full: the slot a hash names is almost always the one that
//! answers, so an id resolves with one miss.

use crate::huge_table::HugeTable;
use bytemuck::{Pod, Zeroable};

/// One slot: an id and its row, four to a cache line.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C)]
pub(crate) struct Slot {
    /// The concept id; [`EMPTY`] for a free slot.
    id: u64,
    row: u32,
    _pad: u32,
}

/// No SCTID is 0 (the shortest valid one has six digits).
const EMPTY: u64 = 0;

/// The table: linear probing over a power-of-two number of slots.
pub(crate) struct IdIndex {
    slots: HugeTable<Slot>,
    mask: usize,
}

impl IdIndex {
    /// The index of `ids`, the concept table's ids in row order. When an id repeats, the first row is kept.
    pub(crate) fn build(ids: &[u64]) -> std::io::Result<IdIndex> {
        // At least one and a half times as many slots as ids, so that probe runs stay short.
        let len = (ids.len() + ids.len() / 2).next_power_of_two().max(16);
        let mask = len - 1;
        let mut slots = vec![Slot::zeroed(); len];
        for (row, &id) in ids.iter().enumerate() {
            if id == EMPTY {
                continue;
            }
            let mut i = home(id, mask);
            while slots[i].id != EMPTY && slots[i].id != id {
                i = (i + 1) & mask;
            }
            if slots[i].id == EMPTY {
                slots[i] = Slot {
                    id,
                    row: row as u32,
                    _pad: 0,
                };
            }
        }
        Ok(IdIndex {
            slots: HugeTable::from_slice(&slots)?,
            mask,
        })
    }

    /// The index kept in `slots` (read from a store's tables file), checked against `ids`, the concept table's
    /// ids in row order: every slot names a row holding its id, every id resolves to its first row, and the
    /// table has the free slots that end every probe. `None` when any of that is false.
    pub(crate) fn from_slots(slots: HugeTable<Slot>, ids: &[u64]) -> Option<IdIndex> {
        let len = slots.rows().len();
        if !len.is_power_of_two() || 2 * len < 3 * ids.len() {
            return None;
        }
        let index = IdIndex {
            slots,
            mask: len - 1,
        };
        let rows = index.slots.rows();
        let used = rows.iter().filter(|s| s.id != EMPTY).count();
        let slots_agree = rows
            .iter()
            .all(|s| s.id == EMPTY || ids.get(s.row as usize).is_some_and(|&id| id == s.id));
        // With a free slot left, `get` always ends; then each id must be found at its first row.
        let ids_agree = used < len
            && ids.iter().enumerate().all(|(row, &id)| {
                id == EMPTY
                    || index.get(id).is_some_and(|r| {
                        r as usize == row || ids.get(r as usize) == Some(&id) && (r as usize) < row
                    })
            });
        (slots_agree && ids_agree).then_some(index)
    }

    /// The slots, to be written into a store's tables file.
    pub(crate) fn slots(&self) -> &[Slot] {
        self.slots.rows()
    }

    /// The row of `id`, if the table has it.
    pub(crate) fn get(&self, id: u64) -> Option<u32> {
        if id == EMPTY {
            return None;
        }
        let slots = self.slots.rows();
        let mut i = home(id, self.mask);
        // The table is at most two-thirds full, so a free slot ends every probe.
        loop {
            let slot = slots[i];
            if slot.id == id {
                return Some(slot.row);
            }
            if slot.id == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// The slot where the probe for `id` starts.
fn home(id: u64, mask: usize) -> usize {
    hash_id(id) as usize & mask
}

/// The hash of a concept id: SCTIDs are decimal numbers with a partition and check digit at the end, so the bits
/// are mixed both ways (a folded 128-bit multiply) before the table takes the low bits.
fn hash_id(id: u64) -> u64 {
    let p = u128::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    (p as u64) ^ ((p >> 64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_resolves_to_its_first_row_and_others_to_none() {
        // Ids of the shape SCTIDs have (a sequence, a partition, a check digit) and clustered ones, which
        // collide in the low bits of a weak hash.
        let ids: Vec<u64> = (0..50_000u64)
            .map(|i| {
                if i % 2 == 0 {
                    100_000 + i * 1000 + 5
                } else {
                    900_000_000_000 + i
                }
            })
            .chain([138_875_005, 138_875_005])
            .collect();
        let table = IdIndex::build(&ids).unwrap();
        for (row, &id) in ids.iter().enumerate().take(50_000) {
            assert_eq!(table.get(id), Some(row as u32), "{id}");
        }
        assert_eq!(table.get(138_875_005), Some(50_000));
        for absent in [0, 1, 100_006, 900_000_050_001, u64::MAX] {
            assert_eq!(table.get(absent), None, "{absent}");
        }
        assert!(2 * table.slots.rows().len() >= 3 * ids.len());
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let table = IdIndex::build(&[]).unwrap();
        assert_eq!(table.get(138_875_005), None);
    }
}
