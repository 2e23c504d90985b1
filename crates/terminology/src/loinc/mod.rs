//! LOINC from the user's release files, converted to one FHIR CodeSystem (`http://loinc.org`) and the implicit
//! value sets LOINC defines (`http://loinc.org/vs` and one per answer list, `http://loinc.org/vs/LL...`).
//!
//! The concept model follows the LOINC FHIR guide (and what tx.fhir.org answers): LOINC terms, parts (`LP`),
//! answer lists (`LL`) and answers (`LA`) are all concepts of the one code system. A term's axes (COMPONENT,
//! PROPERTY, TIME_ASPCT, SYSTEM, SCALE_TYP, METHOD_TYP, CLASS and the document/radiology axes) are Codings to
//! their parts, taken from `LoincPartLink_*.csv`, so that filters match either the part code or its name;
//! `parent`/`child` come from `ComponentHierarchyBySystem.csv`; designations from the term's own names, the
//! consumer names and every linguistic variant. Concepts are sorted by code, the order tx.fhir.org expands in.

mod build;
mod provider;
mod store;

pub use build::import_loinc_store;
pub use provider::LoincProvider;
pub use store::{FORMAT as LOINC_STORE_FORMAT, LoincStore};

use crate::csv::Table;
use crate::error::LoadError;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The canonical URL of LOINC.
pub const LOINC_URL: &str = "http://loinc.org";

/// What an import produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoincStats {
    /// The LOINC version written into the code system.
    pub version: String,
    /// LOINC terms (rows of `Loinc.csv`).
    pub terms: usize,
    /// Parts (`LP` codes).
    pub parts: usize,
    /// Answer lists (`LL` codes).
    pub answer_lists: usize,
    /// Answers (`LA` codes).
    pub answers: usize,
    /// Designations added (names, consumer names, linguistic variants).
    pub designations: usize,
    /// Release files that were not found and were skipped (all but `Loinc.csv` are optional).
    pub missing_files: Vec<String>,
}

/// The result of [`import_loinc`]: the CodeSystem and the value sets, as FHIR JSON.
#[derive(Debug, Clone)]
pub struct LoincImport {
    /// `CodeSystem/loinc` first, then the implicit ValueSets.
    pub resources: Vec<Value>,
    /// Counts.
    pub stats: LoincStats,
}

