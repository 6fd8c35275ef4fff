"""The house is a strict stack: every import points down (docs/architecture.md).

    config            settings, URLs, ASGI: the whole product wired together
    conversation_app  the session chat and its context requests
    research_app      research runs: bind, the node tree, the report
    context_app       files, their extraction stage, provenance, the library, the digest pipeline and cache
    digests           what a digest is: its tasks A and B, validation, relabelling, the offline digests
    extraction        a file's bytes → text and spans S1..Sn, read in a child process under limits
    llm_platform      the model gateway and providers, prompts, the Context IR, grounding, the ledger
    workspaces        teams, sessions, the API kit, live pushes, job queueing

Read from the source (ast), so an import inside a function counts as much as one at the
top of a module. Tests, benchmarks and migrations are not product modules.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STACK = [
    "workspaces",
    "llm_platform",
    "extraction",
    "digests",
    "context_app",
    "research_app",
    "conversation_app",
    "config",
]
FLOOR = {app: floor for floor, app in enumerate(STACK)}


def product_modules() -> dict[str, Path]:
    modules = {}
    for app in STACK:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.relative_to(ROOT).parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


MODULES = product_modules()


def imports_of(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported project module, line, inside a function) for every import of `module`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module
                for alias in child.names:  # `from . import tasks` imports a module, `from .x import y` a name
                    candidate = f"{target}.{alias.name}"
                    found.append((candidate if candidate in MODULES else target, child.lineno, in_function))
            visit(child, nested)

    visit(ast.parse(path.read_text(), filename=str(path)), False)
    return [(target, line, inner) for target, line, inner in found if target.split(".")[0] in FLOOR]


def test_every_import_points_down_the_stack():
    upward = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
        for module in MODULES
        for target, line, _inner in imports_of(module, MODULES[module])
        if FLOOR[target.split(".")[0]] > FLOOR[module.split(".")[0]]
    ]
    assert upward == []


def test_no_module_imports_another_that_imports_it_back():
    """No circle, counting imports inside functions: a function-local import may not hide one."""
    graph = {
        module: {target for target, _line, _inner in imports_of(module, path) if target in MODULES and target != module}
        for module, path in MODULES.items()
    }
    circles, visiting, done = [], [], set()

    def walk(module: str) -> None:
        visiting.append(module)
        for target in sorted(graph[module]):
            if target in visiting:
                circles.append(" → ".join([*visiting[visiting.index(target) :], target]))
            elif target not in done:
                walk(target)
        visiting.pop()
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            walk(module)
    assert circles == []


# Function-local imports of project modules that are not an AppConfig's (Django's place for
# wiring, run once the models are loaded), each with why it is not at the top of its module.
LAZY_ON_PURPOSE = {
    "llm_platform.gateway": "a provider, and its SDK, is imported only where it is the one configured",
    "llm_platform.embeddings.providers": "the local model (numpy, its weights) is loaded only where it is configured",
}


@pytest.mark.parametrize("app", STACK[:-1])
def test_a_project_import_inside_a_function_is_an_apps_wiring_or_says_why(app):
    inner = [
        f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
        for module in MODULES
        if module.split(".")[0] == app and not module.endswith(".apps") and module not in LAZY_ON_PURPOSE
        for target, line, in_function in imports_of(module, MODULES[module])
        if in_function
    ]
    assert inner == []
