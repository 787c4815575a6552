//! cni-win-netpol's integration tests, one binary: upstream's NetworkPolicy truth tables as our
//! own data (the `netpol-truth-tables` crate), and how the agent's writes converge HNS, on the HCN emulator.

#[cfg(not(windows))] // the HCN emulator the cases run on is Linux-only
mod rule_size;
mod support;
mod truth_table;
mod writes;
