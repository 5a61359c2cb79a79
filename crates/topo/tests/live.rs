//! Binding with proof on this machine (any Linux box with at least one node).

use numalab_topo::bind::{pin_current_thread, verify_threads};
use numalab_topo::buffer::Buffer;
use numalab_topo::plan::{resolve_memory, resolve_threads};
use numalab_topo::*;

fn host() -> Host {
    Host::load(&TopologySource::ThisSystem).unwrap()
}

fn first_thread(h: &Host) -> Vec<ThreadPlacement> {
    let req = ThreadRequest {
        spec: ThreadSpec::Compact,
        count: Some(1),
        smt: Smt::Last,
        kind: CoreKind::Any,
    };
    resolve_threads(&h.machine, &req).unwrap()
}

#[test]
fn pinned_thread_reports_its_cpu() {
    let h = host();
    assert!(h.machine.this_system);
    // CPU 1 where it exists (the check), else the last usable CPU.
    let cpu = h
        .machine
        .pu(1)
        .map_or(h.machine.pus.last().unwrap().os, |p| p.os);
    let proof =
        std::thread::scope(|s| s.spawn(|| pin_current_thread(&h, cpu)).join().unwrap()).unwrap();
    assert_eq!(proof.observed_cpu, cpu);
    assert_eq!(proof.bound_to, cpu.to_string());
}

#[test]
fn every_planned_thread_runs_where_planned() {
    let h = host();
    let req = ThreadRequest {
        spec: ThreadSpec::Compact,
        count: None,
        smt: Smt::Last,
        kind: CoreKind::Any,
    };
    let plan = resolve_threads(&h.machine, &req).unwrap();
    let proofs = verify_threads(&h, &plan).unwrap();
    for (t, p) in plan.iter().zip(&proofs) {
        assert_eq!(t.pu.os, p.observed_cpu);
    }
}

#[test]
fn buffer_on_node_0_is_verified_page_by_page() {
    let h = host();
    let node = h.machine.memory_nodes()[0];
    let mem = resolve_memory(
        &h.machine,
        &MemSpec::Node(node),
        PageSize::Base,
        &first_thread(&h),
    )
    .unwrap();
    let size = 8 << 20;
    let buf = Buffer::allocate(&h, &mem, size).unwrap();
    let p = &buf.proof;
    assert_eq!(p.pages_checked, size / 4096);
    assert_eq!(p.pages_per_node.get(&node), Some(&(size / 4096)));
    assert_eq!(p.pages_per_node.len(), 1);
    assert_eq!(p.pages_missing, 0);
    assert_eq!(
        p.thp_bytes.unwrap_or(0),
        0,
        "4k buffers must not be THP-backed"
    );
    // The memory is usable.
    unsafe {
        std::ptr::write_volatile(buf.as_ptr().add(buf.len() - 1), 7);
        assert_eq!(std::ptr::read_volatile(buf.as_ptr().add(buf.len() - 1)), 7);
    }
}

#[test]
fn missing_node_and_cpu_are_refused_with_valid_ranges() {
    let h = host();
    let bad_node = h.machine.nodes.iter().map(|n| n.os).max().unwrap() + 1;
    let e = resolve_memory(
        &h.machine,
        &MemSpec::Node(bad_node),
        PageSize::Base,
        &first_thread(&h),
    )
    .unwrap_err();
    assert!(e.is_user_error());
    assert!(e.to_string().contains(&format!("node {bad_node}")), "{e}");
    assert!(e.to_string().contains(&h.machine.memory_node_list()), "{e}");
    let bad_cpu = h.machine.pus.iter().map(|p| p.os).max().unwrap() + 8;
    let req = ThreadRequest {
        spec: ThreadSpec::parse(&bad_cpu.to_string()).unwrap(),
        count: None,
        smt: Smt::Last,
        kind: CoreKind::Any,
    };
    let e = resolve_threads(&h.machine, &req).unwrap_err().to_string();
    assert!(
        e.contains(&format!("CPU {bad_cpu}")) && e.contains(&h.machine.cpu_list()),
        "{e}"
    );
}

#[test]
fn huge_pages_without_a_reservation_say_how_to_reserve() {
    let h = host();
    let node = h.machine.memory_nodes()[0];
    let free_1g = h
        .machine
        .node(node)
        .unwrap()
        .pages
        .iter()
        .find(|p| p.size == 1 << 30)
        .and_then(|p| p.free);
    // Ask for more 1 GiB pages than are free: the refusal names the count and the sysfs knob.
    let want = free_1g.unwrap_or(0) + 1;
    let mem = resolve_memory(
        &h.machine,
        &MemSpec::Node(node),
        PageSize::Huge1G,
        &first_thread(&h),
    )
    .unwrap();
    match Buffer::allocate(&h, &mem, want << 30) {
        Err(e) => {
            let msg = e.to_string();
            assert!(e.is_user_error(), "{msg}");
            assert!(msg.contains("1g") || msg.contains("does not fit"), "{msg}");
        }
        Ok(_) => panic!("allocating more 1 GiB pages than are free succeeded"),
    }
}
