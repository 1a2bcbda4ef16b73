//! `shadowrep run`: a profile's simulated world through the actor level, the kernel's pass and
//! the UE-style reference's over the same seeded frames, and the report (open_world adds its
//! dormant and FastArray figures). The main job (`overview.rs`) runs the same two passes.

use crate::{check_memory, check_writable, positive, Session};
use clap::Args;
use serde_json::json;
use shadowrep::compare::Kernels;
use shadowrep_benches::phase::{NoProbe, Phase, PhaseProbe, Scoped};
use shadowrep_benches::scenario::{self, DumpRequest, KernelServer, PhaseSummary, Profile, ScenarioServer, World};
use shadowrep_benches::workload::median;
use std::path::Path;

#[derive(Args, Clone)]
pub(crate) struct RunArgs {
    /// The profile: battle_royale, mmo or open_world.
    #[arg(long)]
    profile: String,
    /// open_world: the dormant share of the world, in 0..1 (default 0.99; 0: the awake actors
    /// alone). Above 0, a world of the awake actors alone runs beside it, frame by frame (the
    /// same seed, its own server), and the report gives the ratio of their medians.
    #[arg(long)]
    dormant_fraction: Option<f64>,
    /// Timed frames (default: 360 for battle_royale, 60 for mmo, 300 for open_world); medians are
    /// reported.
    #[arg(long, value_parser = positive)]
    frames: Option<usize>,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = positive)]
    threads: Option<usize>,
    /// RNG seed of the world.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write timed frame K's inputs and decisions (1..=frames) as JSON to FILE.
    #[arg(long, num_args = 2, value_names = ["K", "FILE.json"])]
    dump_frame: Option<Vec<String>>,
    /// The server makes remote procedure calls as well: a muzzle effect multicast per shot
    /// (unreliable) and a reload call to a weapon's owner when its clip runs dry (reliable) —
    /// what they cost, beside the same frames' actors (the reference writes them too).
    #[arg(long)]
    calls: bool,
    /// Owning connections do not follow owner chains (`ActorLevelConfig::owner_chain_connections`
    /// off; on by default, as UE's `GetNetConnection` walks `Owner`): only the characters'
    /// `set_owner` makes owners, and a projectile whose owner actor is a character is nobody's.
    #[arg(long)]
    no_owner_chains: bool,
    /// Run the UE-style reference on the first N timed frames (a second pass over the same
    /// seeded world, the kernel's decisions compared with it on every frame); 0 skips it.
    /// Default: every frame for battle_royale, 5 for mmo (its reference takes seconds a frame),
    /// 60 for open_world.
    #[arg(long)]
    reference_frames: Option<usize>,
}

fn phase_json(p: &PhaseSummary) -> serde_json::Value {
    json!({
        "frames": p.frames,
        "frame_ms": p.frame_ms,
        "relevant_pairs": p.relevant_pairs,
        "sent_pairs": p.sent_pairs,
        "saturated_connections": p.saturated_connections,
        "bytes_per_connection_frame": p.bytes_per_connection_frame,
    })
}

