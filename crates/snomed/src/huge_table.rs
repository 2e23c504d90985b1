//! Tables a store builds at open and reads at random (the id index, the concept cards), kept in anonymous memory
//! that the kernel is asked to back with transparent huge pages.
//!
//! A single-code request reads a dozen rows scattered over tables of tens of megabytes. With 4 KiB pages each row
//! also misses the TLB, and the page walks that follow run at most two at a time: reads the processor could have
//! in flight together wait in line. With 2 MiB pages a whole table fits the TLB. Whether a `Vec` gets huge pages
//! depends on the allocator; asking for them on a mapping of its own does not.

use bytemuck::Pod;
use memmap2::MmapMut;
use std::marker::PhantomData;

/// A fixed-length table of `T` in its own anonymous mapping.
pub(crate) struct HugeTable<T> {
    map: MmapMut,
    len: usize,
    _rows: PhantomData<T>,
}

impl<T: Pod> HugeTable<T> {
    /// A table of `len` rows, row `i` being `row(i)`.
    pub(crate) fn from_fn(len: usize, mut row: impl FnMut(usize) -> T) -> std::io::Result<Self> {
        let bytes = (len * size_of::<T>()).max(1);
        let mut map = MmapMut::map_anon(bytes)?;
        // Before the first write, so that the pages are huge from the start. A kernel without transparent huge
        // pages refuses the advice; the table then works on small pages.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let rows: &mut [T] = bytemuck::cast_slice_mut(&mut map[..len * size_of::<T>()]);
        for (i, r) in rows.iter_mut().enumerate() {
            *r = row(i);
        }
        Ok(HugeTable {
            map,
            len,
            _rows: PhantomData,
        })
    }

    /// An empty table (before a store has built its own).
    pub(crate) fn empty() -> std::io::Result<Self> {
        Self::from_fn(0, |_| T::zeroed())
    }

    pub(crate) fn rows(&self) -> &[T] {
        bytemuck::cast_slice(&self.map[..self.len * size_of::<T>()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_what_was_built() {
        let table = HugeTable::from_fn(100_000, |i| (i as u64) * 3).unwrap();
        assert_eq!(table.rows().len(), 100_000);
        assert!(
            table
                .rows()
                .iter()
                .enumerate()
                .all(|(i, &v)| v == i as u64 * 3)
        );
        assert!(HugeTable::<u64>::empty().unwrap().rows().is_empty());
    }
}
