"""Streaming keeps memory flat; `python -m thoth` runs the CLI."""

import os
import subprocess
import sys

import conftest
from conftest import shared
from thoth import hl7


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def test_iterating_a_big_file_keeps_memory_flat(tmp_path):
    """~200 MB of the corpus's messages: resident memory grows by far less than the file (the bench does 1 GB)."""
    corpus = sorted(shared("data/hl7v2/fhir-converter").rglob("*.hl7"))
    block = b"".join(p.read_bytes().replace(b"\n", b"\r").rstrip(b"\r") + b"\r" for p in corpus if p.read_bytes().startswith(b"MSH"))
    path = tmp_path / "big.hl7"
    repeat = (200 << 20) // len(block) + 1
    with open(path, "wb") as f:
        for _ in range(repeat):
            f.write(block)
    size = path.stat().st_size
    expected = sum(1 for _ in hl7.iter_messages(block)) * repeat
    before = rss_kib()
    peak = before
    count = 0
    for msg in hl7.iter_file(path):
        count += 1
        msg.get("MSH-10")
        if count % 20_000 == 0:
            peak = max(peak, rss_kib())
    peak = max(peak, rss_kib())
    os.unlink(path)
    assert count == expected
    growth_mib = (peak - before) / 1024
    assert growth_mib < 32, f"RSS grew {growth_mib:.1f} MiB over a {size >> 20} MiB file"


def test_python_m_thoth_runs_the_cli():
    env = dict(os.environ, THOTH_BIN=conftest.thoth_bin())
    out = subprocess.run([sys.executable, "-m", "thoth", "--version"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("thoth "), out
    env = dict(os.environ, THOTH_BIN="", PATH="/nonexistent")
    out = subprocess.run([sys.executable, "-m", "thoth", "--version"], env=env, capture_output=True, text=True)
    assert out.returncode == 127 and "cargo install --path crates/thoth" in out.stderr
