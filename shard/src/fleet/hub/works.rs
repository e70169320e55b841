//! The Works of a placement: per bound cluster, in the cluster's reserved namespace, a
//! main Work with the cluster's overrides applied to the snapshot's manifests and one
//! Work per envelope (an annotated ConfigMap, a ClusterResourceEnvelope or a
//! ResourceEnvelope) with the objects it wraps (KubeFleet's layout); their states summed
//! per cluster; and the removal of Works no binding or envelope wants.

use super::*;
use crate::fleet::envelope::{self, EnvelopeType};
use sha2::Digest;

/// Label on an envelope's Work with the kind of envelope (KubeFleet's `envelope-work`).
pub const ENVELOPE_TYPE_LABEL: &str = "kubernetes-fleet.io/envelope-work";
/// Label on an envelope's Work naming the envelope.
pub const ENVELOPE_NAME_LABEL: &str = "kubernetes-fleet.io/envelope-name";
/// Label on an envelope's Work with the envelope's namespace.
pub const ENVELOPE_NAMESPACE_LABEL: &str = "kubernetes-fleet.io/envelope-namespace";

/// What one Work of a cluster carries: the placement's main manifests, or those an
/// envelope wraps.
pub(super) struct Load<'a> {
    pub manifests: Vec<Value>,
    pub envelope: Option<&'a Value>,
}

/// The name of a cluster's Work for `envelope` (the main Work with `None`) and the one
/// there is, adding an envelope's labels to `labels`. An envelope's Work is found by its
/// labels, as KubeFleet finds it. A new one gets a name of KubeFleet's shape: an envelope
/// ConfigMap's a unique one, an envelope custom resource's one derived from the envelope
/// (`<crp>-work-envelope-<16 hex of SHA-256 of type/namespace/name>`), so two writers of
/// the same envelope's Work meet on its name.
fn work_identity<'w>(
    crp_name: &str,
    namespace: &str,
    envelope: Option<&Value>,
    works: &'w [Value],
    labels: &mut Value,
) -> (String, Option<&'w Value>) {
    let mut in_namespace = works.iter().filter(|w| meta::namespace(w) == Some(namespace));
    let Some(envelope) = envelope else {
        let name = format!("{crp_name}-work");
        let existing = in_namespace.find(|w| meta::name(w) == Some(name.as_str()));
        return (name, existing);
    };
    let kind = EnvelopeType::of(envelope).unwrap_or(EnvelopeType::ConfigMap);
    let (envelope_name, envelope_namespace) =
        (meta::name(envelope).unwrap_or_default(), meta::namespace(envelope).unwrap_or_default());
    labels[ENVELOPE_TYPE_LABEL] = json!(kind.label());
    labels[ENVELOPE_NAME_LABEL] = json!(envelope_name);
    // KubeFleet names the namespace of the namespaced envelopes only.
    if kind != EnvelopeType::ClusterResourceEnvelope {
        labels[ENVELOPE_NAMESPACE_LABEL] = json!(envelope_namespace);
    }
    let existing = in_namespace.find(|w| {
        label(w, ENVELOPE_TYPE_LABEL) == Some(kind.label())
            && label(w, ENVELOPE_NAME_LABEL) == Some(envelope_name)
            && label(w, ENVELOPE_NAMESPACE_LABEL).unwrap_or_default() == envelope_namespace
    });
    let name = match (existing.and_then(|w| meta::name(w)), kind) {
        (Some(name), _) => name.to_string(),
        (None, EnvelopeType::ConfigMap) => format!("{crp_name}-work-configmap-{}", uuid::Uuid::new_v4()),
        (None, kind) => {
            let identity = format!("{}/{envelope_namespace}/{envelope_name}", kind.label());
            let digest = crate::fleet::policy::hex(&sha2::Sha256::digest(identity.as_bytes()));
            format!("{crp_name}-work-envelope-{}", &digest[..16])
        }
    };
    (name, existing)
}

