//! The small parts of a CRD spec, each validated on its own: names, subresources, printer
//! columns, the conversion strategy and a version's deprecation warning.
//!
//! Paths use kube's *internal* field names where they differ from v1 JSON, because kube
//! validates the internal type: a printer column's path is `…JSONPath`, and the webhook
//! settings are `spec.conversion.webhookClientConfig` / `spec.conversion.conversionReviewVersions`.

use serde_json::Value;

use super::field_error::{BadValue, FieldError};
use super::node::Node;
use super::{child, index};

const DNS1035_LABEL_MAX_LENGTH: usize = 63;
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const PRINTER_COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const WEBHOOK_URL_FORM: &str = "; desired format: https://host[/path]";

/// kube's `IsDNS1035Label` messages (plural, singular, short names, categories, versions).
pub(crate) fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errors.push(format!("must be no more than {DNS1035_LABEL_MAX_LENGTH} characters"));
    }
    let bytes = value.as_bytes();
    let shaped = matches!(bytes.first(), Some(b'a'..=b'z'))
        && matches!(bytes.last(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.iter().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'));
    if !shaped {
        errors.push(format!(
            "{DNS1035_LABEL_ERR_MSG} (e.g. 'my-name',  or 'abc-123', regex used for validation is '{DNS1035_LABEL_FMT}')"
        ));
    }
    errors
}

fn label_error(path: String, value: &str, prefix: &str) -> Option<FieldError> {
    let problems = dns1035_label(value);
    (!problems.is_empty())
        .then(|| FieldError::invalid(path, BadValue::string(value), format!("{prefix}{}", problems.join(","))))
}

/// `ValidateCustomResourceDefinitionNames` for `spec.names` or `status.acceptedNames`.
pub(crate) fn validate_names(names: Option<Node<'_>>, path: &str) -> Vec<FieldError> {
    let Some(names) = names else { return Vec::new() };
    let mut errors = Vec::new();
    const MIXED: &str = "may have mixed case, but should otherwise match: ";
    for (field, lower, prefix) in
        [("plural", false, ""), ("singular", false, ""), ("kind", true, MIXED), ("listKind", true, MIXED)]
    {
        let value = names.str(field);
        let checked = if lower { value.to_lowercase() } else { value.to_string() };
        if !value.is_empty() {
            if let Some(mut error) = label_error(child(path, field), &checked, prefix) {
                error.value = BadValue::string(value);
                errors.push(error);
            }
        }
    }
    for (i, short) in names.strings("shortNames").into_iter().enumerate() {
        errors.extend(label_error(index(&child(path, "shortNames"), i), short, ""));
    }
    let kind = names.str("kind");
    if !kind.is_empty() && kind == names.str("listKind") {
        errors.push(FieldError::invalid(
            child(path, "listKind"),
            BadValue::string(kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in names.strings("categories").into_iter().enumerate() {
        errors.extend(label_error(index(&child(path, "categories"), i), category, ""));
    }
    errors
}

/// `validateSimpleJSONPath`: a path must start with `.`.
fn simple_json_path_errors(path: String, value: &str) -> Vec<FieldError> {
    if value.is_empty() {
        return vec![FieldError::invalid(path, BadValue::string(value), "must not be empty")];
    }
    if !value.starts_with('.') {
        return vec![FieldError::invalid(path, BadValue::string(value), "must be a simple json path starting with .")];
    }
    Vec::new()
}

/// `ValidateCustomResourceDefinitionSubresources`: the scale paths.
pub(crate) fn validate_subresources(subresources: Option<Node<'_>>, path: &str) -> Vec<FieldError> {
    let Some(scale) = subresources.and_then(|s| s.schema("scale")) else { return Vec::new() };
    let mut errors = Vec::new();
    for (field, prefix, detail) in [
        ("specReplicasPath", ".spec.", "should be a json path under .spec"),
        ("statusReplicasPath", ".status.", "should be a json path under .status"),
    ] {
        let field_path = child(path, &format!("scale.{field}"));
        let value = scale.str(field);
        if value.is_empty() {
            errors.push(FieldError::required(field_path, ""));
            continue;
        }
        let problems = simple_json_path_errors(field_path.clone(), value);
        if !problems.is_empty() {
            errors.extend(problems);
        } else if !value.starts_with(prefix) {
            errors.push(FieldError::invalid(field_path, BadValue::string(value), detail));
        }
    }
    let selector = scale.str("labelSelectorPath");
    if !selector.is_empty() {
        let field_path = child(path, "scale.labelSelectorPath");
        let problems = simple_json_path_errors(field_path.clone(), selector);
        if !problems.is_empty() {
            errors.extend(problems);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            let detail = "should be a json path under either .spec or .status";
            errors.push(FieldError::invalid(field_path, BadValue::string(selector), detail));
        }
    }
    errors
}

/// `ValidateCustomResourceColumnDefinition` for one printer column.
pub(crate) fn validate_column(column: Node<'_>, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if column.str("name").is_empty() {
        errors.push(FieldError::required(child(path, "name"), ""));
    }
    let column_type = column.str("type");
    let types_detail = format!("must be one of {PRINTER_COLUMN_TYPES}");
    if column_type.is_empty() {
        errors.push(FieldError::required(child(path, "type"), types_detail));
    } else if !PRINTER_COLUMN_TYPES.split(',').any(|t| t == column_type) {
        errors.push(FieldError::invalid(child(path, "type"), BadValue::string(column_type), types_detail));
    }
    let format = column.str("format");
    if !format.is_empty() && !PRINTER_COLUMN_FORMATS.split(',').any(|f| f == format) {
        let detail = format!("must be one of {PRINTER_COLUMN_FORMATS}");
        errors.push(FieldError::invalid(child(path, "format"), BadValue::string(format), detail));
    }
    let json_path = column.str("jsonPath");
    if json_path.is_empty() {
        errors.push(FieldError::required(child(path, "JSONPath"), ""));
    } else {
        errors.extend(simple_json_path_errors(child(path, "JSONPath"), json_path));
    }
    errors
}

/// `ValidateDeprecationWarning` for one version.
pub(crate) fn validate_deprecation_warning(version: Node<'_>, path: &str) -> Vec<FieldError> {
    let Some(warning) = version.opt_str("deprecationWarning") else { return Vec::new() };
    let field = child(path, "deprecationWarning");
    let invalid = |detail: String| FieldError::invalid(field.clone(), BadValue::string(warning), detail);
    if !version.flag("deprecated") {
        return vec![invalid("can only be set for deprecated versions".to_string())];
    }
    let mut errors = Vec::new();
    if warning.len() > 256 {
        errors.push(invalid("must be <= 256 characters long".to_string()));
    }
    if warning.is_empty() {
        errors.push(invalid("must not be an empty string".to_string()));
    }
    if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' ')) {
        errors.push(invalid(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        )));
    }
    errors
}

/// `validateCustomResourceConversion` for `spec.conversion` (after defaulting).
pub(crate) fn validate_conversion(conversion: Option<Node<'_>>, preserve_unknown: bool) -> Vec<FieldError> {
    let Some(conversion) = conversion else { return Vec::new() };
    let path = "spec.conversion";
    let strategy = conversion.str("strategy");
    let mut errors = Vec::new();
    if strategy != "None" && preserve_unknown {
        let detail = "must be None if spec.preserveUnknownFields is true";
        errors.push(FieldError::invalid("spec.conversion.strategy", BadValue::string(strategy), detail));
    }
    match strategy {
        "" => errors.push(FieldError::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => errors.push(FieldError::not_supported(
            "spec.conversion.strategy",
            BadValue::string(other),
            &["None", "Webhook"],
        )),
    }
    let webhook = conversion.schema("webhook");
    let client_config = webhook.and_then(|w| w.schema("clientConfig"));
    let review_versions = webhook.map(|w| w.strings("conversionReviewVersions")).unwrap_or_default();
    let config_path = child(path, "webhookClientConfig");
    let versions_path = child(path, "conversionReviewVersions");
    if strategy != "Webhook" {
        if client_config.is_some() {
            errors.push(FieldError::forbidden(config_path, "should not be set when strategy is not set to Webhook"));
        }
        if !review_versions.is_empty() {
            errors.push(FieldError::forbidden(versions_path, "should not be set when strategy is not set to Webhook"));
        }
        return errors;
    }
    match client_config {
        None => errors.push(FieldError::required(config_path, "required when strategy is set to Webhook")),
        Some(config) => match (config.opt_str("url"), config.schema("service")) {
            (Some(url), None) => errors.extend(webhook_url_errors(&child(&config_path, "url"), url)),
            (None, Some(service)) => errors.extend(webhook_service_errors(&child(&config_path, "service"), service)),
            _ => errors.push(FieldError::required(config_path, "exactly one of url or service is required")),
        },
    }
    errors.extend(review_versions_errors(&versions_path, &review_versions));
    errors
}

fn review_versions_errors(path: &str, versions: &[&str]) -> Vec<FieldError> {
    if versions.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errors = Vec::new();
    let mut seen = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        if seen.contains(version) {
            errors.push(FieldError::invalid(index(path, i), BadValue::string(version), "duplicate version"));
            continue;
        }
        seen.push(version);
        for problem in dns1035_label(version) {
            errors.push(FieldError::invalid(index(path, i), BadValue::string(version), problem));
        }
    }
    if !versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
        errors.push(FieldError::invalid(
            path,
            BadValue::string_slice(versions),
            "must include at least one of v1, v1beta1",
        ));
    }
    errors
}

