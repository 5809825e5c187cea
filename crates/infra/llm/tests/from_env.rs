//! `HttpProvider::from_env_with`: the conventional variables choose the protocol, the server,
//! the model and the key; what is missing or wrong is a typed error naming the variable; the
//! key never reaches `Debug` or an error message. The lookup is a function, so no test
//! touches the process environment (tests run in parallel threads).

use rein_llm::{Api, EnvError, HttpProvider, Provider, ProviderConfig};

const KEY: &str = "sk-very-secret-0123456789";

/// What `from_env_with` makes of the variables `vars` (name, value).
fn check(vars: &[(&str, &str)]) -> Result<HttpProvider, EnvError> {
    let lookup = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    };
    let outcome = HttpProvider::from_env_with(lookup);
    // Whatever happened, the key is nowhere to be read.
    match &outcome {
        Ok(provider) => assert!(!format!("{provider:?}").contains("very-secret")),
        Err(e) => {
            assert!(!e.to_string().contains("very-secret"), "{e}");
            assert!(!format!("{e:?}").contains("very-secret"), "{e:?}");
        }
    }
    outcome
}

fn config(vars: &[(&str, &str)]) -> ProviderConfig {
    let lookup = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    };
    ProviderConfig::from_env_with(lookup).expect("a usable configuration")
}

#[test]
fn an_openai_key_and_a_model_make_an_openai_provider() {
    let provider = check(&[("OPENAI_API_KEY", KEY), ("REIN_LLM_MODEL", "gpt-4o-mini")]).unwrap();
    assert_eq!(
        (provider.name(), provider.model()),
        ("openai", "gpt-4o-mini")
    );
    let c = config(&[("OPENAI_API_KEY", KEY), ("REIN_LLM_MODEL", "gpt-4o-mini")]);
    assert_eq!(c.base_url, "https://api.openai.com/v1");
    assert_eq!(c.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert!(!format!("{c:?}").contains("very-secret"));
}

#[test]
fn an_anthropic_key_takes_its_own_base_url() {
    let vars = [
        ("ANTHROPIC_API_KEY", KEY),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1"),
        ("REIN_LLM_MODEL", "claude-sonnet-4-5"),
    ];
    assert_eq!(check(&vars).unwrap().name(), "anthropic");
    let c = config(&vars);
    assert_eq!(
        (c.api, c.base_url.as_str()),
        (Api::Anthropic, "http://127.0.0.1:9/v1")
    );
}

#[test]
fn a_local_server_needs_no_key() {
    let c = config(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
        ("REIN_LLM_MODEL", "local"),
    ]);
    assert_eq!((c.api, c.api_key_env), (Api::OpenAi, None));
}

#[test]
fn what_is_missing_is_named() {
    let e = check(&[("OPENAI_API_KEY", KEY)]).unwrap_err();
    assert!(
        matches!(
            e,
            EnvError::Missing {
                var: "REIN_LLM_MODEL",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("the environment variable `REIN_LLM_MODEL` is not set"),
        "{e}"
    );
    // An empty variable is no better than none.
    let e = check(&[("OPENAI_API_KEY", KEY), ("REIN_LLM_MODEL", " ")]).unwrap_err();
    assert!(
        matches!(
            e,
            EnvError::Missing {
                var: "REIN_LLM_MODEL",
                ..
            }
        ),
        "{e:?}"
    );

    let e = check(&[("REIN_LLM_MODEL", "m")]).unwrap_err();
    assert!(matches!(e, EnvError::NoProvider), "{e:?}");
    assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");

    // Choosing a provider whose key is not set names the key.
    let e = check(&[
        ("REIN_LLM_API", "anthropic"),
        ("OPENAI_API_KEY", KEY),
        ("REIN_LLM_MODEL", "m"),
    ])
    .unwrap_err();
    assert!(
        matches!(
            e,
            EnvError::Missing {
                var: "ANTHROPIC_API_KEY",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn two_keys_need_a_choice() {
    let both = [
        ("OPENAI_API_KEY", KEY),
        ("ANTHROPIC_API_KEY", KEY),
        ("REIN_LLM_MODEL", "m"),
    ];
    let e = check(&both).unwrap_err();
    assert!(matches!(e, EnvError::Ambiguous), "{e:?}");
    assert!(e.to_string().contains("REIN_LLM_API"), "{e}");

    let chosen = [both.as_slice(), &[("REIN_LLM_API", "anthropic")]].concat();
    assert_eq!(check(&chosen).unwrap().name(), "anthropic");

    let wrong = [both.as_slice(), &[("REIN_LLM_API", "gemini")]].concat();
    let e = check(&wrong).unwrap_err();
    assert!(
        matches!(&e, EnvError::Invalid { var: "REIN_LLM_API", value, .. } if value == "gemini"),
        "{e:?}"
    );
}

#[test]
fn a_key_or_url_that_cannot_work_is_refused_without_showing_the_key() {
    // A key a header cannot carry: the error names the variable, not the key.
    let bad_key = format!("{KEY}\nX-Injected: 1");
    let e = check(&[
        ("OPENAI_API_KEY", bad_key.as_str()),
        ("REIN_LLM_MODEL", "m"),
    ])
    .unwrap_err();
    assert!(matches!(e, EnvError::Provider(_)), "{e:?}");
    assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");

    let e = check(&[
        ("OPENAI_API_KEY", KEY),
        ("OPENAI_BASE_URL", "ftp://example.invalid"),
        ("REIN_LLM_MODEL", "m"),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("http://"), "{e}");
}
