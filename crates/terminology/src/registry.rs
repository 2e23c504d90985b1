//! Where resources live: a [`Registry`] of CodeSystems, ValueSets and ConceptMaps by canonical URL and
//! version, and the rules that pick one version of a canonical (`1.x` wildcards, newest when unversioned).

use crate::codesystem::{CodeSystem, Content};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

/// The kinds of resource a registry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// CodeSystem.
    CodeSystem,
    /// ValueSet.
    ValueSet,
    /// ConceptMap.
    ConceptMap,
}

impl Kind {
    /// The FHIR resource type name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::CodeSystem => "CodeSystem",
            Kind::ValueSet => "ValueSet",
            Kind::ConceptMap => "ConceptMap",
        }
    }

    /// The kind's index in per-kind tables.
    fn slot(self) -> usize {
        match self {
            Kind::CodeSystem => 0,
            Kind::ValueSet => 1,
            Kind::ConceptMap => 2,
        }
    }

    /// The kind for a resource type name.
    pub fn from_name(name: &str) -> Option<Kind> {
        match name {
            "CodeSystem" => Some(Kind::CodeSystem),
            "ValueSet" => Some(Kind::ValueSet),
            "ConceptMap" => Some(Kind::ConceptMap),
            _ => None,
        }
    }
}

