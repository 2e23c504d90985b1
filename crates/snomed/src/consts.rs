//! Well-known SNOMED CT identifiers the engine relies on.

use crate::SctId;

/// 138875005 |SNOMED CT Concept|, the root.
pub const ROOT: SctId = SctId::new_unchecked(138875005);
/// 116680003 |Is a|.
pub const IS_A: SctId = SctId::new_unchecked(116680003);
/// 900000000000010007 |Stated relationship|.
pub const STATED_RELATIONSHIP: SctId = SctId::new_unchecked(900000000000010007);
/// 900000000000011006 |Inferred relationship|.
pub const INFERRED_RELATIONSHIP: SctId = SctId::new_unchecked(900000000000011006);
/// 900000000000227009 |Additional relationship|.
pub const ADDITIONAL_RELATIONSHIP: SctId = SctId::new_unchecked(900000000000227009);
/// 900000000000451002 |Existential restriction modifier|.
pub const EXISTENTIAL: SctId = SctId::new_unchecked(900000000000451002);
/// 900000000000003001 |Fully specified name|.
pub const FSN: SctId = SctId::new_unchecked(900000000000003001);
/// 900000000000013009 |Synonym|.
pub const SYNONYM: SctId = SctId::new_unchecked(900000000000013009);
/// 900000000000550004 |Definition| (text definitions).
pub const DEFINITION: SctId = SctId::new_unchecked(900000000000550004);
/// 900000000000548007 |Preferred| acceptability.
pub const PREFERRED: SctId = SctId::new_unchecked(900000000000548007);
/// 900000000000549004 |Acceptable| acceptability.
pub const ACCEPTABLE: SctId = SctId::new_unchecked(900000000000549004);
/// 900000000000509007 |United States of America English language reference set|.
pub const US_ENGLISH: SctId = SctId::new_unchecked(900000000000509007);
/// 900000000000508004 |Great Britain English language reference set|.
pub const GB_ENGLISH: SctId = SctId::new_unchecked(900000000000508004);
/// 900000000000074008 |Primitive| definition status.
pub const PRIMITIVE: SctId = SctId::new_unchecked(900000000000074008);
/// 900000000000073002 |Defined| definition status.
pub const DEFINED: SctId = SctId::new_unchecked(900000000000073002);
/// 900000000000207008 |SNOMED CT core module|.
pub const CORE_MODULE: SctId = SctId::new_unchecked(900000000000207008);
/// 900000000000012004 |SNOMED CT model component module|.
pub const MODEL_MODULE: SctId = SctId::new_unchecked(900000000000012004);
/// 900000000000441003 |SNOMED CT Model Component|.
pub const MODEL_COMPONENT: SctId = SctId::new_unchecked(900000000000441003);
/// 106237007 |Linkage concept|, parent of 246061005 |Attribute| in the International Edition.
pub const LINKAGE_CONCEPT: SctId = SctId::new_unchecked(106237007);
/// 246061005 |Attribute|, parent of 410662002 |Concept model attribute| and of 116680003 |Is a|.
pub const ATTRIBUTE: SctId = SctId::new_unchecked(246061005);
/// 410662002 |Concept model attribute|: ECL attribute names must be this concept or its descendants.
pub const CONCEPT_MODEL_ATTRIBUTE: SctId = SctId::new_unchecked(410662002);
/// 762705008 |Concept model object attribute| (concept-valued attributes).
pub const CONCEPT_MODEL_OBJECT_ATTRIBUTE: SctId = SctId::new_unchecked(762705008);
/// 762706009 |Concept model data attribute| (concrete-valued attributes).
pub const CONCEPT_MODEL_DATA_ATTRIBUTE: SctId = SctId::new_unchecked(762706009);
/// 900000000000448009 |Entire term case insensitive|.
pub const CASE_INSENSITIVE: SctId = SctId::new_unchecked(900000000000448009);
/// 900000000000522004 |Historical association reference set|, parent of the association refsets.
pub const HISTORICAL_ASSOCIATION: SctId = SctId::new_unchecked(900000000000522004);
/// 900000000000526001 |REPLACED BY association reference set|.
pub const REPLACED_BY: SctId = SctId::new_unchecked(900000000000526001);
/// 900000000000527005 |SAME AS association reference set|.
pub const SAME_AS: SctId = SctId::new_unchecked(900000000000527005);
/// 900000000000523009 |POSSIBLY EQUIVALENT TO association reference set|.
pub const POSSIBLY_EQUIVALENT_TO: SctId = SctId::new_unchecked(900000000000523009);
/// 900000000000528000 |WAS A association reference set|.
pub const WAS_A: SctId = SctId::new_unchecked(900000000000528000);
/// 900000000000530003 |ALTERNATIVE association reference set|.
pub const ALTERNATIVE: SctId = SctId::new_unchecked(900000000000530003);
/// 900000000000531004 |REFERS TO concept association reference set|.
pub const REFERS_TO: SctId = SctId::new_unchecked(900000000000531004);
/// 900000000000524003 |MOVED TO association reference set|.
pub const MOVED_TO: SctId = SctId::new_unchecked(900000000000524003);
/// 900000000000525002 |MOVED FROM association reference set|.
pub const MOVED_FROM: SctId = SctId::new_unchecked(900000000000525002);
/// 1186921001 |POSSIBLY REPLACED BY association reference set|.
pub const POSSIBLY_REPLACED_BY: SctId = SctId::new_unchecked(1186921001);
/// 1186924009 |PARTIALLY EQUIVALENT TO association reference set|.
pub const PARTIALLY_EQUIVALENT_TO: SctId = SctId::new_unchecked(1186924009);
/// 900000000000489007 |Concept inactivation indicator attribute value reference set|.
pub const CONCEPT_INACTIVATION_INDICATOR: SctId = SctId::new_unchecked(900000000000489007);
/// 447562003 |ICD-10 complex map reference set| (extended map in the International Edition).
pub const ICD10_COMPLEX_MAP: SctId = SctId::new_unchecked(447562003);
/// 900000000000456007 |Reference set descriptor reference set|.
pub const REFSET_DESCRIPTOR: SctId = SctId::new_unchecked(900000000000456007);
/// 900000000000534007 |Module dependency reference set|.
pub const MODULE_DEPENDENCY: SctId = SctId::new_unchecked(900000000000534007);

