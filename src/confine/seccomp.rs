//! The seccomp filter of a confined check: no Unix socket can be made in it, so none that lies on a filesystem the
//! check can see (`/var/lib`, `/opt`, a Nix daemon's, LXD's) can be reached. The network namespace cuts IP and
//! abstract Unix sockets (they belong to it); a socket with a path belongs to the filesystem, which it does not cut.
//!
//! A classic BPF program, assembled here by hand (no libseccomp), that bubblewrap loads (`--seccomp FD`) just before
//! it starts the check, after `no_new_privs`: `socket(AF_UNIX, ...)` fails with `EPERM`; `socketpair` (Python's
//! multiprocessing pipes, asyncio's self-pipe) and every other call are allowed. The architecture is checked first,
//! as a filter must (a syscall number means another call on another architecture): the native one and its 32-bit
//! compatibility mode are handled (on x86-64 also the x32 numbers, and i386's `socketcall`, whose family cannot be
//! read, so every socket made through it is refused); a call from any other architecture kills the process.
//! On architectures other than x86-64 and aarch64 there is no filter ([`program`] is `None`).

/// The bytes of the filter: `struct sock_filter` entries (u16 code, u8 jt, u8 jf, u32 k), native byte order, as
/// bubblewrap's `--seccomp FD` reads them. `None` on an architecture without one.
pub fn program() -> Option<Vec<u8>> {
    let arch = Arch::native()?;
    let mut out = Vec::new();
    for i in assemble(&arch) {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    Some(out)
}

/// A descriptor bubblewrap reads `program` from (`--seccomp FD`): a pipe holding it, whose read end is made
/// inheritable (numbered 3 or above) for the bubblewrap about to start; the caller closes it once that has started.
/// A process another thread starts at the same moment inherits it too: it holds nothing but this public filter.
pub fn descriptor(program: &[u8]) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::io::Write;
    let (reader, mut writer) = std::io::pipe()?;
    // A few hundred bytes: far below a pipe's buffer, so the write never waits for a reader.
    writer.write_all(program)?;
    drop(writer);
    let fd = rustix::io::fcntl_dupfd_cloexec(&reader, 3)?;
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty())?;
    Ok(fd)
}

