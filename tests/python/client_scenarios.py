#!/usr/bin/env python3
"""The official Python `kubernetes` client against one logical cluster of a real shard.

Usage: client_scenarios.py KUBECONFIG

KUBECONFIG must point at the logical cluster (its server URL ends in /clusters/<name>).
tests/tests/python_client.rs starts the shard, writes that kubeconfig and runs this file.

Each scenario works in its own namespace, so one failing scenario does not hide the
others: all run, every failure is printed with its traceback, and the exit code is 1 if
any failed. Plain asserts only (no pytest), so the only dependency is the client itself.
Nothing here asserts on wall-clock time; waits poll until a generous deadline.
"""

import base64
import json
import os
import sys
import tempfile
import threading
import time
import traceback

from kubernetes import client, config, utils, watch
from kubernetes.client.rest import ApiException

# How long anything asynchronous on the server (CRD establishment, namespace
# finalization) may take before the scenario fails. Generous: CI machines are slow.
WAIT_DEADLINE_S = 60

# How often the polls ask again.
POLL_INTERVAL_S = 0.2

# The server-side limit on the watches here (timeoutSeconds): the replayed watch ends
# when the server closes it, which is how it proves no further event follows.
WATCH_TIMEOUT_S = 3

# The client-side read limit on a watch, so a server that ignores timeoutSeconds fails
# the scenario instead of hanging it.
WATCH_READ_LIMIT_S = 60

CRD_GROUP = "python.example.com"
CRD_PLURAL = "gadgets"
CRD_NAME = f"{CRD_PLURAL}.{CRD_GROUP}"
CRD_VERSION = "v1"


def b64(text):
    return base64.b64encode(text.encode()).decode()


def poll(what, check, deadline_s=WAIT_DEADLINE_S):
    """Calls check() until it returns a truthy value, which is returned; fails after
    deadline_s with the last value (or exception) check produced."""
    deadline = time.monotonic() + deadline_s
    last = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = value
        except ApiException as error:
            last = f"ApiException {error.status}: {error.body}"
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {deadline_s}s; last: {last}")
        time.sleep(POLL_INTERVAL_S)


def expect_api_error(status, call, *args, **kwargs):
    """Runs call(*args, **kwargs), which must fail with HTTP `status`; returns the
    decoded Status body."""
    try:
        result = call(*args, **kwargs)
    except ApiException as error:
        assert error.status == status, f"expected HTTP {status}, got {error.status}: {error.body}"
        body = json.loads(error.body)
        assert body.get("kind") == "Status", body
        assert body.get("apiVersion") == "v1", body
        assert body.get("status") == "Failure", body
        assert body.get("code") == status, body
        return body
    raise AssertionError(f"expected HTTP {status}, the call succeeded: {result}")


def expect_not_found(call, *args, resource, name, group=None, **kwargs):
    """A 404 ApiException whose body is a NotFound Status naming the object."""
    body = expect_api_error(404, call, *args, **kwargs)
    assert body.get("reason") == "NotFound", body
    qualified = f"{resource}.{group}" if group else resource
    assert body.get("message") == f'{qualified} "{name}" not found', body
    details = body.get("details") or {}
    assert details.get("name") == name, body
    assert details.get("kind") == resource, body
    if group:
        assert details.get("group") == group, body
    return body


def namespace(name, meta=None):
    return client.V1Namespace(api_version="v1", kind="Namespace", metadata=meta or client.V1ObjectMeta(name=name))


def names(items):
    return sorted(item.metadata.name for item in items)


def delete_namespace_and_wait(core, namespace):
    core.delete_namespace(namespace)

    def gone():
        try:
            core.read_namespace(namespace)
            return False
        except ApiException as error:
            if error.status == 404:
                return True
            raise

    poll(f"namespace {namespace} deleted", gone)


# ---------------------------------------------------------------------------------------
# CoreV1Api: namespaces, configmaps, secrets
# ---------------------------------------------------------------------------------------


