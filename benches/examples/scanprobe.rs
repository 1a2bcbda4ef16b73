use shadowrep::compare::*;
use shadowrep_benches::workload::CompareWorkload;
use std::time::Instant;
fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let class = std::env::args().nth(2).unwrap_or("ShooterCharacter".into());
    let mut w = CompareWorkload::new(&class, n, 1, false).unwrap();
    let full = CompareConfig { push: PushMode::Off, kernels: Kernels::best(), parallel: false };
    let mut sf = ShadowState::new(&mut w.store);
    let mut c = ChangeSet::new();
    w.store.begin_tick();
    sf.compare(&mut w.store, &full, &mut c).unwrap();
    let mut ratios = vec![];
    for _ in 0..std::env::var("FRAMES").map(|s| s.parse().unwrap()).unwrap_or(15) {
        w.mutate(0.01, false);
        w.store.begin_tick();
        let t = Instant::now();
        sf.compare(&mut w.store, &full, &mut c).unwrap();
        let k = t.elapsed();
        let t = Instant::now();
        let eq = std::hint::black_box(w.store.live().bytes()) == std::hint::black_box(sf.pages().bytes());
        let m = t.elapsed();
        assert!(eq);
        ratios.push(m.as_secs_f64() / k.as_secs_f64());
        println!("kernel {:?} memcmp {:?} ratio {:.2}", k, m, m.as_secs_f64() / k.as_secs_f64());
    }
    ratios.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("median ratio {:.3}", ratios[ratios.len() / 2]);
}
