//! Layout checksums

use crate::helpers::*;
use shadowrep::client::{ClientError, ClientWorld};
use shadowrep::link::LinkConfig;
use shadowrep::net::DriverConfig;
use shadowrep::schema::{ClassBuilder, Condition, Notify, PropType, PropertyDecl};
use shadowrep_tests::World;

#[test]
fn a_client_with_a_different_layout_is_refused() {
    let server = build(ClassBuilder::new("Thing").property(PropertyDecl::new("A", PropType::U32)));
    let mut w = World::with_layouts(vec![server.clone()], DriverConfig::default(), 1);
    let checksums = w.driver.checksums();
    assert_eq!(checksums, [server.checksum]);
    let other = build(ClassBuilder::new("Thing").property(PropertyDecl::new("A", PropType::U16)));
    assert_ne!(other.checksum, server.checksum);
    match ClientWorld::new(std::slice::from_ref(&other), &checksums) {
        Err(ClientError::ChecksumMismatch { class, server: s, client }) => {
            assert_eq!((class, s, client), (0, server.checksum, other.checksum));
        }
        Err(e) => panic!("wrong error: {e:?}"),
        Ok(_) => panic!("a mismatched layout was accepted"),
    }
    // Only the second class differs: its index is reported.
    let two = [server.clone(), other.clone()];
    assert!(matches!(
        ClientWorld::new(&two, &[server.checksum, server.checksum]),
        Err(ClientError::ChecksumMismatch { class: 1, .. })
    ));
    assert!(matches!(ClientWorld::new(&two, &checksums), Err(ClientError::ClassCount { server: 1, client: 2 })));
    // Conditions and notifies are not part of the wire contract: such a client interoperates.
    let relaxed = build(
        ClassBuilder::new("Thing")
            .property(PropertyDecl::new("A", PropType::U32).condition(Condition::OwnerOnly).notify(Notify::Always)),
    );
    assert!(ClientWorld::new(&[relaxed], &checksums).is_ok());
    // And the world's own clients use the server's layouts.
    w.add_client(false, LinkConfig::perfect(1));
    w.step();
}

#[test]
fn layouts_given_in_another_order_than_the_servers_are_named_as_such() {
    let a = build(ClassBuilder::new("Door").property(PropertyDecl::new("Open", PropType::Bool)));
    let b = build(ClassBuilder::new("Crate").property(PropertyDecl::new("Hp", PropType::U16)));
    let w = World::with_layouts(vec![a.clone(), b.clone()], DriverConfig::default(), 1);
    let checksums = w.driver.checksums();
    // The same build, the layouts swapped: not "the builds do not interoperate".
    let e = ClientWorld::new(&[b.clone(), a.clone()], &checksums).err().expect("refused");
    assert_eq!(e, ClientError::ClassOrder { class: 0, server_class: 1 });
    let m = e.to_string();
    assert!(m.contains("order the server registered them") && m.contains("NetDriver::layouts"), "{m}");
    // The driver lists its layouts in its order: a client built from them matches.
    let listed: Vec<u64> = w.driver.layouts().iter().map(|l| l.checksum).collect();
    assert_eq!(listed, [a.checksum, b.checksum]);
    assert!(ClientWorld::new(&w.driver.layouts(), &checksums).is_ok());
    // A layout the server does not have at all is still a mismatch.
    let other = build(ClassBuilder::new("Door").property(PropertyDecl::new("Open", PropType::U8)));
    assert!(matches!(ClientWorld::new(&[other, b], &checksums), Err(ClientError::ChecksumMismatch { class: 0, .. })));
}
