//! Regular files only: never through a link, never blocking on a special file.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use rootsafe::file::{self, Kind, Mode, OpenError, Step};

fn reading() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    options
}

fn creating() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    options
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

fn read(path: &Path) -> Result<Vec<u8>, OpenError> {
    let file = file::open(path, &reading())?;
    file::read_capped(file, 64).map_err(OpenError::Io)
}

#[test]
fn opens_regular_files_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let regular = dir.path().join("subnet.env");
    fs::write(&regular, b"A=1\n").unwrap();
    assert_eq!(read(&regular).unwrap(), b"A=1\n");
    assert!(matches!(
        read(&dir.path().join("absent")),
        Err(OpenError::Missing)
    ));
    assert!(matches!(
        read(dir.path()),
        Err(OpenError::NotRegular(Kind::Directory))
    ));
    assert!(matches!(
        file::open(dir.path(), &creating()),
        Err(OpenError::NotRegular(Kind::Directory))
    ));
}

#[test]
fn kind_at_says_what_is_there_without_following_it() {
    let dir = tempfile::tempdir().unwrap();
    let regular = dir.path().join("file");
    fs::write(&regular, b"").unwrap();
    assert_eq!(Kind::at(&regular).unwrap(), Some(Kind::Regular));
    assert_eq!(Kind::at(dir.path()).unwrap(), Some(Kind::Directory));
    assert_eq!(Kind::at(&dir.path().join("absent")).unwrap(), None);
    #[cfg(unix)]
    {
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&regular, &link).unwrap();
        assert_eq!(Kind::at(&link).unwrap(), Some(Kind::Link));
        assert_eq!(
            Kind::at(Path::new("/dev/null")).unwrap(),
            Some(Kind::Device)
        );
    }
}

#[cfg(unix)]
#[test]
fn a_link_is_never_opened_through_nor_created_through() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    fs::write(&target, b"secret").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(matches!(
        read(&link),
        Err(OpenError::NotRegular(Kind::Link))
    ));
    assert!(matches!(
        file::open(&link, &creating()),
        Err(OpenError::NotRegular(Kind::Link))
    ));
    // A dangling link: creating "the file" would create its target.
    let elsewhere = dir.path().join("elsewhere");
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(&elsewhere, &dangling).unwrap();
    assert!(matches!(
        file::open(&dangling, &creating()),
        Err(OpenError::NotRegular(Kind::Link))
    ));
    assert!(file::create_new(&dangling, Mode::OwnerOnly).is_err());
    assert!(!elsewhere.exists());
    assert_eq!(fs::read(&target).unwrap(), b"secret");
}

/// A FIFO without a writer blocks an ordinary open forever; a device never ends. Neither is
/// opened (this test would hang if the FIFO were).
#[cfg(unix)]
#[test]
fn special_files_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    assert!(matches!(
        read(&fifo),
        Err(OpenError::NotRegular(Kind::Fifo))
    ));
    let mut appending = OpenOptions::new();
    appending.create(true).append(true);
    assert!(matches!(
        file::open(&fifo, &appending),
        Err(OpenError::NotRegular(Kind::Fifo))
    ));
    assert!(matches!(
        read(Path::new("/dev/zero")),
        Err(OpenError::NotRegular(Kind::Device))
    ));
}

#[test]
fn open_with_create_makes_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lock");
    file::open(&path, &creating()).unwrap();
    assert_eq!(Kind::at(&path).unwrap(), Some(Kind::Regular));
}

#[test]
fn read_capped_refuses_more_than_the_cap() {
    assert_eq!(file::read_capped(&b"1234"[..], 4).unwrap(), b"1234");
    let error = file::read_capped(&b"12345"[..], 4).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::FileTooLarge);
    assert_eq!(error.to_string(), "larger than 4 bytes");
    // An endless source is read no further than the cap's next byte.
    let endless = io::repeat(b'x');
    assert_eq!(
        file::read_capped(endless, 1 << 20).unwrap_err().kind(),
        io::ErrorKind::FileTooLarge
    );
}

#[test]
fn create_new_fails_when_anything_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new");
    file::create_new(&path, Mode::Default)
        .unwrap()
        .write_all(b"1")
        .unwrap();
    assert_eq!(
        file::create_new(&path, Mode::Default).unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    assert_eq!(fs::read(&path).unwrap(), b"1");
}

#[cfg(unix)]
#[test]
fn owner_only_means_0600_files_and_0700_directories() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private");
    file::create_new(&path, Mode::OwnerOnly).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    let mut options = OpenOptions::new();
    options.write(true).create(true);
    Mode::OwnerOnly.apply(&mut options);
    let opened = dir.path().join("opened");
    file::open(&opened, &options).unwrap();
    assert_eq!(mode(&opened), 0o600);
    let sub = dir.path().join("sub");
    Mode::OwnerOnly.dir_builder().create(&sub).unwrap();
    assert_eq!(mode(&sub), 0o700);
}

