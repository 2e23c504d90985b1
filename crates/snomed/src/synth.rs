//! A synthetic RF2 snapshot shaped like the SNOMED CT International Edition, for benchmarks and scale tests
//! (the real release cannot be shipped).
//!
//! Shape (at `concepts = 370_000`): about 527,000 concept rows (the rest inactive), 19 top-level hierarchies of
//! International-like sizes, 1.5 parents per concept with about a third having more than one, ancestors and
//! depth close to the real release, heavy-tailed fan-out from preferential attachment, FSNs with semantic tags,
//! US and GB language refsets with dialect variants, grouped attributes on findings and procedures, historical
//! associations and inactivation indicators for inactive concepts, an extended map to ICD-10-shaped codes,
//! concrete values on products. Identifiers carry valid partitions and Verhoeff check digits. The same seed
//! gives the same release.
//!
//! ```no_run
//! let summary = snomed::synth::generate(
//!     &snomed::synth::SynthConfig { concepts: 2_000, seed: 7 },
//!     std::path::Path::new("/tmp/synth"),
//! ).unwrap();
//! assert!(summary.concept_rows > 2_000);
//! ```

use crate::consts;
use crate::id::{Partition, SctId};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct SynthConfig {
    /// Active concepts wanted (the International Edition has about 370,000).
    pub concepts: usize,
    /// Seed of the pseudo-random generator.
    pub seed: u64,
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct SynthSummary {
    /// Concept rows (active and inactive).
    pub concept_rows: u64,
    /// Active concepts.
    pub active_concepts: u64,
    /// Description rows.
    pub descriptions: u64,
    /// Text definition rows.
    pub text_definitions: u64,
    /// Relationship rows.
    pub relationships: u64,
    /// Concrete value rows.
    pub concrete_values: u64,
    /// Language refset rows.
    pub language_members: u64,
    /// Rows of the other refsets (association, attribute value, simple, map, module dependency).
    pub other_members: u64,
}

const DATE: &str = "20250101";
const CORE: u64 = consts::CORE_MODULE.get();
const MODEL: u64 = consts::MODEL_MODULE.get();

/// The 19 top-level hierarchies: id, semantic tag, share of generated concepts (per mille).
const TOP: [(u64, &str, u32); 19] = [
    (404684003, "disorder", 330),
    (71388002, "procedure", 150),
    (123037004, "body structure", 90),
    (410607006, "organism", 90),
    (105590001, "substance", 70),
    (373873005, "product", 60),
    (362981000, "qualifier value", 25),
    (363787002, "observable entity", 30),
    (260787004, "physical object", 40),
    (308916002, "environment / location", 5),
    (272379006, "event", 10),
    (78621006, "physical force", 2),
    (419891008, "record artifact", 5),
    (243796009, "situation", 15),
    (48176007, "social concept", 15),
    (370115009, "special concept", 3),
    (123038009, "specimen", 5),
    (254291000, "assessment scale", 5),
    (900000000000441003, "metadata", 50),
];

/// Attribute types used on findings, procedures and products, with the hierarchy (index in `TOP`) of their
/// destinations.
const FINDING_SITE: u64 = 363698007;
const ASSOCIATED_MORPHOLOGY: u64 = 116676008;
const CAUSATIVE_AGENT: u64 = 246075003;
const PROCEDURE_SITE: u64 = 363704007;
const METHOD: u64 = 260686004;
const HAS_ACTIVE_INGREDIENT: u64 = 127489000;
const INTERPRETS: u64 = 363714003;

/// Metadata concepts the release refers to, created under the model component hierarchy.
const METADATA: [u64; 28] = [
    consts::FSN.get(),
    consts::SYNONYM.get(),
    consts::DEFINITION.get(),
    consts::PREFERRED.get(),
    consts::ACCEPTABLE.get(),
    consts::US_ENGLISH.get(),
    consts::GB_ENGLISH.get(),
    consts::CORE_MODULE.get(),
    consts::MODEL_MODULE.get(),
    consts::PRIMITIVE.get(),
    consts::DEFINED.get(),
    consts::CASE_INSENSITIVE.get(),
    900000000000017005, // entire term case sensitive
    consts::STATED_RELATIONSHIP.get(),
    consts::INFERRED_RELATIONSHIP.get(),
    consts::EXISTENTIAL.get(),
    consts::HISTORICAL_ASSOCIATION.get(),
    consts::REPLACED_BY.get(),
    consts::SAME_AS.get(),
    consts::POSSIBLY_EQUIVALENT_TO.get(),
    consts::CONCEPT_INACTIVATION_INDICATOR.get(),
    consts::ICD10_COMPLEX_MAP.get(),
    consts::MODULE_DEPENDENCY.get(),
    900000000000482003, // duplicate
    900000000000483008, // outdated
    900000000000484002, // ambiguous
    447561005,          // correlation not specified
    447637006,          // map source concept is properly classified
];

/// The concept model, placed as in the International Edition (checked against the 2025-09 release): under the
/// model component, 106237007 |Linkage concept| > 246061005 |Attribute| > 410662002 |Concept model attribute| >
/// 762705008 |Concept model object attribute| (the concept-valued attributes) and 762706009 |Concept model data
/// attribute| (the concrete ones); 116680003 |Is a| sits under 246061005 beside 410662002, not below it. ECL
/// refuses a refinement on a concept outside this hierarchy, so a synthetic release has to have it to be
/// queried like the real one. Parents come before children: `(id, parent id)`.
fn concept_model() -> [(u64, u64); 14] {
    let object = consts::CONCEPT_MODEL_OBJECT_ATTRIBUTE.get();
    [
        (consts::LINKAGE_CONCEPT.get(), consts::MODEL_COMPONENT.get()),
        (consts::ATTRIBUTE.get(), consts::LINKAGE_CONCEPT.get()),
        (
            consts::CONCEPT_MODEL_ATTRIBUTE.get(),
            consts::ATTRIBUTE.get(),
        ),
        (consts::IS_A.get(), consts::ATTRIBUTE.get()),
        (object, consts::CONCEPT_MODEL_ATTRIBUTE.get()),
        (
            consts::CONCEPT_MODEL_DATA_ATTRIBUTE.get(),
            consts::CONCEPT_MODEL_ATTRIBUTE.get(),
        ),
        (FINDING_SITE, object),
        (ASSOCIATED_MORPHOLOGY, object),
        (CAUSATIVE_AGENT, object),
        (PROCEDURE_SITE, object),
        (METHOD, object),
        (HAS_ACTIVE_INGREDIENT, object),
        (INTERPRETS, object),
        (
            strength_attribute_id().get(),
            consts::CONCEPT_MODEL_DATA_ATTRIBUTE.get(),
        ),
    ]
}

/// The simple refset generated (a subset of clinical findings), with a generated id.
pub fn simple_refset_id() -> SctId {
    SctId::generate(9_999_001, None, Partition::Concept)
}

/// The concrete-value attribute generated (a strength value), with a generated id.
pub fn strength_attribute_id() -> SctId {
    SctId::generate(9_999_002, None, Partition::Concept)
}

/// SplitMix64: small, fast, and good enough for shaping synthetic data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 11) as u128 * n as u128) >> 53) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    /// A Zipf-like index in `0..n`: small indexes are much more likely.
    fn skewed(&mut self, n: usize) -> usize {
        let u = self.unit();
        ((u * u * u) * n as f64) as usize
    }
    fn uuid(&mut self) -> String {
        let a = self.next();
        let b = self.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            (b >> 48) & 0x3fff | 0x8000,
            b & 0xffff_ffff_ffff
        )
    }
}

