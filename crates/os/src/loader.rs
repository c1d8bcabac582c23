//! The ELF loader: maps an i386 executable (and its `PT_INTERP` loader) into a fresh
//! address space through the page cache, and builds the initial stack exactly as
//! Linux's `binfmt_elf` does (strings, `AT_RANDOM` bytes, platform string, argv, envp,
//! auxv, 16-byte aligned `argc`).
//!
//! Every header field is validated before it is used: a truncated, hostile or
//! wrong-architecture file is a [`LoadError`], never a panic.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;

use goblin::elf::header::{EM_386, ET_DYN, ET_EXEC};

/// `EM_486`, which Linux runs as i386 (`elf_check_arch_ia32`).
const EM_486: u16 = 6;
use goblin::elf::program_header::{PF_R, PF_W, PF_X, PT_INTERP, PT_LOAD};
use morph_mem::{AddressSpace, FileId, PAGE_SIZE, PageCache, Prot};
use rand::Rng;

use crate::layout::{Layout, MMAP_MIN_ADDR, STACK_SIZE, TASK_SIZE};
use crate::linux::*;

/// Why an executable could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{path}: {msg}")]
    Io {
        /// The guest path.
        path: String,
        /// What went wrong.
        msg: String,
        /// The guest errno for `execve`.
        errno: i32,
    },
    /// Not an ELF file.
    #[error("{0}: not an ELF executable")]
    NotElf(String),
    /// An ELF for another machine or class.
    #[error("{path}: wrong architecture: {what} (morph runs 32-bit i386 ELF executables)")]
    WrongArch {
        /// The guest path.
        path: String,
        /// What it is.
        what: String,
    },
    /// A malformed ELF.
    #[error("{path}: malformed ELF: {why}")]
    Malformed {
        /// The guest path.
        path: String,
        /// The first problem found.
        why: String,
    },
    /// Guest memory could not be set up.
    #[error("{0}: out of guest memory while loading")]
    NoMemory(String),
}

impl LoadError {
    /// The errno `execve` returns for this error.
    pub fn errno(&self) -> i32 {
        match self {
            LoadError::Io { errno, .. } => *errno,
            LoadError::NoMemory(_) => ENOMEM,
            _ => ENOEXEC,
        }
    }
}

/// What the loader produced.
#[derive(Clone, Debug)]
pub struct Image {
    /// Where execution starts (the loader's entry for dynamic programs).
    pub entry: u32,
    /// The program's own entry point (`AT_ENTRY`).
    pub prog_entry: u32,
    /// Initial stack pointer.
    pub sp: u32,
    /// Start of the heap.
    pub brk: u32,
    /// Path of the program interpreter, if any.
    pub interp: Option<String>,
    /// Load bias of the interpreter (`AT_BASE`).
    pub interp_base: u32,
    /// The program's canonical guest path (`/proc/self/exe`).
    pub exe: String,
}

struct Elf {
    path: String,
    /// The name its mappings show in `/proc/<pid>/maps`: the canonical guest path.
    name: String,
    file: File,
    id: FileId,
    kind: u16,
    entry: u32,
    phoff: u32,
    phnum: u16,
    phdrs: Vec<Phdr>,
}

#[derive(Clone, Copy, Debug)]
struct Phdr {
    kind: u32,
    offset: u32,
    vaddr: u32,
    filesz: u32,
    memsz: u32,
    flags: u32,
}

fn rd16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

