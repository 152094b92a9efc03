"""Skills: loading SKILL.md, discovery order, parameters, remote skills, the bundled skills."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from kosmos.errors import ParamError, SkillError, SkillNotFound
from kosmos.hosts.runner import CommandResult, OnOutput, OutputBuffer
from kosmos.resources import bundled_skills_dir
from kosmos.skills import (
    Param,
    Skill,
    SkillLibrary,
    find_remote_skill,
    list_remote_skills,
    load_skill_file,
    parse_param_flags,
    parse_skill,
    resolve_params,
    validate_value,
)
from kosmos.skills.model import check_param

BUNDLED = (
    "system-overview",
    "disk-usage",
    "service-health",
    "log-errors",
    "port-check",
    "git-quick-commit",
    "host-notes",
    "quick-health",
)


def write_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_text(name: str, body: str = "Run `uptime`.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: about {name}\n{extra}---\n{body}\n"


# --- loading -------------------------------------------------------------------------------


def test_frontmatter_is_removed_from_body(tmp_path: Path) -> None:
    path = write_skill(
        tmp_path,
        "probe",
        "---\nname: probe\ndescription: Look around\nhistory_mode: last_n\nhistory_max: 4\n"
        "timeout: 90\nprotocol: json\n---\n\n## Steps\n\n1. Run `uptime`.\n\n",
    )
    skill = load_skill_file(path, "bundled")
    assert skill.body == "## Steps\n\n1. Run `uptime`."
    assert (skill.name, skill.description, skill.source) == ("probe", "Look around", "bundled")
    assert (skill.history_mode, skill.history_max, skill.timeout) == ("last_n", 4, 90.0)
    assert skill.protocol == "json"
    assert skill.path == str(path)
    assert skill.extra == {}


def test_file_without_frontmatter_is_named_after_its_folder(tmp_path: Path) -> None:
    text = "# Restart helper\n\nRun `uptime`.\n\n---\n\nname: not frontmatter\n"
    skill = load_skill_file(write_skill(tmp_path, "restart-helper", text), "user")
    assert skill.name == "restart-helper"
    assert skill.body == text.strip()
    assert skill.description == ""


def test_bom_crlf_and_leading_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "crlf" / "SKILL.md"
    path.parent.mkdir()
    text = (
        "\ufeff\r\n\r\n---\r\nname: crlf\r\ndescription: Windows file\r\n---\r\n"
        "Line 1\r\nLine 2\r\n"
    )
    path.write_bytes(text.encode("utf-8"))
    skill = load_skill_file(path, "user")
    assert (skill.name, skill.description) == ("crlf", "Windows file")
    assert skill.body == "Line 1\nLine 2"


def test_bom_and_crlf_keep_error_lines_right(tmp_path: Path) -> None:
    path = tmp_path / "bad" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes("\ufeff\r\n---\r\nname: bad\r\nhistory_mode: never\r\n---\r\nx\r\n".encode())
    with pytest.raises(SkillError) as e:
        load_skill_file(path, "user")
    assert str(e.value).startswith(f"{path}:4: history_mode: 'never' is not allowed")


def test_kosmos_panel_skill_loads_unchanged(tmp_path: Path) -> None:
    text = (
        "---\nname: multi-repo-commit-dev\n"
        "description: Массовый коммит и пуш изменений в репозиториях (ветка dev).\n"
        'params:\n  - name: branch\n    description: Целевая ветка (по умолчанию "dev")\n'
        "---\n\n## Context\nЯ — автоматический скрипт.\n"
    )
    skill = load_skill_file(write_skill(tmp_path, "win/multi-repo-commit-dev", text), "project")
    assert skill.name == "multi-repo-commit-dev"
    assert skill.description.startswith("Массовый коммит")
    assert [(p.name, p.description, p.required, p.default) for p in skill.params] == [
        ("branch", 'Целевая ветка (по умолчанию "dev")', False, None)
    ]
    assert skill.body == "## Context\nЯ — автоматический скрипт."


def test_agent_skills_file_keeps_its_own_keys(tmp_path: Path) -> None:
    text = (
        "---\nname: pdf-processing\n"
        "description: Extract text and tables from PDF files.\n"
        "license: Apache-2.0\n"
        "compatibility: Requires python3 and pdftotext\n"
        "allowed-tools: Bash(git:*) Read\n"
        'metadata:\n  author: example-org\n  version: "1.0"\n'
        "---\n# PDF processing\n\nUse pdftotext.\n"
    )
    skill = load_skill_file(write_skill(tmp_path, "pdf-processing", text), "user")
    assert skill.name == "pdf-processing"
    assert skill.params == []
    assert skill.extra == {
        "license": "Apache-2.0",
        "compatibility": "Requires python3 and pdftotext",
        "allowed-tools": "Bash(git:*) Read",
        "metadata": {"author": "example-org", "version": "1.0"},
    }
    assert skill.body == "# PDF processing\n\nUse pdftotext."


def test_unquoted_colon_in_a_value_is_read_as_kosmos_panel_did(tmp_path: Path) -> None:
    text = "---\nname: disk\n# a comment\ndescription: Check disk: what fills it\n---\nRun df.\n"
    skill = load_skill_file(write_skill(tmp_path, "disk", text), "user")
    assert skill.name == "disk"
    assert skill.description == "Check disk: what fills it"


def test_unparsable_frontmatter_is_read_flat_with_one_warning_naming_the_line(
    tmp_path: Path,
) -> None:
    # kosmos-panel read frontmatter with regexes: an unterminated quote is taken as it stands.
    text = '---\nname: "unterminated\ndescription: Check disk: what fills it\n---\nRun df.\n'
    path = write_skill(tmp_path, "disk", text)
    skill = load_skill_file(path, "user")
    assert (skill.name, skill.description) == ('"unterminated', "Check disk: what fills it")
    assert len(skill.warnings) == 1
    warning = skill.warnings[0]
    assert warning.startswith(f"{path}:2: the frontmatter is not valid YAML (")
    assert "so name is '\"unterminated'" in warning and "quote the value" in warning
    # Valid YAML has nothing to warn about.
    assert load_skill_file(write_skill(tmp_path, "ok", skill_text("ok")), "user").warnings == ()


def test_a_bom_and_a_lost_opening_line_keep_name_and_description(tmp_path: Path) -> None:
    # Found in kosmos-panel's repository: BOM, key lines, the closing `---`, no opening one.
    path = tmp_path / "lost" / "SKILL.md"
    path.parent.mkdir()
    text = (
        "\ufeffname: git-merge-dev\r\ndescription: Слить dev в main\r\nparams:\r\n"
        "  - name: repo\r\n    required: true\r\n---\r\n## Steps\r\nRun git.\r\n"
    )
    path.write_bytes(text.encode("utf-8"))
    skill = load_skill_file(path, "project")
    assert (skill.name, skill.description) == ("git-merge-dev", "Слить dev в main")
    assert [p.name for p in skill.params] == ["repo"]
    assert skill.body == "## Steps\nRun git."
    # Its errors still point at the right line.
    path.write_text("name: x\nhistory_mode: never\n---\nbody\n")
    with pytest.raises(SkillError, match=rf"^{path}:2: history_mode"):
        load_skill_file(path, "project")


@pytest.mark.parametrize(
    "text",
    [
        "Note: read the docs first.\n\nThen run `df`.\n\n---\n\nMore.\n",
        "author: me\n---\nbody\n",  # key lines, but nothing that names a skill
        "name: x\nThen run df.\n---\nbody\n",  # prose between key lines and the rule
    ],
)
def test_a_body_that_starts_like_a_key_line_stays_a_body(tmp_path: Path, text: str) -> None:
    skill = load_skill_file(write_skill(tmp_path, "plain", text), "user")
    assert skill.name == "plain" and skill.body == text.strip()


def test_block_scalar_description_and_triggers(tmp_path: Path, capsys) -> None:
    text = (
        "---\nname: disk\ndescription: |\n  Shows what fills the disk,\n  folder by folder.\n"
        "triggers:\n  - disk full\n  - место на диске\n---\nRun df.\n"
    )
    skill = load_skill_file(write_skill(tmp_path, "disk", text), "user")
    assert skill.description == "Shows what fills the disk,\nfolder by folder.\n"
    assert skill.summary == "Shows what fills the disk, folder by folder."
    assert skill.triggers == ["disk full", "место на диске"]
    flat = "---\nname: d: x\ntriggers: disk full, место\n---\nRun df.\n"
    assert load_skill_file(write_skill(tmp_path, "flat", flat), "user").triggers == [
        "disk full",
        "место",
    ]


def test_yaml_scalars_in_params_are_kept_as_written() -> None:
    text = (
        "---\nname: modes\nparams:\n"
        "  - name: mode\n    default: 0755\n"
        "  - name: force\n    default: yes\n    choices: [yes, no]\n"
        "  - name: lines\n    default: 50\n    choices: [20, 50, 1.10]\n"
        "---\nbody\n"
    )
    skill = parse_skill(text, path="x/SKILL.md", fallback_name="x", source="user")
    assert [p.default for p in skill.params] == ["0755", "yes", "50"]
    assert skill.params[1].choices == ["yes", "no"]
    assert skill.params[2].choices == ["20", "50", "1.10"]


def test_missing_or_empty_name_falls_back_to_folder() -> None:
    for text in ("---\ndescription: d\n---\nbody", "---\nname:\n---\nbody", "---\n---\nbody"):
        skill = parse_skill(text, path="p", fallback_name="folder", source="user")
        assert skill.name == "folder"


BROKEN = [
    ("unterminated", "---\nname: x\ndescription: y\nbody\n", 1, "is never closed"),
    (
        "yaml",
        "---\nname: x\nparams:\n  - name: a\n   description: b\n---\nbody\n",
        5,
        "not valid YAML",
    ),
    ("not-mapping", "\n---\n- a\n- b\n---\nbody\n", 3, "not a mapping"),
    (
        "params-not-list",
        "---\nname: x\nparams: path\n---\nbody\n",
        3,
        "params: 'path' is not allowed",
    ),
    (
        "param-without-name",
        "---\nname: x\nparams:\n  - name: a\n  - description: no name\n---\nbody\n",
        5,
        "params item 2 has no 'name'",
    ),
    (
        "duplicate",
        "---\nname: x\nparams:\n  - name: a\n  - name: b\n  - name: a\n---\nbody\n",
        6,
        "duplicate param 'a'",
    ),
    (
        "default-not-in-choices",
        "---\nname: x\nparams:\n  - name: level\n    choices: [info, warn]\n    default: debug\n"
        "---\nbody\n",
        6,
        "param 'level': default 'debug' is not one of its choices (info, warn)",
    ),
    (
        "history-mode",
        "---\nname: x\nhistory_mode: sometimes\n---\nbody\n",
        3,
        "history_mode: 'sometimes' is not allowed; use full, last_n or system_only",
    ),
    (
        "max-length-2nd-param",
        "---\nname: x\nparams:\n  - name: a\n  - name: b\n    description: q\n"
        "    max_length: 0\n---\nbody\n",
        7,
        "param 'b' max_length: 0 is not allowed; use a whole number of at least 1",
    ),
    ("param-name", "---\nparams:\n  - name: two words\n---\nbody\n", 3, "letters, digits"),
    ("empty-choices", "---\nparams:\n  - name: a\n    choices: []\n---\nbody\n", 4, "non-empty"),
    ("timeout", "---\nname: x\ntimeout: 0\n---\nbody\n", 3, "timeout: 0 is not allowed"),
    ("protocol", "---\nprotocol: xml\n---\nbody\n", 2, "use tags, json, tools or auto"),
    ("empty-body", "---\nname: x\n---\n\n\n", 4, "no instructions"),
    ("empty-file", "\n  \n", 1, "the file is empty"),
]


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN]
)
def test_broken_file_names_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = write_skill(tmp_path, "broken", text)
    with pytest.raises(SkillError) as e:
        load_skill_file(path, "user")
    message = str(e.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message
    assert "\n" not in message


def test_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: latin\n---\ncaf\xe9\n")
    with pytest.raises(SkillError, match=r":4: not UTF-8 text"):
        load_skill_file(path, "user")


# --- discovery -----------------------------------------------------------------------------


def test_first_root_wins_and_the_rest_are_shadowed(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_skill(first, "a", skill_text("same", body="from first"))
    write_skill(second, "b", skill_text("same", body="from second"))
    write_skill(second, "other", skill_text("other"))
    library = SkillLibrary([(first, "--skills-dir"), (second, "bundled")])

    assert library.find("same").body == "from first"
    listed = library.list()
    assert [(s.name, s.source) for s in listed] == [("same", "--skills-dir"), ("other", "bundled")]
    assert [(s.name, s.body) for s in library.shadowed] == [("same", "from second")]


def test_a_look_up_by_name_reads_no_file_after_its_skill(tmp_path: Path) -> None:
    # The first skill of a name wins, so finding it stops there: a broken file further on is
    # neither read nor reported until the library is listed (or a look-up needs it all).
    first, later = tmp_path / "first", tmp_path / "later"
    write_skill(first, "probe-folder", skill_text("probe"))
    write_skill(later, "broken", "---\nname: broken\nparams: 5\n---\nBody.\n")
    library = SkillLibrary([(first, "--skills-dir"), (later, "user")])

    assert library.find("probe").name == "probe"
    assert library.errors == []
    # By folder: a skill named so further on would win, so the whole library is read.
    assert library.find("probe-folder").name == "probe"
    assert len(library.errors) == 1 and "broken" in library.errors[0]
    assert [s.name for s in library.list()] == ["probe"]
    with pytest.raises(SkillNotFound):
        library.find("absent")


def test_default_order_follows_design(tmp_path: Path) -> None:
    cwd, user, extra = tmp_path / "project", tmp_path / "user", tmp_path / "extra"
    write_skill(cwd / ".kosmos" / "skills", "s", skill_text("in-kosmos"))
    write_skill(cwd / ".kosmos" / "skills", "both", skill_text("dup", body="kosmos"))
    write_skill(cwd / ".kosmos-panel" / "skills", "both", skill_text("dup", body="panel"))
    write_skill(cwd / ".kosmos-panel" / "skills", "p", skill_text("in-panel"))
    write_skill(user, "u", skill_text("in-user"))
    write_skill(user, "system-overview", skill_text("system-overview", body="mine"))
    write_skill(extra, "e", skill_text("dup", body="extra"))
    library = SkillLibrary.default(cwd, user, [extra])

    assert library.find("dup").body == "extra"
    assert library.find("in-kosmos").source == "project (.kosmos/skills)"
    assert library.find("in-panel").source == "project (.kosmos-panel/skills)"
    assert library.find("in-user").source == "user"
    # A user skill overrides the bundled one of the same name.
    assert library.find("system-overview").body == "mine"
    assert library.find("disk-usage").source == "bundled"
    assert [r.label for r in library.roots] == [
        "--skills-dir",
        "project (.kosmos/skills)",
        "project (.kosmos-panel/skills)",
        "user",
        "bundled",
    ]


def test_nested_skill_by_name_path_or_folder(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "win/git-quick-commit", skill_text("quick-commit"))
    write_skill(root, "OLD/lin/deploy", "Deploy it.\n")
    library = SkillLibrary([(root, "project")])

    by_name = library.find("quick-commit")
    assert by_name.ref == "win/git-quick-commit"
    assert library.find("win/git-quick-commit").name == "quick-commit"
    assert library.find("git-quick-commit").name == "quick-commit"
    deep = library.find("OLD/lin/deploy")
    assert (deep.name, deep.ref, deep.body) == ("deploy", "OLD/lin/deploy", "Deploy it.")


def test_name_beats_another_skills_folder(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "alpha", skill_text("beta", body="folder alpha"))
    write_skill(root, "zeta", skill_text("alpha", body="named alpha"))
    assert SkillLibrary([(root, "user")]).find("alpha").body == "named alpha"


def test_path_reference_loads_directly(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "elsewhere", "probe", skill_text("probe-x"))
    library = SkillLibrary([(tmp_path / "none", "user")], cwd=tmp_path)

    by_file = library.find(str(path))
    by_folder = library.find(str(path.parent))
    relative = library.find("elsewhere/probe")
    assert by_file.source == by_folder.source == relative.source == "path"
    assert by_file.name == by_folder.name == relative.name == "probe-x"
    assert relative.path == str(path)


def test_folder_without_skill_md_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    library = SkillLibrary([], cwd=tmp_path)
    with pytest.raises(SkillNotFound, match=r"empty: this folder has no SKILL.md"):
        library.find("./empty")


def test_unknown_name_suggests_closest(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "system-overview", skill_text("system-overview"))
    write_skill(root, "port-check", skill_text("port-check"))
    library = SkillLibrary([(root, "bundled")])
    with pytest.raises(SkillNotFound) as e:
        library.find("sytem-overview")
    assert str(e.value) == (
        "unknown skill 'sytem-overview'; did you mean: system-overview? "
        "(kosmos skills list shows all)"
    )
    with pytest.raises(SkillNotFound, match=r"^unknown skill 'zzz'; kosmos skills list shows all"):
        library.find("zzz")


def test_list_survives_a_broken_file(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "good", skill_text("good"))
    broken = write_skill(root, "broken", "---\nname: broken\nhistory_mode: sometimes\n---\nx\n")
    library = SkillLibrary([(root, "user")])

    assert [s.name for s in library.list()] == ["good"]
    assert len(library.errors) == 1
    assert library.errors[0].startswith(f"{broken}:3: history_mode")
    with pytest.raises(SkillError, match=r":3: history_mode"):
        library.find("broken")


def test_refresh_sees_new_skills(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "one", skill_text("one"))
    library = SkillLibrary([(root, "user")])
    assert [s.name for s in library.list()] == ["one"]
    write_skill(root, "two", skill_text("two"))
    library.refresh()
    assert [s.name for s in library.list()] == ["one", "two"]


def test_hidden_folders_are_skipped_and_symlinks_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "skills", tmp_path / "outside"
    write_skill(root, ".git/hooks", skill_text("hidden"))
    write_skill(outside, "linked", skill_text("linked"))
    root.mkdir(exist_ok=True)
    os.symlink(outside / "linked", root / "linked")
    os.symlink(root, root / "loop")  # a cycle must not hang the scan
    names = [s.name for s in SkillLibrary([(root, "user")]).list()]
    assert names == ["linked"]


# --- parameters ----------------------------------------------------------------------------


def params_skill(params: str) -> Skill:
    return parse_skill(
        f"---\nname: svc\nparams:\n{params}---\nbody\n", path="p", fallback_name="svc", source="t"
    )


SVC = params_skill(
    "  - name: unit\n    required: true\n    description: The systemd unit\n"
    "  - name: lines\n    default: 50\n    choices: [20, 50]\n"
    "  - name: note\n    max_length: 5\n"
    "  - name: since\n    required: true\n    default: 1 hour ago\n"
)


def test_defaults_fill_in_and_declaration_order_is_kept() -> None:
    resolved = resolve_params(SVC, {"note": "hi", "unit": "nginx"})
    assert list(resolved.items()) == [
        ("unit", "nginx"),
        ("lines", "50"),
        ("note", "hi"),
        ("since", "1 hour ago"),
    ]


def test_missing_required_names_it_and_the_flag() -> None:
    with pytest.raises(ParamError) as e:
        resolve_params(SVC, {})
    assert str(e.value) == (
        "skill 'svc' needs param 'unit' (The systemd unit); pass it with --param unit=VALUE"
    )


def test_several_missing_are_listed_together() -> None:
    skill = params_skill("  - name: a\n    required: true\n  - name: b\n    required: true\n")
    with pytest.raises(ParamError) as e:
        resolve_params(skill, {"a": ""})
    assert str(e.value) == (
        "skill 'svc' needs params 'a', 'b'; pass them with --param a=VALUE --param b=VALUE"
    )


def test_ask_is_called_for_missing_required_only() -> None:
    asked: list[str] = []

    def ask(param: Param) -> str | None:
        asked.append(param.name)
        return "sshd"

    assert resolve_params(SVC, {}, ask=ask)["unit"] == "sshd"
    assert asked == ["unit"]


def test_declined_ask_is_still_missing() -> None:
    with pytest.raises(ParamError, match="needs param 'unit'"):
        resolve_params(SVC, {}, ask=lambda param: None)


def test_an_asked_value_is_checked_too() -> None:
    skill = params_skill("  - name: level\n    required: true\n    choices: [info, warn]\n")
    with pytest.raises(
        ParamError, match=r"param 'level' must be one of: info, warn \(got 'loud'\)"
    ):
        resolve_params(skill, {}, ask=lambda param: "loud")


def test_max_length_and_choices_are_enforced() -> None:
    with pytest.raises(ParamError) as e:
        resolve_params(SVC, {"unit": "x", "note": "too long"})
    assert str(e.value) == "skill 'svc': param 'note' must be at most 5 characters (got 8)"
    with pytest.raises(ParamError) as e:
        resolve_params(SVC, {"unit": "x", "lines": "30"})
    assert str(e.value) == "skill 'svc': param 'lines' must be one of: 20, 50 (got '30')"


def test_unknown_param_is_refused_when_params_are_declared() -> None:
    with pytest.raises(ParamError) as e:
        resolve_params(SVC, {"unit": "x", "colour": "red"})
    assert str(e.value) == "skill 'svc' has no param 'colour'; its params: unit, lines, note, since"


def test_free_form_params_pass_through_when_none_are_declared() -> None:
    skill = parse_skill("Just do it.", path="p", fallback_name="free", source="t")
    resolved = resolve_params(skill, {"zeta": "1", "alpha": "2", "empty": ""})
    assert list(resolved.items()) == [("zeta", "1"), ("alpha", "2")]


def test_empty_value_counts_as_not_given() -> None:
    assert resolve_params(SVC, {"unit": "x", "lines": ""})["lines"] == "50"
    with pytest.raises(ParamError, match="needs param 'unit'"):
        resolve_params(SVC, {"unit": ""})


def test_validate_value() -> None:
    level = Param(name="level", choices=["info", "warn"], max_length=4)
    assert validate_value(level, "info") is None
    assert validate_value(level, "debug") == "must be one of: info, warn (got 'debug')"
    assert validate_value(Param(name="n", max_length=2), "abc") == (
        "must be at most 2 characters (got 3)"
    )


def test_param_model_coerces_and_checks() -> None:
    assert check_param({"name": "port", "default": 8080}).default == "8080"
    flag = check_param({"name": "flag", "default": True, "choices": [True, False]})
    assert flag.choices == ["true", "false"]
    with pytest.raises(ValueError, match="not one of its choices"):
        check_param({"name": "x", "choices": ["a"], "default": "b"})


def test_parse_param_flags() -> None:
    assert parse_param_flags(["unit=nginx", "since=", "q=a=b", "unit=sshd"]) == {
        "unit": "sshd",
        "since": "",
        "q": "a=b",
    }
    for bad in ("unit", "=value"):
        with pytest.raises(ParamError, match="expected KEY=VALUE"):
            parse_param_flags([bad])


# --- bundled skills ------------------------------------------------------------------------


def test_every_bundled_skill_loads_with_description_and_body() -> None:
    root = bundled_skills_dir()
    files = sorted(root.glob("*/SKILL.md"))
    names = set()
    for path in files:
        skill = load_skill_file(path, "bundled")
        names.add(skill.name)
        assert skill.name == path.parent.name
        assert len(skill.description) >= 40, skill.name
        assert "[DONE]" in skill.body, skill.name
        for param in skill.params:
            assert param.description, f"{skill.name}: {param.name}"
        # Every bundled skill runs on its defaults once its required params are given.
        required = {p.name: "x" for p in skill.params if p.required and p.default is None}
        if skill.name == "port-check":
            required["port"] = "22"
        resolve_params(skill, required)
    assert set(BUNDLED) <= names
    library = SkillLibrary([(root, "bundled")])
    assert library.list() and library.errors == []


# --- remote skills -------------------------------------------------------------------------


class HomeRunner:
    """A Runner whose host is this machine with HOME set to a temp dir (the remote's home)."""

    name = "fake-remote"

    def __init__(self, home: Path, delay: float = 0.0) -> None:
        self.home = home
        self.delay = delay
        self.commands: list[str] = []

    async def connect(self) -> None:
        return None

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        on_output: OnOutput | None = None,
        stop: asyncio.Event | None = None,
    ) -> CommandResult:
        self.commands.append(command)
        started = time.monotonic()
        buffer = OutputBuffer()
        proc = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            command,
            env={**os.environ, "HOME": str(self.home)},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            out, _ = await proc.communicate()
            buffer.feed(out)
            return CommandResult(command, None, timeout, buffer, timed_out=True)
        buffer.feed(out)
        return CommandResult(command, proc.returncode, time.monotonic() - started, buffer)

    async def read_file(self, path: str, *, timeout: float) -> str | None:
        async with asyncio.timeout(timeout):
            await asyncio.sleep(self.delay)  # a slow host, on purpose: the timeout must end it
            real = Path(str(self.home) + path[1:]) if path.startswith("~/") else Path(path)
            return real.read_text(encoding="utf-8") if real.is_file() else None

    async def close(self) -> None:
        return None


