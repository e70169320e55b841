//! Generates the gRPC services of `proto/` with a vendored protoc, so no system protoc
//! is needed to build. Without the `grpc` feature there is nothing to generate.

#[cfg(not(feature = "grpc"))]
fn main() {}

#[cfg(feature = "grpc")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto");
    tonic_prost_build::configure()
        .build_transport(false)
        .compile_protos(&["proto/index.proto", "proto/cache.proto"], &["proto"])?;
    Ok(())
}