/// Reads a LOINC release directory (the layout of the zip Regenstrief distributes: `LoincTable/Loinc.csv`,
/// `AccessoryFiles/...`). `version` overrides the version found in the directory name (`Loinc_2.82`) or, failing
/// that, the newest `VersionLastChanged` of the terms.
pub fn import_loinc(dir: &Path, version: Option<&str>) -> Result<LoincImport, LoadError> {
    let mut b = Builder::default();
    let loinc_csv =
        find(dir, &["LoincTable/Loinc.csv", "Loinc.csv"]).ok_or_else(|| LoadError::Format {
            path: dir.display().to_string(),
            message: "no LoincTable/Loinc.csv: not a LOINC release directory".into(),
        })?;
    let terms = read_table(&loinc_csv)?;
    if !terms.has("LOINC_NUM") {
        return Err(LoadError::Format {
            path: loinc_csv.display().to_string(),
            message: "no LOINC_NUM column".into(),
        });
    }
    let mut newest = String::new();
    for row in &terms.rows {
        b.add_term(&terms, row);
        let v = terms.get(row, "VersionLastChanged");
        if crate::registry::compare_versions(v, &newest).is_gt() {
            newest = v.to_string();
        }
    }
    b.stats.terms = terms.rows.len();
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
        Some(p) => {
            let t = read_table(&p)?;
            for row in &t.rows {
                b.add_part(&t, row);
            }
        }
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
        let t = read_table(&p)?;
        for row in &t.rows {
            b.add_part_link(&t, row);
        }
    }
    for row in &terms.rows {
        let code = terms.get(row, "LOINC_NUM");
        for &axis in AXES {
            let text = terms.get(row, axis);
            if !text.is_empty() && !b.has_property(code, axis) {
                b.property(code, axis, json!(text));
            }
        }
    }
    let mut answer_lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    match acc("AnswerFile/AnswerList.csv") {
        Some(p) => {
            let t = read_table(&p)?;
            for row in &t.rows {
                b.add_answer(&t, row, &mut answer_lists);
            }
        }
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/AnswerFile/AnswerList.csv".into()),
    }
    match acc("AnswerFile/LoincAnswerListLink.csv") {
        Some(p) => {
            let t = read_table(&p)?;
            for row in &t.rows {
                let (term, list) = (t.get(row, "LoincNumber"), t.get(row, "AnswerListId"));
                b.property(term, "answer-list", coding(list, None));
            }
        }
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/AnswerFile/LoincAnswerListLink.csv".into()),
    }
    match acc("ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv") {
        Some(p) => {
            let t = read_table(&p)?;
            let mut seen = HashSet::new();
            for row in &t.rows {
                let (code, parent) = (t.get(row, "CODE"), t.get(row, "IMMEDIATE_PARENT"));
                if !b.index.contains_key(code) && code.starts_with("LP") {
                    b.concept(code, Some(t.get(row, "CODE_TEXT")));
                    b.stats.parts += 1;
                }
                if parent.is_empty()
                    || parent == code
                    || !b.index.contains_key(code)
                    || !b.index.contains_key(parent)
                    || !seen.insert((code.to_string(), parent.to_string()))
                {
                    continue;
                }
                b.property_as(code, "parent", "valueCode", "code", json!(parent));
                b.property_as(parent, "child", "valueCode", "code", json!(code));
            }
        }
        None => b.stats.missing_files.push(
            "AccessoryFiles/ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv".into(),
        ),
    }
    match acc("ConsumerName/ConsumerName.csv") {
        Some(p) => {
            let t = read_table(&p)?;
            for row in &t.rows {
                let (code, name) = (t.get(row, "LoincNumber"), t.get(row, "ConsumerName"));
                b.designation(code, "en-US", "ConsumerName", name);
            }
        }
        None => b
            .stats
            .missing_files
            .push("AccessoryFiles/ConsumerName/ConsumerName.csv".into()),
    }
    b.linguistic_variants(&dir.join("AccessoryFiles/LinguisticVariants"))?;

    let mut value_sets = vec![all_loinc_value_set(&version)];
    for (list, answers) in &answer_lists {
        let display = b.display(list);
        value_sets.push(answer_list_value_set(&version, list, display, answers));
    }
    b.stats.answer_lists = answer_lists.len();
    let mut resources = vec![b.code_system(&version)];
    resources.extend(value_sets);
    Ok(LoincImport {
        resources,
        stats: b.stats,
    })
}

/// The first of `candidates` (relative to `dir`) that exists.
/// The translation files `{lang}{COUNTRY}{ID}LinguisticVariant.csv` of `dir`, in name order, each with the
/// language tag `LinguisticVariants.csv` gives its ID (`languages`: ID → tag); files of unknown IDs are left out.
pub(crate) fn variant_files(
    dir: &Path,
    languages: &HashMap<String, String>,
) -> Result<Vec<(PathBuf, String)>, LoadError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| LoadError::Io {
            path: dir.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with("LinguisticVariant.csv"))
        })
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().to_string();
            let id: String = name
                .trim_end_matches("LinguisticVariant.csv")
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            let lang = languages.get(&id)?.clone();
            Some((p, lang))
        })
        .collect())
}

pub(crate) fn find(dir: &Path, candidates: &[&str]) -> Option<PathBuf> {
    candidates.iter().map(|c| dir.join(c)).find(|p| p.exists())
}

fn read_table(path: &Path) -> Result<Table, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    Ok(Table::parse(&String::from_utf8_lossy(&bytes)))
}

/// `Loinc_2.82` (the release zip's folder name) gives `2.82`.
pub(crate) fn version_from_dir(dir: &Path) -> Option<String> {
    let name = dir
        .canonicalize()
        .ok()?
        .file_name()?
        .to_string_lossy()
        .to_string();
    let rest = name
        .strip_prefix("Loinc_")
        .or(name.strip_prefix("loinc_"))?;
    let v: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!v.is_empty()).then_some(v)
}

fn coding(code: &str, display: Option<&str>) -> Value {
    let mut c = json!({"system": LOINC_URL, "code": code});
    if let Some(d) = display.filter(|d| !d.is_empty()) {
        c["display"] = json!(d);
    }
    c
}

/// The columns of `Loinc.csv` kept as string properties (the axes are Codings from the part links).
pub(crate) const STRING_PROPERTIES: &[&str] = &[
    "STATUS",
    "CLASSTYPE",
    "ORDER_OBS",
    "VersionFirstReleased",
    "VersionLastChanged",
    "EXAMPLE_UNITS",
    "EXAMPLE_UCUM_UNITS",
    "UNITSREQUIRED",
    "RELATEDNAMES2",
    "PanelType",
    "AskAtOrderEntry",
    "AssociatedObservations",
];

