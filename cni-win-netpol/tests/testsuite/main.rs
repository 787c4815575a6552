//! cni-win-netpol's integration tests, one binary: upstream's NetworkPolicy truth tables as our
//! own data (the `netpol-truth-tables` crate), and how the agent's writes converge HNS, on the
//! HCN emulator: in what order, without a window, kept to what a refused write holds back,
//! and within the rule size production uses.

mod no_window;
mod refusals;
mod rule_size;
#[cfg(not(windows))] // the HCN emulator the cases run on is Linux-only
mod support;
mod truth_table;
mod writes;
