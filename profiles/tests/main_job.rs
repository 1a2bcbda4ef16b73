//! The main job (`shadowrep` with no arguments): battle_royale with its reference beside the
//! compare, in one report; and the flags every command shares.

mod common;
use common::{refused, shadowrep};
use serde_json::json;

#[test]
fn the_main_job_reports_both_runs_and_what_they_are_measured_against() {
    let out = shadowrep(&["--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["command"], "main");
    assert!(v["isa"].as_str().is_some() && v["threads"].as_u64().is_some_and(|t| t >= 1));
    let br = &v["battle_royale"];
    assert_eq!(br["connections"], 100);
    assert!(br["actors"].as_u64().is_some_and(|n| n > 40_000), "{br}");
    assert_eq!(br["matches_reference"], true, "{br}");
    assert!(br["frame_ms"].as_f64().is_some_and(|ms| ms > 0.0));
    assert!(br["speedup_vs_reference"].as_f64().is_some_and(|r| r > 1.0), "{br}");
    assert!(br["reference"].as_str().is_some_and(|s| s.contains("ServerReplicateActors")));
    let c = &v["compare"];
    assert_eq!(c["actors"], 100_000);
    assert!(c["speedup_vs_reference"].as_f64().is_some_and(|r| r > 1.0), "{c}");
    // A ratio of two timings: only its presence is checked (tests run side by side, so a
    // loaded machine moves it).
    assert!(c["push_ratio"].as_f64().is_some_and(|r| r > 0.0), "{c}");
    assert!(v["wall_s"].as_f64().is_some_and(|s| s < 120.0), "{v}");
}

#[test]
fn compare_and_replicate_say_what_they_measured() {
    let out = shadowrep(&["compare", "--actors", "5000", "--frames", "2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for says in [
        "per-frame medians",
        "ISA",
        "thread(s)",
        "reference: the UE-style path",
        "push, 1 %: every property",
        "gather: one byte of every plane lane",
    ] {
        assert!(text.contains(says), "`{says}` not in {text}");
    }
    // The push frame against the latency floor of its marks, and push frames at two world sizes.
    let out = shadowrep(&["compare", "--actors", "3000", "--frames", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(v["push_gather_ns"].as_u64().is_some_and(|g| g > 0), "{v}");
    assert!(v["push_vs_gather"].as_f64().is_some_and(|r| r > 0.0), "{v}");
    // A small world is never a trial: the calibrated table's default scan.
    assert_eq!((&v["page_scan"], &v["next_page"]), (&json!("first-difference"), &json!("prefetch")), "{v}");
    assert_eq!(v["tune_scores"], json!([]), "{v}");
    // A large one (1094 pages) is: every candidate scored, fastest first, the first the table
    // the timed frames ran, the baseline at 1.
    let out = shadowrep(&["compare", "--actors", "70000", "--frames", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let scores = v["tune_scores"].as_array().expect("tune_scores");
    assert!(scores.len() >= 6, "{v}");
    let kept = format!(
        "{}:{}:{}",
        v["isa"].as_str().unwrap(),
        v["page_scan"].as_str().unwrap(),
        v["next_page"].as_str().unwrap()
    );
    assert_eq!(scores[0]["table"], json!(kept), "{v}");
    let ratios: Vec<f64> = scores.iter().map(|s| s["ratio"].as_f64().unwrap()).collect();
    assert!(ratios.windows(2).all(|w| w[0] <= w[1]) && ratios.contains(&1.0), "{ratios:?}");
    // A page scan and a next-page rule named with a named table are what the frames run.
    let out = shadowrep(&[
        "compare",
        "--actors",
        "3000",
        "--frames",
        "1",
        "--isa",
        "wide",
        "--scan",
        "whole",
        "--next-page",
        "hardware",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(
        (&v["isa"], &v["page_scan"], &v["next_page"]),
        (&json!("wide"), &json!("whole"), &json!("hardware")),
        "{v}"
    );
    refused(&["compare", "--scan", "whole"], "--scan needs a named --isa");
    refused(&["compare", "--isa", "wide", "--scan", "all"], "unknown page scan `all` (first-difference, whole, lanes)");
    refused(&["compare", "--next-page", "hardware"], "--next-page needs a named --isa");
    refused(&["compare", "--isa", "wide", "--next-page", "none"], "unknown next-page rule `none` (prefetch, hardware)");
    let out = shadowrep(&["compare", "--scaling", "--actors", "2000", "--dirty", "50", "--frames", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["actors"], serde_json::json!([2000, 20000]), "{v}");
    assert_eq!(v["dirty"], 50);
    assert!(v["scaling_ratio"].as_f64().is_some_and(|r| r > 0.0), "{v}");
    assert!(v["push_ns"][1].as_u64().is_some_and(|t| t > 0) && v["gather_ns"][0].as_u64().is_some(), "{v}");
    assert!(v["gather_scaling_ratio"].as_f64().is_some_and(|r| r > 0.0), "{v}");
    assert!(
        v["copy_scaling_ratio"].as_f64().is_some_and(|r| r > 0.0) && v["copy_ns"][1].as_u64().is_some_and(|t| t > 0),
        "{v}"
    );
    refused(&["compare", "--scaling", "--actors", "100", "--dirty", "101"], "--dirty 101 is more than the 100 actors");
    let out = shadowrep(&["replicate", "--actors", "500", "--connections", "2", "--frames", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    for key in ["isa", "threads", "times", "reference", "sharing_speedup"] {
        assert!(v.get(key).is_some(), "no `{key}` in {v}");
    }
    assert!(v["flamegraph"].is_null());
}

#[test]
fn ticket_keys_are_checked() {
    refused(&["bots", "--connect", "127.0.0.1:9", "--ticket-key", "abc"], "64 hexadecimal digits (32 bytes), got 3");
    let not_hex = format!("{}zz", "0".repeat(62));
    refused(&["serve", "--bind", "127.0.0.1:0", "--ticket-key", &not_hex], "not a hexadecimal digit at 62: 'z'");
    // A sign or a character of several bytes is not a digit either (and splits no pair).
    let signed = format!("+f{}", "0".repeat(62));
    refused(&["serve", "--bind", "127.0.0.1:0", "--ticket-key", &signed], "not a hexadecimal digit at 0: '+'");
    let wide = format!("é{}", "0".repeat(62));
    refused(&["bots", "--connect", "127.0.0.1:9", "--ticket-key", &wide], "not a hexadecimal digit at 0: 'é'");
}

#[test]
fn flamegraph_flags_are_checked() {
    refused(&["compare", "--flamegraph-phase", "kernels"], "unknown phase `kernels` (one of kernel, reference, whole)");
    refused(&["compare", "--flamegraph-phase", "kernel"], "--flamegraph-phase needs --flamegraph");
    let svg = std::env::temp_dir().join(format!("shadowrep-flags-{}.svg", std::process::id()));
    let svg = svg.to_str().expect("UTF-8");
    refused(
        &["bots", "--connect", "127.0.0.1:9", "--count", "1", "--flamegraph", svg, "--flamegraph-phase", "kernel"],
        "profiled whole",
    );
    let no_reference = [
        "run",
        "--profile",
        "battle_royale",
        "--reference-frames",
        "0",
        "--flamegraph",
        svg,
        "--flamegraph-phase",
        "reference",
    ];
    // A build without flamegraphs (this crate tested alone: the tests crate is what turns the
    // feature on in a workspace build) refuses every --flamegraph first, saying how to build it.
    let built_without = !String::from_utf8_lossy(&shadowrep(&no_reference).stderr).contains("reference pass");
    // A refused run loses nothing: a file at the output's path stays as it was (the check that
    // it can be written neither empties nor leaves one), and none is left where there was none.
    std::fs::write(svg, "precious").expect("a temporary file");
    refused(&no_reference, if built_without { "--features flamegraph" } else { "needs the reference pass" });
    assert_eq!(std::fs::read_to_string(svg).expect("still there"), "precious", "a refused run emptied {svg}");
    std::fs::remove_file(svg).expect("removed");
    refused(&no_reference, if built_without { "--features flamegraph" } else { "needs the reference pass" });
    // Refused after the dump's file was checked.
    let dump =
        ["run", "--profile", "battle_royale", "--frames", "5", "--dump-frame", "3", svg, "--dormant-fraction", "0.5"];
    refused(&dump, "--dormant-fraction is for open_world");
    assert!(!std::path::Path::new(svg).exists(), "a refused run left {svg} behind");
}

/// Each phase's profile holds 1000 samples of that phase's code and not the other's. A build of
/// the command alone (`cargo test -p shadowrep-profiles`) has no flamegraphs unless asked
/// (`--features flamegraph`): then the refusal must say how to get them. Workspace builds
/// always have them (`tests/tests/features.rs`).
#[test]
fn a_phase_flamegraph_holds_only_its_phase() {
    let dir = std::env::temp_dir().join(format!("shadowrep-flamegraph-{}", std::process::id()));
    let reference = dir.join("reference.svg");
    let out = shadowrep(&[
        "compare",
        "--actors",
        "20000",
        "--frames",
        "2",
        "--json",
        "--flamegraph-phase",
        "reference",
        "--flamegraph",
        reference.to_str().expect("UTF-8"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("built without flamegraphs") {
        assert!(!out.status.success() && out.stdout.is_empty());
        assert!(stderr.contains("--features flamegraph"), "says how to build it: {stderr}");
        eprintln!("this build has no flamegraphs (the command alone): only the refusal was checked");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["flamegraph"]["phase"], "reference");
    assert!(v["flamegraph"]["samples"].as_u64().is_some_and(|n| n >= 1000), "{}", v["flamegraph"]);
    let svg = std::fs::read_to_string(&reference).expect("the SVG");
    assert!(svg.contains("RefWorld::compare"), "the reference's compare is in its profile");
    assert!(!svg.contains("compare_lanes"), "the kernel's compare is not");

    let kernel = dir.join("kernel.svg");
    let out = shadowrep(&[
        "run",
        "--profile",
        "battle_royale",
        "--frames",
        "3",
        "--reference-frames",
        "0",
        "--flamegraph",
        kernel.to_str().expect("UTF-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("written to {}", kernel.display())), "the path is printed: {stderr}");
    let svg = std::fs::read_to_string(&kernel).expect("the SVG");
    assert!(svg.contains("NetDriver::tick"), "the driver's tick is in the kernel's profile");
    assert!(!svg.contains("World::step") && !svg.contains("World::new"), "the game and the set-up are not");
    std::fs::remove_dir_all(&dir).ok();
}
