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

/// Offset in `store.bin` of the section table entry of section `id` (entries: id u32, elem_size u32, offset u64,
/// len u64, after a 64-byte header).
fn entry_of(bytes: &[u8], id: u32) -> usize {
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    (0..count)
        .map(|i| 64 + i * 24)
        .find(|&at| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) == id)
        .expect("section in the table")
}

fn get_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn a_damaged_section_table_is_a_corrupt_error_naming_the_file_never_a_panic() {
    const CONCEPTS: u32 = 1;
    const LANG: u32 = 14;
    let (tmp, store, _) = synthetic(300, 2);
    let dir = store.dir().to_path_buf();
    drop(store);
    let good = std::fs::read(dir.join("store.bin")).unwrap();
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(dir.join("manifest.json"), copy.join("manifest.json")).unwrap();
    type Damage = fn(&mut Vec<u8>);
    let cases: [(&str, Damage); 8] = [
        (
            "zero element size and a length that is no multiple of the record",
            |b| {
                let at = entry_of(b, CONCEPTS);
                b[at + 4..at + 8].copy_from_slice(&0u32.to_le_bytes());
                let len = get_u64(b, at + 16);
                b[at + 16..at + 24].copy_from_slice(&(len - 1).to_le_bytes());
            },
        ),
        ("zero element size", |b| {
            let at = entry_of(b, LANG);
            b[at + 4..at + 8].copy_from_slice(&0u32.to_le_bytes());
        }),
        ("element size smaller than the record", |b| {
            let at = entry_of(b, LANG);
            b[at + 4..at + 8].copy_from_slice(&1u32.to_le_bytes());
            let len = get_u64(b, at + 16);
            b[at + 16..at + 24].copy_from_slice(&(len - 1).to_le_bytes());
        }),
        ("length no multiple of the element size", |b| {
            let at = entry_of(b, CONCEPTS);
            let len = get_u64(b, at + 16);
            b[at + 16..at + 24].copy_from_slice(&(len - 8).to_le_bytes());
        }),
        ("misaligned offset", |b| {
            let at = entry_of(b, CONCEPTS);
            let off = get_u64(b, at + 8);
            b[at + 8..at + 16].copy_from_slice(&(off + 4).to_le_bytes());
        }),
        ("offset inside the header", |b| {
            let at = entry_of(b, CONCEPTS);
            b[at + 8..at + 16].copy_from_slice(&0u64.to_le_bytes());
        }),
        ("offset plus length overflows", |b| {
            let at = entry_of(b, CONCEPTS);
            b[at + 16..at + 24].copy_from_slice(&u64::MAX.to_le_bytes());
        }),
        ("section count past the end of the file", |b| {
            b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        }),
    ];
    for (what, damage) in cases {
        let mut bytes = good.clone();
        damage(&mut bytes);
        std::fs::write(copy.join("store.bin"), &bytes).unwrap();
        let opened = std::panic::catch_unwind(|| snomed::Store::open(&copy))
            .unwrap_or_else(|_| panic!("{what}: opening panicked"));
        match opened {
            Err(e @ snomed::OpenError::Corrupt { .. }) => {
                assert!(e.to_string().contains("store.bin"), "{what}: {e}");
            }
            other => panic!("{what}: expected Corrupt, got {other:?}"),
        }
    }
    // A section listed twice.
    let mut bytes = good.clone();
    let (first, second) = (entry_of(&bytes, CONCEPTS), entry_of(&bytes, LANG));
    let copied = bytes[first..first + 24].to_vec();
    bytes[second..second + 24].copy_from_slice(&copied);
    std::fs::write(copy.join("store.bin"), &bytes).unwrap();
    assert!(matches!(
        snomed::Store::open(&copy),
        Err(snomed::OpenError::Corrupt { .. })
    ));
    // The undamaged store still opens.
    assert!(snomed::Store::open(&dir).is_ok());
}