/// What a member's Works carry, as KubeFleet's work generator makes them: the overrides
/// that apply to the member, then the plain objects for the main Work and each envelope's
/// objects for a Work of its own. An envelope ConfigMap is overridden as the ConfigMap it
/// is; an envelope custom resource is not, the objects it wraps are. Whether any override
/// applied; an error names the override or envelope that failed.
pub(super) fn member_loads(
    manifests: &[Value],
    member: &Value,
    shared: &Shared<'_>,
) -> Result<(Vec<Value>, Vec<envelope::Envelope>, bool), String> {
    let wrapping = |m: &&Value| EnvelopeType::of(m).is_some_and(EnvelopeType::is_custom_resource);
    let custom: Vec<Value> = manifests.iter().filter(wrapping).cloned().collect();
    let rest: Vec<Value> = manifests.iter().filter(|m| !wrapping(m)).cloned().collect();
    let (overridden, mut any) = apply_overrides(&rest, member, shared)?;
    let (plain, mut envelopes) = envelope::split_envelopes(overridden)?;
    let (_, wrapped) = envelope::split_envelopes(custom)?;
    for (envelope, inner) in wrapped {
        let (inner, overridden) = apply_overrides(&inner, member, shared)?;
        any |= overridden;
        envelopes.push((envelope, inner));
    }
    Ok((plain, envelopes, any))
}

