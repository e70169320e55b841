//! The Kubernetes manifests in `deploy/kubernetes/`, checked without a cluster (there is
//! none on the machines that run these tests).
//!
//! The pure checks read every manifest into its typed `k8s-openapi` struct and compare
//! what the manifests say with each other and with the programs they run:
//!
//! - every document is a kind this installation uses, and every field it sets is one its
//!   type has (a misspelt `readinesProbe` would otherwise be dropped silently, by the
//!   parser here as by the API server);
//! - the kustomization lists every manifest, and no manifest names its own namespace;
//! - every `--flag` a container passes is one its program lists in `--help`, every
//!   `$(VAR)` it uses is defined in its environment, and its `--listen` port is the
//!   container port its probes and Services use;
//! - every volume, Secret, ConfigMap and claim template a pod refers to exists (the PKI
//!   Secret is created by hand, so by the command in `deploy/kubernetes/README.md`), every
//!   Service selects pods and every StatefulSet's headless Service selects its pods;
//! - every peer URL (`--root-shard`, `--cache-server`, ...) names a Service and its port.
//!
//! The last test runs each workload's pod as a kubelet would, on loopback: the Secret
//! holds the files of a real generated PKI, the init container runs its script, then the
//! server starts with exactly the manifest's arguments (environment expanded, volumes
//! mapped to temporary directories, the listen port moved to a free one). Each probe path
//! must answer 200 without a client certificate, each server's certificate must cover
//! the Service names its peers call it by, and no server may have created a CA of its
//! own (it would, silently, for a CA the Secret lacks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use http::StatusCode;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Namespace, PersistentVolumeClaim, PodTemplateSpec, Probe, Secret, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tests::process::{log_tail, OwnedChild};
use tests::TlsHttp;

/// The manifests, relative to the repository.
const MANIFEST_DIR: &str = "deploy/kubernetes";
/// The kustomization, which is no Kubernetes object.
const KUSTOMIZATION: &str = "kustomization.yaml";
/// Where the Secrets created by hand are created: the commands in this file.
const README: &str = "README.md";
/// The programs a main container may run.
const SERVER_PROGRAMS: [&str; 3] = ["atoll-shard", "atoll-cache-server", "atoll-front-proxy"];
/// What an init container may run: the shell that copies the PKI into place.
const INIT_PROGRAM: &str = "sh";
/// Flags whose values are URLs of other processes of the installation.
const PEER_URL_FLAGS: [&str; 4] = ["--root-shard", "--cache-server", "--cache-watch-server", "--parent"];
/// The deepest indent at which clap's `--help` starts an option line (descriptions in
/// its next-line layout start at 10).
const OPTION_INDENT_MAX: usize = 6;
/// What `status.podIP` is in the pods run here.
const POD_IP: &str = "127.0.0.1";
/// The bound on a server's start (RocksDB opened, listening): it bounds a hang, it is no
/// speed goal (a start takes about a second).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The bound on a server's exit after SIGTERM, as kubelet's grace period would be.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const POLL_INTERVAL: Duration = Duration::from_millis(100);
const LOG_TAIL_LINES: usize = 40;
/// How often a pod is started again when its free port was taken meanwhile.
const PORT_ATTEMPTS: usize = 3;

// ---------------------------------------------------------------------------------------
// Reading the manifests
// ---------------------------------------------------------------------------------------

/// One Kubernetes object of the manifests, typed.
#[derive(Debug)]
enum Object {
    Namespace(Box<Namespace>),
    ConfigMap(Box<ConfigMap>),
    Secret(Box<Secret>),
    Service(Box<Service>),
    StatefulSet(Box<StatefulSet>),
    Deployment(Box<Deployment>),
    PodDisruptionBudget(Box<PodDisruptionBudget>),
}

/// An object and where it was written.
#[derive(Debug)]
struct Manifest {
    /// `file#document` (from 1), for messages.
    place: String,
    object: Object,
}

/// The parts of a kustomization these manifests use; anything else is refused, so a new
/// field gets a look (and a check) here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Kustomization {
    api_version: String,
    kind: String,
    namespace: String,
    resources: Vec<String>,
    #[serde(default)]
    images: Vec<KustomizeImage>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KustomizeImage {
    name: String,
    new_name: Option<String>,
    new_tag: Option<String>,
}

fn manifest_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(MANIFEST_DIR)
}

/// The YAML files of the manifest directory, by name, the kustomization excluded.
fn manifest_files() -> BTreeMap<String, String> {
    let dir = manifest_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    let mut files = BTreeMap::new();
    for entry in entries {
        let path = entry.expect("read a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if (name.ends_with(".yaml") || name.ends_with(".yml")) && name != KUSTOMIZATION {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            files.insert(name, text);
        }
    }
    files
}

fn kustomization() -> Kustomization {
    let path = manifest_dir().join(KUSTOMIZATION);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{KUSTOMIZATION}: {e}"))
}

/// Every document of every manifest, typed; panics naming each document that is not.
fn manifests() -> Vec<Manifest> {
    let mut manifests = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in manifest_files() {
        for (index, document) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
            let place = format!("{file}#{}", index + 1);
            let parsed = serde_yaml_ng::Value::deserialize(document)
                .with_context(|| format!("{place}: parse YAML"))
                .and_then(|yaml| serde_json::to_value(yaml).with_context(|| format!("{place}: convert to JSON")));
            match parsed {
                // A stream may start with comments and `---`: no document there.
                Ok(Value::Null) => {}
                Ok(document) => match typed_object(&document) {
                    Ok(object) => manifests.push(Manifest { place, object }),
                    Err(error) => problems.push(format!("{place}: {error:#}")),
                },
                Err(error) => problems.push(format!("{error:#}")),
            }
        }
    }
    assert!(problems.is_empty(), "manifests that do not parse:\n{}", problems.join("\n"));
    manifests
}

