"""Round trip of read-only MCP tool calls over `thoth mcp` (stdio), one at a time, and of the same bytes through
`cat` (the pipe floor). usage: python3 bench/mcp/stdio_round_trip.py THOTH_BINARY DATA_DIR CALLS
The server time per call is at most the round trip minus the floor (the client's own time is in both)."""
import json, subprocess, sys, time
bin, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = subprocess.Popen([bin, "--data", data, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={"RUST_LOG": "warn"})
def send(m, answer=True):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
    return json.loads(p.stdout.readline()) if answer else None
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rt", "version": "0"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"}, False)
for tool, args in [("subsumed_by", {"concept_id": 11687002, "subsumer_id": 404684003}), ("concept", {"concept_id": 11687002}), ("lookup", {"system": "http://snomed.info/sct", "code": "11687002"})]:
    lines = [(json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}) + "\n").encode() for i in range(n)]
    ts = []
    for i, l in enumerate(lines):
        t = time.perf_counter(); p.stdin.write(l); p.stdin.flush(); a = p.stdout.readline(); ts.append(time.perf_counter() - t)
        if i == 0: assert b'"isError":true' not in a, a
    ts = sorted(ts[n // 10:])
    print(f"{tool:12} round trip mean {sum(ts)/len(ts)*1e6:.1f} us p50 {ts[len(ts)//2]*1e6:.1f} us p99 {ts[int(len(ts)*.99)]*1e6:.1f} us")
# the floor: the same pipe round trip answered by `cat` (no server work at all)
c = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
ts = []
for l in lines:
    t = time.perf_counter(); c.stdin.write(l); c.stdin.flush(); c.stdout.readline(); ts.append(time.perf_counter() - t)
ts = sorted(ts[n // 10:])
print(f"{'cat (floor)':12} round trip mean {sum(ts)/len(ts)*1e6:.1f} us p50 {ts[len(ts)//2]*1e6:.1f} us p99 {ts[int(len(ts)*.99)]*1e6:.1f} us")