def scenario_namespaces(api):
    core = client.CoreV1Api(api)
    meta = client.V1ObjectMeta(name="py-ns", labels={"suite": "python", "stage": "one"})
    created = core.create_namespace(namespace("py-ns", meta))
    assert created.metadata.name == "py-ns"
    assert created.metadata.uid, created.metadata
    assert created.metadata.resource_version, created.metadata
    assert created.metadata.creation_timestamp is not None, created.metadata

    read = core.read_namespace("py-ns")
    assert read.metadata.uid == created.metadata.uid
    assert read.status.phase == "Active", read.status

    listed = core.list_namespace(label_selector="suite=python")
    assert names(listed.items) == ["py-ns"], names(listed.items)
    assert listed.metadata.resource_version, listed.metadata
    assert names(core.list_namespace(label_selector="suite=python,stage!=one").items) == []

    read.metadata.labels["stage"] = "two"
    replaced = core.replace_namespace("py-ns", read)
    labels = replaced.metadata.labels
    assert (labels.get("suite"), labels.get("stage")) == ("python", "two"), labels
    assert replaced.metadata.resource_version != read.metadata.resource_version

    patched = core.patch_namespace("py-ns", {"metadata": {"labels": {"patched": "yes"}}})
    assert patched.metadata.labels.get("patched") == "yes", patched.metadata.labels
    assert patched.metadata.labels.get("stage") == "two", patched.metadata.labels

    expect_not_found(core.read_namespace, "py-missing", resource="namespaces", name="py-missing")
    delete_namespace_and_wait(core, "py-ns")


def scenario_configmaps(api):
    core = client.CoreV1Api(api)
    ns = "py-configmaps"
    core.create_namespace(namespace(ns))

    def configmap(name, labels, data):
        meta = client.V1ObjectMeta(name=name, labels=labels)
        return client.V1ConfigMap(api_version="v1", kind="ConfigMap", metadata=meta, data=data)

    created = core.create_namespaced_config_map(ns, configmap("settings", {"app": "shop"}, {"color": "blue"}))
    assert created.metadata.namespace == ns, created.metadata
    core.create_namespaced_config_map(ns, configmap("unrelated", {"app": "other"}, {"k": "v"}))
    duplicate = expect_api_error(409, core.create_namespaced_config_map, ns, configmap("settings", {}, {}))
    assert duplicate.get("reason") == "AlreadyExists", duplicate

    read = core.read_namespaced_config_map("settings", ns)
    assert read.data == {"color": "blue"}, read.data
    assert read.metadata.resource_version == created.metadata.resource_version

    assert names(core.list_namespaced_config_map(ns, label_selector="app=shop").items) == ["settings"]
    assert names(core.list_namespaced_config_map(ns, label_selector="app in (shop,other)").items) == [
        "settings",
        "unrelated",
    ]
    # The namespace's kube-root-ca.crt has no app label, as in kube.
    assert names(core.list_namespaced_config_map(ns, label_selector="app notin (shop)").items) == [
        "kube-root-ca.crt",
        "unrelated",
    ]
    everywhere = core.list_config_map_for_all_namespaces(label_selector="app=shop")
    assert [(i.metadata.namespace, i.metadata.name) for i in everywhere.items] == [(ns, "settings")]

    read.data = {"color": "green", "size": "3"}
    replaced = core.replace_namespaced_config_map("settings", ns, read)
    assert replaced.data == {"color": "green", "size": "3"}, replaced.data
    assert replaced.metadata.resource_version != read.metadata.resource_version

    # A replace carrying the old resourceVersion lost the race: 409 Conflict.
    stale = expect_api_error(409, core.replace_namespaced_config_map, "settings", ns, read)
    assert stale.get("reason") == "Conflict", stale

    # A dict body is sent as a strategic merge patch: data keys merge.
    patched = core.patch_namespaced_config_map("settings", ns, {"data": {"size": "4", "shape": "round"}})
    assert patched.data == {"color": "green", "size": "4", "shape": "round"}, patched.data

    # A list body is sent as a JSON patch.
    patched = core.patch_namespaced_config_map("settings", ns, [{"op": "remove", "path": "/data/color"}])
    assert patched.data == {"size": "4", "shape": "round"}, patched.data

    status = core.delete_namespaced_config_map("settings", ns)
    assert status is not None
    expect_not_found(core.read_namespaced_config_map, "settings", ns, resource="configmaps", name="settings")
    expect_not_found(core.delete_namespaced_config_map, "settings", ns, resource="configmaps", name="settings")
    assert names(core.list_namespaced_config_map(ns, label_selector="app").items) == ["unrelated"]
    delete_namespace_and_wait(core, ns)


