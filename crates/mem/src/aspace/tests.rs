use super::*;

/// An empty address space over 1 GiB of guest memory.
pub(crate) fn space() -> AddressSpace {
    AddressSpace::new(Rc::new(PhysMem::new(1 << 30).unwrap())).unwrap()
}

#[test]
fn the_memory_limit_counts_frames_in_use_not_frames_ever_handed_out() {
    // 1024 frames of guest memory; ten 512-frame mappings made and dropped in turn.
    let phys = Rc::new(PhysMem::new(1 << 22).unwrap());
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    for round in 0..10u8 {
        a.map_anon(0x1000_0000, 2 << 20, Prot::RW, false, "").unwrap_or_else(|e| panic!("round {round}: {e}"));
        a.write_u8(0x1000_0000 + 4096 * 7, round).unwrap();
        assert_eq!(a.read_u8(0x1000_0000 + 4096 * 7).unwrap(), round);
        assert_eq!(a.read_u8(0x1000_0000 + 4096 * 8).unwrap(), 0, "a reused frame must read as zero");
        a.write_u8(0x1000_0000 + 4096 * 8, 0xff).unwrap();
        a.unmap(0x1000_0000, 2 << 20).unwrap();
    }
    assert!(a.map_anon(0x1000_0000, 8 << 20, Prot::RW, false, "").is_err(), "2048 frames exceed the limit");
}

#[test]
fn anon_read_write_and_faults() {
    let mut a = space();
    a.map_anon(0x1000_0000, 0x2000, Prot::RW, false, "").unwrap();
    a.write_u32(0x1000_0ffe, 0xdead_beef).unwrap(); // straddles two pages
    assert_eq!(a.read_u32(0x1000_0ffe).unwrap(), 0xdead_beef);
    assert_eq!(a.read_u8(0x2000_0000).unwrap_err().kind, MemFaultKind::Unmapped);
    a.protect(0x1000_1000, 0x1000, Prot::READ).unwrap();
    let e = a.write_u8(0x1000_1004, 1).unwrap_err();
    assert_eq!((e.kind, e.addr, e.write), (MemFaultKind::Protection, 0x1000_1004, true));
    a.unmap(0x1000_0000, 0x1000).unwrap();
    assert!(a.read_u8(0x1000_0000).is_err());
    assert_eq!(a.read_u8(0x1000_1001).unwrap(), 0xde);
}

#[test]
fn fork_is_copy_on_write() {
    let mut a = space();
    a.map_anon(0x8000, 0x1000, Prot::RW, false, "").unwrap();
    a.write_u32(0x8000, 1).unwrap();
    let mut b = a.fork().unwrap();
    b.write_u32(0x8000, 2).unwrap();
    assert_eq!(a.read_u32(0x8000).unwrap(), 1);
    assert_eq!(b.read_u32(0x8000).unwrap(), 2);
}

#[test]
fn a_copy_on_write_break_in_anonymous_memory_copies_its_neighbours() {
    let reach = super::COW_ANON_REACH;
    let pages = 2 * reach + 3; // the written page, its reach either side, one more each side
    let mut a = space();
    a.map_anon(0x8000, pages * 0x1000, Prot::RW, false, "").unwrap();
    for i in 0..pages {
        a.write_u32(0x8000 + i * 0x1000, i).unwrap();
    }
    let mut child = a.fork().unwrap();
    let mid = reach + 1;
    child.write_u32(0x8000 + mid * 0x1000, 99).unwrap();
    // The pages within the reach were copied for the child at once; the first and the
    // last are still shared.
    let cow: Vec<bool> = (0..pages).map(|i| child.pte(0x8000 + i * 0x1000).cow()).collect();
    let want: Vec<bool> = (0..pages).map(|i| i == 0 || i == pages - 1).collect();
    assert_eq!(cow, want);
    let (first, last) = (child.pte(0x9000).frame().0, child.pte(0x8000 + (pages - 2) * 0x1000).frame().0);
    assert_eq!(last, first + pages - 3, "the copies are consecutive frames (one host mapping)");
    for i in 0..pages {
        assert_eq!(a.read_u32(0x8000 + i * 0x1000).unwrap(), i, "the parent keeps its page {i}");
        let want = if i == mid { 99 } else { i };
        assert_eq!(child.read_u32(0x8000 + i * 0x1000).unwrap(), want, "the child's page {i}");
    }
    a.write_u32(0x9000, 7).unwrap();
    assert_eq!(child.read_u32(0x9000).unwrap(), 1, "a copied page is the child's own");
}