/// The axes of a term: when the part links give no Coding for one (older releases, terms without links), the
/// text of `Loinc.csv` is kept as a string.
pub(crate) const AXES: &[&str] = &[
    "COMPONENT",
    "PROPERTY",
    "TIME_ASPCT",
    "SYSTEM",
    "SCALE_TYP",
    "METHOD_TYP",
    "CLASS",
];

#[derive(Default)]
struct Builder {
    concepts: Vec<Map<String, Value>>,
    index: HashMap<String, usize>,
    /// Property code → FHIR type, in first-use order.
    property_types: Vec<(String, &'static str)>,
    stats: LoincStats,
}

impl Builder {
    fn concept(&mut self, code: &str, display: Option<&str>) -> usize {
        if let Some(&i) = self.index.get(code) {
            return i;
        }
        let mut c = Map::new();
        c.insert("code".into(), json!(code));
        if let Some(d) = display.filter(|d| !d.is_empty()) {
            c.insert("display".into(), json!(d));
        }
        self.concepts.push(c);
        self.index.insert(code.to_string(), self.concepts.len() - 1);
        self.concepts.len() - 1
    }

    fn display(&self, code: &str) -> Option<&str> {
        self.index
            .get(code)
            .and_then(|&i| self.concepts[i].get("display"))
            .and_then(Value::as_str)
    }

    fn note_type(&mut self, code: &str, type_: &'static str) {
        if !self.property_types.iter().any(|(c, _)| c == code) {
            self.property_types.push((code.to_string(), type_));
        }
    }

    /// Adds property `code` with a Coding, string or boolean value to an existing concept.
    fn property(&mut self, concept: &str, code: &str, value: Value) {
        let (key, type_) = match &value {
            Value::Object(_) => ("valueCoding", "Coding"),
            Value::Bool(_) => ("valueBoolean", "boolean"),
            _ => ("valueString", "string"),
        };
        self.property_as(concept, code, key, type_, value);
    }

    /// Adds property `code` with the value element `key` (`valueCode`, ...) of FHIR type `type_`.
    fn property_as(
        &mut self,
        concept: &str,
        code: &str,
        key: &str,
        type_: &'static str,
        value: Value,
    ) {
        let Some(&i) = self.index.get(concept) else {
            return;
        };
        self.note_type(code, type_);
        let list = self.concepts[i]
            .entry("property")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = list {
            let p = json!({"code": code, key: value});
            if !a.contains(&p) {
                a.push(p);
            }
        }
    }

