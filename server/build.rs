//! Generates the gRPC facade's messages, server and client from `proto/rkube/v1/api.proto`
//! (protoc from Debian's protobuf-compiler), and its file descriptor set for the reflection
//! service.

fn main() -> std::io::Result<()> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("rkube_api_v1_descriptor.bin"))
        .bytes(".rkube.api.v1")
        .compile_protos(&["proto/rkube/v1/api.proto"], &["proto"])
}