#[test]
fn an_unshared_copy_on_write_space_becomes_writable_at_the_first_write() {
    let mut a = space();
    a.map_anon(0x8000, 0x4000, Prot::RW, false, "").unwrap();
    a.map_anon(0x20000, 0x1000, Prot::RW, false, "another VMA").unwrap();
    a.write_u32(0x9000, 7).unwrap();
    a.write_u32(0x20000, 8).unwrap();
    let generation = a.map_gen;
    let b = a.fork().unwrap();
    assert_eq!(a.map_gen, generation, "fork changes no frame");
    assert!((0..4).all(|i| a.pte(0x8000 + i * 0x1000).cow()));
    drop(b); // the child exec'd or exited: the frames are unshared again
    a.write_u32(0x8000, 1).unwrap();
    for va in [0x8000, 0x9000, 0xa000, 0xb000, 0x20000] {
        let p = a.pte(va);
        assert!(p.writable() && !p.cow(), "page {va:#x}");
    }
    a.write_u32(0x20000, 9).unwrap(); // through the host mapping, made writable too
    assert_eq!(a.read_u32(0x20000).unwrap(), 9);
    // The fast path writes through the host mapping: it must be writable again.
    a.write_u32(0xb000, 3).unwrap();
    assert_eq!(a.read_u32(0x9000).unwrap(), 7);
    assert_eq!(a.read_u32(0xb000).unwrap(), 3);
    assert_eq!(a.map_gen, generation, "no frame changed");
}

#[test]
fn the_host_window_fills_at_first_access() {
    let mut a = space();
    a.map_anon(0x8000, 0x4000, Prot::RW, false, "").unwrap();
    assert_eq!(a.host_maps(), 0, "mapping costs no host call");
    assert!((0..4).all(|i| !a.pte(0x8000 + i * 0x1000).hosted()));
    a.write_u32(0x9000, 7).unwrap();
    // The four fresh frames are consecutive: one host mapping covers them all.
    assert_eq!(a.host_maps(), 1);
    assert!((0..4).all(|i| a.pte(0x8000 + i * 0x1000).hosted()));
    let mut child = a.fork().unwrap();
    assert!((0..4).all(|i| !child.pte(0x8000 + i * 0x1000).hosted()), "a child starts with an empty window");
    assert_eq!(child.host_maps(), 0);
    // A checked range is hosted: the OS layer hands its host address to the host.
    child.check_read(0x9000, 4).unwrap();
    // SAFETY: check_read hosted the page.
    assert_eq!(unsafe { std::ptr::read_unaligned(child.host_ptr(0x9000).cast::<u32>()) }, 7);
    child.write_u32(0x8000, 9).unwrap();
    assert_eq!((child.read_u32(0x8000).unwrap(), a.read_u32(0x8000).unwrap()), (9, 0));
    // Unmapping a hosted page makes the window inaccessible there again.
    a.unmap(0x9000, 0x1000).unwrap();
    assert!(!a.pte(0x9000).hosted() && a.read_u32(0x9000).is_err());
    assert!(!a.host_in_at(0x9000, false), "nothing to host where nothing is mapped");
}

