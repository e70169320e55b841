//! Storage rules on a temporary RocksDB store, in-process: no shard binary, no HTTP. The
//! core here has the built-in table with its generic strategies only, which is all the
//! storage layer may rely on.

use super::*;
use crate::registry::Core;

use store::{Store, StoreOptions};

struct Fixture {
    core: Core,
    _dir: tempfile::TempDir,
}

const CLUSTER: &str = "c1";

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = Store::open(dir.path(), StoreOptions::default()).expect("open store");
    let core = Core::new(store, crate::strategy::kube_registry());
    let namespaces = core.registry.namespaces();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    create(&core, &namespaces, CLUSTER, ns, WriteOptions::default()).await.expect("create namespace");
    Fixture { core, _dir: dir }
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}})
}

fn at(name: &str) -> ObjectRef<'_> {
    ObjectRef { cluster: CLUSTER, namespace: Some("default"), name }
}

impl Fixture {
    fn config_maps(&self) -> std::sync::Arc<ResourceType> {
        self.core.registry.get("", "v1", "configmaps").expect("configmaps row")
    }

    async fn create(&self, object: Value) -> ApiResult<Value> {
        create(&self.core, &self.config_maps(), CLUSTER, object, WriteOptions::default()).await
    }

    fn stored(&self, name: &str) -> Option<(Value, u64)> {
        get(&self.core, &self.config_maps(), &at(name)).ok()
    }
}

#[tokio::test]
async fn create_fills_server_fields_and_refuses_a_taken_name() {
    let f = fixture().await;
    let created = f.create(config_map("a")).await.unwrap();
    assert!(meta::meta_str(&created, "uid").is_some_and(|uid| uid.len() == 36));
    assert!(meta::meta_str(&created, "creationTimestamp").is_some());
    assert_eq!(
        meta::annotations(&created).get(protocol::wellknown::CLUSTER_ANNOTATION).map(String::as_str),
        Some(CLUSTER)
    );
    let (stored, rv) = f.stored("a").unwrap();
    assert_eq!(meta::meta_str(&created, "resourceVersion"), Some(rv.to_string().as_str()));
    assert_eq!(stored["data"], json!({"k": "v"}));
    assert_eq!(f.create(config_map("a")).await.unwrap_err().reason, "AlreadyExists");
}

#[tokio::test]
async fn create_in_a_missing_or_terminating_namespace_is_refused() {
    let f = fixture().await;
    let mut elsewhere = config_map("a");
    elsewhere["metadata"]["namespace"] = json!("nowhere");
    assert_eq!(f.create(elsewhere).await.unwrap_err().code, 404);
    let namespaces = f.core.registry.namespaces();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "going"}});
    create(&f.core, &namespaces, CLUSTER, ns, WriteOptions::default()).await.unwrap();
    let going = ObjectRef { cluster: CLUSTER, namespace: None, name: "going" };
    let none = DeletePreconditions::default();
    match delete(&f.core, &namespaces, &going, &none, WriteOptions::default()).await.unwrap() {
        Deleted::Pending(ns) => assert_eq!(ns["status"]["phase"], "Terminating"),
        Deleted::Gone(_) => panic!("a namespace waits for its spec finalizer"),
    }
    let mut inside = config_map("b");
    inside["metadata"]["namespace"] = json!("going");
    assert_eq!(f.create(inside).await.unwrap_err().code, 403);
}

#[tokio::test]
async fn generate_name_draws_a_name_with_the_prefix() {
    let f = fixture().await;
    let mut object = config_map("x");
    meta::metadata_mut(&mut object).remove("name");
    meta::set_meta_str(&mut object, "generateName", Some("job-"));
    let first = f.create(object.clone()).await.unwrap();
    let second = f.create(object).await.unwrap();
    let (a, b) = (meta::name(&first).unwrap(), meta::name(&second).unwrap());
    assert!(a.starts_with("job-") && a.len() > 4, "{a}");
    assert_ne!(a, b);
    assert!(f.stored(a).is_some() && f.stored(b).is_some());
}

#[tokio::test]
async fn dry_run_writes_nothing_but_answers_as_the_write_would() {
    let f = fixture().await;
    let dry = WriteOptions { dry_run: true };
    let answered = create(&f.core, &f.config_maps(), CLUSTER, config_map("a"), dry).await.unwrap();
    assert_eq!(meta::name(&answered), Some("a"));
    assert!(f.stored("a").is_none(), "a dry-run create stores nothing");
    f.create(config_map("a")).await.unwrap();
    let again = create(&f.core, &f.config_maps(), CLUSTER, config_map("a"), dry).await;
    assert_eq!(again.unwrap_err().code, 409, "a dry run of a taken name conflicts");
    let (_, rv) = f.stored("a").unwrap();
    let rt = f.config_maps();
    let deleted = delete(&f.core, &rt, &at("a"), &DeletePreconditions::default(), dry).await.unwrap();
    assert!(matches!(deleted, Deleted::Gone(_)));
    assert_eq!(f.stored("a").map(|(_, rv)| rv), Some(rv), "a dry-run delete removes nothing");
    let a = at("a");
    let updated = guaranteed_update(&f.core, &rt, &a, None, dry, |old| {
        let mut new = old.clone();
        new["data"]["k"] = json!("changed");
        Ok(new)
    });
    assert_eq!(updated.await.unwrap()["data"]["k"], "changed");
    assert_eq!(f.stored("a").unwrap().0["data"]["k"], "v", "a dry-run update changes nothing");
}