    fn has_property(&self, concept: &str, code: &str) -> bool {
        self.index.get(concept).is_some_and(|&i| {
            self.concepts[i]
                .get("property")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|p| p["code"] == code))
        })
    }

    fn designation(&mut self, concept: &str, language: &str, use_: &str, value: &str) {
        let Some(&i) = self.index.get(concept) else {
            return;
        };
        if value.is_empty() {
            return;
        }
        let d = json!({
            "language": language,
            "use": {"system": LOINC_URL, "code": use_, "display": use_},
            "value": value,
        });
        let list = self.concepts[i]
            .entry("designation")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = list
            && !a.contains(&d)
        {
            a.push(d);
            self.stats.designations += 1;
        }
    }

    fn add_term(&mut self, t: &Table, row: &[String]) {
        let code = t.get(row, "LOINC_NUM");
        if code.is_empty() {
            return;
        }
        let long = t.get(row, "LONG_COMMON_NAME");
        let short = t.get(row, "SHORTNAME");
        let display = [long, short, t.get(row, "COMPONENT")]
            .into_iter()
            .find(|s| !s.is_empty());
        let i = self.concept(code, display);
        let definition = t.get(row, "DefinitionDescription");
        if !definition.is_empty() {
            self.concepts[i].insert("definition".into(), json!(definition));
        }
        self.designation(code, "en-US", "LONG_COMMON_NAME", long);
        self.designation(code, "en-US", "SHORTNAME", short);
        self.designation(code, "en-US", "ConsumerName", t.get(row, "CONSUMER_NAME"));
        for &col in STRING_PROPERTIES {
            let v = t.get(row, col);
            if !v.is_empty() {
                self.property(code, col, json!(v));
            }
        }
        let status = t.get(row, "STATUS");
        self.property(code, "inactive", json!(status == "DEPRECATED"));
        let copyright = if t.get(row, "EXTERNAL_COPYRIGHT_NOTICE").is_empty() {
            "LOINC"
        } else {
            "3rdParty"
        };
        self.property(code, "copyright", json!(copyright));
    }

    fn add_part(&mut self, t: &Table, row: &[String]) {
        let code = t.get(row, "PartNumber");
        if code.is_empty() {
            return;
        }
        let name = t.get(row, "PartName");
        let shown = t.get(row, "PartDisplayName");
        self.concept(code, Some(if name.is_empty() { shown } else { name }));
        self.stats.parts += 1;
        if !shown.is_empty() && shown != name {
            self.designation(code, "en-US", "PartDisplayName", shown);
        }
        let type_ = t.get(row, "PartTypeName");
        if !type_.is_empty() {
            self.property(code, "PartTypeName", json!(type_));
        }
        let status = t.get(row, "Status");
        if !status.is_empty() {
            self.property(code, "STATUS", json!(status));
        }
        self.property(code, "inactive", json!(status == "DEPRECATED"));
    }

    /// A row of `LoincPartLink_*.csv`: the term's axis (named by the link's property URI) is the part.
    fn add_part_link(&mut self, t: &Table, row: &[String]) {
        let (term, part, name) = (
            t.get(row, "LoincNumber"),
            t.get(row, "PartNumber"),
            t.get(row, "PartName"),
        );
        let property = t.get(row, "Property");
        let Some(code) = property.rsplit('/').next().filter(|c| !c.is_empty()) else {
            return;
        };
        if !self.index.contains_key(term) || part.is_empty() {
            return;
        }
        if !self.index.contains_key(part) {
            self.concept(part, Some(name));
            self.stats.parts += 1;
        }
        self.property(term, code, coding(part, Some(name)));
    }

    fn add_answer(&mut self, t: &Table, row: &[String], lists: &mut BTreeMap<String, Vec<String>>) {
        let (list, answer) = (t.get(row, "AnswerListId"), t.get(row, "AnswerStringId"));
        if list.is_empty() {
            return;
        }
        if !self.index.contains_key(list) {
            self.concept(list, Some(t.get(row, "AnswerListName")));
            let oid = t.get(row, "AnswerListOID");
            if !oid.is_empty() {
                self.property(list, "AnswerListOID", json!(oid));
            }
        }
        let members = lists.entry(list.to_string()).or_default();
        if answer.is_empty() {
            return;
        }
        if !self.index.contains_key(answer) {
            self.concept(answer, Some(t.get(row, "DisplayText")));
            self.stats.answers += 1;
        }
        if !members.iter().any(|m| m == answer) {
            members.push(answer.to_string());
        }
        self.property(answer, "AnswerList", coding(list, None));
    }

    /// `LinguisticVariants.csv` names each translation (ID → language and country); the translations are in
    /// `{lang}{COUNTRY}{ID}LinguisticVariant.csv`.
    fn linguistic_variants(&mut self, dir: &Path) -> Result<(), LoadError> {
        let index = dir.join("LinguisticVariants.csv");
        if !index.exists() {
            self.stats
                .missing_files
                .push("AccessoryFiles/LinguisticVariants/LinguisticVariants.csv".into());
            return Ok(());
        }
        let t = read_table(&index)?;
        let mut languages = HashMap::new();
        for row in &t.rows {
            let (lang, country) = (t.get(row, "ISO_LANGUAGE"), t.get(row, "ISO_COUNTRY"));
            let tag = if country.is_empty() {
                lang.to_string()
            } else {
                format!("{lang}-{country}")
            };
            languages.insert(t.get(row, "ID").to_string(), tag);
        }
        for (p, lang) in variant_files(dir, &languages)? {
            let t = read_table(&p)?;
            for row in &t.rows {
                let code = t.get(row, "LOINC_NUM");
                for col in [
                    "LONG_COMMON_NAME",
                    "SHORTNAME",
                    "LinguisticVariantDisplayName",
                ] {
                    self.designation(code, &lang, col, t.get(row, col));
                }
            }
        }
        Ok(())
    }

    fn code_system(&mut self, version: &str) -> Value {
        let mut concepts = std::mem::take(&mut self.concepts);
        concepts.sort_by(|a, b| a["code"].as_str().cmp(&b["code"].as_str()));
        let mut cs = code_system_shell(version, &self.property_types, concepts.len());
        cs["concept"] = Value::Array(concepts.into_iter().map(Value::Object).collect());
        cs
    }
}