#[test]
fn the_mapping_generation_moves_only_when_a_mapped_page_changes() {
    let mut a = space();
    let g = a.map_gen;
    a.map_anon(0x8000, 0x2000, Prot::RW, false, "").unwrap();
    a.map_anon(0x20000, 0x1000, Prot::READ, false, "").unwrap();
    a.protect(0x8000, 0x1000, Prot::READ).unwrap();
    assert_eq!(a.map_gen, g, "new mappings where nothing was, and dropping write, keep it");
    a.protect(0x8000, 0x1000, Prot::NONE).unwrap();
    assert_eq!(a.map_gen, g + 1, "a page became unreadable");
    a.map_anon(0x9000, 0x1000, Prot::RW, false, "").unwrap();
    assert_eq!(a.map_gen, g + 2, "a mapped page changed frame");
    a.unmap(0x20000, 0x1000).unwrap();
    assert_eq!(a.map_gen, g + 3, "a page went away");
    a.unmap(0x20000, 0x1000).unwrap();
    assert_eq!(a.map_gen, g + 3, "nothing was there");
}

#[test]
fn a_forked_child_shares_the_mapping_number_until_either_remaps() {
    let mut a = space();
    a.map_anon(0x8000, 0x2000, Prot::RW, false, "").unwrap();
    assert_ne!(a.mapping_id(), space().mapping_id(), "two spaces, two numbers");
    let mut child = a.fork().unwrap();
    assert_eq!(child.mapping_id(), a.mapping_id(), "identical mappings after fork");
    let (before, parent) = (child.mapping_id(), a.mapping_id());
    child.write_u32(0x8000, 1).unwrap();
    a.write_u32(0x9000, 2).unwrap();
    assert_eq!((child.mapping_id(), a.mapping_id()), (before, parent), "copy-on-write of data maps no code");
    child.unmap(0x9000, 0x1000).unwrap();
    assert_ne!(child.mapping_id(), before, "the child remapped");
    assert_eq!(a.mapping_id(), parent, "the parent did not");
    a.protect(0x8000, 0x1000, Prot::NONE).unwrap();
    assert_ne!(a.mapping_id(), parent);
    assert_ne!(a.mapping_id(), child.mapping_id());
}

#[test]
fn a_mapping_number_is_live_while_a_space_has_it() {
    let mut a = space();
    a.map_anon(0x8000, 0x2000, Prot::RW, false, "").unwrap();
    let phys = a.phys().clone();
    let first = a.mapping_id();
    assert!(phys.mapping_live(first));
    let mut child = a.fork().unwrap();
    a.unmap(0x9000, 0x1000).unwrap();
    assert!(phys.mapping_live(first), "the child still has it");
    assert!(phys.mapping_live(a.mapping_id()));
    child.unmap(0x8000, 0x1000).unwrap();
    assert!(!phys.mapping_live(first), "no space has it any more");
    let (ca, cc) = (a.mapping_id(), child.mapping_id());
    drop(child);
    assert!(!phys.mapping_live(cc) && phys.mapping_live(ca));
    drop(a);
    assert!(!phys.mapping_live(ca));
}

#[test]
fn private_memory_is_demand_zero_but_promised() {
    // 1024 frames of guest memory.
    let phys = Rc::new(PhysMem::new(1 << 22).unwrap());
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    a.map_anon(0x1000_0000, 3 << 20, Prot::RW, false, "").unwrap();
    assert_eq!(phys.stats().frames_in_use, 0, "no frame before a touch");
    assert!(a.translate(0x1000_0000).is_none() && a.pte(0x1000_0000).present());
    assert!(a.map_anon(0x2000_0000, (1 << 20) + 0x1000, Prot::RW, false, "").is_err(), "768 + 257 pages promised");
    assert_eq!(a.read_u32(0x1000_5000).unwrap(), 0);
    a.write_u32(0x1000_6000, 5).unwrap();
    let used = phys.stats().frames_in_use;
    assert!((1..=17).contains(&used), "frames for the touched pages and a few around them: {used}");
    let child = a.fork().unwrap();
    assert_eq!(phys.stats().frames_in_use, used, "fork shares frames and promises the rest");
    drop(child);
    a.unmap(0x1000_0000, 3 << 20).unwrap();
    assert_eq!(phys.stats().frames_in_use, 0);
    a.map_anon(0x2000_0000, 4 << 20, Prot::RW, false, "").unwrap(); // everything, again
}

