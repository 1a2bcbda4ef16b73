//! `shadowrep run`: bad input is refused before anything runs, and `--json` prints exactly one
//! object with the documented keys.

mod common;
use common::{refused, shadowrep};

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    refused(&["run", "--profile", "moba"], "unknown profile `moba` (known: battle_royale, mmo, open_world)");
    refused(&["run", "--profile", "mmo", "--dormant-fraction", "0.5"], "--dormant-fraction is for open_world");
    refused(&["run", "--profile", "open_world", "--dormant-fraction", "1"], "is not in 0..1");
    refused(&["run", "--profile", "open_world", "--dormant-fraction=-0.1"], "is not in 0..1");
    refused(&["run", "--profile", "mmo", "--frames", "0"], "must be at least 1");
    refused(&["run", "--profile", "mmo", "--threads", "0"], "must be at least 1");
    refused(&["run", "--profile", "battle_royale", "--frames", "5", "--dump-frame", "6", "x.json"], "frames 1..=5");
    refused(&["run", "--profile", "battle_royale", "--dump-frame", "0", "x.json"], "frames 1..=360");
    refused(&["run", "--profile", "battle_royale", "--dump-frame", "2", "/nonexistent/dir/x.json"], "cannot write");
    refused(&["run", "--profile", "battle_royale", "--json", "--flamegraph", "/proc/no/f.svg"], "cannot");
}

#[test]
fn json_is_one_object_with_the_documented_keys() {
    let dir = std::env::temp_dir().join(format!("shadowrep-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let dump = dir.join("frame.json");
    let out = shadowrep(&[
        "run",
        "--profile",
        "battle_royale",
        "--frames",
        "2",
        "--json",
        "--dump-frame",
        "2",
        dump.to_str().expect("a UTF-8 path"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "--json prints nothing on stderr");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.trim().lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
    for key in [
        "profile",
        "frames",
        "threads",
        "connections",
        "actors",
        "frame_ms",
        "frame_p99_ms",
        "stages_ms",
        "relevant_pairs",
        "sent_pairs",
        "bytes_per_connection_frame",
        "saturated_connections",
        "tick_share",
        "bytes_per_open_pair",
        "pair_state_mb",
        "open_pairs",
    ] {
        assert!(v.get(key).is_some(), "no `{key}` in {v}");
    }
    for stage in ["gather", "consider", "relevancy", "priority", "write", "feedback"] {
        assert!(v["stages_ms"][stage].as_f64().is_some(), "no stage `{stage}`");
    }
    assert_eq!(v["profile"], "battle_royale");
    assert_eq!(v["frames"], 2);
    assert_eq!(v["connections"], 100);
    let frame: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&dump).expect("the dump was written")).expect("valid JSON");
    assert_eq!(frame["connections"].as_array().map(Vec::len), Some(100));
    // The dump says what its fields count in.
    for field in ["position", "queued_bits_before", "priority", "priority_key", "relevant_time"] {
        assert!(frame["units"][field].as_str().is_some_and(|u| !u.is_empty()), "no unit for `{field}`");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn open_world_reports_its_dormant_actors() {
    let args = ["run", "--profile", "open_world", "--frames", "12", "--dormant-fraction", "0.5", "--json"];
    let out = shadowrep(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["dormant_actors"], 10_000);
    assert!(v["awake_only_frame_ms"].as_f64().is_some_and(|ms| ms > 0.0));
    assert!(v["dormant_cost_ratio"].as_f64().is_some());
    assert_eq!(v["dormant_bytes_per_frame"].as_f64(), Some(0.0), "idle dormant actors send nothing");
    assert!(v["asleep_actors"].as_u64().is_some_and(|n| n >= 9_000), "{}", v["asleep_actors"]);
    assert!(v["stages_ms"]["dormancy"].as_f64().is_some());
    // The UE-style reference, dormancy and all, decides the same on every frame.
    assert_eq!(v["reference_frames"], 12);
    assert_eq!(v["matches_reference"], true, "first mismatch: {}", v["first_mismatch"]);
}

/// `shadowrep layout`: every sample class's parents and bytes an actor, as text or one JSON
/// object; an unknown class is refused with the known ones.
#[test]
fn layout_describes_the_sample_classes() {
    refused(&["layout", "--class", "Vehicle"], "unknown class `Vehicle` (one of Actor, ShooterCharacter");
    let out = shadowrep(&["layout", "--class", "Counter"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(text.contains("class Counter") && text.contains("0  Count") && text.contains("4.0 B an actor"), "{text}");
    let out = shadowrep(&["--json", "layout"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let classes = v["classes"].as_array().expect("classes");
    assert_eq!(classes.len(), shadowrep_layouts::class_names().len());
    let shooter = classes.iter().find(|c| c["name"] == "ShooterCharacter").expect("ShooterCharacter");
    assert_eq!(shooter["bytes_per_actor"], 79.0, "the 79 bytes issue 9 names");
    assert_eq!(shooter["base"], "Actor");
    assert!(shooter["parents"].as_array().is_some_and(|p| p.iter().any(|p| p["name"] == "Health")));
}
