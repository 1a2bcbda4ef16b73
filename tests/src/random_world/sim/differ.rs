//! What differs between a kernel packet and the reference's, said in bunches: a failing world's
//! message names the first bunch (or call, or export) where the two part, decoded with the
//! layouts the receiving client knows — where "byte 4 differs" alone would leave a reader to
//! decode the bits by hand (session 69: a sub-object's Destroyed close against a TornOff one).

use shadowrep::client::ClientWorld;
use shadowrep::schema::ClassLayout;
use shadowrep::wire::bunch::{decode_packet, Packet, Resolve};
use std::sync::Arc;

/// The first difference of packets `kernel` and `reference` (both for `world`, which has not
/// received either), in words; `layouts` indexed by class id.
pub(super) fn describe(kernel: &[u8], reference: &[u8], layouts: &[&Arc<ClassLayout>], world: &ClientWorld) -> String {
    let at = kernel.iter().zip(reference).position(|(k, r)| k != r).unwrap_or(kernel.len().min(reference.len()));
    let bytes = format!("{} bytes against {}, first difference at byte {at}", kernel.len(), reference.len());
    let decode = |bytes: &[u8]| {
        decode_packet(bytes, |guid, open| {
            let class = open.map(|o| o.class).or_else(|| world.class_of(guid));
            // A fast array's delta (its kind is not a class) is stepped over.
            Ok(match class.and_then(|c| layouts.get(c as usize)) {
                Some(layout) => Resolve::Layout(layout),
                None => Resolve::Skip,
            })
        })
    };
    match (decode(kernel), decode(reference)) {
        (Ok(k), Ok(r)) => format!("{bytes}; {}", first_difference(&k, &r)),
        (k, r) => format!("{bytes}; decoded: kernel {:?}, reference {:?}", k.err(), r.err()),
    }
}

/// The first bunch, skipped bunch, export or call where `k` and `r` part.
fn first_difference(k: &Packet, r: &Packet) -> String {
    fn part<T: std::fmt::Debug>(what: &str, k: &[T], r: &[T]) -> Option<String> {
        let i = (0..k.len().max(r.len())).find(|&i| format!("{:?}", k.get(i)) != format!("{:?}", r.get(i)))?;
        Some(format!("{what} {i}: kernel {:?}, reference {:?}", k.get(i), r.get(i)))
    }
    part("bunch", &k.bunches, &r.bunches)
        .or_else(|| part("skipped bunch", &k.skipped, &r.skipped))
        .or_else(|| part("export", &k.exports, &r.exports))
        .or_else(|| part("call", &k.rpcs, &r.rpcs))
        .unwrap_or_else(|| "they decode alike (the difference is in bits a decode drops)".into())
}
