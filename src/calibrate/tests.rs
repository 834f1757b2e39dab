use super::*;

fn row(format: &str, k: u64, correct: usize, ms: u64) -> Row {
    Row {
        format: format.into(),
        candidates: k,
        cases: 6,
        valid: 6,
        correct,
        total_tokens: 1000,
        model_ms: ms,
        refused: Vec::new(),
    }
}

#[test]
fn every_case_is_a_one_line_change_with_its_own_path() {
    for c in &CASES {
        let before: Vec<&str> = c.text.lines().collect();
        let after: Vec<&str> = c.expected.lines().collect();
        assert_eq!(before.len(), after.len(), "{}", c.path);
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert_eq!(changed, 1, "{}", c.path);
        assert!(c.expected.ends_with('\n'));
    }
    let mut paths: Vec<&str> = CASES.iter().map(|c| c.path).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), CASES.len());
}

#[test]
fn formats_are_read_by_their_policy_names() {
    for f in FORMATS {
        assert_eq!(format_from_name(f.name()), Some(f));
    }
    assert_eq!(format_from_name("auto"), None);
    assert_eq!(format_from_name("diff"), None);
}

#[test]
fn the_most_correct_wins_and_a_tie_goes_to_the_faster() {
    let rows = vec![
        row("json", 1, 4, 8000),
        row("json", 4, 5, 30000),
        row("udiff", 1, 5, 20000),
        row("udiff", 4, 2, 1000),
    ];
    let rec = recommend(&rows).unwrap();
    assert_eq!((rec.format.as_str(), rec.candidates), ("udiff", 1));
    assert_eq!(rec.correct, 5);
    assert!((rec.seconds_per_correct - 4.0).abs() < 1e-9);
    // An exact tie keeps the first run.
    let rows = vec![row("json", 1, 3, 3000), row("udiff", 1, 3, 3000)];
    assert_eq!(recommend(&rows).unwrap().format, "json");
    // Nothing correct: nothing recommended.
    assert_eq!(recommend(&[row("json", 1, 0, 5000)]), None);
    assert_eq!(recommend(&[]), None);
}

#[test]
fn the_candidate_counts_are_one_and_the_default() {
    let p = policy::parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).unwrap();
    assert_eq!(
        candidate_counts(&p),
        vec![1, policy::LOCAL_DEFAULT_CANDIDATES]
    );
    let p = policy::parse(
        "[provider]\nkind = \"llamacpp\"\n[sampling]\ncandidates = 6\n",
        Path::new("p.toml"),
    )
    .unwrap();
    assert_eq!(candidate_counts(&p), vec![1, 6]);
    let p = policy::parse(
        "[provider]\nkind = \"llamacpp\"\n[sampling]\ncandidates = 1\n",
        Path::new("p.toml"),
    )
    .unwrap();
    assert_eq!(
        candidate_counts(&p),
        vec![1, policy::LOCAL_DEFAULT_CANDIDATES]
    );
}

const ODD: &str = "# my policy\n\n[provider]\nkind   =  \"llamacpp\"   # local\nbase_url = \"http://127.0.0.1:8080/v1\"\n\n[paths]\nallowed = [ \"src/**\" ,\"tests/**\" ]\n\n[edit]\n# how the model writes\nformat =   \"udiff\"    # was measured once\n\n[validation]\ncommands = [\"cargo test\"]\n\n[sampling]\nparallel = 2\n\n# trailing words\n";

fn rec() -> Recommendation {
    Recommendation {
        format: "json".into(),
        candidates: 4,
        correct: 5,
        cases: 6,
        seconds_per_correct: 2.25,
    }
}

#[test]
fn a_case_policy_keeps_the_provider_and_drops_checks_and_path_rules() {
    let text = case_policy(ODD, EditFormat::SearchReplace, 4).unwrap();
    let p = policy::parse(&text, Path::new("p.toml")).unwrap();
    assert_eq!(p.edit.format, EditFormat::SearchReplace);
    assert_eq!(p.sampling.candidates, Some(4));
    assert_eq!(p.sampling.parallel, Some(2));
    assert!(p.validation.commands.is_empty());
    assert_eq!(p.base_url(), "http://127.0.0.1:8080/v1");
    assert!(text.contains("allowed = [\"**\"]"), "{text}");
    assert!(!text.contains("src/**"), "{text}");
}

