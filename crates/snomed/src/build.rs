//! Builds a store directory from layered RF2 rows: `store.bin` (see [`crate::format`]), `manifest.json` and the
//! search index in `search/`.

use crate::consts;
use crate::ecl_eval::TypedEdge;
use crate::error::ImportError;
use crate::format::*;
use crate::import::{ImportProgress, Rows, keep_latest};
use crate::store::{MANIFEST_FILE, Manifest, SEARCH_DIR, STORE_FILE};
use bytemuck::Pod;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

const NONE: u32 = u32::MAX;

pub(crate) fn build(
    mut rows: Rows,
    releases: Vec<String>,
    dir: &Path,
    progress: &dyn ImportProgress,
) -> Result<Manifest, ImportError> {
    std::fs::create_dir_all(dir).map_err(|e| ImportError::io(dir, e))?;
    let store_path = dir.join(STORE_FILE);
    let mut w = SectionWriter::create(&store_path)?;
    let mut strings = Strings::default();

    progress.stage("layering releases");
    keep_latest(&mut rows.concepts, |c| c.id, |c| c.effective);
    keep_latest(&mut rows.descriptions, |d| d.id, |d| d.effective);
    keep_latest(&mut rows.relationships, |r| r.id, |r| r.effective);
    keep_latest(&mut rows.concrete, |r| r.id, |r| r.effective);
    keep_latest(&mut rows.lang, |m| m.uuid, |m| m.effective);
    keep_latest(&mut rows.members, |m| m.uuid, |m| m.effective);

    // Concepts: the dense index is the position in id order.
    progress.stage("concepts");
    let concepts: Vec<ConceptRec> = rows
        .concepts
        .iter()
        .map(|c| ConceptRec {
            id: c.id,
            module: c.module,
            definition_status: c.definition_status,
            effective: c.effective,
            active: c.active as u32,
        })
        .collect();
    let ids: Vec<u64> = concepts.iter().map(|c| c.id).collect();
    let idx_of = |id: u64| ids.binary_search(&id).map(|i| i as u32).unwrap_or(NONE);
    let n = concepts.len();
    let mut modules: BTreeMap<u64, u64> = BTreeMap::new();
    for c in &concepts {
        *modules.entry(c.module).or_default() += 1;
    }
    let active_concepts = concepts.iter().filter(|c| c.active == 1).count() as u64;
    w.section(Section::Concepts, &concepts)?;
    drop(concepts);
    drop(std::mem::take(&mut rows.concepts));

    // Alternate identifiers of concepts (ECL `scheme#code`): per (scheme, code) the newest row wins, like
    // keep_latest (a stable sort keeps reading order, so a later package wins a tie); only active ones are kept.
    progress.stage("alternate identifiers");
    let mut identifiers = std::mem::take(&mut rows.identifiers);
    identifiers.sort_by(|a, b| {
        (a.scheme, &a.alternate, a.effective).cmp(&(b.scheme, &b.alternate, b.effective))
    });
    let mut alt_ids: Vec<AltIdRec> = Vec::new();
    for (i, row) in identifiers.iter().enumerate() {
        let superseded = identifiers
            .get(i + 1)
            .is_some_and(|next| (next.scheme, &next.alternate) == (row.scheme, &row.alternate));
        let concept = idx_of(row.referenced);
        if superseded || !row.active || concept == NONE {
            continue;
        }
        let (value_off, value_len) = strings.push(&row.alternate)?;
        alt_ids.push(AltIdRec {
            scheme: row.scheme,
            concept,
            value_off,
            value_len,
            _pad: 0,
        });
    }
    drop(identifiers);
    let alternate_identifiers = alt_ids.len() as u64;
    w.section(Section::AltIds, &alt_ids)?;
    drop(alt_ids);

    // Relationships.
    progress.stage("relationships");
    let mut dropped_relationships = 0u64;
    let mut rels: Vec<RelRec> = Vec::with_capacity(rows.relationships.len());
    for r in std::mem::take(&mut rows.relationships) {
        let source = idx_of(r.source);
        if source == NONE {
            dropped_relationships += 1;
            continue;
        }
        rels.push(RelRec {
            id: r.id,
            module: r.module,
            characteristic: r.characteristic,
            type_id: r.type_id,
            dest_id: r.dest,
            modifier: r.modifier,
            source,
            dest: idx_of(r.dest),
            type_idx: idx_of(r.type_id),
            effective: r.effective,
            group: r.group,
            active: r.active as u32,
        });
    }
    rels.sort_by_key(|r| (r.source, r.group, r.type_id, r.dest_id, r.id));
    let rel_off = offsets(n, rels.iter().map(|r| r.source));
    let mut by_dest: Vec<u32> = (0..rels.len() as u32)
        .filter(|&i| rels[i as usize].dest != NONE)
        .collect();
    by_dest.sort_by_key(|&i| {
        let r = &rels[i as usize];
        (r.dest, r.type_id, r.source)
    });
    let by_dest_off = offsets(n, by_dest.iter().map(|&i| rels[i as usize].dest));
    // The ECL index: active defining relationships by type, then destination. A refinement `T = << X` then
    // merges X's sorted members with one contiguous slice instead of probing every value's inbound rows.
    let mut typed: Vec<(u32, TypedEdge)> = rels
        .iter()
        .filter(|r| {
            r.active == 1
                && r.characteristic != consts::STATED_RELATIONSHIP.get()
                && r.type_idx != NONE
                && r.dest != NONE
        })
        .map(|r| {
            let edge = TypedEdge {
                dest: r.dest,
                source: r.source,
                group: r.group,
            };
            (r.type_idx, edge)
        })
        .collect();
    typed.sort_unstable_by_key(|(t, e)| (*t, e.dest, e.source, e.group));
    let typed_off = offsets(n, typed.iter().map(|(t, _)| *t));
    let typed: Vec<TypedEdge> = typed.into_iter().map(|(_, e)| e).collect();

    // IS-A hierarchy from active inferred (or, if a release has none, stated) relationships.
    progress.stage("hierarchy");
    let is_isa = |r: &RelRec, stated: bool| {
        r.active == 1
            && r.type_id == consts::IS_A.get()
            && r.dest != NONE
            && (r.characteristic == consts::STATED_RELATIONSHIP.get()) == stated
    };
    let use_stated = !rels.iter().any(|r| is_isa(r, false));
    let mut parents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for r in rels.iter().filter(|r| is_isa(r, use_stated)) {
        if r.dest != r.source {
            parents[r.source as usize].push(r.dest);
        }
    }
    for p in &mut parents {
        p.sort_unstable();
        p.dedup();
    }
    let relationship_count = rels.len() as u64;
    let active_relationships = rels.iter().filter(|r| r.active == 1).count() as u64;
    w.section(Section::Relationships, &rels)?;
    w.section(Section::RelBySourceOff, &rel_off)?;
    w.section(Section::RelByDest, &by_dest)?;
    w.section(Section::RelByDestOff, &by_dest_off)?;
    w.section(Section::EdgesByType, &typed)?;
    w.section(Section::EdgesByTypeOff, &typed_off)?;
    drop((rels, rel_off, by_dest, by_dest_off, typed, typed_off));

    let (children_off, children) = invert(n, &parents);
    let (parents_off, parents_flat) = flatten(&parents);
    w.section(Section::ParentsOff, &parents_off)?;
    w.section(Section::Parents, &parents_flat)?;
    w.section(Section::ChildrenOff, &children_off)?;
    w.section(Section::Children, &children)?;
    drop((children_off, children, parents_off, parents_flat));

    progress.stage("transitive closure");
    let ancestors = closure(&parents);
    drop(parents);
    let closure_rows: u64 = ancestors.iter().map(|a| a.len() as u64).sum();
    let (desc_off, desc_flat) = invert(n, &ancestors);
    let (anc_off, anc_flat) = flatten(&ancestors);
    drop(ancestors);
    w.section(Section::AncestorsOff, &anc_off)?;
    w.section(Section::Ancestors, &anc_flat)?;
    w.section(Section::DescendantsOff, &desc_off)?;
    w.section(Section::Descendants, &desc_flat)?;
    drop((anc_off, anc_flat, desc_off, desc_flat));

    // Descriptions, grouped by concept: FSN first, then synonyms, then definitions.
    progress.stage("descriptions");
    let mut dropped_descriptions = 0u64;
    let mut descs: Vec<DescRec> = Vec::with_capacity(rows.descriptions.len());
    for d in std::mem::take(&mut rows.descriptions) {
        let concept = idx_of(d.concept);
        if concept == NONE {
            dropped_descriptions += 1;
            continue;
        }
        let (term_off, term_len) = strings.push(&d.term)?;
        descs.push(DescRec {
            id: d.id,
            module: d.module,
            type_id: d.type_id,
            case_significance: d.case_significance,
            concept,
            effective: d.effective,
            term_off,
            term_len,
            lang: d.lang,
            active: d.active as u8,
            kind: description_kind(d.type_id),
            _pad: 0,
        });
    }
    descs.sort_by_key(|d| (d.concept, d.kind, d.id));
    let desc_by_concept_off = offsets(n, descs.iter().map(|d| d.concept));
    let mut desc_by_id: Vec<u32> = (0..descs.len() as u32).collect();
    desc_by_id.sort_by_key(|&i| descs[i as usize].id);
    let desc_idx_of = |id: u64| {
        desc_by_id
            .binary_search_by_key(&id, |&i| descs[i as usize].id)
            .map(|p| desc_by_id[p])
            .unwrap_or(NONE)
    };

    // Language refsets: only active members matter to readers.
    progress.stage("language reference sets");
    let mut lang_refsets: Vec<LangRefsetRec> = Vec::new();
    let mut slot_of: HashMap<u64, u16> = HashMap::new();
    let mut lang_pairs: Vec<(u32, LangRec)> = Vec::new();
    let mut language_members = 0u64;
    for m in std::mem::take(&mut rows.lang) {
        language_members += 1;
        if !m.active {
            continue;
        }
        let d = desc_idx_of(m.description);
        if d == NONE {
            continue;
        }
        let slot = match slot_of.get(&m.refset) {
            Some(&s) => s,
            None => {
                let s = u16::try_from(lang_refsets.len()).map_err(|_| {
                    ImportError::TooLarge("more than 65535 language refsets".into())
                })?;
                slot_of.insert(m.refset, s);
                lang_refsets.push(LangRefsetRec {
                    refset: m.refset,
                    lang: descs[d as usize].lang,
                    _pad: [0; 6],
                });
                s
            }
        };
        let acceptability = match m.acceptability {
            a if a == consts::PREFERRED.get() => 1,
            a if a == consts::ACCEPTABLE.get() => 2,
            _ => 0,
        };
        lang_pairs.push((
            d,
            LangRec {
                refset_slot: slot,
                acceptability,
            },
        ));
    }
    lang_pairs.sort_by_key(|(d, l)| (*d, l.refset_slot));
    let lang_off = offsets(descs.len(), lang_pairs.iter().map(|(d, _)| *d));
    let lang: Vec<LangRec> = lang_pairs.into_iter().map(|(_, l)| l).collect();
    w.section(Section::LangOff, &lang_off)?;
    w.section(Section::Lang, &lang)?;
    w.section(Section::LangRefsets, &lang_refsets)?;
    drop((lang_off, lang));

    // Concrete values.
    let mut concrete: Vec<ConcreteRec> = Vec::new();
    for r in std::mem::take(&mut rows.concrete) {
        let source = idx_of(r.source);
        if source == NONE {
            dropped_relationships += 1;
            continue;
        }
        let (value_off, value_len) = strings.push(&r.value)?;
        concrete.push(ConcreteRec {
            id: r.id,
            module: r.module,
            characteristic: r.characteristic,
            type_id: r.type_id,
            source,
            effective: r.effective,
            group: r.group,
            active: r.active as u32,
            value_off,
            value_len,
        });
    }
    concrete.sort_by_key(|r| (r.source, r.group, r.type_id, r.id));
    let concrete_off = offsets(n, concrete.iter().map(|r| r.source));
    let concrete_count = concrete.len() as u64;
    w.section(Section::Concrete, &concrete)?;
    w.section(Section::ConcreteOff, &concrete_off)?;
    drop((concrete, concrete_off));

    // Other refset members, grouped by refset.
    progress.stage("reference sets");
    let mut members: Vec<MemberRec> = Vec::with_capacity(rows.members.len());
    for m in std::mem::take(&mut rows.members) {
        let (fields_off, fields_len) = strings.push(&m.fields)?;
        members.push(MemberRec {
            uuid: m.uuid,
            module: m.module,
            refset: m.refset,
            referenced: m.referenced,
            effective: m.effective,
            active: m.active as u32,
            fields_off,
            fields_len,
        });
    }
    members.sort_by_key(|m| (m.refset, m.referenced, m.uuid));
    let mut by_component: Vec<u32> = (0..members.len() as u32).collect();
    by_component.sort_by_key(|&i| {
        let m = &members[i as usize];
        (m.referenced, m.refset)
    });
    let mut refset_info: Vec<RefsetInfoRec> = Vec::new();
    let mut refset_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut i = 0usize;
    while i < members.len() {
        let refset = members[i].refset;
        let mut j = i;
        while j < members.len() && members[j].refset == refset {
            j += 1;
        }
        let (pattern, names) = rows.refset_fields.get(&refset).cloned().unwrap_or_default();
        let mut desc = pattern;
        for name in names {
            desc.push('\t');
            desc.push_str(&name);
        }
        let (desc_off, desc_len) = strings.push(&desc)?;
        refset_info.push(RefsetInfoRec {
            refset,
            first: i as u32,
            count: (j - i) as u32,
            desc_off,
            desc_len,
        });
        refset_counts.insert(refset.to_string(), (j - i) as u64);
        i = j;
    }
    let member_count = members.len() as u64;
    w.section(Section::Members, &members)?;
    w.section(Section::MembersByComponent, &by_component)?;
    w.section(Section::RefsetInfo, &refset_info)?;
    drop((members, by_component, refset_info));

    // The search index reads terms from the heap before it is written out.
    progress.stage("search index");
    let active_descriptions = descs.iter().filter(|d| d.active == 1).count() as u64;
    crate::search::build_index(&dir.join(SEARCH_DIR), &descs, &strings.bytes)?;

    w.section(Section::Descriptions, &descs)?;
    w.section(Section::DescByConceptOff, &desc_by_concept_off)?;
    w.section(Section::DescById, &desc_by_id)?;
    let description_count = descs.len() as u64;
    drop((descs, desc_by_concept_off, desc_by_id));
    w.section(Section::Strings, &strings.bytes)?;
    w.finish()?;

    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        releases,
        modules: modules.iter().map(|(m, c)| (m.to_string(), *c)).collect(),
        concepts: n as u64,
        active_concepts,
        descriptions: description_count,
        active_descriptions,
        relationships: relationship_count,
        active_relationships,
        concrete_values: concrete_count,
        language_members,
        refset_members: member_count,
        refsets: refset_counts,
        is_a_closure_rows: closure_rows,
        dropped_descriptions,
        dropped_relationships,
        hierarchy_from_stated: use_stated,
        invalid_concept_ids: rows.invalid_ids,
        alternate_identifiers,
        unpublished: false,
    };
    let manifest_path = dir.join(MANIFEST_FILE);
    let json = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| ImportError::Index(format!("manifest: {e}")))?;
    std::fs::write(&manifest_path, json).map_err(|e| ImportError::io(&manifest_path, e))?;
    Ok(manifest)
}

