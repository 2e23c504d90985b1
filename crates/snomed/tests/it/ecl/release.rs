//! A release held as plain collections, written out as RF2 files and imported into a [`Store`]. The hand-built
//! fixture and the random generator both produce one; the naive evaluator reads it directly.

use std::fmt::Write as _;
use std::path::Path;

use snomed::{NoProgress, Partition, SctId, Store};

pub const IS_A: u64 = 116680003;
pub const INFERRED: u64 = 900000000000011006;
pub const STATED: u64 = 900000000000010007;
pub const CORE: u64 = 900000000000207008;
pub const PRIMITIVE: u64 = 900000000000074008;
pub const DEFINED: u64 = 900000000000073002;
pub const FSN: u64 = 900000000000003001;
pub const SYNONYM: u64 = 900000000000013009;
pub const US: u64 = 900000000000509007;
pub const GB: u64 = 900000000000508004;

#[derive(Clone, Debug)]
pub struct Concept {
    pub id: u64,
    pub active: bool,
    pub defined: bool,
    pub module: u64,
    pub effective: u32,
}

#[derive(Clone, Debug)]
pub struct Desc {
    pub id: u64,
    pub concept: u64,
    pub lang: &'static str,
    pub type_id: u64,
    pub term: String,
    pub active: bool,
    /// (language refset, preferred)
    pub acceptability: Vec<(u64, bool)>,
}

#[derive(Clone, Debug)]
pub struct Rel {
    pub source: u64,
    pub type_id: u64,
    pub dest: u64,
    pub group: u32,
    pub active: bool,
    pub stated: bool,
}

