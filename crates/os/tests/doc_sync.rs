//! The docs that mirror crates/os's layout name every module it has.

use std::path::Path;

fn doc(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The `.rs` files and directories directly in `dir` (under crates/os/src).
fn entries(dir: &str) -> Vec<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut v: Vec<String> = std::fs::read_dir(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() { format!("{name}/") } else { name }
        })
        .filter(|n| n.ends_with('/') || n.ends_with(".rs"))
        .collect();
    v.sort();
    v
}

#[test]
fn adding_a_syscall_names_every_family_file() {
    let doc = doc("adding-a-syscall.md");
    for e in entries("syscall").into_iter().filter(|e| e != "mod.rs") {
        assert!(
            doc.contains(&format!("`{e}")) || doc.contains(&format!("syscall/{e}")),
            "adding-a-syscall.md does not name {e}"
        );
    }
    for e in entries("syscall/net").into_iter().filter(|e| e != "mod.rs") {
        assert!(doc.contains(&format!("`{e}`")), "adding-a-syscall.md does not name net/{e}");
    }
}

#[test]
fn architecture_names_every_module_of_os() {
    let doc = doc("architecture.md");
    let table = doc.split("### Modules of `crates/os`").nth(1).expect("the modules table in architecture.md");
    for e in entries("").into_iter().filter(|e| e != "lib.rs") {
        let module = e.trim_end_matches('/').trim_end_matches(".rs");
        assert!(table.contains(&format!("`{module}`")), "architecture.md's modules of crates/os do not name {module}");
    }
    for e in entries("kernel").into_iter().filter(|e| e != "mod.rs") {
        assert!(table.contains(&format!("kernel/{e}")), "architecture.md does not name kernel/{e}");
    }
}
