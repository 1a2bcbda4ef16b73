//! Workspace builds carry the command's flamegraphs: this crate turns on
//! `shadowrep-benches/flamegraph`, so CI's `cargo build --workspace --all-targets` compiles the
//! profiler and `cargo test --workspace` runs `profiles/tests/main_job.rs`'s phase test against
//! it, while `cargo run --release` (the command alone) builds without pprof.

#[test]
fn workspace_builds_have_the_flamegraph_feature() {
    assert!(
        shadowrep_benches::flamegraph::available(),
        "shadowrep-tests must depend on shadowrep-benches with the `flamegraph` feature"
    );
}