/// The CodeSystem resource of LOINC without its concepts: property declarations (the fixed three, then
/// `property_types` in first-use order), filters, and `count`.
pub(crate) fn code_system_shell(
    version: &str,
    property_types: &[(String, &'static str)],
    count: usize,
) -> Value {
    let mut properties = vec![
        json!({"code": "parent", "uri": "http://hl7.org/fhir/concept-properties#parent", "description": "A parent code in the Component Hierarchy by System", "type": "code"}),
        json!({"code": "child", "uri": "http://hl7.org/fhir/concept-properties#child", "description": "A child code in the Component Hierarchy by System", "type": "code"}),
        json!({"code": "inactive", "uri": "http://hl7.org/fhir/concept-properties#inactive", "description": "Whether the concept is deprecated", "type": "boolean"}),
    ];
    for (code, type_) in property_types {
        if matches!(code.as_str(), "parent" | "child" | "inactive") {
            continue;
        }
        let mut p = json!({"code": code, "type": type_});
        if AXES.contains(&code.as_str()) || (code.contains('-') && *type_ == "Coding") {
            p["uri"] = json!(format!("http://loinc.org/property/{code}"));
        }
        properties.push(p);
    }
    let filters: Vec<Value> = AXES
        .iter()
        .chain(&["STATUS", "CLASSTYPE", "ORDER_OBS", "copyright"])
        .map(|p| json!({"code": p, "operator": ["=", "regex"], "value": "a part code, a part name, or a value"}))
        .chain([
            json!({"code": "parent", "operator": ["="], "value": "a part code"}),
            json!({"code": "child", "operator": ["="], "value": "a code"}),
            json!({"code": "concept", "operator": ["is-a"], "value": "a part code in the Component Hierarchy by System"}),
            json!({"code": "LIST", "operator": ["="], "value": "an answer list (LL code)"}),
            json!({"code": "answers-for", "operator": ["="], "value": "a LOINC term or an answer list"}),
        ])
        .collect();
    json!({
        "resourceType": "CodeSystem",
        "id": "loinc",
        "url": LOINC_URL,
        "identifier": [{"system": "urn:ietf:rfc:3986", "value": "urn:oid:2.16.840.1.113883.6.1"}],
        "version": version,
        "name": "LOINC",
        "title": "LOINC Code System",
        "status": "active",
        "experimental": false,
        "publisher": "Regenstrief Institute, Inc.",
        // The language of the displays (LOINC's names are English): a code system that states none has
        // displays valid in every language.
        "language": "en",
        "copyright": "This material contains content from LOINC (http://loinc.org). LOINC is copyright © 1995-2025, Regenstrief Institute, Inc. and the Logical Observation Identifiers Names and Codes (LOINC) Committee and is available at no cost under the license at http://loinc.org/license. LOINC® is a registered United States trademark of Regenstrief Institute, Inc.",
        "caseSensitive": false,
        "valueSet": "http://loinc.org/vs",
        "hierarchyMeaning": "is-a",
        "compositional": false,
        "versionNeeded": false,
        "content": "complete",
        "count": count,
        "filter": filters,
        "property": properties,
    })
}

pub(crate) fn all_loinc_value_set(version: &str) -> Value {
    json!({
        "resourceType": "ValueSet",
        "id": "loinc-all",
        "url": "http://loinc.org/vs",
        "version": version,
        "name": "LOINC",
        "title": "All LOINC codes",
        "status": "active",
        "compose": {"include": [{"system": LOINC_URL}]},
    })
}

pub(crate) fn answer_list_value_set(
    version: &str,
    list: &str,
    display: Option<&str>,
    answers: &[String],
) -> Value {
    json!({
        "resourceType": "ValueSet",
        "id": format!("loinc-{list}"),
        "url": format!("http://loinc.org/vs/{list}"),
        "version": version,
        "name": format!("LOINC_{}", list.replace('-', "_")),
        "title": display.unwrap_or(list),
        "status": "active",
        "compose": {"include": [{
            "system": LOINC_URL,
            "concept": answers.iter().map(|a| json!({"code": a})).collect::<Vec<_>>(),
        }]},
    })
}