def remote_root(home: Path) -> Path:
    return home / ".config" / "kosmos-panel" / "skills"


async def test_find_remote_skill(tmp_path: Path) -> None:
    write_skill(remote_root(tmp_path), "backup", skill_text("backup", body="Back it up."))
    write_skill(remote_root(tmp_path), "lin/deploy", "Deploy.\n")
    runner = HomeRunner(tmp_path)

    skill = await find_remote_skill(runner, "backup", timeout=5)
    assert skill is not None
    assert (skill.name, skill.body, skill.source) == ("backup", "Back it up.", "remote")
    assert skill.path == "~/.config/kosmos-panel/skills/backup/SKILL.md"
    nested = await find_remote_skill(runner, "lin/deploy", timeout=5)
    assert nested is not None and nested.name == "deploy"
    assert await find_remote_skill(runner, "absent", timeout=5) is None
    assert await find_remote_skill(runner, "../../.ssh", timeout=5) is None


async def test_find_remote_skill_reports_a_broken_file(tmp_path: Path) -> None:
    write_skill(remote_root(tmp_path), "bad", "---\nname: bad\n")
    with pytest.raises(SkillError, match=r"^~/.config/kosmos-panel/skills/bad/SKILL.md:1: "):
        await find_remote_skill(HomeRunner(tmp_path), "bad", timeout=5)


