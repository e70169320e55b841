use serde_json::{json, Value};

use super::*;

fn cron_tab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
            "spec": {
                "type": "object",
                "required": ["cronSpec"],
                "properties": {
                    "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                    "image": {"type": "string", "maxLength": 5},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                    "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0, "multipleOf": 0.5},
                    "batch": {"type": "integer", "multipleOf": 3},
                    "policy": {"type": "string", "enum": ["Allow", "Forbid", "Replace"]},
                    "level": {"type": "integer", "enum": [1, 2]},
                    "note": {"type": "string", "nullable": true, "minLength": 2},
                    "since": {"type": "string", "format": "date-time"},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "args": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"}},
                    "labels": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string"}},
                    "strict": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer", "format": "int32"}}}
                    },
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    "choice": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                    "either": {"type": "string", "anyOf": [{"minLength": 5}, {"pattern": "^x"}]},
                    "notEmpty": {"type": "string", "not": {"enum": [""]}}
                }
            },
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
        }
    })
}

fn cron_tab(spec: Value) -> Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "my-cron"}, "spec": spec})
}

fn check(object: &Value) -> Vec<String> {
    validate_object(object, &cron_tab_schema()).iter().map(ToString::to_string).collect()
}

const CRON: &str = "*/5 * * * *";

#[test]
fn valid_objects_pass() {
    for spec in [
        json!({"cronSpec": CRON}),
        json!({"cronSpec": CRON, "image": "nginx", "replicas": 3, "ratio": 1.5, "batch": 9, "policy": "Forbid", "level": 2}),
        json!({"cronSpec": CRON, "replicas": 2.0, "level": 1.0, "note": null, "since": "2024-01-02T03:04:05Z", "port": "http"}),
        json!({"cronSpec": CRON, "port": 8080, "args": ["a"], "labels": {"a": "b"}, "strict": {"a": "x"}, "free": {"anything": [1, {"x": null}]}}),
        json!({"cronSpec": CRON, "tags": ["a", "b"], "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}),
        json!({"cronSpec": CRON, "template": {"apiVersion": "v1", "kind": "Pod", "spec": {}}, "choice": {"a": "1"}, "either": "xy", "notEmpty": "z"}),
    ] {
        assert_eq!(check(&cron_tab(spec.clone())), Vec::<String>::new(), "{spec}");
    }
}

#[test]
fn value_validation_table() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"cronSpec": CRON, "replicas": "3"}), vec!["spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""]),
        (json!({"cronSpec": CRON, "replicas": true}), vec!["spec.replicas: Invalid value: \"boolean\": spec.replicas in body must be of type integer: \"boolean\""]),
        (json!({"cronSpec": CRON, "replicas": 2.5}), vec!["spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""]),
        (json!({"cronSpec": CRON, "replicas": null}), vec!["spec.replicas: Invalid value: \"null\": spec.replicas in body must be of type integer: \"null\""]),
        (json!({"cronSpec": CRON, "replicas": 0}), vec!["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"]),
        (json!({"cronSpec": CRON, "replicas": 11}), vec!["spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"]),
        (json!({"cronSpec": CRON, "ratio": 0}), vec!["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]),
        (json!({"cronSpec": CRON, "ratio": 1.25}), vec!["spec.ratio: Invalid value: 1.25: spec.ratio in body should be a multiple of 0.5"]),
        (json!({"cronSpec": CRON, "batch": 10}), vec!["spec.batch: Invalid value: 10: spec.batch in body should be a multiple of 3"]),
        (
            json!({"cronSpec": "every minute"}),
            vec!["spec.cronSpec: Invalid value: \"every minute\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'"],
        ),
        (json!({"image": "nginx"}), vec!["spec.cronSpec: Required value"]),
        (json!({"cronSpec": CRON, "image": "nginx:latest"}), vec!["spec.image: Too long: may not be more than 5 bytes"]),
        (json!({"cronSpec": CRON, "image": "ñañañ"}), vec![]),
        (json!({"cronSpec": CRON, "note": "x"}), vec!["spec.note: Invalid value: \"x\": spec.note in body should be at least 2 chars long"]),
        (
            json!({"cronSpec": CRON, "policy": "Sometimes"}),
            vec!["spec.policy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""],
        ),
        (json!({"cronSpec": CRON, "level": 3}), vec!["spec.level: Unsupported value: 3: supported values: \"1\", \"2\""]),
        (
            json!({"cronSpec": CRON, "since": "yesterday"}),
            vec!["spec.since: Invalid value: \"yesterday\": spec.since in body must be of type date-time: \"yesterday\""],
        ),
        (
            json!({"cronSpec": CRON, "port": true}),
            vec![
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
            ],
        ),
        (json!({"cronSpec": CRON, "args": []}), vec!["spec.args: Invalid value: 0: spec.args in body should have at least 1 items"]),
        (json!({"cronSpec": CRON, "args": ["a", "b", "c", "d"]}), vec!["spec.args: Too many: 4: must have at most 3 items"]),
        (
            json!({"cronSpec": CRON, "args": ["a", 1]}),
            vec!["spec.args[1]: Invalid value: \"integer\": spec.args[1] in body must be of type string: \"integer\""],
        ),
        (json!({"cronSpec": CRON, "labels": {"a": "1", "b": "2", "c": "3"}}), vec!["spec.labels: Too many: 3: must have at most 2 items"]),
        (
            json!({"cronSpec": CRON, "labels": {"a": 1}}),
            vec!["spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\""],
        ),
        (
            json!({"cronSpec": CRON, "strict": {"a": "x", "b": "y"}}),
            vec!["spec.strict: Invalid value: \"b\": spec.strict.b in body is a forbidden property"],
        ),
        (
            json!({"cronSpec": CRON, "choice": {"a": "1", "b": "2"}}),
            vec!["<nil>: Invalid value: \"\": \"spec.choice\" must validate one and only one schema (oneOf). Found 2 valid alternatives"],
        ),
        (
            json!({"cronSpec": CRON, "choice": {}}),
            vec![
                "<nil>: Invalid value: \"\": \"spec.choice\" must validate one and only one schema (oneOf). Found none valid",
                "spec.choice.a: Required value",
            ],
        ),
        (
            json!({"cronSpec": CRON, "either": "abc"}),
            vec![
                "<nil>: Invalid value: \"\": \"spec.either\" must validate at least one schema (anyOf)",
                "spec.either: Invalid value: \"abc\": spec.either in body should be at least 5 chars long",
            ],
        ),
        (json!({"cronSpec": CRON, "notEmpty": ""}), vec!["<nil>: Invalid value: \"\": \"spec.notEmpty\" must not validate the schema (not)"]),
        (
            json!({"cronSpec": CRON, "template": {"kind": "Pod"}}),
            vec!["spec.template.apiVersion: Required value: must not be empty"],
        ),
        (
            json!({"cronSpec": CRON, "ports": [{"name": "a", "port": 1}, {"port": 2}, {"name": "a", "port": 3}]}),
            vec![
                "spec.ports[1].name: Required value",
                "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":\"a\"}",
            ],
        ),
        (json!({"cronSpec": CRON, "tags": ["x", "y", "x"]}), vec!["spec.tags[2]: Duplicate value: \"x\""]),
    ];
    for (spec, expected) in cases {
        assert_eq!(check(&cron_tab(spec.clone())), expected, "{spec}");
    }
}

#[test]
fn every_bad_field_in_document_order() {
    let object = json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "a-name-longer-than-twenty"},
        "spec": {"replicas": 0, "image": "busybox", "cronSpec": 5, "args": [1, "ok", 2]},
        "status": {"replicas": "two"}
    });
    assert_eq!(
        check(&object),
        vec![
            "metadata.name: Too long: may not be more than 20 bytes",
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.image: Too long: may not be more than 5 bytes",
            "spec.cronSpec: Invalid value: \"integer\": spec.cronSpec in body must be of type string: \"integer\"",
            "spec.args[0]: Invalid value: \"integer\": spec.args[0] in body must be of type string: \"integer\"",
            "spec.args[2]: Invalid value: \"integer\": spec.args[2] in body must be of type string: \"integer\"",
            "status.replicas: Invalid value: \"string\": status.replicas in body must be of type integer: \"string\"",
        ]
    );
}

#[test]
fn root_and_reasons() {
    let errors = validate_object(&json!(["not", "an", "object"]), &cron_tab_schema());
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(texts, vec!["<nil>: Invalid value: \"array\":  in body must be of type object: \"array\""]);
    assert_eq!(errors[0].reason(), "FieldValueTypeInvalid");
    let errors = validate_object(&cron_tab(json!({"policy": "x"})), &cron_tab_schema());
    let reasons: Vec<&str> = errors.iter().map(FieldError::reason).collect();
    assert_eq!(reasons, vec!["FieldValueNotSupported", "FieldValueRequired"]);
    assert!(validate_object(&json!({"a": 1}), &json!("not a schema")).is_empty());
}
