-- wrk: every connection POSTs one MCP tools/call (stateless, protocol 2025-06-18 without a session) per
-- $MCP_DELAY_MS milliseconds (default 1000), so that -c1000 keeps a thousand concurrent MCP clients at about a
-- thousand calls per second.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"subsumed_by","arguments":{"concept_id":11687002,"subsumer_id":404684003}}}'
local pause = tonumber(os.getenv("MCP_DELAY_MS") or "1000")
function delay()
  return pause
end
