//! Snapshots of what people read: the policy file `init-project` writes for every provider and project kind, and
//! `doctor`'s report (paths, ports and bubblewrap's version replaced by placeholders).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a failed unwrap is a failed test, with its message"
)]

mod common;

use common::*;
use local_llm_delegator::config::{ProjectKind, ProviderKind, template};

#[test]
fn init_project_templates() {
    for kind in [
        ProviderKind::Llamacpp,
        ProviderKind::Huggingface,
        ProviderKind::Openrouter,
        ProviderKind::Deepseek,
        ProviderKind::Openai,
        ProviderKind::Ollama,
        ProviderKind::Lmstudio,
        ProviderKind::Vllm,
    ] {
        for (name, project) in [
            ("rust", ProjectKind::Rust),
            ("node", ProjectKind::Node),
            ("python", ProjectKind::Python),
            ("python_tests", ProjectKind::PythonTests),
            ("go", ProjectKind::Go),
            ("other", ProjectKind::Other),
        ] {
            insta::assert_snapshot!(
                format!("init_{}_{name}", kind.name()),
                template(kind, project)
            );
        }
    }
}

fn placeholders(text: &str, ws: &Ws, url: &str) -> String {
    let b = local_llm_delegator::confine::bubblewrap()
        .expect("these tests need bubblewrap: apt-get install bubblewrap");
    let root = url.strip_suffix("/v1").unwrap_or(url);
    text.replace(&ws.root_str(), "<WS>")
        .replace(url, "<URL>")
        .replace(root, "<ROOT>")
        .replace(&b.version, "<BWRAP VERSION>")
        .replace(&b.path.display().to_string(), "<BWRAP>")
}

#[test]
fn doctor_reports_each_check_with_its_fix() {
    let s = scripted(vec![Reply::chat("{}")]);
    let ws = Ws::new(&s.base_url, "");
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!("doctor_ok", placeholders(&stdout(&out), &ws, &s.base_url));
    assert_eq!(s.seen.lock().unwrap()[0].path, "/v1/models");

    let dead = unreachable_base_url();
    let ws = Ws {
        dir: tempfile::tempdir().unwrap(),
    };
    ws.write(
        "local-llm-worker.toml",
        &format!(
            "[provider]\nkind = \"openrouter\"\nbase_url = \"{dead}\"\napi_key_env = \"LLW_DOCTOR_UNSET_KEY\"\n\n[models]\nactive = [{{ provider = \"openrouter\", model = \"z-ai/glm-5.3-flash\" }}]\n"
        ),
    );
    let out = cli(&["doctor", "--workspace-root", &ws.root_str()]);
    assert!(!out.status.success());
    insta::assert_snapshot!("doctor_failures", placeholders(&stdout(&out), &ws, &dead));
    assert!(stderr(&out).contains("check(s) failed"), "{}", stderr(&out));
}