#[test]
fn top_down_placement() {
    let mut a = space();
    a.map_anon(0xb000_0000, 0x1000, Prot::RW, false, "").unwrap();
    let p = a.find_free_top_down(0x3000, 0x1000_0000, 0xb000_1000).unwrap();
    assert_eq!(p, 0xb000_0000 - 0x3000);
}

#[test]
fn a_fork_leaves_the_parents_host_protection_to_its_next_run() {
    let mut a = space();
    a.map_anon(0x8000, 0x4000, Prot::RW, false, "").unwrap();
    a.write_u32(0x9000, 7).unwrap(); // hosts the four pages writable, one host mapping
    let calls = a.host_maps();
    let child = a.fork().unwrap();
    assert_eq!(a.host_maps(), calls, "fork makes no host call for the parent");
    assert!((0..4).all(|i| a.pte(0x8000 + i * 0x1000).cow()));
    // The child still shares the frames: settling write-protects them, once.
    a.settle_fork().unwrap();
    assert_eq!(a.host_maps(), calls + 1);
    a.settle_fork().unwrap();
    assert_eq!(a.host_maps(), calls + 1, "settled once");
    assert!(a.pte(0x9000).cow());
    drop(child);

    // A child gone before its parent runs again (a 2.6.12 child runs first and execs):
    // nothing to protect, and the pages are the parent's own again.
    let mut b = space();
    b.map_anon(0x8000, 0x4000, Prot::RW, false, "").unwrap();
    b.write_u32(0x9000, 7).unwrap();
    let calls = b.host_maps();
    drop(b.fork().unwrap());
    b.settle_fork().unwrap();
    assert_eq!(b.host_maps(), calls, "no host call");
    assert!((0..4).all(|i| !b.pte(0x8000 + i * 0x1000).cow() && b.pte(0x8000 + i * 0x1000).hosted()));
    b.write_u32(0x9000, 8).unwrap();
    assert_eq!((b.read_u32(0x9000).unwrap(), b.host_maps()), (8, calls));

    // A change of the host mapping before the run settles the page on its own: an
    // mprotect by the parent write-protects it for good (the child still shares it).
    let mut c = space();
    c.map_anon(0x8000, 0x1000, Prot::RW, false, "").unwrap();
    c.write_u32(0x8000, 1).unwrap();
    let child = c.fork().unwrap();
    c.protect(0x8000, 0x1000, Prot::READ).unwrap();
    c.protect(0x8000, 0x1000, Prot::RW).unwrap();
    let calls = c.host_maps();
    c.settle_fork().unwrap();
    assert_eq!(c.host_maps(), calls, "nothing left stale");
    c.write_u32(0x8000, 2).unwrap();
    assert_eq!((c.read_u32(0x8000).unwrap(), child.read_u32(0x8000).unwrap()), (2, 1));
}

#[test]
fn locked_pages_join_split_and_follow_unmap_and_moves() {
    let mut a = space();
    a.map_anon(0x1000_0000, 0x10000, Prot::RW, false, "").unwrap();
    a.lock_pages(0x1000_0000, 0x1000_2000);
    a.lock_pages(0x1000_1000, 0x1000_4000); // overlaps: counted once
    a.lock_pages(0x1000_4000, 0x1000_5000); // joins
    assert_eq!(a.locked_bytes(), 0x5000);
    assert_eq!(a.locked_within(0x1000_1000, 0x1000_3000), 0x2000);
    a.unlock_pages(0x1000_2000, 0x1000_3000); // splits
    assert_eq!(a.locked_bytes(), 0x4000);
    a.unmap(0x1000_0000, 0x1000).unwrap();
    assert_eq!(a.locked_bytes(), 0x3000);
    a.move_pages(0x1000_3000, 0x2000_0000, 0x2000).unwrap();
    assert_eq!(a.locked_within(0x2000_0000, 0x2000_2000), 0x2000);
    assert_eq!(a.locked_bytes(), 0x3000);
    assert_eq!(a.fork().unwrap().locked_bytes(), 0);
}
