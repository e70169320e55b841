//! A shard started in-process with `shard::start::start`, driven over HTTPS by kube-rs:
//! the path the binary takes, without spawning it.

use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use shard::start::{start, Config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_root_shard_serves_kubernetes_clients() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let data_dir = dir.path().to_str().expect("utf-8 path").to_string();
    let flags = ["atoll-shard", "--root", "--listen", "127.0.0.1:0", "--data-dir", &data_dir];
    let running = start(Config::parse_from(flags)).await.expect("start the shard");
    assert!(running.base_url.starts_with("https://127.0.0.1:"), "{}", running.base_url);
    let client = client(&running.admin_kubeconfig).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("hello".into());
    cm.data = Some([("k".to_string(), "v".to_string())].into());
    let created = config_maps.create(&PostParams::default(), &cm).await.expect("create a ConfigMap");
    assert!(created.metadata.uid.is_some());
    assert_eq!(config_maps.get("hello").await.expect("read it back").data, cm.data);
    let error = config_maps.create(&PostParams::default(), &cm).await.expect_err("the name is taken");
    assert!(matches!(error, kube::Error::Api(ref status) if status.code == 409), "{error}");
    config_maps.delete("hello", &DeleteParams::default()).await.expect("delete it");
    assert!(config_maps.get_opt("hello").await.expect("read after delete").is_none());
    running.stop().await;
}

async fn client(kubeconfig: &std::path::Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).expect("read admin.kubeconfig");
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.expect("kube config");
    kube::Client::try_from(config).expect("kube client")
}