/// Reads and validates the ELF header and program headers of `file`.
fn parse(path: &str, mut file: File) -> Result<Elf, LoadError> {
    let io = |e: std::io::Error| LoadError::Io {
        path: path.into(),
        msg: e.to_string(),
        errno: e.raw_os_error().unwrap_or(EIO),
    };
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(LoadError::Io { path: path.into(), msg: "is a directory".into(), errno: EACCES });
    }
    let mut head = [0u8; 52];
    let n = read_full(&mut file, &mut head).map_err(io)?;
    if n < 4 || &head[..4] != b"\x7fELF" {
        return Err(LoadError::NotElf(path.into()));
    }
    let malformed = |why: &str| LoadError::Malformed { path: path.into(), why: why.into() };
    if n < 6 {
        return Err(malformed("truncated ELF header"));
    }
    // Linux looks at neither the class nor the data byte of `e_ident`: an i386 (or
    // i486) machine number and 32-bit headers are what make a file runnable.
    if n < 20 {
        return Err(malformed("truncated ELF header"));
    }
    let machine = rd16(&head, 18);
    if machine != EM_386 && machine != EM_486 {
        let what = match (head[4], machine) {
            (2, 62) => "x86-64 (ELF64)".to_string(),
            (2, 183) => "AArch64 (ELF64)".to_string(),
            (2, m) => format!("ELF64, machine {m}"),
            (_, m) => format!("ELF32, machine {m}"),
        };
        return Err(LoadError::WrongArch { path: path.into(), what });
    }
    if n < 52 {
        return Err(malformed("truncated ELF header"));
    }
    let kind = rd16(&head, 16);
    if kind != ET_EXEC && kind != ET_DYN {
        return Err(malformed("not an executable or shared object"));
    }
    let rd32 = |o: usize| u32::from_le_bytes([head[o], head[o + 1], head[o + 2], head[o + 3]]);
    let (entry, phoff, phentsize, phnum) = (rd32(24), rd32(28), rd16(&head, 42), rd16(&head, 44));
    if phentsize != 32 {
        return Err(malformed("program header size is not 32"));
    }
    // Linux: at most 64 KiB of program headers.
    if phnum == 0 || u32::from(phnum) * 32 > 65536 {
        return Err(malformed("absurd number of program headers"));
    }
    let size = meta.len();
    if u64::from(phoff) + u64::from(phnum) * 32 > size {
        return Err(malformed("program headers lie beyond the end of the file"));
    }
    let mut raw = vec![0u8; usize::from(phnum) * 32];
    use std::os::unix::fs::FileExt;
    file.read_exact_at(&mut raw, u64::from(phoff)).map_err(io)?;
    let mut phdrs = Vec::new();
    for ph in goblin::elf32::program_header::ProgramHeader::from_bytes(&raw, usize::from(phnum)) {
        let p = Phdr {
            kind: ph.p_type,
            offset: ph.p_offset,
            vaddr: ph.p_vaddr,
            filesz: ph.p_filesz,
            memsz: ph.p_memsz,
            flags: ph.p_flags,
        };
        if p.kind == PT_LOAD {
            if p.filesz > p.memsz {
                return Err(malformed("segment file size exceeds memory size"));
            }
            // A segment past the end of the file is mapped as Linux maps it: what the
            // file holds, and pages beyond its end (see `morph_mem::PageCache`).
            if (p.offset ^ p.vaddr) & (PAGE_SIZE - 1) != 0 {
                return Err(malformed("segment offset and address are not congruent modulo the page size"));
            }
            if u64::from(p.vaddr) + u64::from(p.memsz) > u64::from(TASK_SIZE) {
                return Err(malformed("segment lies outside user space"));
            }
        }
        phdrs.push(p);
    }
    if !phdrs.iter().any(|p| p.kind == PT_LOAD) {
        return Err(malformed("no loadable segment"));
    }
    let id = FileId::of(&file).map_err(io)?;
    Ok(Elf { path: path.into(), name: path.into(), file, id, kind, entry, phoff, phnum, phdrs })
}