pub(crate) fn run(
    args: &RunArgs,
    json: bool,
    progress: &mut dyn FnMut(&str),
    session: &mut Session,
) -> Result<(), String> {
    let profile = Profile::by_name(&args.profile).ok_or_else(|| {
        let known: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{}` (known: {})", args.profile, known.join(", "))
    })?;
    let frames = args.frames.unwrap_or(profile.default_frames());
    let mut dump = match args.dump_frame.as_deref() {
        None => None,
        Some([k, file]) => {
            let k: usize = k.parse().map_err(|e| format!("--dump-frame: frame `{k}` is not a whole number: {e}"))?;
            if k == 0 || k > frames {
                return Err(format!("--dump-frame {k}: the run times frames 1..={frames}"));
            }
            check_writable(Path::new(file), false).map_err(|e| format!("--dump-frame: {e}"))?;
            Some((k, crate::LazyFile::new(Path::new(file)), file.clone()))
        }
        Some(_) => return Err("--dump-frame takes a frame and a file".into()),
    };
    let mut cfg = profile.config(args.seed);
    cfg.calls = args.calls;
    if args.no_owner_chains {
        cfg.owner_chains = false;
    }
    if let Some(f) = args.dormant_fraction {
        if profile != Profile::OpenWorld {
            return Err(format!("--dormant-fraction is for open_world, not {}", profile.name()));
        }
        cfg = cfg.with_dormant_fraction(f).map_err(|e| format!("--dormant-fraction: {e}"))?;
    }
    // Per actor: live and shadow pages, history and the actor level's columns (mmo peaks at
    // ~0.41 KB per actor); per connection its channel rows and packets.
    check_memory("this run", cfg.all_actors() as f64 * 600.0 + cfg.connections as f64 * 100_000.0)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = args.threads.unwrap_or(cores).max(1);
    crate::build_pool(threads)?;
    let reference_frames = args.reference_frames.unwrap_or(profile.default_reference_frames()).min(frames);
    if reference_frames == 0 && session.profiles(Phase::Reference) {
        return Err("--flamegraph-phase reference needs the reference pass (--reference-frames above 0)".into());
    }
    let started = std::time::Instant::now();
    let request = dump.as_mut().map(|(frame, out, _)| DumpRequest { frame: *frame, out });
    // An open world with sleepers runs the awake actors alone beside it, frame by frame: the
    // dormant ones' cost is the ratio of the two.
    let awake_alone = cfg.dormant.map(|_| cfg.with_dormant_fraction(0.0)).transpose()?;
    let KernelPass { mut world, mut server, records, beside: alone } =
        kernel_pass(&cfg, frames, threads, request, awake_alone.as_ref(), progress, session)?;
    // What the kernel's run leaves, read before its world is dropped for the reference's pass.
    let (open_pairs, pair_bytes) = server.pair_state()?;
    let [calls_sent, calls_dropped, calls_without_channel, calls_opened_channels] = server.calls_written()?;
    let actors: usize = world.stores.iter().map(|st| st.len()).sum();
    let peak_rss_mb = scenario::peak_rss_bytes().map(|b| b as f64 / 1e6);
    let dormant = match cfg.dormant {
        Some(_) => Some(dormant_report(&mut world, &mut server, alone.unwrap_or_default(), progress)?),
        None => None,
    };
    let fast_array = (profile == Profile::OpenWorld).then(|| {
        progress("FastArray: a 10 000-item inventory");
        shadowrep_benches::fastarray::measure_ratios(FAST_ARRAY_ITEMS, 20)
    });
    drop((world, server));
    let reference = reference_pass(&cfg, reference_frames, threads, &records, progress, session)?
        .map(|r| (r.reference_ms, r.kernel_ms, r.mismatch));
    let wall_s = started.elapsed().as_secs_f64();
    let s = scenario::summarize(&records, cfg.connections, cfg.tick_rate);
    let bytes_per_open_pair = pair_bytes as f64 / open_pairs.max(1) as f64;
    let st = &s.stages;
    if json {
        let out = json!({
            "command": "run",
            "profile": profile.name(),
            "seed": cfg.seed,
            "calls": cfg.calls,
            "owner_chains": cfg.owner_chains,
            "calls_written": calls_sent,
            "calls_dropped": calls_dropped,
            "calls_without_channel": calls_without_channel,
            "calls_opened_channels": calls_opened_channels,
            "frames": frames,
            "warmup_frames": scenario::WARMUP_FRAMES,
            "level_load_frames": cfg.load_frames(),
            "threads": threads,
            "isa": Kernels::best().isa.name(),
            "times": "per-frame medians over the timed frames (p99: the 99th percentile)",
            "reference": REFERENCE_RUN,
            "connections": cfg.connections,
            "actors": actors,
            "tick_rate": cfg.tick_rate,
            "frame_ms": s.all.frame_ms,
            "frame_p99_ms": s.frame_p99_ms,
            "reference_frames": reference_frames,
            "reference_frame_ms": reference.as_ref().map(|r| r.0),
            "kernel_frame_ms_same_frames": reference.as_ref().map(|r| r.1),
            "speedup_vs_reference": reference.as_ref().map(|r| r.0 / r.1.max(1e-9)),
            "matches_reference": reference.as_ref().map(|r| r.2.is_none()),
            "first_mismatch": reference.as_ref().and_then(|r| r.2.clone()),
            "tick_share": s.tick_share,
            "stages_ms": stages_json(st),
            "stages_note": "medians per frame; relevancy_query, priority and write are CPU time summed over connections \
                            (connections is their wall time); feedback is outside frame_ms, and so is prepare_ms (the kernel's work inside \
                            the game's calls: GUIDs of new actors, set_owner_actor, force_net_update, set_viewers)",
            "relevant_pairs": s.all.relevant_pairs,
            "sent_pairs": s.all.sent_pairs,
            "due_actors": s.due_actors,
            "bytes_per_connection_frame": s.all.bytes_per_connection_frame,
            "saturated_connections": s.all.saturated_connections,
            "first_second": phase_json(&s.first_second),
            "last_second": phase_json(&s.last_second),
            "per_second": s.per_second.iter().map(phase_json).collect::<Vec<_>>(),
            "open_pairs": open_pairs,
            "bytes_per_open_pair": bytes_per_open_pair,
            "pair_state_mb": pair_bytes as f64 / 1e6,
            "peak_rss_mb": peak_rss_mb,
            "prepare_ms": s.prepare_ms,
            "frame_with_prepare_ms": s.frame_with_prepare_ms,
            "game_ms": s.game_ms,
            "wall_s": wall_s,
            "dump_frame": dump.as_ref().map(|(k, _, file)| json!({"frame": k, "file": file})),
            "dormant_actors": cfg.dormant.map_or(0, |d| d.actors),
            "asleep_actors": dormant.as_ref().map(|d| d.asleep),
            "awake_only_frame_ms": dormant.as_ref().map(|d| d.awake_only_ms),
            "dormant_cost_ratio": dormant.as_ref().map(|d| s.all.frame_ms / d.awake_only_ms.max(1e-9)),
            "awake_only_stages_ms": dormant.as_ref().map(|d| stages_json(&d.awake_only_stages)),
            "dormant_bytes_per_frame": dormant.as_ref().map(|d| d.idle_bytes),
            "dormant_first_sight_bytes_per_frame": dormant.as_ref().map(|d| d.first_sight_bytes),
            "dormant_sample_frames": dormant.as_ref().map(|_| DORMANT_SAMPLE_FRAMES),
            "fast_array_items": fast_array.as_ref().map(|f| f.items),
            "fast_array_item_bits": fast_array.as_ref().map(|f| f.item_bits),
            "fast_array_one_item_delta_bits": fast_array.as_ref().map(|f| f.one_item_delta_bits),
            "fast_array_bytes_ratio": fast_array.as_ref().map(|f| f.fast_array_bytes_ratio),
            "fast_array_compare_ratio": fast_array.as_ref().map(|f| f.fast_array_compare_ratio),
            "fast_array_delta_ns": fast_array.as_ref().map(|f| f.delta_ns),
            "fast_array_full_compare_ns": fast_array.as_ref().map(|f| f.full_compare_ns),
            "fast_array_row_memcmp_ns": fast_array.as_ref().map(|f| f.row_compare_ns),
            "fast_array_block_memcmp_ns": fast_array.as_ref().map(|f| f.block_compare_ns),
            "fast_array_first_send_updates": fast_array.as_ref().map(|f| f.first_send_updates),
        });
        session.emit(out)?;
    } else {
        println!(
            "run {}: {} connections, {} actors, {} timed frames at {} Hz (after {} level-load frame(s) without \
             connections and {} warm-up frame), {} thread(s), ISA {}, seed {}; times are per-frame medians",
            profile.name(),
            cfg.connections,
            actors,
            frames,
            cfg.tick_rate,
            cfg.load_frames(),
            scenario::WARMUP_FRAMES,
            threads,
            Kernels::best().isa.name(),
            cfg.seed
        );
        println!(
            "  server frame      {:>9.3} ms median, {:.3} ms p99, {:.1} % of the {:.1} ms tick",
            s.all.frame_ms,
            s.frame_p99_ms,
            s.tick_share * 100.0,
            1e3 / cfg.tick_rate
        );
        if let Some((reference_ms, kernel_ms, mismatch)) = &reference {
            println!(
                "  UE-style reference {reference_ms:>9.3} ms median over the first {reference_frames} frames (kernel \
                 {kernel_ms:.3} ms on them): {:.1}× faster; decisions {}",
                reference_ms / kernel_ms.max(1e-9),
                match mismatch {
                    None => "identical on every frame".to_string(),
                    Some(m) => format!("DIFFER: {m}"),
                }
            );
        }
        println!("  stages (medians; * = CPU time summed over connections):");
        for (name, v) in [
            ("gather", st.gather),
            ("consider", st.consider),
            ("dormancy", st.dormancy),
            ("relevancy index", st.relevancy_index),
            ("relevancy query*", st.relevancy_query),
            ("share", st.share),
            ("priority*", st.priority),
            ("write*", st.write),
            ("connections (wall)", st.connections),
            ("feedback (not in frame)", st.feedback),
        ] {
            println!("    {name:<24}{v:>9.3} ms");
        }
        let seconds = s.per_second.iter().enumerate().map(|(i, p)| (format!("second {}", i + 1), p));
        for (name, p) in [("all frames".to_string(), &s.all)].into_iter().chain(seconds) {
            println!(
                "  {name:<13} frame {:>8.3} ms, relevant pairs {:>8.0}, sent {:>7.0}, saturated {:>5.0}, {:>6.0} B/conn/frame",
                p.frame_ms, p.relevant_pairs, p.sent_pairs, p.saturated_connections, p.bytes_per_connection_frame
            );
        }
        if cfg.calls {
            println!(
                "  calls: {calls_sent} written to connections over the run, {calls_dropped} dropped (unreliable on a \
                 saturated connection), {calls_without_channel} not for a connection (no open channel there), \
                 {calls_opened_channels} channels a saturated frame opened for them"
            );
        }
        println!("  due actors per frame {:.0}", s.due_actors);
        println!(
            "  channel rows at the run's end (open or recently relevant pairs; `open_pairs` in the JSON): {open_pairs}, \
             {bytes_per_open_pair:.0} B of state each (`bytes_per_open_pair`: send state, relevancy and priority \
             times, key), {:.1} MB",
            pair_bytes as f64 / 1e6
        );
        if let Some(mb) = peak_rss_mb {
            println!("  peak RSS {mb:.0} MB");
        }
        println!(
            "  not in the frame: the server's prepare (game calls: GUIDs of new actors, owners, viewers) {:.3} ms, \
             the game's step {:.3} ms; frame + prepare {:.3} ms; the run took {wall_s:.1} s",
            s.prepare_ms, s.game_ms, s.frame_with_prepare_ms
        );
        if let Some(d) = &dormant {
            println!(
                "  dormant: {} actors ({} asleep at the end); the awake actors alone {:.3} ms median on the same \
                 frames: {:.2}× with the dormant ones",
                cfg.dormant.map_or(0, |d| d.actors),
                d.asleep,
                d.awake_only_ms,
                s.all.frame_ms / d.awake_only_ms.max(1e-9)
            );
            println!(
                "  dormant bytes per frame over {DORMANT_SAMPLE_FRAMES} more frames: {:.1} B updating copies clients \
                 hold, {:.1} B of first sight (opens of those a connection meets, and their dormancy closes)",
                d.idle_bytes, d.first_sight_bytes
            );
        }
        if let Some(f) = &fast_array {
            println!(
                "  FastArray, {} items of {} bits: one changed item {} bits ({} over the item: header and id), \
                 {:.2e} of the whole array; found and encoded in {:.0} ns, {:.4} of a full element-wise compare \
                 ({:.0} ns; one memcmp per element {:.0} ns, of the whole block {:.0} ns); a first send takes {} updates",
                f.items,
                f.item_bits,
                f.one_item_delta_bits,
                f.one_item_delta_bits.saturating_sub(f.item_bits),
                f.fast_array_bytes_ratio,
                f.delta_ns,
                f.fast_array_compare_ratio,
                f.full_compare_ns,
                f.row_compare_ns,
                f.block_compare_ns,
                f.first_send_updates
            );
        }
        if let Some((k, _, file)) = &dump {
            println!("  frame {k} written to {file}");
        }
        if reference.is_some() {
            println!("  reference: {REFERENCE_RUN}");
        }
    }
    Ok(())
}

/// What `run`'s reference is.
pub(crate) const REFERENCE_RUN: &str = "UE's ServerReplicateActors done UE's way on the same frames (a second \
    pass over the same seeded world): the whole actor list, per-property compare of each due actor against its \
    own shadow, relevancy asked actor by actor, a full sort and per-connection serialization per connection, on \
    one thread; its decisions are checked against the kernel's on every frame";

/// What [`kernel_pass`] leaves.
pub(crate) struct KernelPass {
    /// The world and its server after the timed frames.
    pub world: World,
    pub server: KernelServer,
    /// Each timed frame's record.
    pub records: Vec<scenario::FrameRecord>,
    /// The records of the world run beside, if any.
    pub beside: Option<Vec<scenario::FrameRecord>>,
}

/// The kernel's pass of a profile: the world, its server after the timed frames, and each timed
/// frame's record; `threads > 1` runs the per-connection work on the global pool. With `beside`,
/// a second world of that config (its own server) runs frame by frame beside the timed frames
/// (not probed) and its records come back too.
pub(crate) fn kernel_pass(
    cfg: &scenario::ScenarioConfig,
    frames: usize,
    threads: usize,
    request: Option<DumpRequest<'_>>,
    beside: Option<&scenario::ScenarioConfig>,
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<KernelPass, String> {
    progress("building the world");
    let mut world = World::new(cfg);
    let mut server = KernelServer::new(&mut world, threads > 1)?;
    let mut probe = Scoped { inner: probe, runs: &[Phase::Kernel] };
    let Some(other) = beside else {
        let records = scenario::run(&mut world, &mut server, frames, request, progress, &mut probe)?;
        return Ok(KernelPass { world, server, records, beside: None });
    };
    progress("building the companion world");
    let mut other_world = World::new(other);
    let mut other_server = KernelServer::new(&mut other_world, threads > 1)?;
    let mut companion = scenario::Companion { world: &mut other_world, server: &mut other_server, records: Vec::new() };
    let records =
        scenario::run_beside(&mut world, &mut server, frames, request, progress, &mut probe, Some(&mut companion))?;
    let beside = Some(std::mem::take(&mut companion.records));
    Ok(KernelPass { world, server, records, beside })
}

/// What the reference's pass found.
pub(crate) struct ReferenceOutcome {
    /// Median of the reference's frames, ms.
    pub reference_ms: f64,
    /// Median of the kernel's frames (of its own pass) over the same frames, ms.
    pub kernel_ms: f64,
    /// The first frame on which the two decided differently, if any.
    pub mismatch: Option<String>,
}

/// The reference's pass over the first `reference_frames` frames of the same seeded world
/// (none for 0), against the kernel pass's `records`.
pub(crate) fn reference_pass(
    cfg: &scenario::ScenarioConfig,
    reference_frames: usize,
    threads: usize,
    records: &[scenario::FrameRecord],
    progress: &mut dyn FnMut(&str),
    probe: &mut dyn PhaseProbe,
) -> Result<Option<ReferenceOutcome>, String> {
    if reference_frames == 0 {
        return Ok(None);
    }
    progress("the UE-style reference, on the same frames");
    let mut world = World::new(cfg);
    let mut server = KernelServer::with_reference(&mut world, threads > 1)?;
    let mut probe = Scoped { inner: probe, runs: &[Phase::Kernel, Phase::Reference] };
    let recs = scenario::run(&mut world, &mut server, reference_frames, None, progress, &mut probe)?;
    let mismatch = server.reference_report().and_then(|(_, m)| m.map(str::to_string));
    let reference_ms = median(recs.iter().map(|r| r.reference_ns.unwrap_or(0) as f64 / 1e6).collect());
    let n = reference_frames.min(records.len());
    let kernel_ms = median(records[..n].iter().map(|r| r.tick_ns as f64 / 1e6).collect());
    Ok(Some(ReferenceOutcome { reference_ms, kernel_ms, mismatch }))
}

/// Items of the FastArray inventory the open_world report measures.
const FAST_ARRAY_ITEMS: usize = 10_000;

/// Frames after the timed ones with every connection's decisions recorded, to tell the bytes
/// spent on dormant actors apart.
const DORMANT_SAMPLE_FRAMES: usize = 30;

/// What a world with dormant actors adds to the report.
struct DormantReport {
    asleep: usize,
    awake_only_ms: f64,
    /// The awake-only frames' stage medians.
    awake_only_stages: scenario::StagesMs,
    idle_bytes: f64,
    first_sight_bytes: f64,
}

/// Samples the dormant actors' bytes after the timed frames; `alone` are the frames of the awake
/// actors alone, run beside the timed ones.
fn dormant_report(
    world: &mut World,
    server: &mut KernelServer,
    alone: Vec<scenario::FrameRecord>,
    progress: &mut dyn FnMut(&str),
) -> Result<DormantReport, String> {
    let asleep = server.driver().asleep_actors();
    server.record_decisions(true)?;
    let (mut idle, mut first) = (0.0, 0.0);
    for f in 0..DORMANT_SAMPLE_FRAMES {
        progress(&format!("dormant bytes, frame {}/{DORMANT_SAMPLE_FRAMES}", f + 1));
        let events = world.step();
        scenario::run_frame(server, world, &events, &mut NoProbe)?;
        let (i, fs) = server.dormant_bytes()?;
        idle += i;
        first += fs;
    }
    server.record_decisions(false)?;
    Ok(DormantReport {
        asleep,
        awake_only_ms: median(alone.iter().map(|r| r.tick_ns as f64 / 1e6).collect()),
        awake_only_stages: scenario::summarize(&alone, 1, 1.0).stages,
        idle_bytes: idle / DORMANT_SAMPLE_FRAMES as f64,
        first_sight_bytes: first / DORMANT_SAMPLE_FRAMES as f64,
    })
}

/// A run's stage medians as JSON.
fn stages_json(st: &scenario::StagesMs) -> serde_json::Value {
    json!({
        "gather": st.gather,
        "consider": st.consider,
        "dormancy": st.dormancy,
        "relevancy": st.relevancy,
        "relevancy_index": st.relevancy_index,
        "relevancy_query": st.relevancy_query,
        "share": st.share,
        "priority": st.priority,
        "write": st.write,
        "connections": st.connections,
        "feedback": st.feedback,
    })
}
