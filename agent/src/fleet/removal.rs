//! What the agent takes away from the member: everything it applied when the member
//! leaves, a deleted Work's objects, and, in the sweep, objects no Work wants any more.

use super::{key, manifest, text, to_value, Applier, Resolved};
use anyhow::Context;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde_json::Value;
use std::sync::atomic::Ordering;

impl Applier {
    /// Leaves, unless it has already: removes everything applied and lets go of the
    /// Works, then wakes the heartbeat to report Left. A failure is tried again next tick.
    pub(super) async fn leave_once(&mut self) {
        if self.left.load(Ordering::Relaxed) {
            return;
        }
        match self.leave().await {
            Ok(removed) => {
                tracing::info!(removed, "left the fleet: every object applied from a Work is removed");
                self.reconciled.clear();
                self.pending.clear();
                self.announced.clear();
                self.left.store(true, Ordering::Relaxed);
                self.beat_now.notify_one();
            }
            Err(error) => tracing::warn!(error = %format!("{error:#}"), "leaving failed; retrying"),
        }
    }

    /// Deletes every object of the member applied from a Work of this member's namespace
    /// (whatever the Works still want: the member is leaving), then takes the agent's
    /// finalizer off every Work. How many objects went.
    async fn leave(&mut self) -> anyhow::Result<usize> {
        let works = self.list_works().await?;
        for work in &works {
            self.learn_types(work).await;
        }
        let selector = ListParams::default().labels(manifest::WORK_LABEL);
        let mut removed = 0;
        for found in self.applied_types.values() {
            let objects = self.applied(found, &selector).await?;
            for object in objects {
                if manifest::applied_from(&object, &self.namespace).is_some() {
                    self.delete(found, &object).await?;
                    removed += 1;
                }
            }
        }
        for work in &works {
            self.set_finalizer(text(work, "/metadata/name"), false).await?;
        }
        Ok(removed)
    }

    /// Adds the member's resources of `work`'s manifests to those the sweep and the
    /// clean-up list: an earlier run may have applied them.
    async fn learn_types(&mut self, work: &Value) {
        for entry in manifest::manifests(work) {
            let Some((group, version, kind)) = manifest::group_version_kind(entry) else { continue };
            if let Ok(Some(found)) = self.resolve(&GroupVersionKind::gvk(&group, &version, &kind)).await {
                self.applied_types.entry(key(&found.resource)).or_insert(found);
            }
        }
    }

    /// Deletes what the agent applied from Work `name`, being deleted, then lets go of it.
    pub(super) async fn clean_up(&mut self, name: &str, work: &Value) -> anyhow::Result<()> {
        if !manifest::holds_finalizer(work) {
            return Ok(());
        }
        // What this run has not applied yet (applied by an earlier run) is listed too.
        self.learn_types(work).await;
        let selector =
            ListParams::default().labels(&format!("{}={}", manifest::WORK_LABEL, manifest::label_value(name)));
        // Another placement's Work may want the same object: then it stays.
        let mut others = self.list_works().await?;
        others.retain(|w| text(w, "/metadata/name") != name);
        let mut removed = 0;
        for found in self.applied_types.values() {
            let objects = self.applied(found, &selector).await?;
            let (group, kind) = (found.resource.group.as_str(), found.resource.kind.as_str());
            for object in objects {
                if manifest::applied_from(&object, &self.namespace) != Some(name) {
                    continue;
                }
                let (namespace, object_name) = (text(&object, "/metadata/namespace"), text(&object, "/metadata/name"));
                if others.iter().any(|w| manifest::wanted(Some(w), group, kind, namespace, object_name)) {
                    continue;
                }
                self.delete(found, &object).await?;
                removed += 1;
            }
        }
        self.set_finalizer(name, false).await?;
        tracing::info!(work = name, removed, "a deleted Work's objects are removed from the member");
        Ok(())
    }

    /// Deletes the objects of our Works that no Work wants any more: their Work is gone or
    /// no longer names them. `works` is a full list; each Work is read again just before
    /// one of its objects goes.
    pub(super) async fn sweep(&self, works: &[Value]) -> anyhow::Result<()> {
        let selector = ListParams::default().labels(manifest::WORK_LABEL);
        for found in self.applied_types.values() {
            let objects = self.applied(found, &selector).await?;
            let (group, kind) = (found.resource.group.as_str(), found.resource.kind.as_str());
            for object in objects {
                let Some(work) = manifest::applied_from(&object, &self.namespace) else { continue };
                let (namespace, name) = (text(&object, "/metadata/namespace"), text(&object, "/metadata/name"));
                // Wanted by the Work that applied it last, or by another (two placements
                // may place one object): it stays.
                if works.iter().any(|w| manifest::wanted(Some(w), group, kind, namespace, name)) {
                    continue;
                }
                let current = self.works.get_opt(work).await.with_context(|| format!("read Work {work}"))?;
                if manifest::wanted(current.map(|w| to_value(&w)).as_ref(), group, kind, namespace, name) {
                    continue;
                }
                tracing::info!(work, kind, namespace, name, "removing an object no Work wants any more");
                self.delete(found, &object).await?;
            }
        }
        Ok(())
    }

    /// Every Work of the member's namespace.
    async fn list_works(&self) -> anyhow::Result<Vec<Value>> {
        let list = self.works.list(&ListParams::default()).await.context("list the Works")?;
        Ok(list.items.iter().map(to_value).collect())
    }

    /// The member's objects of one applied resource that `selector` matches; none when
    /// the member no longer serves the resource.
    async fn applied(&self, found: &Resolved, selector: &ListParams) -> anyhow::Result<Vec<Value>> {
        let api: Api<DynamicObject> = Api::all_with(self.member.clone(), &found.resource);
        match api.list(selector).await {
            Ok(list) => Ok(list.items.iter().map(to_value).collect()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
            Err(error) => Err(error).with_context(|| format!("list the member's {}", found.resource.plural)),
        }
    }

    /// Deletes one object of the member; one already gone is fine.
    async fn delete(&self, found: &Resolved, object: &Value) -> anyhow::Result<()> {
        let name = text(object, "/metadata/name");
        let api: Api<DynamicObject> = match text(object, "/metadata/namespace") {
            "" => Api::all_with(self.member.clone(), &found.resource),
            namespace => Api::namespaced_with(self.member.clone(), namespace, &found.resource),
        };
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error).with_context(|| format!("delete {} {name} from the member", found.resource.kind)),
        }
    }
}
