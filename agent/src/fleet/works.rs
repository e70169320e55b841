//! The applier's loop over the Works: the watch, the periodic full pass and retries, and
//! one pass over a Work (held with the agent's finalizer, its manifests applied, its
//! status reported).

use super::status::{self, Identifier, Outcome};
use super::{manifest, now, text, to_value, Applier, FINALIZER_ATTEMPTS, FULL_PASS, RETRY};
use anyhow::Context;
use futures::StreamExt;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::Instant;
use tracing::Instrument;

impl Applier {
    /// Follows the Works until the watch ends (it does not: it retries).
    pub(super) async fn follow(&mut self) -> anyhow::Result<()> {
        let stream = watcher::watcher(self.works.clone(), watcher::Config::default()).default_backoff();
        futures::pin_mut!(stream);
        let mut tick = tokio::time::interval(RETRY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_full_pass: Option<Instant> = None;
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    Some(Ok(Event::Apply(work) | Event::InitApply(work))) => self.changed(&to_value(&work)).await,
                    Some(Ok(Event::Delete(work))) => self.forget(work.metadata.name.as_deref().unwrap_or_default()),
                    Some(Ok(Event::Init | Event::InitDone)) => {}
                    Some(Err(error)) => tracing::warn!(%error, "watching the Works failed; retrying"),
                    None => anyhow::bail!("the watch of the Works ended"),
                },
                _ = tick.tick() => {
                    if self.leaving() {
                        self.leave_once().await;
                    } else if last_full_pass.is_none_or(|at| at.elapsed() >= FULL_PASS) {
                        self.full_pass().await;
                        last_full_pass = Some(Instant::now());
                    } else {
                        self.retry_pending().await;
                    }
                }
            }
        }
    }

    fn leaving(&self) -> bool {
        self.leaving.load(Ordering::Relaxed)
    }

    /// A Work the watch reports.
    async fn changed(&mut self, work: &Value) {
        let name = text(work, "/metadata/name");
        let unchanged = self.reconciled.get(name) == Some(&manifest::fingerprint(work));
        if self.leaving() || (unchanged && !self.pending.contains(name)) {
            return;
        }
        self.handle(work).await;
    }

    fn forget(&mut self, name: &str) {
        self.pending.remove(name);
        self.reconciled.remove(name);
        self.announced.remove(name);
    }

    /// Every Work applied again, then the sweep (only after a full list).
    async fn full_pass(&mut self) {
        if self.leaving() {
            return;
        }
        let works: Vec<Value> = match self.works.list(&ListParams::default()).await {
            Ok(list) => list.items.iter().map(to_value).collect(),
            Err(error) => return tracing::warn!(%error, "listing the Works failed; retrying"),
        };
        self.pending.clear();
        for work in &works {
            self.handle(work).await;
        }
        if let Err(error) = self.sweep(&works).await {
            tracing::warn!(error = %format!("{error:#}"), "removing objects no Work wants failed; retrying");
        }
    }

    /// The Works not settled at their last pass, read again.
    async fn retry_pending(&mut self) {
        if self.leaving() {
            return;
        }
        for name in self.pending.clone() {
            match self.works.get_opt(&name).await {
                Ok(Some(work)) => self.handle(&to_value(&work)).await,
                Ok(None) => self.forget(&name),
                Err(error) => tracing::warn!(%error, work = %name, "reading a Work failed; retrying"),
            }
        }
    }

    /// One pass over a Work, and the books: settled, or pending.
    async fn handle(&mut self, work: &Value) {
        let name = text(work, "/metadata/name").to_string();
        let span = crate::traced::work_span("work.reconcile", "works", None, Some(&self.namespace), &name);
        match self.reconcile(&name, work).instrument(span.clone()).await {
            Ok(true) => {
                self.pending.remove(&name);
                self.reconciled.insert(name, manifest::fingerprint(work));
            }
            Ok(false) => {
                self.reconciled.remove(&name);
                self.pending.insert(name);
            }
            Err(error) => {
                span.in_scope(|| {
                    crate::traced::failed();
                    tracing::warn!(error = %format!("{error:#}"), work = %name, "a pass over a Work failed; retrying")
                });
                self.reconciled.remove(&name);
                self.pending.insert(name);
            }
        }
    }

    /// Cleans up after a Work being deleted, or holds it, applies its manifests and
    /// reports its status. Whether it is settled (nothing left to wait for).
    async fn reconcile(&mut self, name: &str, work: &Value) -> anyhow::Result<bool> {
        if manifest::deleting(work) {
            self.clean_up(name, work).await?;
            return Ok(true);
        }
        if manifest::finalizer_patch(work, true).is_some() {
            self.set_finalizer(name, true).await?;
        }
        let manifests = manifest::manifests(work);
        let mut outcomes: Vec<Option<Outcome>> = vec![None; manifests.len()];
        self.crd_applied = false;
        for index in manifest::apply_order(manifests) {
            outcomes[index] = Some(self.apply(name, index, &manifests[index]).await);
        }
        let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
        let generation = work.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        let previous = work.get("status").cloned().unwrap_or(Value::Null);
        let reported = status::work_status(&previous, generation, &outcomes, &now());
        if !status::same_status(&previous, &reported) {
            for outcome in &outcomes {
                if let Err(message) = &outcome.result {
                    let Identifier { ordinal, kind, namespace, name: object, .. } = &outcome.identifier;
                    tracing::warn!(work = name, ordinal, %kind, %namespace, %object, %message, "a manifest is not applied");
                }
            }
            let patch = json!({ "status": reported });
            self.works
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .with_context(|| format!("write the status of Work {name}"))?;
        }
        if outcomes.iter().all(|outcome| outcome.result.is_ok()) && self.announced.get(name) != Some(&generation) {
            tracing::info!(work = name, generation, manifests = outcomes.len(), "applied a Work");
            self.announced.insert(name.to_string(), generation);
        }
        Ok(outcomes.iter().all(Outcome::settled))
    }

    /// Puts the agent's finalizer on Work `name` (`held`) or takes it off, re-reading the
    /// Work when it changed meanwhile (409).
    pub(super) async fn set_finalizer(&self, name: &str, held: bool) -> anyhow::Result<()> {
        for _ in 0..FINALIZER_ATTEMPTS {
            let Some(work) = self.works.get_opt(name).await.with_context(|| format!("read Work {name}"))? else {
                return Ok(());
            };
            let work = to_value(&work);
            // A Work being deleted takes no new finalizer; the sweep removes its objects.
            if held && manifest::deleting(&work) {
                return Ok(());
            }
            let Some(patch) = manifest::finalizer_patch(&work, held) else { return Ok(()) };
            match self.works.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
                Err(error) => return Err(error).with_context(|| format!("update the finalizers of Work {name}")),
            }
        }
        anyhow::bail!("the finalizers of Work {name} kept changing")
    }
}
