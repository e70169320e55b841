//! CRD-level tables: a realistic CronTab CRD, broken one way per case.

use serde_json::{json, Value};

use super::*;

fn cron_tab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["cronSpec"],
                            "properties": {
                                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                                "image": {"type": "string"},
                                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                            }
                        },
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "labelSelector": {"type": "string"}}}
                    }
                }},
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.labelSelector"}
                },
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ]
            }]
        }
    })
}

fn defaulted(mut crd: Value) -> Value {
    default_crd(&mut crd);
    crd
}

fn texts(errors: Vec<FieldError>) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

/// A second version identical to the first but not the storage version.
fn with_v2(crd: &mut Value, storage: bool) {
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(storage);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
}

#[test]
fn create_table() {
    type Mutation = fn(&mut Value);
    let cases: Vec<(&str, Mutation, Vec<&str>)> = vec![
        ("valid", |_| {}, vec![]),
        ("valid with two versions", |crd| with_v2(crd, false), vec![]),
        (
            "name must be plural.group",
            |crd| crd["metadata"]["name"] = json!("crontab.stable.example.com"),
            vec!["metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group"],
        ),
        (
            "group needs a dot",
            |crd| {
                crd["spec"]["group"] = json!("example");
                crd["metadata"]["name"] = json!("crontabs.example");
            },
            vec!["spec.group: Invalid value: \"example\": should be a domain with at least one dot"],
        ),
        (
            "scope",
            |crd| crd["spec"]["scope"] = json!("Global"),
            vec!["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""],
        ),
        (
            "schema required",
            |crd| {
                crd["spec"]["versions"][0].as_object_mut().unwrap().remove("schema");
            },
            vec!["spec.versions[0].schema.openAPIV3Schema: Required value"],
        ),
        (
            "one storage version",
            |crd| with_v2(crd, true),
            vec![
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:true, ...}, apiextensions.CustomResourceDefinitionVersion{Name:\"v2\", Served:true, Storage:true, ...}}: must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: []string{\"v1\"}: must have the storage version v2",
            ],
        ),
        (
            "unique version names",
            |crd| {
                with_v2(crd, false);
                crd["spec"]["versions"][1]["name"] = json!("v1");
            },
            vec!["spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:true, ...}, apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:false, ...}}: must contain unique version names"],
        ),
        (
            "version name",
            |crd| crd["spec"]["versions"][0]["name"] = json!("V1"),
            vec![
                "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
        (
            "shared schema reported at spec.validation",
            |crd| {
                let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
                spec.as_object_mut().unwrap().remove("type");
            },
            vec!["spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"],
        ),
        (
            "per-version schema reported at spec.versions[i]",
            |crd| {
                with_v2(crd, false);
                let replicas = &mut crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"];
                replicas["default"] = json!(0);
            },
            vec!["spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1"],
        ),
        (
            "root keywords with status",
            |crd| crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = json!("array"),
            vec![
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                "spec.validation.openAPIV3Schema.items: Required value: must be specified",
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": must be object at the root",
            ],
        ),
        (
            "printer column",
            |crd| crd["spec"]["versions"][0]["additionalPrinterColumns"][1]["jsonPath"] = json!("spec.replicas"),
            vec!["spec.additionalPrinterColumns[1].JSONPath: Invalid value: \"spec.replicas\": must be a simple json path starting with ."],
        ),
        (
            "scale path",
            |crd| crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = json!(".status.replicas"),
            vec!["spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec"],
        ),
        (
            "kind and listKind",
            |crd| crd["spec"]["names"]["listKind"] = json!("CronTab"),
            vec!["spec.names.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same"],
        ),
        (
            "plural required",
            |crd| {
                crd["spec"]["names"]["plural"] = json!("");
                crd["metadata"]["name"] = json!(".stable.example.com");
            },
            vec![
                "metadata.name: Invalid value: \".stable.example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.names.plural: Required value",
            ],
        ),
        (
            "protected group needs approval",
            |crd| {
                crd["spec"]["group"] = json!("stable.k8s.io");
                crd["metadata"]["name"] = json!("crontabs.stable.k8s.io");
            },
            vec!["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"],
        ),
        (
            "preserveUnknownFields",
            |crd| crd["spec"]["preserveUnknownFields"] = json!(true),
            vec![
                "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
            ],
        ),
        (
            "webhook conversion",
            |crd| crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://conv.example.com/convert"}, "conversionReviewVersions": ["v1"]}}),
            vec![],
        ),
    ];
    for (name, mutate, expected) in cases {
        let mut crd = cron_tab_crd();
        mutate(&mut crd);
        assert_eq!(texts(validate_crd(&defaulted(crd))), expected, "{name}");
    }
}

#[test]
fn update_table() {
    type Mutation = fn(&mut Value);
    let established =
        |crd: &mut Value| crd["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    let cases: Vec<(&str, bool, Mutation, Vec<&str>)> = vec![
        ("unchanged", true, |_| {}, vec![]),
        ("scope is immutable once established", true, |crd| crd["spec"]["scope"] = json!("Cluster"), vec!["spec.scope: Invalid value: \"Cluster\": field is immutable"]),
        ("scope may change before", false, |crd| crd["spec"]["scope"] = json!("Cluster"), vec![]),
        (
            "group is immutable",
            false,
            |crd| crd["spec"]["group"] = json!("other.example.com"),
            vec!["spec.group: Invalid value: \"other.example.com\": field is immutable"],
        ),
        ("adding v2 as storage keeps v1 stored", true, |crd| {
            with_v2(crd, true);
            crd["spec"]["versions"][0]["storage"] = json!(false);
        }, vec![]),
        (
            "a stored version may not be removed",
            true,
            |crd| {
                with_v2(crd, true);
                crd["spec"]["versions"].as_array_mut().unwrap().remove(0);
            },
            vec!["status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"],
        ),
    ];
    for (name, is_established, mutate, expected) in cases {
        let mut old = defaulted(cron_tab_crd());
        prepare_crd_for_create(&mut old);
        if is_established {
            established(&mut old);
        }
        let mut new = old.clone();
        mutate(&mut new);
        prepare_crd_for_update(&old, &mut new);
        assert_eq!(texts(validate_crd_update(&old, &new)), expected, "{name}");
    }
}

#[test]
fn crd_objects_default_and_validate() {
    let crd = defaulted(cron_tab_crd());
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut object = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"}, "spec": {"cronSpec": "* * * * */5", "replicas": null}});
    apply_defaults(&mut object, schema);
    assert_eq!(object["spec"]["replicas"], 1);
    assert!(validate_object(&object, schema).is_empty());
    object["spec"]["replicas"] = json!(12);
    let errors = validate_object(&object, schema);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].field, "spec.replicas");
    assert_eq!(errors[0].reason(), "FieldValueInvalid");
    assert_eq!(errors[0].message(), "Invalid value: 12: spec.replicas in body should be less than or equal to 10");
}