fn read_full(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn prot_of(flags: u32) -> Prot {
    let mut p = 0;
    if flags & PF_R != 0 {
        p |= 1;
    }
    if flags & PF_W != 0 {
        p |= 2;
    }
    if flags & PF_X != 0 {
        p |= 4;
    }
    Prot(p)
}

/// Maps the PT_LOAD segments at `bias`; returns the end of the highest segment.
fn map_segments(elf: &Elf, aspace: &mut AddressSpace, cache: &mut PageCache, bias: u32) -> Result<u32, LoadError> {
    let nomem = || LoadError::NoMemory(elf.path.clone());
    let mut end = 0u32;
    for p in elf.phdrs.iter().filter(|p| p.kind == PT_LOAD) {
        let prot = prot_of(p.flags);
        let va = bias.wrapping_add(p.vaddr);
        let page = va & !(PAGE_SIZE - 1);
        let off = u64::from(p.offset & !(PAGE_SIZE - 1));
        let file_end = va + p.filesz;
        let mem_end = va + p.memsz;
        if p.filesz > 0 {
            aspace
                .map_file(cache, page, file_end - page, prot, false, &elf.file, elf.id, off, &elf.name)
                .map_err(|_| nomem())?;
            if prot.has(Prot::WRITE) && !prot.has(Prot::EXEC) {
                aspace.copy_now(page, file_end - page); // relocated at once
            }
        }
        // bss: zero the rest of the last file page, then map anonymous pages.
        let file_page_end = morph_mem::page_align_up(u64::from(file_end)) as u32;
        if p.memsz > p.filesz {
            if p.filesz > 0 && file_end < file_page_end && prot.has(Prot::WRITE) {
                let zeros = vec![0u8; (file_page_end - file_end) as usize];
                aspace.write_bytes(file_end, &zeros).map_err(|_| nomem())?;
            }
            let start = if p.filesz > 0 { file_page_end } else { page };
            if mem_end > start {
                aspace.map_anon(start, mem_end - start, prot, false, "").map_err(|_| nomem())?;
            }
        }
        end = end.max(mem_end);
    }
    Ok(end)
}

/// The lowest and highest addresses the PT_LOAD segments span (unbiased).
fn span(elf: &Elf) -> (u32, u32) {
    let loads = elf.phdrs.iter().filter(|p| p.kind == PT_LOAD);
    let lo = loads.clone().map(|p| p.vaddr & !(PAGE_SIZE - 1)).min().unwrap_or(0);
    let hi = loads.map(|p| p.vaddr + p.memsz).max().unwrap_or(0);
    (lo, hi)
}

/// The lowest address a program's fixed segments may take: the host's
/// `vm.mmap_min_addr` (64 KiB if unknown), or 0 for a process with `CAP_SYS_RAWIO`
/// (such as root), which Linux lets map below it.
fn low_limit() -> u32 {
    static LIMIT: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        const CAP_SYS_RAWIO: u32 = 17;
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:")).map(str::trim);
        let caps = caps.and_then(|c| u64::from_str_radix(c, 16).ok()).unwrap_or(0);
        if caps & (1 << CAP_SYS_RAWIO) != 0 {
            return 0;
        }
        let min = std::fs::read_to_string("/proc/sys/vm/mmap_min_addr").unwrap_or_default();
        min.trim().parse().unwrap_or(MMAP_MIN_ADDR)
    })
}

/// Opens a guest path for execution.
pub type Opener<'a> = dyn Fn(&str) -> Result<OwnedFd, i32> + 'a;

/// Everything `load` needs besides the address space.
pub struct LoadArgs<'a> {
    /// The guest path of the program.
    pub path: &'a str,
    /// The name it was run by (`AT_EXECFN`: the path given to `execve`, a script's
    /// rather than its interpreter's, as Linux's `bprm->filename`).
    pub execfn: &'a [u8],
    /// argv.
    pub argv: &'a [Vec<u8>],
    /// envp.
    pub envp: &'a [Vec<u8>],
    /// The layout drawn for this exec.
    pub layout: Layout,
    /// Opens guest paths (inside the root).
    pub open: &'a Opener<'a>,
    /// The canonical guest path of an opened file, if it has one.
    pub name_of: &'a dyn Fn(&File) -> Option<String>,
    /// Real/effective uid and gid.
    pub ids: [u32; 4],
    /// The modeled CPU, whose feature word is `AT_HWCAP`.
    pub cpu: morph_cpu::cpuid::Model,
}

