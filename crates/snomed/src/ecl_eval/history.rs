//! History supplements `{{ +HISTORY… }}`: add the inactive concepts that historical associations point from
//! to the members of the result.
//!
//! Profiles: MIN follows SAME AS; MOD adds REPLACED BY, WAS A and PARTIALLY EQUIVALENT TO; MAX (and plain
//! `HISTORY`) follows every historical association refset (the International ones and any subtype of
//! 900000000000522004 in the release); `HISTORY (expr)` follows the refsets `expr` selects.

use ecl::{HistoryProfile, HistorySupplement};
use roaring::RoaringBitmap;

use super::EclError;
use super::eval::{Ctx, Direction};
use super::source::{EclSource, ids};

impl<S: EclSource + ?Sized> Ctx<'_, S> {
    pub fn history(
        &mut self,
        set: RoaringBitmap,
        h: &HistorySupplement,
    ) -> Result<RoaringBitmap, EclError> {
        let refsets: Vec<u64> = match h {
            HistorySupplement::Profile(Some(HistoryProfile::Min)) => vec![ids::SAME_AS],
            HistorySupplement::Profile(Some(HistoryProfile::Mod)) => {
                vec![
                    ids::SAME_AS,
                    ids::REPLACED_BY,
                    ids::WAS_A,
                    ids::PARTIALLY_EQUIVALENT_TO,
                ]
            }
            HistorySupplement::Profile(_) => {
                let mut all = ids::ALL_ASSOCIATIONS.to_vec();
                if let Some(parent) = self.src.concept_index(ids::HISTORICAL_ASSOCIATION) {
                    let below =
                        self.closure(&std::iter::once(parent).collect(), Direction::Down)?;
                    all.extend(below.iter().map(|i| self.src.concept_id(i)));
                }
                all.sort_unstable();
                all.dedup();
                all
            }
            HistorySupplement::Subset(e) => {
                let chosen = self.expression(e)?;
                chosen.iter().map(|i| self.src.concept_id(i)).collect()
            }
        };
        let mut out = set.clone();
        let src = self.src;
        let mut error = None;
        for refset in refsets {
            src.members(refset, &mut |m| {
                if error.is_some() || !m.active {
                    return;
                }
                if let Err(e) = self.tick() {
                    error = Some(e);
                    return;
                }
                let target = m
                    .fields
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("targetComponentId"))
                    .and_then(|(_, v)| v.parse().ok())
                    .and_then(|id| src.concept_index(id));
                if target.is_some_and(|t| set.contains(t))
                    && let Some(idx) = m.referenced_idx
                {
                    out.insert(idx);
                }
            });
        }
        match error {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}