def scenario_secrets(api):
    core = client.CoreV1Api(api)
    ns = "py-secrets"
    core.create_namespace(namespace(ns))

    secret = client.V1Secret(
        api_version="v1",
        kind="Secret",
        metadata=client.V1ObjectMeta(name="token", labels={"app": "shop"}),
        string_data={"password": "hunter2"},
        type="Opaque",
    )
    created = core.create_namespaced_secret(ns, secret)
    assert created.data == {"password": b64("hunter2")}, created.data
    assert not created.string_data, "stringData is write-only"
    core.create_namespaced_secret(
        ns,
        client.V1Secret(
            api_version="v1",
            kind="Secret",
            metadata=client.V1ObjectMeta(name="other", labels={"app": "other"}),
            data={"k": b64("v")},
        ),
    )

    read = core.read_namespaced_secret("token", ns)
    assert read.type == "Opaque", read.type
    assert read.data == {"password": b64("hunter2")}, read.data
    assert names(core.list_namespaced_secret(ns, label_selector="app=shop").items) == ["token"]

    read.data = {"password": b64("s3cret")}
    replaced = core.replace_namespaced_secret("token", ns, read)
    assert replaced.data == {"password": b64("s3cret")}, replaced.data

    patched = core.patch_namespaced_secret("token", ns, {"data": {"user": b64("admin")}})
    assert patched.data == {"password": b64("s3cret"), "user": b64("admin")}, patched.data
    patched = core.patch_namespaced_secret("token", ns, {"stringData": {"user": "root"}})
    assert patched.data == {"password": b64("s3cret"), "user": b64("root")}, patched.data

    core.delete_namespaced_secret("token", ns)
    expect_not_found(core.read_namespaced_secret, "token", ns, resource="secrets", name="token")
    assert names(core.list_namespaced_secret(ns, label_selector="app").items) == ["other"]
    delete_namespace_and_wait(core, ns)


def scenario_bodies_without_type_meta(api):
    """The client's own examples build objects without apiVersion and kind, and
    kube-apiserver defaults both from the URL; so must the shard, for create and replace."""
    core = client.CoreV1Api(api)
    ns = "py-typeless"
    created = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    assert (created.api_version, created.kind) == ("v1", "Namespace"), (created.api_version, created.kind)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="plain"), data={"a": "1"})
    configmap = core.create_namespaced_config_map(ns, body)
    assert (configmap.api_version, configmap.kind) == ("v1", "ConfigMap"), (configmap.api_version, configmap.kind)
    read = core.read_namespaced_config_map("plain", ns)
    body = client.V1ConfigMap(metadata=read.metadata, data={"a": "2"})
    replaced = core.replace_namespaced_config_map("plain", ns, body)
    assert replaced.data == {"a": "2"}, replaced.data
    delete_namespace_and_wait(core, ns)


# ---------------------------------------------------------------------------------------
# ApiextensionsV1Api + CustomObjectsApi
# ---------------------------------------------------------------------------------------


