//! Confining the run's own process just before `exec`: the Landlock rules of its [`Policy`],
//! no new privileges, and no capabilities for a root pod.
//!
//! Landlock grants, it does not deny: "read everything but `.yoi/local`" is written as read
//! rules for every entry of `/` except those on the way to a denied path, and inside those for
//! every entry except the denied ones, and so on down ([`read_roots`]). Symbolic links are
//! never granted (their targets are granted, or not, under their own paths), so a link that
//! points into a denied folder opens nothing. A folder on the way to a denied path cannot be
//! listed itself (Landlock has no rule for a folder without what is beneath it); its entries
//! open as usual. `/dev` is denied but for the harmless devices. Everything granted is
//! granted for reading and executing; the policy's write paths get every right.

use std::path::{Path, PathBuf};

use crate::policy::{Network, Policy};
use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

/// Devices a run may open (read and write); the rest of `/dev` is closed to it.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// Confine this process as `policy` says. Called in the launcher's child, just before `exec`.
pub fn confine(policy: &Policy) -> Result<(), String> {
    let e = &policy.enforce;
    if e.off {
        return Ok(());
    }
    if e.landlock_abi > 0 {
        landlock(policy).map_err(|err| format!("Landlock: {err}"))?;
    } else {
        // SAFETY: prctl on this process only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
        }
    }
    if e.drop_capabilities {
        drop_capabilities()?;
    }
    Ok(())
}

fn landlock(policy: &Policy) -> Result<(), landlock::RulesetError> {
    let abi = ABI::from(policy.enforce.landlock_abi as i32);
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)?;
    if policy.enforce.landlock_abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let limit_tcp = policy.network != Network::On && policy.enforce.landlock_abi >= 4;
    if limit_tcp {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut created = ruleset.create()?;
    // A listed network: the run's one way out is the pod's proxy.
    if let (true, Network::Allow(_), Some(port)) = (limit_tcp, &policy.network, policy.proxy_port) {
        created = created.add_rule(landlock::NetPort::new(port, AccessNet::ConnectTcp))?;
    }
    let mut denied = policy.deny_read.clone();
    denied.push(PathBuf::from("/dev"));
    for path in read_roots(Path::new("/"), &denied) {
        created = add(created, &path, read, abi)?;
    }
    for dev in DEVICES {
        created = add(created, Path::new(dev), all, abi)?;
    }
    for path in &policy.write {
        created = add(created, path, all, abi)?;
    }
    created.restrict_self()?;
    Ok(())
}

/// Grant `access` beneath `path` (only a file's rights when it is a file); a path that
/// vanished since it was listed is skipped.
fn add(
    created: landlock::RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
    abi: ABI,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(created);
    };
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    match PathFd::new(path) {
        Ok(fd) => created.add_rule(PathBeneath::new(fd, access)),
        Err(_) => Ok(created),
    }
}

/// The paths to grant read access beneath so that everything under `root` is readable except
/// `denied` (and what is beneath them): every entry of a folder on the way to a denied path
/// except the denied one, recursively; never a symbolic link.
pub(crate) fn read_roots(root: &Path, denied: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(root, denied, &mut out);
    out
}

fn walk(dir: &Path, denied: &[PathBuf], out: &mut Vec<PathBuf>) {
    if !denied.iter().any(|d| d.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if denied.contains(&path) {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            walk(&path, denied, out);
        } else {
            out.push(path);
        }
    }
}

/// Drop every capability (bounding, ambient, effective, permitted, inheritable): uid 0 stays,
/// its powers go, and `exec` cannot bring them back.
fn drop_capabilities() -> Result<(), String> {
    let last: u64 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40);
    for cap in 0..=last {
        // SAFETY: prctl on this process only; EINVAL for a capability the kernel lacks.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    // SAFETY: as above.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset with a version-3 header and two data words, as the kernel expects.
    let r = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if r != 0 {
        return Err(format!(
            "dropping capabilities: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_denied_folder_is_left_out_and_its_siblings_are_granted() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for d in ["a/secret/deep", "a/open", "b"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("a/link")).unwrap();
        let mut got = read_roots(root, &[root.join("a/secret")]);
        got.sort();
        let want: Vec<PathBuf> = ["a/file", "a/open", "b"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(got, want, "no denied folder, no link, every sibling");
    }

    #[test]
    fn with_nothing_denied_beneath_a_folder_the_folder_itself_is_granted() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(
            read_roots(t.path(), &[PathBuf::from("/elsewhere/x")]),
            vec![t.path().to_path_buf()]
        );
    }
}
