//! `import_loinc_store`: a LOINC release streamed row by row into the compact store of [`super::store`].
//!
//! The concept model is the one of the JSON importer in `mod.rs` (same concepts, same property and designation
//! order, same de-duplication), held as interned strings and small index vectors instead of `serde_json` maps:
//! a full release with its linguistic variants (2.6 M designations) fits in a few hundred MB while importing.

use super::store::{self, NONE, PropKind};
use super::{AXES, LoincStats, STRING_PROPERTIES, find, variant_files, version_from_dir};
use crate::csv::Reader;
use crate::error::LoadError;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// Reads the LOINC release in `dir` (the layout of [`super::import_loinc`]) and writes the store to `target`
/// (through a temporary file beside it, renamed when complete).
pub fn import_loinc_store(
    dir: &Path,
    version: Option<&str>,
    target: &Path,
) -> Result<LoincStats, LoadError> {
    let mut b = Builder::default();
    let loinc_csv =
        find(dir, &["LoincTable/Loinc.csv", "Loinc.csv"]).ok_or_else(|| LoadError::Format {
            path: dir.display().to_string(),
            message: "no LoincTable/Loinc.csv: not a LOINC release directory".into(),
        })?;
    let mut terms = open_csv(&loinc_csv)?;
    if !terms.has("LOINC_NUM") {
        return Err(LoadError::Format {
            path: loinc_csv.display().to_string(),
            message: "no LOINC_NUM column".into(),
        });
    }
    let mut newest = String::new();
    // The axis texts of each term row, applied after the part links (when the links gave no Coding).
    let mut axis_texts: Vec<(u32, [u32; 7])> = Vec::new();
    let mut rows = 0;
    while let Some(row) = next(&mut terms, &loinc_csv)? {
        rows += 1;
        b.add_term(&terms, &row);
        let v = terms.get(&row, "VersionLastChanged");
        if crate::registry::compare_versions(v, &newest).is_gt() {
            newest = v.to_string();
        }
        if let Some(node) = b.node_of(terms.get(&row, "LOINC_NUM")) {
            let mut texts = [NONE; 7];
            for (t, &axis) in texts.iter_mut().zip(AXES) {
                let text = terms.get(&row, axis);
                if !text.is_empty() {
                    *t = b.strings.intern(text);
                }
            }
            axis_texts.push((node, texts));
        }
    }
    drop(terms);
    b.stats.terms = rows;
    let version = version
        .map(str::to_string)
        .or_else(|| version_from_dir(dir))
        .unwrap_or(newest);
    b.stats.version = version.clone();

    let acc = |rel: &str| {
        let p = dir.join("AccessoryFiles").join(rel);
        p.exists().then_some(p)
    };
    match acc("PartFile/Part.csv") {
        Some(p) => each_row(&p, |t, row| b.add_part(t, row))?,
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/PartFile/Part.csv".into()),
    }
    let mut links: Vec<PathBuf> = std::fs::read_dir(dir.join("AccessoryFiles/PartFile"))
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("LoincPartLink"))
                })
                .collect()
        })
        .unwrap_or_default();
    // Primary links first: they name the axis values; supplementary links only add what is not there yet.
    links.sort_by_key(|p| !p.to_string_lossy().contains("Primary"));
    if links.is_empty() {
        b.stats
            .missing_files
            .push("AccessoryFiles/PartFile/LoincPartLink_Primary.csv".into());
    }
    for p in links {
        each_row(&p, |t, row| b.add_part_link(t, row))?;
    }
    for (node, texts) in axis_texts {
        for (&text, &axis) in texts.iter().zip(AXES) {
            if text != NONE {
                let code = b.strings.intern(axis);
                if !b.has_property(node, code) {
                    b.property(node, axis, PropKind::String, text, NONE);
                }
            }
        }
    }
    let mut answer_lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    match acc("AnswerFile/AnswerList.csv") {
        Some(p) => each_row(&p, |t, row| b.add_answer(t, row, &mut answer_lists))?,
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/AnswerFile/AnswerList.csv".into()),
    }
    match acc("AnswerFile/LoincAnswerListLink.csv") {
        Some(p) => each_row(&p, |t, row| {
            let (term, list) = (t.get(row, "LoincNumber"), t.get(row, "AnswerListId"));
            if let Some(node) = b.node_of(term) {
                let list = b.strings.intern(list);
                b.property(node, "answer-list", PropKind::Coding, list, NONE);
            }
        })?,
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/AnswerFile/LoincAnswerListLink.csv".into()),
    }
    match acc("ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv") {
        Some(p) => {
            let mut seen = HashSet::new();
            each_row(&p, |t, row| {
                let (code, parent) = (t.get(row, "CODE"), t.get(row, "IMMEDIATE_PARENT"));
                if b.node_of(code).is_none() && code.starts_with("LP") {
                    b.concept(code, Some(t.get(row, "CODE_TEXT")));
                    b.stats.parts += 1;
                }
                let (Some(c), Some(pn)) = (b.node_of(code), b.node_of(parent)) else {
                    return;
                };
                if parent.is_empty() || parent == code || !seen.insert((c, pn)) {
                    return;
                }
                let (cs, ps) = (b.nodes[c as usize].code, b.nodes[pn as usize].code);
                b.property(c, "parent", PropKind::Code, ps, NONE);
                b.property(pn, "child", PropKind::Code, cs, NONE);
            })?;
        }
        None => b.stats.missing_files.push(
            "AccessoryFiles/ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv".into(),
        ),
    }
    match acc("ConsumerName/ConsumerName.csv") {
        Some(p) => each_row(&p, |t, row| {
            let (code, name) = (t.get(row, "LoincNumber"), t.get(row, "ConsumerName"));
            b.designation(code, "en-US", "ConsumerName", name);
        })?,
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/ConsumerName/ConsumerName.csv".into()),
    }
    b.linguistic_variants(&dir.join("AccessoryFiles/LinguisticVariants"))?;
    b.stats.answer_lists = answer_lists.len();
    let stats = b.stats.clone();
    b.write(&version, &answer_lists, target)?;
    Ok(stats)
}