fn kind_of(object: &Object) -> &'static str {
    match object {
        Object::Namespace(_) => "Namespace",
        Object::ConfigMap(_) => "ConfigMap",
        Object::Secret(_) => "Secret",
        Object::Service(_) => "Service",
        Object::StatefulSet(_) => "StatefulSet",
        Object::Deployment(_) => "Deployment",
        Object::PodDisruptionBudget(_) => "PodDisruptionBudget",
    }
}

fn typed_object(document: &Value) -> anyhow::Result<Object> {
    let api_version = document["apiVersion"].as_str().unwrap_or_default();
    let kind = document["kind"].as_str().unwrap_or_default();
    Ok(match (api_version, kind) {
        ("v1", "Namespace") => Object::Namespace(typed(document)?),
        ("v1", "ConfigMap") => Object::ConfigMap(typed(document)?),
        ("v1", "Secret") => Object::Secret(typed(document)?),
        ("v1", "Service") => Object::Service(typed(document)?),
        ("apps/v1", "StatefulSet") => Object::StatefulSet(typed(document)?),
        ("apps/v1", "Deployment") => Object::Deployment(typed(document)?),
        ("policy/v1", "PodDisruptionBudget") => Object::PodDisruptionBudget(typed(document)?),
        _ => bail!("unknown kind {kind:?} of apiVersion {api_version:?}: add it to this test's Object first"),
    })
}

/// Parses `document` into `T` and refuses fields `T` does not have: k8s-openapi, like
/// the API server, drops unknown fields silently, so the parsed value is written back
/// and must still hold everything the document said.
fn typed<T: DeserializeOwned + Serialize>(document: &Value) -> anyhow::Result<Box<T>> {
    let value: T = serde_json::from_value(document.clone()).context("parse into its k8s-openapi type")?;
    let written = serde_json::to_value(&value).context("write the parsed value back")?;
    let mut lost = Vec::new();
    fields_lost(document, &written, "", &mut lost);
    ensure!(lost.is_empty(), "fields its type does not have (misspelt or misplaced?): {}", lost.join(", "));
    Ok(Box::new(value))
}

/// Collects the paths of `original` that `written` lacks or has with another value.
fn fields_lost(original: &Value, written: &Value, path: &str, lost: &mut Vec<String>) {
    match (original, written) {
        (Value::Object(original), Value::Object(written)) => {
            for (key, value) in original {
                let at = format!("{path}.{key}");
                match written.get(key) {
                    Some(kept) => fields_lost(value, kept, &at, lost),
                    None => lost.push(at),
                }
            }
        }
        (Value::Array(original), Value::Array(written)) if original.len() == written.len() => {
            for (index, (value, kept)) in original.iter().zip(written).enumerate() {
                fields_lost(value, kept, &format!("{path}[{index}]"), lost);
            }
        }
        _ if original == written => {}
        _ => lost.push(format!("{path} ({original} became {written})")),
    }
}

// ---------------------------------------------------------------------------------------
// Views of the manifests
// ---------------------------------------------------------------------------------------

/// A StatefulSet or Deployment: what runs pods.
struct Workload<'a> {
    kind: &'static str,
    name: String,
    place: &'a str,
    selector: &'a LabelSelector,
    template: &'a PodTemplateSpec,
    claims: &'a [PersistentVolumeClaim],
    /// A StatefulSet's governing (headless) Service.
    service_name: Option<&'a str>,
}

impl Workload<'_> {
    fn labels(&self) -> BTreeMap<String, String> {
        self.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default()
    }

    fn containers(&self) -> Vec<(bool, &Container)> {
        let spec = self.template.spec.as_ref().expect("a pod template has a spec");
        let init = spec.init_containers.iter().flatten().map(|c| (true, c));
        init.chain(spec.containers.iter().map(|c| (false, c))).collect()
    }

    fn main_container(&self) -> &Container {
        let spec = self.template.spec.as_ref().expect("a pod template has a spec");
        assert_eq!(spec.containers.len(), 1, "{}: one container per pod", self.place);
        &spec.containers[0]
    }

    fn claim_names(&self) -> BTreeSet<String> {
        self.claims.iter().filter_map(|c| c.metadata.name.clone()).collect()
    }

    /// Pod 0's name, as a StatefulSet names it (a Deployment's pods get a suffix; the
    /// manifests must not depend on it).
    fn pod_name(&self) -> String {
        format!("{}-0", self.name)
    }
}

fn workloads(manifests: &[Manifest]) -> Vec<Workload<'_>> {
    let mut workloads = Vec::new();
    for manifest in manifests {
        let place = manifest.place.as_str();
        match &manifest.object {
            Object::StatefulSet(set) => {
                let spec = set.spec.as_ref().unwrap_or_else(|| panic!("{place}: no spec"));
                workloads.push(Workload {
                    kind: "StatefulSet",
                    name: set.metadata.name.clone().unwrap_or_else(|| panic!("{place}: no name")),
                    place,
                    selector: &spec.selector,
                    template: &spec.template,
                    claims: spec.volume_claim_templates.as_deref().unwrap_or_default(),
                    service_name: spec.service_name.as_deref(),
                });
            }
            Object::Deployment(deployment) => {
                let spec = deployment.spec.as_ref().unwrap_or_else(|| panic!("{place}: no spec"));
                workloads.push(Workload {
                    kind: "Deployment",
                    name: deployment.metadata.name.clone().unwrap_or_else(|| panic!("{place}: no name")),
                    place,
                    selector: &spec.selector,
                    template: &spec.template,
                    claims: &[],
                    service_name: None,
                });
            }
            _ => {}
        }
    }
    workloads
}