def gadget_crd():
    props = client.V1JSONSchemaProps
    schema = props(
        type="object",
        properties={
            "spec": props(
                type="object",
                required=["size"],
                properties={"size": props(type="integer", minimum=1), "color": props(type="string")},
            ),
            "status": props(
                type="object",
                properties={"phase": props(type="string"), "observedSize": props(type="integer")},
            ),
        },
    )
    version = client.V1CustomResourceDefinitionVersion(
        name=CRD_VERSION,
        served=True,
        storage=True,
        schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
        subresources=client.V1CustomResourceSubresources(status={}),
    )
    return client.V1CustomResourceDefinition(
        api_version="apiextensions.k8s.io/v1",
        kind="CustomResourceDefinition",
        metadata=client.V1ObjectMeta(name=CRD_NAME),
        spec=client.V1CustomResourceDefinitionSpec(
            group=CRD_GROUP,
            scope="Namespaced",
            names=client.V1CustomResourceDefinitionNames(
                plural=CRD_PLURAL, singular="gadget", kind="Gadget", list_kind="GadgetList"
            ),
            versions=[version],
        ),
    )


def established(extensions):
    crd = extensions.read_custom_resource_definition(CRD_NAME)
    conditions = (crd.status and crd.status.conditions) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions) and crd


def gadget(name, size, color, labels=None):
    return {
        "apiVersion": f"{CRD_GROUP}/{CRD_VERSION}",
        "kind": "Gadget",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"size": size, "color": color},
    }


def scenario_custom_resources(api):
    core = client.CoreV1Api(api)
    extensions = client.ApiextensionsV1Api(api)
    custom = client.CustomObjectsApi(api)
    ns = "py-crd"
    core.create_namespace(namespace(ns))

    extensions.create_custom_resource_definition(gadget_crd())
    crd = poll(f"CRD {CRD_NAME} Established", lambda: established(extensions))
    assert crd.spec.versions[0].subresources.status is not None, crd.spec.versions[0]
    assert crd.status.accepted_names.kind == "Gadget", crd.status.accepted_names

    group = (CRD_GROUP, CRD_VERSION)
    merge = "application/merge-patch+json"
    created = custom.create_namespaced_custom_object(*group, ns, CRD_PLURAL, gadget("g1", 3, "blue", {"tier": "a"}))
    assert created["metadata"]["uid"], created
    assert created["metadata"]["namespace"] == ns, created
    custom.create_namespaced_custom_object(*group, ns, CRD_PLURAL, gadget("g2", 5, "green", {"tier": "b"}))
    invalid = expect_api_error(
        422, custom.create_namespaced_custom_object, *group, ns, CRD_PLURAL, gadget("bad", 0, "red")
    )
    assert invalid.get("reason") == "Invalid", invalid

    read = custom.get_namespaced_custom_object(*group, ns, CRD_PLURAL, "g1")
    assert read["spec"] == {"size": 3, "color": "blue"}, read
    assert read["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"], read

    listed = custom.list_namespaced_custom_object(*group, ns, CRD_PLURAL, label_selector="tier=a")
    assert listed["kind"] == "GadgetList", listed.get("kind")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["g1"], listed
    everywhere = custom.list_cluster_custom_object(*group, CRD_PLURAL)
    assert sorted(item["metadata"]["name"] for item in everywhere["items"]) == ["g1", "g2"], everywhere

    # Merge patch: a value replaces, null removes, labels merge.
    patch = {"metadata": {"labels": {"patched": "yes"}}, "spec": {"size": 4, "color": None}}
    patched = custom.patch_namespaced_custom_object(*group, ns, CRD_PLURAL, "g1", patch, _content_type=merge)
    assert patched["spec"] == {"size": 4}, patched
    assert patched["metadata"]["labels"] == {"tier": "a", "patched": "yes"}, patched

    # Status subresource: /status writes status only; the main resource ignores status.
    status_patch = {"status": {"phase": "Ready", "observedSize": 4}, "spec": {"size": 99}}
    after_status = custom.patch_namespaced_custom_object_status(
        *group, ns, CRD_PLURAL, "g1", status_patch, _content_type=merge
    )
    assert after_status["status"] == {"phase": "Ready", "observedSize": 4}, after_status
    assert after_status["spec"] == {"size": 4}, "a /status patch must not change spec: %s" % after_status
    ignored = custom.patch_namespaced_custom_object(
        *group, ns, CRD_PLURAL, "g1", {"status": {"phase": "Hacked"}}, _content_type=merge
    )
    assert ignored["status"] == {"phase": "Ready", "observedSize": 4}, ignored
    read_status = custom.get_namespaced_custom_object_status(*group, ns, CRD_PLURAL, "g1")
    assert read_status["status"]["phase"] == "Ready", read_status

    current = custom.get_namespaced_custom_object(*group, ns, CRD_PLURAL, "g2")
    current["spec"]["color"] = "black"
    replaced = custom.replace_namespaced_custom_object(*group, ns, CRD_PLURAL, "g2", current)
    assert replaced["spec"] == {"size": 5, "color": "black"}, replaced
    stale = expect_api_error(409, custom.replace_namespaced_custom_object, *group, ns, CRD_PLURAL, "g2", current)
    assert stale.get("reason") == "Conflict", stale

    for name in ["g1", "g2"]:
        custom.delete_namespaced_custom_object(*group, ns, CRD_PLURAL, name)
        expect_not_found(
            custom.get_namespaced_custom_object,
            *group,
            ns,
            CRD_PLURAL,
            name,
            resource=CRD_PLURAL,
            name=name,
            group=CRD_GROUP,
        )
    assert custom.list_namespaced_custom_object(*group, ns, CRD_PLURAL)["items"] == []

    extensions.delete_custom_resource_definition(CRD_NAME)

    def crd_gone():
        try:
            extensions.read_custom_resource_definition(CRD_NAME)
            return False
        except ApiException as error:
            if error.status == 404:
                return True
            raise

    poll(f"CRD {CRD_NAME} deleted", crd_gone)
    delete_namespace_and_wait(core, ns)


