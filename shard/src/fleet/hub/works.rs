//! The Works of a placement: one per bound cluster in the cluster's reserved namespace,
//! with the cluster's overrides applied to the snapshot's manifests, and the removal of
//! Works no binding wants any more.

use super::*;

impl Hub<'_> {
    /// Creates or updates the Work of one bound cluster; returns how far the member got
    /// and the Work, when written.
    pub(super) async fn work(
        &self,
        crp: &Value,
        binding: &Value,
        cluster: &str,
        snapshot: &str,
        manifests: Vec<Value>,
        works: &[Value],
    ) -> anyhow::Result<(WorkState, Option<Value>)> {
        let crp_name = meta::name(crp).unwrap_or_default();
        let namespace = member_namespace(cluster);
        let name = format!("{crp_name}-work");
        let binding_name = meta::name(binding).unwrap_or_default();
        let digest = resources::hash(&manifests);
        let existing = works.iter().find(|w| meta::namespace(w) == Some(&namespace) && meta::name(w) == Some(&name));
        let labels = json!({PARENT_CRP_LABEL: crp_name, PARENT_BINDING_LABEL: binding_name,
            PARENT_SNAPSHOT_INDEX_LABEL: snapshot.trim_end_matches("-snapshot").rsplit('-').next().unwrap_or("0")});
        let annotations = json!({PARENT_SNAPSHOT_NAME_ANNOTATION: snapshot, WORK_HASH_ANNOTATION: digest});
        let written = match existing {
            Some(work)
                if annotation(work, WORK_HASH_ANNOTATION) == Some(&digest)
                    && annotation(work, PARENT_SNAPSHOT_NAME_ANNOTATION) == Some(snapshot)
                    && label(work, PARENT_BINDING_LABEL) == Some(binding_name)
                    && !meta::is_deleting(work) =>
            {
                return Ok((work_state(work, false), None));
            }
            Some(work) if !meta::is_deleting(work) => {
                self.update(&self.rows.works, Some(&namespace), &name, None, |old| {
                    let mut new = old.clone();
                    new["metadata"]["labels"] = labels.clone();
                    new["metadata"]["annotations"] = annotations.clone();
                    new["spec"]["workload"]["manifests"] = json!(manifests);
                    new
                })
                .await?
            }
            Some(_) => return Ok((WorkState::default(), None)),
            None => {
                let work = json!({
                    "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                    "kind": "Work",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations,
                        "ownerReferences": [owner("ClusterResourcePlacement", crp)]},
                    "spec": {"workload": {"manifests": manifests}},
                });
                self.create(&self.rows.works, work).await?
            }
        };
        Ok((work_state(&written, true), Some(written)))
    }

    /// Deletes the Works of a placement whose cluster no longer has a binding past
    /// Scheduled.
    pub(super) async fn remove_stale_works(&self, bindings: &[Value], works: &mut Vec<Value>) -> anyhow::Result<()> {
        let wanted: BTreeSet<String> = bindings
            .iter()
            .filter(|b| State::of(b) != State::Scheduled)
            .filter_map(|b| target_of(b).map(|c| member_namespace(&c)))
            .collect();
        let mut left = Vec::new();
        for work in works.drain(..) {
            let namespace = meta::namespace(&work).unwrap_or_default();
            if meta::is_deleting(&work) || wanted.contains(namespace) {
                left.push(work);
            } else {
                self.delete(&self.rows.works, Some(namespace), meta::name(&work).unwrap_or_default()).await?;
            }
        }
        *works = left;
        Ok(())
    }
}

/// Replaces the Work of the same namespace and name in `works`, or adds it.
pub(super) fn keep_work(works: &mut Vec<Value>, work: Value) {
    let at = |w: &Value| (meta::namespace(w).map(str::to_string), meta::name(w).map(str::to_string));
    let key = at(&work);
    works.retain(|w| at(w) != key);
    works.push(work);
}

/// Manifests for one member after the overrides that apply to it; whether any did.
pub(super) fn apply_overrides(
    manifests: &[Value],
    member: &Value,
    shared: &Shared<'_>,
) -> Result<(Vec<Value>, bool), String> {
    let cluster = meta::name(member).unwrap_or_default();
    let labels = meta::labels(member);
    let (cluster_overrides, resource_overrides) = (shared.cluster_overrides, shared.resource_overrides);
    let mut any = false;
    let mut out = Vec::new();
    for manifest in manifests {
        let mut rules: Vec<Rule> = Vec::new();
        let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api_version = manifest.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let name = meta::name(manifest).unwrap_or_default();
        let namespace = meta::namespace(manifest);
        let picks = |selector: &Value, kind: &str, name: &str| {
            selector.get("group").and_then(Value::as_str).unwrap_or_default() == group_of(kind, group)
                && selector.get("kind").and_then(Value::as_str) == Some(kind)
                && selector.get("name").and_then(Value::as_str) == Some(name)
        };
        // Cluster-scoped objects by themselves, namespaced ones through their namespace.
        let (scope_kind, scope_name) = match namespace {
            Some(ns) => ("Namespace", ns),
            None => (kind, name),
        };
        for o in cluster_overrides {
            let selectors = o.pointer("/spec/clusterResourceSelectors").and_then(Value::as_array);
            if selectors.into_iter().flatten().any(|s| picks(s, scope_kind, scope_name)) {
                rules.extend(resources::rules_for(o, &labels));
            }
        }
        for o in resource_overrides.iter().filter(|o| namespace.is_some() && meta::namespace(o) == namespace) {
            let selectors = o.pointer("/spec/resourceSelectors").and_then(Value::as_array);
            if selectors.into_iter().flatten().any(|s| picks(s, kind, name)) {
                rules.extend(resources::rules_for(o, &labels));
            }
        }
        any |= !rules.is_empty();
        let what = format!("{kind} {}{name}", namespace.map(|n| format!("{n}/")).unwrap_or_default());
        match resources::apply_rules(manifest, &rules, cluster, &labels) {
            Ok(Some(object)) => out.push(object),
            Ok(None) => {}
            Err(message) => return Err(format!("override of {what} for cluster {cluster}: {message}")),
        }
    }
    Ok((out, any))
}
