//! A placement's snapshots: the latest ClusterResourceSnapshot of what it selects (split
//! into a group under one master when large) and ClusterSchedulingPolicySnapshot of its
//! policy, new ones only when their hashes change, older ones retired past the history
//! limit; the policy snapshot's status.

use super::*;

impl Hub<'_> {
    /// The latest resource snapshot of a placement, made anew when its selection's hash
    /// changed: (master snapshot, its index, whether one was created).
    pub(super) async fn resource_snapshot(
        &self,
        crp: &Value,
        objects: &[Value],
        group: &mut Group,
    ) -> anyhow::Result<(Value, String, bool)> {
        let name = meta::name(crp).unwrap_or_default();
        let hash = resources::hash(objects);
        let snapshots = &group.resource_snapshots;
        let latest = snapshots
            .iter()
            .find(|s| label(s, IS_LATEST_LABEL) == Some("true") && annotation(s, SUBINDEX_ANNOTATION).is_none());
        if let Some(latest) = latest {
            if annotation(latest, RESOURCE_HASH_ANNOTATION) == Some(hash.as_str()) {
                let index = label(latest, RESOURCE_INDEX_LABEL).unwrap_or("0").to_string();
                return Ok((latest.clone(), index, false));
            }
        }
        let index = snapshots.iter().filter_map(|s| label(s, RESOURCE_INDEX_LABEL)?.parse::<u64>().ok()).max();
        let index = index.map_or(0, |i| i + 1);
        let rt = &self.rows.resource_snapshots;
        group.resource_snapshots =
            self.retire(rt, &group.resource_snapshots, RESOURCE_INDEX_LABEL, crp, &group.bindings).await?;
        let chunks = resources::split(objects, resources::SNAPSHOT_LIMIT_BYTES);
        // The sub-snapshots first, the master last: a master exists only once its whole
        // group does.
        let mut master = Value::Null;
        for (sub, chunk) in chunks.iter().enumerate().rev() {
            let (snapshot_name, mut labels, mut annotations) = if sub == 0 {
                (
                    format!("{name}-{index}-snapshot"),
                    json!({IS_LATEST_LABEL: "true"}),
                    json!({
                        RESOURCE_HASH_ANNOTATION: hash,
                        SNAPSHOT_COUNT_ANNOTATION: chunks.len().to_string(),
                    }),
                )
            } else {
                (format!("{name}-{index}-{}", sub - 1), json!({}), json!({SUBINDEX_ANNOTATION: (sub - 1).to_string()}))
            };
            labels[PARENT_CRP_LABEL] = json!(name);
            labels[RESOURCE_INDEX_LABEL] = json!(index.to_string());
            annotations[CRP_GENERATION_ANNOTATION] = json!(meta::generation(crp).to_string());
            let snapshot = json!({
                "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                "kind": "ClusterResourceSnapshot",
                "metadata": {"name": snapshot_name, "labels": labels, "annotations": annotations,
                    "ownerReferences": [owner("ClusterResourcePlacement", crp)]},
                "spec": {"selectedResources": chunk},
            });
            let created = self.create(&self.rows.resource_snapshots, snapshot).await?;
            if sub == 0 {
                master = created.clone();
            }
            keep(&mut group.resource_snapshots, created);
        }
        Ok((master, index.to_string(), true))
    }

    /// Marks a placement's older snapshots not latest and keeps at most
    /// `revisionHistoryLimit - 1` of their index groups, oldest going first, but never a
    /// group a binding still points at; returns the snapshots left.
    pub(super) async fn retire(
        &self,
        rt: &ResourceType,
        snapshots: &[Value],
        index_label: &str,
        crp: &Value,
        bindings: &[Value],
    ) -> anyhow::Result<Vec<Value>> {
        let limit = crp.pointer("/spec/revisionHistoryLimit").and_then(Value::as_u64).unwrap_or(10).max(1) as usize;
        let in_use: BTreeSet<&str> = bindings
            .iter()
            .flat_map(|b| ["/spec/resourceSnapshotName", "/spec/schedulingPolicySnapshotName"].map(|p| b.pointer(p)))
            .filter_map(|v| v?.as_str())
            .collect();
        let used_indexes: BTreeSet<&str> = snapshots
            .iter()
            .filter(|s| meta::name(s).is_some_and(|n| in_use.contains(n)))
            .filter_map(|s| label(s, index_label))
            .collect();
        let indexes: BTreeSet<u64> = snapshots.iter().filter_map(|s| label(s, index_label)?.parse().ok()).collect();
        let excess = indexes.len().saturating_sub(limit - 1);
        let pruned: BTreeSet<String> =
            indexes.iter().take(excess).map(u64::to_string).filter(|i| !used_indexes.contains(i.as_str())).collect();
        let mut left = Vec::new();
        for snapshot in snapshots {
            let name = meta::name(snapshot).unwrap_or_default();
            if label(snapshot, index_label).is_some_and(|i| pruned.contains(i)) {
                self.delete(rt, None, name).await?;
            } else if label(snapshot, IS_LATEST_LABEL) == Some("true") {
                let updated = self
                    .update(rt, None, name, None, |old| {
                        let mut new = old.clone();
                        new["metadata"]["labels"][IS_LATEST_LABEL] = json!("false");
                        new
                    })
                    .await?;
                left.push(updated);
            } else {
                left.push(snapshot.clone());
            }
        }
        Ok(left)
    }

    /// The latest policy snapshot of a placement: a new one when the policy's hash
    /// changed, else the latest with its number of clusters and generation brought up.
    pub(super) async fn policy_snapshot(&self, crp: &Value, group: &mut Group) -> anyhow::Result<(Value, bool)> {
        let name = meta::name(crp).unwrap_or_default();
        let policy = crp.pointer("/spec/policy");
        let hash = super::super::policy_hash::hash(policy);
        let generation = meta::generation(crp).to_string();
        let number = match PlacementType::of(policy) {
            PlacementType::PickN => fleet_policy::wanted(policy).map(|n| n.to_string()),
            _ => None,
        };
        let snapshots = &group.policy_snapshots;
        let latest = snapshots.iter().find(|s| label(s, IS_LATEST_LABEL) == Some("true"));
        if let Some(latest) = latest.filter(|s| s.pointer("/spec/policyHash").and_then(Value::as_str) == Some(&hash)) {
            let stale = annotation(latest, CRP_GENERATION_ANNOTATION) != Some(generation.as_str())
                || annotation(latest, NUMBER_OF_CLUSTERS_ANNOTATION) != number.as_deref();
            if !stale {
                return Ok((latest.clone(), false));
            }
            let latest_name = meta::name(latest).unwrap_or_default();
            let updated = self
                .update(&self.rows.policy_snapshots, None, latest_name, None, |old| {
                    let mut new = old.clone();
                    meta::set_map_entry(&mut new, "annotations", CRP_GENERATION_ANNOTATION, Some(&generation));
                    meta::set_map_entry(&mut new, "annotations", NUMBER_OF_CLUSTERS_ANNOTATION, number.as_deref());
                    new
                })
                .await?;
            keep(&mut group.policy_snapshots, updated.clone());
            return Ok((updated, true));
        }
        let index = snapshots.iter().filter_map(|s| label(s, POLICY_INDEX_LABEL)?.parse::<u64>().ok()).max();
        let index = index.map_or(0, |i| i + 1);
        let rt = &self.rows.policy_snapshots;
        group.policy_snapshots =
            self.retire(rt, &group.policy_snapshots, POLICY_INDEX_LABEL, crp, &group.bindings).await?;
        let mut annotations = json!({CRP_GENERATION_ANNOTATION: generation});
        if let Some(number) = number {
            annotations[NUMBER_OF_CLUSTERS_ANNOTATION] = json!(number);
        }
        let mut snapshot = json!({
            "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
            "kind": "ClusterSchedulingPolicySnapshot",
            "metadata": {
                "name": format!("{name}-{index}"),
                "labels": {PARENT_CRP_LABEL: name, IS_LATEST_LABEL: "true", POLICY_INDEX_LABEL: index.to_string()},
                "annotations": annotations,
                "ownerReferences": [owner("ClusterResourcePlacement", crp)],
            },
            "spec": {"policyHash": hash},
        });
        // No policy (PickAll) stays absent, as on KubeFleet's snapshots.
        if let Some(policy) = policy {
            snapshot["spec"]["policy"] = policy.clone();
        }
        let created = self.create(&self.rows.policy_snapshots, snapshot).await?;
        keep(&mut group.policy_snapshots, created.clone());
        Ok((created, true))
    }

    /// The policy snapshot's status: the decisions (picked first, then up to 20 not
    /// picked or rejected: [`snapshot_targets`]) and whether the policy is fulfilled.
    pub(super) async fn policy_snapshot_status(
        &self,
        crp: &Value,
        snapshot: &Value,
        decision: &placement::Decision,
    ) -> anyhow::Result<Option<Value>> {
        let targets = snapshot_targets(decision);
        let scheduled = scheduled("Scheduled", decision, meta::generation(snapshot));
        let wanted = json!({
            "observedCRPGeneration": meta::generation(crp),
            "conditions": [scheduled],
            "targetClusters": targets,
        });
        self.write_status(&self.rows.policy_snapshots, snapshot, wanted).await
    }
}

/// The objects of a resource snapshot group of `snapshots`, by its master's name.
pub(super) fn snapshot_objects(snapshots: &[Value], master: &str) -> Option<Vec<Value>> {
    let master = snapshots.iter().find(|s| meta::name(s) == Some(master))?;
    let index = label(master, RESOURCE_INDEX_LABEL);
    let mut group: Vec<&Value> = snapshots.iter().filter(|s| label(s, RESOURCE_INDEX_LABEL) == index).collect();
    group.sort_by_key(|s| annotation(s, SUBINDEX_ANNOTATION).and_then(|i| i.parse::<i64>().ok()).unwrap_or(-1));
    let objects = group
        .iter()
        .flat_map(|s| s.pointer("/spec/selectedResources").and_then(Value::as_array).cloned().unwrap_or_default());
    Some(objects.collect())
}