async def test_find_remote_skill_lets_a_timeout_through(tmp_path: Path) -> None:
    write_skill(remote_root(tmp_path), "slow", skill_text("slow"))
    with pytest.raises(TimeoutError):
        await find_remote_skill(HomeRunner(tmp_path, delay=1), "slow", timeout=0.05)


async def test_list_remote_skills(tmp_path: Path) -> None:
    root = remote_root(tmp_path)
    write_skill(root, "backup", skill_text("backup"))
    write_skill(root, "win/git-quick-commit", skill_text("git-quick-commit"))
    write_skill(root, "broken", "---\nname: broken\nparams: 3\n---\nx\n")
    runner = HomeRunner(tmp_path)

    errors: list[str] = []
    skills = await list_remote_skills(runner, timeout=5, errors=errors)
    assert sorted((s.name, s.ref, s.source) for s in skills) == [
        ("backup", "backup", "remote"),
        ("git-quick-commit", "win/git-quick-commit", "remote"),
    ]
    assert len(errors) == 1 and errors[0].endswith(
        "broken/SKILL.md:3: params: 3 is not allowed; use a list of parameters, each like "
        "'- name: path' with optional description, required, default, max_length and choices"
    )
    with pytest.raises(SkillError):
        await list_remote_skills(runner, timeout=5)


async def test_list_remote_skills_without_a_skills_folder(tmp_path: Path) -> None:
    assert await list_remote_skills(HomeRunner(tmp_path), timeout=5) == []


async def test_list_remote_skills_has_one_deadline(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write_skill(remote_root(tmp_path), name, skill_text(name))
    with pytest.raises(TimeoutError):
        await list_remote_skills(HomeRunner(tmp_path, delay=0.2), timeout=0.3)
