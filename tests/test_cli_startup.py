"""The command line starts light: ``import credit.cli`` and every ``--help`` import typer
and the command line's own modules, never the core, the journal or a heavy library;
``credit decide`` and ``credit verify`` import only what deciding or verifying needs;
and no module of :mod:`credit.cli` imports another in a circle.

Each check runs in a fresh interpreter (this process has imported everything already)
and reads its ``sys.modules``. ``benchmarks/bench_cli.py`` times the same commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import grimp
import pytest
import typer
from typer._click import Context
from typer.core import TyperGroup
from typer.main import get_command, get_group
from typer.testing import CliRunner

import credit.cli as cli_app
import credit.journal.signer
import credit.journal.sql
from credit.cli import COMMANDS, FIRST_COLLECTION_AFTER, app, common, register_module
from credit.yamldata import CACHE_DIR_ENV

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"

# Libraries that cost tens or hundreds of milliseconds to import, none of which the
# command line needs before a command runs.
HEAVY = (
    "sqlalchemy",
    "numpy",
    "polars",
    "pyarrow",
    "pandas",
    "pyspark",
    "matplotlib",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "pydantic",
    "yaml",
    "cryptography",
    "alembic",
    "jinja2",
    "reportlab",
    "claude_agent_sdk",
)
# typer (0.29) coerces a command's parameters through pydantic TypeAdapters, so the help
# of any command below the top, and every command's run, imports pydantic: typer's own
# import, not the core's (whose models stay unimported; ``credit --help`` imports none).
TYPERS_OWN = ("pydantic", "pydantic_core", "typing_inspection", "annotated_types")
# Of credit itself, the help may import the package, the command line and the errors.
LIGHT_CREDIT = ("credit", "credit._exports", "credit.cli", "credit.errors")


def probed(probe: str, *argv: str) -> Any:
    """The JSON a fresh interpreter prints last after running ``probe`` with ``argv``."""
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported once ``code`` has run."""
    probe = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    return set(probed(probe))


def heavy_in(modules: Iterable[str]) -> list[str]:
    """The heavy libraries among ``modules`` (a package or any module under it). The
    name of pydantic's plugin loader is not counted: the command line puts its own
    stand-in there (``credit.cli._STAND_IN``), and pydantic imported would add others."""
    return sorted(
        {
            m.split(".")[0]
            for m in modules
            if m.split(".")[0] in HEAVY and m != cli_app.PLUGIN_LOADER
        },
    )


def core_in(modules: Iterable[str]) -> list[str]:
    """The modules of credit among ``modules`` beyond the package, the command line
    and the errors."""
    return sorted(
        m
        for m in modules
        if (m == "credit" or m.startswith("credit."))
        and not any(m == light or m.startswith(light + ".") for light in LIGHT_CREDIT[1:])
        and m != "credit"
    )


# ---------------------------------------------------------------- the help


HELP_OF_EVERY_COMMAND = """
from typer.testing import CliRunner
from typer.main import get_command

from credit.cli import app

def paths(command, prefix=()):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from paths(sub, (*prefix, name))

runner = CliRunner()
for path in paths(get_command(app)):
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, (path, result.output)
"""


def test_importing_the_command_line_imports_no_heavy_library_and_none_of_the_core() -> None:
    modules = imported_after("import credit.cli")
    assert "credit.cli.common" in modules and "typer" in modules  # the probe sees imports
    assert heavy_in(modules) == []
    assert core_in(modules) == []


def test_running_one_command_imports_its_own_module_of_the_command_line_only(
    tmp_path: Path,
) -> None:
    one = tmp_path / "one.json"
    one.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0], encoding="utf-8")
    modules = imported_after(_run_main("decide", str(one)))
    cli_modules = sorted(m for m in modules if m.startswith("credit.cli."))
    assert cli_modules == ["credit.cli.common", "credit.cli.run"]


def test_the_command_table_names_every_command_of_every_module_and_its_module() -> None:
    """COMMANDS (what credit.cli lists and loads on demand) is what the modules register:
    a command added to a module and not to the table, or the other way, fails here."""
    registered: dict[str, str] = {}
    for name in dict.fromkeys(COMMANDS.values()):
        commands = typer.Typer()
        commands.callback()(lambda: None)
        register_module(name, commands)
        for command in get_group(commands).commands:
            assert command not in registered, (command, name, registered.get(command))
            registered[command] = name
    assert registered == COMMANDS
    assert set(COMMANDS.values()) == {
        m.rsplit(".", 1)[1]
        for m in cli_imports()
        if m.count(".") == 2 and m.rsplit(".", 1)[1] not in ("common", "tables", "__main__")
    }