impl Hub<'_> {
    /// Creates or updates one Work of a bound cluster: the placement's main Work, or the
    /// Work of the load's envelope. Returns how far the member got, the Work
    /// when written, and its name.
    pub(super) async fn work(
        &self,
        crp: &Value,
        binding: &Value,
        cluster: &str,
        snapshot: &str,
        load: Load<'_>,
        works: &[Value],
    ) -> anyhow::Result<(WorkState, Option<Value>, String)> {
        let crp_name = meta::name(crp).unwrap_or_default();
        let namespace = member_namespace(cluster);
        let binding_name = meta::name(binding).unwrap_or_default();
        let manifests = load.manifests;
        let digest = resources::hash(&manifests);
        let mut labels = json!({PARENT_CRP_LABEL: crp_name, PARENT_BINDING_LABEL: binding_name,
            PARENT_SNAPSHOT_INDEX_LABEL: snapshot.trim_end_matches("-snapshot").rsplit('-').next().unwrap_or("0")});
        let (name, existing) = work_identity(crp_name, &namespace, load.envelope, works, &mut labels);
        let annotations = json!({PARENT_SNAPSHOT_NAME_ANNOTATION: snapshot, WORK_HASH_ANNOTATION: digest});
        // The binding owns its Works, so they go when it goes (KubeFleet ties them to the
        // binding by its work-cleanup finalizer). A binding read back without a UID (never,
        // short of a bug) leaves them to the placement rather than to no owner.
        let owner = match meta::meta_str(binding, "uid") {
            Some(_) => owner("ClusterResourceBinding", binding),
            None => owner("ClusterResourcePlacement", crp),
        };
        let owned = |work: &Value| work.pointer("/metadata/ownerReferences/0/uid") == owner.get("uid");
        let written = match existing {
            Some(work)
                if annotation(work, WORK_HASH_ANNOTATION) == Some(&digest)
                    && annotation(work, PARENT_SNAPSHOT_NAME_ANNOTATION) == Some(snapshot)
                    && label(work, PARENT_BINDING_LABEL) == Some(binding_name)
                    && owned(work)
                    && !meta::is_deleting(work) =>
            {
                return Ok((work_state(work, false), None, name));
            }
            Some(work) if !meta::is_deleting(work) => {
                self.update(&self.rows.works, Some(&namespace), &name, None, |old| {
                    let mut new = old.clone();
                    new["metadata"]["labels"] = labels.clone();
                    new["metadata"]["annotations"] = annotations.clone();
                    new["metadata"]["ownerReferences"] = json!([owner]);
                    new["spec"]["workload"]["manifests"] = json!(manifests);
                    new
                })
                .await?
            }
            Some(_) => return Ok((WorkState::default(), None, name)),
            None => {
                let work = json!({
                    "apiVersion": format!("{PLACEMENT_GROUP}/v1"),
                    "kind": "Work",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations,
                        "ownerReferences": [owner]},
                    "spec": {"workload": {"manifests": manifests}},
                });
                self.create(&self.rows.works, work).await?
            }
        };
        Ok((work_state(&written, true), Some(written), name))
    }

    /// Deletes the envelope Works in `cluster`'s namespace other than `kept`: their
    /// envelopes left the selection.
    pub(super) async fn remove_stale_envelope_works(
        &self,
        cluster: &str,
        kept: &BTreeSet<String>,
        works: &mut Vec<Value>,
    ) -> anyhow::Result<bool> {
        let namespace = member_namespace(cluster);
        let stale: Vec<String> = works
            .iter()
            .filter(|w| meta::namespace(w) == Some(namespace.as_str()) && label(w, ENVELOPE_TYPE_LABEL).is_some())
            .filter(|w| !meta::is_deleting(w))
            .filter_map(|w| meta::name(w).map(str::to_string))
            .filter(|name| !kept.contains(name))
            .collect();
        for name in &stale {
            self.delete(&self.rows.works, Some(&namespace), name).await?;
            works.retain(|w| !(meta::namespace(w) == Some(namespace.as_str()) && meta::name(w) == Some(name.as_str())));
        }
        Ok(!stale.is_empty())
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

/// One cluster's Works (its main Work and its envelopes') summed up as KubeFleet sums a
/// binding's Works: Applied or Available only when every Work is, failed when any is;
/// untrackable since the latest, unavailable since the earliest, the first failure's message.
pub(super) fn combine_states(states: Vec<WorkState>) -> WorkState {
    let all = |get: fn(&WorkState) -> Option<bool>| {
        let values: Vec<Option<bool>> = states.iter().map(get).collect();
        if values.contains(&Some(false)) {
            Some(false)
        } else if values.iter().all(|v| *v == Some(true)) && !values.is_empty() {
            Some(true)
        } else {
            None
        }
    };
    let applied = all(|s| s.applied);
    let available = all(|s| s.available);
    let untrackable_since =
        if available == Some(true) { states.iter().filter_map(|s| s.untrackable_since).max() } else { None };
    WorkState {
        snapshot: states.first().map(|s| s.snapshot.clone()).unwrap_or_default(),
        synced: states.iter().all(|s| s.synced),
        applied,
        available,
        untrackable_since,
        unavailable_since: states.iter().filter_map(|s| s.unavailable_since).min(),
        message: states.iter().map(|s| s.message.clone()).find(|m| !m.is_empty()).unwrap_or_default(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clusters_works_sum_up_to_the_worst_of_them() {
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        let state = |applied, available| WorkState {
            snapshot: "s".into(),
            synced: true,
            applied,
            available,
            ..WorkState::default()
        };
        let both = combine_states(vec![state(Some(true), Some(true)), state(Some(true), Some(true))]);
        assert_eq!((both.applied, both.available), (Some(true), Some(true)));
        let pending = combine_states(vec![state(Some(true), Some(true)), state(None, None)]);
        assert_eq!((pending.applied, pending.available), (None, None), "an envelope not yet applied holds it back");
        let mut failed = state(Some(false), None);
        failed.message = "webhook refused".into();
        let failed = combine_states(vec![state(Some(true), Some(true)), failed]);
        assert_eq!((failed.applied, failed.message.as_str()), (Some(false), "webhook refused"));
        let mut slow = state(Some(true), Some(true));
        slow.untrackable_since = Some(at("2026-01-01T00:00:10Z"));
        let mut fast = state(Some(true), Some(true));
        fast.untrackable_since = Some(at("2026-01-01T00:00:05Z"));
        let untrackable = combine_states(vec![fast, slow]);
        assert_eq!(untrackable.untrackable_since, Some(at("2026-01-01T00:00:10Z")), "the latest decides");
        assert_eq!(combine_states(Vec::new()).applied, None);
    }

    fn resource_envelope() -> Value {
        json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ResourceEnvelope",
            "metadata": {"name": "quota", "namespace": "app"},
            "data": {"quota.yaml": {"apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "app"}, "spec": {"hard": {"pods": "3"}}}}})
    }

    #[test]
    fn envelope_custom_resources_get_works_of_kubefleets_names_and_labels() {
        let namespace = "fleet-member-m1";
        let envelope = resource_envelope();
        let mut labels = json!({});
        let (name, existing) = work_identity("web", namespace, Some(&envelope), &[], &mut labels);
        assert!(existing.is_none());
        assert!(name.starts_with("web-work-envelope-") && name.len() == "web-work-envelope-".len() + 16, "{name}");
        assert_eq!(labels[ENVELOPE_TYPE_LABEL], "ResourceEnvelope");
        assert_eq!(labels[ENVELOPE_NAME_LABEL], "quota");
        assert_eq!(labels[ENVELOPE_NAMESPACE_LABEL], "app");
        let (again, _) = work_identity("web", namespace, Some(&envelope), &[], &mut json!({}));
        assert_eq!(again, name, "derived from the envelope, not drawn");

        // An existing Work is found by its labels, whatever its name.
        let work = json!({"metadata": {"name": "older", "namespace": namespace, "labels": labels.clone()}});
        let works = [work];
        let (found, existing) = work_identity("web", namespace, Some(&envelope), &works, &mut json!({}));
        assert_eq!((found.as_str(), existing.is_some()), ("older", true));

        // A ClusterResourceEnvelope of the same name: no namespace label, another Work.
        let cluster = json!({"apiVersion": "placement.kubernetes-fleet.io/v1beta1", "kind": "ClusterResourceEnvelope",
            "metadata": {"name": "quota"}, "data": {}});
        let mut cluster_labels = json!({});
        let (cluster_name, existing) = work_identity("web", namespace, Some(&cluster), &works, &mut cluster_labels);
        assert!(existing.is_none(), "the ResourceEnvelope's Work is not the ClusterResourceEnvelope's");
        assert_ne!(cluster_name, name);
        assert_eq!(cluster_labels[ENVELOPE_TYPE_LABEL], "ClusterResourceEnvelope");
        assert!(cluster_labels.get(ENVELOPE_NAMESPACE_LABEL).is_none(), "{cluster_labels}");
    }

    #[test]
    fn overrides_reach_into_envelope_custom_resources_but_not_the_envelope() {
        let everywhere = json!({"metadata": {"name": "label-app"}, "spec": {
            "clusterResourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": "app"}],
            "policy": {"overrideRules": [{"clusterSelector": {"clusterSelectorTerms": []},
                "jsonPatchOverrides": [{"op": "add", "path": "/metadata/labels", "value": {"member": "${MEMBER-CLUSTER-NAME}"}}]}]}}});
        let selected = parking_lot::Mutex::default();
        let overrides = [everywhere];
        let shared = Shared {
            members: &[],
            candidates: &[],
            selected: &selected,
            cluster_overrides: &overrides,
            resource_overrides: &[],
            now: jiff::Timestamp::now(),
        };
        let member = json!({"metadata": {"name": "m1"}});
        let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "app"}});
        let (main, envelopes, any) = member_loads(&[plain, resource_envelope()], &member, &shared).unwrap();
        assert!(any);
        assert_eq!(main.len(), 1);
        assert_eq!(main[0]["metadata"]["labels"]["member"], "m1");
        assert_eq!(envelopes.len(), 1);
        assert_eq!(envelopes[0].0, resource_envelope(), "the envelope itself is not overridden");
        assert_eq!(envelopes[0].1[0]["kind"], "ResourceQuota");
        assert_eq!(envelopes[0].1[0]["metadata"]["labels"]["member"], "m1", "what it wraps is");
    }
}