fn services(manifests: &[Manifest]) -> Vec<(&str, &Service)> {
    let mut services = Vec::new();
    for manifest in manifests {
        if let Object::Service(service) = &manifest.object {
            services.push((manifest.place.as_str(), service.as_ref()));
        }
    }
    services
}

fn service_named<'a>(manifests: &'a [Manifest], name: &str) -> Option<&'a Service> {
    services(manifests).into_iter().map(|(_, s)| s).find(|s| s.metadata.name.as_deref() == Some(name))
}

fn config_maps(manifests: &[Manifest]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut maps = BTreeMap::new();
    for manifest in manifests {
        if let Object::ConfigMap(map) = &manifest.object {
            maps.insert(map.metadata.name.clone().unwrap_or_default(), map.data.clone().unwrap_or_default());
        }
    }
    maps
}

/// Secret name → its keys: those in the manifests, and those `README.md` creates with
/// `kubectl create secret generic NAME --from-file=...` (the PKI, whose keys are not
/// for a repository).
fn secrets(manifests: &[Manifest]) -> BTreeMap<String, BTreeSet<String>> {
    let mut secrets = BTreeMap::new();
    for manifest in manifests {
        if let Object::Secret(secret) = &manifest.object {
            let keys = secret.data.iter().flatten().map(|(k, _)| k.clone());
            let keys = keys.chain(secret.string_data.iter().flatten().map(|(k, _)| k.clone()));
            secrets.insert(secret.metadata.name.clone().unwrap_or_default(), keys.collect());
        }
    }
    let readme = manifest_dir().join(README);
    let text = std::fs::read_to_string(&readme).unwrap_or_else(|e| panic!("read {}: {e}", readme.display()));
    secrets.extend(secrets_created_by(&text));
    secrets
}

/// The Secrets the shell commands in `text` create, with their keys: the key of
/// `--from-file=KEY=PATH` is KEY, of `--from-file=PATH` the file name.
fn secrets_created_by(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    // Continuation lines make one command of several.
    let joined = text.replace("\\\n", " ");
    let mut secrets = BTreeMap::new();
    for line in joined.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.windows(3).position(|w| w == ["create", "secret", "generic"]) else { continue };
        let Some(name) = words.get(at + 3) else { continue };
        let keys = words.iter().filter_map(|word| word.strip_prefix("--from-file=")).map(|source| {
            match source.split_once('=') {
                Some((key, _)) => key.to_string(),
                None => source.rsplit('/').next().unwrap_or(source).to_string(),
            }
        });
        secrets.entry(name.to_string()).or_insert_with(BTreeSet::new).extend(keys);
    }
    secrets
}

/// Whether `selector` (matchLabels only: these manifests use nothing else) selects `labels`.
fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty() && selector.iter().all(|(key, value)| labels.get(key) == Some(value))
}

fn match_labels(selector: &LabelSelector, place: &str) -> BTreeMap<String, String> {
    assert!(selector.match_expressions.is_none(), "{place}: matchExpressions are not checked here; use matchLabels");
    selector.match_labels.clone().unwrap_or_default()
}

/// The program a container runs and its arguments, as the container runtime joins them.
fn command_line(container: &Container) -> (String, Vec<String>) {
    let mut words: Vec<String> =
        container.command.iter().flatten().chain(container.args.iter().flatten()).cloned().collect();
    assert!(!words.is_empty(), "container {} names no program (the image's CMD is --help)", container.name);
    let program = words.remove(0);
    (program, words)
}

/// `--flag=value` or `--flag`; the manifests write values with `=` so that a value
/// can never be taken for a flag or the other way round.
fn split_flag(argument: &str) -> (&str, Option<&str>) {
    match argument.split_once('=') {
        Some((flag, value)) => (flag, Some(value)),
        None => (argument, None),
    }
}

fn flag_value<'a>(arguments: &'a [String], flag: &str) -> Option<&'a str> {
    arguments.iter().map(|a| split_flag(a)).find(|(f, _)| *f == flag).and_then(|(_, v)| v)
}

/// The long flags `program --help` lists (the lines that start with one, so flags named
/// in descriptions do not count).
fn help_flags(program: &str) -> BTreeSet<String> {
    let output = Command::new(tests::binary(program))
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("run {program} --help: {e}"));
    assert!(output.status.success(), "{program} --help: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    let mut flags = BTreeSet::new();
    for line in text.lines() {
        // Flags start a line at clap's option indent; descriptions are indented deeper
        // and may name flags too.
        let indent = line.len() - line.trim_start().len();
        let line = line.trim_start();
        if indent > OPTION_INDENT_MAX {
            continue;
        }
        // `-h, --help` as well as `--listen <LISTEN>`.
        let line = match line.split_once(", ") {
            Some((short, rest)) if short.len() == 2 && short.starts_with('-') => rest,
            _ => line,
        };
        if let Some(rest) = line.strip_prefix("--") {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            flags.insert(format!("--{name}"));
        }
    }
    assert!(flags.contains("--listen"), "{program} --help lists no --listen; is this its help?\n{text}");
    flags
}

/// The `$(NAME)` references in `text` (Kubernetes' expansion syntax; `$$(` escapes).
fn references(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("$(") {
        let escaped = at > 0 && rest[..at].ends_with('$');
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        if !escaped {
            names.push(after[..end].to_string());
        }
        rest = &after[end + 1..];
    }
    names
}

/// Replaces `$(NAME)` by its value, as the kubelet does for command and args.
fn expand(text: &str, environment: &BTreeMap<String, String>) -> String {
    let mut expanded = text.to_string();
    for name in references(text) {
        if let Some(value) = environment.get(&name) {
            expanded = expanded.replace(&format!("$({name})"), value);
        }
    }
    expanded
}