/// The historical association refsets known by id (used when the release's metadata hierarchy is absent).
pub const HISTORICAL_ASSOCIATIONS: [SctId; 10] = [
    REPLACED_BY,
    SAME_AS,
    POSSIBLY_EQUIVALENT_TO,
    WAS_A,
    ALTERNATIVE,
    REFERS_TO,
    MOVED_TO,
    MOVED_FROM,
    POSSIBLY_REPLACED_BY,
    PARTIALLY_EQUIVALENT_TO,
];

#[cfg(test)]
mod tests {
    #[test]
    fn constants_are_valid_ids() {
        for id in [
            super::ROOT,
            super::IS_A,
            super::STATED_RELATIONSHIP,
            super::INFERRED_RELATIONSHIP,
            super::FSN,
            super::SYNONYM,
            super::DEFINITION,
            super::PREFERRED,
            super::ACCEPTABLE,
            super::US_ENGLISH,
            super::GB_ENGLISH,
            super::ICD10_COMPLEX_MAP,
            super::MODULE_DEPENDENCY,
            super::MODEL_COMPONENT,
            super::LINKAGE_CONCEPT,
            super::ATTRIBUTE,
            super::CONCEPT_MODEL_ATTRIBUTE,
            super::CONCEPT_MODEL_OBJECT_ATTRIBUTE,
            super::CONCEPT_MODEL_DATA_ATTRIBUTE,
        ]
        .into_iter()
        .chain(super::HISTORICAL_ASSOCIATIONS)
        {
            assert!(crate::SctId::new(id.get()).is_ok(), "{id}");
        }
    }
}