fn open_csv(path: &Path) -> Result<Reader<BufReader<std::fs::File>>, LoadError> {
    let io = |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    Reader::new(BufReader::with_capacity(1 << 16, file)).map_err(io)
}

fn next(
    r: &mut Reader<BufReader<std::fs::File>>,
    path: &Path,
) -> Result<Option<Vec<String>>, LoadError> {
    r.next_row().map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Calls `f` with each data row of the CSV file at `path`.
fn each_row(
    path: &Path,
    mut f: impl FnMut(&Reader<BufReader<std::fs::File>>, &[String]),
) -> Result<(), LoadError> {
    let mut r = open_csv(path)?;
    while let Some(row) = next(&mut r, path)? {
        f(&r, &row);
    }
    Ok(())
}

/// Strings stored once each: the bytes in one buffer, found again by hash (a second map holds the rare
/// strings whose hash another string already took).
#[derive(Default)]
pub(super) struct Interner {
    pub(super) bytes: Vec<u8>,
    /// Start of each string in `bytes`; string `i` ends where `i + 1` starts (or at the end).
    pub(super) starts: Vec<u32>,
    by_hash: HashMap<u64, u32>,
    collided: HashMap<Box<str>, u32>,
    hasher: std::collections::hash_map::RandomState,
}

impl Interner {
    fn hash(&self, s: &str) -> u64 {
        self.hasher.hash_one(s)
    }

    pub(super) fn get(&self, id: u32) -> &str {
        let i = id as usize;
        let start = self.starts[i] as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.bytes.len(), |&e| e as usize);
        // Only whole `&str`s are ever appended, so each range is valid UTF-8.
        std::str::from_utf8(&self.bytes[start..end]).unwrap_or_default()
    }

    /// The id of `s` if it was interned.
    fn lookup(&self, s: &str) -> Option<u32> {
        match self.by_hash.get(&self.hash(s)) {
            Some(&id) if self.get(id) == s => Some(id),
            Some(_) => self.collided.get(s).copied(),
            None => None,
        }
    }

    pub(super) fn intern(&mut self, s: &str) -> u32 {
        let h = self.hash(s);
        match self.by_hash.get(&h) {
            Some(&id) if self.get(id) == s => return id,
            Some(_) => {
                if let Some(&id) = self.collided.get(s) {
                    return id;
                }
                let id = self.push(s);
                self.collided.insert(s.into(), id);
                return id;
            }
            None => {}
        }
        let id = self.push(s);
        self.by_hash.insert(h, id);
        id
    }

    fn push(&mut self, s: &str) -> u32 {
        let id = self.starts.len() as u32;
        self.starts.push(self.bytes.len() as u32);
        self.bytes.extend_from_slice(s.as_bytes());
        id
    }
}

