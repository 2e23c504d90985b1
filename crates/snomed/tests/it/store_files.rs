//! The store on disk: atomic swap on re-import, format version check, sharing across opens.

use crate::{shared, synthetic};

#[test]
fn reimport_swaps_atomically_and_open_stores_keep_working() {
    let base = shared().join("data/snomed/snowstorm-mini/SnomedCT_MiniRF2_Base_snapshot");
    let ext = shared().join("data/snomed/snowstorm-mini/SnomedCT_MiniRF2_Extension_snapshot");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("snomed");
    let first = snomed::import(std::slice::from_ref(&base), &root, &snomed::NoProgress).unwrap();
    let old = snomed::Store::open(&root).unwrap();
    let old_count = old.concept_count();
    let second = snomed::import(&[base, ext], &root, &snomed::NoProgress).unwrap();
    assert_ne!(first.store_dir, second.store_dir);
    assert!(
        !first.store_dir.exists(),
        "old store removed after the swap"
    );
    let new = snomed::Store::open(&root).unwrap();
    assert!(new.concept_count() > old_count);
    // The old store is still readable through its memory map.
    assert_eq!(old.concept_count(), old_count);
    assert!(old.search(&snomed::SearchRequest::new("a")).is_ok());
}

#[test]
fn a_store_of_another_format_version_is_refused_with_a_typed_error() {
    let (tmp, store, _) = synthetic(300, 1);
    let dir = store.dir().to_path_buf();
    drop(store);
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for name in ["store.bin", "manifest.json"] {
        std::fs::copy(dir.join(name), copy.join(name)).unwrap();
    }
    let mut bytes = std::fs::read(copy.join("store.bin")).unwrap();
    bytes[8..12].copy_from_slice(&(snomed::FORMAT_VERSION + 1).to_le_bytes());
    std::fs::write(copy.join("store.bin"), &bytes).unwrap();
    match snomed::Store::open(&copy) {
        Err(snomed::OpenError::IncompatibleFormat {
            found, expected, ..
        }) => {
            assert_eq!(found, snomed::FORMAT_VERSION + 1);
            assert_eq!(expected, snomed::FORMAT_VERSION);
        }
        other => panic!("expected IncompatibleFormat, got {other:?}"),
    }
    bytes[0] = b'X';
    std::fs::write(copy.join("store.bin"), &bytes).unwrap();
    assert!(matches!(
        snomed::Store::open(&copy),
        Err(snomed::OpenError::Corrupt { .. })
    ));
    assert!(matches!(
        snomed::Store::open(&tmp.path().join("nothing")),
        Err(snomed::OpenError::Missing(_))
    ));
}

#[test]
fn one_store_serves_many_threads() {
    let (_tmp, store, _) = synthetic(1_000, 3);
    let store = std::sync::Arc::new(store);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let s = store.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                for i in (t..s.concept_count()).step_by(4) {
                    n += s.ancestors(snomed::ConceptIdx(i)).len();
                }
                n
            })
        })
        .collect();
    let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total as u64, store.manifest().is_a_closure_rows);
}