/// `ValidateWebhookURL` with https required.
fn webhook_url_errors(path: &str, url: &str) -> Vec<FieldError> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((scheme, rest))
            if scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (scheme.to_ascii_lowercase(), rest)
        }
        _ => (String::new(), rest),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest.strip_prefix("//").map(|a| a.split('/').next().unwrap_or_default()).unwrap_or_default();
    let (user, host) = authority.rsplit_once('@').map_or((None, authority), |(u, h)| (Some(u), h));
    let mut errors = Vec::new();
    let invalid = |value: &str, detail: String| FieldError::invalid(path, BadValue::string(value), detail);
    if scheme != "https" {
        errors.push(invalid(&scheme, format!("'https' is the only allowed URL scheme{WEBHOOK_URL_FORM}")));
    }
    if host.is_empty() {
        errors.push(invalid(host, format!("host must be specified{WEBHOOK_URL_FORM}")));
    }
    if let Some(user) = user {
        errors.push(invalid(user, "user information is not permitted in the URL".to_string()));
    }
    if !fragment.is_empty() {
        errors.push(invalid(fragment, "fragments are not permitted in the URL".to_string()));
    }
    if !query.is_empty() {
        errors.push(invalid(query, "query parameters are not permitted in the URL".to_string()));
    }
    errors
}