/// The container port a probe or Service port names (by name or number).
fn container_port(container: &Container, port: &IntOrString) -> Option<i32> {
    let ports = container.ports.iter().flatten();
    match port {
        IntOrString::Int(number) => ports.map(|p| p.container_port).find(|p| p == number),
        IntOrString::String(name) => ports.filter(|p| p.name.as_deref() == Some(name)).map(|p| p.container_port).next(),
    }
}

fn probes(container: &Container) -> Vec<(&'static str, &Probe)> {
    let named = [
        ("startupProbe", container.startup_probe.as_ref()),
        ("livenessProbe", container.liveness_probe.as_ref()),
        ("readinessProbe", container.readiness_probe.as_ref()),
    ];
    named.into_iter().filter_map(|(name, probe)| probe.map(|p| (name, p))).collect()
}

/// The port of a `HOST:PORT` listen address.
fn listen_port(listen: &str, place: &str) -> i32 {
    let (_, port) = listen.rsplit_once(':').unwrap_or_else(|| panic!("{place}: --listen={listen} is not HOST:PORT"));
    port.parse().unwrap_or_else(|e| panic!("{place}: the port of --listen={listen}: {e}"))
}

/// Host and port of `https://HOST:PORT[/...]`.
fn url_host_port(url: &str) -> anyhow::Result<(String, i32)> {
    let rest = url.strip_prefix("https://").with_context(|| format!("{url} is not an https:// URL"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = authority.rsplit_once(':').with_context(|| format!("{url} names no port"))?;
    Ok((host.to_string(), port.parse().with_context(|| format!("the port of {url}"))?))
}

/// The Service a host name of the cluster's DNS names: `SVC`, `SVC.NS.svc[.cluster.local]`
/// or a StatefulSet pod's `POD.SVC[...]`.
fn service_of_host<'a>(manifests: &'a [Manifest], host: &str) -> Option<&'a Service> {
    let labels: Vec<&str> = host.split('.').collect();
    service_named(manifests, labels[0]).or_else(|| labels.get(1).and_then(|name| service_named(manifests, name)))
}

/// The peer URLs a container's arguments name, with the flag that names each.
fn peer_urls(arguments: &[String]) -> Vec<(String, String)> {
    let mut urls = Vec::new();
    for argument in arguments {
        let (flag, value) = split_flag(argument);
        if PEER_URL_FLAGS.contains(&flag) {
            for url in value.unwrap_or_default().split(',') {
                urls.push((flag.to_string(), url.to_string()));
            }
        }
    }
    urls
}

// ---------------------------------------------------------------------------------------
// The pure checks
// ---------------------------------------------------------------------------------------