def test_a_command_is_built_alone_not_with_the_other_commands_of_its_module() -> None:
    """Running ``credit verify`` reads verify's parameters, not notice's, mutate's and
    lock's: each command of a module is built when it is asked for."""
    group = get_command(app)
    assert isinstance(group, TyperGroup) and group.commands == {}
    context = Context(group)
    verify = group.get_command(context, "verify")
    assert verify is not None and verify.name == "verify"
    assert set(group.commands) == {"verify"}
    journal = group.get_command(context, "journal")  # a group of commands, built alone too
    assert journal is not None and set(group.commands) == {"verify", "journal"}
    assert group.get_command(context, "decide") is not None  # a command named by its function
    assert set(group.commands) == {"verify", "journal", "decide"}
    assert group.get_command(context, "frobnicate") is None


def test_a_registered_command_is_known_by_the_name_typer_gives_it() -> None:
    """What picks the one command to build names each as typer does (its own name, else
    its function's, lower case with dashes): for every command of every module and for
    a function whose name typer changes."""
    commands = typer.Typer()
    commands.callback()(lambda: None)
    for name in dict.fromkeys(COMMANDS.values()):
        register_module(name, commands)

    def Make_Some_Thing() -> None:  # a name typer changes
        """A command named by its function."""

    commands.command()(Make_Some_Thing)
    built = [c for c in get_group(commands).commands.values() if not isinstance(c, TyperGroup)]
    named = [cli_app._command_name(info) for info in commands.registered_commands]
    assert named == [c.name for c in built] and "make-some-thing" in named


def test_a_command_the_table_does_not_name_is_refused_as_before() -> None:
    result = CliRunner().invoke(app, ["frobnicate"])
    assert result.exit_code == 2 and "No such command 'frobnicate'." in result.output
    assert CliRunner().invoke(app, ["decide", "--help"]).exit_code == 0


def test_credit_help_imports_no_heavy_library_and_none_of_the_core() -> None:
    modules = imported_after(_run_main("--help"))
    assert "credit.cli" in modules  # the help was printed by our command line
    # plainly: typer's rich help renderer (rich.markdown, markdown_it, rich.traceback)
    # costs about 90 ms to import, half of the goal for the whole command
    assert "typer.rich_utils" not in modules and "rich.markdown" not in modules
    assert heavy_in(modules) == []
    assert core_in(modules) == []


def test_the_help_of_every_command_imports_only_typer_s_own_pydantic_and_none_of_the_core() -> None:
    modules = imported_after(HELP_OF_EVERY_COMMAND)
    assert "credit.cli.batch" in modules
    assert "typer.rich_utils" not in modules
    assert [m for m in heavy_in(modules) if m not in TYPERS_OWN] == []
    assert core_in(modules) == []


def test_the_probe_names_a_heavy_library_and_a_core_module_when_one_is_imported() -> None:
    """The other side of the edge: a module that does pull the journal in is caught."""
    modules = imported_after("import credit.cli\nimport credit.journal")
    assert "sqlalchemy" in heavy_in(modules)
    assert "credit.journal.sql" in core_in(modules)
    assert heavy_in(["credit.cli", "typer", "rich.console"]) == []
    assert core_in(["credit", "credit.errors", "credit.cli.common"]) == []


def _run_main(*args: str) -> str:
    return f"""
import sys
sys.argv = ["credit", *{list(args)!r}]
from credit.cli import main
try:
    main()
except SystemExit as stop:
    assert not stop.code, stop.code
"""


@pytest.fixture
def parse_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A parse cache of the packaged data of this test's own (see credit.yamldata)."""
    folder = tmp_path / "parse-cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(folder))
    return folder


def test_credit_decide_imports_no_journal_service_or_frame_library(
    tmp_path: Path, parse_cache: Path
) -> None:
    one = tmp_path / "one.json"
    one.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0], encoding="utf-8")
    cold = imported_after(_run_main("decide", str(one)))
    assert "yaml" in cold and any(parse_cache.iterdir())  # parsed the policy, and kept it
    modules = imported_after(_run_main("decide", str(one)))
    assert "credit.underwriting.engine" in modules  # it did decide
    # the policy, the case limits and the bureau formats read from the parse cache
    assert [m for m in heavy_in(modules) if m not in TYPERS_OWN] == []
    assert not any(m.startswith(("credit.journal", "credit.service")) for m in modules)
    assert "importlib.metadata" not in modules  # no search for pydantic's plugins