fn description_kind(type_id: u64) -> u8 {
    match type_id {
        t if t == consts::FSN.get() => 0,
        t if t == consts::SYNONYM.get() => 1,
        t if t == consts::DEFINITION.get() => 2,
        _ => 3,
    }
}

/// CSR offsets (`n + 1` entries) of rows sorted by a key in `0..n`.
fn offsets(n: usize, keys: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut off = vec![0u32; n + 1];
    for k in keys {
        off[k as usize + 1] += 1;
    }
    for i in 0..n {
        off[i + 1] += off[i];
    }
    off
}

fn flatten(lists: &[Vec<u32>]) -> (Vec<u32>, Vec<u32>) {
    let mut off = Vec::with_capacity(lists.len() + 1);
    let mut flat = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    off.push(0);
    for l in lists {
        flat.extend_from_slice(l);
        off.push(flat.len() as u32);
    }
    (off, flat)
}

/// The inverse relation as CSR: `j` in `out[i]` iff `i` in `lists[j]`; rows come out sorted.
fn invert(n: usize, lists: &[Vec<u32>]) -> (Vec<u32>, Vec<u32>) {
    let off = offsets(n, lists.iter().flatten().copied());
    let mut fill = off.clone();
    let mut flat = vec![0u32; *off.last().unwrap_or(&0) as usize];
    for (j, l) in lists.iter().enumerate() {
        for &i in l {
            flat[fill[i as usize] as usize] = j as u32;
            fill[i as usize] += 1;
        }
    }
    (off, flat)
}

