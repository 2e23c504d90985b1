"""Shared fixtures: the corpora in ../shared beside the checkout (missing data fails loudly, never skips)."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def shared(rel: str) -> Path:
    path = SHARED / rel
    if not path.exists():
        pytest.fail(f"{path} is missing: the test corpora live in ../shared beside this checkout", pytrace=False)
    return path


@pytest.fixture(scope="session")
def hl7_corpus():
    """The 271 real messages files of ../shared/data/hl7v2 (as crates/hl7v2/tests/it/support.rs lists them)."""
    data = shared("data/hl7v2")
    files = sorted((data / "fhir-converter").rglob("*.hl7")) + sorted((data / "trusted-intermediary").rglob("*.hl7"))
    assert len(files) == 271, f"expected the 271 real messages of the shared corpus, found {len(files)}"
    return files


def thoth_bin() -> str:
    """The thoth program: THOTH_BIN (scripts/test.sh sets it to the debug build), else target/debug/thoth."""
    exe = os.environ.get("THOTH_BIN") or str(ROOT / "target" / "debug" / "thoth")
    if not Path(exe).exists():
        pytest.fail(f"{exe} is missing: build it with `cargo build -p thoth` (or set THOTH_BIN)", pytrace=False)
    return exe


@pytest.fixture(scope="session")
def snomed_data_dir():
    """A data directory holding the terminology conformance suite's SNOMED CT subset, made by `thoth import`."""
    subset = shared("tx-ecosystem/tx-source/snomed")
    tmp = Path(tempfile.mkdtemp(prefix="thoth-py-"))
    try:
        subprocess.run(
            [thoth_bin(), "--data", str(tmp), "import", "snomed", "--unpublished", str(subset)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def server(snomed_data_dir):
    """`thoth serve` over the same data directory: the HTTP API the Python answers are compared with."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [thoth_bin(), "--data", str(snomed_data_dir), "serve", "--offline", "--http", f"127.0.0.1:{port}",
         "--mllp", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/readyz", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("thoth serve did not start", pytrace=False)
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
