//! The index feed (`proto/index.proto`): shards stream their logical clusters and
//! workspaces to front-proxies, which route `/clusters/<path>` from that index.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("atoll.index.v1");
