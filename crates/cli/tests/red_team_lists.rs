//! Issue 40 item 20: one rule for a value given twice in any list flag — refused before
//! any work (exit 2), in one line naming the flag and the value, with nothing on
//! standard output (`numalab_topo::lists::once`). Two spellings of one value (`4K`,
//! `4096`; `50`, `50.0`) are one value; a CPU list's range counts each CPU in it.

mod common;
use common::bounded;

#[test]
fn every_list_flag_refuses_a_value_given_twice() {
    let cases: [(&[&str], &str, &str); 21] = [
        (
            &["bandwidth", "--kernel", "read,read"],
            "--kernel",
            "read is given twice",
        ),
        (
            &["bandwidth", "--mix", "1:0,1:0"],
            "--mix",
            "1:0 is given twice",
        ),
        (
            &["bandwidth", "--mix", "1:1", "--store", "nt,nt"],
            "--store",
            "nt is given twice",
        ),
        (
            &["loaded-latency", "--delays", "0,0,0"],
            "--delays",
            "0 is given twice",
        ),
        (
            &["loaded-latency", "--writes", "50,50.0"],
            "--writes",
            "given twice",
        ),
        (
            &["suite", "cvm", "--apps", "sor,sor"],
            "--apps",
            "'sor' is given twice",
        ),
        (
            &["suite", "collectives", "--sizes", "4K,4096"],
            "--sizes",
            "4 KiB is given twice",
        ),
        (
            &["suite", "collectives", "--threads", "2,2"],
            "--threads",
            "2 is given twice",
        ),
        (
            &["suite", "collectives", "--only", "barrier,barrier"],
            "--only",
            "'barrier' is given twice",
        ),
        (
            &["suite", "placement", "--parts", "1,i"],
            "--parts",
            "'i' is given twice",
        ),
        (
            &["suite", "placement", "--batches", "1,1"],
            "--batches",
            "'1' is given twice",
        ),
        (
            &["suite", "earth", "--parts", "ops,ops"],
            "--parts",
            "ops is given twice",
        ),
        (
            &["suite", "earth", "--groups", "1,2,1"],
            "--groups",
            "1 is given twice",
        ),
        (
            &["intervene", "--placements", "x,x"],
            "--placements",
            "'x' is given twice",
        ),
        (
            &["intervene", "--states", "cexh,cexh"],
            "--states",
            "'cexh' is given twice",
        ),
        (
            &["mpi", "latency", "--sizes", "1:8,4"],
            "--sizes",
            "4 B is given twice",
        ),
        (
            &["mpi", "latency", "--ops", "get,get"],
            "--ops",
            "get is given twice",
        ),
        (&["c2c", "--cpus", "0-1,1"], "'0-1,1'", "1 is given twice"),
        (&["tiers", "--nodes", "0,0"], "--nodes", "0 is given twice"),
        (
            &["latency", "--cpu", "0,0"],
            "thread spec",
            "CPU 0 is given twice",
        ),
        (
            &["bandwidth", "--cpu", "0-1,0"],
            "thread spec",
            "CPU 0 is given twice",
        ),
    ];
    for (args, flag, said) in cases {
        let mut argv = args.to_vec();
        if args[0] != "tiers" {
            argv.push("--dry-run");
        }
        let out = bounded("60", &argv, &[]);
        common::bad_input(&out, &[flag, said], &format!("{argv:?}"));
    }
}
