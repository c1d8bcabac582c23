//! `--code-map`: one line per translation, whose sixth field names where the
//! translation's first guest byte lies in its file (device, inode, offset), which
//! `benches/code-map.py --functions` uses to put profiles on the file's symbols wherever
//! ASLR mapped it.

mod common;

use std::os::unix::fs::MetadataExt;

use common::*;

/// The PT_LOAD segments of a 32-bit little-endian ELF file: (file offset, virtual
/// address, bytes in the file).
fn loads(elf: &[u8]) -> Vec<(u32, u32, u32)> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    assert_eq!(&elf[..5], b"\x7fELF\x01", "a 32-bit ELF file");
    let (phoff, phentsize, phnum) = (u32_at(0x1c) as usize, u16_at(0x2a), u16_at(0x2c));
    (0..phnum)
        .map(|i| phoff + i * phentsize)
        .filter(|&p| u32_at(p) == 1)
        .map(|p| (u32_at(p + 4), u32_at(p + 8), u32_at(p + 16)))
        .collect()
}

#[test]
fn each_translation_names_its_file_and_offset() {
    let dir = scratch("code_map");
    let (map, stats) = (dir.join("map"), dir.join("stats.json"));
    // Two guests: a static executable at its link address, and a static PIE, which the
    // loader places at a random address (`--aslr 2`), so file offset and EIP differ by
    // a load bias the map's offset must have taken off.
    for name in ["recursion", "recursion.pie"] {
        let prog = guests().join(name);
        let flags = ["--engine", "dbt", "--threshold", "0", "--aslr", "2", "--seed", "7", "--code-map"];
        let mut flags = flags.to_vec();
        flags.extend([map.to_str().unwrap(), "--stats-json", stats.to_str().unwrap()]);
        let r = emulated(&flags, &prog, &[], &dir, b"");
        assert_eq!(r.status, 0, "{name}: {}", r.stderr);
        let elf = std::fs::read(&prog).unwrap();
        let meta = std::fs::metadata(&prog).unwrap();
        let segs = loads(&elf);
        let text = std::fs::read_to_string(&map).unwrap();
        let mut checked = 0;
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 6, "{name}: offset, size, EIP, PA, host code, file: {line}");
            let eip = u32::from_str_radix(f[2], 16).unwrap();
            let Some((dev, ino, off)) = f[5].split(':').collect::<Vec<_>>().try_into().ok().map(|v: [&str; 3]| {
                let h = |s: &str| u64::from_str_radix(s, 16).unwrap();
                (h(v[0]), h(v[1]), h(v[2]))
            }) else {
                assert_eq!(f[5], "-", "{name}: {line}");
                continue;
            };
            if (dev, ino) != (meta.dev(), meta.ino()) {
                continue; // the vDSO or another file
            }
            // The guest bytes at EIP are the file's bytes at the offset: the file's
            // bytes there lie in a PT_LOAD segment, and the first instruction of every
            // translation of this program is one of its instructions.
            let off = u32::try_from(off).unwrap();
            let seg = segs.iter().find(|&&(o, _, n)| o <= off && off < o + n);
            let (o, v, _) = *seg.unwrap_or_else(|| panic!("{name}: offset {off:#x} in no PT_LOAD segment"));
            let bias = eip.wrapping_sub(v + (off - o));
            if name == "recursion" {
                assert_eq!(bias, 0, "{name}: EIP {eip:#x} is file offset {off:#x}");
            } else {
                assert_eq!(bias % 4096, 0, "{name}: EIP {eip:#x}, file offset {off:#x}: a page-aligned load bias");
                assert_ne!(bias, 0, "{name}: placed by --aslr 2");
            }
            checked += 1;
        }
        assert!(checked > 10, "{name}: {checked} translations of the program's own file");
        // Every translation has its line (the map is buffered, and written out whole).
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
        assert_eq!(Some(text.lines().count() as u64), s["engine"]["translations"].as_u64(), "{name}");
    }
}