# ---------------------------------------------------------------------------------------
# watch.Watch().stream resuming from a list's resourceVersion
# ---------------------------------------------------------------------------------------


def event_summary(event):
    obj = event["object"]
    return (event["type"], obj.metadata.name, obj.metadata.resource_version)


def collect_replayed_events(core, ns, resource_version):
    """Every event after `resource_version` until the server closes the watch."""
    stream = watch.Watch().stream(
        core.list_namespaced_config_map,
        ns,
        resource_version=resource_version,
        timeout_seconds=WATCH_TIMEOUT_S,
        _request_timeout=WATCH_READ_LIMIT_S,
    )
    return [event_summary(e) for e in stream if e["type"] != "BOOKMARK"]


def scenario_watch_resume(api):
    core = client.CoreV1Api(api)
    ns = "py-watch"
    core.create_namespace(namespace(ns))

    def configmap(name, data):
        meta = client.V1ObjectMeta(name=name)
        return client.V1ConfigMap(api_version="v1", kind="ConfigMap", metadata=meta, data=data)

    core.create_namespaced_config_map(ns, configmap("before", {"n": "0"}))
    listed = core.list_namespaced_config_map(ns)
    list_rv = listed.metadata.resource_version
    assert list_rv, listed.metadata
    assert "before" in names(listed.items)

    # Writes after the list; the watch must replay exactly these, in order.
    expected = []
    w1 = core.create_namespaced_config_map(ns, configmap("w1", {"n": "1"}))
    expected.append(("ADDED", "w1", w1.metadata.resource_version))
    w1 = core.patch_namespaced_config_map("w1", ns, {"data": {"n": "2"}})
    expected.append(("MODIFIED", "w1", w1.metadata.resource_version))
    before = core.patch_namespaced_config_map("before", ns, {"data": {"n": "3"}})
    expected.append(("MODIFIED", "before", before.metadata.resource_version))
    core.delete_namespaced_config_map("w1", ns)

    replayed = collect_replayed_events(core, ns, list_rv)
    assert [(t, n) for t, n, _ in replayed] == [(t, n) for t, n, _ in expected] + [("DELETED", "w1")], replayed
    # ADDED and MODIFIED carry the object as written, so the resourceVersions match.
    assert [rv for _, _, rv in replayed[:3]] == [rv for _, _, rv in expected], (replayed, expected)
    deleted_rv = replayed[3][2]
    assert deleted_rv not in {rv for _, _, rv in expected}, replayed

    # Resuming from the last event sees only what is written afterwards: the watch runs
    # in a thread while this one writes, and stops itself at the first event.
    seen = []
    failure = []
    watcher = watch.Watch()

    def run():
        try:
            for event in watcher.stream(
                core.list_namespaced_config_map,
                ns,
                resource_version=deleted_rv,
                timeout_seconds=WAIT_DEADLINE_S,
                _request_timeout=WATCH_READ_LIMIT_S + WAIT_DEADLINE_S,
            ):
                if event["type"] == "BOOKMARK":
                    continue
                seen.append(event_summary(event))
                watcher.stop()
        except Exception as error:  # reported to the main thread
            failure.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    late = core.create_namespaced_config_map(ns, configmap("late", {"n": "4"}))
    thread.join(WAIT_DEADLINE_S + WATCH_READ_LIMIT_S + 5)
    assert not thread.is_alive(), "the resumed watch never delivered an event"
    assert not failure, failure
    assert seen == [("ADDED", "late", late.metadata.resource_version)], seen
    delete_namespace_and_wait(core, ns)


