//! `rkube`: the single binary of rkube, with one subcommand per component (`server`, `agent`,
//! `apiserver`, `scheduler`, `kubelet`, ...).
//!
//! Today only the storage layer exists (the `rkube-store` crate); the subcommands come with the
//! API server core. Until then the binary says so and exits with status 2.

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("rkube {version}");
        return;
    }
    eprintln!(
        "rkube {version}: no subcommands yet. The storage layer is built (see the README); \
         `rkube server` comes with the API server core."
    );
    std::process::exit(2);
}
