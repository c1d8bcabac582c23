use std::path::PathBuf;

use super::*;
use crate::{AddressSpace, Prot};

/// A scratch file with `contents`, opened read/write; removed when dropped.
struct Scratch {
    path: PathBuf,
    file: File,
}

impl Scratch {
    fn new(tag: &str, contents: &[u8]) -> Scratch {
        let path = std::env::temp_dir().join(format!("morph-pagecache-{}-{tag}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        Scratch { path, file }
    }
    fn id(&self) -> FileId {
        FileId::of(&self.file).unwrap()
    }
    fn contents(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn machine() -> (Rc<PhysMem>, PageCache) {
    (Rc::new(PhysMem::new(1 << 28).unwrap()), PageCache::new())
}

#[test]
fn a_fill_gives_a_run_of_pages_consecutive_frames_and_the_file_bytes() {
    let (phys, mut cache) = machine();
    let data = pattern(10 * 4096 + 100);
    let f = Scratch::new("run", &data);
    // Frames freed earlier sit on the free list; a fill must not scatter over them.
    let junk: Vec<Frame> = (0..5).map(|_| phys.alloc().unwrap()).collect();
    junk.into_iter().for_each(|j| phys.release(j));
    let middle = cache.page(&phys, &f.file, f.id(), 4).unwrap();
    let all = cache.pages(&phys, &f.file, f.id(), 0, 11).unwrap();
    assert_eq!(all[4], middle, "a cached page keeps its frame");
    assert!(all[..4].windows(2).all(|w| w[1].0 == w[0].0 + 1), "{all:?}");
    assert!(all[5..].windows(2).all(|w| w[1].0 == w[0].0 + 1), "{all:?}");
    for (i, &fr) in all.iter().enumerate() {
        // SAFETY: a cached frame, read only.
        let got = unsafe { std::slice::from_raw_parts(phys.frame_ptr(fr), 4096) };
        let want: Vec<u8> = (0..4096).map(|k| data.get(i * 4096 + k).copied().unwrap_or(0)).collect();
        assert!(got == &want[..], "page {i}");
    }
    assert_eq!(cache.pages(&phys, &f.file, f.id(), 0, 11).unwrap(), all);
}

fn map(a: &mut AddressSpace, c: &mut PageCache, s: &Scratch, va: u32, pages: u32, prot: Prot, shared: bool) {
    a.map_file(c, va, pages * PAGE_SIZE, prot, shared, &s.file, s.id(), 0, "f").unwrap();
}

/// Reads a byte of each of `pages` pages from `va`: their first touch, which fills them.
fn touch(a: &AddressSpace, va: u32, pages: u32) {
    for i in 0..pages {
        a.read_u8(va + i * PAGE_SIZE).unwrap();
    }
}

#[test]
fn idle_cached_pages_are_reclaimed_under_the_memory_limit() {
    // 1024 frames; seven 200-page files mapped and unmapped in turn would cache
    // 1400 pages: the idle pages of earlier files make room, mapped ones stay.
    let phys = Rc::new(PhysMem::new(1 << 22).unwrap());
    let mut c = PageCache::new();
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    let files: Vec<Scratch> = (0..7).map(|i| Scratch::new(&format!("reclaim{i}"), &pattern(200 << 12))).collect();
    map(&mut a, &mut c, &files[0], 0x1000_0000, 200, Prot::READ, false); // stays mapped
    touch(&a, 0x1000_0000, 200);
    for (i, s) in files.iter().enumerate().skip(1) {
        map(&mut a, &mut c, s, 0x2000_0000, 200, Prot::READ, false);
        touch(&a, 0x2000_0000, 200);
        let mut got = [0u8; 8];
        a.read_bytes(0x2000_0000 + 199 * 4096, &mut got).unwrap();
        assert_eq!(got[..], pattern(200 << 12)[199 * 4096..][..8], "file {i}");
        a.unmap(0x2000_0000, 200 << 12).unwrap();
    }
    assert!(c.stats().reclaimed > 0 && phys.stats().frames_touched <= 1024);
    let mut got = [0u8; 8];
    a.read_bytes(0x1000_0000 + 4096 * 5, &mut got).unwrap();
    assert_eq!(got[..], pattern(6 << 12)[5 * 4096..][..8], "a mapped file keeps its pages");
    // Anonymous memory gets the rest once the cache gives its idle pages back.
    let idle = c.stats().pages - 200;
    assert!(idle > 0);
    assert!(a.map_anon(0x3000_0000, 900 << 12, Prot::RW, false, "").is_err());
    assert_eq!(c.reclaim(&phys, 900, None), idle as u32);
    a.map_anon(0x3000_0000, 800 << 12, Prot::RW, false, "").unwrap();
}

#[test]
fn shared_store_is_seen_by_private_mappings_of_the_page() {
    let (phys, mut c) = machine();
    let s = Scratch::new("shared", &pattern(10000));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    let mut b = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 3, Prot::READ, false);
    map(&mut a, &mut c, &s, 0x2000_0000, 3, Prot::RW, true);
    map(&mut b, &mut c, &s, 0x3000_0000, 3, Prot::RW, false);
    touch(&a, 0x1000_0000, 1);
    touch(&a, 0x2000_0000, 1);
    assert!(a.pte(0x1000_0000).has_frame());
    assert_eq!(a.pte(0x1000_0000).frame(), a.pte(0x2000_0000).frame(), "one page-cache frame");
    a.write_bytes(0x2000_0064, b"SHARED").unwrap();
    let mut got = [0u8; 6];
    a.read_bytes(0x1000_0064, &mut got).unwrap();
    assert_eq!(&got, b"SHARED");
    b.read_bytes(0x3000_0064, &mut got).unwrap();
    assert_eq!(&got, b"SHARED", "a private writable mapping not yet written shares the page");
    // A private write stays private: neither the file nor the other mappings see it.
    b.write_bytes(0x3000_0064, b"PRIVAT").unwrap();
    a.read_bytes(0x2000_0064, &mut got).unwrap();
    assert_eq!(&got, b"SHARED");
    c.write_back(&phys, s.id().key()).unwrap();
    assert_eq!(&s.contents()[100..106], b"SHARED", "write-back before a read reaches the file");
    assert_eq!(s.contents().len(), 10000);
}

#[test]
fn a_data_segment_copied_at_once_is_private_and_hosted() {
    let (phys, mut c) = machine();
    let s = Scratch::new("data", &pattern(20 * PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 3, Prot::RW, false);
    map(&mut a, &mut c, &s, 0x2000_0000, 17, Prot::RW, false);
    touch(&a, 0x1000_0000, 1);
    let cached = a.pte(0x1000_0000).frame();
    assert!(a.pte(0x1000_0000).has_frame() && a.pte(0x1000_0000).cow(), "filled copy-on-write");
    a.copy_now(0x1000_0000, 3 * PAGE_SIZE);
    a.copy_now(0x2000_0000, 17 * PAGE_SIZE);
    for i in 0..3 {
        let p = a.pte(0x1000_0000 + i * PAGE_SIZE);
        assert!(p.writable() && !p.cow() && p.hosted(), "page {i}");
    }
    assert_ne!(a.pte(0x1000_0000).frame(), cached, "a frame of its own");
    assert!(!a.pte(0x2000_0000).has_frame(), "larger mappings are filled as touched");
    touch(&a, 0x2000_0000, 1);
    assert!(a.pte(0x2000_0000).cow(), "and copied as written");
    let page1 = &pattern(2 * PAGE_SIZE as usize)[PAGE_SIZE as usize..][..8];
    let mut got = [0u8; 8];
    a.read_bytes(0x1000_1000, &mut got).unwrap();
    assert_eq!(got[..], *page1);
    a.write_bytes(0x1000_1000, b"PRIVATE!").unwrap();
    a.read_bytes(0x2000_1000, &mut got).unwrap();
    assert_ne!(&got, b"PRIVATE!", "the cached page is untouched");
    assert_eq!(s.contents()[PAGE_SIZE as usize..][..8], *page1);
}

#[test]
fn write_through_is_seen_by_mappings() {
    let (phys, mut c) = machine();
    let s = Scratch::new("write", &pattern(3 * PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 3, Prot::READ, false);
    map(&mut a, &mut c, &s, 0x2000_0000, 3, Prot::RW, true);
    touch(&a, 0x1000_0000, 3);
    let code_frame = a.pte(0x1000_1000).frame();
    phys.set_code(code_frame);
    // A write straddling pages 0 and 1, as `pwrite(fd, "0123456789", 10, 4090)`.
    s.file.write_all_at(b"0123456789", 4090).unwrap();
    c.written(&phys, s.id().key(), 4090, 10).unwrap();
    for base in [0x1000_0000u32, 0x2000_0000] {
        let mut got = [0u8; 12];
        a.read_bytes(base + 4089, &mut got).unwrap();
        assert_eq!(&got[1..11], b"0123456789");
        assert_eq!(got[0], pattern(4090)[4089], "bytes around the write are unchanged");
    }
    assert!(!phys.is_code(code_frame), "code in a rewritten frame is invalidated");
    assert!(phys.take_dirty_code().contains(&code_frame));
}

#[test]
fn munmap_writes_shared_stores_back_within_the_file() {
    let (phys, mut c) = machine();
    let s = Scratch::new("munmap", &pattern(5000));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x2000_0000, 2, Prot::RW, true);
    a.write_bytes(0x2000_0010, b"STORE").unwrap();
    a.write_bytes(0x2000_1400, b"PAST-EOF").unwrap(); // byte 5120 of a 5000-byte file
    assert_eq!(&s.contents()[16..21], &pattern(21)[16..], "not yet written back");
    a.unmap(0x2000_0000, 2 * PAGE_SIZE).unwrap();
    let after = s.contents();
    assert_eq!(&after[16..21], b"STORE");
    assert_eq!(after.len(), 5000, "write-back never extends the file");
    // Dropping an address space writes back too.
    let mut b = AddressSpace::new(phys.clone()).unwrap();
    map(&mut b, &mut c, &s, 0x2000_0000, 2, Prot::RW, true);
    b.write_bytes(0x2000_1000, b"DROPPED").unwrap();
    drop(b);
    assert_eq!(&s.contents()[4096..4103], b"DROPPED");
    // msync too.
    let mut d = AddressSpace::new(phys.clone()).unwrap();
    map(&mut d, &mut c, &s, 0x2000_0000, 1, Prot::RW, true);
    d.write_bytes(0x2000_0020, b"SYNCED").unwrap();
    d.write_back(0x2000_0000, PAGE_SIZE).unwrap();
    assert_eq!(&s.contents()[32..38], b"SYNCED");
}

#[test]
fn a_forked_child_shares_shared_file_pages() {
    let (phys, mut c) = machine();
    let s = Scratch::new("fork", &pattern(4096));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x2000_0000, 1, Prot::RW, true);
    map(&mut a, &mut c, &s, 0x3000_0000, 1, Prot::RW, false);
    let mut child = a.fork().unwrap();
    child.write_bytes(0x2000_0000, b"CHILD").unwrap();
    child.write_bytes(0x3000_0000, b"PRIV").unwrap();
    let mut got = [0u8; 5];
    a.read_bytes(0x2000_0000, &mut got).unwrap();
    assert_eq!(&got, b"CHILD");
    a.read_bytes(0x3000_0000, &mut got).unwrap();
    assert_eq!(&got, b"CHILD", "the parent's private page still shares the cached frame");
    drop(child);
    assert_eq!(&s.contents()[..5], b"CHILD");
}

#[test]
fn truncation_zeroes_and_drops_cached_pages() {
    let (phys, mut c) = machine();
    let s = Scratch::new("trunc", &pattern(3 * PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 3, Prot::READ, false);
    touch(&a, 0x1000_0000, 3);
    a.unmap(0x1000_2000, PAGE_SIZE).unwrap(); // page 2 stays cached, unmapped
    assert_eq!(c.stats().pages, 3);
    s.file.set_len(5000).unwrap();
    c.truncated(&phys, s.id().key(), 5000);
    assert_eq!(c.stats().pages, 2, "the unmapped page past the end is dropped");
    let mut page1 = vec![0u8; PAGE_SIZE as usize];
    a.read_bytes(0x1000_1000, &mut page1).unwrap();
    assert_eq!(&page1[..904], &pattern(5000)[4096..]);
    assert!(page1[904..].iter().all(|&b| b == 0), "bytes past the new end are zero");
    // Growing again reads zeros where the file was cut, through a new mapping too.
    s.file.set_len(3 * u64::from(PAGE_SIZE)).unwrap();
    c.truncated(&phys, s.id().key(), 3 * u64::from(PAGE_SIZE));
    map(&mut a, &mut c, &s, 0x2000_0000, 3, Prot::READ, false);
    let mut all = vec![0u8; 3 * PAGE_SIZE as usize];
    a.read_bytes(0x2000_0000, &mut all).unwrap();
    assert_eq!(&all[..5000], &pattern(5000)[..]);
    assert!(all[5000..].iter().all(|&b| b == 0));
    assert_eq!(a.pte(0x2000_1000).frame(), a.pte(0x1000_1000).frame());
}

#[test]
fn identity_survives_writes_and_outside_changes_are_reread() {
    let (phys, mut c) = machine();
    let s = Scratch::new("ident", &pattern(4096));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 1, Prot::READ, false);
    touch(&a, 0x1000_0000, 1);
    let frame = a.pte(0x1000_0000).frame();
    s.file.write_all_at(b"through morph", 0).unwrap();
    c.written(&phys, s.id().key(), 0, 13).unwrap();
    map(&mut a, &mut c, &s, 0x2000_0000, 1, Prot::READ, false);
    touch(&a, 0x2000_0000, 1);
    assert_eq!(a.pte(0x2000_0000).frame(), frame, "same page after a write: same frame");
    a.unmap(0x1000_0000, PAGE_SIZE).unwrap();
    a.unmap(0x2000_0000, PAGE_SIZE).unwrap();
    // Changed behind the machine's back (size differs) while nobody maps it.
    s.file.write_all_at(b"outside", 4096).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 2, Prot::READ, false);
    let mut got = [0u8; 7];
    a.read_bytes(0x1000_1000, &mut got).unwrap();
    assert_eq!(&got, b"outside");
    assert_eq!(c.stats().files_dropped, 1);
}

#[test]
fn mprotect_cannot_make_a_read_only_shared_file_mapping_writable() {
    let (phys, mut c) = machine();
    let s = Scratch::new("ro", &pattern(4096));
    let ro = File::open(&s.path).unwrap();
    let mut a = AddressSpace::new(phys).unwrap();
    a.map_file(&mut c, 0x1000_0000, PAGE_SIZE, Prot::READ, true, &ro, s.id(), 0, "f").unwrap();
    assert_eq!(a.protect(0x1000_0000, PAGE_SIZE, Prot::RW), Err(crate::MemFaultKind::Protection));
    a.map_file(&mut c, 0x2000_0000, PAGE_SIZE, Prot::READ, false, &ro, s.id(), 0, "f").unwrap();
    assert_eq!(a.protect(0x2000_0000, PAGE_SIZE, Prot::RW), Ok(()));
}

#[test]
fn a_filled_frame_names_its_file_page_until_written_or_freed() {
    let (phys, mut cache) = machine();
    let f = Scratch::new("origin", &pattern(3 * 4096));
    let frames = cache.pages(&phys, &f.file, f.id(), 0, 3).unwrap();
    for (i, &fr) in frames.iter().enumerate() {
        assert_eq!(phys.file_page(fr), Some(crate::FilePage { file: f.id(), index: i as u32 }));
    }
    let anon = phys.alloc().unwrap();
    assert_eq!(phys.file_page(anon), None, "anonymous memory has no file page");
    f.file.write_all_at(b"new", 4096 + 10).unwrap();
    cache.written(&phys, f.id().key(), 4096 + 10, 3).unwrap();
    assert_eq!(phys.file_page(frames[1]), None, "written through the cache");
    assert!(phys.file_page(frames[0]).is_some(), "the other pages keep theirs");
    cache.truncated(&phys, f.id().key(), 0);
    for fr in frames {
        assert_eq!(phys.refcount(fr), 0, "dropped by the truncation, mapped nowhere");
        assert_eq!(phys.file_page(fr), None, "a freed frame has none");
    }
}

#[test]
fn a_file_page_is_read_at_its_first_touch_with_its_cluster() {
    let (phys, mut c) = machine();
    let data = pattern(40 * PAGE_SIZE as usize);
    let s = Scratch::new("lazy", &data);
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 40, Prot::READ, false);
    assert_eq!((c.stats().fills, c.stats().pages, c.stats().files), (0, 0, 1), "mmap reads nothing");
    assert!(!a.pte(0x1000_0000 + 20 * PAGE_SIZE).has_frame());
    let mut got = [0u8; 8];
    a.read_bytes(0x1000_0000 + 20 * PAGE_SIZE + 8, &mut got).unwrap();
    assert_eq!(got[..], data[20 * PAGE_SIZE as usize + 8..][..8]);
    // The aligned cluster of 8 file pages around page 20, in one read.
    assert_eq!((c.stats().fills, c.stats().lookups, c.stats().hits), (8, 8, 0));
    assert!((16..24).all(|i| a.pte(0x1000_0000 + i * PAGE_SIZE).has_frame()));
    assert!(!a.pte(0x1000_0000 + 15 * PAGE_SIZE).has_frame() && !a.pte(0x1000_0000 + 24 * PAGE_SIZE).has_frame());
    // A second mapping finds the cached pages at mmap and reads only the others.
    map(&mut a, &mut c, &s, 0x2000_0000, 40, Prot::READ, false);
    assert!(a.pte(0x2000_0000 + 20 * PAGE_SIZE).has_frame(), "cached pages are mapped at once");
    assert_eq!(a.pte(0x2000_0000 + 20 * PAGE_SIZE).frame(), a.pte(0x1000_0000 + 20 * PAGE_SIZE).frame());
    let mut all = vec![0u8; data.len()];
    a.read_bytes(0x2000_0000, &mut all).unwrap();
    assert!(all == data);
    assert_eq!((c.stats().fills, c.stats().hits, c.stats().pages), (40, 8, 40));
}

#[test]
fn a_page_not_touched_yet_shows_the_file_as_it_is_at_the_first_touch() {
    let (phys, mut c) = machine();
    let s = Scratch::new("later", &pattern(2 * PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 2, Prot::RW, false);
    // Written through morph (reported to the cache) and behind its back.
    s.file.write_all_at(b"morph", 10).unwrap();
    c.written(&phys, s.id().key(), 10, 5).unwrap();
    s.file.write_all_at(b"outside", PAGE_SIZE as u64 + 10).unwrap();
    let mut got = [0u8; 7];
    a.read_bytes(0x1000_000a, &mut got[..5]).unwrap();
    assert_eq!(&got[..5], b"morph");
    a.read_bytes(0x1000_100a, &mut got).unwrap();
    assert_eq!(&got, b"outside");
    // A private page written before its first read is copied from the file's page.
    let mut b = AddressSpace::new(phys.clone()).unwrap();
    map(&mut b, &mut c, &s, 0x1000_0000, 2, Prot::RW, false);
    b.write_bytes(0x1000_0000, b"PRIV").unwrap();
    b.read_bytes(0x1000_000a, &mut got[..5]).unwrap();
    assert_eq!(&got[..5], b"morph");
    a.read_bytes(0x1000_0000, &mut got[..4]).unwrap();
    assert_eq!(got[..4], pattern(4)[..], "the cached page is untouched");
}

#[test]
fn a_page_truncated_away_before_its_first_touch_gives_sigbus() {
    let (phys, mut c) = machine();
    let s = Scratch::new("cut", &pattern(3 * PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x1000_0000, 3, Prot::READ, false);
    s.file.set_len(5000).unwrap();
    c.truncated(&phys, s.id().key(), 5000);
    a.file_resized(s.id().key(), 5000);
    assert_eq!(a.read_u8(0x1000_2000).unwrap_err().kind, crate::MemFaultKind::BeyondEof);
    let mut page1 = vec![0u8; PAGE_SIZE as usize];
    a.read_bytes(0x1000_1000, &mut page1).unwrap();
    assert_eq!(&page1[..904], &pattern(5000)[4096..]);
    assert!(page1[904..].iter().all(|&b| b == 0), "bytes past the end read as zero");
    assert!(!a.pte(0x1000_2000).has_frame(), "a page past the end is not filled");
    // The file grows back: the page is there again, with the file's (zero) bytes.
    s.file.set_len(3 * u64::from(PAGE_SIZE)).unwrap();
    assert!(a.eof_moved(0x1000_2000));
    assert_eq!(a.read_u8(0x1000_2000).unwrap(), 0);
}

#[test]
fn fork_before_the_first_touch_keeps_private_and_shared_pages_apart() {
    let (phys, mut c) = machine();
    let s = Scratch::new("lazyfork", &pattern(PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x2000_0000, 1, Prot::RW, true);
    map(&mut a, &mut c, &s, 0x3000_0000, 1, Prot::RW, false);
    let mut child = a.fork().unwrap();
    child.write_bytes(0x3000_0000, b"PRIV").unwrap();
    child.write_bytes(0x2000_0010, b"SHARED").unwrap();
    let mut got = [0u8; 6];
    a.read_bytes(0x3000_0000, &mut got[..4]).unwrap();
    assert_eq!(got[..4], pattern(4)[..], "the child's private write stays its own");
    a.read_bytes(0x2000_0010, &mut got).unwrap();
    assert_eq!(&got, b"SHARED");
    drop(child);
    assert_eq!(&s.contents()[16..22], b"SHARED");
}

#[test]
fn write_back_all_reaches_every_file_with_shared_stores() {
    let (phys, mut c) = machine();
    let s1 = Scratch::new("all1", &pattern(PAGE_SIZE as usize));
    let s2 = Scratch::new("all2", &pattern(PAGE_SIZE as usize));
    let s3 = Scratch::new("all3", &pattern(PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s1, 0x2000_0000, 1, Prot::RW, true);
    map(&mut a, &mut c, &s2, 0x3000_0000, 1, Prot::RW, true);
    map(&mut a, &mut c, &s3, 0x4000_0000, 1, Prot::RW, false);
    a.write_bytes(0x2000_0008, b"ONE").unwrap();
    a.write_bytes(0x3000_0008, b"TWO").unwrap();
    a.write_bytes(0x4000_0008, b"PRV").unwrap();
    c.write_back_all(&phys).unwrap();
    assert_eq!(&s1.contents()[8..11], b"ONE");
    assert_eq!(&s2.contents()[8..11], b"TWO");
    assert_eq!(&s3.contents()[8..11], &pattern(PAGE_SIZE as usize)[8..11], "a private store stays private");
    assert_eq!(c.stats().write_backs, 2);
}

#[test]
fn a_shared_page_filled_after_a_write_back_is_written_back_before_reads() {
    let (phys, mut c) = machine();
    let s = Scratch::new("latewriter", &pattern(PAGE_SIZE as usize));
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    map(&mut a, &mut c, &s, 0x2000_0000, 1, Prot::RW, true);
    // Nothing mapped yet: the cache stops tracking the writer.
    c.write_back(&phys, s.id().key()).unwrap();
    a.write_bytes(0x2000_0020, b"LATE").unwrap();
    c.write_back(&phys, s.id().key()).unwrap();
    assert_eq!(&s.contents()[32..36], b"LATE");
    assert_eq!(c.stats().write_backs, 1);
}

#[test]
fn a_files_pages_filled_in_any_order_sit_in_one_run_of_frames() {
    let (phys, mut cache) = machine();
    let data = pattern(40 * 4096 + 10);
    let f = Scratch::new("span", &data);
    // Clusters filled out of order, with other allocations in between.
    let late = cache.pages(&phys, &f.file, f.id(), 32, 9).unwrap();
    let other = phys.alloc().unwrap();
    let early = cache.pages(&phys, &f.file, f.id(), 0, 16).unwrap();
    let middle = cache.pages(&phys, &f.file, f.id(), 16, 16).unwrap();
    let all: Vec<Frame> = early.iter().chain(&middle).chain(&late).copied().collect();
    assert!(all.windows(2).all(|w| w[1].0 == w[0].0 + 1), "{all:?}");
    assert!(!all.contains(&other));
    for (i, &fr) in all.iter().enumerate() {
        // SAFETY: a cached frame, read only.
        let got = unsafe { std::slice::from_raw_parts(phys.frame_ptr(fr), 4096) };
        let want: Vec<u8> = (0..4096).map(|k| data.get(i * 4096 + k).copied().unwrap_or(0)).collect();
        assert!(got == &want[..], "page {i}");
    }
    // In use: the 41 pages filled and the other frame, not the reservation.
    assert_eq!(phys.stats().frames_in_use, 42);
}

#[test]
fn a_spans_unfilled_frames_go_back_when_its_file_leaves_the_cache_or_memory_runs_short() {
    // 1024 frames: a 100-page file's span fits the budget (1/8 of them).
    let phys = Rc::new(PhysMem::new(1 << 22).unwrap());
    let mut c = PageCache::new();
    let f = Scratch::new("span-back", &pattern(100 << 12));
    let first = c.page(&phys, &f.file, f.id(), 50).unwrap();
    assert_eq!(c.page(&phys, &f.file, f.id(), 51).unwrap().0, first.0 + 1);
    // Memory runs short: the reservation goes first, then the idle pages.
    assert_eq!(c.reclaim(&phys, 2, None), 2);
    assert_eq!(phys.stats().frames_in_use, 0);
    // All 1024 frames can be handed out again: none is left reserved.
    let taken: Vec<Frame> = (0..1024).map(|_| phys.alloc().unwrap()).collect();
    assert!(phys.alloc().is_err());
    taken.into_iter().for_each(|t| phys.release(t));
    // A file dropped from the cache (changed outside the machine, unmapped) gives its
    // reservation back too.
    let g = Scratch::new("span-drop", &pattern(64 << 12));
    c.page(&phys, &g.file, g.id(), 0).unwrap();
    std::fs::write(&g.path, pattern(64 << 12 | 5)).unwrap();
    let g2 = File::open(&g.path).unwrap();
    c.page(&phys, &g2, FileId::of(&g2).unwrap(), 0).unwrap(); // the stale entry dropped, a new span
    // One page in use and the new span's 64 other pages reserved: the rest is free, the
    // old span's frames included.
    let taken: Vec<Frame> = (0..1024 - 1 - 64).map(|_| phys.alloc().unwrap()).collect();
    assert!(phys.alloc().is_err());
    assert_eq!(c.reclaim(&phys, 1, None), 1);
    let more: Vec<Frame> = (0..1 + 64).map(|_| phys.alloc().unwrap()).collect();
    taken.into_iter().chain(more).for_each(|t| phys.release(t));
}
