//! The cache server's wire (`proto/cache.proto`): replication from shards (and child cache
//! servers) into a cache, and wildcard list/watch of replicas back out.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

tonic::include_proto!("atoll.cache.v1");
