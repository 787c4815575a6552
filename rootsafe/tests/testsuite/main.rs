//! rootsafe's integration tests, one binary: files (never through a link, never blocking on a
//! special file), deadlines, and children run to their end or their deadline.

mod child;
mod deadline;
mod file;
