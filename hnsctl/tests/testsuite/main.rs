//! hnsctl's integration tests, one binary: the binary run as an operator and a harness run it,
//! the emulator behind it (Linux only: a Windows hnsctl has no emulator).

mod acl;
mod cli;