#[test]
fn every_manifest_parses_into_its_kubernetes_type_and_names_no_namespace() {
    let manifests = manifests();
    for kind in ["StatefulSet", "Deployment", "Service"] {
        let count = manifests.iter().filter(|m| kind_of(&m.object) == kind).count();
        assert!(count > 0, "no {kind}: an installation needs StatefulSets, a Deployment and Services");
    }
    for manifest in &manifests {
        let metadata = match &manifest.object {
            Object::Namespace(o) => &o.metadata,
            Object::ConfigMap(o) => &o.metadata,
            Object::Secret(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::StatefulSet(o) => &o.metadata,
            Object::Deployment(o) => &o.metadata,
            Object::PodDisruptionBudget(o) => &o.metadata,
        };
        assert!(metadata.name.is_some(), "{}: no name", manifest.place);
        assert_eq!(metadata.namespace, None, "{}: the kustomization sets the namespace", manifest.place);
    }
}

#[test]
fn the_kustomization_lists_every_manifest() {
    let kustomization = kustomization();
    assert_eq!(kustomization.api_version, "kustomize.config.k8s.io/v1beta1");
    assert_eq!(kustomization.kind, "Kustomization");
    assert!(!kustomization.namespace.is_empty());
    let listed: BTreeSet<String> = kustomization.resources.iter().cloned().collect();
    assert_eq!(listed.len(), kustomization.resources.len(), "a resource is listed twice");
    let present: BTreeSet<String> = manifest_files().into_keys().collect();
    assert_eq!(listed, present, "the kustomization's resources against the YAML files in {MANIFEST_DIR}");

    // Every container runs the image the kustomization rewrites.
    let manifests = manifests();
    let image_names: BTreeSet<&str> = kustomization.images.iter().map(|i| i.name.as_str()).collect();
    for workload in workloads(&manifests) {
        for (_, container) in workload.containers() {
            let image = container.image.as_deref().unwrap_or_else(|| panic!("{}: no image", workload.place));
            let name = image.split(':').next().unwrap_or(image);
            assert!(
                image_names.contains(name),
                "{}: image {image} is not in the kustomization's images",
                workload.place
            );
        }
    }
    for image in &kustomization.images {
        assert!(image.new_name.is_some() || image.new_tag.is_some(), "image {} changes nothing", image.name);
    }

    // kubectl's own kustomize (stock kubectl is on every machine here) builds it, and
    // every object but the Namespace lands in the kustomization's namespace.
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(manifest_dir())
        .output()
        .unwrap_or_else(|e| panic!("run kubectl kustomize: {e}"));
    assert!(output.status.success(), "kubectl kustomize: {}", String::from_utf8_lossy(&output.stderr));
    let built = String::from_utf8(output.stdout).expect("kubectl kustomize writes UTF-8");
    let mut count = 0;
    for document in serde_yaml_ng::Deserializer::from_str(&built) {
        let document = serde_yaml_ng::Value::deserialize(document).expect("kubectl kustomize writes YAML");
        let kind = document["kind"].as_str().unwrap_or_default().to_string();
        let namespace = document["metadata"]["namespace"].as_str().map(str::to_string);
        let expected = (kind != "Namespace").then(|| kustomization.namespace.clone());
        assert_eq!(namespace, expected, "{kind} {:?} after kustomize", document["metadata"]["name"]);
        count += 1;
    }
    assert_eq!(count, manifests.len(), "kubectl kustomize builds every object of the manifests");
}

#[test]
fn every_flag_is_one_its_program_takes_and_listens_where_its_probes_look() {
    let manifests = manifests();
    let mut helps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for workload in workloads(&manifests) {
        for (init, container) in workload.containers() {
            let place = format!("{} container {}", workload.place, container.name);
            let (program, arguments) = command_line(container);
            let defined: BTreeSet<&str> = container.env.iter().flatten().map(|e| e.name.as_str()).collect();
            for word in std::iter::once(&program).chain(&arguments) {
                for name in references(word) {
                    assert!(
                        defined.contains(name.as_str()),
                        "{place}: $({name}) is not in its env, so it stays literal"
                    );
                }
            }
            if init {
                assert_eq!(program, INIT_PROGRAM, "{place}: init containers only copy the PKI");
                assert!(probes(container).is_empty(), "{place}: an init container has no probes");
                continue;
            }
            assert!(SERVER_PROGRAMS.contains(&program.as_str()), "{place}: runs {program}, not an Atoll server");
            let flags = helps.entry(program.clone()).or_insert_with(|| help_flags(&program));
            let mut seen = BTreeSet::new();
            for argument in &arguments {
                let (flag, _) = split_flag(argument);
                assert!(flag.starts_with("--"), "{place}: {argument:?} is not --flag or --flag=value");
                assert!(flags.contains(flag), "{place}: {program} --help lists no {flag}");
                assert!(seen.insert(flag), "{place}: {flag} is given twice");
            }
            for required in ["--listen", "--data-dir", "--pki-dir"] {
                assert!(flag_value(&arguments, required).is_some(), "{place}: no {required}=...");
            }
            check_ports_and_probes(&place, container, &arguments);
        }
    }
    assert_eq!(helps.len(), SERVER_PROGRAMS.len(), "every server program runs somewhere");
}

/// The container listens on its one container port, and every probe asks that port
/// over HTTPS for a path.
fn check_ports_and_probes(place: &str, container: &Container, arguments: &[String]) {
    let listen = flag_value(arguments, "--listen").unwrap_or_default();
    let port = listen_port(listen, place);
    let ports: Vec<i32> = container.ports.iter().flatten().map(|p| p.container_port).collect();
    assert_eq!(ports, [port], "{place}: the container ports against --listen={listen}");
    let probes = probes(container);
    let names: Vec<&str> = probes.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["startupProbe", "livenessProbe", "readinessProbe"], "{place}: probes");
    for (name, probe) in probes {
        let get = probe.http_get.as_ref().unwrap_or_else(|| panic!("{place}: {name} is no httpGet"));
        assert_eq!(container_port(container, &get.port), Some(port), "{place}: {name} asks another port");
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"), "{place}: {name}: every Atoll server speaks only HTTPS");
        let path = get.path.as_deref().unwrap_or_default();
        assert!(path.starts_with('/'), "{place}: {name} has no path");
        assert_eq!(get.host, None, "{place}: {name}: probes go to the pod's IP, where the server listens");
    }
}

#[test]
fn every_reference_resolves_and_every_service_selects_its_pods() {
    let manifests = manifests();
    let workloads = workloads(&manifests);
    let config_maps = config_maps(&manifests);
    let secrets = secrets(&manifests);
    for workload in &workloads {
        let place = workload.place;
        let selector = match_labels(workload.selector, place);
        assert!(selects(&selector, &workload.labels()), "{place}: the selector does not select the pod template");
        check_volumes(workload, &secrets);
        for (_, container) in workload.containers() {
            for env in container.env.iter().flatten() {
                let source = env.value_from.as_ref();
                if let Some(key_ref) = source.and_then(|s| s.config_map_key_ref.as_ref()) {
                    let data = config_maps.get(&key_ref.name);
                    let data = data.unwrap_or_else(|| panic!("{place}: no ConfigMap {}", key_ref.name));
                    assert!(
                        data.contains_key(&key_ref.key),
                        "{place}: ConfigMap {} has no {}",
                        key_ref.name,
                        key_ref.key
                    );
                }
                if let Some(key_ref) = source.and_then(|s| s.secret_key_ref.as_ref()) {
                    let keys =
                        secrets.get(&key_ref.name).unwrap_or_else(|| panic!("{place}: no Secret {}", key_ref.name));
                    assert!(keys.contains(&key_ref.key), "{place}: Secret {} has no {}", key_ref.name, key_ref.key);
                }
            }
        }
        if let Some(service_name) = workload.service_name {
            let service = service_named(&manifests, service_name)
                .unwrap_or_else(|| panic!("{place}: its serviceName {service_name} is no Service here"));
            let spec = service.spec.as_ref().expect("a Service has a spec");
            assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "{place}: Service {service_name} is not headless");
            let selector = spec.selector.clone().unwrap_or_default();
            assert!(selects(&selector, &workload.labels()), "{place}: Service {service_name} does not select its pods");
        }
    }
    for (place, service) in services(&manifests) {
        check_service(place, service, &workloads);
    }
    for manifest in &manifests {
        if let Object::PodDisruptionBudget(budget) = &manifest.object {
            let selector = budget.spec.as_ref().and_then(|s| s.selector.as_ref()).expect("a budget selects pods");
            let selector = match_labels(selector, &manifest.place);
            let selected = workloads.iter().filter(|w| selects(&selector, &w.labels())).count();
            assert_eq!(selected, 1, "{}: selects the pods of {selected} workloads", manifest.place);
        }
    }
}

