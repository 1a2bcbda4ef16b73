//! What the command's tests share: running the built `shadowrep` and checking a refusal.

use std::process::{Command, Output};

/// Runs the built command with `args`.
pub fn shadowrep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shadowrep")).args(args).output().expect("the command starts")
}

/// `args` fail with an error that says `says`, and print nothing on stdout.
pub fn refused(args: &[&str], says: &str) {
    let out = shadowrep(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} must fail");
    assert!(stderr.contains(says), "{args:?}: `{says}` not in {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed {}", String::from_utf8_lossy(&out.stdout));
}
