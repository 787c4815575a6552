//! The harness's integration tests, one binary: the `cni-conformance` command, the catalogue
//! against the example plugin, the broken plugins it must catch, and the `cni` crate's goldens.

mod broken_plugins;
mod cli;
mod cni_goldens;
mod example_plugin;