/// Every mount names a volume of the pod or a claim template, every volume and claim is
/// mounted, and every Secret volume's items are keys of that Secret.
fn check_volumes(workload: &Workload<'_>, secrets: &BTreeMap<String, BTreeSet<String>>) {
    let place = workload.place;
    let spec = workload.template.spec.as_ref().expect("a pod template has a spec");
    let volumes: BTreeSet<String> = spec.volumes.iter().flatten().map(|v| v.name.clone()).collect();
    let claims = workload.claim_names();
    assert!(volumes.is_disjoint(&claims), "{place}: a volume and a claim template share a name");
    let mut mounted = BTreeSet::new();
    for (_, container) in workload.containers() {
        for mount in container.volume_mounts.iter().flatten() {
            assert!(
                volumes.contains(&mount.name) || claims.contains(&mount.name),
                "{place}: container {} mounts {}, which is neither a volume nor a claim template",
                container.name,
                mount.name
            );
            mounted.insert(mount.name.clone());
        }
    }
    let declared: BTreeSet<String> = volumes.union(&claims).cloned().collect();
    assert_eq!(mounted, declared, "{place}: volumes and claim templates against what the containers mount");
    if workload.kind == "StatefulSet" {
        assert!(!claims.is_empty(), "{place}: a StatefulSet keeps RocksDB on a PersistentVolumeClaim");
    }
    for volume in spec.volumes.iter().flatten() {
        let Some(secret) = &volume.secret else { continue };
        let name =
            secret.secret_name.as_deref().unwrap_or_else(|| panic!("{place}: volume {} names no Secret", volume.name));
        let keys = secrets.get(name).unwrap_or_else(|| {
            panic!("{place}: Secret {name} is neither a manifest nor created by a command in {MANIFEST_DIR}/{README}")
        });
        let items = secret.items.as_deref().unwrap_or_else(|| panic!("{place}: volume {} lists no items", volume.name));
        for item in items {
            assert!(keys.contains(&item.key), "{place}: Secret {name} has no key {} ({keys:?})", item.key);
        }
        assert_ne!(secret.optional, Some(true), "{place}: Secret {name} is required");
    }
}

