//! Who may write a file or directory that a root/SYSTEM process trusts: a file whose content
//! decides what the node enforces (the NetworkPolicy snapshot ADD gives new pods their rules
//! from, a conflist, a plugin binary) must be writable by the node's administrators only, or
//! any local user who can write it decides instead.
//!
//! - **Windows**: a directory created under `C:\` inherits "Authenticated Users: Modify" (the
//!   default since Windows Server 2008), so "the file was created by SYSTEM" proves nothing.
//!   [`restrict`] gives a path a protected DACL (nothing inherited) that lets SYSTEM and
//!   Administrators write and Users read; [`of`] reads the owner and the DACL and names any
//!   principal but those and the process's own user (what it made is as trusted as it is) that
//!   owns the path or that an allow entry lets write (write data, append, write attributes or
//!   extended attributes, delete, change the DACL or the owner, or generic write/all).
//!   Entries that apply only to children (`INHERIT_ONLY`) and deny entries are not a writer.
//! - **Unix**: the owner is root or the process's own user, and neither group nor others may
//!   write (mode `& 0o022`); [`restrict`] takes those bits away.
//!
//! A path's directory matters as much as the path (a writer of the directory can rename
//! another file over it): callers check both.

use std::fmt;
use std::io;
use std::path::Path;

/// Who besides the node's administrators may write a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writers {
    /// Only root (Unix) or SYSTEM, Administrators and TrustedInstaller (Windows).
    Administrators,
    /// Someone else too: who and how, as the platform names them (a SID and its access mask,
    /// or an owner and a mode).
    Others(String),
}

impl fmt::Display for Writers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Writers::Administrators => f.write_str("only the node's administrators may write it"),
            Writers::Others(who) => write!(f, "{who} may write it"),
        }
    }
}

/// Who may write `path` (never followed: it is judged as it is).
pub fn of(path: &Path) -> io::Result<Writers> {
    imp::of(path)
}

/// Lets only the node's administrators write `path` (and everyone read it), whatever its
/// directory would have it inherit.
pub fn restrict(path: &Path) -> io::Result<()> {
    imp::restrict(path)
}

#[cfg(unix)]
mod imp {
    use std::fs;
    use std::io;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;

    use super::Writers;

    /// Group and others may write.
    const OTHERS_WRITE: u32 = 0o022;

    pub(super) fn of(path: &Path) -> io::Result<Writers> {
        let metadata = fs::symlink_metadata(path)?;
        let owner = metadata.uid();
        if owner != 0 && owner != effective_uid() {
            return Ok(Writers::Others(format!("its owner, uid {owner},")));
        }
        let mode = metadata.mode() & 0o7777;
        if mode & OTHERS_WRITE != 0 {
            return Ok(Writers::Others(format!("group or others (mode {mode:o})")));
        }
        Ok(Writers::Administrators)
    }

    pub(super) fn restrict(path: &Path) -> io::Result<()> {
        let metadata = fs::symlink_metadata(path)?;
        let mode = metadata.mode() & 0o7777;
        if mode & OTHERS_WRITE != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(mode & !OTHERS_WRITE))?;
        }
        Ok(())
    }

    /// The user this process acts as: a file it made is as trusted as the process.
    fn effective_uid() -> u32 {
        // SAFETY: geteuid has no preconditions and cannot fail (POSIX).
        #[allow(unsafe_code)]
        unsafe {
            libc::geteuid()
        }
    }
}

#[cfg(windows)]
#[allow(unsafe_code)]
mod imp {
    use std::io;
    use std::path::Path;

