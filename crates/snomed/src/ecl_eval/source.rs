//! What ECL evaluation needs from a release: the narrow interface it is written against.
//!
//! Evaluation works on dense concept indexes (`0..concept_count`), so sets are compressed bitmaps. The store
//! implements this trait (in `store_source.rs`); tests implement it over plain collections too.

/// One active defining relationship seen from a concept: the attribute type, the concept at the other end
/// (the destination for outbound, the source for inbound) and the role group (0 = ungrouped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rel {
    /// Dense index of the attribute type.
    pub type_idx: u32,
    /// Dense index of the other concept.
    pub other: u32,
    /// Role group number; 0 is ungrouped.
    pub group: u32,
}

/// One active defining relationship in an index by attribute type (the type is implied by the slice it is in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct TypedEdge {
    /// Dense index of the destination.
    pub dest: u32,
    /// Dense index of the source.
    pub source: u32,
    /// Role group number; 0 is ungrouped.
    pub group: u32,
}

/// One active relationship with a concrete value, as in RF2: `#500`, `#2.5`, `"PANADOL"`, `true`.
#[derive(Debug, Clone, Copy)]
pub struct ConcreteRel<'a> {
    /// Dense index of the attribute type.
    pub type_idx: u32,
    /// Role group number.
    pub group: u32,
    /// The value exactly as in RF2 (with its `#` or quotes).
    pub value: &'a str,
}

/// The concept attributes that concept filters test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConceptRow {
    /// Whether the concept is active.
    pub active: bool,
    /// Module id.
    pub module: u64,
    /// Definition status id (primitive 900000000000074008, defined 900000000000073002).
    pub definition_status: u64,
    /// Effective time as `YYYYMMDD`; 0 when unpublished.
    pub effective: u32,
}

/// A description (or text definition) with its acceptability in each language reference set.
#[derive(Debug, Clone, Copy)]
pub struct Description<'a> {
    /// Description id.
    pub id: u64,
    /// Whether it is active.
    pub active: bool,
    /// Module id.
    pub module: u64,
    /// Effective time `YYYYMMDD`.
    pub effective: u32,
    /// Type id (FSN, synonym, definition).
    pub type_id: u64,
    /// Two-letter language code, lower case.
    pub lang: [u8; 2],
    /// The term.
    pub term: &'a str,
    /// `(language refset id, preferred?)` for each active language refset member.
    pub acceptability: &'a [(u64, bool)],
}

/// A reference set member with its additional fields by name (`mapTarget`, `targetComponentId`, …).
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// referencedComponentId.
    pub referenced: u64,
    /// The dense index of the referenced component when it is a concept of the release.
    pub referenced_idx: Option<u32>,
    /// Whether the member is active.
    pub active: bool,
    /// Module id.
    pub module: u64,
    /// Effective time `YYYYMMDD`.
    pub effective: u32,
    /// `(field name, value as in RF2)` for each additional field.
    pub fields: &'a [(&'a str, &'a str)],
}

