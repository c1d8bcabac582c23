//! What every output carries so that it can be reproduced: morph's version and
//! commit, the host, the date, and the sysroot's packages; and the check that an output
//! file can be written before anything runs.

use std::path::Path;

use serde_json::{Value, json};

/// morph's version and the git commit it was built from ("unknown" outside git).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MORPH_GIT_COMMIT"), ")");

/// The git commit morph was built from.
pub const COMMIT: &str = env!("MORPH_GIT_COMMIT");

/// The host's `randomize_va_space` (0, 1 or 2), if readable.
pub fn host_randomize_va_space() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").ok()?.trim().parse().ok()
}

fn host_cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn host_kernel() -> String {
    let r = |f: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).map(|s| s.trim().to_string());
    match (r("ostype"), r("osrelease")) {
        (Ok(t), Ok(v)) => format!("{t} {v}"),
        _ => "unknown".into(),
    }
}

/// Now, in UTC, as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    utc(secs)
}

/// `secs` after the epoch as an ISO 8601 UTC time (the civil-from-days algorithm).
fn utc(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// morph's version and commit, the host's CPU, kernel and ASLR setting, and the date.
pub fn metadata() -> Value {
    json!({
        "morph_version": env!("CARGO_PKG_VERSION"),
        "morph_commit": COMMIT,
        "host_cpu": host_cpu(),
        "host_kernel": host_kernel(),
        "host_randomize_va_space": host_randomize_va_space(),
        "date_utc": utc_now(),
    })
}

/// What the guest root is: the suite, architecture and package versions recorded by
/// `morph sysroot` (its `.morph-sysroot` file), else read from the root's dpkg status;
/// `null` for a root that has neither.
pub fn sysroot(root: &Path) -> Value {
    let mut info = serde_json::Map::new();
    let mut packages = serde_json::Map::new();
    if let Ok(s) = std::fs::read_to_string(root.join(".morph-sysroot")) {
        for l in s.lines().filter(|l| !l.starts_with('#')) {
            match l.split_once(' ') {
                Some(("package", rest)) => {
                    if let Some((n, v)) = rest.split_once(' ') {
                        packages.insert(n.into(), v.into());
                    }
                }
                Some((k @ ("suite" | "arch" | "created"), v)) => {
                    info.insert(k.into(), v.into());
                }
                _ => {}
            }
        }
    } else if let Ok(s) = std::fs::read_to_string(root.join("var/lib/dpkg/status")) {
        for stanza in s.split("\n\n") {
            let field = |f: &str| stanza.lines().find_map(|l| l.strip_prefix(f)).map(str::trim);
            let installed = field("Status:").is_some_and(|st| st.ends_with("installed") && !st.contains("not"));
            if let (Some(n), Some(v), true) = (field("Package:"), field("Version:"), installed) {
                packages.insert(n.into(), v.into());
            }
        }
    }
    if packages.is_empty() && info.is_empty() {
        return Value::Null;
    }
    info.insert("path".into(), root.display().to_string().into());
    info.insert("packages".into(), Value::Object(packages));
    Value::Object(info)
}

/// Checks, before anything runs, that `path` (the value of option `flag`) can be
/// written: opened for writing, created if missing (and then removed again, so that a
/// run that fails leaves nothing behind). The error names the option and the file.
pub fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    let existed = path.exists();
    if path.is_dir() {
        anyhow::bail!("{flag} {}: is a directory", path.display());
    }
    match std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path) {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => anyhow::bail!("{flag} {}: cannot write: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_120_608_000 + 3_723), "2005-07-06T01:02:03Z");
    }
}
