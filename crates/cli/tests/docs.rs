//! The README's usage block mirrors the command line: every long option that
//! `morph <command> --help` lists is in it (a doc-sync test, like the model's
//! parameter table in `crates/model/tests/docs.rs`).

use std::process::Command;

/// The long options (`--name`) a help text lists, without `--help` and `--version`.
fn long_options(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        // Option lines start with `-x, --name` or `--name`.
        let t = match t.as_bytes() {
            [b'-', c, ..] if *c != b'-' => t.split_once(", ").map_or(t, |(_, after)| after),
            _ => t,
        };
        if let Some(rest) = t.strip_prefix("--") {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            if !name.is_empty() && name != "help" && name != "version" {
                out.push(format!("--{name}"));
            }
        }
    }
    out
}

/// The fenced block under the README's `## Usage` heading.
fn readme_usage() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let usage = readme.split("## Usage").nth(1).expect("README has a Usage section");
    usage.split("```").nth(1).expect("the Usage section has a code block").to_string()
}

#[test]
fn every_long_option_of_every_command_is_in_the_readme_usage() {
    let usage = readme_usage();
    let cmds: [&[&str]; 7] = [
        &["run"],
        &["exp", "seed"],
        &["exp", "fit"],
        &["exp", "sweep"],
        &["exp", "sweep-cell"],
        &["exp", "sweep-merge"],
        &["sysroot"],
    ];
    for cmd in cmds {
        let out = Command::new(env!("CARGO_BIN_EXE_morph")).args(cmd).arg("--help").output().unwrap();
        assert!(out.status.success(), "{cmd:?} --help failed");
        let help = String::from_utf8(out.stdout).unwrap();
        let opts = long_options(&help);
        assert!(opts.len() >= 2, "{cmd:?}: no options found in {help}");
        // The usage line of this command: from `morph <cmd>` to the next `morph `.
        let head = format!("morph {}", cmd.join(" "));
        let start = usage.find(&format!("{head} ")).unwrap_or_else(|| panic!("{head} not in the README usage"));
        let block = &usage[start + head.len()..];
        let block = &block[..block.find("\nmorph ").unwrap_or(block.len())];
        for o in &opts {
            let listed = block.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).any(|w| w == o);
            assert!(listed, "README usage of `{head}` lacks {o}");
        }
    }
}
