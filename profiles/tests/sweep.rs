//! `shadowrep sweep`: a tiny series of every kind writes a CSV with a row per point, a JSON
//! object and an SVG plot; bad ranges are refused before anything runs.

use std::path::Path;

mod common;
use common::{refused, shadowrep};

/// A sweep small enough for CI: two points per series.
const TINY: [&str; 14] = [
    "sweep",
    "--actors",
    "1000,3000",
    "--changed",
    "0.1,1",
    "--changed-actors",
    "2000",
    "--connections",
    "1,4",
    "--connection-actors",
    "200",
    "--frames",
    "2",
    "--quick",
];

#[test]
fn a_tiny_sweep_writes_csv_json_and_a_plot() {
    let dir = std::env::temp_dir().join(format!("shadowrep-sweep-{}", std::process::id()));
    let extra_csv = dir.join("extra").join("points.csv");
    let out = shadowrep(
        &[&TINY[..], &["--out", dir.to_str().expect("UTF-8"), "--csv", extra_csv.to_str().expect("UTF-8"), "--json"]]
            .concat(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "--json prints nothing on stderr");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.trim().lines().count(), 1, "one JSON object");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["command"], "sweep");
    assert!(v["isa"].as_str().is_some() && v["threads"].as_u64().is_some_and(|t| t >= 1));
    assert!(v["flamegraph"].is_null());
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 6);
    let xs: Vec<(&str, f64)> =
        points.iter().map(|p| (p["series"].as_str().expect("series"), p["x"].as_f64().expect("x"))).collect();
    assert_eq!(
        xs,
        [
            ("actors", 1000.0),
            ("actors", 3000.0),
            ("changed", 10.0),
            ("changed", 100.0),
            ("connections", 1.0),
            ("connections", 4.0)
        ]
    );
    for p in points {
        assert!(p["frame_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{p}");
        assert!(p["baseline_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{p}");
        assert!(p["speedup"].as_f64().is_some_and(|r| r > 0.0), "{p}");
    }
    assert!(points[5]["bytes_per_connection_frame"].as_f64().is_some_and(|b| b > 0.0));
    assert!(points[0]["fraction_of_memcmp"].as_f64().is_some_and(|f| f > 0.0));

    // The CSV: a header and a row per point, each with the header's columns, the same numbers.
    for csv in [dir.join("sweep.csv"), extra_csv.clone()] {
        let csv = std::fs::read_to_string(&csv).expect("the CSV was written");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 6);
        for (row, p) in rows.iter().zip(points) {
            assert_eq!(row.len(), header.len());
            assert_eq!(row[col("series")], p["series"].as_str().expect("series"));
            let ms: f64 = row[col("frame_ms")].parse().expect("frame_ms is a number");
            assert!((ms - p["frame_ms"].as_f64().expect("frame_ms")).abs() < 1e-9);
            let _: f64 = row[col("speedup")].parse().expect("speedup is a number");
        }
    }
    // The JSON file holds the same object as stdout (but for the flamegraph key).
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("sweep.json")).expect("sweep.json")).expect("JSON");
    assert_eq!(file["points"], v["points"]);
    // The SVG: a whole document with a panel per series and their lines.
    let svg = std::fs::read_to_string(dir.join("sweep.svg")).expect("the plot was written");
    assert!(svg.trim_start().starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{}", &svg[..200]);
    for title in ["actors: frame time", "changed: ratio", "connections: frame time", "speedup vs reference"] {
        assert!(svg.contains(title), "no `{title}` in the plot");
    }
    assert!(svg.matches("<polyline").count() >= 9, "lines: kernel and baseline per series, and the ratios");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn text_mode_names_the_files_it_wrote() {
    let dir = std::env::temp_dir().join(format!("shadowrep-sweep-text-{}", std::process::id()));
    let plot = dir.join("p.svg");
    let out = shadowrep(&[&TINY[..], &["--series", "connections", "--plot", plot.to_str().expect("UTF-8")]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("per-frame medians") && text.contains("ISA") && text.contains("thread"), "{text}");
    assert!(text.contains(&format!("written: {}", plot.display())), "{text}");
    assert!(!text.contains("actors (compare"), "only the series asked for: {text}");
    assert!(Path::new(&plot).exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_ranges_are_refused() {
    refused(&["sweep", "--actors", "1000,0"], "must be at least 1");
    refused(&["sweep", "--changed", "0.5,1.5"], "is not in (0, 1]");
    refused(&["sweep", "--changed", "0"], "is not in (0, 1]");
    refused(&["sweep", "--connections", "ten"], "not a whole number");
    refused(&["sweep", "--series", "actors,players"], "unknown series `players`");
    refused(&["sweep", "--quick", "--plot", "/proc/no/such/p.svg"], "cannot");
    refused(&["sweep", "--quick", "--frames", "0"], "must be at least 1");
    refused(&["sweep", "--actors", "100000000000"], "needs about");
}
