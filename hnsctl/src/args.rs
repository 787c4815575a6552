//! Hand-written argument parsing: `--name value` options, `--flag`s and positionals.
//! Small enough that a parser crate would not pay for itself.

use std::collections::{BTreeMap, BTreeSet};

/// Options that take no value.
const FLAGS: &[&str] = &["json", "reset", "help"];

/// Parsed command line.
#[derive(Debug, Default)]
pub struct Args {
    positionals: Vec<String>,
    options: BTreeMap<String, String>,
    flags: BTreeSet<String>,
}

impl Args {
    /// Splits the arguments; `--x=v` and `--x v` both work.
    pub fn parse(raw: impl IntoIterator<Item = String>) -> Result<Args, String> {
        let mut args = Args::default();
        let mut iter = raw.into_iter();
        while let Some(arg) = iter.next() {
            let Some(name) = arg.strip_prefix("--") else {
                args.positionals.push(arg);
                continue;
            };
            if let Some((name, value)) = name.split_once('=') {
                args.options.insert(name.to_owned(), value.to_owned());
            } else if FLAGS.contains(&name) {
                args.flags.insert(name.to_owned());
            } else {
                let value = iter
                    .next()
                    .ok_or_else(|| format!("option --{name} needs a value"))?;
                args.options.insert(name.to_owned(), value);
            }
        }
        Ok(args)
    }

    /// Removes and returns the next positional.
    pub fn word(&mut self) -> Option<String> {
        (!self.positionals.is_empty()).then(|| self.positionals.remove(0))
    }

    /// The next positional, or an error saying what is missing.
    pub fn required_word(&mut self, what: &str) -> Result<String, String> {
        self.word().ok_or_else(|| format!("missing {what}"))
    }

    /// Removes and returns an option.
    pub fn option(&mut self, name: &str) -> Option<String> {
        self.options.remove(name)
    }

    /// A required option.
    pub fn required(&mut self, name: &str, example: &str) -> Result<String, String> {
        self.option(name)
            .ok_or_else(|| format!("missing --{name} (e.g. --{name} {example})"))
    }

    /// An option parsed with `FromStr`, the error naming the option.
    pub fn parsed<T: std::str::FromStr>(
        &mut self,
        name: &str,
        expected: &str,
    ) -> Result<Option<T>, String> {
        self.option(name)
            .map(|value| {
                value
                    .parse()
                    .map_err(|_| format!("--{name} {value:?}: expected {expected}"))
            })
            .transpose()
    }

    /// Removes a flag, returning whether it was given.
    pub fn flag(&mut self, name: &str) -> bool {
        self.flags.remove(name)
    }

    /// Fails on anything the command did not consume.
    pub fn finish(self, command: &str) -> Result<(), String> {
        if let Some(word) = self.positionals.first() {
            return Err(format!("unexpected argument {word:?} for `{command}`"));
        }
        if let Some(name) = self.options.keys().chain(self.flags.iter()).next() {
            return Err(format!("unknown option --{name} for `{command}`"));
        }
        Ok(())
    }
}
