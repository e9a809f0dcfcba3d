//! Every preset loads; bad descriptions fail with one line naming file, field and value.

use smtsched_model::*;

#[test]
fn every_machine_preset_loads_and_validates() {
    for p in MACHINE_PRESETS {
        let m = load_machine(p.name, &[]).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(m.name, p.name, "preset name and file name agree");
        for cpu in 0..m.logical_cpus() {
            let loc = m.cpu_location(cpu).unwrap();
            assert_eq!(
                m.cpu_at(loc.core, loc.thread),
                cpu,
                "numbering round-trips on {}",
                p.name
            );
        }
    }
}

#[test]
fn every_workload_preset_loads_and_validates() {
    for p in WORKLOAD_PRESETS {
        let w = load_workload(p.name, &[]).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(w.name, p.name);
    }
    assert_eq!(SPEC2000.len(), 22, "thesis Table 3.3 has 22 programs");
    assert_eq!(expand_workload_list("all").len(), 22);
}

#[test]
fn northwood_numbers_siblings_adjacently_and_modern_cores_thread_major() {
    let n = load_machine("northwood", &[]).unwrap();
    // Thesis §4.4.4.1: the package is the CPU number without its lowest bit.
    for cpu in 0..4 {
        assert_eq!(n.cpu_location(cpu).unwrap().package, cpu >> 1);
    }
    let z = load_machine("smt2-modern", &[]).unwrap();
    assert_eq!(
        z.cpu_location(3).unwrap().core,
        z.cpu_location(11).unwrap().core
    );
    assert!(n.cpu_location(4).is_none());
}

fn bad_machine(overrides: &[&str]) -> String {
    let o: Vec<Override> = overrides.iter().map(|s| s.parse().unwrap()).collect();
    load_machine("northwood", &o).unwrap_err().to_string()
}

#[test]
fn bad_cache_geometry_names_field_and_value() {
    let e = bad_machine(&["cache.L1D.ways=0"]);
    assert_eq!(
        e,
        "machines/northwood.toml with --set cache.L1D.ways=0: cache.L1D.ways = 0: must be at least 1"
    );
    let e = bad_machine(&["cache.L2.size_bytes=0"]);
    assert!(e.contains("cache.L2.size_bytes = 0"), "{e}");
    let e = bad_machine(&["cache.L1D.line_bytes=48"]);
    assert!(
        e.contains("cache.L1D.line_bytes = 48") && e.contains("power of two"),
        "{e}"
    );
    // 12 KB, 4-way, 64-byte lines = 48 sets: not a power of two.
    let e = bad_machine(&["cache.L1D.size_bytes=12288"]);
    assert!(
        e.contains("cache.L1D.size_bytes = 12288") && e.contains("48 sets"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn overrides_must_name_existing_fields() {
    let e = bad_machine(&["cache.L1D.wayz=4"]);
    assert!(e.contains("no key cache.L1D.wayz"), "{e}");
}

#[test]
fn malformed_toml_reports_file_line_and_column() {
    let dir = std::env::temp_dir().join(format!("smtsched-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.toml");
    std::fs::write(
        &path,
        "name = \"x\"\nclock_ghz = 2.0\n[topology\npackages = 1\n",
    )
    .unwrap();
    let e = load_machine(path.to_str().unwrap(), &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&format!("{}:3:", path.display())), "{e}");
    assert!(!e.contains('\n'));
    std::fs::write(&path, "name = \"x\"\nclock_ghz = \"fast\"\n").unwrap();
    let e = load_machine(path.to_str().unwrap(), &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&format!("{}:2:", path.display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_preset_lists_the_known_ones() {
    let e = load_machine("pentium5", &[]).unwrap_err().to_string();
    assert!(
        e.contains("unknown machine \"pentium5\"") && e.contains("northwood"),
        "{e}"
    );
    let e = load_workload("gzip", &[]).unwrap_err().to_string();
    assert!(e.contains("gzip-like"), "{e}");
}

#[test]
fn workload_fractions_are_checked() {
    let src = Source {
        origin: Origin::Inline("w.toml".into()),
        text: r#"name = "w"
[[phase]]
instructions = 10
ilp = 1.0
loads = 0.6
stores = 0.3
branches = 0.2
branch_mispredict_rate = 0.0
[[phase.code]]
size_bytes = 64
weight = 1.0
[[phase.data]]
size_bytes = 64
weight = 1.0
pattern = "random"
"#
        .into(),
    };
    let e = workload_from_source(&src, &[]).unwrap_err().to_string();
    assert!(
        e.starts_with("w.toml: phase[0].loads = 0.6") && e.contains("more than 1"),
        "{e}"
    );
}

#[test]
fn power_law_miss_ratio_matches_its_closed_form() {
    // h = 100, S = 1_000_000, α = 0.5: a cache of C bytes misses
    // ((C + h)^-½ − (S + h)^-½) / (h^-½ − (S + h)^-½).
    let law = PowerLaw {
        size_bytes: 1_000_000,
        hot_bytes: 100,
        exponent: 0.5,
    };
    let f = |x: f64| 1.0 / x.sqrt();
    let expect = |c: f64| (f(c + 100.0) - f(1_000_100.0)) / (f(100.0) - f(1_000_100.0));
    for c in [0.0, 8192.0, 65536.0, 524288.0] {
        assert!((law.miss_ratio(c) - expect(c)).abs() < 1e-12);
    }
    assert_eq!(law.miss_ratio(2_000_000.0), 0.0);
    // The quantile function inverts the distribution: P(X >= quantile(u)) = 1 - u.
    for u in [0.1, 0.5, 0.9, 0.99] {
        let x = law.quantile(u);
        assert!((law.miss_ratio(x) - (1.0 - u)).abs() < 1e-9, "u={u}");
    }
}

/// A region name is one memory within its half: two user regions of one name must agree on
/// their size; a user region and a kernel region of one name are different memory.
#[test]
fn region_names_are_one_memory_within_user_or_kernel() {
    let profile = |user_b: u64, kernel_b: u64| {
        format!(
            "name = \"w\"\n[[phase]]\ninstructions = 1000\nilp = 1.0\nloads = 0.3\nstores = 0.0\n\
             branches = 0.1\nbranch_mispredict_rate = 0.0\n\
             [[phase.code]]\nsize_bytes = 64\nweight = 1.0\n\
             [[phase.data]]\nname = \"buf\"\nsize_bytes = 4096\nweight = 1.0\npattern = \"random\"\n\
             [[phase.data]]\nname = \"buf\"\nsize_bytes = {user_b}\nweight = 1.0\npattern = \"random\"\n\
             [phase.kernel]\nshare = 0.5\ninstructions_per_entry = 100\nilp = 1.0\nloads = 0.3\n\
             stores = 0.0\nbranches = 0.1\nbranch_mispredict_rate = 0.0\n\
             [[phase.kernel.code]]\nname = \"ktext\"\nsize_bytes = 64\nweight = 1.0\n\
             [[phase.kernel.data]]\nname = \"buf\"\nsize_bytes = {kernel_b}\nweight = 1.0\n\
             pattern = \"random\"\n"
        )
    };
    let load = |text: String| {
        workload_from_source(
            &Source {
                origin: Origin::Inline("w".into()),
                text,
            },
            &[],
        )
    };
    assert!(load(profile(4096, 8192)).is_ok());
    let err = load(profile(2048, 8192)).unwrap_err().to_string();
    assert!(
        err.contains("data region \"buf\".size_bytes") && err.contains("4096"),
        "{err}"
    );
}