def test_credit_verify_imports_no_journal_service_or_frame_library(
    tmp_path: Path, parse_cache: Path
) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(EXAMPLES.read_text(encoding="utf-8"), encoding="utf-8")
    folder = tmp_path / "notices"
    subprocess.run(
        [sys.executable, "-c", _run_main("notice", str(one), "--out", str(folder))],
        check=True,
        capture_output=True,
    )
    notice = sorted(folder.glob("*.notice.json"))[0]
    expect = notice.with_name(notice.name.replace(".notice.json", ".expect.json"))
    verify = _run_main("verify", str(notice), "--expect", str(expect))
    assert "yaml" in imported_after(verify)  # the first reads the verifier's rules, keeps them
    modules = imported_after(verify)
    assert "credit.guardrails.verifier" in modules  # it did verify
    # the frame, the catalogue, the rules, the formats and the terms from the parse cache
    assert [m for m in heavy_in(modules) if m not in TYPERS_OWN] == []
    assert not any(m.startswith(("credit.journal", "credit.service")) for m in modules)
    # a notice's expectation needs the application's model, not a whole case's
    assert "credit.application" in modules and "credit.models" not in modules
    assert "importlib.metadata" not in modules  # no search for pydantic's plugins


# ---------------------------------------------------------------- the collector


def _collector_after(code: str, then: str = "") -> dict[str, object]:
    """The collector's thresholds once ``code`` and then ``then`` have run in a fresh
    interpreter, and the passes it made while ``then`` ran."""
    probe = (
        "import gc as _gc, json as _json\n"
        + textwrap.dedent(code)
        + "\n_passes = _gc.get_stats()[0]['collections']\n"
        + textwrap.dedent(then)
        + textwrap.dedent(
            """
            print(_json.dumps({"threshold": _gc.get_threshold(),
                               "collections": _gc.get_stats()[0]["collections"] - _passes}))
            """
        )
    )
    found: dict[str, object] = probed(probe)
    return found


DEFAULT_THRESHOLD = [700, 10, 10]  # CPython's own
DEFERRED = [FIRST_COLLECTION_AFTER, *DEFAULT_THRESHOLD[1:]]


def test_the_command_line_puts_off_the_collector_s_first_pass_then_collects_as_before() -> None:
    make = "kept = [[] for _ in range({})]"
    # 50,000 objects: some 70 passes in a plain interpreter, none once credit.cli is in
    assert _collector_after("", make.format(50_000))["collections"] >= 50
    assert _collector_after("import credit.cli", make.format(50_000)) == {
        "threshold": DEFERRED,
        "collections": 0,
    }
    # the first pass, asked for or due, puts the thresholds back: passes as before
    assert _collector_after("import credit.cli", "import gc; gc.collect()")["threshold"] == (
        DEFAULT_THRESHOLD
    )
    made = _collector_after("import credit.cli", make.format(FIRST_COLLECTION_AFTER + 10_000))
    assert made["threshold"] == DEFAULT_THRESHOLD
    assert isinstance(made["collections"], int) and made["collections"] >= 10


def test_a_collector_switched_off_or_waiting_longer_is_left_alone() -> None:
    off = _collector_after("import gc; gc.disable(); import credit.cli", "assert not gc.callbacks")
    assert off["threshold"] == DEFAULT_THRESHOLD
    longer = _collector_after("import gc; gc.set_threshold(500_000); import credit.cli")
    assert longer["threshold"] == [500_000, 10, 10]


