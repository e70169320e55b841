//! Pacing of placement decisions, shared by the Fleet and OCM hubs: a placement's
//! annotations read into a [`Pacing`], and the voluntary moves a decision made written
//! back onto it. Moves are recorded before the decision is written, so a crash in
//! between can only spend budget without moving, never move without spending it; a
//! rebalance request is marked carried out only after its decision is written, so a
//! failed write repeats it rather than losing it.

use apiserver::registry::virtual_workspace::{keep_reserved, WriteAdmission};
use apiserver::registry::ResourceType;
use apiserver::rest::status::{ApiError, ApiResult};
use apiserver::storage::{self, ObjectRef, WriteOptions};
use placement::pace::{Moves, Pacing, MOVES_ANNOTATION, REBALANCED_ANNOTATION, REBALANCE_ANNOTATION};
use protocol::meta;
use serde_json::Value;
use std::time::Duration;

use crate::state::Shard;

/// The ordinary writes' guard of what pacing records: `placement.atoll.io/moves` and
/// `placement.atoll.io/rebalanced` are the controllers' (they write through storage and
/// are not asked). Setting or changing one is refused (403); a write that leaves one out
/// (`kubectl replace`, a GitOps apply) keeps the stored value, so the budget cannot be
/// refilled, nor a carried-out rebalance replayed, by rewriting the placement.
/// `system:masters` are not asked, as for every registry admission.
#[derive(Debug, Default)]
pub struct Reserved;

impl WriteAdmission for Reserved {
    fn admit(&self, old: Option<&Value>, new: &mut Value, _subresource: Option<&str>) -> ApiResult<()> {
        let reserved = |key: &str| key == MOVES_ANNOTATION || key == REBALANCED_ANNOTATION;
        // Every write of every resource passes here: most carry neither key.
        let carries = |object: &Value| {
            let annotations = object.pointer("/metadata/annotations").and_then(Value::as_object);
            annotations.is_some_and(|a| a.keys().any(|k| reserved(k)))
        };
        if !carries(new) && !old.is_some_and(carries) {
            return Ok(());
        }
        keep_reserved(old, new, "annotations", reserved).map_err(|field| {
            ApiError::forbidden(format!(
                "{field} is written by the placement controllers only; ask for a new decision with the \
                 {REBALANCE_ANNOTATION} annotation instead"
            ))
        })
    }
}

/// A placement's pacing and its recent moves, from its annotations, with `damping` where
/// it names no interval. Annotations that cannot be read are logged and ignored.
pub fn read(placement: &Value, damping: Duration) -> (Pacing, Moves) {
    let annotations = meta::annotations(placement);
    let damping = jiff::SignedDuration::try_from(damping).unwrap_or(jiff::SignedDuration::ZERO);
    let (pacing, warnings) = Pacing::from_annotations(&annotations, damping);
    for warning in warnings {
        tracing::warn!(placement = meta::name(placement).unwrap_or_default(), "{warning}");
    }
    let moves = annotations.get(MOVES_ANNOTATION).map(|text| Moves::parse(text)).unwrap_or_default();
    (pacing, moves)
}

/// Records on the placement the moves a decision made (`moves`, the pruned history with
/// them) or a rebalance request carried out. Nothing is written when neither is given,
/// so moves ageing out of the window cost no write (they are pruned when read).
/// Metadata only: the placement's generation stays.
pub async fn write(
    shard: &Shard,
    rt: &ResourceType,
    placement: &Value,
    cluster: &str,
    moves: Option<&Moves>,
    rebalanced: Option<&str>,
) -> anyhow::Result<()> {
    if moves.is_none() && rebalanced.is_none() {
        return Ok(());
    }
    let name = meta::name(placement).unwrap_or_default();
    let at = ObjectRef { cluster, namespace: meta::namespace(placement), name };
    let text = moves.map(Moves::render);
    storage::guaranteed_update(shard, rt, &at, None, WriteOptions::default(), |old| {
        let mut new = old.clone();
        if let Some(text) = &text {
            let value = (!text.is_empty()).then_some(text.as_str());
            meta::set_map_entry(&mut new, "annotations", MOVES_ANNOTATION, value);
        }
        if let Some(request) = rebalanced {
            meta::set_annotation(&mut new, REBALANCED_ANNOTATION, request);
        }
        Ok(new)
    })
    .await
    .map(|_| ())
    .map_err(|e| anyhow::anyhow!("record the moves of placement {name}: {}", e.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn moves_are_read_back_as_written() {
        let placement = json!({"metadata": {"name": "p", "annotations": {
            MOVES_ANNOTATION: "2026-11-27T12:00:00Z=2",
            REBALANCED_ANNOTATION: "r1",
            placement::pace::BUDGET_ANNOTATION: "1",
            placement::pace::REBALANCE_ANNOTATION: "r1",
        }}});
        let (pacing, moves) = read(&placement, Duration::from_secs(60));
        assert_eq!(pacing.budget, Some(placement::pace::Limit::Count(1)));
        assert_eq!(pacing.interval, jiff::SignedDuration::from_secs(60));
        assert_eq!(pacing.rebalance, None, "r1 was carried out");
        assert_eq!(moves.render(), "2026-11-27T12:00:00Z=2");
    }

    #[test]
    fn users_cannot_forge_or_wipe_what_pacing_records() {
        let stored = json!({"metadata": {"name": "p", "annotations": {MOVES_ANNOTATION: "2026-11-27T12:00:00Z=2", "team": "a"}}});
        // A replace without the annotation keeps it.
        let mut replaced = json!({"metadata": {"name": "p", "annotations": {"team": "b"}}});
        Reserved.admit(Some(&stored), &mut replaced, None).unwrap();
        assert_eq!(replaced["metadata"]["annotations"][MOVES_ANNOTATION], "2026-11-27T12:00:00Z=2");
        // Changing or adding one is refused, naming the field.
        let mut forged = stored.clone();
        forged["metadata"]["annotations"][MOVES_ANNOTATION] = json!("");
        let error = Reserved.admit(Some(&stored), &mut forged, None).unwrap_err();
        assert_eq!(error.code, 403);
        assert!(error.message.contains(MOVES_ANNOTATION), "{}", error.message);
        let mut created = json!({"metadata": {"name": "q", "annotations": {REBALANCED_ANNOTATION: "r1"}}});
        assert!(Reserved.admit(None, &mut created, None).is_err());
        // The request itself is the user's.
        let mut asked = stored.clone();
        asked["metadata"]["annotations"][REBALANCE_ANNOTATION] = json!("r2");
        Reserved.admit(Some(&stored), &mut asked, None).unwrap();
    }
}
