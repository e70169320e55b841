//! Group/version/resource and group/version/kind identifiers.

use std::fmt;

/// A group and version, e.g. `apps/v1`; the core group is the empty string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersion {
    /// API group; empty for the legacy core group served under `/api`.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
}

impl GroupVersion {
    /// Builds a group-version from its parts.
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        Self { group: group.into(), version: version.into() }
    }

    /// Parses an `apiVersion` string: `v1` (core) or `group/version`.
    pub fn parse_api_version(api_version: &str) -> Option<Self> {
        match api_version.split_once('/') {
            None if !api_version.is_empty() => Some(Self::new("", api_version)),
            Some((group, version)) if !group.is_empty() && !version.is_empty() => Some(Self::new(group, version)),
            _ => None,
        }
    }

    /// The `apiVersion` string objects of this group-version carry.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The URL prefix under a cluster root: `api/v1` or `apis/<group>/<version>`.
    pub fn url_prefix(&self) -> String {
        if self.group.is_empty() {
            format!("api/{}", self.version)
        } else {
            format!("apis/{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.api_version())
    }
}

/// A group and resource (plural, lower case), the storage identity of a resource type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// API group; empty for core.
    pub group: String,
    /// Plural resource name, e.g. `configmaps`.
    pub resource: String,
}

impl GroupResource {
    /// Builds a group-resource from its parts.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self { group: group.into(), resource: resource.into() }
    }
}

impl fmt::Display for GroupResource {
    /// Formats as kube-apiserver does in messages: `configmaps` or `leases.coordination.k8s.io`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    /// API group; empty for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind, e.g. `ConfigMap`.
    pub kind: String,
}

impl GroupVersionKind {
    /// Builds a group-version-kind from its parts.
    pub fn new(group: impl Into<String>, version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self { group: group.into(), version: version.into(), kind: kind.into() }
    }

    /// The group-version part.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_round_trip() {
        for (text, group, version) in [("v1", "", "v1"), ("apps/v1", "apps", "v1")] {
            let gv = GroupVersion::parse_api_version(text).unwrap();
            assert_eq!((gv.group.as_str(), gv.version.as_str()), (group, version));
            assert_eq!(gv.api_version(), text);
        }
        for bad in ["", "/v1", "apps/", "/"] {
            assert!(GroupVersion::parse_api_version(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn group_resource_formats_like_kube() {
        assert_eq!(GroupResource::new("", "configmaps").to_string(), "configmaps");
        assert_eq!(GroupResource::new("coordination.k8s.io", "leases").to_string(), "leases.coordination.k8s.io");
    }
}
