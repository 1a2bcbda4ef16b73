//! `shadowrep compare`: change detection — the SIMD kernel against the UE-style reference and
//! `memcmp`, and the push model — and `compare --scaling`, push frames in a world and in one ten
//! times larger. The main job (`overview.rs`) and `sweep` quote its baselines.

use crate::{actor_bytes, check_memory, kernels, positive, Session};
use clap::Args;
use serde_json::json;
use shadowrep::compare::{Kernels, NextPage, PageScan};
use shadowrep_benches::workload::{run_compare, run_push_scaling, CompareOptions, ScalingOptions};

#[derive(Args, Clone)]
pub(crate) struct CompareArgs {
    /// Class to instantiate: Actor, ShooterCharacter, LootContainer, ExampleActor, Projectile, ShooterWeapon, Pickup,
    /// Counter (a class of your own: `cargo run --release -p shadowrep-benches --example custom_class`).
    #[arg(long, default_value = "ShooterCharacter")]
    class: String,
    /// Number of actors.
    #[arg(long, default_value_t = 100_000, value_parser = positive)]
    actors: usize,
    /// Fraction of actors changed per frame (0.01 = 1 %).
    #[arg(long, default_value_t = 0.01)]
    changed: f64,
    /// Kernel threads (default: every core). The reference is single-threaded, as UE's is.
    #[arg(long, value_parser = positive)]
    threads: Option<usize>,
    /// Timed frames; medians are reported.
    #[arg(long, default_value_t = 9, value_parser = positive)]
    frames: usize,
    /// Diff routines: best, scalar, wide, avx2, avx512.
    #[arg(long, default_value = "best")]
    isa: String,
    /// How a page is read before its lane diffs: first-difference, whole or lanes (needs a named
    /// `--isa`; with `best` the compare tries each and reports the one it kept as `page_scan`).
    #[arg(long)]
    scan: Option<String>,
    /// Whether a changed page's lane diffs prefetch the next page: prefetch or hardware (needs a
    /// named `--isa`; with `best` the compare tries both and reports the one it kept as
    /// `next_page`).
    #[arg(long)]
    next_page: Option<String>,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead: push frames with `--dirty` actors marked, in a world of `--actors` actors and in
    /// one ten times larger, one thread; reports `scaling_ratio` (large / small).
    #[arg(long)]
    scaling: bool,
    /// Actors marked (and changed) per push frame with `--scaling`.
    #[arg(long, default_value_t = 10_000, value_parser = positive)]
    dirty: usize,
}

impl Default for CompareArgs {
    fn default() -> Self {
        Self {
            class: "ShooterCharacter".into(),
            actors: 100_000,
            changed: 0.01,
            threads: None,
            frames: 9,
            isa: "best".into(),
            scan: None,
            next_page: None,
            seed: 1,
            scaling: false,
            dirty: 10_000,
        }
    }
}

