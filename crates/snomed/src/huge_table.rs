//! Tables a store reads at random (the id index, the concept cards): written at import into a file of their own
//! and mapped from it, so that processes opening the same store share their pages; or, for a store imported
//! before they were written, built at open in anonymous memory that the kernel is asked to back with transparent
//! huge pages.
//!
//! A single-code request reads a dozen rows scattered over tables of tens of megabytes. With 4 KiB pages each row
//! also misses the TLB, and the page walks that follow run at most two at a time: reads the processor could have
//! in flight together wait in line. With 2 MiB pages a whole table fits the TLB. Whether a `Vec` gets huge pages
//! depends on the allocator; asking for them on a mapping of its own does not.

use bytemuck::Pod;
use memmap2::{Mmap, MmapMut};
use std::marker::PhantomData;
use std::sync::Arc;

/// A fixed-length table of `T`: in its own anonymous mapping, or a range of a mapped file.
pub(crate) struct HugeTable<T> {
    map: Backing,
    len: usize,
    _rows: PhantomData<T>,
}

enum Backing {
    Anonymous(MmapMut),
    /// A file mapping shared by several tables, and where in it this table starts.
    File(Arc<Mmap>, usize),
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
            map: Backing::Anonymous(map),
            len: rows.len(),
            _rows: PhantomData,
        })
    }

    /// The `len` rows at byte `start` of `map`; `None` when they do not fit in it or are not aligned for `T`.
    pub(crate) fn in_file(map: Arc<Mmap>, start: usize, len: usize) -> Option<Self> {
        let bytes = map.get(start..start.checked_add(len.checked_mul(size_of::<T>())?)?)?;
        // Checked once here, so that `rows` cannot fail.
        bytemuck::try_cast_slice::<u8, T>(bytes).ok()?;
        Some(HugeTable {
            map: Backing::File(map, start),
            len,
            _rows: PhantomData,
        })
    }

    pub(crate) fn rows(&self) -> &[T] {
        let bytes = match &self.map {
            Backing::Anonymous(map) => &map[..self.len * size_of::<T>()],
            Backing::File(map, start) => &map[*start..*start + self.len * size_of::<T>()],
        };
        bytemuck::cast_slice(bytes)
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

    #[test]
    fn rows_in_a_file_are_checked_for_bounds_and_alignment() {
        let rows: Vec<u64> = (0..1000u64).collect();
        let path = std::env::temp_dir().join(format!("thoth-huge-table-{}", std::process::id()));
        let mut bytes = vec![0u8; 8];
        bytes.extend_from_slice(bytemuck::cast_slice(&rows));
        std::fs::write(&path, &bytes).unwrap();
        let map = Arc::new(unsafe { Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap());
        std::fs::remove_file(&path).unwrap();
        let table = HugeTable::<u64>::in_file(map.clone(), 8, 1000).unwrap();
        assert_eq!(table.rows(), rows.as_slice());
        assert!(
            HugeTable::<u64>::in_file(map.clone(), 8, 1001).is_none(),
            "past the end"
        );
        assert!(
            HugeTable::<u64>::in_file(map.clone(), 4, 10).is_none(),
            "misaligned"
        );
        assert!(
            HugeTable::<u64>::in_file(map, usize::MAX, 1).is_none(),
            "overflow"
        );
    }
}