#[derive(Clone, Debug)]
pub struct Concrete {
    pub source: u64,
    pub type_id: u64,
    pub value: String,
    pub group: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Release {
    pub concepts: Vec<Concept>,
    pub descriptions: Vec<Desc>,
    pub relationships: Vec<Rel>,
    pub concrete: Vec<Concrete>,
    /// (refset, referenced, active)
    pub simple: Vec<(u64, u64, bool)>,
    /// (refset, referenced, target)
    pub associations: Vec<(u64, u64, u64)>,
    /// (refset, referenced, mapGroup, mapPriority, mapTarget)
    pub maps: Vec<(u64, u64, u32, u32, String)>,
    /// Alternate identifiers: (scheme, code, referenced concept, active, effectiveTime)
    pub identifiers: Vec<(u64, String, u64, bool, u32)>,
}

fn uuid(n: usize) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

impl Release {
    /// Writes the release as RF2 snapshot files into `dir`.
    pub fn write_rf2(&self, dir: &Path) {
        let date = "20250101";
        let mut c = String::from("id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId\n");
        for k in &self.concepts {
            let status = if k.defined { DEFINED } else { PRIMITIVE };
            writeln!(
                c,
                "{}\t{}\t{}\t{}\t{status}",
                k.id,
                k.effective,
                u8::from(k.active),
                k.module
            )
            .unwrap();
        }
        let mut d = String::from(
            "id\teffectiveTime\tactive\tmoduleId\tconceptId\tlanguageCode\ttypeId\tterm\tcaseSignificanceId\n",
        );
        let mut lang = String::from(
            "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tacceptabilityId\n",
        );
        let mut members = 0;
        for x in &self.descriptions {
            writeln!(
                d,
                "{}\t{date}\t{}\t{CORE}\t{}\t{}\t{}\t{}\t900000000000448009",
                x.id,
                u8::from(x.active),
                x.concept,
                x.lang,
                x.type_id,
                x.term
            )
            .unwrap();
            for (refset, preferred) in &x.acceptability {
                members += 1;
                let a = if *preferred {
                    900000000000548007u64
                } else {
                    900000000000549004
                };
                writeln!(
                    lang,
                    "{}\t{date}\t1\t{CORE}\t{refset}\t{}\t{a}",
                    uuid(members),
                    x.id
                )
                .unwrap();
            }
        }
        let mut r = String::from(
            "id\teffectiveTime\tactive\tmoduleId\tsourceId\tdestinationId\trelationshipGroup\ttypeId\tcharacteristicTypeId\tmodifierId\n",
        );
        for (i, x) in self.relationships.iter().enumerate() {
            let id = SctId::generate(i as u64 + 1, None, Partition::Relationship);
            let ch = if x.stated { STATED } else { INFERRED };
            writeln!(
                r,
                "{id}\t{date}\t{}\t{CORE}\t{}\t{}\t{}\t{}\t{ch}\t900000000000451002",
                u8::from(x.active),
                x.source,
                x.dest,
                x.group,
                x.type_id
            )
            .unwrap();
        }
        let mut cv = String::from(
            "id\teffectiveTime\tactive\tmoduleId\tsourceId\tvalue\trelationshipGroup\ttypeId\tcharacteristicTypeId\tmodifierId\n",
        );
        for (i, x) in self.concrete.iter().enumerate() {
            let id = SctId::generate(900_000 + i as u64, None, Partition::Relationship);
            writeln!(
                cv,
                "{id}\t{date}\t1\t{CORE}\t{}\t{}\t{}\t{}\t{INFERRED}\t900000000000451002",
                x.source, x.value, x.group, x.type_id
            )
            .unwrap();
        }
        let mut simple =
            String::from("id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\n");
        for (refset, referenced, active) in &self.simple {
            members += 1;
            writeln!(
                simple,
                "{}\t{date}\t{}\t{CORE}\t{refset}\t{referenced}",
                uuid(members),
                u8::from(*active)
            )
            .unwrap();
        }
        let mut assoc = String::from(
            "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\ttargetComponentId\n",
        );
        for (refset, referenced, target) in &self.associations {
            members += 1;
            writeln!(
                assoc,
                "{}\t{date}\t1\t{CORE}\t{refset}\t{referenced}\t{target}",
                uuid(members)
            )
            .unwrap();
        }
        let mut identifiers = String::from(
            "alternateIdentifier\teffectiveTime\tactive\tmoduleId\tidentifierSchemeId\treferencedComponentId\n",
        );
        for (scheme, code, referenced, active, effective) in &self.identifiers {
            writeln!(
                identifiers,
                "{code}\t{effective}\t{}\t{CORE}\t{scheme}\t{referenced}",
                u8::from(*active)
            )
            .unwrap();
        }
        let mut map = String::from(
            "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tmapGroup\tmapPriority\tmapRule\tmapAdvice\tmapTarget\tcorrelationId\tmapCategoryId\n",
        );
        for (refset, referenced, group, priority, target) in &self.maps {
            members += 1;
            writeln!(map, "{}\t{date}\t1\t{CORE}\t{refset}\t{referenced}\t{group}\t{priority}\tTRUE\tALWAYS {target}\t{target}\t447561005\t447637006", uuid(members)).unwrap();
        }
        let files = [
            ("sct2_Concept_Snapshot_INT_20250101.txt", c),
            ("sct2_Description_Snapshot-en_INT_20250101.txt", d),
            ("der2_cRefset_LanguageSnapshot-en_INT_20250101.txt", lang),
            ("sct2_Relationship_Snapshot_INT_20250101.txt", r),
            (
                "sct2_RelationshipConcreteValues_Snapshot_INT_20250101.txt",
                cv,
            ),
            ("der2_Refset_SimpleSnapshot_INT_20250101.txt", simple),
            ("der2_cRefset_AssociationSnapshot_INT_20250101.txt", assoc),
            (
                "der2_iisssccRefset_ExtendedMapSnapshot_INT_20250101.txt",
                map,
            ),
            ("sct2_Identifier_Snapshot_INT_20250101.txt", identifiers),
        ];
        for (name, text) in files {
            std::fs::write(dir.join(name), text.replace('\n', "\r\n")).unwrap();
        }
    }

    /// Writes and imports the release; the directory must outlive the store.
    pub fn import(&self) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let rf2 = dir.path().join("rf2");
        std::fs::create_dir_all(&rf2).unwrap();
        self.write_rf2(&rf2);
        let root = dir.path().join("store");
        snomed::import(&[rf2], &root, &NoProgress).unwrap_or_else(|e| panic!("import failed: {e}"));
        let store = Store::open(&root).unwrap();
        (dir, store)
    }
}
