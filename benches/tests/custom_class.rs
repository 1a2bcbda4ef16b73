//! The example `custom_class` (a class of one's own through the command's workloads) runs: the
//! registered class is compared against the UE-style reference (every changelist checked
//! inside `run_compare`) and replicated, shared and per connection, with the same bytes.

#[path = "../examples/custom_class.rs"]
mod example;

#[test]
fn a_registered_class_is_measured_as_the_samples_are() {
    let run = example::Run {
        actors: 3_000,
        changed: 0.05,
        connections: 3,
        frames: 2,
        threads: 2,
        hot: "Position,Heading,Fuel,Ammo".into(),
        occasional: "Health,Driver".into(),
    };
    let (compared, replicated) = example::measure(&run).expect("the custom class runs");
    assert_eq!(compared.changed_actors, 150, "5 % of 3 000 changed each frame");
    assert!(compared.kernel_ns > 0 && compared.reference_ns > 0);
    assert!(replicated.bytes_per_connection_frame > 150.0, "each changed vehicle sends something");
    assert_eq!(replicated.capped_connection_frames, 0);
    // A property the class does not have is refused by name.
    let bad = example::Run { hot: "Wings".into(), ..run };
    assert!(example::measure(&bad).is_err_and(|e| e.contains("Wings")));
}

/// A frame whose change does not fit the packet window is reported capped (and its idle
/// frames, timed after the backlog, send nothing); one that fits is not.
#[test]
fn replicate_reports_frames_capped_by_the_packet_window() {
    use shadowrep::compare::Kernels;
    use shadowrep_benches::phase::NoProbe;
    use shadowrep_benches::replicate::{run_replicate, ReplicateOptions};
    let opts = |actors, changed, mtu| ReplicateOptions {
        class: "ShooterCharacter".into(),
        actors,
        connections: 1,
        changed,
        frames: 2,
        mtu,
        kernels: Kernels::best(),
        seed: 3,
    };
    // 6 000 characters all changing: far more than 256 packets of 512 bytes.
    let capped = run_replicate(&opts(6_000, 1.0, 512), &mut |_| {}, &mut NoProbe).unwrap();
    assert_eq!(capped.capped_connection_frames, 2, "both timed frames filled the window");
    assert_eq!(capped.packets_per_connection_frame, 256.0);
    // The backlog went before the idle frames: they send no more than a keep-alive.
    assert!(capped.idle_bytes_per_connection_frame < 64.0, "{}", capped.idle_bytes_per_connection_frame);
    let fits = run_replicate(&opts(2_000, 0.05, 1024), &mut |_| {}, &mut NoProbe).unwrap();
    assert_eq!(fits.capped_connection_frames, 0);
}
