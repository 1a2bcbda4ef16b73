//! End to end over real localhost UDP: `shadowrep serve` with a small battle_royale world and
//! `shadowrep bots` with three bots and 5 % loss each way, about five seconds of wall time. The
//! bots must all complete the handshake, see losses, and match the server's digest of what
//! each should hold after the world froze — in plain sessions, then in sealed ones — and every
//! Server call the bots' players made must reach the server's game exactly once.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn bots_converge_with_a_served_world_over_lossy_udp() {
    let report = serve_and_bots(&[]);
    assert_eq!(report["sealed"], false);
    // The same, sealed (`--ticket-key`: the bots issue their own join tickets under the key).
    let key = "5a".repeat(32);
    let sealed = serve_and_bots(&["--ticket-key", &key]);
    assert_eq!(sealed["sealed"], true);
}

/// Runs a small served world and three bots at 5 % loss, both with `extra` flags; checks that
/// every bot converged and returns the bots' report.
fn serve_and_bots(extra: &[&str]) -> serde_json::Value {
    let exe = env!("CARGO_BIN_EXE_shadowrep");
    let mut serve = Command::new(exe)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--scale",
            "0.02",
            "--players",
            "4",
            "--seconds",
            "5",
            "--freeze",
            "2",
        ])
        .args(["--threads", "1"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command runs");
    // The first line names the port the system gave.
    let mut stderr = BufReader::new(serve.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("a line");
    let addr = first
        .split("listening on ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    let started = Instant::now();
    let bots = Command::new(exe)
        .args(["bots", "--connect", &addr, "--count", "3", "--loss", "0.05", "--seconds", "4.6", "--json"])
        .args(extra)
        .output()
        .expect("the command runs");
    let served = serve.wait_with_output().expect("serve ends by itself");
    assert!(started.elapsed() < Duration::from_secs(15));
    let report: serde_json::Value = serde_json::from_slice(&bots.stdout)
        .unwrap_or_else(|e| panic!("bots printed no JSON ({e}): {}", String::from_utf8_lossy(&bots.stderr)));
    assert!(served.status.success(), "serve failed: {}", String::from_utf8_lossy(&served.stdout));
    assert_eq!(report["bots"], 3);
    assert_eq!(report["handshakes_completed"], 3, "{report}");
    assert!(report["packets_dropped"].as_u64().unwrap() > 0, "the loss dropped nothing: {report}");
    assert!(report["bytes_received_per_second"].as_f64().unwrap() > 1000.0, "{report}");
    assert!(report["actors_known"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["converged"], true, "{report}");
    assert_eq!(report["bots_matched"], 3);
    assert!(bots.status.success());
    // The players' Server calls (ShooterGame's ServerSetTargeting / ServerSetRunning): all
    // acknowledged by the end, and each taken by the server exactly once.
    let made = report["server_calls_made"].as_u64().unwrap();
    assert!(made > 0, "the bots made no calls: {report}");
    assert_eq!(report["server_calls_unacknowledged"], 0, "{report}");
    let out = String::from_utf8_lossy(&served.stdout);
    let calls = out.split("Server calls: ").nth(1).unwrap_or_else(|| panic!("no Server calls in {out:?}"));
    let counts: Vec<u64> =
        calls.split(',').map(|part| part.trim().split(' ').next().unwrap().parse().unwrap()).collect();
    let [taken, applied, frozen] = counts[..] else { panic!("{calls:?}") };
    assert_eq!(taken, made, "every call taken once: {out}");
    assert_eq!(applied + frozen, taken, "each applied to its caller's character unless frozen: {out}");
    report
}
