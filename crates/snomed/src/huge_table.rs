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
    /// A table holding a copy of `rows`.
    pub(crate) fn from_slice(rows: &[T]) -> std::io::Result<Self> {
        let bytes: &[u8] = bytemuck::cast_slice(rows);
        let mut map = MmapMut::map_anon(bytes.len().max(1))?;
        // Before the first write, so that the pages are huge from the start. A kernel without transparent huge
        // pages refuses the advice; the table then works on small pages.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        map[..bytes.len()].copy_from_slice(bytes);
        Ok(HugeTable {
            map,
            len: rows.len(),
            _rows: PhantomData,
        })
    }

    pub(crate) fn rows(&self) -> &[T] {
        bytemuck::cast_slice(&self.map[..self.len * size_of::<T>()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_a_copy_of_the_slice() {
        let rows: Vec<u64> = (0..100_000u64).map(|i| i * 3).collect();
        let table = HugeTable::from_slice(&rows).unwrap();
        assert_eq!(table.rows(), rows.as_slice());
        assert!(HugeTable::<u64>::from_slice(&[]).unwrap().rows().is_empty());
    }
}
