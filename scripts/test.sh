#!/usr/bin/env bash
# Runs every rkube test, on a fresh machine too: installs what is missing (Debian packages),
# checks formatting and lints, then runs the whole workspace suite with cargo-nextest.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

# What the suite needs from Debian: etcd for the store tests (they start their own on free
# loopback ports), protoc for the gRPC code generation of etcd-client, OpenSSL headers for the
# TLS and PKI code, and the stock kubectl the system tests drive.
missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v curl >/dev/null 2>&1 || missing+=(curl)
pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev)
# The kubelet's system tests run real containers: Docker's engine, and Debian's static
# busybox for the test image (made locally with `docker import`; there is no registry).
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
# The proxy deletes stale UDP flows with conntrack; the tools image of the service tests
# has socat (a UDP server).
command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
command -v socat >/dev/null 2>&1 || missing+=(socat)
# The kubelet makes pod networks with iproute2's `ip` and util-linux's `nsenter`.
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
# (`ldd` exits 1 on a static binary: its words say which it is.)
busybox_is_static() { [ -x /bin/busybox ] && { ldd /bin/busybox 2>&1 || true; } | grep -q "not a dynamic"; }
busybox_is_static || missing+=(busybox-static)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# A Docker engine for the kubelet tests: start one when none answers.
if ! docker info >/dev/null 2>&1; then
  echo "==> starting dockerd (log: /tmp/rkube-dockerd.log)"
  ($sudo dockerd >/tmp/rkube-dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start:" >&2; tail -20 /tmp/rkube-dockerd.log >&2; exit 1; }
fi

# The build takes several GB and the kubelet tests' nodes report disk pressure (and take no
# pods) when the disk is nearly full: say how much there is, to make such a failure plain.
echo "==> free disk: $(df -h --output=avail . | tail -1 | tr -d ' ')"

# A one-off build (CI's fresh clone) gains nothing from incremental compilation, which
# would double the disk the target directory takes.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi

if cargo fmt --version >/dev/null 2>&1; then
  echo "==> cargo fmt --check"
  cargo fmt --all -- --check
else
  echo "==> rustfmt is not installed: formatting not checked"
fi

if cargo clippy --version >/dev/null 2>&1; then
  echo "==> cargo clippy"
  cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings
else
  echo "==> clippy is not installed: lints not checked"
fi

if [ ! -x "${KUBECTL:-/usr/bin/kubectl}" ]; then
  echo "stock kubectl not found at ${KUBECTL:-/usr/bin/kubectl}: the system tests need it" >&2
  exit 1
fi

echo "==> build (the system tests run the real rkube binary)"
cargo build --quiet -p rkube

echo "==> tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --all-features --no-fail-fast
else
  cargo test --workspace --all-features --no-fail-fast
fi