/// Loads `args.path` into `aspace` and builds the initial stack.
pub fn load(
    args: &LoadArgs<'_>,
    aspace: &mut AddressSpace,
    cache: &mut PageCache,
    rng: &mut impl Rng,
) -> Result<Image, LoadError> {
    let open = |p: &str| -> Result<File, LoadError> {
        (args.open)(p).map(File::from).map_err(|errno| match errno {
            // The opener refuses every file that is not regular without opening it.
            EISDIR => LoadError::Io { path: p.into(), msg: "is a directory".into(), errno: EACCES },
            _ => LoadError::Io { path: p.into(), msg: std::io::Error::from_raw_os_error(errno).to_string(), errno },
        })
    };
    let parse_named = |path: &str| -> Result<Elf, LoadError> {
        let mut elf = parse(path, open(path)?)?;
        if let Some(name) = (args.name_of)(&elf.file) {
            elf.name = name;
        }
        Ok(elf)
    };
    let elf = parse_named(args.path)?;
    let layout = args.layout;
    let (lo, hi) = span(&elf);
    let bias = if elf.kind == ET_DYN { layout.exec_base.wrapping_sub(lo) } else { 0 };
    if elf.kind == ET_DYN && u64::from(bias) + u64::from(hi) > u64::from(TASK_SIZE) {
        return Err(LoadError::Malformed { path: elf.path.clone(), why: "too large to load".into() });
    }
    if elf.kind == ET_EXEC && lo < low_limit() {
        // Linux fails to map the segment after the point of no return and kills the
        // process with SIGSEGV: nothing is mapped, and the first fetch, at 0, faults.
        let sp = build_stack(aspace, args, &layout, &[(AT_PAGESZ, PAGE_SIZE)], rng)
            .map_err(|_| LoadError::NoMemory(elf.path.clone()))?;
        return Ok(Image { entry: 0, prog_entry: 0, sp, brk: 0, interp: None, interp_base: 0, exe: elf.name });
    }
    let end = map_segments(&elf, aspace, cache, bias)?;

    // The program interpreter (dynamic loader), at the mmap base.
    let mut interp = None;
    let mut interp_base = 0;
    let mut entry = bias.wrapping_add(elf.entry);
    if let Some(p) = elf.phdrs.iter().find(|p| p.kind == PT_INTERP) {
        use std::os::unix::fs::FileExt;
        if p.filesz < 2 || p.filesz > 4096 {
            return Err(LoadError::Malformed { path: elf.path.clone(), why: "bad PT_INTERP".into() });
        }
        let mut name = vec![0u8; p.filesz as usize];
        elf.file.read_exact_at(&mut name, u64::from(p.offset)).map_err(|e| LoadError::Io {
            path: elf.path.clone(),
            msg: e.to_string(),
            errno: EIO,
        })?;
        let name = String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
        let ld = parse_named(&name)?;
        // An ET_EXEC interpreter is mapped at its own addresses, over whatever is
        // there, and its load address (`AT_BASE`) is 0, as `load_elf_interp` does.
        if ld.kind == ET_DYN {
            let (llo, lhi) = span(&ld);
            let size = lhi - llo;
            let at = aspace
                .find_free_top_down(size, MMAP_MIN_ADDR, layout.mmap_base)
                .ok_or_else(|| LoadError::NoMemory(name.clone()))?;
            interp_base = at.wrapping_sub(llo);
        }
        map_segments(&ld, aspace, cache, interp_base)?;
        entry = interp_base.wrapping_add(ld.entry);
        interp = Some(name);
    }

    let brk = morph_mem::page_align_up(u64::from(end)) as u32 + layout.brk_offset;
    // AT_PHDR as Linux computes it (not from PT_PHDR): where the last PT_LOAD whose file
    // bytes hold the program headers maps them, plus the bias (the bias alone if none).
    let holder = elf
        .phdrs
        .iter()
        .filter(|p| p.kind == PT_LOAD)
        .rfind(|p| p.offset <= elf.phoff && u64::from(elf.phoff) < u64::from(p.offset) + u64::from(p.filesz));
    let phdr = bias.wrapping_add(holder.map_or(0, |p| (elf.phoff - p.offset).wrapping_add(p.vaddr)));
    let auxv_base = [
        (AT_HWCAP, args.cpu.std_features_edx()),
        (AT_PAGESZ, PAGE_SIZE),
        (AT_CLKTCK, 100),
        (AT_PHDR, phdr),
        (AT_PHENT, 32),
        (AT_PHNUM, u32::from(elf.phnum)),
        (AT_BASE, interp_base),
        (AT_FLAGS, 0),
        (AT_ENTRY, bias.wrapping_add(elf.entry)),
        (AT_UID, args.ids[0]),
        (AT_EUID, args.ids[1]),
        (AT_GID, args.ids[2]),
        (AT_EGID, args.ids[3]),
        (AT_SECURE, 0),
    ];
    let sp = build_stack(aspace, args, &layout, &auxv_base, rng).map_err(|_| LoadError::NoMemory(elf.path.clone()))?;
    Ok(Image { entry, prog_entry: bias.wrapping_add(elf.entry), sp, brk, interp, interp_base, exe: elf.name })
}