pub(crate) fn compare(
    args: &CompareArgs,
    json: bool,
    progress: &mut dyn FnMut(&str),
    session: &mut Session,
) -> Result<(), String> {
    if !(0.0..=1.0).contains(&args.changed) {
        return Err(format!("--changed must be within 0..=1, got {}", args.changed));
    }
    if args.scaling {
        return compare_scaling(args, json, progress, session);
    }
    check_memory("this compare", compare_bytes(&args.class, args.actors)?)?;
    let threads = args.threads.unwrap_or_else(rayon::current_num_threads).max(1);
    let opts = CompareOptions {
        class: args.class.clone(),
        actors: args.actors,
        changed: args.changed,
        threads,
        frames: args.frames.max(1),
        kernels: with_next_page(with_scan(kernels(&args.isa)?, args.scan.as_deref())?, args.next_page.as_deref())?,
        seed: args.seed,
    };
    let r = run_compare(&opts, progress, session)?;
    let gbps = |ns: u64| 2.0 * r.live_bytes as f64 / ns.max(1) as f64;
    if json {
        let out = json!({
            "command": "compare",
            "class": opts.class,
            "actors": opts.actors,
            "changed": opts.changed,
            "threads": threads,
            "isa": r.isa.name(),
            "isa_calibrated": opts.kernels.isa.name(),
            "isa_tuned": opts.kernels.tuned(),
            "page_scan": r.scan.name(),
            "next_page": r.next_page.name(),
            "tune_scores": r.tune_scores.iter().map(|(table, ratio)| json!({"table": table, "ratio": ratio})).collect::<Vec<_>>(),
            "isa_calibration_ns": Kernels::calibration()
                .iter()
                .map(|(isa, ns)| (isa.name().to_string(), json!(ns)))
                .collect::<serde_json::Map<_, _>>(),
            "frames": opts.frames,
            "times": "per-frame medians over the timed frames (untimed first: one warm-up frame and, with --isa best \
                on a large world, the frames where the compare tries each diff table with each page scan and each \
                next-page rule; `isa`, `page_scan` and `next_page` are what it kept, `tune_scores` every candidate, \
                fastest first, with the median of its time per page over the baseline's in those frames)",
            "reference": REFERENCE_COMPARE,
            "push_1pct": PUSH_1PCT,
            "kernel_ns": r.kernel_ns,
            "reference_ns": r.reference_ns,
            "memcmp_ns": r.memcmp_ns,
            "memcmp_2t_ns": r.memcmp_2t_ns,
            "speedup_vs_reference": r.speedup_vs_reference,
            "fraction_of_memcmp": r.fraction_of_memcmp,
            "fraction_of_memcmp_2t": r.fraction_of_memcmp_2t,
            "push_1pct_ns": r.push_1pct_ns,
            "push_ratio": r.push_ratio,
            "push_gather_ns": r.push_gather_ns,
            "push_vs_gather": r.push_vs_gather,
            "push_gather": PUSH_GATHER,
            "live_bytes": r.live_bytes,
            "kernel_gb_per_s": gbps(r.kernel_ns),
            "memcmp_gb_per_s": gbps(r.memcmp_ns),
            "memcmp_2t_gb_per_s": gbps(r.memcmp_2t_ns),
            "changed_actors": r.changed_actors,
            "dirty_stats": r.dirty_stats.iter().map(|s| json!({
                "property": s.property,
                "push": s.push,
                "marked": s.marked,
                "changed": s.changed,
            })).collect::<Vec<_>>(),
        });
        session.emit(out)?;
    } else {
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "compare: {} × {} at {:.2} % changed per frame; kernel on {} thread(s), ISA {}; times are per-frame \
             medians of {} timed frames",
            opts.actors,
            opts.class,
            opts.changed * 100.0,
            threads,
            if opts.kernels.tuned() {
                format!(
                    "{}, page scan {}, next page {} (calibrated {}, kept from trials on the first frames)",
                    r.isa.name(),
                    r.scan.name(),
                    r.next_page.name(),
                    opts.kernels.isa.name()
                )
            } else {
                format!("{}, page scan {}, next page {}", r.isa.name(), r.scan.name(), r.next_page.name())
            },
            opts.frames
        );
        println!("  kernel      {:>10.3} ms   {:>6.2} GB/s (live + shadow)", ms(r.kernel_ns), gbps(r.kernel_ns));
        println!("  reference   {:>10.3} ms   speedup ×{:.1}", ms(r.reference_ns), r.speedup_vs_reference);
        println!(
            "  memcmp      {:>10.3} ms   kernel runs at {:.2} of memcmp speed",
            ms(r.memcmp_ns),
            r.fraction_of_memcmp
        );
        println!(
            "  memcmp, 2t  {:>10.3} ms   kernel runs at {:.2} of a two-thread memcmp",
            ms(r.memcmp_2t_ns),
            r.fraction_of_memcmp_2t
        );
        println!("  push, 1 %   {:>10.3} ms   {:.4} of a full compare", ms(r.push_1pct_ns), r.push_ratio);
        println!(
            "  gather      {:>10.3} ms   push frame / gather of its marked lanes: {:.2}",
            ms(r.push_gather_ns),
            r.push_vs_gather
        );
        println!(
            "  {} actors changed in the last frame; {:.1} MB of live state",
            r.changed_actors,
            r.live_bytes as f64 / 1e6
        );
        if !r.tune_scores.is_empty() {
            let scores: Vec<String> = r.tune_scores.iter().map(|(t, x)| format!("{t} {x:.3}")).collect();
            println!("  trials (time per page over the baseline's, medians, fastest first): {}", scores.join(", "));
        }
        println!(
            "  dirty statistics, summed over the {} untimed push frames after the timed ones (lanes compared with a \
             mark / lanes changed; every property is push-based in those frames, `push` in the JSON is the \
             declaration):",
            opts.frames
        );
        for s in r.dirty_stats.iter().filter(|s| s.marked != 0 || s.changed != 0) {
            println!("    {:<24} {:>10} marked {:>10} changed", s.property, s.marked, s.changed);
        }
        println!("  reference: {REFERENCE_COMPARE}");
        println!("  push, 1 %: {PUSH_1PCT}");
        println!("  gather: {PUSH_GATHER}");
        println!("  memcmp: the same live and shadow bytes compared with `==` (equal, so every byte is read)");
        println!(
            "  ratios are medians of per-frame ratios (kernel and its baseline timed in the same frame), not ratios \
             of the medians above"
        );
    }
    Ok(())
}

/// What `compare`'s "reference" is.
pub(crate) const REFERENCE_COMPARE: &str = "the UE-style path on the same actors: array-of-structs objects, each \
    property compared against its own shadow one by one (UE's CompareProperties), single-threaded as UE's is; \
    every frame its changelists must equal the kernel's";

/// What `compare`'s "push, 1 %" is.
pub(crate) const PUSH_1PCT: &str = "every property push-based, 1 % of the actors marked dirty (and changed), from a \
    cold cache: the kernel compares only marked lanes; its time against a full compare of the same frame (timed \
    without the dirty statistics, a diagnostic, which come from as many push frames after the timed ones)";

