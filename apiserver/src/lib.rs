//! The generic Kubernetes API-server core, in the spirit of kube-apiserver's generic
//! registry. It knows no kcp kind: features bring their resources as table rows
//! ([`registry::Registry::add_rows`]) and their behaviour as a
//! [`registry::strategy::Strategy`] each row carries (kube's create/update strategies plus
//! after-commit hooks), registered at start-up by the binary that assembles them.
//!
//! A request meets these modules in this order:
//! - [`rest`]: the request's path and verb ([`rest::request_info`]), content negotiation
//!   ([`rest::negotiate`]) and `Status` errors ([`rest::status`]).
//! - [`discovery`]: `/api`, `/apis`, aggregated discovery, `/version`, OpenAPI v3
//!   (custom rows' schemas from [`openapi`]).
//! - [`verbs`]: one module per REST verb; they decode bodies, negotiate formats ([`table`])
//!   and call [`storage`].
//! - [`storage`]: create / guaranteed update / delete-with-finalizers / list over the
//!   store, with per-resource behaviour from [`registry`] and [`strategy`] (kind rules in
//!   [`kinds`]), keys and codec from [`objects`], patches from [`patch`], unknown-field
//!   pruning from [`validation`], field ownership and server-side apply from
//!   [`managed_fields`].

pub mod conditions;
pub mod discovery;
pub mod kinds;
pub mod managed_fields;
pub mod metrics;
pub mod namespace_defaults;
pub mod objects;
pub mod openapi;
pub mod patch;
pub mod registry;
pub mod rest;
pub mod storage;
pub mod strategy;
pub mod table;
pub mod validation;
pub mod verbs;
