//! A naive reading of RF2 files, independent of the importer, to compute what a store must hold.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Every `.txt` file under `dir` whose name contains `needle`.
pub fn files(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap().to_string_lossy().contains(needle) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Rows of the files, keyed by column 0, keeping the row with the greatest effectiveTime (later file wins ties).
pub fn latest(paths: &[PathBuf]) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for p in paths {
        let text = std::fs::read_to_string(p).unwrap();
        let rows = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
        for line in rows.skip(1) {
            let f: Vec<String> = line.split('\t').map(str::to_string).collect();
            match map.get(&f[0]) {
                Some(old) if old[1] > f[1] => {}
                _ => {
                    map.insert(f[0].clone(), f);
                }
            }
        }
    }
    map
}

/// Counts a store must report for packages `dirs` (each a directory), using release type `kind`
/// (`Snapshot` or `Full`) in every package.
#[derive(Debug, PartialEq, Eq)]
pub struct Counts {
    pub concepts: u64,
    pub active_concepts: u64,
    pub descriptions: u64,
    pub relationships: u64,
    pub concrete_values: u64,
    pub language_members: u64,
    pub refset_members: u64,
}

pub fn counts(dirs: &[PathBuf], kind: &str) -> Counts {
    let gather = |needle: &str| -> Vec<PathBuf> {
        dirs.iter()
            .flat_map(|d| files(d, needle))
            .filter(|p| p.to_string_lossy().contains(kind))
            .collect()
    };
    let concepts = latest(&gather("sct2_Concept_"));
    let ids: HashSet<&String> = concepts.keys().collect();
    let mut descs = gather("sct2_Description_");
    descs.extend(gather("sct2_TextDefinition_"));
    let descriptions = latest(&descs);
    let mut rels = gather("sct2_Relationship_");
    rels.extend(gather("sct2_StatedRelationship_"));
    let relationships = latest(&rels);
    let concrete = latest(&gather("sct2_RelationshipConcreteValues_"));
    let language = latest(&gather("Refset_Language"));
    let all_refsets: Vec<PathBuf> = gather("Refset_")
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains("Refset_Language"))
        .collect();
    let members = latest(&all_refsets);
    Counts {
        concepts: concepts.len() as u64,
        active_concepts: concepts.values().filter(|r| r[2] == "1").count() as u64,
        descriptions: descriptions
            .values()
            .filter(|r| ids.contains(&r[4]))
            .count() as u64,
        relationships: relationships
            .values()
            .filter(|r| ids.contains(&r[4]))
            .count() as u64,
        concrete_values: concrete.values().filter(|r| ids.contains(&r[4])).count() as u64,
        language_members: language.len() as u64,
        refset_members: members.len() as u64,
    }
}

pub fn counts_of(m: &snomed::Manifest) -> Counts {
    Counts {
        concepts: m.concepts,
        active_concepts: m.active_concepts,
        descriptions: m.descriptions,
        relationships: m.relationships,
        concrete_values: m.concrete_values,
        language_members: m.language_members,
        refset_members: m.refset_members,
    }
}

/// Active inferred IS-A parents per concept id, read straight from the relationship files.
pub fn isa_parents(dir: &Path) -> HashMap<u64, Vec<u64>> {
    let rels = latest(&files(dir, "sct2_Relationship_"));
    let mut parents: HashMap<u64, Vec<u64>> = HashMap::new();
    for r in rels.values() {
        if r[2] == "1" && r[7] == "116680003" && r[8] != "900000000000010007" {
            parents
                .entry(r[4].parse().unwrap())
                .or_default()
                .push(r[5].parse().unwrap());
        }
    }
    parents
}

/// All proper ancestors of `id` by walking `parents`.
pub fn walk_up(parents: &HashMap<u64, Vec<u64>>, id: u64) -> HashSet<u64> {
    let mut seen = HashSet::new();
    let mut stack: Vec<u64> = parents.get(&id).cloned().unwrap_or_default();
    while let Some(p) = stack.pop() {
        if seen.insert(p) {
            stack.extend(parents.get(&p).cloned().unwrap_or_default());
        }
    }
    seen.remove(&id);
    seen
}
