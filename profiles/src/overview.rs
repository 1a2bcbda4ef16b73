//! The main job (`shadowrep` with no arguments, `cargo run --release`): what the project is
//! for, in one screen and well under a minute.
//!
//! 1. `battle_royale` for [`FRAMES`] frames (the hot drop's first seconds: 100 players, ~50 000
//!    actors, through UE's `ServerReplicateActors` rules), then the UE-style reference over the
//!    same frames with its decisions checked against the kernel's on every frame;
//! 2. `shadowrep compare`'s default (100 000 `ShooterCharacter`, 1 % changed per frame): the
//!    SIMD compare against the reference's per-property compare and `memcmp`, and the push model.
//!
//! The report gives each headline figure with what it is measured against, and the commands
//! that go further.

use crate::run::{kernel_pass, reference_pass, KernelPass, REFERENCE_RUN};
use crate::{Session, PUSH_1PCT, REFERENCE_COMPARE};
use shadowrep::compare::Kernels;
use shadowrep_benches::scenario::{self, Profile};
use shadowrep_benches::workload::{run_compare, CompareOptions};

/// Timed frames of the battle_royale run (3 s of game time: the hot drop's fight).
pub const FRAMES: usize = 90;

/// Actors of the compare.
pub const COMPARE_ACTORS: usize = 100_000;

/// Runs the main job and prints its report.
pub fn main_job(json: bool, progress: &mut dyn FnMut(&str), session: &mut Session) -> Result<(), String> {
    let started = std::time::Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    crate::build_pool(threads)?;
    let isa = Kernels::best().isa.name();
    let cfg = Profile::BattleRoyale.config(1);
    let KernelPass { world, server, records, .. } = kernel_pass(&cfg, FRAMES, threads, None, None, progress, session)?;
    let actors: usize = world.stores.iter().map(|s| s.len()).sum();
    drop((world, server));
    let reference =
        reference_pass(&cfg, FRAMES, threads, &records, progress, session)?.ok_or("the reference pass ran no frame")?;
    let s = scenario::summarize(&records, cfg.connections, cfg.tick_rate);
    let opts = CompareOptions {
        class: "ShooterCharacter".into(),
        actors: COMPARE_ACTORS,
        changed: 0.01,
        threads,
        frames: 9,
        kernels: Kernels::best(),
        seed: 1,
    };
    let c = run_compare(&opts, progress, session)?;
    progress("");
    let ms = |ns: u64| ns as f64 / 1e6;
    if json {
        return session.emit(serde_json::json!({
            "command": "main",
            "isa": isa,
            "threads": threads,
            "times": "per-frame medians",
            "battle_royale": {
                "frames": FRAMES,
                "connections": cfg.connections,
                "actors": actors,
                "frame_ms": s.all.frame_ms,
                "frame_p99_ms": s.frame_p99_ms,
                "tick_share": s.tick_share,
                "bytes_per_connection_frame": s.all.bytes_per_connection_frame,
                "reference_frame_ms": reference.reference_ms,
                "kernel_frame_ms_same_frames": reference.kernel_ms,
                "speedup_vs_reference": reference.reference_ms / reference.kernel_ms.max(1e-9),
                "matches_reference": reference.mismatch.is_none(),
                "first_mismatch": reference.mismatch,
                "reference": REFERENCE_RUN,
            },
            "compare": {
                "class": opts.class,
                "actors": opts.actors,
                "changed": opts.changed,
                "isa": c.isa.name(),
                "kernel_ns": c.kernel_ns,
                "reference_ns": c.reference_ns,
                "memcmp_ns": c.memcmp_ns,
                "speedup_vs_reference": c.speedup_vs_reference,
                "fraction_of_memcmp": c.fraction_of_memcmp,
                "push_1pct_ns": c.push_1pct_ns,
                "push_ratio": c.push_ratio,
                "reference": REFERENCE_COMPARE,
                "push_1pct": PUSH_1PCT,
            },
            "wall_s": started.elapsed().as_secs_f64(),
        }));
    }
    println!(
        "shadowrep: Unreal Engine's property replication as a data-oriented SIMD kernel — {isa}, {threads} thread(s); \
         times are per-frame medians"
    );
    println!();
    println!(
        "server frames: battle_royale, {} players, {actors} actors, {} Hz, {FRAMES} frames (the first {} s: a hot drop)",
        cfg.connections,
        cfg.tick_rate,
        FRAMES as f64 / cfg.tick_rate
    );
    println!(
        "  kernel     {:>8.2} ms a frame ({:.0} % of the {:.1} ms tick; p99 {:.2} ms), {:.0} B per connection",
        s.all.frame_ms,
        s.tick_share * 100.0,
        1e3 / cfg.tick_rate,
        s.frame_p99_ms,
        s.all.bytes_per_connection_frame
    );
    println!(
        "  reference  {:>8.2} ms a frame (kernel {:.2} ms on the same frames): {:.1}× faster; decisions {}",
        reference.reference_ms,
        reference.kernel_ms,
        reference.reference_ms / reference.kernel_ms.max(1e-9),
        match &reference.mismatch {
            None => format!("identical on all {FRAMES} frames"),
            Some(m) => format!("DIFFER: {m}"),
        }
    );
    println!();
    println!(
        "change detection: {} ShooterCharacter, {:.0} % changed per frame ({:.1} MB of live state; diff table {})",
        opts.actors,
        opts.changed * 100.0,
        c.live_bytes as f64 / 1e6,
        c.isa.name()
    );
    println!(
        "  kernel     {:>8.3} ms   reference {:.3} ms: {:.1}× faster; memcmp of the same bytes {:.3} ms: the kernel \
         runs at {:.2}× memcmp's speed",
        ms(c.kernel_ns),
        ms(c.reference_ns),
        c.speedup_vs_reference,
        ms(c.memcmp_ns),
        c.fraction_of_memcmp
    );
    println!("  push, 1 %  {:>8.3} ms   {:.3} of a full compare", ms(c.push_1pct_ns), c.push_ratio);
    println!();
    for (name, what) in [
        ("reference, server frames", REFERENCE_RUN),
        ("reference, change detection", REFERENCE_COMPARE),
        ("push, 1 %", PUSH_1PCT),
    ] {
        println!("{}", wrap(&format!("{name}: {what}."), 100, "    "));
    }
    println!(
        "{}",
        wrap(
            &format!(
                "more: `shadowrep run --profile battle_royale` (all 360 frames, where the time goes), \
                 `shadowrep sweep --quick --plot sweep.svg` (how cost grows), `shadowrep serve` + `shadowrep bots` \
                 (over real UDP), `shadowrep --help`. This report took {:.1} s.",
                started.elapsed().as_secs_f64()
            ),
            100,
            "    "
        )
    );
    Ok(())
}

/// `text` broken into lines of at most `width` characters at spaces, lines after the first
/// indented by `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
        } else if !line.is_empty() && line != indent {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrapping_keeps_every_word_within_the_width() {
        let text = "one two three four five six seven eight nine ten";
        let w = wrap(text, 14, "  ");
        assert!(w.lines().all(|l| l.chars().count() <= 14), "{w}");
        assert_eq!(w.split_whitespace().collect::<Vec<_>>().join(" "), text);
        assert!(w.lines().skip(1).all(|l| l.starts_with("  ")), "{w}");
        assert_eq!(wrap("short", 14, "  "), "short");
    }
}
