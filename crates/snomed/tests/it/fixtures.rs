//! Imports of SNOMED International's own RF2 fixtures and the tx-ecosystem subset, checked against the files.

use crate::naive::{counts, counts_of};
use crate::{import, shared};
use snomed::{SctId, consts};

#[test]
fn snowstorm_mini_base_plus_extension_layers_both_packages() {
    let base = shared().join("data/snomed/snowstorm-mini/SnomedCT_MiniRF2_Base_snapshot");
    let ext = shared().join("data/snomed/snowstorm-mini/SnomedCT_MiniRF2_Extension_snapshot");
    let dirs = vec![base.clone(), ext.clone()];
    let (_tmp, store, summary) = import(&dirs);
    let expected = counts(&dirs, "Snapshot");
    assert_eq!(counts_of(&summary.manifest), expected);
    assert_eq!(store.manifest(), &summary.manifest);
    assert_eq!(store.concept_count() as u64, expected.concepts);
    assert!(expected.concepts > 0 && expected.relationships > 0);
    // The extension's concepts hang under the base's hierarchy.
    let root = store.index_of(consts::ROOT).expect("root concept");
    let active = store.active_concepts();
    let under_root = store.descendants_bitmap(root, true);
    for c in active.iter() {
        let c = snomed::ConceptIdx(c);
        if !store.parents(c).is_empty() {
            assert!(
                under_root.contains(c.0),
                "{} not under root",
                store.id_of(c)
            );
        }
    }
    assert!(
        summary.manifest.modules.len() >= 2,
        "{:?}",
        summary.manifest.modules
    );
}

#[test]
fn snowstorm_dummy_snapshot_and_full_import_their_own_latest_rows() {
    let dummy = shared().join("data/snomed/snowstorm-dummy");
    // The package directory holds Snapshot, Full and Delta: the importer picks the Snapshot.
    let (_tmp, store, summary) = import(std::slice::from_ref(&dummy));
    assert_eq!(
        counts_of(&summary.manifest),
        counts(&[dummy.join("Snapshot")], "Snapshot")
    );
    assert!(store.concept_count() > 100);
    // Full files reduce to their latest row per component.
    let full = dummy.join("Full");
    let (_tmp2, _store2, summary2) = import(std::slice::from_ref(&full));
    assert_eq!(counts_of(&summary2.manifest), counts(&[full], "Full"));
    // Language and association refsets came through and are queryable.
    assert!(summary.manifest.language_members > 0);
    assert!(!store.language_refsets().is_empty());
}

#[test]
fn tx_ecosystem_subset_has_its_2258_concepts() {
    let dir = shared().join("tx-ecosystem/tx-source/snomed");
    let (_tmp, store, summary) = import(std::slice::from_ref(&dir));
    let expected = counts(std::slice::from_ref(&dir), "Snapshot");
    assert_eq!(expected.concepts, 2258);
    assert_eq!(counts_of(&summary.manifest), expected);
    assert_eq!(summary.manifest.concrete_values, 8);

    // A concept of the subset, its preferred terms and hierarchy.
    let ms = SctId::parse("24700007").unwrap();
    if let Some(idx) = store.index_of(ms) {
        let us = store.preferred_synonym(idx, &[consts::US_ENGLISH]).unwrap();
        assert_eq!(us.term, "Multiple sclerosis");
        let fsn = store
            .fully_specified_name(idx, &[consts::US_ENGLISH])
            .unwrap();
        assert!(fsn.term.ends_with("(disorder)"), "{}", fsn.term);
    }
    // Terms read together agree with terms read one at a time, in the default language order and in another.
    let all: Vec<_> = (0..store.concept_count()).map(snomed::ConceptIdx).collect();
    for refsets in [store.default_refsets(), vec![consts::GB_ENGLISH]] {
        let together = store.preferred_terms(&all, &refsets);
        let one_by_one: Vec<_> = all
            .iter()
            .map(|&c| store.preferred_term(c, &refsets))
            .collect();
        assert_eq!(together, one_by_one);
        assert!(together.iter().filter(|t| t.is_some()).count() >= 2258);
    }

    let root = store.index_of(consts::ROOT).unwrap();
    let finding = store.index_of(SctId::parse("404684003").unwrap()).unwrap();
    assert!(store.is_a(finding, root));
    assert!(!store.is_a(root, finding));
    assert!(store.descendants(root).len() > 2000);

    // Every historical association member points from an inactive concept.
    let mut associations = 0;
    for refset in store.historical_refsets() {
        for m in store.refset_members(refset).filter(|m| m.active) {
            associations += 1;
            let names = store.refset_fields(refset).unwrap().names;
            assert_eq!(names, vec!["targetComponentId"]);
            if let Some(c) = SctId::new(m.referenced_component)
                .ok()
                .and_then(|id| store.concept_by_id(id))
            {
                assert!(
                    !c.active,
                    "{} is active but has a historical association",
                    c.id
                );
            }
        }
    }
    assert!(associations > 0);
    // Concrete values parse.
    let with_values = (0..store.concept_count())
        .map(snomed::ConceptIdx)
        .flat_map(|c| store.concrete_values(c).collect::<Vec<_>>())
        .count();
    assert_eq!(with_values, 8);
}

#[test]
fn a_zip_package_imports_like_its_directory() {
    let base = shared().join("data/snomed/snowstorm-mini/SnomedCT_MiniRF2_Base_snapshot");
    let tmp = tempfile::tempdir().unwrap();
    let zip_path = tmp.path().join("base.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    for f in crate::naive::files(&base, ".txt") {
        let name = f.strip_prefix(&base).unwrap().to_string_lossy().to_string();
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut zip, &std::fs::read(&f).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    let (_t1, _s1, from_zip) = import(&[zip_path]);
    let (_t2, _s2, from_dir) = import(&[base]);
    assert_eq!(counts_of(&from_zip.manifest), counts_of(&from_dir.manifest));
}

#[test]
fn header_only_and_empty_files_import_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg/Snapshot/Terminology");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("sct2_Concept_Snapshot_INT_20250101.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId\r\n138875005\t20020131\t1\t900000000000207008\t900000000000074008\r\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("sct2_Description_Snapshot-en_INT_20250101.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tconceptId\tlanguageCode\ttypeId\tterm\tcaseSignificanceId\r\n",
    )
    .unwrap();
    std::fs::write(pkg.join("sct2_Relationship_Snapshot_INT_20250101.txt"), "").unwrap();
    let (_t, store, summary) = import(&[tmp.path().join("pkg")]);
    assert_eq!(summary.manifest.concepts, 1);
    assert_eq!(summary.manifest.descriptions, 0);
    assert!(
        store
            .search(&snomed::SearchRequest::new("snomed"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_malformed_row_is_reported_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("sct2_Concept_Snapshot_INT_20250101.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId\n138875005\t20020131\t1\t900000000000207008\t900000000000074008\n24700008\t2002013\t1\t9\t9\n",
    )
    .unwrap();
    let err = snomed::import(&[pkg], &tmp.path().join("root"), &snomed::NoProgress).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("sct2_Concept_Snapshot_INT_20250101.txt, line 3"),
        "{msg}"
    );
    assert!(matches!(err, snomed::ImportError::Row { line: 3, .. }));
    // Nothing was swapped in.
    assert!(snomed::Store::open(&tmp.path().join("root")).is_err());
}
