//! SNOMED CT identifiers: the `SctId` newtype with Verhoeff and partition checks, and the dense concept index.

use std::fmt;
use std::str::FromStr;

/// A SNOMED CT identifier (SCTID): 6 to 18 decimal digits whose last digit is a Verhoeff check digit and whose
/// second- and third-last digits name the partition (concept, description, relationship; short or long form).
///
/// Constructing one through [`SctId::parse`] or [`SctId::new`] checks both; [`SctId::new_unchecked`] is for ids read
/// back from a store that was validated when it was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SctId(u64);

/// What kind of component an identifier names, from its partition identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Partition {
    /// A concept (`00` short form, `10` long form).
    Concept,
    /// A description (`01` / `11`).
    Description,
    /// A relationship (`02` / `12`).
    Relationship,
}

/// Why a string or number is not a valid SCTID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// Not 6 to 18 ASCII digits (or a leading zero).
    #[error("'{0}' is not an SCTID: expected 6 to 18 digits without a leading zero")]
    Syntax(String),
    /// The Verhoeff check digit does not match.
    #[error("{0} is not an SCTID: its check digit is wrong")]
    CheckDigit(u64),
    /// The partition identifier is not one of the six defined ones.
    #[error("{0} is not an SCTID: unknown partition identifier")]
    Partition(u64),
}

impl SctId {
    /// Validates `value`: length, Verhoeff check digit and partition.
    pub fn new(value: u64) -> Result<SctId, IdError> {
        if !(100_000..=999_999_999_999_999_999).contains(&value) {
            return Err(IdError::Syntax(value.to_string()));
        }
        if !verhoeff_valid(value) {
            return Err(IdError::CheckDigit(value));
        }
        if partition_of(value).is_none() {
            return Err(IdError::Partition(value));
        }
        Ok(SctId(value))
    }

    /// Parses and validates a decimal SCTID.
    pub fn parse(s: &str) -> Result<SctId, IdError> {
        let bytes = s.as_bytes();
        if !(6..=18).contains(&bytes.len())
            || bytes[0] == b'0'
            || !bytes.iter().all(u8::is_ascii_digit)
        {
            return Err(IdError::Syntax(s.to_string()));
        }
        let value = s
            .parse::<u64>()
            .map_err(|_| IdError::Syntax(s.to_string()))?;
        SctId::new(value)
    }

    /// Wraps a value without checking it (ids read back from a validated store, well-known constants).
    pub const fn new_unchecked(value: u64) -> SctId {
        SctId(value)
    }

    /// The numeric value.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The kind of component this id names.
    pub fn partition(self) -> Partition {
        partition_of(self.0).unwrap_or(Partition::Concept)
    }

    /// Builds a valid id from an item identifier, a namespace (0 for the International core, short form) and
    /// a partition: the inverse of parsing, used by the synthetic generator.
    pub fn generate(item: u64, namespace: Option<u32>, partition: Partition) -> SctId {
        let p = match partition {
            Partition::Concept => 0,
            Partition::Description => 1,
            Partition::Relationship => 2,
        };
        let body = match namespace {
            None => item * 100 + p,
            Some(ns) => (item * 10_000_000 + ns as u64) * 100 + 10 + p,
        };
        SctId(body * 10 + verhoeff_digit(body))
    }
}

impl fmt::Display for SctId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for SctId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SctId::parse(s)
    }
}

fn partition_of(value: u64) -> Option<Partition> {
    match (value / 10) % 100 {
        0 | 10 => Some(Partition::Concept),
        1 | 11 => Some(Partition::Description),
        2 | 12 => Some(Partition::Relationship),
        _ => None,
    }
}

const VERHOEFF_D: [[u8; 10]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
    [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
    [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
    [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
    [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
    [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
    [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
    [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];
const VERHOEFF_P: [[u8; 10]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
    [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
    [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
    [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
    [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
    [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
    [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];
const VERHOEFF_INV: [u8; 10] = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9];

/// True when the last digit of `value` is its Verhoeff check digit.
fn verhoeff_valid(mut value: u64) -> bool {
    let mut c = 0u8;
    let mut i = 0usize;
    while value > 0 {
        let digit = (value % 10) as usize;
        c = VERHOEFF_D[c as usize][VERHOEFF_P[i % 8][digit] as usize];
        value /= 10;
        i += 1;
    }
    c == 0
}

/// The Verhoeff check digit to append to `body`.
fn verhoeff_digit(mut body: u64) -> u64 {
    let mut c = 0u8;
    let mut i = 1usize;
    loop {
        let digit = (body % 10) as usize;
        c = VERHOEFF_D[c as usize][VERHOEFF_P[i % 8][digit] as usize];
        body /= 10;
        i += 1;
        if body == 0 {
            break;
        }
    }
    VERHOEFF_INV[c as usize] as u64
}

/// The dense index of a concept in a store: `0..store.concept_count()`, in ascending SCTID order.
///
/// Dense indexes are what bitmaps (`roaring::RoaringBitmap`) and the hierarchy arrays hold; convert with
/// `Store::index_of` / `Store::id_of`. They are only meaningful for the store that produced them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, bytemuck::Pod, bytemuck::Zeroable,
)]
#[repr(transparent)]
pub struct ConceptIdx(pub u32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ids_are_valid() {
        for id in [
            138875005u64,
            24700007,
            116680003,
            900000000000207008,
            41398015,
            999002271000000101,
        ] {
            assert!(SctId::new(id).is_ok(), "{id}");
        }
        assert_eq!(SctId::parse("24700008"), Err(IdError::CheckDigit(24700008)));
        assert!(matches!(SctId::parse("0123456"), Err(IdError::Syntax(_))));
        assert!(matches!(SctId::parse("12a456"), Err(IdError::Syntax(_))));
    }

    #[test]
    fn generated_ids_round_trip() {
        for item in [1_000u64, 4_242, 99_999, 12_345_678] {
            for p in [
                Partition::Concept,
                Partition::Description,
                Partition::Relationship,
            ] {
                let id = SctId::generate(item, None, p);
                assert_eq!(SctId::new(id.get()), Ok(id));
                assert_eq!(id.partition(), p);
                let long = SctId::generate(item, Some(1_000_124), p);
                assert_eq!(SctId::new(long.get()), Ok(long));
                assert_eq!(long.partition(), p);
            }
        }
    }
}
