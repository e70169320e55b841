//! core/v1 pod volumes: Volume, the volume sources a PodSpec may use, and their projections.

use super::{OBJECT_FIELD_SELECTOR, RESOURCE_FIELD_SELECTOR};
use crate::protobuf::tables::LOCAL_OBJECT_REFERENCE;
use crate::protobuf::FieldKind::{self, Bool, Inline, Int32, Int64, Quantity, String};
use crate::protobuf::{list, non_zero, on_wire, Message};

// core/v1 volumes. Volume's source is an embedded struct: its one set field sits next to `name`.

pub(super) static VOLUME: Message = Message {
    name: "Volume",
    fields: &[on_wire(1, "name", String), on_wire(2, "volumeSource", Inline(&VOLUME_SOURCE))],
};

static VOLUME_SOURCE: Message = Message {
    name: "VolumeSource",
    fields: &[
        on_wire(1, "hostPath", FieldKind::Message(&HOST_PATH_VOLUME_SOURCE)),
        on_wire(2, "emptyDir", FieldKind::Message(&EMPTY_DIR_VOLUME_SOURCE)),
        on_wire(6, "secret", FieldKind::Message(&SECRET_VOLUME_SOURCE)),
        on_wire(7, "nfs", FieldKind::Message(&NFS_VOLUME_SOURCE)),
        on_wire(10, "persistentVolumeClaim", FieldKind::Message(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE)),
        on_wire(16, "downwardAPI", FieldKind::Message(&DOWNWARD_API_VOLUME_SOURCE)),
        on_wire(19, "configMap", FieldKind::Message(&CONFIG_MAP_VOLUME_SOURCE)),
        on_wire(26, "projected", FieldKind::Message(&PROJECTED_VOLUME_SOURCE)),
        on_wire(30, "image", FieldKind::Message(&IMAGE_VOLUME_SOURCE)),
    ],
};

static HOST_PATH_VOLUME_SOURCE: Message =
    Message { name: "HostPathVolumeSource", fields: &[on_wire(1, "path", String), on_wire(2, "type", String)] };

static EMPTY_DIR_VOLUME_SOURCE: Message = Message {
    name: "EmptyDirVolumeSource",
    fields: &[non_zero(1, "medium", String), on_wire(2, "sizeLimit", Quantity)],
};

static SECRET_VOLUME_SOURCE: Message = Message {
    name: "SecretVolumeSource",
    fields: &[
        non_zero(1, "secretName", String),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(3, "defaultMode", Int32),
        on_wire(4, "optional", Bool),
    ],
};

static NFS_VOLUME_SOURCE: Message = Message {
    name: "NFSVolumeSource",
    fields: &[on_wire(1, "server", String), on_wire(2, "path", String), non_zero(3, "readOnly", Bool)],
};

static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: Message = Message {
    name: "PersistentVolumeClaimVolumeSource",
    fields: &[on_wire(1, "claimName", String), non_zero(2, "readOnly", Bool)],
};

static DOWNWARD_API_VOLUME_SOURCE: Message = Message {
    name: "DownwardAPIVolumeSource",
    fields: &[list(1, "items", FieldKind::Message(&DOWNWARD_API_VOLUME_FILE)), on_wire(2, "defaultMode", Int32)],
};

static DOWNWARD_API_VOLUME_FILE: Message = Message {
    name: "DownwardAPIVolumeFile",
    fields: &[
        on_wire(1, "path", String),
        on_wire(2, "fieldRef", FieldKind::Message(&OBJECT_FIELD_SELECTOR)),
        on_wire(3, "resourceFieldRef", FieldKind::Message(&RESOURCE_FIELD_SELECTOR)),
        on_wire(4, "mode", Int32),
    ],
};

static CONFIG_MAP_VOLUME_SOURCE: Message = Message {
    name: "ConfigMapVolumeSource",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(3, "defaultMode", Int32),
        on_wire(4, "optional", Bool),
    ],
};

static KEY_TO_PATH: Message = Message {
    name: "KeyToPath",
    fields: &[on_wire(1, "key", String), on_wire(2, "path", String), on_wire(3, "mode", Int32)],
};

static PROJECTED_VOLUME_SOURCE: Message = Message {
    name: "ProjectedVolumeSource",
    fields: &[list(1, "sources", FieldKind::Message(&VOLUME_PROJECTION)), on_wire(2, "defaultMode", Int32)],
};

static VOLUME_PROJECTION: Message = Message {
    name: "VolumeProjection",
    fields: &[
        on_wire(1, "secret", FieldKind::Message(&SECRET_PROJECTION)),
        on_wire(2, "downwardAPI", FieldKind::Message(&DOWNWARD_API_PROJECTION)),
        on_wire(3, "configMap", FieldKind::Message(&CONFIG_MAP_PROJECTION)),
        on_wire(4, "serviceAccountToken", FieldKind::Message(&SERVICE_ACCOUNT_TOKEN_PROJECTION)),
    ],
};

static SECRET_PROJECTION: Message = Message {
    name: "SecretProjection",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(4, "optional", Bool),
    ],
};

static DOWNWARD_API_PROJECTION: Message = Message {
    name: "DownwardAPIProjection",
    fields: &[list(1, "items", FieldKind::Message(&DOWNWARD_API_VOLUME_FILE))],
};

static CONFIG_MAP_PROJECTION: Message = Message {
    name: "ConfigMapProjection",
    fields: &[
        on_wire(1, "localObjectReference", Inline(&LOCAL_OBJECT_REFERENCE)),
        list(2, "items", FieldKind::Message(&KEY_TO_PATH)),
        on_wire(4, "optional", Bool),
    ],
};

static SERVICE_ACCOUNT_TOKEN_PROJECTION: Message = Message {
    name: "ServiceAccountTokenProjection",
    fields: &[non_zero(1, "audience", String), on_wire(2, "expirationSeconds", Int64), on_wire(3, "path", String)],
};

static IMAGE_VOLUME_SOURCE: Message = Message {
    name: "ImageVolumeSource",
    fields: &[non_zero(1, "reference", String), non_zero(2, "pullPolicy", String)],
};