#[tokio::test]
async fn a_no_op_update_writes_nothing() {
    let f = fixture().await;
    f.create(config_map("a")).await.unwrap();
    let (_, rv) = f.stored("a").unwrap();
    let rt = f.config_maps();
    let a = at("a");
    let same = guaranteed_update(&f.core, &rt, &a, None, WriteOptions::default(), |old| Ok(old.clone()));
    assert_eq!(meta::meta_str(&same.await.unwrap(), "resourceVersion"), Some(rv.to_string().as_str()));
    assert_eq!(f.stored("a").unwrap().1, rv);
    assert_eq!(f.core.store.current_rv(), rv, "nothing was committed");
}

#[tokio::test]
async fn delete_preconditions_must_match() {
    let f = fixture().await;
    f.create(config_map("a")).await.unwrap();
    let (object, rv) = f.stored("a").unwrap();
    let rt = f.config_maps();
    let options = WriteOptions::default();
    let wrong_uid = DeletePreconditions { uid: Some("not-it".into()), resource_version: None };
    let error = delete(&f.core, &rt, &at("a"), &wrong_uid, options).await.unwrap_err();
    assert_eq!(error.code, 409);
    assert!(error.message.contains("Precondition failed: UID"), "{}", error.message);
    let stale = DeletePreconditions { uid: None, resource_version: Some((rv - 1).to_string()) };
    assert_eq!(delete(&f.core, &rt, &at("a"), &stale, options).await.unwrap_err().code, 409);
    assert!(f.stored("a").is_some());
    let exact = DeletePreconditions {
        uid: meta::meta_str(&object, "uid").map(str::to_string),
        resource_version: Some(rv.to_string()),
    };
    assert!(matches!(delete(&f.core, &rt, &at("a"), &exact, options).await.unwrap(), Deleted::Gone(_)));
    assert!(f.stored("a").is_none());
    assert_eq!(delete(&f.core, &rt, &at("a"), &exact, options).await.unwrap_err().code, 404);
}

#[tokio::test]
async fn finalizers_hold_a_deletion_until_the_last_is_removed() {
    let f = fixture().await;
    let mut object = config_map("a");
    meta::set_finalizers(&mut object, &["example.com/one".to_string(), "example.com/two".to_string()]);
    f.create(object).await.unwrap();
    let rt = f.config_maps();
    let none = DeletePreconditions::default();
    let options = WriteOptions::default();
    let Deleted::Pending(pending) = delete(&f.core, &rt, &at("a"), &none, options).await.unwrap() else {
        panic!("finalizers hold the object");
    };
    assert!(meta::is_deleting(&pending));
    // A second delete changes nothing and still waits.
    assert!(matches!(delete(&f.core, &rt, &at("a"), &none, options).await.unwrap(), Deleted::Pending(_)));
    remove_finalizer(&f.core, &rt, &at("a"), "example.com/one").await.unwrap();
    assert!(f.stored("a").is_some_and(|(o, _)| meta::finalizers(&o) == vec!["example.com/two".to_string()]));
    remove_finalizer(&f.core, &rt, &at("a"), "example.com/two").await.unwrap();
    assert!(f.stored("a").is_none(), "removing the last finalizer completes the deletion");
}

#[tokio::test]
async fn namespaces_wait_for_their_spec_finalizer_and_some_are_protected() {
    let f = fixture().await;
    let namespaces = f.core.registry.namespaces();
    let none = DeletePreconditions::default();
    let options = WriteOptions::default();
    let default = ObjectRef { cluster: CLUSTER, namespace: None, name: "default" };
    assert_eq!(delete(&f.core, &namespaces, &default, &none, options).await.unwrap_err().code, 403);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    create(&f.core, &namespaces, CLUSTER, ns, options).await.unwrap();
    let team = ObjectRef { cluster: CLUSTER, namespace: None, name: "team" };
    assert!(matches!(delete(&f.core, &namespaces, &team, &none, options).await.unwrap(), Deleted::Pending(_)));
    let again = delete(&f.core, &namespaces, &team, &none, options).await.unwrap_err();
    assert_eq!(again.code, 409, "a terminating namespace says its content is being removed");
    finalize_namespace(&f.core, CLUSTER, "team").await.unwrap();
    assert!(get(&f.core, &namespaces, &team).is_err(), "the spec finalizer was the last holder");
}

#[tokio::test]
async fn stale_writes_conflict_and_guaranteed_update_retries() {
    let f = fixture().await;
    f.create(config_map("a")).await.unwrap();
    let rt = f.config_maps();
    let (old, rv) = f.stored("a").unwrap();
    let mut first = old.clone();
    first["data"]["k"] = json!("first");
    replace(&f.core, &rt, &at("a"), &old, rv, first, WriteOptions::default()).await.unwrap();
    let mut second = old.clone();
    second["data"]["k"] = json!("second");
    let stale = replace(&f.core, &rt, &at("a"), &old, rv, second, WriteOptions::default()).await;
    assert_eq!(stale.unwrap_err().code, 409, "a write based on an old version conflicts");
    let mut calls = 0;
    let a = at("a");
    let updated = guaranteed_update(&f.core, &rt, &a, None, WriteOptions::default(), |current| {
        calls += 1;
        let mut new = current.clone();
        new["data"]["n"] = json!(calls.to_string());
        Ok(new)
    });
    assert_eq!(updated.await.unwrap()["data"], json!({"k": "first", "n": "1"}));
}