/// A Service selects the pods of exactly one workload and sends its ports to container
/// ports of them.
fn check_service(place: &str, service: &Service, workloads: &[Workload<'_>]) {
    let spec = service.spec.as_ref().expect("a Service has a spec");
    let selector = spec.selector.clone().unwrap_or_default();
    let selected: Vec<&Workload<'_>> = workloads.iter().filter(|w| selects(&selector, &w.labels())).collect();
    assert_eq!(selected.len(), 1, "{place}: selects the pods of {} workloads", selected.len());
    let container = selected[0].main_container();
    let ports = spec.ports.as_deref().unwrap_or_default();
    assert!(!ports.is_empty(), "{place}: no ports");
    for port in ports {
        let target = port.target_port.clone().unwrap_or(IntOrString::Int(port.port));
        assert!(container_port(container, &target).is_some(), "{place}: port {} targets no container port", port.port);
    }
}

#[test]
fn every_peer_url_names_a_service_and_its_port() {
    let manifests = manifests();
    let workloads = workloads(&manifests);
    let mut checked = 0;
    for workload in &workloads {
        let (_, arguments) = command_line(workload.main_container());
        for (flag, url) in peer_urls(&arguments) {
            let place = format!("{}: {flag}={url}", workload.place);
            let (host, port) = url_host_port(&url).unwrap_or_else(|e| panic!("{place}: {e:#}"));
            let service = service_of_host(&manifests, &host).unwrap_or_else(|| panic!("{place}: {host} is no Service"));
            let ports = service.spec.as_ref().and_then(|s| s.ports.clone()).unwrap_or_default();
            assert!(ports.iter().any(|p| p.port == port), "{place}: Service has no port {port}");
            checked += 1;
        }
    }
    assert!(checked > 0, "no peer URLs found; did the flags get renamed?");
}

// ---------------------------------------------------------------------------------------
// The pods, run on loopback
// ---------------------------------------------------------------------------------------

/// What every simulated pod shares: the PKI the Secret holds, and the values the
/// kubelet would take from the cluster.
struct Cluster {
    _dir: tempfile::TempDir,
    /// The generated PKI, standing in for the Secret created by hand.
    secret_dir: PathBuf,
    ca_pem: String,
    namespace: String,
    config_maps: BTreeMap<String, BTreeMap<String, String>>,
}

/// One workload's pod 0, running.
struct Pod {
    name: String,
    child: OwnedChild,
    port: u16,
    log: PathBuf,
    /// The local directory behind `--pki-dir`.
    pki_dir: PathBuf,
    /// The file names the pod's Secret volumes put in place.
    secret_files: BTreeSet<String>,
    _dir: tempfile::TempDir,
}

impl Pod {
    fn log_section(&self) -> String {
        format!("\n--- tail of {} ---\n{}", self.log.display(), log_tail(&self.log, LOG_TAIL_LINES))
    }
}

impl Cluster {
    fn new(manifests: &[Manifest]) -> anyhow::Result<Cluster> {
        let dir = tempfile::Builder::new().prefix("atoll-k8s-").tempdir().context("create a temporary dir")?;
        let secret_dir = dir.path().join("pki-secret");
        tests::cache::ensure_pki(&secret_dir, &dir.path().join("harness-leaves"))?;
        let ca_pem = std::fs::read_to_string(secret_dir.join("ca.crt")).context("read the generated CA")?;
        Ok(Cluster {
            secret_dir,
            ca_pem,
            namespace: kustomization().namespace,
            config_maps: config_maps(manifests),
            _dir: dir,
        })
    }

    /// The environment the kubelet would give `container` of `workload`'s pod 0.
    fn environment(&self, workload: &Workload<'_>, container: &Container) -> BTreeMap<String, String> {
        let mut environment = BTreeMap::new();
        for env in container.env.iter().flatten() {
            let value = match (&env.value, &env.value_from) {
                (Some(value), _) => expand(value, &environment),
                (None, Some(source)) => {
                    if let Some(field) = &source.field_ref {
                        match field.field_path.as_str() {
                            "metadata.name" => workload.pod_name(),
                            "metadata.namespace" => self.namespace.clone(),
                            "status.podIP" => POD_IP.to_string(),
                            other => panic!("{}: fieldRef {other} is not simulated here", workload.place),
                        }
                    } else if let Some(key_ref) = &source.config_map_key_ref {
                        self.config_maps[&key_ref.name][&key_ref.key].clone()
                    } else {
                        panic!("{}: env {} comes from a source not simulated here", workload.place, env.name)
                    }
                }
                (None, None) => String::new(),
            };
            environment.insert(env.name.clone(), value);
        }
        environment
    }

    /// Lays out pod 0's volumes under `root` and returns mount path → local directory
    /// for `container`, longest mount path first.
    fn volumes(
        &self,
        workload: &Workload<'_>,
        container: &Container,
        root: &Path,
    ) -> anyhow::Result<Vec<(String, PathBuf)>> {
        let spec = workload.template.spec.as_ref().expect("a pod template has a spec");
        let mut mounts = Vec::new();
        for mount in container.volume_mounts.iter().flatten() {
            let local = root.join("volumes").join(&mount.name);
            if !local.exists() {
                std::fs::create_dir_all(&local).with_context(|| format!("create {}", local.display()))?;
                let volume = spec.volumes.iter().flatten().find(|v| v.name == mount.name);
                if let Some(secret) = volume.and_then(|v| v.secret.as_ref()) {
                    // What the kubelet writes for a Secret volume with items: each key's
                    // value under its path.
                    for item in secret.items.iter().flatten() {
                        let from = self.secret_dir.join(&item.key);
                        std::fs::copy(&from, local.join(&item.path))
                            .with_context(|| format!("the Secret's key {} is no file the PKI has", item.key))?;
                    }
                }
            }
            mounts.push((mount.mount_path.clone(), local));
        }
        mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        Ok(mounts)
    }

    /// Runs `workload`'s pod 0: its init containers to completion, then its server,
    /// on a free port; returns once the server process is spawned.
    fn start(&self, workload: &Workload<'_>) -> anyhow::Result<Pod> {
        let dir =
            tempfile::Builder::new().prefix(&format!("{}-", workload.name)).tempdir().context("create a pod dir")?;
        for (init, container) in workload.containers() {
            let environment = self.environment(workload, container);
            let mounts = self.volumes(workload, container, dir.path())?;
            let local = |word: &str| localize(&expand(word, &environment), &mounts);
            let (program, arguments) = command_line(container);
            if init {
                let arguments: Vec<String> = arguments.iter().map(|a| local(a)).collect();
                let output = Command::new(&program).args(&arguments).stdin(Stdio::null()).output()?;
                ensure!(
                    output.status.success(),
                    "{}: init container {} failed: {}",
                    workload.place,
                    container.name,
                    String::from_utf8_lossy(&output.stderr)
                );
                continue;
            }
            let port = tests::ports::free_port()?;
            let pki_dir = flag_value(&arguments, "--pki-dir").map(&local).context("no --pki-dir")?.into();
            let arguments: Vec<String> = arguments.iter().map(|a| relisten(&local(a), port)).collect();
            let log = dir.path().join("server.log");
            let file = std::fs::File::create(&log).context("create the server log")?;
            let mut command = Command::new(tests::binary(&program));
            command.args(&arguments).stdin(Stdio::null()).stdout(file.try_clone()?).stderr(file);
            command.env_clear().envs(&environment).env("RUST_LOG", "info");
            let child = OwnedChild::spawn(&mut command, &program)?;
            let spec = workload.template.spec.as_ref().expect("a pod template has a spec");
            let secrets = spec.volumes.iter().flatten().filter_map(|v| v.secret.as_ref());
            let secret_files = secrets.flat_map(|s| s.items.iter().flatten().map(|i| i.path.clone())).collect();
            return Ok(Pod { name: workload.name.clone(), child, port, log, pki_dir, secret_files, _dir: dir });
        }
        bail!("{}: no main container", workload.place)
    }

    /// Waits until every probe of the pod answers 200 over HTTPS without a client
    /// certificate, as the kubelet asks. A shard's readiness waits until it has joined
    /// the installation and the front-proxy's until the shards' indexes reached it, which the
    /// root's name (not resolvable here) keeps them from: their `/readyz` counts when it
    /// answers 503 saying exactly that.
    async fn probe(&self, pod: &mut Pod, container: &Container) -> anyhow::Result<()> {
        let anonymous = TlsHttp::new(&format!("https://{POD_IP}:{}", pod.port), self.ca_pem.as_bytes(), None)?
            .with_timeout(Duration::from_secs(5));
        for (name, probe) in probes(container) {
            let path = probe.http_get.as_ref().and_then(|g| g.path.clone()).unwrap_or_default();
            let deadline = Instant::now() + START_TIMEOUT;
            loop {
                let last = match anonymous.get(&path).await {
                    Ok(response) if response.status == StatusCode::OK => break,
                    Ok(response)
                        if name == "readinessProbe"
                            && response.status == StatusCode::SERVICE_UNAVAILABLE
                            && waits_for_peers(&response.text()) =>
                    {
                        break
                    }
                    Ok(response) => format!("HTTP {}: {}", response.status, response.text()),
                    Err(error) => format!("{error:#}"),
                };
                if let Some(status) = pod.child.try_exited()? {
                    bail!("{}: exited ({status}) while its {name} asked {path}: {last}{}", pod.name, pod.log_section());
                }
                ensure!(
                    Instant::now() < deadline,
                    "{}: {name} GET {path} did not answer 200 within {START_TIMEOUT:?}: {last}{}",
                    pod.name,
                    pod.log_section()
                );
                tokio::time::sleep(POLL_INTERVAL).await;
            }
        }
        Ok(())
    }
}

/// Whether a 503 from `/readyz` says the server waits for its peers (which do not
/// resolve on loopback), not that something is broken.
fn waits_for_peers(message: &str) -> bool {
    message.contains("has not joined the installation yet")
        || message.contains("the front-proxy knows no shard yet")
        || message.contains("the front-proxy has not yet received the routing index of shard(s)")
}

/// The names of the files in `dir`, dot files (the PKI's lock) left out.
fn visible_files(dir: &Path) -> BTreeSet<String> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    let names = entries.map(|entry| entry.expect("a directory entry").file_name().to_string_lossy().into_owned());
    names.filter(|name| !name.starts_with('.')).collect()
}

