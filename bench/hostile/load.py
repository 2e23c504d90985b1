"""The clients of bench/hostile/run.sh: hostile load against one running `thoth serve`, case by case.

Standard library only (asyncio sockets), so that the measurement needs nothing installed. Each case prints one
line of `key=value` facts; memory is the server's resident set from /proc, sampled every 10 ms.
"""

import argparse
import asyncio
import json
import os
import random
import string
import sys
import time

START, END = b"\x0b", b"\x1c\r"
KNOWN_METHODS = {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE"}


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Peak:
    """Samples the server's resident memory until stopped; `peak` is the largest sample."""

    def __init__(self, pid):
        self.pid, self.peak, self.running = pid, rss_mib(pid), True

    async def run(self):
        while self.running:
            self.peak = max(self.peak, rss_mib(self.pid))
            await asyncio.sleep(0.01)


async def http(reader, writer, method, path, body=b""):
    """One request on a kept-alive connection: (status, body)."""
    head = f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    status_line = await reader.readline()
    length, chunked = 0, False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "content-length":
            length = int(value)
        if name.lower() == "transfer-encoding" and "chunked" in value:
            chunked = True
    if chunked:
        chunks = []  # joined once: `+=` on bytes would copy the body again for every chunk
        while True:
            size = int((await reader.readline()).strip(), 16)
            chunks.append((await reader.readexactly(size + 2))[:size])
            if size == 0:
                break
        data = b"".join(chunks)
    else:
        data = await reader.readexactly(length)
    parts = status_line.split()
    return (int(parts[1]) if len(parts) > 1 else 0), data


async def once(port, method, path, body=b""):
    """One request on its own connection: (status, body, seconds)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    status, data = await http(reader, writer, method, path, body)
    writer.close()
    return status, data, time.perf_counter() - started


async def mllp_send(reader, writer, message):
    writer.write(START + message + END)
    await writer.drain()
    ack = await reader.readuntil(END)
    return ack


async def fuzzy(a):
    idle = rss_mib(a.pid)
    out = []
    for words in (2000, 5000):
        query = "%20".join(["diabetesxy"] * words)
        peak = Peak(a.pid)
        sampler = asyncio.create_task(peak.run())
        results = await asyncio.gather(
            *[once(a.http, "GET", f"/v1/snomed/search?s={query}&fuzzy=true") for _ in range(20)]
        )
        peak.running = False
        await sampler
        statuses = sorted({r[0] for r in results})
        slowest = max(r[2] for r in results)
        out.append(f"words={words} statuses={statuses} slowest_ms={slowest * 1000:.1f} "
                   f"peak_over_idle_mib={peak.peak - idle:.1f}")
    print("fuzzy:", "; ".join(out), flush=True)


async def idle(a):
    message = (b"MSH|^~\\&|GOOD|H|RCV|H|20240101120000||ADT^A01^ADT_A01|GOOD-%d|P|2.5.1\r"
               b"PID|1||42^^^H^MR||DOE^JANE\r")
    good_r, good_w = await asyncio.open_connection("127.0.0.1", a.mllp)
    await mllp_send(good_r, good_w, message % 0)
    started = time.perf_counter()
    # Two holding processes: one process may have only so many descriptors (20,000 on the measuring machine).
    holders, held = [], [0, 0]
    for http_n, mllp_n in ((10000, 0), (10000, 2000)):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--pid", str(a.pid), "--http", str(a.http), "--mllp", str(a.mllp),
            "--hold", f"{http_n},{mllp_n}", "hold", stdout=asyncio.subprocess.PIPE)
        holders.append(proc)
    for proc in holders:
        line = (await proc.stdout.readline()).decode().split()
        held[0] += int(line[1])
        held[1] += int(line[2])
    opened = time.perf_counter() - started
    # The flood's connections on the 64 places of the reserve are closed after 2 s without a request; the ordinary
    # ones (10,000) stay until the 10 s header deadline. Probing between the two measures a full server.
    await asyncio.sleep(2.5)
    fds = open_fds(a.pid)
    health, mllp = [], []
    for i in range(10):
        status, _, took = await once(a.http, "GET", "/healthz")
        health.append((status, took))
        t = time.perf_counter()
        ack = await mllp_send(good_r, good_w, message % (i + 1))
        mllp.append((b"MSA|AA" in ack, time.perf_counter() - t))
    for proc in holders:
        proc.terminate()
        await proc.wait()
    good_w.close()
    print(f"idle: http_opened={held[0]} mllp_opened={held[1]} in_s={opened:.1f} "
          f"server_fds={fds} healthz_ok={sum(s == 200 for s, _ in health)}/10 "
          f"healthz_median_ms={sorted(t for _, t in health)[5] * 1000:.1f} "
          f"healthz_max_ms={max(t for _, t in health) * 1000:.1f} mllp_aa={sum(ok for ok, _ in mllp)}/10 "
          f"mllp_max_ms={max(t for _, t in mllp) * 1000:.1f}", flush=True)


async def methods(a):
    rng = random.Random(27)

    async def client(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", a.http)
        for _ in range(n):
            method = "".join(rng.choices(string.ascii_uppercase, k=rng.randint(3, 9)))
            if method in KNOWN_METHODS:  # a real method is its own label: not what this case is about
                continue
            await http(reader, writer, method, rng.choice(["/healthz", "/fhir/metadata", "/x"]))
        writer.close()

    # A first thousand fills the closed label set (method `other` on each route and status class); the next
    # 100,000 must add nothing.
    await asyncio.gather(*[client(50) for _ in range(20)])
    await once(a.http, "GET", "/metrics")  # its own series too
    _, before, _ = await once(a.http, "GET", "/metrics")
    started = time.perf_counter()
    await asyncio.gather(*[client(5000) for _ in range(20)])
    took = time.perf_counter() - started
    _, after, _ = await once(a.http, "GET", "/metrics")
    names = lambda text: {line.rsplit(" ", 1)[0] for line in text.decode().splitlines() if line and not line.startswith("#")}
    series = lambda text: len(names(text))
    added = sorted(names(after) - names(before))
    if added:
        print("methods: series added:", *added[:10], sep="\n  ", flush=True)
    print(f"methods: requests=100000 in_s={took:.1f} metrics_bytes_before={len(before)} "
          f"metrics_bytes_after={len(after)} series_before={series(before)} series_after={series(after)}",
          flush=True)


async def view(a):
    head = b"MSH|^~\\&|LAB|H|EHR|H|20240101120000||ORU^R01^ORU_R01|HUGE-VIEW|P|2.5.1\rPID|1||42^^^H^MR||DOE^JANE\r"
    parts, size, n = [head], len(head), 0
    # Just under the 16 MiB largest frame (a larger one is refused, its head stored).
    while size < (16 << 20) - 64:
        n += 1
        seg = b"NTE|%d|L|x\r" % n
        parts.append(seg)
        size += len(seg)
    message = b"".join(parts)
    reader, writer = await asyncio.open_connection("127.0.0.1", a.mllp)
    ack = await mllp_send(reader, writer, message)
    writer.close()
    _, listing, _ = await once(a.http, "GET", "/messages?control_id=HUGE-VIEW")
    ident = json.loads(listing)["items"][0]["id"]
    before = rss_mib(a.pid)
    peak = Peak(a.pid)
    sampler = asyncio.create_task(peak.run())
    status, body, took = await once(a.http, "GET", f"/messages/{ident}")
    peak.running = False
    await sampler
    print(f"view: message_bytes={len(message)} segments={n + 2} ack_aa={b'MSA|AA' in ack} status={status} "
          f"answer_bytes={len(body)} ms={took * 1000:.0f} peak_over_before_mib={peak.peak - before:.1f}",
          flush=True)


async def ecl(a):
    path = "/v1/snomed/expand?ecl=%2A"
    status, body, alone = await once(a.http, "GET", path)
    # The looping expansions run in processes of their own: reading 27 MB answers in this event loop would delay
    # the probes below by the client's own work, not the server's.
    loops = [await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--pid", str(a.pid), "--http", str(a.http), "--mllp", str(a.mllp),
        "expand_loop", stdout=asyncio.subprocess.PIPE) for _ in range(a.cores)]
    await asyncio.sleep(0.5)
    health = []
    for _ in range(40):
        s, _, took = await once(a.http, "GET", "/healthz")
        health.append(took)
        await asyncio.sleep(0.05)
    done = 0
    for proc in loops:
        proc.terminate()
        out, _ = await proc.communicate()
        done += out.count(b"\n")
    health.sort()
    print(f"ecl: expansion_status={status} expansion_bytes={len(body)} expansion_ms={alone * 1000:.0f} "
          f"concurrent={a.cores} expansions_done={done} healthz_median_ms={health[len(health) // 2] * 1000:.1f} "
          f"healthz_p95_ms={health[int(len(health) * 0.95)] * 1000:.1f} healthz_max_ms={health[-1] * 1000:.1f}",
          flush=True)


async def expand_loop(a):
    """Expands `ecl=*` again and again, a line on standard output per expansion, until killed (a helper of `ecl`)."""
    while True:
        status, _, _ = await once(a.http, "GET", "/v1/snomed/expand?ecl=%2A")
        print(status, flush=True)


async def hold(a):
    """Opens the connections `--hold HTTP,MLLP` asks for, prints `held H M`, and keeps them until killed."""
    http_n, mllp_n = (int(x) for x in a.hold.split(","))
    kept, counts = [], []
    for port, n in ((a.http, http_n), (a.mllp, mllp_n)):
        opened = 0
        for _ in range(n):
            try:
                kept.append(await asyncio.open_connection("127.0.0.1", port))
                opened += 1
            except OSError:
                break
        counts.append(opened)
    print(f"held {counts[0]} {counts[1]}", flush=True)
    await asyncio.sleep(3600)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--http", type=int, required=True)
    p.add_argument("--mllp", type=int, required=True)
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--hold", help="HTTP,MLLP: open and keep that many connections (a helper process of `idle`)")
    p.add_argument("cases")
    a = p.parse_args()
    cases = {"fuzzy": fuzzy, "idle": idle, "methods": methods, "view": view, "ecl": ecl, "expand_loop": expand_loop, "hold": hold}
    for name in a.cases.split():
        await cases[name](a)


if __name__ == "__main__":
    asyncio.run(main())