/// One concept while importing: string ids.
struct Node {
    code: u32,
    display: u32,
    definition: u32,
    /// (language, use, value).
    designations: Vec<[u32; 3]>,
    /// (code, kind, value, Coding display).
    properties: Vec<[u32; 4]>,
}

#[derive(Default)]
struct Builder {
    strings: Interner,
    nodes: Vec<Node>,
    /// Code string id → node.
    index: HashMap<u32, u32>,
    /// Property code → FHIR type, in first-use order.
    property_types: Vec<(String, &'static str)>,
    stats: LoincStats,
}

impl Builder {
    fn node_of(&self, code: &str) -> Option<u32> {
        self.strings
            .lookup(code)
            .and_then(|s| self.index.get(&s).copied())
    }

    fn concept(&mut self, code: &str, display: Option<&str>) -> u32 {
        if let Some(n) = self.node_of(code) {
            return n;
        }
        let code = self.strings.intern(code);
        let display = match display.filter(|d| !d.is_empty()) {
            Some(d) => self.strings.intern(d),
            None => NONE,
        };
        self.nodes.push(Node {
            code,
            display,
            definition: NONE,
            designations: Vec::new(),
            properties: Vec::new(),
        });
        let n = self.nodes.len() as u32 - 1;
        self.index.insert(code, n);
        n
    }

    fn note_type(&mut self, code: &str, type_: &'static str) {
        if !self.property_types.iter().any(|(c, _)| c == code) {
            self.property_types.push((code.to_string(), type_));
        }
    }

    /// Adds property `code` to `node` unless the same value is there already.
    fn property(&mut self, node: u32, code: &str, kind: PropKind, value: u32, display: u32) {
        self.note_type(code, kind.fhir_type());
        let code = self.strings.intern(code);
        let p = [code, kind as u32, value, display];
        let list = &mut self.nodes[node as usize].properties;
        if !list.contains(&p) {
            list.push(p);
        }
    }

    fn string_property(&mut self, node: u32, code: &str, value: &str) {
        let v = self.strings.intern(value);
        self.property(node, code, PropKind::String, v, NONE);
    }

    fn bool_property(&mut self, node: u32, code: &str, value: bool) {
        self.property(node, code, PropKind::Boolean, value as u32, NONE);
    }

    /// A Coding to `target` (shown with `display` when there is one).
    fn coding_property(&mut self, node: u32, code: &str, target: &str, display: Option<&str>) {
        let t = self.strings.intern(target);
        let d = match display.filter(|d| !d.is_empty()) {
            Some(d) => self.strings.intern(d),
            None => NONE,
        };
        self.property(node, code, PropKind::Coding, t, d);
    }

    fn has_property(&self, node: u32, code: u32) -> bool {
        self.nodes[node as usize]
            .properties
            .iter()
            .any(|p| p[0] == code)
    }

    fn designation(&mut self, concept: &str, language: &str, use_: &str, value: &str) {
        let Some(n) = self.node_of(concept) else {
            return;
        };
        if value.is_empty() {
            return;
        }
        let d = [
            self.strings.intern(language),
            self.strings.intern(use_),
            self.strings.intern(value),
        ];
        let list = &mut self.nodes[n as usize].designations;
        if !list.contains(&d) {
            list.push(d);
            self.stats.designations += 1;
        }
    }