/// `BPF_LD | BPF_W | BPF_ABS`: load the 32-bit word at an offset of `struct seccomp_data`.
const LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JEQ | BPF_K`: jump `jt` ahead when the word equals `k`, else `jf`.
const JEQ_K: u16 = 0x15;
/// `BPF_RET | BPF_K`: the verdict `k`.
const RET_K: u16 = 0x06;

/// `struct seccomp_data`: the call's number, its architecture, and the low half of its first argument (both
/// architectures here are little-endian).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0_LOW: u32 = 16;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const EPERM: u32 = 1;
/// The verdict for a Unix socket: the call fails with `EPERM`.
pub const RET_DENY: u32 = RET_ERRNO | EPERM;

const AF_UNIX: u32 = 1;
/// `socketcall`'s first argument for `socket()`.
const SYS_SOCKET: u32 = 1;

/// One architecture's numbers.
#[derive(Debug, Clone, Copy)]
pub struct Arch {
    /// `AUDIT_ARCH_*` of the native calls.
    pub native: u32,
    /// The native `socket` numbers (on x86-64 also the x32 one).
    pub native_socket: &'static [u32],
    /// `AUDIT_ARCH_*` of the 32-bit compatibility calls.
    pub compat: u32,
    /// `socket` there.
    pub compat_socket: u32,
    /// `socketcall` there, when it has one.
    pub compat_socketcall: Option<u32>,
}

/// x86-64: `socket` is 41 (x32: 41 with bit 30); i386: `socket` 359, `socketcall` 102.
pub const X86_64: Arch = Arch {
    native: 0xC000_003E,
    native_socket: &[41, 0x4000_0000 | 41],
    compat: 0x4000_0003,
    compat_socket: 359,
    compat_socketcall: Some(102),
};

/// aarch64: `socket` is 198; 32-bit ARM (EABI): 281, no `socketcall`.
pub const AARCH64: Arch = Arch {
    native: 0xC000_00B7,
    native_socket: &[198],
    compat: 0x4000_0028,
    compat_socket: 281,
    compat_socketcall: None,
};

impl Arch {
    /// The architecture this binary runs on, when it has a filter.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(AARCH64)
        } else {
            None
        }
    }
}

/// One BPF instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// The operation.
    pub code: u16,
    /// Instructions skipped when a comparison holds.
    pub jt: u8,
    /// Instructions skipped when it does not.
    pub jf: u8,
    /// The operand.
    pub k: u32,
}

/// A step of the program before its jumps are counted: a comparison jumps to a named block when it holds and goes on
/// to the next step when it does not.
enum Step {
    Load(u32),
    JumpIfEq(u32, Block),
    Return(u32),
    Start(Block),
}

/// The blocks a comparison may jump to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Native,
    Compat,
    Family,
    Socketcall,
    Deny,
}

/// The filter for `arch`, its jumps counted.
pub fn assemble(arch: &Arch) -> Vec<Insn> {
    use Step::*;
    let mut steps = vec![
        Load(OFF_ARCH),
        JumpIfEq(arch.native, Block::Native),
        JumpIfEq(arch.compat, Block::Compat),
        Return(RET_KILL_PROCESS),
        Start(Block::Native),
        Load(OFF_NR),
    ];
    steps.extend(
        arch.native_socket
            .iter()
            .map(|&nr| JumpIfEq(nr, Block::Family)),
    );
    steps.extend([
        Return(RET_ALLOW),
        Start(Block::Compat),
        Load(OFF_NR),
        JumpIfEq(arch.compat_socket, Block::Family),
    ]);
    if let Some(nr) = arch.compat_socketcall {
        steps.push(JumpIfEq(nr, Block::Socketcall));
    }
    steps.extend([
        Return(RET_ALLOW),
        Start(Block::Family),
        Load(OFF_ARG0_LOW),
        JumpIfEq(AF_UNIX, Block::Deny),
        Return(RET_ALLOW),
    ]);
    if arch.compat_socketcall.is_some() {
        // socketcall(SYS_SOCKET, args): the family lies behind a pointer the filter cannot follow.
        steps.extend([
            Start(Block::Socketcall),
            Load(OFF_ARG0_LOW),
            JumpIfEq(SYS_SOCKET, Block::Deny),
            Return(RET_ALLOW),
        ]);
    }
    steps.extend([Start(Block::Deny), Return(RET_DENY)]);
    resolve(&steps)
}

/// Count the jumps: a comparison that holds skips to the first instruction of its block. Every jump goes forward
/// (a classic-BPF rule), and the program is far shorter than the 255 instructions a jump can skip.
fn resolve(steps: &[Step]) -> Vec<Insn> {
    let mut starts: Vec<(Block, usize)> = Vec::new();
    let mut n = 0usize;
    for s in steps {
        match s {
            Step::Start(b) => starts.push((*b, n)),
            _ => n += 1,
        }
    }
    let start_of = |b: Block| {
        starts
            .iter()
            .find(|(x, _)| *x == b)
            .map_or(n - 1, |&(_, i)| i)
    };
    let mut out: Vec<Insn> = Vec::new();
    for s in steps {
        let pc = out.len();
        let (code, jt, k) = match s {
            Step::Start(_) => continue,
            Step::Load(off) => (LD_W_ABS, 0, *off),
            Step::Return(k) => (RET_K, 0, *k),
            Step::JumpIfEq(k, b) => {
                let skip = start_of(*b).saturating_sub(pc + 1);
                (JEQ_K, u8::try_from(skip).unwrap_or(u8::MAX), *k)
            }
        };
        out.push(Insn { code, jt, jf: 0, k });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the three operations the filter uses: the verdict for one call.
    fn run(prog: &[Insn], arch: u32, nr: u32, arg0: u64) -> u32 {
        let word = |off: u32| match off {
            OFF_NR => nr,
            OFF_ARCH => arch,
            OFF_ARG0_LOW => arg0 as u32,
            other => panic!("load of offset {other}"),
        };
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = prog[pc];
            match i.code {
                LD_W_ABS => a = word(i.k),
                JEQ_K => pc += if a == i.k { i.jt } else { i.jf } as usize,
                RET_K => return i.k,
                other => panic!("operation {other:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn unix_sockets_the_filter_refuses_them_and_allows_the_rest() {
        for arch in [X86_64, AARCH64] {
            let p = assemble(&arch);
            assert!(p.len() < 32, "{p:?}");
            for &nr in arch.native_socket {
                assert_eq!(run(&p, arch.native, nr, 1), RET_DENY, "{arch:?}");
                // AF_INET, AF_INET6, AF_NETLINK are not Unix sockets; the high half of the argument is ignored by
                // the kernel too.
                for family in [2, 10, 16] {
                    assert_eq!(run(&p, arch.native, nr, family), RET_ALLOW);
                }
                assert_eq!(run(&p, arch.native, nr, (7 << 32) | 1), RET_DENY);
            }
            assert_eq!(run(&p, arch.compat, arch.compat_socket, 1), RET_DENY);
            assert_eq!(run(&p, arch.compat, arch.compat_socket, 2), RET_ALLOW);
            // socketpair (x86-64 53, aarch64 199), read, openat: allowed whatever their arguments.
            for nr in [53, 199, 0, 257, 56] {
                assert_eq!(run(&p, arch.native, nr, 1), RET_ALLOW, "{nr}");
            }
            assert_eq!(run(&p, 0x1234, 41, 1), RET_KILL_PROCESS);
        }
        let p = assemble(&X86_64);
        // i386 socketcall(SYS_SOCKET, ...) is refused, socketcall(SYS_SOCKETPAIR, ...) is not.
        assert_eq!(run(&p, X86_64.compat, 102, 1), RET_DENY);
        assert_eq!(run(&p, X86_64.compat, 102, 8), RET_ALLOW);
        let bytes = program().expect("x86-64 and aarch64 have a filter");
        assert_eq!(bytes.len(), 8 * assemble(&Arch::native().unwrap()).len());
    }
}
