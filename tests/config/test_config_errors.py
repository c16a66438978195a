"""Configuration errors name the file line or `TOBE_*` variable of the bad value, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tobe.config import ConfigError, load_settings


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty configuration file that `load_settings` reads, and no `TOBE_*` settings."""
    import os

    for name in list(os.environ):
        if name.startswith("TOBE_"):
            monkeypatch.delenv(name)
    path = tmp_path / "config.toml"
    path.write_text("")
    monkeypatch.setenv("TOBE_CONFIG", str(path))
    monkeypatch.setenv("TOBE_DATA_DIR", str(tmp_path / "data"))
    return path


def problems(path: Path, text: str) -> list[str]:
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    return raised.value.problems


def test_malformed_toml_names_file_line_and_column(config: Path) -> None:
    assert problems(config, 'data_dir = "/x"\n[provider]\nkind = \n') == [
        f"{config}:3:8: invalid TOML: Invalid value"
    ]


def test_a_value_not_allowed_lists_the_allowed_ones(config: Path) -> None:
    assert problems(config, '\n[provider]\nkind = "openia"\n') == [
        f"{config}:3: [provider] kind: 'openia' is not one of scripted, openai, anthropic, gemini"
    ]


def test_a_misspelled_section_is_refused_with_the_closest_name(config: Path) -> None:
    assert problems(config, '[mind]\nlisten = "127.0.0.1:1"\n\n[provder]\nmodel = "m"\n') == [
        f"{config}:4: unknown section [provder]; did you mean [provider]?"
    ]


def test_an_unknown_key_of_a_known_section_is_refused(config: Path) -> None:
    assert problems(config, '[face]\nlisten = "127.0.0.1:1"\nqueue_sise = 8\n') == [
        f"{config}:3: [face] unknown key 'queue_sise'; did you mean 'queue_size'?"
    ]


def test_nested_tables_and_top_level_names_are_checked_too(config: Path) -> None:
    text = 'data_dri = "/x"\n[mind.tls]\ncert_fil = "/c"\n'
    assert problems(config, text) == [
        f"{config}:1: unknown setting 'data_dri'; did you mean 'data_dir'?",
        f"{config}:3: [mind.tls] unknown key 'cert_fil'; did you mean 'cert_file'?",
    ]


def test_entries_of_an_array_of_tables_are_named_by_their_own_lines(config: Path) -> None:
    text = (
        "[provider]\n"
        'kind = "openai"\n'
        "\n"
        "[[provider.models]]\n"
        'id = "first"\n'
        "context_window = 8192\n"
        "max_output = 1024\n"
        'note = """two\n'
        'lines"""\n'
        "\n"
        "[[provider.models]]\n"
        'id = "second"\n'
        "context_window = -1\n"
        "max_output = 1024\n"
        "\n"
        "[[provider.models]]\n"
        'id = "third"\n'
    )
    assert problems(config, text) == [
        f"{config}:8: [[provider.models]] #1 unknown key 'note' "
        "(known: cached_input_price, context_window, id, input_price, max_output, output_price, "
        "structured_output, thinking_levels, vision)",
        f"{config}:13: [[provider.models]] #2 context_window: Input should be greater than 0 "
        "(got -1)",
        f"{config}:16: [[provider.models]] #3: 'context_window' is required",
        f"{config}:16: [[provider.models]] #3: 'max_output' is required",
    ]


def test_a_value_from_the_environment_names_its_variable(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.write_text('[provider]\nkind = "openai"\n')
    monkeypatch.setenv("TOBE_PROVIDER__KIND", "openia")
    monkeypatch.setenv("TOBE_FACE__LISTN", "127.0.0.1:1")
    monkeypatch.setenv("TOBE_PROVIDER__MODELS", '[{"id": "local"}]')
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert sorted(raised.value.problems) == [
        "TOBE_FACE__LISTN: [face] unknown key 'listn'; did you mean 'listen'?",
        "TOBE_PROVIDER__KIND: [provider] kind: 'openia' is not one of scripted, openai, "
        "anthropic, gemini",
        "TOBE_PROVIDER__MODELS: [[provider.models]] #1: 'context_window' is required",
        "TOBE_PROVIDER__MODELS: [[provider.models]] #1: 'max_output' is required",
    ]


def test_a_variable_that_is_not_json_is_named(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOBE_PROVIDER__MODELS", "[{oops")
    with pytest.raises(
        ConfigError, match=r"^TOBE_PROVIDER__MODELS: not valid JSON for \[provider\]"
    ):
        load_settings()


def test_variables_that_name_no_setting_are_left_alone(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TOBE_SOAK_SEED", "TOBE_TEST_PG_URL", "TOBE_REQUIRE_PG", "TOBE_CI_PG_PORT"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("TOBE_HAND_TOKEN", "tobe_x")
    monkeypatch.setenv("TOBE_VERBOSE", "1")
    assert load_settings().data_dir == config.parent / "data"


def test_a_secret_value_is_never_repeated(config: Path) -> None:
    [problem] = problems(config, "[provider]\napi_key = 12345\n")
    assert problem.startswith(f"{config}:2: [provider] api_key: ")
    assert "12345" not in problem


def test_a_configuration_file_that_cannot_be_read_is_named(config: Path) -> None:
    config.unlink()
    config.mkdir()
    with pytest.raises(ConfigError, match=f"^{config}: cannot read the configuration file: "):
        load_settings()


def test_an_actions_model_and_an_actions_provider_together_are_refused(config: Path) -> None:
    text = '[actions]\nmodel = "small"\n\n[actions.provider]\nkind = "openai"\nmodel = "other"\n'
    [problem] = problems(config, text)
    assert "[actions] model and [actions] provider are both set" in problem
    assert "[actions.provider] model" in problem


def test_one_mind_address_and_a_list_of_them_are_refused_together(config: Path) -> None:
    text = '[face]\nmind_address = "127.0.0.1:1"\nmind_addresses = ["127.0.0.1:2", "127.0.0.1:3"]\n'
    [problem] = problems(config, text)
    assert "face.mind_address and face.mind_addresses are both set" in problem


def test_a_list_of_minds_replaces_the_one_mind_address(config: Path) -> None:
    config.write_text('[face]\nmind_addresses = ["127.0.0.1:2", "unix:/run/mind.sock"]\n')
    assert load_settings().face.minds == ["127.0.0.1:2", "unix:/run/mind.sock"]
    config.write_text('[face]\nmind_address = "127.0.0.1:2"\n')
    assert load_settings().face.minds == ["127.0.0.1:2"]


def test_a_database_the_store_cannot_use_is_refused_without_repeating_its_password(
    config: Path,
) -> None:
    [problem] = problems(config, 'database_url = "mysql://tobe:hunter2@db.lan/tobe"\n')
    assert problem == (
        f"{config}:1: database_url: 'mysql' is not a database ToBe stores in: use "
        "sqlite:///PATH or postgresql://USER@HOST/DATABASE"
    )
    for usable in ("sqlite:///x.db", "postgres://u@h/d", "postgresql+psycopg://u@h/d"):
        config.write_text(f'database_url = "{usable}"\n')
        assert load_settings().database_url == usable