    fn add_term<R: std::io::BufRead>(&mut self, t: &Reader<R>, row: &[String]) {
        let code = t.get(row, "LOINC_NUM");
        if code.is_empty() {
            return;
        }
        let long = t.get(row, "LONG_COMMON_NAME");
        let short = t.get(row, "SHORTNAME");
        let display = [long, short, t.get(row, "COMPONENT")]
            .into_iter()
            .find(|s| !s.is_empty());
        let n = self.concept(code, display);
        let definition = t.get(row, "DefinitionDescription");
        if !definition.is_empty() {
            self.nodes[n as usize].definition = self.strings.intern(definition);
        }
        self.designation(code, "en-US", "LONG_COMMON_NAME", long);
        self.designation(code, "en-US", "SHORTNAME", short);
        self.designation(code, "en-US", "ConsumerName", t.get(row, "CONSUMER_NAME"));
        for &col in STRING_PROPERTIES {
            let v = t.get(row, col);
            if !v.is_empty() {
                self.string_property(n, col, v);
            }
        }
        let status = t.get(row, "STATUS");
        self.bool_property(n, "inactive", status == "DEPRECATED");
        let copyright = if t.get(row, "EXTERNAL_COPYRIGHT_NOTICE").is_empty() {
            "LOINC"
        } else {
            "3rdParty"
        };
        self.string_property(n, "copyright", copyright);
    }

    fn add_part<R: std::io::BufRead>(&mut self, t: &Reader<R>, row: &[String]) {
        let code = t.get(row, "PartNumber");
        if code.is_empty() {
            return;
        }
        let name = t.get(row, "PartName");
        let shown = t.get(row, "PartDisplayName");
        let n = self.concept(code, Some(if name.is_empty() { shown } else { name }));
        self.stats.parts += 1;
        if !shown.is_empty() && shown != name {
            self.designation(code, "en-US", "PartDisplayName", shown);
        }
        let type_ = t.get(row, "PartTypeName");
        if !type_.is_empty() {
            self.string_property(n, "PartTypeName", type_);
        }
        let status = t.get(row, "Status");
        if !status.is_empty() {
            self.string_property(n, "STATUS", status);
        }
        self.bool_property(n, "inactive", status == "DEPRECATED");
    }

    fn add_part_link<R: std::io::BufRead>(&mut self, t: &Reader<R>, row: &[String]) {
        let (term, part, name) = (
            t.get(row, "LoincNumber"),
            t.get(row, "PartNumber"),
            t.get(row, "PartName"),
        );
        let property = t.get(row, "Property");
        let Some(code) = property.rsplit('/').next().filter(|c| !c.is_empty()) else {
            return;
        };
        let Some(n) = self.node_of(term) else {
            return;
        };
        if part.is_empty() {
            return;
        }
        if self.node_of(part).is_none() {
            self.concept(part, Some(name));
            self.stats.parts += 1;
        }
        self.coding_property(n, code, part, Some(name));
    }

    fn add_answer<R: std::io::BufRead>(
        &mut self,
        t: &Reader<R>,
        row: &[String],
        lists: &mut BTreeMap<String, Vec<String>>,
    ) {
        let (list, answer) = (t.get(row, "AnswerListId"), t.get(row, "AnswerStringId"));
        if list.is_empty() {
            return;
        }
        if self.node_of(list).is_none() {
            let n = self.concept(list, Some(t.get(row, "AnswerListName")));
            let oid = t.get(row, "AnswerListOID");
            if !oid.is_empty() {
                self.string_property(n, "AnswerListOID", oid);
            }
        }
        let members = lists.entry(list.to_string()).or_default();
        if answer.is_empty() {
            return;
        }
        let n = match self.node_of(answer) {
            Some(n) => n,
            None => {
                self.stats.answers += 1;
                self.concept(answer, Some(t.get(row, "DisplayText")))
            }
        };
        if !members.iter().any(|m| m == answer) {
            members.push(answer.to_string());
        }
        self.coding_property(n, "AnswerList", list, None);
    }