/// Zips the files under `dir` (stored, with ZIP64 extra fields), then makes every entry declare `declared`
/// uncompressed bytes in the central directory.
fn zip_declaring(dir: &std::path::Path, out: &std::path::Path, declared: u64) {
    fn walk(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, files);
            } else {
                files.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(true);
    for f in &files {
        let name = f
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        zip.start_file(name, options).unwrap();
        std::io::Write::write_all(&mut zip, &std::fs::read(f).unwrap()).unwrap();
    }
    let mut bytes = zip.finish().unwrap().into_inner();
    let mut patched = 0;
    let mut at = 0;
    while let Some(i) = bytes[at..].windows(4).position(|w| w == b"PK\x01\x02") {
        let h = at + i;
        let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
        let (name_len, extra_len) = (u16_at(&bytes, h + 28), u16_at(&bytes, h + 30));
        // The 32-bit size says "see the ZIP64 field", whose first value is then the uncompressed size.
        bytes[h + 24..h + 28].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut x = h + 46 + name_len;
        let extra_end = x + extra_len;
        while x + 4 <= extra_end {
            let (id, len) = (u16_at(&bytes, x), u16_at(&bytes, x + 2));
            if id == 1 && len >= 8 {
                bytes[x + 4..x + 12].copy_from_slice(&declared.to_le_bytes());
                patched += 1;
            }
            x += 4 + len;
        }
        at = h + 4;
    }
    assert_eq!(patched, files.len(), "every entry has a ZIP64 field");
    std::fs::write(out, bytes).unwrap();
}

#[test]
fn a_zip_entry_declaring_a_huge_size_imports_from_its_real_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let rf2 = tmp.path().join("rf2");
    snomed::synth::generate(
        &snomed::synth::SynthConfig {
            concepts: 200,
            seed: 5,
        },
        &rf2,
    )
    .unwrap();
    let archive = tmp.path().join("release.zip");
    // A terabyte each: allocating that up front aborts the process.
    zip_declaring(&rf2, &archive, 1 << 40);
    let from_zip = tmp.path().join("from-zip");
    snomed::import(
        std::slice::from_ref(&archive),
        &from_zip,
        &snomed::NoProgress,
    )
    .unwrap();
    let from_dir = tmp.path().join("from-dir");
    snomed::import(std::slice::from_ref(&rf2), &from_dir, &snomed::NoProgress).unwrap();
    assert_eq!(
        snomed::Store::open(&from_zip).unwrap().concept_count(),
        snomed::Store::open(&from_dir).unwrap().concept_count()
    );
}

/// Copies a store directory (its files and its search index), leaving out the files named in `skip`.
fn copy_store(from: &std::path::Path, to: &std::path::Path, skip: &[&str]) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_store(&entry.path(), &to.join(&name), &[]);
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

#[test]
fn the_tables_written_at_import_answer_as_the_tables_built_at_open() {
    let (tmp, mapped, _) = synthetic(3_000, 4);
    let dir = mapped.dir().to_path_buf();
    let tables = std::fs::metadata(dir.join("tables.bin")).expect("the import writes tables.bin");
    // A header, a 64-byte card per concept, then at least one and a half 16-byte slots per concept.
    let n = mapped.concept_count() as u64;
    assert!(
        tables.len() >= 64 + 64 * n + 24 * n,
        "{} bytes",
        tables.len()
    );
    // The same store without the file (as imported by an earlier version): its tables are built at open.
    let copy = tmp.path().join("built");
    copy_store(&dir, &copy, &["tables.bin"]);
    let built = snomed::Store::open(&copy).unwrap();
    let refsets = built.default_refsets();
    let mut with_term = 0;
    for i in 0..mapped.concept_count() {
        let idx = snomed::ConceptIdx(i);
        let id = mapped.id_of(idx);
        assert_eq!(mapped.index_of(id), Some(idx));
        assert_eq!(built.index_of(id), Some(idx));
        assert_eq!(mapped.default_term(idx), built.default_term(idx), "{id}");
        let row = |s: &snomed::Store| s.preferred_synonym(idx, &refsets).map(|d| d.id);
        assert_eq!(row(&mapped), row(&built), "{id}");
        with_term += usize::from(mapped.default_term(idx).is_some());
    }
    assert!(
        with_term * 10 > mapped.concept_count() as usize * 9,
        "most concepts have a display: {with_term}"
    );
    let last = mapped
        .id_of(snomed::ConceptIdx(mapped.concept_count() - 1))
        .get();
    for absent in [100_005, 999_999_999_999, last + 1000] {
        if let Ok(id) = snomed::SctId::new(absent) {
            assert_eq!(mapped.index_of(id), built.index_of(id), "{absent}");
        }
    }
}