const SYLLABLES: [&str; 48] = [
    "car", "di", "o", "neu", "ro", "gas", "tro", "en", "ter", "hep", "a", "to", "my", "el", "oste",
    "ar", "thr", "pul", "mon", "ar", "ren", "al", "derm", "cyt", "lymph", "ang", "i", "oma",
    "itis", "osis", "path", "y", "plas", "ia", "trop", "hic", "sclero", "fib", "ver", "tal", "cer",
    "vic", "lum", "bar", "cran", "fem", "or", "ul",
];

fn vocabulary(rng: &mut Rng, size: usize) -> Vec<String> {
    let mut words = Vec::with_capacity(size);
    let mut seen = std::collections::HashSet::new();
    while words.len() < size {
        let n = 2 + rng.below(3);
        let mut w = String::new();
        for _ in 0..n {
            w.push_str(SYLLABLES[rng.below(SYLLABLES.len())]);
        }
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

struct Node {
    id: u64,
    top: usize,
    depth: u32,
    parents: Vec<u32>,
    active: bool,
    defined: bool,
    term: String,
}

/// Writes a synthetic release into `out` (created if missing) and says what it wrote.
pub fn generate(config: &SynthConfig, out: &Path) -> std::io::Result<SynthSummary> {
    let mut rng = Rng(config.seed ^ 0x0005_EED0_F5C7);
    let words = vocabulary(&mut rng, 12_000);
    let mut summary = SynthSummary::default();
    let mut item = 10_000_000u64;
    let mut next_id = |p: Partition| {
        item += 1;
        SctId::generate(item, None, p).get()
    };

    // The tree: root, the 19 top-level concepts, metadata, then generated concepts per hierarchy.
    let mut nodes: Vec<Node> = Vec::new();
    let term_of = |rng: &mut Rng| {
        let n = match rng.below(100) {
            0..=9 => 1,
            10..=39 => 2,
            40..=69 => 3,
            70..=87 => 4,
            88..=95 => 5,
            _ => 6 + rng.below(3),
        };
        let mut t = String::new();
        for i in 0..n {
            if i > 0 {
                t.push(' ');
            }
            let w = &words[rng.skewed(words.len())];
            if i == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    t.extend(f.to_uppercase());
                    t.push_str(c.as_str());
                }
            } else {
                t.push_str(w);
            }
        }
        t
    };
    nodes.push(Node {
        id: consts::ROOT.get(),
        top: usize::MAX,
        depth: 0,
        parents: vec![],
        active: true,
        defined: false,
        term: "SNOMED CT Concept".into(),
    });
    for (t, (id, tag, _)) in TOP.iter().enumerate() {
        nodes.push(Node {
            id: *id,
            top: t,
            depth: 1,
            parents: vec![0],
            active: true,
            defined: false,
            term: capitalize(tag),
        });
    }
    let model_top = TOP.len(); // index of the metadata top-level node in `nodes`
    let extra_meta = [simple_refset_id().get()];
    for id in METADATA.iter().chain(extra_meta.iter()) {
        let term = term_of(&mut rng);
        nodes.push(Node {
            id: *id,
            top: TOP.len() - 1,
            depth: 2,
            parents: vec![model_top as u32],
            active: true,
            defined: false,
            term,
        });
    }
    for (id, parent) in concept_model() {
        let parent = nodes
            .iter()
            .rposition(|n| n.id == parent)
            .expect("concept model parents come first") as u32;
        let term = term_of(&mut rng);
        nodes.push(Node {
            id,
            top: TOP.len() - 1,
            depth: nodes[parent as usize].depth + 1,
            parents: vec![parent],
            active: true,
            defined: false,
            term,
        });
    }
    let target = config.concepts.saturating_sub(nodes.len());
    let total_share: u32 = TOP.iter().map(|t| t.2).sum();
    // Per hierarchy: members so far, children counts for preferential attachment, members by depth.
    let mut members: Vec<Vec<u32>> = (0..TOP.len()).map(|t| vec![(t + 1) as u32]).collect();
    let mut pa: Vec<Vec<u32>> = members.clone(); // one entry per (child + 1): preferential attachment urn
    let mut by_depth: Vec<Vec<Vec<u32>>> = (0..TOP.len())
        .map(|t| vec![vec![], vec![(t + 1) as u32]])
        .collect();
    for (t, top) in TOP.iter().enumerate() {
        let count = (target as u64 * top.2 as u64 / total_share as u64) as usize;
        for _ in 0..count {
            let m = &members[t];
            let primary = match rng.below(100) {
                // Hubs: a few early concepts collect thousands of children (heavy-tailed fan-out).
                0..=11 if m.len() > 31 => m[1 + rng.skewed(30)],
                0..=29 => m[rng.below(m.len())],
                30..=64 => pa[t][rng.below(pa[t].len())],
                _ => m[m.len() - 1 - rng.below(m.len().min(40))],
            };
            let depth = nodes[primary as usize].depth + 1;
            let mut parents = vec![primary];
            let extra = match rng.below(100) {
                0..=26 => 1,
                27..=32 => 2,
                33..=35 => 3,
                _ => 0,
            };
            for _ in 0..extra {
                // Another parent at a similar depth in the same hierarchy (always an older node: no cycles).
                let d = (depth as usize - 1).saturating_sub(rng.below(2)).max(1);
                if let Some(level) = by_depth[t].get(d)
                    && !level.is_empty()
                {
                    let p = level[rng.below(level.len())];
                    if !parents.contains(&p) {
                        parents.push(p);
                    }
                }
            }
            let idx = nodes.len() as u32;
            let term = term_of(&mut rng);
            nodes.push(Node {
                id: next_id(Partition::Concept),
                top: t,
                depth,
                parents: parents.clone(),
                active: true,
                defined: rng.chance(0.3),
                term,
            });
            members[t].push(idx);
            for p in parents {
                pa[t].push(p);
            }
            pa[t].push(idx);
            if by_depth[t].len() <= depth as usize {
                by_depth[t].resize(depth as usize + 1, Vec::new());
            }
            by_depth[t][depth as usize].push(idx);
        }
    }
    let active_count = nodes.len();
    // Inactive concepts: about 42% more rows, each pointing at an active replacement.
    let inactive = active_count * 424 / 1000;
    let mut replaced_by: Vec<(u32, u32)> = Vec::with_capacity(inactive);
    for _ in 0..inactive {
        let was = 20 + rng.below(active_count - 20);
        let idx = nodes.len() as u32;
        let term = term_of(&mut rng);
        nodes.push(Node {
            id: next_id(Partition::Concept),
            top: nodes[was].top,
            depth: 0,
            parents: vec![nodes[was].parents[0]],
            active: false,
            defined: false,
            term,
        });
        replaced_by.push((idx, was as u32));
    }

    let term_dir = out.join("Snapshot/Terminology");
    let refset_dir = out.join("Snapshot/Refset");
    for d in ["Language", "Content", "Map", "Metadata"] {
        std::fs::create_dir_all(refset_dir.join(d))?;
    }
    std::fs::create_dir_all(&term_dir)?;
    let create = |dir: &Path, name: &str, header: &str| -> std::io::Result<BufWriter<File>> {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(dir.join(name))?);
        writeln!(w, "{header}")?;
        Ok(w)
    };

    // Concepts.
    let mut w = create(
        &term_dir,
        &format!("sct2_Concept_Snapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tdefinitionStatusId",
    )?;
    for n in &nodes {
        let module = if n.top == TOP.len() - 1 { MODEL } else { CORE };
        let status = if n.defined {
            consts::DEFINED
        } else {
            consts::PRIMITIVE
        };
        writeln!(
            w,
            "{}\t{DATE}\t{}\t{module}\t{status}",
            n.id, n.active as u8
        )?;
        summary.concept_rows += 1;
        summary.active_concepts += n.active as u64;
    }
    w.flush()?;

    // Descriptions and language refsets.
    let mut wd = create(
        &term_dir,
        &format!("sct2_Description_Snapshot-en_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tconceptId\tlanguageCode\ttypeId\tterm\tcaseSignificanceId",
    )?;
    let mut wt = create(
        &term_dir,
        &format!("sct2_TextDefinition_Snapshot-en_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tconceptId\tlanguageCode\ttypeId\tterm\tcaseSignificanceId",
    )?;
    let mut wl = create(
        &refset_dir.join("Language"),
        &format!("der2_cRefset_LanguageSnapshot-en_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tacceptabilityId",
    )?;
    let us = consts::US_ENGLISH.get();
    let gb = consts::GB_ENGLISH.get();
    let (pref, acc) = (consts::PREFERRED.get(), consts::ACCEPTABLE.get());
    for n in &nodes {
        let module = if n.top == TOP.len() - 1 { MODEL } else { CORE };
        let tag = if n.top == usize::MAX {
            "SNOMED RT+CTV3"
        } else {
            TOP[n.top].1
        };
        let mut write_desc = |w: &mut BufWriter<File>,
                              rng: &mut Rng,
                              type_id: u64,
                              term: &str,
                              active: bool,
                              us_acc: Option<u64>,
                              gb_acc: Option<u64>|
         -> std::io::Result<()> {
            let id = next_id(Partition::Description);
            writeln!(
                w,
                "{id}\t{DATE}\t{}\t{module}\t{}\ten\t{type_id}\t{term}\t{}",
                active as u8,
                n.id,
                consts::CASE_INSENSITIVE
            )?;
            if type_id == consts::DEFINITION.get() {
                summary.text_definitions += 1;
            } else {
                summary.descriptions += 1;
            }
            for (refset, a) in [(us, us_acc), (gb, gb_acc)] {
                if let Some(a) = a {
                    writeln!(
                        wl,
                        "{}\t{DATE}\t{}\t{module}\t{refset}\t{id}\t{a}",
                        rng.uuid(),
                        active as u8
                    )?;
                    summary.language_members += 1;
                }
            }
            Ok(())
        };
        let fsn = format!("{} ({tag})", n.term);
        write_desc(
            &mut wd,
            &mut rng,
            consts::FSN.get(),
            &fsn,
            true,
            Some(pref),
            Some(pref),
        )?;
        if rng.chance(0.06) {
            // A dialect pair: GB spelling preferred in GB, US spelling preferred in US.
            let gb_term = n.term.replacen('e', "ae", 1);
            write_desc(
                &mut wd,
                &mut rng,
                consts::SYNONYM.get(),
                &n.term,
                true,
                Some(pref),
                Some(acc),
            )?;
            write_desc(
                &mut wd,
                &mut rng,
                consts::SYNONYM.get(),
                &gb_term,
                true,
                None,
                Some(pref),
            )?;
        } else {
            write_desc(
                &mut wd,
                &mut rng,
                consts::SYNONYM.get(),
                &n.term,
                true,
                Some(pref),
                Some(pref),
            )?;
        }
        let synonyms = match rng.below(10) {
            0..=3 => 0,
            4..=6 => 1,
            7..=8 => 2,
            _ => 3,
        };
        for s in 0..synonyms {
            let mut syn = if s == 0 && n.term.contains(' ') {
                // An abbreviation-style synonym: initials then the term.
                let initials: String = n
                    .term
                    .split(' ')
                    .filter_map(|w| w.chars().next())
                    .flat_map(char::to_uppercase)
                    .collect();
                format!("{initials} - {}", n.term)
            } else {
                term_of(&mut rng)
            };
            if syn.len() < 6 {
                syn.push_str(" disease");
            }
            let active = !rng.chance(0.08);
            write_desc(
                &mut wd,
                &mut rng,
                consts::SYNONYM.get(),
                &syn,
                active,
                Some(acc),
                Some(acc),
            )?;
        }
        if n.active && rng.chance(0.02) {
            let def = format!(
                "{} that is a kind of {}",
                n.term,
                TOP[n.top.min(TOP.len() - 1)].1
            );
            write_desc(
                &mut wt,
                &mut rng,
                consts::DEFINITION.get(),
                &def,
                true,
                Some(pref),
                Some(pref),
            )?;
        }
    }
    wd.flush()?;
    wt.flush()?;
    wl.flush()?;

    // Relationships: IS-A, attributes, inactive history; concrete values on products.
    let mut wr = create(
        &term_dir,
        &format!("sct2_Relationship_Snapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tsourceId\tdestinationId\trelationshipGroup\ttypeId\tcharacteristicTypeId\tmodifierId",
    )?;
    let mut wc = create(
        &term_dir,
        &format!("sct2_RelationshipConcreteValues_Snapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\tsourceId\tvalue\trelationshipGroup\ttypeId\tcharacteristicTypeId\tmodifierId",
    )?;
    let inferred = consts::INFERRED_RELATIONSHIP.get();
    let existential = consts::EXISTENTIAL.get();
    let pick = |rng: &mut Rng, t: usize| members[t][rng.below(members[t].len())];
    let (finding, procedure, body, organism, substance, product, qualifier, observable) =
        (0, 1, 2, 3, 4, 5, 6, 7);
    for n in &nodes {
        let module = if n.top == TOP.len() - 1 { MODEL } else { CORE };
        let mut rel = |w: &mut BufWriter<File>,
                       dest: u64,
                       group: u32,
                       type_id: u64,
                       active: bool| {
            summary.relationships += 1;
            writeln!(
                w,
                "{}\t{DATE}\t{}\t{module}\t{}\t{dest}\t{group}\t{type_id}\t{inferred}\t{existential}",
                next_id(Partition::Relationship),
                active as u8,
                n.id
            )
        };
        for &p in &n.parents {
            rel(
                &mut wr,
                nodes[p as usize].id,
                0,
                consts::IS_A.get(),
                n.active,
            )?;
        }
        if !n.active {
            continue;
        }
        // Retired relationship rows that remain in a snapshot as inactive.
        for _ in 0..rng.below(10) {
            let dest = nodes[rng.below(active_count)].id;
            rel(&mut wr, dest, 0, consts::IS_A.get(), false)?;
        }
        let groups = match n.top {
            t if t == finding || t == procedure => 1 + rng.below(3),
            t if t == product => 1,
            t if t == observable => 1,
            _ => 0,
        };
        for g in 1..=groups as u32 {
            let attrs: &[(u64, usize)] = match n.top {
                t if t == finding => &[
                    (FINDING_SITE, body),
                    (ASSOCIATED_MORPHOLOGY, body),
                    (CAUSATIVE_AGENT, organism),
                ],
                t if t == procedure => &[(PROCEDURE_SITE, body), (METHOD, qualifier)],
                t if t == product => &[(HAS_ACTIVE_INGREDIENT, substance)],
                _ => &[(INTERPRETS, observable)],
            };
            let count = 1 + rng.below(attrs.len());
            for (type_id, dest_top) in attrs.iter().take(count) {
                let dest = nodes[pick(&mut rng, *dest_top) as usize].id;
                rel(&mut wr, dest, g, *type_id, true)?;
            }
        }
        if n.top == product && rng.chance(0.4) {
            summary.concrete_values += 1;
            writeln!(
                wc,
                "{}\t{DATE}\t1\t{module}\t{}\t#{}\t1\t{}\t{inferred}\t{existential}",
                next_id(Partition::Relationship),
                n.id,
                [5, 10, 20, 25, 50, 100, 250, 500][rng.below(8)],
                strength_attribute_id()
            )?;
        }
    }
    wr.flush()?;
    wc.flush()?;

    // Historical associations and inactivation indicators.
    let mut wa = create(
        &refset_dir.join("Content"),
        &format!("der2_cRefset_AssociationSnapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\ttargetComponentId",
    )?;
    let mut wv = create(
        &refset_dir.join("Content"),
        &format!("der2_cRefset_AttributeValueSnapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tvalueId",
    )?;
    for &(old, new) in &replaced_by {
        let (refset, reason) = match rng.below(10) {
            0..=5 => (consts::REPLACED_BY, 900000000000483008u64),
            6..=7 => (consts::SAME_AS, 900000000000482003),
            _ => (consts::POSSIBLY_EQUIVALENT_TO, 900000000000484002),
        };
        let (o, nw) = (nodes[old as usize].id, nodes[new as usize].id);
        writeln!(wa, "{}\t{DATE}\t1\t{CORE}\t{refset}\t{o}\t{nw}", rng.uuid())?;
        writeln!(
            wv,
            "{}\t{DATE}\t1\t{CORE}\t{}\t{o}\t{reason}",
            rng.uuid(),
            consts::CONCEPT_INACTIVATION_INDICATOR
        )?;
        summary.other_members += 2;
    }
    wa.flush()?;
    wv.flush()?;

    // A simple refset: a tenth of the clinical findings.
    let mut ws = create(
        &refset_dir.join("Content"),
        &format!("der2_Refset_SimpleSnapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId",
    )?;
    let simple = simple_refset_id();
    for &c in members[finding].iter().step_by(10) {
        writeln!(
            ws,
            "{}\t{DATE}\t1\t{CORE}\t{simple}\t{}",
            rng.uuid(),
            nodes[c as usize].id
        )?;
        summary.other_members += 1;
    }
    ws.flush()?;

    // The extended map to ICD-10-shaped codes: most findings, ~2 rows each, up to 4 map groups.
    let mut wm = create(
        &refset_dir.join("Map"),
        &format!("der2_iisssccRefset_ExtendedMapSnapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tmapGroup\tmapPriority\tmapRule\tmapAdvice\tmapTarget\tcorrelationId\tmapCategoryId",
    )?;
    let map = consts::ICD10_COMPLEX_MAP;
    for &c in members[finding].iter().skip(1) {
        if rng.chance(0.2) {
            continue;
        }
        let groups = match rng.below(100) {
            0..=74 => 1,
            75..=91 => 2,
            92..=97 => 3,
            _ => 4,
        };
        for g in 1..=groups {
            let rows = if rng.chance(0.3) { 2 } else { 1 };
            for p in 1..=rows {
                let letter = (b'A' + rng.below(26) as u8) as char;
                let code = format!("{letter}{:02}.{}", rng.below(100), rng.below(10));
                let (rule, advice) = if p < rows {
                    (
                        "IFA 248153007 | Male (finding) |".to_string(),
                        format!("IF MALE CHOOSE {code}"),
                    )
                } else {
                    ("TRUE".to_string(), format!("ALWAYS {code}"))
                };
                writeln!(
                    wm,
                    "{}\t{DATE}\t1\t{CORE}\t{map}\t{}\t{g}\t{p}\t{rule}\t{advice}\t{code}\t447561005\t447637006",
                    rng.uuid(),
                    nodes[c as usize].id
                )?;
                summary.other_members += 1;
            }
        }
    }
    wm.flush()?;

    let mut wdep = create(
        &refset_dir.join("Metadata"),
        &format!("der2_ssRefset_ModuleDependencySnapshot_INT_{DATE}.txt"),
        "id\teffectiveTime\tactive\tmoduleId\trefsetId\treferencedComponentId\tsourceEffectiveTime\ttargetEffectiveTime",
    )?;
    writeln!(
        wdep,
        "{}\t{DATE}\t1\t{CORE}\t{}\t{MODEL}\t{DATE}\t{DATE}",
        rng.uuid(),
        consts::MODULE_DEPENDENCY
    )?;
    summary.other_members += 1;
    wdep.flush()?;
    Ok(summary)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