/// Maps the container's paths to the pod's local directories.
fn localize(word: &str, mounts: &[(String, PathBuf)]) -> String {
    let mut word = word.to_string();
    for (mount_path, local) in mounts {
        word = word.replace(mount_path.as_str(), &local.to_string_lossy());
    }
    word
}

/// Moves `--listen=HOST:PORT` to `port` on this machine.
fn relisten(argument: &str, port: u16) -> String {
    match split_flag(argument) {
        ("--listen", Some(listen)) => {
            let (host, _) = listen.rsplit_once(':').unwrap_or((listen, ""));
            format!("--listen={host}:{port}")
        }
        _ => argument.to_string(),
    }
}

/// Completes a TLS handshake with the server on `port` as a client that reached it by
/// the name `host` and trusts only the installation's CA: it succeeds when the serving
/// certificate covers `host`.
async fn handshake_as(host: &str, port: u16, ca_pem: &str) -> anyhow::Result<()> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.context("parse the CA")?).context("trust the CA")?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("choose TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let stream = tokio::net::TcpStream::connect((POD_IP, port)).await.context("connect")?;
    let name = ServerName::try_from(host.to_string()).with_context(|| format!("{host} as a server name"))?;
    let handshake = tokio::time::timeout(Duration::from_secs(10), connector.connect(name, stream)).await;
    handshake.context("the handshake hung")?.with_context(|| format!("a TLS handshake as {host}"))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pod_starts_from_its_manifest_and_answers_its_probes() {
    let manifests = manifests();
    let workloads = workloads(&manifests);
    let cluster = Cluster::new(&manifests).expect("lay out the cluster");

    // Every pod at once, as `kubectl apply -k` starts them: none may wait for a peer
    // before it answers its probes (the peers' names do not resolve here).
    let start = |workload: &Workload<'_>| cluster.start(workload).unwrap_or_else(|e| panic!("{e:#}"));
    let mut pods: Vec<Pod> = workloads.iter().map(&start).collect();
    for (pod, workload) in pods.iter_mut().zip(&workloads) {
        let mut attempt = 1;
        loop {
            match cluster.probe(pod, workload.main_container()).await {
                Ok(()) => break,
                // Free ports are found by binding and releasing; another process may
                // have taken this one in between.
                Err(error) if attempt < PORT_ATTEMPTS && format!("{error:#}").contains("in use") => {
                    attempt += 1;
                    *pod = start(workload);
                }
                Err(error) => panic!("{error:#}"),
            }
        }
        // The process found every CA it needs where the Secret put it, and created none
        // (a CA missing from the Secret would be generated anew in each pod: an
        // installation whose processes trust different CAs).
        let files = visible_files(&pod.pki_dir);
        assert_eq!(files, pod.secret_files, "{}: --pki-dir after start against the Secret's files", pod.name);
    }

    // Each server's certificate covers the names its peers call it by.
    for workload in &workloads {
        let (_, arguments) = command_line(workload.main_container());
        for (flag, url) in peer_urls(&arguments) {
            let (host, _) = url_host_port(&url).expect("a peer URL");
            let service = service_of_host(&manifests, &host).expect("a peer URL names a Service");
            let selector = service.spec.as_ref().and_then(|s| s.selector.clone()).unwrap_or_default();
            let target = workloads.iter().position(|w| selects(&selector, &w.labels())).expect("a selected workload");
            let pod = &pods[target];
            handshake_as(&host, pod.port, &cluster.ca_pem).await.unwrap_or_else(|e| {
                panic!(
                    "{}: {flag}={url}: {} does not serve {host}: {e:#}{}",
                    workload.place,
                    pod.name,
                    pod.log_section()
                )
            });
        }
    }

    for (pod, workload) in pods.iter_mut().zip(&workloads) {
        let grace = workload.template.spec.as_ref().and_then(|s| s.termination_grace_period_seconds);
        let grace = grace.map(|s| Duration::from_secs(s.unsigned_abs())).unwrap_or(STOP_TIMEOUT);
        let status = pod.child.terminate(grace).await.unwrap_or_else(|e| panic!("{}: {e:#}", pod.name));
        assert!(status.success(), "{}: SIGTERM ends it cleanly: {status}{}", pod.name, pod.log_section());
    }
}
