//! The low window (`morph_mem::window`): the first address space made gets its window at
//! host address 0, where guest address `v` is host address `v`; a space that maps guest
//! page 0 leaves it (page 0's host address would be null there), keeping its memory; a
//! fork of such a space never takes it. One test in its own process, so that no other
//! test holds the low slot meanwhile.

use std::rc::Rc;

use morph_mem::{AddressSpace, PhysMem, Prot};

#[test]
fn the_first_space_lives_at_host_address_0_until_it_maps_page_0() {
    let phys = Rc::new(PhysMem::new(1 << 26).unwrap());
    let mut a = AddressSpace::new(phys.clone()).unwrap();
    assert_eq!(a.host_base(), 0, "the host's lowest 8 GiB are free in a static PIE");
    assert_eq!((phys.stats().address_spaces, phys.stats().low_windows), (1, 1));

    let va = 0x1000_0000u32;
    a.map_anon(va, 0x2000, Prot::RW, false, "").unwrap();
    a.write_u32(va + 4, 0x1234_5678).unwrap();
    assert_eq!(a.host_ptr(va + 4) as usize, (va + 4) as usize);
    // SAFETY: the page was just written through the address space, so it is hosted
    // readable at its host address, which is its guest address.
    assert_eq!(unsafe { std::ptr::read_unaligned((va + 4) as usize as *const u32) }, 0x1234_5678);

    // A second space while the first holds the low slot: a slot of the region.
    let b = AddressSpace::new(phys.clone()).unwrap();
    assert_ne!(b.host_base(), 0);
    drop(b);

    // Mapping page 0 moves the first space out, its memory intact; the low slot is
    // then free for the next space made.
    a.map_anon(0, 0x1000, Prot::RW, false, "").unwrap();
    assert_ne!(a.host_base(), 0);
    assert_eq!(a.read_u32(va + 4).unwrap(), 0x1234_5678);
    a.write_u32(0, 7).unwrap();
    assert_eq!(a.read_u32(0).unwrap(), 7);
    let c = AddressSpace::new(phys.clone()).unwrap();
    assert_eq!(c.host_base(), 0);
    drop(c);

    // A fork of a space that maps page 0 does not take the (free) low slot.
    let child = a.fork().unwrap();
    assert_ne!(child.host_base(), 0);
    assert_eq!(child.read_u32(0).unwrap(), 7);
    assert_eq!(child.read_u32(va + 4).unwrap(), 0x1234_5678);
    assert_eq!(phys.stats().low_windows, 2);
}