/// What `compare`'s "gather" is.
pub(crate) const PUSH_GATHER: &str = "one byte of every plane lane the push frame's marks name, live and shadow, \
    read with nothing else done, from a cache as cold as the push frame's (a buffer twice the last-level cache \
    streamed before each; the live lanes warmed again, as the game's writes leave them): the latency floor of the \
    push frame";

/// Bytes a `compare` of `actors` actors of `class` needs: live and shadow pages, the reference's
/// objects and their shadows, and the buffer streamed to start push frames cold.
pub(crate) fn compare_bytes(class: &str, actors: usize) -> Result<f64, String> {
    let (page, record) = actor_bytes(class)?;
    Ok(actors as f64 * (2.0 * page + 2.0 * record) * 1.25 + shadowrep_benches::workload::flush_bytes() as f64)
}

/// `compare --scaling`: the same number of marked actors in a world and in one ten times larger.
fn compare_scaling(
    args: &CompareArgs,
    json: bool,
    progress: &mut dyn FnMut(&str),
    session: &mut Session,
) -> Result<(), String> {
    let (page, _) = actor_bytes(&args.class)?;
    let flush = shadowrep_benches::workload::flush_bytes() as f64;
    // The larger world's live and shadow pages, and the copy floor's two arrays of their size.
    check_memory("this scaling run", args.actors as f64 * 10.0 * 4.0 * page * 1.25 + flush)?;
    if args.dirty > args.actors {
        return Err(format!("--dirty {} is more than the {} actors", args.dirty, args.actors));
    }
    let kernels = kernels(&args.isa)?;
    let frames = args.frames.max(1);
    let opts = ScalingOptions {
        class: args.class.clone(),
        actors: args.actors,
        dirty: args.dirty,
        frames,
        kernels,
        seed: args.seed,
    };
    let r = run_push_scaling(&opts, progress, session)?;
    if json {
        session.emit(json!({
            "command": "compare",
            "scaling": "push frames (every property push-based, one thread) with the same number of actors marked \
                and changed, in a world and in one ten times larger; a buffer twice the last-level cache is streamed \
                before each frame so it starts cold; the gather of the marked lanes and their copy floor (each \
                marked lane's word loaded, compared and copied in ascending order, prefetched ahead, on page arrays \
                of the world's size of its own) timed in frames of their own",
            "class": args.class,
            "actors": r.actors,
            "dirty": r.dirty,
            "isa": kernels.isa.name(),
            "frames": frames,
            "push_ns": r.push_ns,
            "gather_ns": r.gather_ns,
            "scaling_ratio": r.scaling_ratio,
            "gather_scaling_ratio": r.gather_scaling_ratio,
            "copy_ns": r.copy_ns,
            "copy_scaling_ratio": r.copy_scaling_ratio,
        }))?;
    } else {
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "compare --scaling: {} actors marked per push frame, {} × {} vs {}; medians of {frames} frames, ISA {}",
            r.dirty,
            args.class,
            r.actors[0],
            r.actors[1],
            kernels.isa.name()
        );
        for i in 0..2 {
            println!(
                "  {:>10} actors   push {:>8.3} ms   gather {:>8.3} ms   copy {:>8.3} ms   ({:.2}× the gather, {:.2}× the copy)",
                r.actors[i],
                ms(r.push_ns[i]),
                ms(r.gather_ns[i]),
                ms(r.copy_ns[i]),
                r.push_ns[i] as f64 / r.gather_ns[i].max(1) as f64,
                r.push_ns[i] as f64 / r.copy_ns[i].max(1) as f64
            );
        }
        println!(
            "  scaling_ratio {:.2} (large / small); the gather's own {:.2}, the copy floor's {:.2}",
            r.scaling_ratio, r.gather_scaling_ratio, r.copy_scaling_ratio
        );
    }
    Ok(())
}

/// `kernels` with the page scan `--scan` names, if any: only with a named table, since `best`
/// tries both scans on its own frames.
fn with_scan(kernels: Kernels, scan: Option<&str>) -> Result<Kernels, String> {
    let Some(name) = scan else { return Ok(kernels) };
    if kernels.tuned() {
        return Err("--scan needs a named --isa: with best the compare tries both scans on its first frames \
                    and reports the one it kept as page_scan"
            .into());
    }
    let scan =
        PageScan::parse(name).ok_or_else(|| format!("unknown page scan `{name}` (first-difference, whole, lanes)"))?;
    Ok(kernels.with_scan(scan))
}

/// `kernels` with the next-page rule `--next-page` names, if any: only with a named table, since
/// `best` tries both on its own frames.
fn with_next_page(kernels: Kernels, next_page: Option<&str>) -> Result<Kernels, String> {
    let Some(name) = next_page else { return Ok(kernels) };
    if kernels.tuned() {
        return Err("--next-page needs a named --isa: with best the compare tries both on its first frames \
                    and reports the one it kept as next_page"
            .into());
    }
    let next = NextPage::parse(name).ok_or_else(|| format!("unknown next-page rule `{name}` (prefetch, hardware)"))?;
    Ok(kernels.with_next_page(next))
}
