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
