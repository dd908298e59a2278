//! A headless-Chromium harness for end-to-end dashboard tests, driven over WebDriver with
//! fantoccini. Include it from a test file with `#[path = "browser/mod.rs"] mod browser;`.
//!
//! [`Driver`] owns one chromedriver process and everything it starts: it runs in its own process
//! group with its own `HOME` and `TMPDIR` inside a temporary directory, and dropping the driver
//! (also on a panic's unwind) SIGKILLs the group and waits until no process of it, nor any
//! process carrying the driver's environment marker, is left. Sessions are plain HTTP to
//! chromedriver on 127.0.0.1, so no TLS stack is linked. A test binary killed outright (SIGKILL,
//! or Ctrl-C, which does not reach chromedriver's own group) never runs `Drop`: chromedriver
//! still dies with it (its parent-death signal), and every process it started carries the
//! owning test process's pid and start time, so the next driver's start kills those whose owner
//! is gone (`a_killed_test_process_leaves_no_browser_behind` in tests/browser_smoke.rs).
//!
//! The harness refuses to skip: missing `chromium` or `chromedriver` is a test failure naming
//! the install command. It waits on fixed points (chromedriver's start line, `/status` ready, an
//! element appearing) and polls the page only inside the bounded `wait_*` helpers.

// Each test binary includes this module and uses only part of it, re-exports included.
#![allow(dead_code, unused_imports)]

mod driver;
mod procs;
mod wait;

use std::time::Duration;

pub use driver::{Driver, DriverTrace};
pub use procs::Proc;
pub use wait::{screenshot, wait_for, wait_until_text, TextCheck};

/// How long the `wait_*` helpers wait for the page before failing the test.
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait for what the router does (accept a queued ticket: a worktree is made). Its
/// pass runs on the same two cores as every other browser test and its server, so under the
/// suite's load it takes longer than a page does.
pub const ROUTING_TIMEOUT: Duration = Duration::from_secs(30);

/// The Debian packages the harness needs, named in every failure about a missing binary.
pub const INSTALL_HINT: &str = "apt-get install -y chromium chromium-driver";