#[test]
fn a_damaged_tables_file_is_a_corrupt_error_naming_it_never_a_panic_or_a_wrong_answer() {
    let (tmp, store, _) = synthetic(500, 5);
    let dir = store.dir().to_path_buf();
    let n = store.concept_count() as usize;
    // A concept whose display sits inline in its card (row, term offset, term length, then the text).
    let inline = (0..n)
        .find(|&i| {
            store
                .default_term(snomed::ConceptIdx(i as u32))
                .is_some_and(|t| !t.is_empty() && t.len() <= 44)
        })
        .expect("a short display");
    drop(store);
    let good = std::fs::read(dir.join("tables.bin")).unwrap();
    let card = |i: usize| 64 + 64 * i;
    let slots = card(n);
    let slot_count = (good.len() - slots) / 16;
    let used_slot = (0..slot_count)
        .map(|s| slots + 16 * s)
        .find(|&at| get_u64(&good, at) != 0)
        .unwrap();
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Damage)> = vec![
        ("a card's id", Box::new(move |b| b[card(3)] ^= 1)),
        (
            "a card's description row past the table",
            Box::new(move |b| {
                b[card(inline) + 8..card(inline) + 12]
                    .copy_from_slice(&(u32::MAX - 1).to_le_bytes())
            }),
        ),
        (
            "an inline display that is not UTF-8",
            Box::new(move |b| b[card(inline) + 20] = 0xFF),
        ),
        (
            "a slot naming another row",
            Box::new(move |b| {
                let row = u32::from_le_bytes(b[used_slot + 8..used_slot + 12].try_into().unwrap());
                b[used_slot + 8..used_slot + 12]
                    .copy_from_slice(&((row + 1) % n as u32).to_le_bytes())
            }),
        ),
        (
            "every slot used (a probe for an absent id would never end)",
            Box::new(move |b| {
                for s in 0..slot_count {
                    let at = slots + 16 * s;
                    if get_u64(b, at) == 0 {
                        b[at..at + 8].copy_from_slice(&7u64.to_le_bytes());
                    }
                }
            }),
        ),
        ("truncated", Box::new(|b| b.truncate(b.len() - 16))),
        ("a header naming another store", Box::new(|b| b[32] ^= 1)),
        ("bad magic", Box::new(|b| b[0] = b'X')),
    ];
    for (i, (what, damage)) in cases.iter().enumerate() {
        let copy = tmp.path().join(format!("damaged-{i}"));
        copy_store(&dir, &copy, &[]);
        let mut bytes = good.clone();
        damage(&mut bytes);
        std::fs::write(copy.join("tables.bin"), &bytes).unwrap();
        let opened = std::panic::catch_unwind(|| snomed::Store::open(&copy))
            .unwrap_or_else(|_| panic!("{what}: opening panicked"));
        match opened {
            Err(e @ snomed::OpenError::Corrupt { .. }) => {
                assert!(e.to_string().contains("tables.bin"), "{what}: {e}");
            }
            other => panic!(
                "{what}: expected Corrupt, got {:?}",
                other.map(|s| s.concept_count())
            ),
        }
    }
}
