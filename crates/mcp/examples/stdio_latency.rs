//! Time of read-only tool calls over the stdio transport, and of the same calls in process.
//!
//! ```text
//! cargo run --release -p mcp --example stdio_latency -- target/release/thoth DATA_DIR [CALLS]
//! ```
//!
//! Starts `thoth --data DATA_DIR mcp`, performs the `initialize` handshake, then sends CALLS (default 20,000)
//! `tools/call` requests one at a time for each tool below and reports the round trip per call (percentiles): an
//! upper bound of the server's time, since it includes both pipe crossings and this client's JSON. Then, in
//! this process, the same tools through `mcp::Thoth::call` on the SNOMED CT store of DATA_DIR (no transport):
//! the server's own work per call. Between the two, the server's CPU time per call over stdio: what the kernel
//! counts on the CPU for all of the server's threads (`/proc/PID/task/*/schedstat`) across the timed calls,
//! divided by their number: JSON-RPC framing, the tool, and the server's side of the pipe, without the time
//! spent waiting to be woken. DATA_DIR needs a SNOMED CT release (e.g. the conformance subset).
//! `TOOLS=lookup,concept` times only those tools.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn percentiles(mut v: Vec<Duration>) -> String {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    let mean = v.iter().sum::<Duration>().as_secs_f64() * 1e6 / v.len() as f64;
    format!(
        "mean {mean:.1} µs, p50 {:.1} µs, p99 {:.1} µs",
        at(0.5),
        at(0.99)
    )
}

/// Nanoseconds on the CPU of every thread of process `pid`, as the scheduler counts them.
fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
                .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

/// The tools timed, all of them or those named in `TOOLS` (comma-separated).
fn cases() -> Vec<(&'static str, Value)> {
    let only = std::env::var("TOOLS").ok();
    let all = vec![
        (
            "subsumed_by",
            json!({"concept_id": 11687002, "subsumer_id": 404684003}),
        ),
        ("concept", json!({"concept_id": 11687002})),
        (
            "lookup",
            json!({"system": "http://snomed.info/sct", "code": "11687002"}),
        ),
    ];
    all.into_iter()
        .filter(|(tool, _)| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|t| t == *tool))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(bin), Some(data)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: stdio_latency THOTH_BINARY DATA_DIR [CALLS]");
        std::process::exit(2);
    };
    let calls: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let mut child = Command::new(bin)
        .args(["--data", data, "mcp"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start thoth mcp");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut send = |msg: &Value, answer: bool| -> Option<Value> {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        if !answer {
            return None;
        }
        line.clear();
        stdout.read_line(&mut line).unwrap();
        Some(serde_json::from_str(&line).expect("a JSON-RPC answer"))
    };
    send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stdio_latency", "version": "0"}}}),
        true,
    );
    send(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    println!("stdio round trip per tools/call ({calls} calls each, sequential):");
    for (tool, arguments) in cases() {
        let mut times = Vec::with_capacity(calls);
        let mut cpu_before = 0;
        for i in 0..calls + 1000 {
            if i == 1000 {
                cpu_before = cpu_ns(pid);
            }
            let req = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}});
            let start = Instant::now();
            let answer = send(&req, true).unwrap();
            let elapsed = start.elapsed();
            assert!(
                answer["result"]["isError"] != true && answer["result"].is_object(),
                "{tool}: {answer}"
            );
            if i >= 1000 {
                times.push(elapsed);
            }
        }
        let cpu = (cpu_ns(pid) - cpu_before) as f64 / calls as f64 / 1000.0;
        println!(
            "  {tool:12} {}; server CPU {cpu:.1} µs per call",
            percentiles(times)
        );
    }
    drop(stdin);
    let _ = child.wait();

    // In process: the tools' own work, without the transport.
    let store =
        snomed::Store::open(&std::path::Path::new(data).join("snomed")).expect("a SNOMED CT store");
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.snomed = Some(std::sync::Arc::new(store));
    let thoth = mcp::Thoth::new(state);
    let caller = mcp::Caller::local();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    println!("in process, mcp::Thoth::call ({calls} calls each):");
    for (tool, arguments) in cases() {
        if tool == "lookup" {
            // FHIR `$lookup` needs the terminology service, which `thoth` loads and this process does not.
            println!("  {tool:12} (needs the FHIR terminology service: timed over stdio only)");
            continue;
        }
        let arguments = arguments.as_object().unwrap().clone();
        let mut times = Vec::with_capacity(calls);
        runtime.block_on(async {
            for i in 0..calls + 1000 {
                let start = Instant::now();
                let r = thoth.call(&caller, tool, &arguments).await.unwrap();
                let elapsed = start.elapsed();
                assert!(r.is_error != Some(true));
                if i >= 1000 {
                    times.push(elapsed);
                }
            }
        });
        println!("  {tool:12} {}", percentiles(times));
    }
}