#[test]
fn write_changes_only_the_edit_and_sampling_lines() {
    let rows = vec![row("json", 4, 5, 11250), row("udiff", 1, 2, 9000)];
    let out = record_choice(ODD, &rec(), &rows, "tiny", "2026-01-02").unwrap();
    let p = policy::parse(&out, Path::new("p.toml")).unwrap();
    assert_eq!(p.edit.format, EditFormat::Json);
    assert_eq!(p.sampling.candidates, Some(4));
    assert_eq!(
        p.sampling.calibrated.as_deref(),
        Some("2026-01-02: tiny: json K=4 5/6 correct, 2.2 s per correct edit")
    );
    let comment = "# calibrate 2026-01-02 (tiny): correct edits and model seconds per correct edit: json K=4 \
                   5/6 2.2s, udiff K=1 2/6 4.5s";
    let expected = ODD
        .replace(
            "# how the model writes\nformat =   \"udiff\"    # was measured once\n",
            &format!("# how the model writes\n{comment}\nformat =   \"json\"    # was measured once\n"),
        )
        .replace(
            "[sampling]\nparallel = 2\n",
            &format!(
                "[sampling]\nparallel = 2\n{comment}\ncandidates = 4\ncalibrated = \"2026-01-02: tiny: json K=4 5/6 \
                 correct, 2.2 s per correct edit\"\n"
            ),
        );
    assert_eq!(out, expected);
    // Measured again: the comment is replaced, not piled up, and nothing else moves.
    let again = record_choice(&out, &rec(), &rows, "tiny", "2026-01-02").unwrap();
    assert_eq!(again, out);
}

#[test]
fn write_appends_the_sections_when_missing() {
    let text = "[provider]\nkind = \"llamacpp\"\n# the end\n";
    let out = record_choice(text, &rec(), &[row("json", 4, 5, 11250)], "m", "2026-01-02").unwrap();
    assert!(out.starts_with(text), "{out}");
    let tail = &out[text.len()..];
    assert!(tail.contains("[edit]\n# calibrate 2026-01-02"), "{tail}");
    assert!(tail.contains("format = \"json\"\n"), "{tail}");
    assert!(
        tail.contains("[sampling]\n# calibrate 2026-01-02"),
        "{tail}"
    );
    assert!(tail.contains("candidates = 4\n"), "{tail}");
    let p = policy::parse(&out, Path::new("p.toml")).unwrap();
    assert_eq!(p.edit.format, EditFormat::Json);
}