    use windows::Win32::Foundation::{CloseHandle, HANDLE, HLOCAL, LocalFree};
    use windows::Win32::Security::Authorization::{
        ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
        GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT, SetNamedSecurityInfoW,
    };
    use windows::Win32::Security::{
        ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, DACL_SECURITY_INFORMATION, GetAce,
        GetSecurityDescriptorDacl, GetTokenInformation, INHERIT_ONLY_ACE,
        OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR,
        PSID, TOKEN_QUERY, TOKEN_USER, TokenUser,
    };
    use windows::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};
    use windows::core::{HSTRING, PWSTR};

    use super::Writers;

    /// `ACCESS_ALLOWED_ACE_TYPE` (winnt.h).
    const ACCESS_ALLOWED_ACE_TYPE: u8 = 0;

    /// The access rights that change what a path holds or who may: `FILE_WRITE_DATA`
    /// (`FILE_ADD_FILE`), `FILE_APPEND_DATA` (`FILE_ADD_SUBDIRECTORY`), `FILE_WRITE_EA`,
    /// `FILE_DELETE_CHILD`, `FILE_WRITE_ATTRIBUTES`, `DELETE`, `WRITE_DAC`, `WRITE_OWNER`,
    /// `GENERIC_ALL`, `GENERIC_WRITE` (winnt.h).
    const WRITE_RIGHTS: u32 = 0x0002
        | 0x0004
        | 0x0010
        | 0x0040
        | 0x0100
        | 0x0001_0000
        | 0x0004_0000
        | 0x0008_0000
        | 0x1000_0000
        | 0x4000_0000;

    /// SYSTEM, Administrators and TrustedInstaller: the node's administrators.
    const ADMINISTRATORS: [&str; 3] = [
        "S-1-5-18",
        "S-1-5-32-544",
        "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464",
    ];

    /// SYSTEM and Administrators write, Users read; nothing inherited from the directory.
    /// A directory's entries are inherited by what is created in it.
    const RESTRICTED: &str = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FR;;;BU)";

    /// A buffer `LocalAlloc`ed by the system, freed on drop.
    struct Local(HLOCAL);

    impl Drop for Local {
        fn drop(&mut self) {
            // SAFETY: the handle was allocated by the system call that returned it and is freed
            // once, here.
            unsafe {
                let _ = LocalFree(Some(self.0));
            }
        }
    }

    pub(super) fn of(path: &Path) -> io::Result<Writers> {
        let name = HSTRING::from(path.as_os_str());
        let mut owner = PSID::default();
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let mut descriptor = PSECURITY_DESCRIPTOR::default();
        // SAFETY: every out pointer points at a local of the type the call writes; the
        // descriptor it allocates (holding `owner` and `dacl`) is freed by `_held` after the
        // last use of either.
        let status = unsafe {
            GetNamedSecurityInfoW(
                &name,
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                Some(&mut owner),
                None,
                Some(&mut dacl),
                None,
                &mut descriptor,
            )
        };
        status.ok().map_err(io::Error::from)?;
        let _held = Local(HLOCAL(descriptor.0));
        let own = process_user()?;
        let trusted = |sid: &str| ADMINISTRATORS.contains(&sid) || sid == own;
        let owner_sid = sid_string(owner)?;
        if !trusted(&owner_sid) {
            return Ok(Writers::Others(format!("its owner, {owner_sid},")));
        }
        if dacl.is_null() {
            return Ok(Writers::Others("everyone (it has no DACL)".to_owned()));
        }
        // SAFETY: `dacl` points into the descriptor `_held` keeps alive.
        let count = unsafe { (*dacl).AceCount };
        for index in 0..u32::from(count) {
            let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
            // SAFETY: `index` is below the ACL's count; `ace` receives a pointer into the ACL.
            unsafe { GetAce(dacl, index, &mut ace) }.map_err(io::Error::from)?;
            // SAFETY: every ACE starts with an ACE_HEADER.
            let header = unsafe { *(ace as *const ACE_HEADER) };
            if header.AceType != ACCESS_ALLOWED_ACE_TYPE
                || header.AceFlags & INHERIT_ONLY_ACE.0 as u8 != 0
            {
                continue;
            }
            let allowed = ace as *const ACCESS_ALLOWED_ACE;
            // SAFETY: the header says this is an ACCESS_ALLOWED_ACE, whose SID starts at
            // `SidStart`, inside the ACL.
            let (mask, sid) = unsafe {
                (
                    (*allowed).Mask,
                    PSID(std::ptr::addr_of!((*allowed).SidStart) as *mut _),
                )
            };
            if mask & WRITE_RIGHTS == 0 {
                continue;
            }
            let who = sid_string(sid)?;
            if !trusted(&who) {
                return Ok(Writers::Others(format!("{who} (access mask {mask:#x})")));
            }
        }
        Ok(Writers::Administrators)
    }

    pub(super) fn restrict(path: &Path) -> io::Result<()> {
        set_dacl(path, RESTRICTED)
    }

    /// Gives `path` the protected DACL an SDDL string describes.
    pub(super) fn set_dacl(path: &Path, sddl: &str) -> io::Result<()> {
        let sddl = HSTRING::from(sddl);
        let mut descriptor = PSECURITY_DESCRIPTOR::default();
        // SAFETY: `sddl` is a valid wide string; the descriptor the call allocates is freed by
        // `_held`.
        unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                &sddl,
                SDDL_REVISION_1,
                &mut descriptor,
                None,
            )
        }
        .map_err(io::Error::from)?;
        let _held = Local(HLOCAL(descriptor.0));
        let mut present = windows::core::BOOL::default();
        let mut defaulted = windows::core::BOOL::default();
        let mut dacl: *mut ACL = std::ptr::null_mut();
        // SAFETY: `descriptor` is the valid descriptor made above; the out pointers are locals.
        unsafe { GetSecurityDescriptorDacl(descriptor, &mut present, &mut dacl, &mut defaulted) }
            .map_err(io::Error::from)?;
        let name = HSTRING::from(path.as_os_str());
        // SAFETY: `dacl` points into `descriptor`, alive until `_held` drops after the call.
        let status = unsafe {
            SetNamedSecurityInfoW(
                &name,
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                None,
                None,
                Some(dacl),
                None,
            )
        };
        status.ok().map_err(io::Error::from)
    }

    /// The user this process acts as, as a SID string.
    fn process_user() -> io::Result<String> {
        let mut token = HANDLE::default();
        // SAFETY: the pseudo-handle of the current process needs no closing; `token` receives a
        // handle closed below.
        unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) }
            .map_err(io::Error::from)?;
        let mut buffer = vec![0u8; 256];
        let mut needed = 0u32;
        // SAFETY: `buffer` is writable for its length, which the call is told; a too small
        // buffer is an error, not an overflow.
        let queried = unsafe {
            GetTokenInformation(
                token,
                TokenUser,
                Some(buffer.as_mut_ptr().cast()),
                buffer.len() as u32,
                &mut needed,
            )
        };
        // SAFETY: `token` was opened above and is closed once.
        unsafe {
            let _ = CloseHandle(token);
        }
        queried.map_err(io::Error::from)?;
        // SAFETY: on success the buffer starts with a TOKEN_USER whose SID points into it.
        let user = unsafe { (*(buffer.as_ptr() as *const TOKEN_USER)).User.Sid };
        sid_string(user)
    }

    /// A SID as `S-1-5-…`.
    fn sid_string(sid: PSID) -> io::Result<String> {
        let mut text = PWSTR::null();
        // SAFETY: `sid` points at a SID the caller's descriptor keeps alive; the string the
        // call allocates is freed by `_held`.
        unsafe { ConvertSidToStringSidW(sid, &mut text) }.map_err(io::Error::from)?;
        let _held = Local(HLOCAL(text.0.cast()));
        // SAFETY: the call wrote a NUL-terminated wide string.
        unsafe { text.to_string() }.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_file_others_may_write_is_named_and_restricted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        std::fs::write(&path, b"{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        match of(&path).unwrap() {
            Writers::Others(who) => assert!(who.contains("666"), "{who}"),
            Writers::Administrators => panic!("0666 lets others write"),
        }
        restrict(&path).unwrap();
        assert_eq!(of(&path).unwrap(), Writers::Administrators);
        let mode = std::fs::symlink_metadata(&path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644, "only the write bits go");
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;

    #[test]
    fn a_path_everyone_may_write_is_named_and_restricted() {
        let dir = std::env::temp_dir().join(format!("rootsafe-writers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("snapshot.json");
        std::fs::write(&path, b"{}").unwrap();
        imp::set_dacl(&path, "D:P(A;;FA;;;WD)").unwrap();
        match of(&path).unwrap() {
            Writers::Others(who) => assert!(who.contains("S-1-1-0"), "{who}"),
            Writers::Administrators => panic!("Everyone may write it"),
        }
        restrict(&path).unwrap();
        assert_eq!(of(&path).unwrap(), Writers::Administrators);
        restrict(&dir).unwrap();
        assert_eq!(of(&dir).unwrap(), Writers::Administrators);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
