use super::*;

fn policy(text: &str) -> Policy {
    crate::policy::parse(text, Path::new("local-llm-worker.toml")).unwrap()
}

#[test]
fn a_changed_policy_must_be_trusted_again_by_its_record() {
    let state = tempfile::tempdir().unwrap();
    let p = Path::new("/w/local-llm-worker.toml");
    assert!(!is_trusted(Some(state.path()), p, "aa").unwrap());
    record(state.path(), p, "aa").unwrap();
    assert!(is_trusted(Some(state.path()), p, "aa").unwrap());
    assert!(!is_trusted(Some(state.path()), p, "bb").unwrap());
    assert!(
        !is_trusted(
            Some(state.path()),
            Path::new("/v/local-llm-worker.toml"),
            "aa"
        )
        .unwrap()
    );
    record(state.path(), p, "bb").unwrap();
    assert!(!is_trusted(Some(state.path()), p, "aa").unwrap());
    assert!(is_trusted(Some(state.path()), p, "bb").unwrap());
    let names: Vec<_> = std::fs::read_dir(state.path().join(TRUST_DIR))
        .unwrap()
        .collect();
    assert_eq!(
        names.len(),
        1,
        "one record per policy, no temporary file left"
    );
}

#[test]
fn a_symlinked_trust_folder_or_record_is_refused() {
    let state = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), state.path().join(TRUST_DIR)).unwrap();
    let p = Path::new("/w/local-llm-worker.toml");
    let e = record(state.path(), p, "aa").unwrap_err().to_string();
    assert!(e.contains("symlink"), "{e}");
    assert!(is_trusted(Some(state.path()), p, "aa").is_err());
    assert!(
        std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none()
    );
    // A record that is a symlink to a file that would say "trusted".
    std::fs::remove_file(state.path().join(TRUST_DIR)).unwrap();
    std::fs::create_dir(state.path().join(TRUST_DIR)).unwrap();
    let planted = elsewhere.path().join("r");
    std::fs::write(&planted, format!("aa {}\n", p.display())).unwrap();
    std::os::unix::fs::symlink(&planted, state.path().join(TRUST_DIR).join(record_name(p)))
        .unwrap();
    let e = is_trusted(Some(state.path()), p, "aa")
        .unwrap_err()
        .to_string();
    assert!(e.contains("symlink"), "{e}");
}

#[test]
fn only_commands_or_a_key_variable_need_trust() {
    let base = "[provider]\nkind = \"llamacpp\"\n";
    assert!(!needs_trust(&policy(base)));
    assert!(needs_trust(&policy(&format!(
        "{base}api_key_env = \"X\"\n"
    ))));
    assert!(needs_trust(&policy(&format!(
        "{base}\n[validation]\ncommands = [\"true\"]\n"
    ))));
    assert!(needs_trust(&policy("[provider]\nkind = \"huggingface\"\n")));
}

#[test]
fn the_summary_names_commands_url_key_variable_and_isolation() {
    let p = policy(
        "[provider]\nkind = \"openai\"\nbase_url = \"http://10.0.0.1:9/v1\"\napi_key_env = \"GH_TOKEN\"\n\n\
         [validation]\ncommands = [\"make check\"]\non_propose = true\nisolation = \"copy\"\n",
    );
    let s = summary(&p).join("\n");
    for want in [
        "http://10.0.0.1:9/v1",
        "GH_TOKEN",
        "`make check`",
        "isolation = \"copy\"",
        "UNCONFINED",
    ] {
        assert!(s.contains(want), "{want} missing in {s}");
    }
}

#[test]
fn a_policy_writable_by_its_group_or_others_is_refused_naming_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("local-llm-worker.toml");
    std::fs::write(&f, "[provider]\nkind = \"llamacpp\"\n").unwrap();
    // Group write counts only for a group that is not the owner's private one: as root, give the file the
    // shared group 65534.
    let shared = rustix::process::geteuid().is_root()
        && std::os::unix::fs::chown(&f, None, Some(65534)).is_ok();
    let modes: &[u32] = if shared { &[0o666, 0o664] } else { &[0o666] };
    for &mode in modes {
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        let e = crate::policy::read_policy_file(&f).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Trust);
        assert!(e.to_string().contains("chmod go-w"), "{e}");
    }
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    crate::policy::read_policy_file(&f).unwrap();
}

#[test]
fn group_write_of_the_owners_private_group_is_no_one_else() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("local-llm-worker.toml");
    std::fs::write(&f, "[provider]\nkind = \"llamacpp\"\n").unwrap();
    let meta = std::fs::metadata(&f).unwrap();
    if !private_group(meta.gid(), meta.uid()) {
        eprintln!("skipped: the file's group here is not its owner's private group");
        return;
    }
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o664)).unwrap();
    crate::policy::read_policy_file(&f).unwrap();
}