#[test]
fn write_new_says_which_step_failed_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("written");
    file::write_new(&path, Mode::Default, |f| f.write_all(b"content")).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"content");

    let error = file::write_new(&path, Mode::Default, |_| Ok(())).unwrap_err();
    assert_eq!(error.step, Step::Create);
    assert_eq!(fs::read(&path).unwrap(), b"content");

    let failing = dir.path().join("failing");
    let error = file::write_new(&failing, Mode::Default, |f| {
        f.write_all(b"part")?;
        Err(io::Error::other("disk full"))
    })
    .unwrap_err();
    assert_eq!(
        (error.step, error.source.to_string()),
        (Step::Write, "disk full".to_owned())
    );
    assert!(!failing.exists());
}

#[test]
fn replace_swaps_the_whole_content_and_leaves_no_staging_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("10-cni-win.conflist");
    let staging = file::beside(&path, "tmp");
    assert_eq!(staging, dir.path().join(".10-cni-win.conflist.tmp"));
    fs::write(&path, b"old").unwrap();
    file::replace(&path, &staging, Mode::Default, |f| f.write_all(b"new")).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"new");
    assert!(!staging.exists());

    // A leftover staging file is never written through: the caller removes it first.
    fs::write(&staging, b"leftover").unwrap();
    let error =
        file::replace(&path, &staging, Mode::Default, |f| f.write_all(b"newer")).unwrap_err();
    assert_eq!(error.step, Step::Create);
    assert_eq!(fs::read(&path).unwrap(), b"new");

    // The rename fails (a directory cannot be replaced by a file): the staging file goes.
    let occupied = dir.path().join("occupied");
    fs::create_dir(&occupied).unwrap();
    fs::write(occupied.join("inside"), b"").unwrap();
    let staging = file::beside(&occupied, "tmp");
    let error =
        file::replace(&occupied, &staging, Mode::Default, |f| f.write_all(b"x")).unwrap_err();
    assert_eq!(error.step, Step::Rename);
    assert!(!staging.exists());
}

#[cfg(unix)]
#[test]
fn replace_replaces_a_link_rather_than_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    fs::write(&target, b"untouched").unwrap();
    let path = dir.path().join("record");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    file::replace(&path, &file::beside(&path, "tmp"), Mode::OwnerOnly, |f| {
        f.write_all(b"new")
    })
    .unwrap();
    assert_eq!(Kind::at(&path).unwrap(), Some(Kind::Regular));
    assert_eq!(fs::read(&path).unwrap(), b"new");
    assert_eq!(fs::read(&target).unwrap(), b"untouched");
}

#[test]
fn remove_takes_away_what_is_there_and_absent_is_fine() {
    let dir = tempfile::tempdir().unwrap();
    let regular = dir.path().join("file");
    fs::write(&regular, b"").unwrap();
    file::remove(&regular, Kind::Regular).unwrap();
    assert_eq!(Kind::at(&regular).unwrap(), None);
    file::remove(&regular, Kind::Regular).unwrap();

    let sub = dir.path().join("sub");
    fs::create_dir_all(sub.join("deeper")).unwrap();
    file::remove(&sub, Kind::Directory).unwrap();
    assert_eq!(Kind::at(&sub).unwrap(), None);
}

#[cfg(unix)]
#[test]
fn remove_unlinks_links_and_never_touches_their_targets() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), b"kept").unwrap();
    // A link to a directory is unlinked, the directory stays.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    file::remove(&link, Kind::at(&link).unwrap().unwrap()).unwrap();
    assert_eq!(Kind::at(&link).unwrap(), None);
    // A directory holding a link to it: the link goes with the directory, the target stays.
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    std::os::unix::fs::symlink(&outside, sub.join("inner")).unwrap();
    file::remove(&sub, Kind::Directory).unwrap();
    assert_eq!(Kind::at(&sub).unwrap(), None);
    assert_eq!(fs::read(outside.join("keep")).unwrap(), b"kept");
}

#[test]
fn sync_dir_flushes_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    file::sync_dir(dir.path()).unwrap();
    #[cfg(unix)]
    assert!(file::sync_dir(&dir.path().join("absent")).is_err());
}

/// `resolvConf` follows links (`/etc/resolv.conf` often is one) but must not wait on a FIFO.
#[cfg(unix)]
#[test]
fn non_blocking_follows_links_and_never_waits_on_a_fifo() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("resolv.conf");
    fs::write(&target, b"nameserver 10.96.0.10\n").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut options = OpenOptions::new();
    options.read(true);
    file::non_blocking(&mut options);
    let mut text = String::new();
    options
        .open(&link)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "nameserver 10.96.0.10\n");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // Without a writer an ordinary open would wait for one forever.
    let opened = options.open(&fifo).unwrap();
    assert_eq!(Kind::of(&opened.metadata().unwrap()), Kind::Fifo);
}
