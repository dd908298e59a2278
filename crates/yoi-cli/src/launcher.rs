//! The sandbox launcher (yoi-pod's `sandbox` module decides the policy): the small program
//! between the pod and every agent or command it runs (`yoi __sandbox POLICY -- ARGV…`). It starts as the pod's child in the run's process group,
//! so the pod's kill ladder and its parent-death signal reach it, and it is single-threaded, so
//! it may fork and change namespaces freely.
//!
//! With namespaces it makes a PID and a mount namespace (and a user namespace when it is not
//! root, mapping its own ids), forks the namespace's first process, which mounts a `/proc` of
//! its own, makes every mount read-only but binds of the policy's write paths (Landlock does not
//! cover `chmod`, `chown` or times; a read-only mount does) and forks the run itself; that first process reaps what the run leaves and exits
//! with the run's status, and the kernel then kills everything left in the namespace — a
//! daemon the agent started with `setsid` included. Either way the run's own process is
//! confined before `exec` (Landlock, no new privileges, capabilities dropped when root; see
//! `yoi_pod::sandbox::confine`). Every failure to set up is fatal: the launcher prints
//! `yoi sandbox: …` on stderr and exits with [`SETUP_FAILED`], and nothing runs unconfined.
//! A forked child ends with `_exit`, never running the parent's exit handlers twice.

use std::ffi::CString;

use yoi_agent::policy::{Network, Policy};
use yoi_pod::sandbox::{Probe, PREFIX, SETUP_FAILED};

/// `yoi __sandbox …`: run the launcher and return its exit status (it returns only on
/// failure, or as the outer process once the run ended).
pub fn main(args: &[String]) -> i32 {
    match args {
        [flag] if flag == "--probe" => {
            println!("{}", serde_json::json!(probe()));
            0
        }
        [policy, dashdash, argv @ ..] if dashdash == "--" && !argv.is_empty() => {
            let policy: Policy = match serde_json::from_str(policy) {
                Ok(p) => p,
                Err(e) => return fail(&format!("the policy does not parse: {e}")),
            };
            match launch(&policy, argv) {
                Ok(code) => code,
                Err(e) => fail(&e),
            }
        }
        _ => fail("usage: yoi __sandbox POLICY_JSON -- PROGRAM [ARG…] | --probe"),
    }
}

/// What the kernel offers, from inside the (single-threaded) launcher.
fn probe() -> Probe {
    // SAFETY: landlock_create_ruleset with the VERSION flag only reports the ABI.
    let abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, 0usize, 0usize, 1u32) };
    let (namespaces, namespaces_error) = match try_namespaces() {
        Ok(()) => (true, None),
        Err(e) => (false, Some(e)),
    };
    Probe {
        landlock_abi: abi.max(0) as u32,
        namespaces,
        namespaces_error,
        // SAFETY: geteuid cannot fail.
        root: unsafe { libc::geteuid() } == 0,
    }
}

/// End a forked child without running the parent's exit handlers or flushing its buffers.
fn exit_child(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stderr().flush();
    // SAFETY: _exit ends this process at once.
    unsafe { libc::_exit(code) }
}

fn fail(message: &str) -> i32 {
    eprintln!("{PREFIX}{message}");
    SETUP_FAILED
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn launch(policy: &Policy, argv: &[String]) -> Result<i32, String> {
    let argv: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| format!("{a:?} holds a NUL byte")))
        .collect::<Result<_, _>>()?;
    if !policy.enforce.off && !policy.enforce.namespaces {
        yoi_pod::sandbox::confine(policy)?;
    }
    if policy.enforce.off || !policy.enforce.namespaces {
        // A program that does not start is the run's failure (127, as a shell says), not the
        // sandbox's.
        eprintln!("{PREFIX}{}", exec(&argv));
        return Ok(127);
    }
    enter_namespaces(policy.network == Network::Off)?;
    ignore_stop_signals();
    // SAFETY: the launcher is single-threaded; the child continues with a copy of it.
    match unsafe { libc::fork() } {
        -1 => Err(os_error("fork")),
        0 => exit_child(first_process(policy, &argv)),
        init => Ok(wait_for(init)),
    }
}

/// Unshare PID and mount namespaces (a user namespace first when not root, a network one when
/// the network is off).
fn enter_namespaces(network_off: bool) -> Result<(), String> {
    // SAFETY: plain system calls on the launcher's own process.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if uid != 0 {
        flags |= libc::CLONE_NEWUSER;
    }
    if network_off {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare changes only this process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(os_error("unshare"));
    }
    if uid != 0 {
        let w = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|e| format!("writing {file}: {e}"))
        };
        w("/proc/self/setgroups", "deny".into())?;
        w("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        w("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    Ok(())
}