    fn linguistic_variants(&mut self, dir: &Path) -> Result<(), LoadError> {
        let index = dir.join("LinguisticVariants.csv");
        if !index.exists() {
            self.stats
                .missing_files
                .push("AccessoryFiles/LinguisticVariants/LinguisticVariants.csv".into());
            return Ok(());
        }
        let mut languages = HashMap::new();
        each_row(&index, |t, row| {
            let (lang, country) = (t.get(row, "ISO_LANGUAGE"), t.get(row, "ISO_COUNTRY"));
            let tag = if country.is_empty() {
                lang.to_string()
            } else {
                format!("{lang}-{country}")
            };
            languages.insert(t.get(row, "ID").to_string(), tag);
        })?;
        for (p, lang) in variant_files(dir, &languages)? {
            each_row(&p, |t, row| {
                let code = t.get(row, "LOINC_NUM");
                for col in [
                    "LONG_COMMON_NAME",
                    "SHORTNAME",
                    "LinguisticVariantDisplayName",
                ] {
                    self.designation(code, &lang, col, t.get(row, col));
                }
            })?;
        }
        Ok(())
    }

    /// Sorts the concepts by code (the order tx.fhir.org expands in), links the hierarchy as the FHIR
    /// CodeSystem model does from `parent`/`child` properties, and writes the store.
    fn write(
        mut self,
        version: &str,
        answer_lists: &BTreeMap<String, Vec<String>>,
        target: &Path,
    ) -> Result<(), LoadError> {
        let strings = &self.strings;
        let mut order: Vec<u32> = (0..self.nodes.len() as u32).collect();
        order.sort_by(|&a, &b| {
            strings
                .get(self.nodes[a as usize].code)
                .cmp(strings.get(self.nodes[b as usize].code))
        });
        let mut new_of_old = vec![0u32; self.nodes.len()];
        for (new, &old) in order.iter().enumerate() {
            new_of_old[old as usize] = new as u32;
        }
        let by_code = |sid: u32| self.index.get(&sid).map(|&o| new_of_old[o as usize]);
        let (parent_code, child_code) = (
            strings.lookup("parent").unwrap_or(NONE),
            strings.lookup("child").unwrap_or(NONE),
        );
        let n = order.len();
        let mut parents: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut linked = HashSet::new();
        for (i, &old) in order.iter().enumerate() {
            for p in &self.nodes[old as usize].properties {
                let link = if p[0] == parent_code {
                    by_code(p[2]).map(|t| (t, i as u32))
                } else if p[0] == child_code {
                    by_code(p[2]).map(|t| (i as u32, t))
                } else {
                    None
                };
                if let Some((parent, child)) = link
                    && linked.insert((parent, child))
                {
                    children[parent as usize].push(child);
                    parents[child as usize].push(parent);
                }
            }
        }
        let mut lower: Vec<u32> = (0..n as u32).collect();
        let lower_codes: Vec<String> = order
            .iter()
            .map(|&o| strings.get(self.nodes[o as usize].code).to_lowercase())
            .collect();
        lower.sort_by(|&a, &b| lower_codes[a as usize].cmp(&lower_codes[b as usize]));
        drop(lower_codes);

        let mut lists = Vec::new();
        for (list, members) in answer_lists {
            let code = self.strings.intern(list);
            let title = self
                .index
                .get(&code)
                .map_or(NONE, |&o| self.nodes[o as usize].display);
            let members: Vec<u32> = members.iter().map(|m| self.strings.intern(m)).collect();
            lists.push((code, title, members));
        }
        let shell = super::code_system_shell(version, &self.property_types, n);
        // Filters compare property codes by string id: only the matching values are decoded.
        let property_ids: serde_json::Map<String, serde_json::Value> = self
            .property_types
            .iter()
            .filter_map(|(c, _)| Some((c.clone(), self.strings.lookup(c)?.into())))
            .collect();
        let nodes = std::mem::take(&mut self.nodes);
        let sorted = order.iter().map(|&o| &nodes[o as usize]);
        store::write(
            target,
            &store::Parts {
                shell: &shell,
                property_ids: &property_ids,
                stats: &self.stats,
                strings: &self.strings,
                concepts: sorted
                    .map(|c| store::ConceptParts {
                        code: c.code,
                        display: c.display,
                        definition: c.definition,
                        designations: &c.designations,
                        properties: &c.properties,
                    })
                    .collect(),
                parents: &parents,
                children: &children,
                lower: &lower,
                lists: &lists,
            },
        )
    }
}
