//! The example `dedicated_server` (a newcomer's server, end to end) runs and converges.

#[path = "../examples/dedicated_server.rs"]
mod example;

#[test]
fn the_dedicated_server_example_converges() {
    example::main().expect("every client holds the server's values");
}