/// Whether Python's `tomllib` (a TOML 1.0 reader, Python 3.11 and later) reads `text`; its complaint if not.
fn toml_1_0_reads(text: &str) -> std::result::Result<(), String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("python3")
        .args(["-c", "import sys, tomllib; tomllib.loads(sys.stdin.read())"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 (3.11 or later, for tomllib): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

#[test]
fn calibrate_write_on_inline_tables_is_toml_1_0() {
    let text = "# my policy\nedit = { format = \"udiff\" }\nsampling = { candidates = 2 }   # two\n\n\
                [provider]\nkind = \"llamacpp\"\n";
    toml_1_0_reads(text).unwrap();
    let rows = vec![row("json", 4, 5, 11250)];
    let out = record_choice(text, &rec(), &rows, "tiny", "2026-01-02").unwrap();
    toml_1_0_reads(&out).unwrap_or_else(|e| panic!("not TOML 1.0:\n{out}\n{e}"));
    let comment = "# calibrate 2026-01-02 (tiny): correct edits and model seconds per correct edit: json K=4 \
                   5/6 2.2s";
    assert_eq!(
        out,
        format!(
            "# my policy\n{comment}\nedit = {{ format = \"json\" }}\n{comment}\nsampling = {{ candidates = 4, \
             calibrated = \"2026-01-02: tiny: json K=4 5/6 correct, 2.2 s per correct edit\" }}   # two\n\n\
             [provider]\nkind = \"llamacpp\"\n"
        )
    );
    let p = policy::parse(&out, Path::new("p.toml")).unwrap();
    assert_eq!(p.edit.format, EditFormat::Json);
    assert_eq!(p.sampling.candidates, Some(4));
    // Measured again: the comments are replaced, not piled up.
    assert_eq!(
        record_choice(&out, &rec(), &rows, "tiny", "2026-01-02").unwrap(),
        out
    );
    // Standard tables and dotted keys stay TOML 1.0 too.
    let written = record_choice(ODD, &rec(), &rows, "tiny", "2026-01-02").unwrap();
    toml_1_0_reads(&written).unwrap();
    let dotted =
        "edit.format = \"udiff\"\nsampling.candidates = 2\n\n[provider]\nkind = \"llamacpp\"\n";
    let written = record_choice(dotted, &rec(), &rows, "tiny", "2026-01-02").unwrap();
    toml_1_0_reads(&written).unwrap_or_else(|e| panic!("not TOML 1.0:\n{written}\n{e}"));
    assert_eq!(
        policy::parse(&written, Path::new("p.toml"))
            .unwrap()
            .edit
            .format,
        EditFormat::Json
    );
}

#[test]
fn dates_are_civil() {
    assert_eq!(civil_date(0), "1970-01-01");
    assert_eq!(civil_date(20_423), "2025-12-01");
    assert_eq!(civil_date(11_016), "2000-02-29");
}

#[test]
fn a_patch_is_correct_only_when_it_gives_the_expected_bytes() {
    let p = policy::parse("[provider]\nkind = \"llamacpp\"\n", Path::new("p.toml")).unwrap();
    let c = &CASES[2];
    let change = |post: &str| {
        let ch = patch::FileChange {
            path: c.path.to_string(),
            pre: Some(c.text.as_bytes().to_vec()),
            post: post.as_bytes().to_vec(),
            mode: 0o100644,
            hunks: Vec::new(),
            op: Default::default(),
        };
        String::from_utf8(patch::canonical::render(&[ch])).unwrap()
    };
    let good = change(c.expected);
    assert_eq!(
        post_image(&good, c, &p).as_deref(),
        Some(c.expected.as_bytes())
    );
    let wrong = change(&c.expected.replace('5', "6"));
    assert_ne!(
        post_image(&wrong, c, &p).as_deref(),
        Some(c.expected.as_bytes())
    );
    assert_eq!(post_image("not a patch", c, &p), None);
}

/// A workspace folder holding `ODD` as its policy file (mode 0640), and that policy as loaded from it.
fn odd_policy_file() -> (tempfile::TempDir, PathBuf, LoadedPolicy) {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(policy::POLICY_FILE);
    std::fs::write(&path, ODD).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let loaded = LoadedPolicy {
        policy: policy::parse(ODD, &path).unwrap(),
        path: Some(path.clone()),
        digest: Some(crate::digest::sha256_hex(ODD.as_bytes())),
    };
    (d, path, loaded)
}

/// The names in the folder `d`, sorted.
fn names_in(d: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn write_replaces_the_policy_file_keeping_its_mode_and_leaving_no_temporary_file() {
    use std::os::unix::fs::PermissionsExt;
    let (d, path, loaded) = odd_policy_file();
    let rows = vec![row("json", 4, 5, 11250)];
    let before = today();
    write_choice(&path, &loaded, &rec(), &rows, "tiny").unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    // The date is read again on either side of the write: one of them is the date it wrote.
    let dated = |date: &str| record_choice(ODD, &rec(), &rows, "tiny", date).unwrap();
    assert!(
        written == dated(&before) || written == dated(&today()),
        "{written}"
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    assert_eq!(names_in(d.path()), [policy::POLICY_FILE]);
}

#[test]
fn write_refuses_a_symlink_at_the_policy_name_and_writes_nothing() {
    let (d, path, loaded) = odd_policy_file();
    let real = d.path().join("real.toml");
    std::fs::rename(&path, &real).unwrap();
    std::os::unix::fs::symlink(&real, &path).unwrap();
    let err = write_choice(&path, &loaded, &rec(), &[], "tiny")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot read") && err.contains("symlink"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), ODD);
    assert!(
        std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(names_in(d.path()), [policy::POLICY_FILE, "real.toml"]);
}

#[test]
fn write_refuses_a_fifo_at_the_policy_name_without_blocking() {
    let (d, path, loaded) = odd_policy_file();
    std::fs::remove_file(&path).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let err = write_choice(&path, &loaded, &rec(), &[], "tiny")
        .unwrap_err()
        .to_string();
    assert!(err.contains("a FIFO, not a regular file"), "{err}");
    assert_eq!(names_in(d.path()), [policy::POLICY_FILE]);
}

#[test]
fn write_refuses_a_policy_file_changed_since_it_was_loaded() {
    let (d, path, loaded) = odd_policy_file();
    let changed = ODD.replace("parallel = 2", "parallel = 3");
    std::fs::write(&path, &changed).unwrap();
    let err = write_choice(&path, &loaded, &rec(), &[], "tiny")
        .unwrap_err()
        .to_string();
    assert!(err.contains("changed while calibrate was running"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), changed);
    assert_eq!(names_in(d.path()), [policy::POLICY_FILE]);
}
