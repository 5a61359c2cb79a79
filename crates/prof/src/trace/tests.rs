use super::*;

fn header() -> Header {
    Header {
        format: FORMAT.into(),
        version: VERSION,
        mode: "record".into(),
        target: vec!["x".into()],
        interval_ms: 10,
        pages_every: 1,
        runon: None,
        nodes: vec![NodeInfo {
            id: 0,
            cpus: vec![0, 1],
            mem_bytes: 1 << 30,
        }],
        provenance: Provenance::collect("test", "this machine"),
        sources: vec![],
        counters: vec![],
        fields: vec![],
    }
}

fn entries() -> Vec<Entry> {
    vec![
        Entry::Object(Object {
            t_ns: 1,
            id: "t7".into(),
            kind: ObjKind::Thread,
            pid: Some(7),
            tid: Some(7),
            node: None,
            name: "a b".into(),
            parent: Some("p7".into()),
        }),
        Entry::Sample(Sample {
            t_ns: 2,
            obj: "t7".into(),
            v: [
                ("cpu".to_string(), 1.0),
                ("run_ns".to_string(), 12345678901.0),
            ]
            .into(),
        }),
        Entry::Event(Event {
            t_ns: 3,
            obj: "t7".into(),
            what: "exit".into(),
            detail: String::new(),
        }),
        Entry::End(End {
            t_ns: 4,
            reason: "target exited".into(),
            exit_code: Some(3),
            signal: None,
            sampler_cpu_ns: Some(5),
        }),
    ]
}

fn write(path: &Path, h: &Header, n: usize) {
    let mut w = Writer::create(path, h).unwrap();
    for e in entries().iter().take(n) {
        w.put(e).unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn round_trip_keeps_every_entry() {
    let d = std::env::temp_dir().join(format!("nl-trace-{}", std::process::id()));
    let h = header();
    write(&d, &h, 4);
    assert!(is_trace(&d));
    let t = read(&d).unwrap();
    assert_eq!(t.header, h);
    assert_eq!(t.objects.len(), 1);
    assert_eq!(t.samples[0].v["run_ns"], 12345678901.0);
    assert_eq!(t.events[0].what, "exit");
    assert_eq!(t.end.as_ref().unwrap().exit_code, Some(3));
    assert!(!t.torn_tail);
    assert_eq!(t.node_of_cpu(1), Some(0));
    assert_eq!(t.span_ns(), 4);
    std::fs::remove_file(&d).unwrap();
}

#[test]
fn a_torn_last_line_is_skipped_but_damage_elsewhere_is_an_error() {
    let d = std::env::temp_dir().join(format!("nl-torn-{}", std::process::id()));
    write(&d, &header(), 3);
    let mut bytes = std::fs::read(&d).unwrap();
    let full = bytes.clone();
    bytes.extend_from_slice(b"{\"type\":\"sample\",\"t_ns\":5,\"ob");
    let t = parse(&bytes).unwrap();
    assert!(t.torn_tail && t.end.is_none() && t.samples.len() == 1);
    // The same damage followed by more lines is not a torn tail.
    let mut mid = full.clone();
    mid.extend_from_slice(b"{\"type\":\"sam\n{\"type\":\"end\",\"t_ns\":9,\"reason\":\"x\",\"exit_code\":null,\"signal\":null}\n");
    assert!(parse(&mid).unwrap_err().starts_with("line 5"));
    // A newer version and a foreign file are refused with the reason.
    // Version 1 traces written before sampler_cpu_ns existed still read.
    let old = String::from_utf8(full.clone()).unwrap()
        + "{\"type\":\"end\",\"t_ns\":9,\"reason\":\"x\",\"exit_code\":null,\"signal\":null}\n";
    assert_eq!(
        parse(old.as_bytes()).unwrap().end.unwrap().sampler_cpu_ns,
        None
    );
    let newer = String::from_utf8(full)
        .unwrap()
        .replacen("\"version\":1", "\"version\":99", 1);
    assert!(parse(newer.as_bytes()).unwrap_err().contains("newer"));
    assert!(parse(b"[1,2]\n")
        .unwrap_err()
        .contains("not a numalab trace"));
    assert!(parse(b"").unwrap_err().contains("empty"));
    std::fs::remove_file(&d).unwrap();
}

#[test]
fn a_device_that_refuses_writes_is_an_error_never_moved_or_removed() {
    // /dev/full takes no bytes and reads back endless zeros: nothing to copy, and the
    // device must stay.
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full here");
        return;
    }
    // A device is refused before it is opened (numalab_results::outpath).
    let e = Writer::create(full, &header())
        .err()
        .expect("a device is no trace file");
    assert!(e.to_string().contains("a character device"), "{e}");
    assert!(full.exists());
}

#[test]
fn a_sample_on_a_cpu_the_machine_lacks_is_refused_naming_it() {
    let h = header();
    let mut text = serde_json::to_string(&Entry::Header(Box::new(h))).unwrap() + "\n";
    let s = Entry::Sample(Sample {
        t_ns: 2,
        obj: "t7".into(),
        v: [("cpu".to_string(), 999.0)].into(),
    });
    text += &(serde_json::to_string(&s).unwrap() + "\n");
    let e = parse(text.as_bytes()).unwrap_err();
    assert!(
        e.contains("line 2") && e.contains("CPU 999") && e.contains("0-1"),
        "{e}"
    );
}