def test_a_command_leaves_its_objects_out_of_the_interpreter_s_last_collection() -> None:
    """At exit the command's objects are frozen out of the collector (the interpreter's
    last passes would walk them all only to free memory the process hands back)."""
    probe = textwrap.dedent(
        """
        import atexit, gc, sys
        # registered first, so it runs last: after the command line's own exit handler
        atexit.register(lambda: sys.stderr.write(f"frozen {gc.get_freeze_count()}\\n"))
        sys.argv = ["credit", "--help"]
        from credit.cli import main
        try:
            main()
        except SystemExit as stop:
            assert not stop.code, stop.code
        assert gc.get_freeze_count() == 0  # not before the process ends
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert done.stdout.startswith("Usage: credit")
    frozen = int(done.stderr.split("frozen ")[1])
    assert frozen > 10_000  # typer's, the command line's and every module's objects


def test_decide_and_verify_start_without_a_pass_of_the_collector(
    tmp_path: Path, parse_cache: Path
) -> None:
    """Their start (typer, pydantic, the core, the data) stays under the first pass: the
    thresholds are still put off when they are done (the pass would have restored them)."""
    one = tmp_path / "one.json"
    one.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0], encoding="utf-8")
    folder = tmp_path / "notices"
    subprocess.run(
        [sys.executable, "-c", _run_main("notice", str(EXAMPLES), "--out", str(folder))],
        check=True,
        capture_output=True,
    )
    notice = sorted(folder.glob("*.notice.json"))[0]
    expect = notice.with_name(notice.name.replace(".notice.json", ".expect.json"))
    for args in (["decide", str(one)], ["verify", str(notice), "--expect", str(expect)]):
        imported_after(_run_main(*args))  # the parse cache kept the data they read
        assert _collector_after(_run_main(*args))["threshold"] == DEFERRED, args


def test_the_journal_names_the_help_states_are_the_journal_s_own() -> None:
    """Repeated in credit.cli.common so that the help imports no journal: kept equal."""
    assert common.DATABASE_URL_ENV == credit.journal.sql.DATABASE_URL_ENV
    assert common.DEFAULT_DATABASE_URL == credit.journal.sql.DEFAULT_DATABASE_URL
    assert common.CHECKPOINTS_ENV == credit.journal.signer.CHECKPOINTS_ENV
    assert common.DEFAULT_KEY_NAME == credit.journal.signer.DEFAULT_KEY_NAME


# ---------------------------------------------------------------- no circle


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every circle of imports in ``edges`` (module -> modules it imports), each once,
    as the modules in order from its smallest name."""
    found: set[tuple[str, ...]] = set()

    def walk(start: str, here: str, path: list[str]) -> None:
        for nxt in edges.get(here, ()):
            if nxt == start:
                found.add(tuple(path))
            elif nxt > start and nxt not in path:
                walk(start, nxt, [*path, nxt])

    for start in sorted(edges):
        walk(start, start, [start])
    return sorted(list(c) for c in found)


def cli_imports() -> dict[str, set[str]]:
    """Each module of credit.cli and the modules of credit.cli it imports (anywhere in
    the module: at the top, inside a function, or for type checking only)."""
    graph = grimp.build_graph("credit")
    modules = {"credit.cli", *graph.find_descendants("credit.cli")}
    edges = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    # The app imports the modules its table names by name, on first use (importlib, which
    # a static graph does not see): edges all the same.
    edges["credit.cli"] |= {f"credit.cli.{name}" for name in COMMANDS.values()}
    return edges


def test_no_module_of_the_command_line_imports_another_in_a_circle() -> None:
    edges = cli_imports()
    assert {"credit.cli.common", "credit.cli.run"} <= edges["credit.cli"]
    assert {"credit.cli.common", "credit.cli.tables"} <= edges["credit.cli.run"]
    assert cycles(edges) == []


@pytest.mark.parametrize(
    ("edges", "circles"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"], ["d"]]),
    ],
)
def test_the_circle_finder_finds_a_planted_circle_and_none_where_there_is_none(
    edges: dict[str, set[str]], circles: list[list[str]]
) -> None:
    assert cycles(edges) == circles


def test_a_command_module_that_imported_the_app_back_would_be_a_circle() -> None:
    edges = cli_imports()
    edges["credit.cli.run"] = {*edges["credit.cli.run"], "credit.cli"}
    assert ["credit.cli", "credit.cli.run"] in cycles(edges)


# ---------------------------------------------------------------- pydantic's plugins

_SPY_PLUGIN = """
import os


class _Seen:
    def on_enter(self, input, **kwargs):
        with open(os.environ["SPY_SEEN"], "a", encoding="utf-8") as out:
            out.write(repr(input) + "\\n")


class _Spy:
    def new_schema_validator(self, schema, schema_type, *args, **kwargs):
        return _Seen(), _Seen(), _Seen()


plugin = _Spy()
"""


@pytest.fixture
def spy_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed pydantic plugin (an entry point in the ``pydantic`` group) that
    writes every value pydantic hands it to a file, which it returns."""
    site = tmp_path / "site"
    info = site / "spy_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nspy = spy_plugin:plugin\n")
    (site / "spy_plugin.py").write_text(_SPY_PLUGIN, encoding="utf-8")
    seen = tmp_path / "seen.txt"
    monkeypatch.setenv("SPY_SEEN", str(seen))
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.delenv(cli_app.PLUGINS_SWITCH, raising=False)
    return seen


def _decide_the_first_example(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(EXAMPLES.read_text(encoding="utf-8").splitlines()[0], encoding="utf-8")
    subprocess.run(
        [sys.executable, "-c", _run_main("decide", str(one))], check=True, capture_output=True
    )


def test_an_installed_pydantic_plugin_never_sees_the_applicant_s_case(
    tmp_path: Path, spy_plugin: Path
) -> None:
    """The case (monitoring data and all) is validated with no plugin loaded."""
    _decide_the_first_example(tmp_path)
    assert not spy_plugin.exists()


def test_an_operator_who_sets_the_switch_gets_the_plugins_they_asked_for(
    tmp_path: Path, spy_plugin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Set to an empty value, the switch lets pydantic load its plugins, and the spy then
    sees the case: the switch is what keeps it out (the test above can fail)."""
    monkeypatch.setenv(cli_app.PLUGINS_SWITCH, "")
    _decide_the_first_example(tmp_path)
    seen = spy_plugin.read_text(encoding="utf-8")
    assert "'monitoring': {'race': 'Black or African American'" in seen


# ---------------------------------------------------------------- the plugin loader's stand-in

_PLUGINS_OF = """
import importlib, json, os, sys
answers = {}
for value in json.loads(sys.argv[1]):
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = value
    loader = importlib.import_module("pydantic.plugin._loader")
    answers[value] = [type(p).__name__ for p in loader.get_plugins()]
print(json.dumps(answers))
"""


def _plugins_of(code: str, values: list[str]) -> dict[str, list[str]]:
    """What ``get_plugins`` answers for each switch value, in a fresh interpreter that
    ran ``code`` first."""
    answers: dict[str, list[str]] = probed(textwrap.dedent(code) + _PLUGINS_OF, json.dumps(values))
    return answers


def test_the_stand_in_answers_as_pydantic_s_own_loader_while_plugins_are_off(
    spy_plugin: Path,
) -> None:
    """For each value that switches every plugin off, pydantic's loader finds none (with
    one installed), and so does the stand-in the command line puts in its place."""
    off = list(cli_app.PLUGINS_OFF)
    assert _plugins_of("", off) == {value: [] for value in off}
    assert _plugins_of("import credit.cli", off) == {value: [] for value in off}


def test_the_switch_turned_on_after_start_up_gets_the_real_loader_and_its_plugins(
    spy_plugin: Path,
) -> None:
    """The stand-in is not a second switch: once the switch lets plugins in, the real
    loader answers (and finds the installed spy), and stays in the stand-in's place."""
    answers = _plugins_of(
        """
        import sys
        import credit.cli
        assert sys.modules["pydantic.plugin._loader"] is credit.cli._STAND_IN
        """,
        ["__all__", "", "__all__"],
    )
    assert answers == {"__all__": [], "": ["_Spy"]}  # the last "__all__": the real loader's ()


def test_the_stand_in_is_not_put_in_where_the_operator_lets_plugins_in(
    spy_plugin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cli_app.PLUGINS_SWITCH, "")
    modules = imported_after("import credit.cli\nimport pydantic\npydantic.TypeAdapter(int)")
    assert "importlib.metadata" in modules


def test_threads_turning_the_switch_on_at_once_share_one_real_loader(
    spy_plugin: Path,
) -> None:
    """Models built on several threads at once after the switch is turned on: none
    fails, one real loader takes the stand-in's place, and it then finds the plugin.
    (While one thread loads the plugins, pydantic's loader answers the others with
    none: its own way, not the stand-in's.)"""
    probe = """
import json, os, sys, threading
import credit.cli
os.environ["PYDANTIC_DISABLE_PLUGINS"] = ""
start, answers, loaders = threading.Barrier(8), [], []
def build():
    start.wait()
    answers.append([type(p).__name__ for p in credit.cli._plugins_now()])
    loaders.append(id(sys.modules["pydantic.plugin._loader"]))
threads = [threading.Thread(target=build) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"answers": len(answers), "loaders": len(set(loaders)),
                  "stand_in": sys.modules["pydantic.plugin._loader"] is credit.cli._STAND_IN,
                  "then": [type(p).__name__ for p in credit.cli._plugins_now()]}))
"""
    found = probed(probe)
    assert found == {"answers": 8, "loaders": 1, "stand_in": False, "then": ["_Spy"]}