# ---------------------------------------------------------------------------------------
# kubernetes.utils.create_from_yaml
# ---------------------------------------------------------------------------------------

MANIFEST = """\
apiVersion: v1
kind: Namespace
metadata:
  name: py-yaml
  labels:
    from: yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: py-yaml
data:
  color: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: py-yaml
stringData:
  password: hunter2
"""


def scenario_create_from_yaml(api):
    core = client.CoreV1Api(api)
    with tempfile.TemporaryDirectory(prefix="atoll-py-") as directory:
        path = os.path.join(directory, "manifest.yaml")
        with open(path, "w", encoding="utf-8") as file:
            file.write(MANIFEST)
        utils.create_from_yaml(api, path)

        assert core.read_namespace("py-yaml").metadata.labels.get("from") == "yaml"
        assert core.read_namespaced_config_map("settings", "py-yaml").data == {"color": "blue"}
        assert core.read_namespaced_secret("token", "py-yaml").data == {"password": b64("hunter2")}

        # A second run fails for every object, each with 409 AlreadyExists.
        try:
            utils.create_from_yaml(api, path)
        except utils.FailToCreateError as failure:
            statuses = [error.status for error in failure.api_exceptions]
            assert statuses == [409, 409, 409], [(e.status, e.body) for e in failure.api_exceptions]
            reasons = [json.loads(error.body).get("reason") for error in failure.api_exceptions]
            assert reasons == ["AlreadyExists"] * 3, reasons
        else:
            raise AssertionError("creating the same manifest twice succeeded")
    delete_namespace_and_wait(core, "py-yaml")


