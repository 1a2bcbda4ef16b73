use shadowrep::compare::*;
use shadowrep_benches::workload::CompareWorkload;
use std::time::Instant;
fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1_000_000);
    let mut w = CompareWorkload::new("ShooterCharacter", n, 1, false).unwrap();
    let par = std::env::var("PAR").is_ok();
    let push = CompareConfig { push: PushMode::All, kernels: Kernels::best(), parallel: par };
    let full = CompareConfig { push: PushMode::Off, ..push };
    let mut sp = ShadowState::new(&mut w.store);
    let mut sf = ShadowState::new(&mut w.store);
    let mut c = ChangeSet::new();
    w.store.begin_tick();
    sp.compare(&mut w.store, &push, &mut c).unwrap();
    sf.compare(&mut w.store, &full, &mut c).unwrap();
    let mut r = vec![];
    for _ in 0..10 {
        w.mutate(0.01, true);
        w.store.begin_tick();
        let t = Instant::now();
        sp.compare(&mut w.store, &push, &mut c).unwrap();
        let tp = t.elapsed();
        let t = Instant::now();
        sf.compare(&mut w.store, &full, &mut c).unwrap();
        let tf = t.elapsed();
        r.push(tp.as_secs_f64() / tf.as_secs_f64());
        println!("push {:?} full {:?}", tp, tf);
    }
    r.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("median push ratio {:.3}", r[r.len() / 2]);
}