/// Resources by canonical URL; several versions of one URL may coexist.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    code_systems: HashMap<String, Vec<Arc<CodeSystem>>>,
    /// The version of each code system that a request without a version gets (see
    /// [`Registry::latest_code_system`]), chosen when its versions change rather than per request.
    latest_code_systems: HashMap<String, Arc<CodeSystem>>,
    value_sets: HashMap<String, Vec<Arc<Value>>>,
    concept_maps: HashMap<String, Vec<Arc<Value>>>,
    /// Every resource in load order, for search and read by id.
    all: Vec<(Kind, Arc<Value>)>,
    /// How many of `all` are of each kind (by `Kind::slot`): a search's total without a walk of them all.
    counts: [usize; 3],
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a CodeSystem, ValueSet or ConceptMap resource; other resource types are ignored (returns false).
    /// A resource with the same URL and version replaces the earlier one.
    pub fn add(&mut self, resource: Value) -> bool {
        let Some(kind) = resource["resourceType"].as_str().and_then(Kind::from_name) else {
            return false;
        };
        let url = resource["url"].as_str().unwrap_or_default().to_string();
        let version = resource["version"].as_str().map(str::to_string);
        let resource = Arc::new(resource);
        // Whether a resource of this URL and version was held: only then is `all` searched for it, which would
        // otherwise make loading n resources cost n²/2 comparisons (half of `thoth mcp`'s start-up).
        let replaced = match kind {
            Kind::CodeSystem => {
                let cs = Arc::new(CodeSystem::from_json(resource.clone()));
                let list = self.code_systems.entry(url.clone()).or_default();
                let before = list.len();
                list.retain(|c| c.version != version);
                let replaced = list.len() != before;
                list.push(cs);
                let candidates: Vec<&Arc<CodeSystem>> = (list.iter())
                    .filter(|c| c.content != Content::Supplement)
                    .collect();
                match pick_cs(&candidates, None) {
                    Some(&c) => self.latest_code_systems.insert(url, c.clone()),
                    None => self.latest_code_systems.remove(&url),
                };
                replaced
            }
            Kind::ValueSet | Kind::ConceptMap => {
                let map = if kind == Kind::ValueSet {
                    &mut self.value_sets
                } else {
                    &mut self.concept_maps
                };
                let list = map.entry(url).or_default();
                let before = list.len();
                list.retain(|c| c["version"].as_str() != version.as_deref());
                let replaced = list.len() != before;
                list.push(resource.clone());
                replaced
            }
        };
        if replaced {
            let before = self.all.len();
            self.all.retain(|(k, r)| {
                !(*k == kind
                    && r["url"] == resource["url"]
                    && r["version"].as_str() == version.as_deref())
            });
            // Only resources of this kind were replaced.
            self.counts[kind.slot()] -= before - self.all.len();
        }
        self.all.push((kind, resource));
        self.counts[kind.slot()] += 1;
        true
    }

    /// Number of resources held.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// How many resources of `kind` are held.
    pub fn count(&self, kind: Kind) -> usize {
        self.counts[kind.slot()]
    }

    /// Every resource of `kind`, in load order.
    pub fn resources(&self, kind: Kind) -> impl Iterator<Item = &Arc<Value>> {
        self.all
            .iter()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, r)| r)
    }

    /// All versions of a code system.
    pub fn code_system_versions(&self, url: &str) -> &[Arc<CodeSystem>] {
        self.code_systems.get(url).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The version of code system `url` that a request naming no version gets, supplements left out: the latest
    /// by `pick`'s order (version, then date), as `pick` over [`Registry::code_system_versions`] would choose.
    /// The v2-to-FHIR converter's code checks ask for it once per code.
    pub fn latest_code_system(&self, url: &str) -> Option<&Arc<CodeSystem>> {
        self.latest_code_systems.get(url)
    }

    /// All versions of a value set.
    pub fn value_set_versions(&self, url: &str) -> &[Arc<Value>] {
        self.value_sets.get(url).map(Vec::as_slice).unwrap_or(&[])
    }

    /// All versions of a concept map.
    pub fn concept_map_versions(&self, url: &str) -> &[Arc<Value>] {
        self.concept_maps.get(url).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every supplement of the code system `url`.
    pub fn supplements_of(&self, url: &str) -> Vec<Arc<CodeSystem>> {
        self.code_systems
            .values()
            .flatten()
            .filter(|c| {
                c.content == Content::Supplement
                    && c.supplements
                        .as_deref()
                        .is_some_and(|s| s.split('|').next() == Some(url))
            })
            .cloned()
            .collect()
    }

    /// Every concept map (all versions).
    pub fn concept_maps(&self) -> impl Iterator<Item = &Arc<Value>> {
        self.concept_maps.values().flatten()
    }
}

/// Whether `version` matches `pattern`: equal, or `pattern` has `x`/`*` segments matching anything, or
/// `pattern` is a prefix of segments (`1.0` matches `1.0.3`? no: only wildcards widen).
pub fn version_matches(pattern: &str, version: &str) -> bool {
    if pattern == version {
        return true;
    }
    if !pattern.contains(['x', 'X', '*']) {
        return false;
    }
    let p: Vec<&str> = pattern.split('.').collect();
    let v: Vec<&str> = version.split('.').collect();
    for (i, ps) in p.iter().enumerate() {
        if matches!(*ps, "x" | "X" | "*") {
            return true;
        }
        if v.get(i) != Some(ps) {
            return false;
        }
    }
    p.len() == v.len()
}

/// Orders versions: numeric segments numerically, others as text; newest last.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let mut ai = a.split(['.', '-']);
    let mut bi = b.split(['.', '-']);
    loop {
        match (ai.next(), bi.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let o = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    _ => x.cmp(y),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

/// Whether a version is a calendar date (`2018-08-12`, `20180812`): a scheme of its own, not comparable with
/// dotted release numbers.
fn is_date_version(v: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match v.split('-').collect::<Vec<_>>().as_slice() {
        [y, m, d] => {
            y.len() == 4 && m.len() == 2 && d.len() == 2 && digits(y) && digits(m) && digits(d)
        }
        [ymd] => ymd.len() == 8 && digits(ymd),
        _ => false,
    }
}

/// Orders two resources by version, newest last. Versions of different schemes (a date and a release number,
/// as HL7's 2018 copies of v3 code systems in the R4 package against terminology.hl7.org's `3.1.0`) say nothing
/// about which is newer, so the resources' `date`s decide when both have one.
pub fn compare_resource_versions(
    a: Option<&str>,
    a_date: Option<&str>,
    b: Option<&str>,
    b_date: Option<&str>,
) -> Ordering {
    let (a, b) = (a.unwrap_or(""), b.unwrap_or(""));
    if let (true, Some(ad), Some(bd)) = (is_date_version(a) != is_date_version(b), a_date, b_date) {
        // ISO dates (and dateTimes) order as text on their date part.
        let day = |d: &str| d.get(..10).unwrap_or(d).to_string();
        let o = day(ad).cmp(&day(bd));
        if o != Ordering::Equal {
            return o;
        }
    }
    compare_versions(a, b)
}

/// Picks the version of `items` matching `version` (newest match), or the newest when `version` is None;
/// `date_of` gives a resource's `date`, which orders versions of different schemes.
pub fn pick<'a, T>(
    items: &'a [T],
    version: Option<&str>,
    version_of: impl Fn(&T) -> Option<&str>,
    date_of: impl Fn(&T) -> Option<&str>,
) -> Option<&'a T> {
    let mut best: Option<&T> = None;
    for it in items {
        let v = version_of(it);
        let ok = match version {
            None => true,
            Some(p) => v.is_some_and(|v| version_matches(p, v)),
        };
        if !ok {
            continue;
        }
        best = match best {
            None => Some(it),
            Some(b) => {
                if compare_resource_versions(v, date_of(it), version_of(b), date_of(b))
                    == Ordering::Greater
                {
                    Some(it)
                } else {
                    Some(b)
                }
            }
        };
    }
    best
}

/// The code system of `all` in `version` (a pattern) or the newest: [`pick`] by a code system's version and date.
pub(crate) fn pick_cs<'a, C: AsRef<CodeSystem>>(
    all: &'a [C],
    version: Option<&str>,
) -> Option<&'a C> {
    pick(
        all,
        version,
        |c| c.as_ref().version.as_deref(),
        |c| c.as_ref().resource["date"].as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vs(url: &str, version: Option<&str>, title: &str) -> Value {
        let mut v = json!({"resourceType": "ValueSet", "url": url, "title": title});
        if let Some(version) = version {
            v["version"] = json!(version);
        }
        v
    }

    #[test]
    fn a_resource_of_the_same_url_and_version_replaces_the_earlier_one_everywhere() {
        let mut r = Registry::new();
        for i in 0..1000 {
            assert!(r.add(vs(&format!("http://x/vs/{i}"), Some("1"), "first")));
        }
        r.add(json!({"resourceType": "CodeSystem", "url": "http://x/vs/7", "version": "1", "content": "complete"}));
        r.add(vs("http://x/vs/7", Some("1"), "second"));
        r.add(vs("http://x/vs/7", Some("2"), "other version"));
        r.add(vs("http://y/unversioned", None, "no version"));
        r.add(vs("http://y/unversioned", None, "no version again"));
        assert_eq!(r.count(Kind::ValueSet), 1002);
        assert_eq!(r.count(Kind::CodeSystem), 1);
        assert_eq!(r.len(), 1003);
        let titles = |url: &str| -> Vec<String> {
            r.resources(Kind::ValueSet)
                .filter(|v| v["url"] == url)
                .map(|v| v["title"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        // The replaced one is gone from the list in load order too, and the replacement comes last.
        assert_eq!(titles("http://x/vs/7"), ["second", "other version"]);
        assert_eq!(titles("http://y/unversioned"), ["no version again"]);
        assert_eq!(r.value_set_versions("http://x/vs/7").len(), 2);
        assert_eq!(r.code_system_versions("http://x/vs/7").len(), 1);
        assert!(!r.add(json!({"resourceType": "Patient"})));
    }

    #[test]
    fn the_latest_code_system_kept_is_the_one_pick_chooses_as_versions_come_and_go() {
        let cs = |version: Option<&str>, date: Option<&str>, content: &str, title: &str| {
            let mut v = json!({"resourceType": "CodeSystem", "url": "http://x/cs", "content": content, "title": title});
            if let Some(version) = version {
                v["version"] = json!(version);
            }
            if let Some(date) = date {
                v["date"] = json!(date);
            }
            v
        };
        let mut r = Registry::new();
        // What a request without a version gets, chosen anew among the non-supplements each time.
        let chosen = |r: &Registry| {
            let all: Vec<_> = (r.code_system_versions("http://x/cs").iter())
                .filter(|c| c.content != Content::Supplement)
                .collect();
            pick_cs(&all, None).map(|c| c.resource["title"].clone())
        };
        let kept = |r: &Registry| {
            r.latest_code_system("http://x/cs")
                .map(|c| c.resource["title"].clone())
        };
        assert_eq!(kept(&r), None);
        r.add(cs(Some("1.0.0"), None, "supplement", "a supplement"));
        assert_eq!(
            kept(&r),
            None,
            "a supplement alone is no code system to check codes in"
        );
        let steps = [
            cs(Some("1.0.0"), Some("2020-01-01"), "complete", "1.0.0"),
            cs(Some("2.0.0"), Some("2019-01-01"), "complete", "2.0.0"),
            cs(Some("1.5.0"), Some("2024-01-01"), "complete", "1.5.0"),
            cs(
                Some("2.0.0"),
                Some("2021-01-01"),
                "fragment",
                "2.0.0 replaced",
            ),
            cs(Some("3.0.0"), None, "supplement", "a later supplement"),
            cs(None, Some("2025-01-01"), "complete", "unversioned"),
        ];
        for step in steps {
            r.add(step);
            assert!(kept(&r).is_some());
            assert_eq!(kept(&r), chosen(&r));
        }
        assert_eq!(kept(&r), Some(json!("2.0.0 replaced")));
    }
}