/// Make the namespaces a run would get and mount a `/proc` in them, in a throwaway child of the
/// (single-threaded) launcher: the probe runs the same code as every run.
fn try_namespaces() -> Result<(), String> {
    use std::io::{Read, Write};
    let (mut reader, mut writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the launcher is single-threaded; the child only sets up and exits.
    match unsafe { libc::fork() } {
        -1 => Err(os_error("fork")),
        0 => {
            drop(reader);
            let r = enter_namespaces(false).and_then(|()| {
                // SAFETY: as above; the grandchild is PID 1 of the new namespace.
                match unsafe { libc::fork() } {
                    -1 => Err(os_error("fork")),
                    0 => exit_child(
                        match mount_own_proc().and_then(|()| read_only_except(&[])) {
                            Ok(()) => 0,
                            Err(e) => {
                                let _ = writer.write_all(e.as_bytes());
                                1
                            }
                        },
                    ),
                    pid => match wait_for(pid) {
                        0 => Ok(()),
                        _ => Err(String::new()),
                    },
                }
            });
            if let Err(e) = &r {
                let _ = writer.write_all(e.as_bytes());
            }
            exit_child(i32::from(r.is_err()))
        }
        pid => {
            drop(writer);
            let mut why = String::new();
            let _ = reader.read_to_string(&mut why);
            match wait_for(pid) {
                0 => Ok(()),
                _ => Err(if why.is_empty() {
                    "the namespace probe failed".into()
                } else {
                    why
                }),
            }
        }
    }
}

extern "C" fn nothing(_: libc::c_int) {}

/// SIGTERM, SIGINT and SIGHUP sent to the run's group reach the run itself; the launcher and
/// the namespace's first process stay to report its status (a handler, not SIG_IGN, which the
/// run would inherit).
fn ignore_stop_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler does nothing, which is async-signal-safe.
        unsafe {
            libc::signal(sig, nothing as *const () as libc::sighandler_t);
        }
    }
}

/// The namespace's first process (PID 1): its own `/proc`, then the run as its child; reap
/// until the run ends and exit with its status.
fn first_process(policy: &Policy, argv: &[CString]) -> i32 {
    // SAFETY: prctl on this process only: die with the launcher.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    if let Err(e) = mount_own_proc()
        .and_then(|()| read_only_except(&policy.write))
        .and_then(|()| reenter_cwd())
    {
        return fail(&e);
    }
    // SAFETY: single-threaded (the launcher's copy); the child execs or exits.
    let run = unsafe { libc::fork() };
    match run {
        -1 => fail(&os_error("fork")),
        0 => {
            for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                // SAFETY: back to the default disposition before exec.
                unsafe { libc::signal(sig, libc::SIG_DFL) };
            }
            let code = match yoi_pod::sandbox::confine(policy) {
                Ok(()) => {
                    let e = exec(argv);
                    eprintln!("{PREFIX}{e}");
                    127
                }
                Err(e) => fail(&e),
            };
            exit_child(code)
        }
        run => loop {
            let mut status = 0;
            // SAFETY: waits for any child of this process (orphans are re-parented to it).
            let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
            if pid == run {
                return exit_code(status);
            }
            if pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                return 127;
            }
        },
    }
}

fn mount_own_proc() -> Result<(), String> {
    let c = |s: &str| CString::new(s).expect("static text");
    let (root, target, proc_, none) = (c("/"), c("/proc"), c("proc"), c("none"));
    // SAFETY: mount with valid C strings; only this mount namespace is changed.
    unsafe {
        if libc::mount(
            none.as_ptr(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(os_error("making the mounts private"));
        }
        if libc::mount(
            proc_.as_ptr(),
            target.as_ptr(),
            proc_.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(os_error("mounting /proc"));
        }
    }
    Ok(())
}

/// Make every mount of the namespace read-only but binds of the run's write paths: Landlock
/// does not cover changing a file's mode, owner or times, a read-only mount does (EROFS).
fn read_only_except(write: &[std::path::PathBuf]) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let set = |path: &CString, attr: MountAttr| -> Result<(), String> {
        // SAFETY: mount_setattr with a valid path and a mount_attr of the size given; only
        // this mount namespace is changed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                path.as_ptr(),
                AT_RECURSIVE,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(os_error(&format!(
                "changing the mounts at {}",
                path.to_string_lossy()
            )))
        }
    };
    let paths: Vec<CString> = write
        .iter()
        .map(|p| CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{p:?} holds a NUL")))
        .collect::<Result<_, _>>()?;
    // Each write path becomes a mount of its own first, so it can be writable again after.
    for p in &paths {
        // SAFETY: a bind mount of a path onto itself, in this mount namespace.
        let r = unsafe {
            libc::mount(
                p.as_ptr(),
                p.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if r != 0 {
            return Err(os_error(&format!("binding {}", p.to_string_lossy())));
        }
    }
    let root = CString::new("/").expect("static text");
    set(
        &root,
        MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        },
    )?;
    for p in &paths {
        set(
            p,
            MountAttr {
                attr_set: 0,
                attr_clr: MOUNT_ATTR_RDONLY,
                propagation: 0,
                userns_fd: 0,
            },
        )?;
    }
    Ok(())
}

/// Enter the working directory again by its path: the one inherited still points into the
/// mount beneath the new writable bind, which is read-only now.
fn reenter_cwd() -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("reading the working directory: {e}"))?;
    std::env::set_current_dir(&cwd)
        .map_err(|e| format!("entering the working directory {}: {e}", cwd.display()))
}

/// Wait for `pid` and turn its end into an exit status (a signal death is 128 + the signal).
fn wait_for(pid: libc::pid_t) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: waits for this process's own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return exit_code(status);
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 127;
        }
    }
}

fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        127
    }
}

/// Replace this process with `argv` (looked up on `PATH`); returns only the error.
fn exec(argv: &[CString]) -> String {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: a NUL-terminated array of valid C strings that outlive the call.
    unsafe { libc::execvp(ptrs[0], ptrs.as_ptr()) };
    format!(
        "starting {}: {}",
        argv[0].to_string_lossy(),
        std::io::Error::last_os_error()
    )
}
