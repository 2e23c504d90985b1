//! The tools that read the SNOMED CT store directly run on the blocking pool, not on the task that serves the
//! connection: over `POST /mcp` that task shares its HTTP thread with other connections, which an expensive ECL
//! evaluation would otherwise stall.

use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn thoth() -> (tempfile::TempDir, mcp::Thoth) {
    let tmp = tempfile::tempdir().unwrap();
    let rf2 = tmp.path().join("rf2");
    snomed::synth::generate(
        &snomed::synth::SynthConfig {
            concepts: 5_000,
            seed: 7,
        },
        &rf2,
    )
    .unwrap();
    let root = tmp.path().join("snomed");
    snomed::import(std::slice::from_ref(&rf2), &root, &snomed::NoProgress).unwrap();
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.snomed = Some(Arc::new(snomed::Store::open(&root).unwrap()));
    (tmp, mcp::Thoth::new(state))
}

/// On a single-threaded runtime, a task spawned after the tool call runs before the call completes only if the
/// call gives the thread back while the tool works.
#[test]
fn store_tools_give_the_connection_thread_back_while_they_work() {
    let (_tmp, thoth) = thoth();
    let thoth = Arc::new(thoth);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Evaluations long enough (tens of milliseconds in a debug build) that the pool's thread cannot finish one
    // before the runtime's thread, which handed it over, gets to run the other task.
    let heavy = "(<< 138875005 : * = *) MINUS (< 138875005 : * = (<< 138875005 : * = *))";
    let calls: [(&str, Value); 2] = [
        (
            "intersect_ecl",
            json!({"concept_id": [138875005], "ecl": heavy}),
        ),
        (
            "map_into",
            json!({"concept_id": 138875005, "target": heavy}),
        ),
    ];
    for (tool, arguments) in calls {
        let arguments: Map<String, Value> = arguments.as_object().unwrap().clone();
        let other_ran = Arc::new(AtomicBool::new(false));
        let seen = runtime.block_on(async {
            let call = {
                let (thoth, other_ran) = (thoth.clone(), other_ran.clone());
                tokio::spawn(async move {
                    let answer = thoth
                        .call(&mcp::Caller::local(), tool, &arguments)
                        .await
                        .unwrap();
                    assert_ne!(answer.is_error, Some(true), "{tool}: {answer:?}");
                    other_ran.load(Ordering::SeqCst)
                })
            };
            let other = {
                let other_ran = other_ran.clone();
                tokio::spawn(async move { other_ran.store(true, Ordering::SeqCst) })
            };
            let seen = call.await.unwrap();
            other.await.unwrap();
            seen
        });
        assert!(
            seen,
            "{tool} held the runtime's thread until it finished (not offloaded)"
        );
    }
}