/// `ValidateWebhookService`: name, namespace, port and a path of DNS-subdomain segments.
fn webhook_service_errors(path: &str, service: Node<'_>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if service.str("name").is_empty() {
        errors.push(FieldError::required(child(path, "name"), "service name is required"));
    }
    if service.str("namespace").is_empty() {
        errors.push(FieldError::required(child(path, "namespace"), "service namespace is required"));
    }
    let port = service.integer("port").unwrap_or(443);
    if !(1..=65535).contains(&port) {
        let detail = "port is not valid: must be between 1 and 65535, inclusive";
        errors.push(FieldError::invalid(child(path, "port"), BadValue::Json(Value::from(port)), detail));
    }
    let Some(url_path) = service.opt_str("path") else { return errors };
    let path_field = child(path, "path");
    let invalid = |detail: String| FieldError::invalid(path_field.clone(), BadValue::string(url_path), detail);
    if url_path.is_empty() || url_path == "/" {
        return errors;
    }
    if url_path == "//" {
        errors.push(invalid("segment[0] may not be empty".to_string()));
        return errors;
    }
    if !url_path.starts_with('/') {
        errors.push(invalid("must start with a '/'".to_string()));
    }
    let trimmed = url_path.get(1..).unwrap_or_default();
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errors.push(invalid(format!("segment[{i}] may not be empty")));
            continue;
        }
        for problem in crate::names::dns1123_subdomain(step) {
            errors.push(invalid(format!("segment[{i}]: {problem}")));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn names_table() {
        let cases = [
            (json!({"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": ["ct"]}), vec![]),
            (
                json!({"plural": "CronTabs", "singular": "1crontab", "kind": "Cron_Tab", "listKind": "Cron_Tab"}),
                vec![
                    format!("spec.names.plural: Invalid value: \"CronTabs\": {DNS1035}"),
                    format!("spec.names.singular: Invalid value: \"1crontab\": {DNS1035}"),
                    format!("spec.names.kind: Invalid value: \"Cron_Tab\": may have mixed case, but should otherwise match: {DNS1035}"),
                    format!("spec.names.listKind: Invalid value: \"Cron_Tab\": may have mixed case, but should otherwise match: {DNS1035}"),
                    "spec.names.listKind: Invalid value: \"Cron_Tab\": kind and listKind may not be the same".to_string(),
                ],
            ),
            (
                json!({"plural": "a", "kind": "A", "listKind": "AList", "shortNames": ["ok", "Not-OK"], "categories": ["all", "x_y"]}),
                vec![
                    format!("spec.names.shortNames[1]: Invalid value: \"Not-OK\": {DNS1035}"),
                    format!("spec.names.categories[1]: Invalid value: \"x_y\": {DNS1035}"),
                ],
            ),
        ];
        for (names, expected) in cases {
            assert_eq!(texts(validate_names(Node::of(&names), "spec.names")), expected, "{names}");
        }
    }

    #[test]
    fn subresources_and_columns() {
        let scale = json!({"status": {}, "scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas", "labelSelectorPath": ".metadata.labels"}});
        assert_eq!(
            texts(validate_subresources(Node::of(&scale), "spec.versions[0].subresources")),
            vec![
                "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
                "spec.versions[0].subresources.scale.statusReplicasPath: Invalid value: \"status.replicas\": must be a simple json path starting with .",
                "spec.versions[0].subresources.scale.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status",
            ]
        );
        let missing = json!({"scale": {}});
        assert_eq!(
            texts(validate_subresources(Node::of(&missing), "spec.subresources")),
            vec![
                "spec.subresources.scale.specReplicasPath: Required value",
                "spec.subresources.scale.statusReplicasPath: Required value"
            ]
        );
        let column = json!({"type": "text", "format": "uuid", "jsonPath": "spec.x"});
        assert_eq!(
            texts(validate_column(Node::of(&column).unwrap(), "spec.versions[0].additionalPrinterColumns[0]")),
            vec![
                "spec.versions[0].additionalPrinterColumns[0].name: Required value",
                "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
                "spec.versions[0].additionalPrinterColumns[0].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password",
                "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.x\": must be a simple json path starting with .",
            ]
        );
        let good = json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"});
        assert!(validate_column(Node::of(&good).unwrap(), "c").is_empty());
    }

    #[test]
    fn conversion_table() {
        let cases = [
            (json!({"strategy": "None"}), vec![]),
            (json!({"strategy": "Magic"}), vec!["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\"".to_string()]),
            (
                json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}),
                vec!["spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook".to_string()],
            ),
            (
                json!({"strategy": "Webhook"}),
                vec![
                    "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook".to_string(),
                    "spec.conversion.conversionReviewVersions: Required value".to_string(),
                ],
            ),
            (
                json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://user@example.com/convert?x=1#frag"}, "conversionReviewVersions": ["v2", "v2"]}}),
                vec![
                    "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]".to_string(),
                    "spec.conversion.webhookClientConfig.url: Invalid value: \"user\": user information is not permitted in the URL".to_string(),
                    "spec.conversion.webhookClientConfig.url: Invalid value: \"frag\": fragments are not permitted in the URL".to_string(),
                    "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL".to_string(),
                    "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version".to_string(),
                    "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1".to_string(),
                ],
            ),
            (
                json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "conv", "namespace": "", "port": 0, "path": "/a//B"}}, "conversionReviewVersions": ["v1"]}}),
                vec![
                    "spec.conversion.webhookClientConfig.service.namespace: Required value: service namespace is required".to_string(),
                    "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".to_string(),
                    "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B\": segment[1] may not be empty".to_string(),
                    "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B\": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string(),
                ],
            ),
        ];
        for (conversion, expected) in cases {
            assert_eq!(texts(validate_conversion(Node::of(&conversion), false)), expected, "{conversion}");
        }
    }

    #[test]
    fn deprecation_warning() {
        let not_deprecated = json!({"name": "v1", "deprecationWarning": "old"});
        assert_eq!(
            texts(validate_deprecation_warning(Node::of(&not_deprecated).unwrap(), "spec.versions[0]")),
            vec![
                "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions"
            ]
        );
        let empty = json!({"deprecated": true, "deprecationWarning": ""});
        assert_eq!(
            texts(validate_deprecation_warning(Node::of(&empty).unwrap(), "v")),
            vec!["v.deprecationWarning: Invalid value: \"\": must not be an empty string"]
        );
    }
}
