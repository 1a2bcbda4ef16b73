//! Replays a `client_receive` input and prints what each packet did:
//! `cargo run --release --bin replay -- FILE` (in `fuzz/`).

use shadowrep_fuzz::{pick, split};

fn main() {
    let path = std::env::args().nth(1).expect("an input file");
    let data = std::fs::read(&path).expect("readable");
    let Some((&first, rest)) = data.split_first() else { return };
    let (rec, k) = pick(first);
    let mut client = rec.client_after(k);
    println!("after {k} recorded packets: {} actors", client.actor_count());
    for (i, packet) in split(rest).enumerate() {
        let r = client.receive(packet);
        println!("hostile {i} ({} bytes): {r:?}; {} actors", packet.len(), client.actor_count());
        println!("  {:?}", client.take_events());
        let _ = client.feedback();
    }
    for (i, p) in rec.packets[k..].iter().enumerate() {
        let r = client.receive(p);
        println!("recorded {} ({} bytes): {r:?}; {} actors", k + i, p.len(), client.actor_count());
        println!("  {:?}", client.take_events());
    }
    println!("{:?}", client.stats());
}