def scenario_workloads(api):
    """A Deployment and a Service: create, patch three ways, list, watch, delete."""
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    ns = "py-workloads"
    core.create_namespace(namespace(ns))
    start = apps.list_namespaced_deployment(ns).metadata.resource_version

    labels = {"app": "shop"}
    container = client.V1Container(name="web", image="nginx:1.27", ports=[client.V1ContainerPort(container_port=80)])
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels), spec=client.V1PodSpec(containers=[container])
    )
    spec = client.V1DeploymentSpec(selector=client.V1LabelSelector(match_labels=labels), template=template)
    body = client.V1Deployment(api_version="apps/v1", kind="Deployment", metadata=client.V1ObjectMeta(name="shop"), spec=spec)
    created = apps.create_namespaced_deployment(ns, body)
    assert created.spec.replicas == 1, created.spec
    assert created.spec.strategy.type == "RollingUpdate", created.spec.strategy
    assert created.spec.template.spec.restart_policy == "Always"
    assert created.spec.template.spec.containers[0].ports[0].protocol == "TCP"

    # Strategic (a dict), JSON (a list) and merge patches.
    sidecar = {"spec": {"template": {"spec": {"containers": [{"name": "log", "image": "busybox"}]}}}}
    patched = apps.patch_namespaced_deployment("shop", ns, sidecar)
    assert [c.name for c in patched.spec.template.spec.containers] == ["web", "log"], patched.spec.template
    patched = apps.patch_namespaced_deployment("shop", ns, [{"op": "replace", "path": "/spec/replicas", "value": 4}])
    assert patched.spec.replicas == 4
    patched = apps.patch_namespaced_deployment(
        "shop", ns, {"metadata": {"labels": {"tier": "web"}}}, _content_type="application/merge-patch+json"
    )
    assert patched.metadata.labels == {"tier": "web"}, patched.metadata.labels
    scale = apps.read_namespaced_deployment_scale("shop", ns)
    assert scale.spec.replicas == 4 and scale.status.selector == "app=shop", scale
    apps.patch_namespaced_deployment_scale("shop", ns, {"spec": {"replicas": 2}})
    assert apps.read_namespaced_deployment("shop", ns).spec.replicas == 2

    service = client.V1Service(
        api_version="v1",
        kind="Service",
        metadata=client.V1ObjectMeta(name="shop"),
        spec=client.V1ServiceSpec(selector=labels, ports=[client.V1ServicePort(name="http", port=80)]),
    )
    created = core.create_namespaced_service(ns, service)
    assert created.spec.type == "ClusterIP" and created.spec.ports[0].target_port == 80, created.spec
    patched = core.patch_namespaced_service("shop", ns, {"spec": {"ports": [{"name": "https", "port": 443}]}})
    assert [p.port for p in patched.spec.ports] == [80, 443], patched.spec.ports
    patched = core.patch_namespaced_service("shop", ns, [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
    assert patched.metadata.labels == {"a": "b"}
    patched = core.patch_namespaced_service(
        "shop", ns, {"spec": {"sessionAffinity": "ClientIP"}}, _content_type="application/merge-patch+json"
    )
    assert patched.spec.session_affinity == "ClientIP"
    assert names(core.list_namespaced_service(ns).items) == ["shop"]
    assert names(apps.list_namespaced_deployment(ns).items) == ["shop"]

    # (Bad bodies never leave this client: its models check types and required fields
    # first. tests/tests/workloads.rs sends them raw.)

    core.delete_namespaced_service("shop", ns)
    apps.delete_namespaced_deployment("shop", ns)
    stream = watch.Watch().stream(
        apps.list_namespaced_deployment,
        ns,
        resource_version=start,
        timeout_seconds=WATCH_TIMEOUT_S,
        _request_timeout=WATCH_READ_LIMIT_S,
    )
    seen = [(e["type"], e["object"].metadata.name) for e in stream if e["type"] != "BOOKMARK"]
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "ADDED" and kinds[-1] == "DELETED" and set(kinds[1:-1]) == {"MODIFIED"}, seen
    delete_namespace_and_wait(core, ns)


SCENARIOS = [
    scenario_namespaces,
    scenario_configmaps,
    scenario_secrets,
    scenario_bodies_without_type_meta,
    scenario_custom_resources,
    scenario_watch_resume,
    scenario_create_from_yaml,
    scenario_workloads,
]


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    api = config.new_client_from_config(config_file=argv[1])
    failed = []
    for scenario in SCENARIOS:
        try:
            scenario(api)
            print(f"ok     {scenario.__name__}", flush=True)
        except Exception:  # every scenario runs; each failure is reported in full
            print(f"FAILED {scenario.__name__}\n{traceback.format_exc()}", flush=True)
            failed.append(scenario.__name__)
    passed = len(SCENARIOS) - len(failed)
    print(f"{passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
