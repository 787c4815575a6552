//! `cni-win uninstall`: its arguments and what it prints; the work is [`cni_win::uninstall`].

use cni_win::paths;
use cni_win::uninstall::{self, Event, Outcome, Settings};
use cni_win::{Error, record};

use super::BinDirArgs;

/// Removes what `cni-win install` wrote, restoring what it replaced.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The plugin directory install wrote to (its record is there).
    #[command(flatten)]
    bin: BinDirArgs,
    /// Shows what uninstall would do and changes nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: Args) -> Result<(), Error> {
    let settings = Settings {
        bin_dir: paths::only_one(&args.bin.bin_dirs)?.to_owned(),
        dry_run: args.dry_run,
    };
    uninstall::uninstall(&settings, &mut print)
}

fn print(event: Event) {
    match event {
        Event::NotInstalled { bin_dir } => println!(
            "nothing to do: no {} in {} (cni-win is not installed there)",
            record::FILE_NAME,
            bin_dir.display()
        ),
        Event::File {
            path,
            outcome,
            dry_run,
        } => {
            let what = match (outcome, dry_run) {
                (Outcome::Gone, _) => "already gone".to_owned(),
                (Outcome::Changed, _) => "changed since install: left in place".to_owned(),
                (Outcome::Removed, true) => "remove".to_owned(),
                (Outcome::Removed, false) => "removed".to_owned(),
                (Outcome::Restored(kept), true) => format!("restore {}", kept.display()),
                (Outcome::Restored(kept), false) => format!("restored {}", kept.display()),
            };
            let verb = if dry_run { "would " } else { "" };
            println!("{}: {verb}{what}", path.display());
        }
        Event::MovedAside { path, aside } => println!(
            "{} was running: moved to {}",
            path.display(),
            aside.display()
        ),
        Event::WouldRemoveMovedAside(path) => {
            println!("{}: would remove (moved aside by install)", path.display())
        }
        Event::StillRunning(path) => println!(
            "{}: still running, left in place; delete it once it exits",
            path.display()
        ),
    }
}