/// All proper ancestors of every concept, sorted. Concepts are visited parents-first (Kahn's order), so each
/// list is the union of its parents and their lists; concepts caught in a cycle fall back to a graph walk.
fn closure(parents: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let n = parents.len();
    let (children_off, children) = invert(n, parents);
    let mut pending: Vec<u32> = parents.iter().map(|p| p.len() as u32).collect();
    let mut queue: Vec<u32> = (0..n as u32)
        .filter(|&i| pending[i as usize] == 0)
        .collect();
    let mut anc: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut done = vec![false; n];
    let mut scratch = Vec::new();
    while let Some(c) = queue.pop() {
        scratch.clear();
        for &p in &parents[c as usize] {
            scratch.push(p);
            scratch.extend_from_slice(&anc[p as usize]);
        }
        scratch.sort_unstable();
        scratch.dedup();
        anc[c as usize] = scratch.clone();
        done[c as usize] = true;
        for &ch in
            &children[children_off[c as usize] as usize..children_off[c as usize + 1] as usize]
        {
            pending[ch as usize] -= 1;
            if pending[ch as usize] == 0 {
                queue.push(ch);
            }
        }
    }
    for c in 0..n {
        if done[c] {
            continue;
        }
        // A cycle in the data: collect everything reachable upwards.
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<u32> = parents[c].clone();
        while let Some(p) = stack.pop() {
            if seen.insert(p) {
                stack.extend_from_slice(&parents[p as usize]);
            }
        }
        seen.remove(&(c as u32));
        let mut v: Vec<u32> = seen.into_iter().collect();
        v.sort_unstable();
        anc[c] = v;
    }
    anc
}

