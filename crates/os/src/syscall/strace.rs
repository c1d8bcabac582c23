//! `--strace`: one line per system call.

use super::*;

pub(super) fn errno_name(e: Errno) -> &'static str {
    match e {
        EPERM => "EPERM",
        ENOENT => "ENOENT",
        ESRCH => "ESRCH",
        EINTR => "EINTR",
        EIO => "EIO",
        ENOEXEC => "ENOEXEC",
        EBADF => "EBADF",
        ECHILD => "ECHILD",
        EAGAIN => "EAGAIN",
        ENOMEM => "ENOMEM",
        EACCES => "EACCES",
        EFAULT => "EFAULT",
        EEXIST => "EEXIST",
        ENOTDIR => "ENOTDIR",
        EISDIR => "EISDIR",
        EINVAL => "EINVAL",
        EMFILE => "EMFILE",
        ENOTTY => "ENOTTY",
        ESPIPE => "ESPIPE",
        ERANGE => "ERANGE",
        ENOSYS => "ENOSYS",
        ELOOP => "ELOOP",
        ENXIO => "ENXIO",
        E2BIG => "E2BIG",
        EPIPE => "EPIPE",
        EXDEV => "EXDEV",
        ENOTEMPTY => "ENOTEMPTY",
        ENAMETOOLONG => "ENAMETOOLONG",
        ENOTSOCK => "ENOTSOCK",
        EAFNOSUPPORT => "EAFNOSUPPORT",
        EADDRNOTAVAIL => "EADDRNOTAVAIL",
        ENETUNREACH => "ENETUNREACH",
        ECONNREFUSED => "ECONNREFUSED",
        EINPROGRESS => "EINPROGRESS",
        EALREADY => "EALREADY",
        EISCONN => "EISCONN",
        ENOTCONN => "ENOTCONN",
        EADDRINUSE => "EADDRINUSE",
        ECONNRESET => "ECONNRESET",
        ETIMEDOUT => "ETIMEDOUT",
        EMSGSIZE => "EMSGSIZE",
        ENOPROTOOPT => "ENOPROTOOPT",
        EPROTONOSUPPORT => "EPROTONOSUPPORT",
        ENOBUFS => "ENOBUFS",
        ESOCKTNOSUPPORT => "ESOCKTNOSUPPORT",
        EOPNOTSUPP => "EOPNOTSUPP",
        ENODEV => "ENODEV",
        EOVERFLOW => "EOVERFLOW",
        _ => "E?",
    }
}

pub(super) fn format_args_of(p: &Process, fmt: &str, a: &[u32; 6]) -> String {
    let mut out = Vec::new();
    for (c, &v) in fmt.chars().zip(a.iter()) {
        out.push(match c {
            'd' | 'f' => format!("{}", v as i32),
            'u' => format!("{v}"),
            'o' => format!("{v:#o}"),
            's' => match p.aspace.read_cstr(v, 256) {
                Ok(s) => format!("{:?}", String::from_utf8_lossy(&s)),
                Err(_) => format!("{v:#x}"),
            },
            _ => format!("{v:#x}"),
        });
    }
    out.join(", ")
}