/// Read access to one release, by dense concept index.
///
/// Closures (`ancestors`, `descendants`) are over active is-a relationships and exclude the concept itself.
/// Relationship methods report only active defining (inferred or additional) relationships, is-a included.
pub trait EclSource {
    /// Number of concepts (active and inactive); indexes are `0..concept_count()`.
    fn concept_count(&self) -> u32;
    /// The dense index of a concept id.
    fn concept_index(&self, id: u64) -> Option<u32>;
    /// The concept id at a dense index.
    fn concept_id(&self, idx: u32) -> u64;
    /// Status, module, definition status and effective time.
    fn concept(&self, idx: u32) -> ConceptRow;
    /// Direct supertypes.
    fn parents(&self, idx: u32) -> &[u32];
    /// Direct subtypes.
    fn children(&self, idx: u32) -> &[u32];
    /// All supertypes, transitively.
    fn ancestors(&self, idx: u32) -> &[u32];
    /// All subtypes, transitively.
    fn descendants(&self, idx: u32) -> &[u32];
    /// Outbound relationships of `source`.
    fn relationships(&self, source: u32, f: &mut dyn FnMut(Rel));
    /// Inbound relationships of `destination` (`Rel::other` is the source).
    fn inbound(&self, destination: u32, f: &mut dyn FnMut(Rel));
    /// Inbound relationships of `destination` with attribute type `type_idx` (override when the source has an
    /// index by type).
    fn inbound_of_type(&self, destination: u32, type_idx: u32, f: &mut dyn FnMut(Rel)) {
        self.inbound(destination, &mut |r| {
            if r.type_idx == type_idx {
                f(r);
            }
        });
    }
    /// Every active defining relationship of attribute type `type_idx`, sorted by (destination, source, group),
    /// when the source keeps an index by type; `None` makes evaluation walk from the values instead.
    fn edges_of_type(&self, type_idx: u32) -> Option<&[TypedEdge]> {
        let _ = type_idx;
        None
    }
    /// Concrete-valued relationships of `source`.
    fn concrete(&self, source: u32, f: &mut dyn FnMut(ConcreteRel<'_>));
    /// Descriptions and text definitions of a concept, active or not.
    fn descriptions(&self, concept: u32, f: &mut dyn FnMut(&Description<'_>));
    /// Members (active or not) of the reference set `refset`; nothing if it has none.
    fn members(&self, refset: u64, f: &mut dyn FnMut(&Member<'_>));
    /// Concepts known under an alternate identifier `scheme#code`, where the release has identifier data.
    fn alternate_identifier(&self, scheme: &str, code: &str) -> Option<Vec<u32>> {
        let _ = (scheme, code);
        None
    }
}

/// Well-known concept ids used by evaluation.
pub mod ids {
    /// 116680003 |Is a|
    pub const IS_A: u64 = 116680003;
    /// 410662002 |Concept model attribute|: refinement attributes must be this or a descendant.
    pub const CONCEPT_MODEL_ATTRIBUTE: u64 = 410662002;
    /// 900000000000074008 |Primitive|
    pub const PRIMITIVE: u64 = 900000000000074008;
    /// 900000000000073002 |Defined|
    pub const DEFINED: u64 = 900000000000073002;
    /// 900000000000013009 |Synonym|
    pub const SYNONYM: u64 = 900000000000013009;
    /// 900000000000003001 |Fully specified name|
    pub const FSN: u64 = 900000000000003001;
    /// 900000000000550004 |Definition|
    pub const DEFINITION: u64 = 900000000000550004;
    /// 900000000000548007 |Preferred|
    pub const PREFERRED: u64 = 900000000000548007;
    /// 900000000000549004 |Acceptable|
    pub const ACCEPTABLE: u64 = 900000000000549004;
    /// 900000000000527005 |SAME AS association reference set|
    pub const SAME_AS: u64 = 900000000000527005;
    /// 900000000000526001 |REPLACED BY association reference set|
    pub const REPLACED_BY: u64 = 900000000000526001;
    /// 900000000000528000 |WAS A association reference set|
    pub const WAS_A: u64 = 900000000000528000;
    /// 1186924009 |PARTIALLY EQUIVALENT TO association reference set|
    pub const PARTIALLY_EQUIVALENT_TO: u64 = 1186924009;
    /// 900000000000522004 |Historical association reference set| (parent of the association refsets)
    pub const HISTORICAL_ASSOCIATION: u64 = 900000000000522004;
    /// The historical association reference sets of the International Edition.
    pub const ALL_ASSOCIATIONS: [u64; 10] = [
        SAME_AS,
        REPLACED_BY,
        WAS_A,
        PARTIALLY_EQUIVALENT_TO,
        900000000000523009, // POSSIBLY EQUIVALENT TO
        900000000000524003, // MOVED TO
        900000000000525002, // MOVED FROM
        900000000000530003, // ALTERNATIVE
        900000000000531004, // REFERS TO concept
        1186921001,         // POSSIBLY REPLACED BY
    ];

    /// Language reference sets of the dialect aliases in the ECL specification's table.
    pub fn dialect(alias: &str) -> Option<u64> {
        Some(match alias.to_ascii_lowercase().as_str() {
            "en-gb" => 900000000000508004,
            "en-us" => 900000000000509007,
            "en-au" => 32570271000036106,
            "en-ca" => 19491000087109,
            "en-nz" => 271000210107,
            "en-ie" => 21000220103,
            "en-nhs-clinical" => 999001261000000100,
            "en-nhs-dmd" => 999000671000001103,
            "en-nhs-pharmacy" => 999000691000001104,
            "en-uk-drug" => 999000681000001101,
            "en-uk-ext" => 999001251000000103,
            "en-int-gmdn" => 608771002,
            "es" | "es-es" => 448879004,
            "es-ar" => 450828004,
            "es-uy" => 5641000179103,
            "sv" | "sv-se" => 46011000052107,
            "da" | "da-dk" => 554461000005103,
            "nl" | "nl-nl" => 31000146106,
            _ => return None,
        })
    }
}