/// The string heap: terms, concrete values, member fields, refset descriptions.
#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
}

impl Strings {
    fn push(&mut self, s: &str) -> Result<(u32, u32), ImportError> {
        let off = u32::try_from(self.bytes.len())
            .map_err(|_| ImportError::TooLarge("more than 4 GiB of text".into()))?;
        self.bytes.extend_from_slice(s.as_bytes());
        Ok((off, s.len() as u32))
    }
}

/// Writes sections one after another, then the header and the section table at the front.
struct SectionWriter {
    path: std::path::PathBuf,
    out: BufWriter<File>,
    entries: Vec<SectionEntry>,
    pos: u64,
}

impl SectionWriter {
    fn create(path: &Path) -> Result<SectionWriter, ImportError> {
        let f = File::create(path).map_err(|e| ImportError::io(path, e))?;
        let mut w = SectionWriter {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, f),
            entries: Vec::new(),
            pos: 0,
        };
        let table_len = size_of::<Header>() + ALL_SECTIONS.len() * size_of::<SectionEntry>();
        w.write(&vec![0u8; table_len])?;
        Ok(w)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ImportError> {
        self.out
            .write_all(bytes)
            .map_err(|e| ImportError::io(&self.path, e))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn section<T: Pod>(&mut self, id: Section, data: &[T]) -> Result<(), ImportError> {
        let pad = (8 - self.pos % 8) % 8;
        self.write(&[0u8; 8][..pad as usize])?;
        debug_assert_eq!(size_of::<T>(), id.elem_size(), "{id:?}");
        let bytes: &[u8] = bytemuck::cast_slice(data);
        self.entries.push(SectionEntry {
            id: id as u32,
            elem_size: size_of::<T>() as u32,
            offset: self.pos,
            len: bytes.len() as u64,
        });
        self.write(bytes)
    }

    fn finish(mut self) -> Result<(), ImportError> {
        let header = Header {
            magic: MAGIC,
            version: FORMAT_VERSION,
            section_count: self.entries.len() as u32,
            file_len: self.pos,
            reserved: [0; 5],
        };
        let io = |e| ImportError::io(&self.path, e);
        self.out.flush().map_err(io)?;
        let mut f = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        f.seek(SeekFrom::Start(0)).map_err(io)?;
        f.write_all(bytemuck::bytes_of(&header)).map_err(io)?;
        f.write_all(bytemuck::cast_slice(&self.entries))
            .map_err(io)?;
        f.sync_all().map_err(io)?;
        Ok(())
    }
}
