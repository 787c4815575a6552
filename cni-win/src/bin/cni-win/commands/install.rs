//! `cni-win install`: its arguments and what it prints; the work is [`cni_win::install`].

use std::path::PathBuf;

use cni_win::install::{self, Change, Event, Settings};
use cni_win::templates::{self, Template};
use cni_win::{Error, binaries, checksums, containerd};

use super::NodePathArgs;

/// Installs the plugins and a conflist (what a HostProcess init container runs).
#[derive(Debug, clap::Args)]
#[command(after_help = format!("Settings for --set:\n{}", templates::settings_help()))]
pub struct Args {
    /// Where the release's binaries (and optionally its SHA256SUMS) are [default: the directory
    /// holding cni-win itself]
    #[arg(long, value_name = "DIR")]
    source: Option<PathBuf>,
    /// Where to install: the config directory and the (one) plugin directory.
    #[command(flatten)]
    paths: NodePathArgs,
    /// The conflist to write
    #[arg(long, value_name = "TEMPLATE")]
    conflist: Template,
    /// Changes a template setting (repeatable); see the list below
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = templates::parse_set)]
    sets: Vec<(String, String)>,
    /// The conflist's file name (containerd uses the first config file in name order)
    #[arg(long, value_name = "FILE", default_value = "10-cni-win.conflist", value_parser = install::conflist_file_name)]
    conflist_name: String,
    /// Shows what install would do and changes nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: Args) -> Result<(), Error> {
    let paths = args.paths.paths()?;
    let settings = Settings {
        source: match args.source {
            Some(dir) => dir,
            None => install::own_dir()?,
        },
        bin_dir: paths.only_bin_dir()?.to_owned(),
        conf_dir: paths.conf_dir,
        conflist: args.conflist,
        sets: args.sets,
        conflist_name: args.conflist_name,
        dry_run: args.dry_run,
    };
    install::install(&settings, &mut print)?;
    println!("\ncontainerd's CRI config for these directories:\n");
    print!(
        "{}",
        containerd::snippets(&settings.bin_dir, &settings.conf_dir)
    );
    Ok(())
}

fn print(event: Event) {
    match event {
        Event::NoChecksums { source } => println!(
            "note: no {} in {}: copies are checked against the source files only",
            checksums::FILE_NAME,
            source.display()
        ),
        Event::WouldRemoveMovedAside(path) => println!(
            "would remove {} (moved aside by an earlier run)",
            path.display()
        ),
        Event::StillRunning(path) => println!(
            "{} is still running; it is removed on a later run",
            path.display()
        ),
        Event::MovedAside { dest, aside } => println!(
            "{} was running: moved to {} (removed on a later run)",
            dest.display(),
            aside.display()
        ),
        Event::File {
            dest,
            change,
            dry_run,
        } => {
            let verb = if dry_run { "would " } else { "" };
            let shown = dest.display();
            match change {
                Change::None => println!("{shown}: unchanged"),
                Change::Create => println!("{shown}: {verb}install"),
                Change::Update => println!("{shown}: {verb}replace the earlier install's copy"),
                Change::ReplaceForeign => println!(
                    "{shown}: {verb}replace a file install did not write, kept as {}",
                    binaries::backup_path(&dest).display()
                ),
            }
        }
        Event::NothingToDo { version } => {
            println!("nothing to do: cni-win {version} is installed already")
        }
        Event::OtherConfig { path, before, ours } => println!(
            "warning: {} sorts {} {ours}; containerd uses only the first config file: remove the one you are replacing",
            path.display(),
            if before { "before" } else { "after" }
        ),
    }
}
