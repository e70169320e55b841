//! One manifest applied to the member with server-side apply, its kind found through the
//! member's discovery (cached, asked again right after a CustomResourceDefinition was
//! applied).

use super::status::{self, Identifier, Outcome};
use super::{key, manifest, refused, text, to_value, Applier, Resolved, APPLY_ATTEMPTS, DISCOVERY_ATTEMPTS};
use anyhow::Context;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use serde_json::Value;
use std::time::Duration;

impl Applier {
    /// Applies the manifest at `ordinal` of Work `work`.
    pub(super) async fn apply(&mut self, work: &str, ordinal: usize, manifest: &Value) -> Outcome {
        let mut identifier = Identifier { ordinal, ..Identifier::default() };
        let Some((group, version, kind)) = manifest::group_version_kind(manifest) else {
            return Outcome::failed(identifier, "the manifest names no apiVersion or kind");
        };
        identifier.group.clone_from(&group);
        identifier.version.clone_from(&version);
        identifier.kind.clone_from(&kind);
        identifier.name = text(manifest, "/metadata/name").to_string();
        if identifier.name.is_empty() {
            return Outcome::failed(identifier, "the manifest has no metadata.name");
        }
        let gvk = GroupVersionKind::gvk(&group, &version, &kind);
        let found = match self.resolve(&gvk).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                let message = format!("the member serves no {kind} in {}", gvk.api_version());
                return Outcome::failed(identifier, message);
            }
            Err(error) => return Outcome::failed(identifier, format!("{error:#}")),
        };
        identifier.resource.clone_from(&found.resource.plural);
        let namespace = found.namespaced.then(|| match text(manifest, "/metadata/namespace") {
            "" => "default".to_string(),
            namespace => namespace.to_string(),
        });
        identifier.namespace = namespace.clone().unwrap_or_default();
        let object = manifest::prepared(manifest, namespace.as_deref(), work, &self.namespace);
        self.applied_types.entry(key(&found.resource)).or_insert_with(|| found.clone());
        let api: Api<DynamicObject> = match &namespace {
            Some(namespace) => Api::namespaced_with(self.member.clone(), namespace, &found.resource),
            None => Api::all_with(self.member.clone(), &found.resource),
        };
        let params = PatchParams::apply(&self.field_manager).force();
        let mut attempt = 1;
        let result = loop {
            match api.patch(&identifier.name, &params, &Patch::Apply(&object)).await {
                Ok(live) => break Ok(status::availability(&group, &kind, &to_value(&live))),
                Err(kube::Error::Api(refusal)) if refused(refusal.code) => {
                    if refusal.code == 404 {
                        // The resource may have gone from the member: discover it again next time.
                        self.resolved.remove(&gvk);
                    }
                    break Err(refusal.message.clone());
                }
                Err(error) if attempt >= APPLY_ATTEMPTS => break Err(format!("apply to the member: {error}")),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
                    attempt += 1;
                }
            }
        };
        if result.is_ok() && group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" {
            self.crd_applied = true;
        }
        Outcome { identifier, result }
    }

    /// The member's resource of `gvk`, discovered once and cached; `None` when the member
    /// does not serve it (asked again next time: a definition may come).
    pub(super) async fn resolve(&mut self, gvk: &GroupVersionKind) -> anyhow::Result<Option<Resolved>> {
        if let Some(found) = self.resolved.get(gvk) {
            return Ok(Some(found.clone()));
        }
        let attempts = if self.crd_applied { DISCOVERY_ATTEMPTS } else { 1 };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            match kube::discovery::pinned_kind(&self.member, gvk).await {
                Ok((resource, capabilities)) => {
                    let found = Resolved { resource, namespaced: capabilities.scope == Scope::Namespaced };
                    self.resolved.insert(gvk.clone(), found.clone());
                    return Ok(Some(found));
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(kube::Error::Discovery(_)) => {}
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("discover {} {} in the member", gvk.api_version(), gvk.kind))
                }
            }
        }
        Ok(None)
    }
}
