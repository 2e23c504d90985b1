use crate::{Harness, downstream, msa, sample, with_control_id};
use interface::Status;

#[tokio::test]
async fn pending_deliveries_survive_a_restart() {
    // Reserve a port for the downstream, which is down during the first run.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let cfg = format!(
        "[delivery]\ninitial_backoff_ms = 50\nmax_backoff_ms = 100\nmax_attempts = 1000\n[[route]]\nname = \"down\"\nmllp = \"{addr}\"\n"
    );
    let h = Harness::start(&cfg).await;
    let mut c = h.client().await;
    let mut sent = Vec::new();
    for i in 0..20 {
        let raw = with_control_id(&sample("ADT-A01-02.hl7"), &format!("RST-{i}"));
        assert_eq!(msa(&c.send(&raw).await.unwrap()).0, "AA");
        sent.push(raw);
    }
    let first = h.id_of("RST-0");
    assert_eq!(
        h.engine.get(first).unwrap().unwrap().summary.status,
        Status::Pending
    );
    drop(c);
    let dir = h.stop().await;

    let (_, down, _j) = downstream(&addr).await;
    let h = Harness::start_in(dir, &cfg).await;
    for i in 0..20 {
        h.wait_status(h.id_of(&format!("RST-{i}")), Status::Delivered)
            .await;
    }
    // In order, each once.
    assert_eq!(*down.received.lock().unwrap(), sent);
}