/// Builds the initial stack; returns the initial ESP (pointing at argc).
fn build_stack(
    aspace: &mut AddressSpace,
    args: &LoadArgs<'_>,
    layout: &Layout,
    auxv_base: &[(u32, u32)],
    rng: &mut impl Rng,
) -> Result<u32, morph_mem::MemFault> {
    let top = layout.stack_top;
    aspace.map_anon(top - STACK_SIZE, STACK_SIZE, Prot::RW, false, "[stack]").map_err(|_| morph_mem::MemFault {
        addr: top - 4,
        write: true,
        kind: morph_mem::MemFaultKind::Unmapped,
    })?;
    // Strings from the top: a NULL word, the exec file name, envp strings, argv strings.
    let mut p = top - 4;
    fn push_str(aspace: &mut AddressSpace, p: &mut u32, s: &[u8]) -> Result<u32, morph_mem::MemFault> {
        *p -= s.len() as u32 + 1;
        aspace.write_bytes(*p, s)?;
        aspace.write_u8(*p + s.len() as u32, 0)?;
        Ok(*p)
    }
    let execfn = push_str(aspace, &mut p, args.execfn)?;
    let mut envp = Vec::new();
    for e in args.envp.iter().rev() {
        envp.push(push_str(aspace, &mut p, e)?);
    }
    envp.reverse();
    let mut argv = Vec::new();
    for a in args.argv.iter().rev() {
        argv.push(push_str(aspace, &mut p, a)?);
    }
    argv.reverse();
    // arch_align_stack: a random shift, 16-byte aligned.
    p = (p - layout.stack_shift) & !0xf;
    let platform = push_str(aspace, &mut p, b"i686")?;
    let mut random = [0u8; 16];
    rng.fill_bytes(&mut random);
    p -= 16;
    aspace.write_bytes(p, &random)?;
    let at_random = p;

    let mut auxv: Vec<(u32, u32)> = auxv_base.to_vec();
    auxv.push((AT_RANDOM, at_random));
    auxv.push((AT_EXECFN, execfn));
    auxv.push((AT_PLATFORM, platform));
    auxv.push((AT_NULL, 0));
    let words = 1 + argv.len() + 1 + envp.len() + 1 + auxv.len() * 2;
    let sp = (p - words as u32 * 4) & !0xf;
    let mut table = Vec::with_capacity(words * 4);
    table.extend_from_slice(&(argv.len() as u32).to_le_bytes());
    for a in argv.iter().chain([&0]).chain(envp.iter()).chain([&0]) {
        table.extend_from_slice(&a.to_le_bytes());
    }
    for (k, v) in auxv {
        table.extend_from_slice(&k.to_le_bytes());
        table.extend_from_slice(&v.to_le_bytes());
    }
    aspace.write_bytes(sp, &table)?;
    Ok(sp)
}

// ----- scripts ---------------------------------------------------------------------

/// Follows `#!` lines from `path` (Linux allows a few levels): the program to load and
/// its argv. `open(path)` gives the path to use and the file's first bytes.
pub(crate) fn follow_scripts(
    mut path: Vec<u8>,
    mut argv: Vec<Vec<u8>>,
    mut open: impl FnMut(&[u8]) -> Result<(Vec<u8>, Vec<u8>), i32>,
) -> Result<(Vec<u8>, Vec<Vec<u8>>), i32> {
    for depth in 0..=4 {
        let (resolved, head) = open(&path)?;
        let Some((interp, arg)) = shebang(&head) else { return Ok((resolved, argv)) };
        if depth == 4 {
            break;
        }
        // The script goes to its interpreter by the name it was run by (Linux's
        // `bprm->interp`: the path given to `execve`, then an interpreter's as its
        // `#!` line wrote it), not the resolved one: `./scr` stays `./scr`.
        let mut v = vec![interp.clone()];
        v.extend(arg);
        v.push(path);
        v.extend(argv.into_iter().skip(1));
        argv = v;
        path = interp;
    }
    Err(ELOOP)
}

/// What `#!` names: the interpreter and its optional single argument.
pub(crate) fn shebang(head: &[u8]) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let trim = |s: &[u8]| -> Vec<u8> {
        let start = s.iter().position(|b| !b" \t".contains(b)).unwrap_or(s.len());
        let end = s.iter().rposition(|b| !b" \t\r".contains(b)).map_or(start, |e| e + 1);
        s[start..end.max(start)].to_vec()
    };
    let line = trim(line);
    if line.is_empty() {
        return None;
    }
    let cut = line.iter().position(|b| b" \t".contains(b)).unwrap_or(line.len());
    let interp = line[..cut].to_vec();
    let arg = trim(&line[cut..]);
    Some((interp, (!arg.is_empty()).then_some(arg)))
}
